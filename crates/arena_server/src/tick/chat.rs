//! Chat, with the server as the authority: each line cleaned
//! (`arena_protocol::chat`), at most [`CHAT_PER_S`] a second per player in
//! bursts of [`CHAT_BURST`] (the rest refused, with the reason, to the
//! sender alone), then passed on with who said it, to those who hear it (a
//! team line to the team; a watcher's line to watchers only while a duel is
//! on), logged, and kept for the demo being recorded. A summary
//! of refusals goes to the log at most every [`SUMMARY_PERIOD`], not a line
//! per refusal. Bots say one "gg" when a match ends, one bot, once: never
//! more.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use arena_protocol::ToClient;
use arena_protocol::chat::{ChatRefusal, clean_chat};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use arena_protocol::demo_frame::DemoChat;
use arena_protocol::modes::{Mode, Side, Team};

use super::match_flow::MatchState;
use crate::net;
use crate::socket::rate_limits::Bucket;
use crate::vocabulary::{ChatSaid, GameMode, PassedChat, Roster};

/// Lines a player may send: this many a second, in bursts of this many.
pub(crate) const CHAT_PER_S: f32 = 1.0;
pub(crate) const CHAT_BURST: f32 = 3.0;
/// How often refusals are summed up in the log.
const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

/// Each player's chat budget, and what was passed on and refused.
#[derive(Resource, Debug, Default)]
pub struct ChatStats {
    budgets: HashMap<ClientId, Bucket>,
    /// Lines passed on, and refused by reason, since the start.
    pub passed: u64,
    pub refused: BTreeMap<&'static str, u64>,
    summarised: u64,
    last_summary: Duration,
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<ChatSaid>().init_resource::<ChatStats>().init_resource::<PassedChat>();
}

fn label(why: ChatRefusal) -> &'static str {
    match why {
        ChatRefusal::TooFast => "too fast",
        ChatRefusal::Empty => "empty",
        ChatRefusal::NoTeams => "team chat without teams",
    }
}

/// Who hears a line (or a voice: `tick/voice.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audience {
    Everyone,
    Team(Team),
    /// Those who watch (and the duel's queue).
    Watchers,
    /// A team line where there are no teams.
    Nobody,
}

/// Who hears a line said by a player on `side` (to its team if `team`):
/// a team line reaches the team, or the watchers from a watcher; a
/// watcher's line to all reaches only watchers while a duel is being
/// played (so that nobody is coached).
pub(crate) fn audience(side: Side, team: bool, mode: Mode, over: bool) -> Audience {
    match (team, side.team()) {
        (true, Some(team)) => Audience::Team(team),
        (true, None) if side.watches() => Audience::Watchers,
        (true, None) => Audience::Nobody,
        (false, _) if side.watches() && mode == Mode::Duel && !over => Audience::Watchers,
        (false, _) => Audience::Everyone,
    }
}

pub(crate) fn hears(audience: Audience, side: Side) -> bool {
    match audience {
        Audience::Everyone => true,
        Audience::Team(team) => side.team() == Some(team),
        Audience::Watchers => side.watches(),
        Audience::Nobody => false,
    }
}

/// The lines intake read this frame: checked, passed on or refused.
pub(crate) fn pass_on_chat(
    mut said: MessageReader<ChatSaid>,
    (roster, mode, state): (Res<Roster>, Res<GameMode>, Res<MatchState>),
    server: Option<ResMut<RenetServer>>,
    mut stats: ResMut<ChatStats>,
    mut passed: ResMut<PassedChat>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    let Some(mut server) = server else { return };
    let mut any = false;
    for ChatSaid { client, text, team } in said.read() {
        any = true;
        let Some((id, entry)) = roster.by_client(*client) else { continue };
        let bucket = stats.budgets.entry(*client).or_insert_with(|| Bucket::full(CHAT_BURST, now));
        let text = clean_chat(text);
        let audience = audience(entry.side, *team, mode.mode, state.is_over());
        let refusal = if !bucket.take(now, CHAT_PER_S, CHAT_BURST) {
            Some(ChatRefusal::TooFast)
        } else if text.is_empty() {
            Some(ChatRefusal::Empty)
        } else if audience == Audience::Nobody {
            Some(ChatRefusal::NoTeams)
        } else {
            None
        };
        match refusal {
            Some(why) => {
                *stats.refused.entry(label(why)).or_default() += 1;
                net::send(&mut server, *client, &ToClient::ChatRefused(why));
            }
            None => {
                stats.passed += 1;
                let to = match audience {
                    Audience::Team(team) => format!(" (to the {} team)", team.name()),
                    Audience::Watchers => " (to spectators)".into(),
                    Audience::Everyone | Audience::Nobody => String::new(),
                };
                info!("chat: {}{to}: {text}", entry.name);
                let team = audience != Audience::Everyone;
                passed.0.push(DemoChat { from: id, name: entry.name.clone(), team, text: text.clone() });
                let line = ToClient::Chat { from: id, text, team };
                for (_, listener) in roster.players.iter().filter(|(_, e)| hears(audience, e.side)) {
                    if let Some(client) = listener.client_id {
                        net::send(&mut server, client, &line);
                    }
                }
            }
        }
    }
    if any {
        // Budgets of players who left go (the table holds players only).
        stats.budgets.retain(|client, _| roster.by_client(*client).is_some());
    }
    let total: u64 = stats.refused.values().sum();
    if total > stats.summarised && now.saturating_sub(stats.last_summary) >= SUMMARY_PERIOD {
        let reasons: Vec<String> = stats.refused.iter().map(|(why, n)| format!("{n} {why}")).collect();
        info!("chat: {} lines refused lately ({} since the start)", total - stats.summarised, reasons.join(", "));
        stats.summarised = total;
        stats.last_summary = now;
    }
}

/// When a match ends, one bot says "gg" (the first in the roster that did
/// not win: a winner's "gg" reads as gloating), once per match.
pub(crate) fn bots_say_gg(
    state: Res<MatchState>,
    roster: Res<Roster>,
    server: Option<ResMut<RenetServer>>,
    mut passed: ResMut<PassedChat>,
    mut said_for: Local<Option<u32>>,
) {
    let arena_protocol::MatchPhase::Over { winner, .. } = state.phase else { return };
    if *said_for == Some(state.number) {
        return;
    }
    *said_for = Some(state.number);
    let Some(mut server) = server else { return };
    let Some((id, bot)) = roster.players.iter().find(|(id, e)| e.is_bot() && e.side.plays() && Some(**id) != winner)
    else {
        return;
    };
    info!("chat: {}: gg", bot.name);
    passed.0.push(DemoChat { from: *id, name: bot.name.clone(), team: false, text: "gg".into() });
    net::broadcast(&mut server, &ToClient::Chat { from: *id, text: "gg".into(), team: false }, None);
}
