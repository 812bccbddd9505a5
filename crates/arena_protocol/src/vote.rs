//! Votes' vocabulary: what a player may call a vote on (Quake 3's
//! `callvote`), how a vote stands, why a call or a ballot is refused, and
//! the rule that decides one. The server holds the vote; clients draw it
//! and answer with two keys.

use serde::{Deserialize, Serialize};

use crate::map_transfer::MAX_MAP_NAME_BYTES;
use crate::modes::Mode;
use arena_sim::PlayerId;

/// How long a vote stays open, seconds.
pub const VOTE_SECONDS: u16 = 20;
/// How long a player waits between two calls, seconds.
pub const CALL_INTERVAL_S: u16 = 60;

/// What a vote may be called on: the server can refuse each kind
/// (`--vote-kinds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum VoteKind {
    Map,
    Mode,
    Kick,
    Restart,
}

impl VoteKind {
    pub const ALL: [VoteKind; 4] = [VoteKind::Map, VoteKind::Mode, VoteKind::Kick, VoteKind::Restart];

    /// Its name in `callvote` and `--vote-kinds`.
    pub fn name(self) -> &'static str {
        match self {
            VoteKind::Map => "map",
            VoteKind::Mode => "mode",
            VoteKind::Kick => "kick",
            VoteKind::Restart => "restart",
        }
    }

    pub fn parse(text: &str) -> Option<VoteKind> {
        VoteKind::ALL.into_iter().find(|k| text.trim().eq_ignore_ascii_case(k.name()))
    }

    /// A `--vote-kinds` list: kinds separated by commas, or `none` (or
    /// nothing) for no votes at all.
    pub fn parse_list(text: &str) -> Result<Vec<VoteKind>, String> {
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("none") {
            return Ok(Vec::new());
        }
        let mut kinds = Vec::new();
        for word in text.split(',') {
            let kind = VoteKind::parse(word).ok_or_else(|| {
                let names: Vec<&str> = VoteKind::ALL.iter().map(|k| k.name()).collect();
                format!("no vote kind \"{}\" (kinds: {}, or none)", word.trim(), names.join(", "))
            })?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        Ok(kinds)
    }
}

/// A vote's question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoteCall {
    /// A new match, now, on this map.
    Map(String),
    /// A new match, now, in this mode.
    Mode(Mode),
    /// This player out of the game.
    Kick(PlayerId),
    /// A new match, now, on the same map.
    Restart,
}

impl VoteCall {
    pub fn kind(&self) -> VoteKind {
        match self {
            VoteCall::Map(_) => VoteKind::Map,
            VoteCall::Mode(_) => VoteKind::Mode,
            VoteCall::Kick(_) => VoteKind::Kick,
            VoteCall::Restart => VoteKind::Restart,
        }
    }

    /// Checks what the wire gave (a map name's length).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            VoteCall::Map(name) if name.len() > MAX_MAP_NAME_BYTES => {
                Err(format!("a map name of {} bytes (at most {MAX_MAP_NAME_BYTES})", name.len()))
            }
            _ => Ok(()),
        }
    }

    /// In words, with `name_of` naming players: "change the map to Spire".
    pub fn describe(&self, name_of: impl Fn(PlayerId) -> String) -> String {
        match self {
            VoteCall::Map(map) => format!("change the map to {map}"),
            VoteCall::Mode(mode) => format!("play {}", mode.label()),
            VoteCall::Kick(id) => format!("kick {}", name_of(*id)),
            VoteCall::Restart => "restart the match".into(),
        }
    }
}

/// How a vote ended, or that it is still open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoteOutcome {
    Open,
    Passed,
    Failed,
}

/// A vote as everyone sees it: sent when it opens, on every ballot, and
/// when it ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteStatus {
    /// Counts the server's votes: a status of another number is another vote.
    pub number: u16,
    pub caller: PlayerId,
    pub call: VoteCall,
    pub yes: u8,
    pub no: u8,
    /// Players who may vote (not watching, not bots) now.
    pub voters: u8,
    /// Tenths of a second until it closes (at the status' sending).
    pub left_ds: u16,
    pub outcome: VoteOutcome,
}

impl VoteStatus {
    /// Yes votes it takes to pass.
    pub fn needed(&self) -> u8 {
        needed(self.voters)
    }
}

/// Yes votes that pass a vote among `voters`: a majority of them.
pub fn needed(voters: u8) -> u8 {
    voters / 2 + 1
}

/// The rule: passed once the yes votes are a majority of the voters;
/// failed once they can no longer be (too many no votes) or `closed` (time
/// is up); else still open.
pub fn decide(yes: u8, no: u8, voters: u8, closed: bool) -> VoteOutcome {
    let needed = needed(voters);
    if yes >= needed {
        VoteOutcome::Passed
    } else if closed || voters.saturating_sub(no) < needed {
        VoteOutcome::Failed
    } else {
        VoteOutcome::Open
    }
}

/// Why a call or a ballot was not taken (to its sender alone).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoteRefusal {
    /// The server takes no votes of this kind.
    Disabled(VoteKind),
    /// This player called a vote less than a minute ago: seconds to wait.
    TooSoon(u16),
    /// Another vote is open.
    Busy,
    /// Spectators neither call nor vote.
    Spectator,
    /// No such map on the server.
    NoMap,
    /// No such player (or a kick of oneself).
    NoPlayer,
    /// What it asks for is already so (that mode is the one played).
    AlreadySo,
    /// A shooting range has no matches.
    Range,
    /// A ballot with no vote open.
    NoVote,
    /// A second ballot in the same vote.
    Voted,
    /// A listen server's host cannot be voted out of their own game.
    Host,
    /// Someone at the same address (an IPv4 address or an IPv6 /64) has
    /// voted already: one ballot an address.
    AddressVoted,
}

impl VoteRefusal {
    pub fn explain(&self) -> String {
        match self {
            VoteRefusal::Disabled(kind) => format!("this server takes no {} votes", kind.name()),
            VoteRefusal::TooSoon(s) => format!("one vote a minute: wait {s} s"),
            VoteRefusal::Busy => "a vote is already open".into(),
            VoteRefusal::Spectator => "spectators do not vote".into(),
            VoteRefusal::NoMap => "no such map on this server".into(),
            VoteRefusal::NoPlayer => "no such player".into(),
            VoteRefusal::AlreadySo => "that is already so".into(),
            VoteRefusal::Range => "a shooting range plays no matches".into(),
            VoteRefusal::NoVote => "no vote is open".into(),
            VoteRefusal::Voted => "you have voted".into(),
            VoteRefusal::Host => "the host cannot be voted out of their own game".into(),
            VoteRefusal::AddressVoted => "someone at your address has voted: one ballot an address".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_majority_of_the_voters_passes_and_a_blocking_minority_fails_early() {
        // 4 voters: 3 needed.
        assert_eq!(decide(2, 0, 4, false), VoteOutcome::Open);
        assert_eq!(decide(3, 1, 4, false), VoteOutcome::Passed);
        // Two no votes: three yes can no longer come.
        assert_eq!(decide(1, 2, 4, false), VoteOutcome::Failed);
        assert_eq!(decide(2, 1, 4, true), VoteOutcome::Failed);
        // Alone: the caller's own vote carries it.
        assert_eq!(decide(1, 0, 1, false), VoteOutcome::Passed);
        // 3 voters: 2 needed; half is not a majority of 2.
        assert_eq!(decide(1, 1, 2, false), VoteOutcome::Failed);
        assert_eq!(needed(3), 2);
        assert_eq!(needed(0), 1);
        assert_eq!(decide(0, 0, 0, false), VoteOutcome::Failed);
    }

    #[test]
    fn vote_kinds_parse_from_a_list() {
        assert_eq!(VoteKind::parse_list("map, Kick").unwrap(), vec![VoteKind::Map, VoteKind::Kick]);
        assert_eq!(VoteKind::parse_list("none").unwrap(), vec![]);
        assert!(VoteKind::parse_list("map,nuke").unwrap_err().contains("nuke"));
    }
}
