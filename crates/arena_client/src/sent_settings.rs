//! Our netcode choices told to the server (the `ClientSettings` message):
//! lag compensation, projectile compensation, the kill-cam, the
//! interpolation delay, and the snapshots and bytes a second it can take
//! (`cl_updaterate`, `rate`), sent on joining and when they change. The switches
//! themselves are `settings`' [`NetcodeSettings`].

use arena_protocol::{ClientSettings, ToServer};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::render_clock::ServerClock;
use crate::settings::{NetcodeSettings, VoiceSettings};
use crate::vocabulary::{MessageTally, Roster, SessionState, send_to_server};

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<SentSettings>();
}

/// The settings last sent to the server, and when (seconds of our clock).
#[derive(Resource, Debug, Default)]
pub(crate) struct SentSettings {
    last: Option<ClientSettings>,
    at_s: f64,
}

/// The adaptive interpolation delay moves a little all the time; the server
/// (which bounds rewinds by it, with ticks of slack) hears of a move of at
/// least this many milliseconds...
const DELAY_NEWS_MS: u16 = 3;
/// ...at once when it grew, and of a shrinking one at most this often, seconds.
const DELAY_NEWS_EVERY_S: f64 = 0.25;

impl SentSettings {
    /// Whether `current` is worth a message now: a switch flipped, or a
    /// delay grown by enough, at once (the server's estimate and rewind
    /// bound must not lag a delay that grew); one shrunk by enough, not too
    /// often.
    fn worth_sending(&self, current: ClientSettings, now_s: f64) -> bool {
        let Some(last) = self.last else { return true };
        let switched = last.lag_compensation != current.lag_compensation
            || last.projectile_compensation != current.projectile_compensation
            || last.kill_cam != current.kill_cam
            || last.update_rate != current.update_rate
            || last.rate != current.rate
            || (last.interp_ms == 0) != (current.interp_ms == 0);
        let moved = last.interp_ms.abs_diff(current.interp_ms) >= DELAY_NEWS_MS;
        let grew = current.interp_ms > last.interp_ms;
        switched || (moved && (grew || now_s - self.at_s >= DELAY_NEWS_EVERY_S))
    }
}

/// Tells the server our lag-compensation choice and interpolation delay
/// when they change (and on joining).
pub(crate) fn send_settings(
    settings: Res<NetcodeSettings>,
    voice: Res<VoiceSettings>,
    mut roster: ResMut<Roster>,
    clock: Res<ServerClock>,
    time: Res<Time<Real>>,
    client: Option<ResMut<RenetClient>>,
    mut sent: ResMut<SentSettings>,
    mut tally: ResMut<MessageTally>,
) {
    let Some(mut client) = client else { return };
    let delay_ms = if clock.started() {
        clock.delay_ms(roster.tick_rate())
    } else {
        arena_protocol::default_interp_ms(roster.snapshot_rate())
    };
    let interp_ms = if settings.interpolation { ClientSettings::interp_ms_of(delay_ms).max(1) } else { 0 };
    let current = ClientSettings {
        lag_compensation: settings.lag_compensation,
        interp_ms,
        projectile_compensation: settings.projectile_compensation,
        kill_cam: settings.kill_cam,
        update_rate: settings.update_rate,
        rate: settings.rate,
        voice: voice.enabled && cfg!(not(target_arch = "wasm32")),
    };
    let now_s = time.elapsed_secs_f64();
    if sent.last == Some(current) || !sent.worth_sending(current, now_s) {
        return;
    }
    if send_to_server(&mut client, &mut tally, &ToServer::Settings(current)) {
        *sent = SentSettings { last: Some(current), at_s: now_s };
        // From now on the server sends by it: draw by it too.
        roster.update_rate = current.update_rate;
    }
}
