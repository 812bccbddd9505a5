//! What the game tells scripts about itself: the figures a player sees
//! (the state, the round trip, frames a second, shots and hits, corrections,
//! the delay from a key to the own player drawn moving) and the netcode
//! settings in force, gathered each frame into [`PageStatus`]. In a browser
//! the page publishes it as `window.arena_status` (`page.rs`); natively it is
//! gathered the same way, so the tests read what a script would.

use std::collections::VecDeque;

use arena_client::{
    ClientStats, Drawn, HitPredictions, LocalPlayer, MotionOnsets, NetStats, NetcodeSettings, Prediction, RangeStats,
    Session, ThisTick,
};
use bevy::prelude::*;
use serde::Serialize;

use crate::settings::SettingsFile;
use crate::vocabulary::{AutoAim, StartProblem};

/// Over how long the rates (frames, command packets) are counted, seconds.
const RATE_WINDOW_S: f64 = 1.0;
/// Motion delays published (the newest).
const DELAYS_SHOWN: usize = 16;
/// Netcode events published (the newest).
const EVENTS_SHOWN: usize = 16;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PageStatus>().init_resource::<Gathering>();
}

/// The status, as scripts read it (snake_case keys; `null` where a figure
/// has no value yet).
#[derive(Resource, Serialize, Debug, Clone, Default)]
pub(crate) struct PageStatus {
    /// `menu`, `connecting` or `in_game`.
    pub state: &'static str,
    /// What the page or the game has to say, as the main menu says it: why
    /// the last game ended, a link not understood, stored settings set aside.
    pub problem: Option<String>,
    pub frames: u64,
    /// Frames in the last second.
    pub fps: f64,
    /// From the page's start (natively the app's) to the first frame in a
    /// game, milliseconds.
    pub load_to_playing_ms: Option<f64>,
    pub rtt_ms: Option<f64>,
    pub snapshots_received: u64,
    /// Command packets sent, and in the last second.
    pub command_packets: u64,
    pub command_packets_per_s: f64,
    /// Our shots the server judged, and those it found hit someone.
    pub shots: u64,
    pub hits: u64,
    pub mispredictions: u64,
    /// Of them, those that came with damage (most often a rocket's push).
    pub mispredictions_hurt: u64,
    /// The share of recent ticks whose command reached the server too
    /// late, and how often the client's clock was reset to the server's.
    pub late_commands: f32,
    pub clock_resets: u32,
    /// The newest mispredictions and clock resets, each as a line with the
    /// page's time (seconds since it began loading), so that a script that
    /// finds one can say when and alongside what it came.
    pub netcode_events: VecDeque<String>,
    /// The paper's "latency the user feels": from a movement key after
    /// standing still to the own player drawn moving, mean over the starts
    /// since the netcode settings last changed, milliseconds; how many
    /// starts; the newest few.
    pub own_motion_delay_ms: Option<f64>,
    pub own_motion_onsets: usize,
    pub own_motion_delays_ms: Vec<f64>,
    /// Where the own player is drawn, and how far it has been drawn moving
    /// in all, metres.
    pub position: Option<[f32; 3]>,
    pub moved_m: f64,
    /// The shooting range's tally, as its HUD shows it.
    pub range_shots: u32,
    pub range_hits: u32,
    pub range_hit_ratio: f64,
    pub netcode: NetcodeStatus,
}

/// The netcode settings in force, in the console's words.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub(crate) struct NetcodeStatus {
    pub cl_predict: bool,
    pub cl_reconcile: bool,
    pub cl_interpolate: bool,
    /// `null`: adaptive.
    pub cl_interp: Option<u16>,
    pub cl_lagcompensation: bool,
    pub net_fakelag: f32,
    pub net_fakejitter: f32,
    /// Percent each way.
    pub net_fakeloss: f32,
    pub cl_autoaim: bool,
}

impl NetcodeStatus {
    fn of(settings: &NetcodeSettings, auto_aim: bool) -> Self {
        Self {
            cl_predict: settings.prediction,
            cl_reconcile: settings.reconciliation,
            cl_interpolate: settings.interpolation,
            cl_interp: settings.interp_ms,
            cl_lagcompensation: settings.lag_compensation,
            net_fakelag: settings.conditions.latency_ms,
            net_fakejitter: settings.conditions.jitter_ms,
            net_fakeloss: settings.conditions.loss * 100.0,
            cl_autoaim: auto_aim,
        }
    }
}

/// What the gathering keeps between frames.
#[derive(Resource, Default)]
pub(crate) struct Gathering {
    frame_times: VecDeque<f64>,
    packet_times: VecDeque<(f64, u64)>,
    onsets: MotionOnsets,
    last_position: Option<Vec3>,
    /// The counts the last frame saw: (mispredictions, with damage, clock resets).
    last_counts: (u64, u64, u32),
}

/// Once a frame, in `Last` (after everyone is drawn where they are): the status.
/// `since_load_ms` is how long the page (natively the app) has been up.
pub(crate) fn gather(
    In(since_load_ms): In<f64>,
    time: Res<Time<Real>>,
    session: Res<State<Session>>,
    problems: (Res<arena_client::LastDisconnect>, Res<StartProblem>, Res<SettingsFile>),
    figures: (Res<ClientStats>, Res<NetStats>, Option<Res<Prediction>>, Option<Res<HitPredictions>>),
    (this_tick, range, netcode, auto_aim): (
        Option<Res<ThisTick>>,
        Option<Res<RangeStats>>,
        Res<NetcodeSettings>,
        Res<AutoAim>,
    ),
    me: Query<&Drawn, With<LocalPlayer>>,
    mut gathering: ResMut<Gathering>,
    mut status: ResMut<PageStatus>,
) {
    let (client, net, prediction, hits) = figures;
    let now = time.elapsed_secs_f64();
    let gathering = &mut *gathering;
    status.frames += 1;
    gathering.frame_times.push_back(now);
    while gathering.frame_times.front().is_some_and(|t| now - t > RATE_WINDOW_S) {
        gathering.frame_times.pop_front();
    }
    status.fps = gathering.frame_times.len() as f64 / RATE_WINDOW_S;
    gathering.packet_times.push_back((now, client.commands_sent));
    while gathering.packet_times.front().is_some_and(|(t, _)| now - t > RATE_WINDOW_S) {
        gathering.packet_times.pop_front();
    }
    let oldest = gathering.packet_times.front().map_or(client.commands_sent, |(_, n)| *n);
    status.command_packets = client.commands_sent;
    status.command_packets_per_s = client.commands_sent.saturating_sub(oldest) as f64 / RATE_WINDOW_S;

    status.state = match session.get() {
        Session::Offline => "menu",
        Session::Connecting => "connecting",
        Session::InGame => "in_game",
    };
    if *session.get() == Session::InGame && status.load_to_playing_ms.is_none() {
        status.load_to_playing_ms = Some(since_load_ms);
    }
    let (last, start_problem, settings_file) = problems;
    status.problem = last.0.clone().or_else(|| start_problem.0.clone()).or_else(|| settings_file.problem.clone());
    let in_game = *session.get() == Session::InGame;
    status.rtt_ms = in_game.then_some(net.rtt_ms);
    status.snapshots_received = client.snapshots_received;
    (status.mispredictions, status.mispredictions_hurt) =
        prediction.as_ref().map_or((0, 0), |p| (p.mispredictions, p.mispredictions_hurt));
    (status.late_commands, status.clock_resets) = (net.late_commands, net.clock_resets);
    let counts = (status.mispredictions, status.mispredictions_hurt, status.clock_resets);
    let (was, was_hurt, was_resets) = gathering.last_counts;
    let at_s = since_load_ms / 1000.0;
    if counts.0 > was {
        let size = prediction.as_ref().and_then(|p| p.recent_corrections.back().map(|(_, m)| *m)).unwrap_or(0.0);
        let hurt = counts.1.saturating_sub(was_hurt);
        let line =
            format!("{at_s:.2} s: {} misprediction(s), {hurt} with damage, corrected {size:.2} m", counts.0 - was);
        push_event(&mut status.netcode_events, line);
    }
    if counts.2 > was_resets {
        let line = format!("{at_s:.2} s: clock reset ({} in all), late commands {:.2}", counts.2, net.late_commands);
        push_event(&mut status.netcode_events, line);
    }
    gathering.last_counts = counts;
    if let Some(hits) = hits {
        status.shots = hits.judged;
        status.hits = hits.confirmed + hits.unforeseen;
    }
    if let Some(range) = range {
        (status.range_shots, status.range_hits, status.range_hit_ratio) = (range.shots, range.hits, range.hit_ratio());
    }

    // The own-motion delay, measured as `arena lab prediction` measures it,
    // afresh whenever the settings it depends on change.
    let settings = NetcodeStatus::of(&netcode, auto_aim.0);
    if settings != status.netcode {
        gathering.onsets = MotionOnsets::default();
        status.netcode = settings;
    }
    let drawn = me.single().ok().filter(|d| d.0.alive).map(|d| d.0.pos);
    let command_moves = this_tick.and_then(|t| t.0).map(|c| c.forward != 0.0 || c.right != 0.0);
    gathering.onsets.frame(now, time.delta_secs_f64(), command_moves, drawn);
    let delays = &gathering.onsets.delays_ms;
    status.own_motion_onsets = delays.len();
    status.own_motion_delay_ms = (!delays.is_empty()).then(|| gathering.onsets.mean_ms());
    status.own_motion_delays_ms = delays.iter().skip(delays.len().saturating_sub(DELAYS_SHOWN)).copied().collect();
    if let (Some(a), Some(b)) = (drawn, gathering.last_position) {
        status.moved_m += f64::from(a.distance(b));
    }
    gathering.last_position = drawn;
    status.position = drawn.map(|p| p.to_array());
}

/// Keeps the newest [`EVENTS_SHOWN`] events.
fn push_event(events: &mut VecDeque<String>, line: String) {
    events.push_back(line);
    while events.len() > EVENTS_SHOWN {
        events.pop_front();
    }
}
