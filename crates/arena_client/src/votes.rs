//! Votes, client side: the player's calls and ballots (from the console's
//! `callvote` and `vote`, the two vote keys, the menu) go to the server,
//! which holds the vote (`arena_server`'s `tick/votes.rs`); the vote as
//! the server last told it is kept for the view (its question in words, the
//! count, the time left), and its end and refusals of ours go to the chat
//! log as the server's word.

use arena_protocol::vote::{VoteCall, VoteOutcome, VoteStatus};
use arena_protocol::{ToClient, ToServer};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::chat::ChatLog;
use crate::vocabulary::{GameMessage, MessageTally, Roster, SessionState, send_to_server};

/// How long an ended vote stays on screen, seconds.
pub const ENDED_SHOWN_S: f64 = 3.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<VoteBoard>().add_message::<VoteAction>();
}

/// The player calls a vote or answers one: the view and the console write it.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
pub enum VoteAction {
    Call(VoteCall),
    Ballot(bool),
}

/// The vote on screen: open, or ended a moment ago.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownVote {
    pub status: VoteStatus,
    /// Its question in words ("change the map to Spire"), and who called it.
    pub question: String,
    pub caller: String,
    /// When it closes (open) or ended, seconds on the app's real clock.
    pub ends_at_s: f64,
    /// Our own ballot, if we cast one (the caller's is yes).
    pub ours: Option<bool>,
}

impl ShownVote {
    /// Whole seconds left to answer.
    pub fn seconds_left(&self, now_s: f64) -> u32 {
        (self.ends_at_s - now_s).max(0.0).ceil() as u32
    }
}

/// The vote as the server last told it.
#[derive(Resource, Debug, Default)]
pub struct VoteBoard {
    pub shown: Option<ShownVote>,
    /// Votes seen end, and how.
    pub passed: u32,
    pub failed: u32,
    /// Calls and ballots of ours the server refused.
    pub refused: u32,
}

impl VoteBoard {
    /// The vote to draw at `now_s`: open, or ended less than
    /// [`ENDED_SHOWN_S`] ago.
    pub fn visible(&self, now_s: f64) -> Option<&ShownVote> {
        self.shown.as_ref().filter(|v| v.status.outcome == VoteOutcome::Open || now_s < v.ends_at_s + ENDED_SHOWN_S)
    }

    /// Whether a vote is open that we have not answered.
    pub fn awaits_us(&self) -> bool {
        self.shown.as_ref().is_some_and(|v| v.status.outcome == VoteOutcome::Open && v.ours.is_none())
    }
}

/// A call in the console's words (`callvote map spire`, `mode tdm`, `kick
/// NAME|#ID`, `restart`): the kinds, the mode and the player are checked
/// here, the map by the server.
pub fn parse_call(args: &[String], roster: &Roster) -> Result<VoteCall, String> {
    const USAGE: &str = "callvote map NAME | mode ffa|tdm|duel | kick NAME | restart";
    let Some((kind, rest)) = args.split_first() else { return Err(USAGE.into()) };
    let rest = rest.join(" ");
    match arena_protocol::vote::VoteKind::parse(kind) {
        Some(arena_protocol::vote::VoteKind::Map) if !rest.is_empty() => {
            // Within the server's limit, cut on a character's boundary.
            let mut name = String::new();
            for c in rest.trim().chars() {
                if name.len() + c.len_utf8() > arena_protocol::map_transfer::MAX_MAP_NAME_BYTES {
                    break;
                }
                name.push(c);
            }
            Ok(VoteCall::Map(name))
        }
        Some(arena_protocol::vote::VoteKind::Mode) => arena_protocol::modes::Mode::parse(&rest)
            .map(VoteCall::Mode)
            .ok_or_else(|| format!("callvote mode: \"{rest}\" is no mode (ffa, tdm, duel)")),
        Some(arena_protocol::vote::VoteKind::Kick) if !rest.is_empty() => {
            let by_id = rest.strip_prefix('#').and_then(|n| n.parse::<u8>().ok()).map(arena_sim::PlayerId);
            let found = by_id
                .filter(|id| roster.names.contains_key(id))
                .or_else(|| roster.names.iter().find(|(_, name)| name.eq_ignore_ascii_case(&rest)).map(|(id, _)| *id));
            found.map(VoteCall::Kick).ok_or_else(|| format!("callvote kick: no player \"{rest}\""))
        }
        Some(arena_protocol::vote::VoteKind::Restart) => Ok(VoteCall::Restart),
        _ => Err(USAGE.into()),
    }
}

/// Our calls and ballots, to the server.
pub(crate) fn send_votes(
    mut actions: MessageReader<VoteAction>,
    client: Option<ResMut<RenetClient>>,
    mut tally: ResMut<MessageTally>,
    mut board: ResMut<VoteBoard>,
) {
    let Some(mut client) = client else {
        actions.clear();
        return;
    };
    for action in actions.read() {
        let message = match action {
            VoteAction::Call(call) => ToServer::CallVote(call.clone()),
            VoteAction::Ballot(yes) => {
                // The first answer is the one that counts: the keys may be pressed again.
                match board.shown.as_mut().filter(|v| v.status.outcome == VoteOutcome::Open) {
                    Some(vote) if vote.ours.is_none() => vote.ours = Some(*yes),
                    _ => continue,
                }
                ToServer::Vote { yes: *yes }
            }
        };
        send_to_server(&mut client, &mut tally, &message);
    }
}

/// The server's word on votes: kept for the view; ends and refusals logged.
pub(crate) fn receive_votes(
    mut messages: MessageReader<GameMessage>,
    roster: Res<Roster>,
    time: Res<Time<Real>>,
    mut board: ResMut<VoteBoard>,
    mut log: ResMut<ChatLog>,
) {
    let now_s = time.elapsed_secs_f64();
    for GameMessage(message) in messages.read() {
        match message {
            ToClient::Vote(status) => {
                // A server's map name is cleaned as a player's name is.
                let call = match &status.call {
                    VoteCall::Map(name) => VoteCall::Map(arena_protocol::names::clean_name(name)),
                    call => call.clone(),
                };
                let question = call.describe(|id| roster.name(id));
                let caller = roster.name(status.caller);
                let same = board.shown.as_ref().filter(|v| v.status.number == status.number);
                let mut ours = same.and_then(|v| v.ours);
                if roster.local_id == Some(status.caller) {
                    ours = Some(true);
                }
                let ends_at_s = match status.outcome {
                    VoteOutcome::Open => now_s + f64::from(status.left_ds) / 10.0,
                    _ => now_s,
                };
                if same.is_none() && status.outcome == VoteOutcome::Open {
                    log.say(format!("{caller} called a vote: {question}"), now_s);
                }
                match status.outcome {
                    VoteOutcome::Open => {}
                    VoteOutcome::Passed => {
                        board.passed += 1;
                        log.say(format!("Vote passed ({} yes, {} no): {question}", status.yes, status.no), now_s);
                    }
                    VoteOutcome::Failed => {
                        board.failed += 1;
                        log.say(format!("Vote failed ({} yes, {} no): {question}", status.yes, status.no), now_s);
                    }
                }
                board.shown = Some(ShownVote { status: status.clone(), question, caller, ends_at_s, ours });
            }
            ToClient::VoteRefused(why) => {
                board.refused += 1;
                log.say(format!("Vote: {}", why.explain()), now_s);
            }
            _ => {}
        }
    }
}
