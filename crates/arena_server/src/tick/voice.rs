//! Voice, with the server as a switchboard that never decodes: each frame's
//! size is checked at intake (`arena_protocol::voice`), then its talker's
//! budget (frames and bytes a second, [`TALKER_FRAMES_PER_S`] and
//! [`TALKER_BYTES_PER_S`]), the number of talkers one audience hears at
//! once ([`MAX_TALKERS`]), the server's switch and the console's mutes; a frame
//! that passes goes on the unreliable path to those who may hear it, routed
//! as chat is (`tick/chat.rs`: the team in team deathmatch, watchers to
//! watchers while a duel is on), and only to clients that play voice.
//! Everything dropped is counted by reason and summed up in the log at
//! most every [`SUMMARY_PERIOD`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use arena_protocol::ToClient;
use arena_protocol::voice::{
    MAX_TALKERS, TALKER_BYTE_BURST, TALKER_BYTES_PER_S, TALKER_FRAME_BURST, TALKER_FRAMES_PER_S, TALKER_QUIET_MS,
};
use arena_sim::PlayerId;
use bevy::prelude::*;
use bevy_renet::renet::ClientId;

use super::chat::{Audience, audience, hears};
use super::match_flow::MatchState;
use crate::net;
use crate::socket::rate_limits::Bucket;
use crate::vocabulary::{ClientPrefs, GameMode, Roster, UnreliableOut, VoiceControl, VoiceSaid};

/// How often drops are summed up in the log.
const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

/// A talker's two budgets.
#[derive(Debug)]
struct Budget {
    frames: Bucket,
    bytes: Bucket,
}

/// Each talker's budget, who is talking, and what was passed on and dropped.
#[derive(Resource, Debug, Default)]
pub struct VoiceStats {
    budgets: HashMap<ClientId, Budget>,
    /// Players talking now, with their last frame's time (the real clock)
    /// and who hears them.
    talking: BTreeMap<PlayerId, (Duration, Audience)>,
    /// Frames passed on (once each, however many hear them), and copies sent.
    pub passed: u64,
    pub sent: u64,
    /// Frames dropped, by reason, since the start.
    pub dropped: BTreeMap<&'static str, u64>,
    summarised: u64,
    last_summary: Duration,
}

impl VoiceStats {
    /// The players talking now (heard by someone within [`TALKER_QUIET_MS`]).
    pub fn talkers(&self) -> Vec<PlayerId> {
        self.talking.keys().copied().collect()
    }

    fn drop(&mut self, why: &'static str) {
        *self.dropped.entry(why).or_default() += 1;
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<VoiceSaid>().init_resource::<VoiceStats>().init_resource::<VoiceControl>();
}

/// The frames intake read this frame: checked, passed on or dropped.
pub(crate) fn pass_on_voice(
    mut said: MessageReader<VoiceSaid>,
    (roster, mode, state): (Res<Roster>, Res<GameMode>, Res<MatchState>),
    mut control: ResMut<VoiceControl>,
    prefs: Query<&ClientPrefs>,
    out: Option<ResMut<UnreliableOut>>,
    mut stats: ResMut<VoiceStats>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    let quiet = Duration::from_millis(u64::from(TALKER_QUIET_MS));
    stats.talking.retain(|id, (last, _)| now.saturating_sub(*last) < quiet && roster.players.contains_key(id));
    // A mute goes with its player (the id will be someone else's).
    control.muted.retain(|id| roster.players.contains_key(id));
    let Some(mut out) = out else {
        for _ in said.read() {
            stats.drop("no transport");
        }
        return;
    };
    let plays_voice = |entity: Entity| prefs.get(entity).is_ok_and(|p| p.0.voice);
    let mut any = false;
    for VoiceSaid { client, frame } in said.read() {
        any = true;
        let Some((id, talker)) = roster.by_client(*client) else {
            stats.drop("no player");
            continue;
        };
        if !control.on {
            stats.drop("voice off");
            continue;
        }
        if control.muted.contains(&id) {
            stats.drop("muted by the console");
            continue;
        }
        if !plays_voice(talker.entity) {
            stats.drop("talker's voice off");
            continue;
        }
        let budget = stats.budgets.entry(*client).or_insert_with(|| Budget {
            frames: Bucket::full(TALKER_FRAME_BURST, now),
            bytes: Bucket::full(TALKER_BYTE_BURST, now),
        });
        // The bytes' bucket holds a token a byte: a frame takes its length.
        let bytes = frame.opus.len() as f32;
        if !budget.frames.take(now, TALKER_FRAMES_PER_S, TALKER_FRAME_BURST)
            || !budget.bytes.take_n(now, TALKER_BYTES_PER_S, TALKER_BYTE_BURST, bytes)
        {
            stats.drop("over the talker's budget");
            continue;
        }
        let to = audience(talker.side, mode.mode.has_teams(), mode.mode, state.is_over());
        if to == Audience::Nobody {
            stats.drop("nobody to hear");
            continue;
        }
        // At most MAX_TALKERS heard at once by any one audience (a team,
        // the watchers, everyone): one side's talkers never silence another's.
        let same_audience = stats.talking.iter().filter(|(other, (_, a))| **other != id && *a == to).count();
        let has_place = stats.talking.get(&id).is_some_and(|(_, a)| *a == to);
        if !has_place && same_audience >= MAX_TALKERS {
            stats.drop("too many talkers");
            continue;
        }
        let listeners: Vec<ClientId> = roster
            .players
            .iter()
            .filter(|(other, e)| **other != id && hears(to, e.side) && plays_voice(e.entity))
            .filter_map(|(_, e)| e.client_id)
            .collect();
        if listeners.is_empty() {
            // Nobody to take a talker's place from.
            stats.drop("nobody to hear");
            continue;
        }
        stats.talking.insert(id, (now, to));
        stats.passed += 1;
        stats.sent += listeners.len() as u64;
        net::broadcast_now(&mut out, &listeners, &ToClient::Voice { from: id, frame: frame.clone() });
    }
    if any {
        // Budgets of players who left go (the table holds players only).
        stats.budgets.retain(|client, _| roster.by_client(*client).is_some());
    }
    let total: u64 = stats.dropped.values().sum();
    if total > stats.summarised && now.saturating_sub(stats.last_summary) >= SUMMARY_PERIOD {
        let reasons: Vec<String> = stats.dropped.iter().map(|(why, n)| format!("{n} {why}")).collect();
        info!("voice: {} frames dropped lately ({} since the start)", total - stats.summarised, reasons.join(", "));
        stats.summarised = total;
        stats.last_summary = now;
    }
}
