//! Chat, client side: what the player says goes to the server (which
//! cleans, limits and passes it on: `arena_server`'s `tick/chat.rs`); what
//! the server passed on, with the speaker's name, and its refusals of our
//! own lines, are kept in a bounded log for the view to show.

use std::collections::{BTreeMap, VecDeque};

use arena_protocol::chat::clean_chat;
use arena_protocol::modes::Side;
use arena_protocol::{ToClient, ToServer};
use arena_sim::PlayerId;
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::vocabulary::{GameMessage, MessageTally, Roster, SessionState, send_to_server};

/// Lines the log keeps, at most (the oldest go first).
pub const CHAT_LOG_LINES: usize = 64;

pub(crate) fn plugin(app: &mut App) {
    // A fresh log for each connection.
    app.init_session_resource::<ChatLog>().add_message::<SayChat>();
}

/// The player says `text` (to the team with `team`): the view, the console
/// and `arena bots --say` write it.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
pub struct SayChat {
    pub text: String,
    pub team: bool,
}

/// One line of the log: a player's line, or the server's word on ours.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatLine {
    /// The speaker's name (cleaned by the server's name rules); `None`: the
    /// server's word to us (a refusal).
    pub from: Option<String>,
    pub text: String,
    pub team: bool,
    /// The speaker's side when it spoke (its team's colour; free for the
    /// server's word).
    pub side: Side,
    /// Real time it came, seconds (the app's clock): lines fade by it.
    pub at_s: f64,
}

/// The chat lines that came this connection, newest last, and counts.
#[derive(Resource, Debug, Default)]
pub struct ChatLog {
    pub lines: VecDeque<ChatLine>,
    /// Lines of players received (shown or not), and refusals of ours.
    pub received: u64,
    pub refused: u64,
    /// Players this player muted, with the name they had then (an id is
    /// given to someone else once its player leaves: the mute is not), and
    /// their lines not shown.
    muted: BTreeMap<PlayerId, String>,
    pub muted_lines: u64,
}

impl ChatLog {
    /// Mutes (or unmutes) player `id`, called `name` now.
    pub fn set_muted(&mut self, id: PlayerId, name: &str, muted: bool) {
        if muted {
            self.muted.insert(id, name.to_owned());
        } else {
            self.muted.remove(&id);
        }
    }

    /// Whether `id`, called `name`, is muted.
    pub fn is_muted(&self, id: PlayerId, name: &str) -> bool {
        self.muted.get(&id).is_some_and(|n| n == name)
    }

    /// The server's (or the game's) own word, as a line of the log.
    pub(crate) fn say(&mut self, text: String, at_s: f64) {
        self.push(ChatLine { from: None, text, team: false, side: Side::Free, at_s });
    }

    fn push(&mut self, line: ChatLine) {
        if self.lines.len() >= CHAT_LOG_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
}

/// Sends what the player said (cleaned here too, so that nothing the server
/// would drop travels).
pub(crate) fn send_chat(
    mut said: MessageReader<SayChat>,
    client: Option<ResMut<RenetClient>>,
    mut tally: ResMut<MessageTally>,
) {
    let Some(mut client) = client else {
        said.clear();
        return;
    };
    for SayChat { text, team } in said.read() {
        let text = clean_chat(text);
        if text.is_empty() {
            continue;
        }
        send_to_server(&mut client, &mut tally, &ToServer::Chat { text, team: *team });
    }
}

/// Keeps the lines the server passed on, and its refusals of ours. The text
/// is cleaned again: a server may be hostile too.
pub(crate) fn receive_chat(
    mut messages: MessageReader<GameMessage>,
    roster: Res<Roster>,
    time: Res<Time<Real>>,
    mut log: ResMut<ChatLog>,
) {
    let at_s = time.elapsed_secs_f64();
    for GameMessage(message) in messages.read() {
        match message {
            ToClient::Chat { from, text, team } => {
                let text = clean_chat(text);
                if text.is_empty() {
                    continue;
                }
                log.received = log.received.saturating_add(1);
                let name = roster.name(*from);
                if log.is_muted(*from, &name) {
                    log.muted_lines = log.muted_lines.saturating_add(1);
                    continue;
                }
                log.push(ChatLine { from: Some(name), text, team: *team, side: roster.side(*from), at_s });
            }
            ToClient::Notice { text } => {
                let text = clean_chat(text);
                if !text.is_empty() {
                    log.push(ChatLine { from: None, text, team: false, side: Side::Free, at_s });
                }
            }
            ToClient::ChatRefused(why) => {
                log.refused = log.refused.saturating_add(1);
                let text = why.explain().to_string();
                log.push(ChatLine { from: None, text, team: false, side: Side::Free, at_s });
            }
            _ => {}
        }
    }
}
