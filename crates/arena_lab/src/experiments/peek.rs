//! `arena lab peek`: the peeker's advantage, measured from drawn frames. A
//! holder stands still watching the edge of the centre slab; a peeker behind
//! it strafes out into view and back, again and again. For each peek the
//! advantage is the time from the peeker's first frame that shows the holder
//! (eye to eye, past the map) to the holder's first frame that shows the
//! peeker. Beside it, each stage a move goes through on its way from the
//! peeker's screen to the holder's, timed tick by tick from the apps' own
//! clocks (Riot's sum as Arena measured it): their sum is the formula the
//! measured advantage is checked against.
//!
//! The clients draw at `--fps`; the server runs its frames as `arena
//! server` does (four a tick, at most 256 a second). All three keep one timeline, each updated when its
//! next frame is due; the clients' links move around every server frame,
//! as their I/O threads would. `arena lab timing` runs the same on the wall
//! clock, with real I/O threads.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use arena_client::link::Departure;
use arena_client::transport::UdpTransport;
use arena_client::{ClientTick, DrawnFrame, LocalInput, NetStats, RoundTrip, ServerClock};
use arena_sim::{ArenaWorld, MapDef, PlayerState};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use serde::Serialize;

use crate::harness::{
    LoopbackGame, client_app_pumped, client_app_real, drawn_self, pump_io, server_app_with_frame, session,
};

use super::setup::{FPS_RANGE, LabError, LabSettings, Summary, WARMUP_S, line_clear};

/// Where the holder stands (south of the centre slab, looking north at its
/// east edge) and where the peeker waits behind the slab, out of sight.
const HOLDER_AT: Vec3 = Vec3::new(0.0, 0.0, 10.0);
const PEEKER_HIDDEN_AT: Vec3 = Vec3::new(2.0, 0.0, -2.2);
/// The peeker strafes east until this x (well in sight: sight opens at
/// about 4.6 m), then back west until behind the slab again.
const PEEK_OUT_X_M: f32 = 5.8;
const PEEK_BACK_X_M: f32 = 2.2;
/// How long the peeker waits behind cover between peeks, seconds: long
/// enough for both screens to show it hidden again.
const WAIT_HIDDEN_S: f64 = 0.6;

/// How the peek is drawn.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Peek {
    /// Both clients' frames per second.
    pub fps: f64,
}

impl Default for Peek {
    fn default() -> Self {
        Self { fps: 144.0 }
    }
}

/// What `arena lab peek` prints.
#[derive(Debug, Serialize)]
pub struct PeekReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    #[serde(flatten)]
    pub peek: Peek,
    /// Peeks measured (both screens showed the other), and peeks whose
    /// holder never saw the peeker before it went back.
    pub peeks: usize,
    pub unseen_peeks: usize,
    /// The holder's first frame showing the peeker minus the peeker's first
    /// frame showing the holder, milliseconds.
    pub advantage_mean_ms: f64,
    pub advantage_p50_ms: f64,
    pub advantage_p95_ms: f64,
    /// Riot's sum, each term as Arena measured it over every tick of the
    /// run (means, milliseconds). The peeker's frame: from the peeker's
    /// screen showing a tick's movement to its command leaving (negative:
    /// the command leaves first and prediction draws a tick behind it).
    pub peeker_frame_ms: f64,
    /// The command's trip to the server.
    pub peeker_one_way_ms: f64,
    /// The command's wait for its tick, and the tick's snapshot's wait for
    /// the end of the server's frame.
    pub server_frame_ms: f64,
    /// The snapshot's trip to the holder (to the frame that reads it).
    pub holder_one_way_ms: f64,
    /// From the snapshot's arrival to the holder's first frame that draws its tick.
    pub holder_interp_delay_ms: f64,
    /// The five terms' sum. It telescopes to the mean, over ticks, of the
    /// time between the peeker's screen and the holder's first showing the
    /// same tick: the check is that the eye-to-eye peeks agree with it.
    pub formula_ms: f64,
    /// Riot's sum from the figures one would usually plug in: a frame at
    /// `fps`, half of each player's round trip, a whole tick for the server
    /// and the interpolation delay in use.
    pub riot_estimate_ms: f64,
    /// The interpolation delay the holder used, milliseconds (mean over frames).
    pub interp_ms: f64,
    /// The holder's drawn frames whose peeker was extrapolated past the newest snapshot.
    pub holder_extrapolated_share: f64,
    pub peeker_rtt_ms: f64,
    pub holder_rtt_ms: f64,
    pub server_frame_hz: f64,
    /// Both players' commands that reached the server after their tick had
    /// run, of all that came in time or not.
    pub late_commands_ratio: f64,
}

impl Peek {
    fn validate(&self) -> Result<(), LabError> {
        if FPS_RANGE.contains(&self.fps) { Ok(()) } else { Err(LabError::Fps(self.fps)) }
    }
}

/// One app's frames on the shared timeline.
struct Pacer {
    frame_s: f64,
    next_s: f64,
}

/// The lab's clock: stepped by hand (every app's time advances by its frame
/// at each update: repeatable, as fast as the machine runs; the clients'
/// links are moved around every server frame, standing in for their I/O
/// threads), or real (each update waits for its time, the apps read the
/// wall clock, and the clients' sockets have their own I/O threads, as in a
/// game).
#[derive(Clone, Copy, Debug)]
pub(crate) enum LabClock {
    Stepped,
    Real(Instant),
}

/// The three apps, each updated when its next frame is due.
struct Timeline {
    clock: LabClock,
    now_s: f64,
    server: Pacer,
    clients: Vec<Pacer>,
}

/// Which app an update was.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Updated {
    Server,
    Client(usize),
}

impl Timeline {
    fn new(clock: LabClock, server_frame_s: f64, client_frame_s: f64, clients: usize) -> Self {
        let pacer = |frame_s| Pacer { frame_s, next_s: 0.0 };
        Self {
            clock,
            now_s: 0.0,
            server: pacer(server_frame_s),
            clients: (0..clients).map(|_| pacer(client_frame_s)).collect(),
        }
    }

    /// Updates the app whose frame is due first (the server first on a tie:
    /// what it sends is then readable in the clients' frames of the same instant).
    fn update(&mut self, lab: &mut LoopbackGame) -> Updated {
        let (index, due) = self
            .clients
            .iter()
            .enumerate()
            .map(|(i, p)| (Some(i), p.next_s))
            .fold((None, self.server.next_s), |best, c| if c.1 < best.1 { c } else { best });
        self.now_s = match self.clock {
            LabClock::Stepped => due,
            LabClock::Real(start) => {
                let wait = due - start.elapsed().as_secs_f64();
                if wait > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(wait));
                }
                start.elapsed().as_secs_f64()
            }
        };
        match index {
            None => {
                // On a stepped clock the clients' links move around the
                // server's frames, as their I/O threads would: what is due
                // leaves before the server reads, what it sent is stamped now.
                self.pump_clients(lab);
                lab.server.update();
                self.pump_clients(lab);
                self.server.next_s += self.server.frame_s;
                Updated::Server
            }
            Some(i) => {
                lab.clients[i].update();
                self.clients[i].next_s += self.clients[i].frame_s;
                Updated::Client(i)
            }
        }
    }

    /// On a stepped clock: every client's link moved at this instant.
    fn pump_clients(&self, lab: &mut LoopbackGame) {
        if let LabClock::Real(_) = self.clock {
            return; // their threads do it
        }
        for (pacer, client) in self.clients.iter().zip(lab.clients.iter_mut()) {
            let elapsed = client.world().resource::<Time<Real>>().elapsed_secs_f64();
            let since_update = self.now_s - (pacer.next_s - pacer.frame_s);
            pump_io(client, Duration::from_secs_f64((elapsed + since_update).max(0.0)));
        }
    }

    fn run_for(&mut self, lab: &mut LoopbackGame, seconds: f64) {
        let until = self.now_s + seconds;
        while self.now_s < until {
            self.update(lab);
        }
    }
}

/// When each stage of tick N happened on the shared timeline, seconds.
#[derive(Default, Clone, Copy)]
struct Stages {
    /// The peeker made the command.
    made: Option<f64>,
    /// The peeker's screen first showed the tick's state.
    peeker_drew: Option<f64>,
    /// The server ran the tick (and sent its snapshot in the same frame).
    ran: Option<f64>,
    /// How long after the tick's time that frame came, seconds.
    sent_after_s: Option<f64>,
    /// How early the peeker's command reached the server, seconds.
    margin_s: Option<f64>,
    /// The holder read the tick's snapshot.
    arrived: Option<f64>,
    /// The holder's screen first showed the tick.
    holder_drew: Option<f64>,
}

/// Whether `to` can be seen from `from`, eye to eye, past the map.
fn sees(world: &ArenaWorld, from: &PlayerState, to: &PlayerState) -> bool {
    line_clear(world, from.eye_pos(), to.eye_pos())
}

/// Marks the ticks after `*drawn_to` up to `shown` as first drawn `now`.
fn mark_drawn(
    stages: &mut BTreeMap<u32, Stages>,
    drawn_to: &mut Option<u32>,
    shown: u32,
    now: f64,
    field: impl Fn(&mut Stages) -> &mut Option<f64>,
) {
    let from = drawn_to.map_or(0, |t| t.saturating_add(1));
    if from <= shown {
        for (_, stage) in stages.range_mut(from..=shown) {
            field(stage).get_or_insert(now);
        }
        *drawn_to = Some(shown);
    }
}

/// What the peeker does this frame.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Hidden { since_s: f64 },
    Out { started_s: f64 },
    Back,
}

/// What a run measures beside the peeks (for `arena lab timing`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimingFigures {
    /// The peeker's round trip as it measures it, mean over its frames, ms.
    pub rtt_ms: f64,
    /// The holder's estimate of the server's clock less the server's clock
    /// (and the one-way delay asked of the conditioner, which the estimate
    /// is behind by design), 95th percentile of its size over frames, ms.
    pub clock_offset_error_ms_p95: f64,
    /// The error's mean (with its sign: negative, the estimate is behind), ms.
    pub clock_offset_error_ms_mean: f64,
    /// Time between consecutive command datagrams leaving the peeker, ms.
    pub command_send_gap_ms_p95: f64,
    pub command_send_gap_ms_p50: f64,
}

/// Runs `arena lab peek`.
pub fn peek(settings: LabSettings, peek: Peek) -> Result<PeekReport, LabError> {
    run(settings, peek, LabClock::Stepped).map(|(report, _)| report)
}

/// Runs the peeks on `clock`.
pub(crate) fn run(settings: LabSettings, peek: Peek, clock: LabClock) -> Result<(PeekReport, TimingFigures), LabError> {
    settings.validate()?;
    peek.validate()?;
    let config = settings.server_config();
    let server_frame_s = 1.0 / f64::from(arena_server::frame_hz(config.tick_hz));
    let (mut server, info) = server_app_with_frame(&config, Duration::from_secs_f64(server_frame_s));
    let names = ["Holder", "Peeker"];
    let (holder, peeker) = (0, 1);
    let clients = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut netcode = settings.netcode();
            netcode.conditioner_seed = Some(settings.seed.wrapping_add(i as u64 * 7919));
            match clock {
                LabClock::Stepped => {
                    client_app_pumped(Duration::from_secs_f64(1.0 / peek.fps), info.local_addr, name, netcode)
                }
                LabClock::Real(_) => client_app_real(info.local_addr, name, netcode),
            }
        })
        .collect();
    if let LabClock::Real(_) = clock {
        server.insert_resource(TimeUpdateStrategy::Automatic);
    }
    let mut lab = LoopbackGame { server, clients };
    let clock = match clock {
        // The run's time starts now, with the apps'.
        LabClock::Real(_) => LabClock::Real(Instant::now()),
        stepped => stepped,
    };
    let mut timeline = Timeline::new(clock, server_frame_s, 1.0 / peek.fps, names.len());
    let joined = |lab: &LoopbackGame| lab.clients.iter().all(|c| session(c) == arena_client::Session::InGame);
    while !joined(&lab) {
        if timeline.now_s > 10.0 {
            return Err(LabError::NotJoined);
        }
        timeline.update(&mut lab);
    }
    lab.teleport("Holder", HOLDER_AT, 0.0);
    lab.teleport("Peeker", PEEKER_HIDDEN_AT, std::f32::consts::PI);
    timeline.run_for(&mut lab, WARMUP_S);
    for (i, yaw) in [(holder, 0.0), (peeker, std::f32::consts::PI)] {
        let mut input = lab.clients[i].world_mut().resource_mut::<LocalInput>();
        (input.yaw, input.pitch) = (yaw, 0.0);
    }

    let world = ArenaWorld::new(MapDef::foundry());
    let rate = arena_sim::TickRate::new(config.tick_hz);
    let mut stages: BTreeMap<u32, Stages> = BTreeMap::new();
    let mut advantages = Vec::new();
    let mut unseen_peeks = 0;
    let (mut peeker_saw, mut holder_saw) = (None::<f64>, None::<f64>);
    let mut phase = Phase::Hidden { since_s: timeline.now_s };
    let (mut delay_sum_ticks, mut holder_frames, mut extrapolated) = (0.0, 0u64, 0u64);
    let mut last_made = lab.clients[peeker].world().resource::<ClientTick>().0;
    let mut last_ran = lab.server.world().resource::<arena_server::ServerTick>().0;
    let mut last_arrived = None;
    let (mut peeker_drawn_to, mut holder_drawn_to) = (None, None);
    // The timing figures: the server's clock as of its last frame (when,
    // and its time in ticks), the holder's error against it, the peeker's
    // round trips and departures, and both players' command tallies.
    let mut server_clock: Option<(f64, f64)> = None;
    let one_way_ms = f64::from(settings.fake_latency_ms) / 2.0;
    let (mut offset_errors_ms, mut rtts_ms, mut gaps_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut last_departure: Option<Departure> = None;
    let tallies = |lab: &LoopbackGame| -> Vec<arena_server::CommandStats> {
        names
            .iter()
            .filter_map(|name| lab.player(name))
            .filter_map(|e| lab.server.world().get::<arena_server::CommandBuffer>(e))
            .map(|b| b.stats)
            .collect()
    };
    let tallies_before = tallies(&lab);
    let end_s = timeline.now_s + settings.seconds;
    while timeline.now_s < end_s {
        let now = timeline.now_s;
        // The peeker's input for its next frame: hold still, strafe out, come back.
        if let Some(me) = drawn_self(&lab.clients[peeker]) {
            phase = match phase {
                Phase::Hidden { since_s } if now - since_s >= WAIT_HIDDEN_S => {
                    (peeker_saw, holder_saw) = (None, None);
                    Phase::Out { started_s: now }
                }
                Phase::Out { .. } if me.pos.x >= PEEK_OUT_X_M => Phase::Back,
                Phase::Back if me.pos.x <= PEEK_BACK_X_M => {
                    match (peeker_saw, holder_saw) {
                        (Some(p), Some(h)) => advantages.push((h - p) * 1000.0),
                        (Some(_), None) => unseen_peeks += 1,
                        _ => {}
                    }
                    Phase::Hidden { since_s: now }
                }
                other => other,
            };
            let mut input = lab.clients[peeker].world_mut().resource_mut::<LocalInput>();
            // Facing south, right is west (-x).
            input.right = match phase {
                Phase::Hidden { .. } => 0.0,
                Phase::Out { .. } => -1.0,
                Phase::Back => 1.0,
            };
        }
        lab.keep_alive("Holder");
        lab.keep_alive("Peeker");
        let updated = timeline.update(&mut lab);
        let now = timeline.now_s;
        let peeking = !matches!(phase, Phase::Hidden { .. });
        match updated {
            Updated::Server => {
                let world = lab.server.world();
                let ran = world.resource::<arena_server::ServerTick>().0;
                let fixed = world.resource::<Time<Fixed>>();
                let sent_after_s = fixed.overstep().as_secs_f64();
                let buffer = lab
                    .player("Peeker")
                    .and_then(|e| world.get::<arena_server::CommandBuffer>(e))
                    .and_then(|b| Some((b.last_run_tick?, b.last_margin?)));
                server_clock = Some((now, f64::from(ran) + fixed.overstep_fraction_f64()));
                for tick in (last_ran.wrapping_add(1)..=ran).take(4) {
                    let stage = stages.entry(tick).or_default();
                    stage.ran = Some(now);
                    stage.sent_after_s = Some(sent_after_s);
                    // A command that came (a missing one says -1 tick).
                    if let Some((_, margin)) = buffer.filter(|(run, m)| *run == tick && *m >= 0.0) {
                        stage.margin_s = Some(rate.ticks_to_s(f64::from(margin)));
                    }
                }
                last_ran = ran;
            }
            Updated::Client(i) if i == peeker => {
                let made = lab.clients[peeker].world().resource::<ClientTick>().0;
                if arena_sim::tick_diff(made, last_made) <= 4 {
                    for tick in last_made..made {
                        stages.entry(tick).or_default().made = Some(now);
                    }
                }
                last_made = made;
                let peeker_world = lab.clients[peeker].world();
                if peeker_world.resource::<RoundTrip>().rtt_s.is_some() {
                    rtts_ms.push(peeker_world.resource::<NetStats>().rtt_ms);
                }
                let departures = peeker_world.get_resource::<UdpTransport>().map(|t| t.departures());
                for departure in departures.unwrap_or_default() {
                    let newer = last_departure
                        .is_none_or(|last| arena_sim::tick_after(departure.newest_command, last.newest_command));
                    if newer {
                        if let Some(last) = last_departure {
                            gaps_ms.push(departure.released.saturating_sub(last.released).as_secs_f64() * 1000.0);
                        }
                        last_departure = Some(departure);
                    }
                }
                let frame = *lab.clients[peeker].world().resource::<DrawnFrame>();
                if let Some(newest) = frame.tick {
                    // Drawn between the states of ticks newest-1 and newest.
                    let shown = (f64::from(newest) - 1.0 + f64::from(frame.fraction)).floor().max(0.0) as u32;
                    mark_drawn(&mut stages, &mut peeker_drawn_to, shown, now, |s| &mut s.peeker_drew);
                }
                if peeking
                    && peeker_saw.is_none()
                    && let (Some(me), Some(them)) = (drawn_self(&lab.clients[peeker]), lab.drawn_other(peeker))
                    && sees(&world, &me, &them)
                {
                    peeker_saw = Some(now);
                }
            }
            Updated::Client(_) => {
                let clock = lab.clients[holder].world().resource::<ServerClock>().clone();
                let holder_now_s = lab.clients[holder].world().resource::<Time<Real>>().elapsed_secs_f64();
                if let (Some(estimate_s), Some((at, ticks))) = (clock.server_time_s(holder_now_s), server_clock) {
                    let actual_ticks = ticks + rate.s_to_ticks(now - at);
                    let error_ms = rate.ticks_to_ms(rate.s_to_ticks(estimate_s) - actual_ticks) + one_way_ms;
                    offset_errors_ms.push(error_ms);
                }
                if clock.newest_tick != last_arrived {
                    if let Some(tick) = clock.newest_tick {
                        stages.entry(tick).or_default().arrived.get_or_insert(now);
                    }
                    last_arrived = clock.newest_tick;
                }
                let shown = clock.render_tick.floor().max(0.0) as u32;
                mark_drawn(&mut stages, &mut holder_drawn_to, shown, now, |s| &mut s.holder_drew);
                delay_sum_ticks += clock.delay_ticks;
                holder_frames += 1;
                if let (Some(newest), true) = (clock.newest_tick, clock.started()) {
                    extrapolated += u64::from(clock.render_tick > f64::from(newest));
                }
                if peeking
                    && peeker_saw.is_some()
                    && holder_saw.is_none()
                    && let (Some(me), Some(them)) = (drawn_self(&lab.clients[holder]), lab.drawn_other(holder))
                    && sees(&world, &me, &them)
                {
                    holder_saw = Some(now);
                }
            }
        }
        // Stages of ticks long past are complete or never will be.
        while stages.len() > 4096 {
            stages.pop_first();
        }
    }

    // Riot's terms, tick by tick where every stage was seen.
    let complete: Vec<Stages> = stages
        .values()
        .copied()
        .filter(|s| {
            s.made.is_some()
                && s.peeker_drew.is_some()
                && s.ran.is_some()
                && s.margin_s.is_some()
                && s.arrived.is_some()
                && s.holder_drew.is_some()
        })
        .collect();
    let mean_ms = |f: &dyn Fn(&Stages) -> Option<f64>| {
        let values: Vec<f64> = complete.iter().filter_map(f).collect();
        Summary::of(&values).mean * 1000.0
    };
    let peeker_frame_ms = mean_ms(&|s| Some(s.made? - s.peeker_drew?));
    let peeker_one_way_ms = mean_ms(&|s| Some(s.ran? - s.sent_after_s? - s.margin_s? - s.made?));
    let server_frame_ms = mean_ms(&|s| Some(s.margin_s? + s.sent_after_s?));
    let holder_one_way_ms = mean_ms(&|s| Some(s.arrived? - s.ran?));
    let holder_interp_delay_ms = mean_ms(&|s| Some(s.holder_drew? - s.arrived?));
    let advantage = Summary::of(&advantages);
    let tick_rate_ms = |ticks: f64| rate.ticks_to_ms(ticks);
    // Commands that came after their tick ran, of all that came.
    let (mut late, mut on_time) = (0u64, 0u64);
    for (after, before) in tallies(&lab).iter().zip(&tallies_before) {
        late += after.late.saturating_sub(before.late);
        on_time += after.run.saturating_sub(before.run);
    }
    let mut offset_errors: Vec<f64> = offset_errors_ms.iter().map(|e| e.abs()).collect();
    offset_errors.sort_by(f64::total_cmp);
    let gaps = Summary::of(&gaps_ms);
    let figures = TimingFigures {
        rtt_ms: Summary::of(&rtts_ms).mean,
        clock_offset_error_ms_p95: super::setup::percentile(&offset_errors, 0.95),
        clock_offset_error_ms_mean: Summary::of(&offset_errors_ms).mean,
        command_send_gap_ms_p95: gaps.p95,
        command_send_gap_ms_p50: gaps.p50,
    };
    let report = PeekReport {
        experiment: "peek",
        peeks: advantages.len(),
        unseen_peeks,
        advantage_mean_ms: advantage.mean,
        advantage_p50_ms: advantage.p50,
        advantage_p95_ms: advantage.p95,
        peeker_frame_ms,
        peeker_one_way_ms,
        server_frame_ms,
        holder_one_way_ms,
        holder_interp_delay_ms,
        formula_ms: peeker_frame_ms + peeker_one_way_ms + server_frame_ms + holder_one_way_ms + holder_interp_delay_ms,
        riot_estimate_ms: {
            let rtt = |i: usize| lab.clients[i].world().resource::<NetStats>().rtt_ms;
            1000.0 / peek.fps
                + rtt(peeker) / 2.0
                + rate.ticks_to_ms(1.0)
                + rtt(holder) / 2.0
                + tick_rate_ms(delay_sum_ticks / holder_frames.max(1) as f64)
        },
        interp_ms: tick_rate_ms(delay_sum_ticks / holder_frames.max(1) as f64),
        holder_extrapolated_share: extrapolated as f64 / holder_frames.max(1) as f64,
        peeker_rtt_ms: lab.clients[peeker].world().resource::<NetStats>().rtt_ms,
        holder_rtt_ms: lab.clients[holder].world().resource::<NetStats>().rtt_ms,
        server_frame_hz: 1.0 / server_frame_s,
        late_commands_ratio: late as f64 / (late + on_time).max(1) as f64,
        settings,
        peek,
    };
    Ok((report, figures))
}
