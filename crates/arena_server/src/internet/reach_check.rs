//! Whether strangers can reach this server, asked of its first master
//! (Arena's extension to the dpmaster protocol, see `arena_master::reach`):
//! the master probes the server from a second socket the server never sent
//! to, and tells it the address it sees; the server also asks that second
//! socket who it is, and a different port means a router that gives every
//! destination a new port. Run after the port mapping settles, every
//! [`RECHECK`], and when the mapping changes. The master's answers come
//! through `master_messages.rs`. The check's outcome goes into the report,
//! and into what the server tells its masters (its router's kind, which
//! decides whether they introduce players to it: see `hole_punch.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use arena_master::reach::{self, Nat, Reach};
use bevy::prelude::*;

use super::hole_punch::Punches;
use super::master_list::Masters;
use crate::reach_report::{MapState, ReachHandle, Reachable};
use crate::socket::transport::ServerTransport;

/// How often the check is made again.
pub(crate) const RECHECK: Duration = Duration::from_secs(300);
/// After the master says it probed, how long the probe may take to come.
pub(crate) const PROBE_WAIT: Duration = Duration::from_millis(1000);
/// A master that says nothing this long does not speak the extension.
pub(crate) const NO_ANSWER: Duration = Duration::from_secs(3);
/// How often the check's state is looked at.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(100);
/// A check unanswered is tried again after this.
const RETRY: Duration = Duration::from_secs(60);
/// Requests are padded to this many bytes: a master answers no address
/// with more bytes than it sent (its probe and its word both count).
const CHECK_BYTES: usize = 200;
const WHOAMI_BYTES: usize = 120;

/// One check in progress, and when the last one ended.
#[derive(Resource, Debug, Default)]
pub(crate) struct ReachCheck {
    nonce: String,
    master: Option<SocketAddr>,
    started: Duration,
    /// The master's word: the server as seen, its probe socket's port, when.
    sent: Option<(SocketAddr, u16, Duration)>,
    /// Whether the probe came from a second address of the master's (its
    /// word named one other than the master's own).
    second_address: bool,
    /// Where the `whoami` went (the `youAre` comes from there).
    whoami_to: Option<SocketAddr>,
    probed: bool,
    you_are: Option<SocketAddr>,
    last_done: Option<Duration>,
    /// The mapping when the last check began (a change checks again).
    mapping_then: Option<MapState>,
    /// What was last told to the log.
    logged: Option<String>,
    /// `getinfo` answered to masters so far, and when that count last grew.
    answers: u64,
    answered_at: Option<Duration>,
}

impl ReachCheck {
    /// A master's message about the check in progress (`from` canonical):
    /// the probe came, the master's word on what it saw, or who the server
    /// is to the master's second socket. Returns the `whoami` to send, and
    /// where (the master's second socket), once the master's word came.
    pub(crate) fn hear(&mut self, from: SocketAddr, message: Reach, now: Duration) -> Option<(Vec<u8>, SocketAddr)> {
        let ours = |nonce: &str| !self.nonce.is_empty() && nonce == self.nonce;
        match message {
            // From the master's second socket, wherever it is: the nonce,
            // which only the master knows, is the proof (the guard lets it
            // through from any address, a few times per check).
            Reach::Probe { nonce } if ours(&nonce) => self.probed = true,
            Reach::Sent { nonce, seen, probe_port, probe_ip }
                if ours(&nonce) && self.master == Some(from) && self.sent.is_none() =>
            {
                self.sent = Some((seen, probe_port, now));
                let probe_ip = probe_ip.unwrap_or(from.ip());
                self.second_address = probe_ip != from.ip();
                let to = SocketAddr::new(probe_ip, probe_port);
                self.whoami_to = Some(to);
                let whoami = Reach::WhoAmI { nonce }.padded(WHOAMI_BYTES);
                return Some((whoami, to));
            }
            Reach::YouAre { nonce, seen } if ours(&nonce) && self.whoami_to == Some(from) => self.you_are = Some(seen),
            _ => {}
        }
        None
    }
}

/// Decides the check: starts one when due, and settles the one in
/// progress from what the master said.
pub(crate) fn check(
    mut state: ResMut<ReachCheck>,
    mut masters: ResMut<Masters>,
    mut transport: ResMut<ServerTransport>,
    punches: Res<Punches>,
    report: Res<ReachHandle>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    let current = report.get();
    // Only answers to a `getinfo` that echoed the heartbeat's nonce: one
    // forged from a master's address must not say "listed".
    let answers: u64 = masters.resolved().iter().map(|m| transport.master_confirmed(*m)).sum();
    if answers > state.answers {
        state.answers = answers;
        state.answered_at = Some(now);
    }
    let listed = state.answered_at.is_some_and(|t| now.saturating_sub(t) <= masters.listed_for());
    if listed != current.listed {
        report.update(|r| r.listed = listed);
    }
    if state.master.is_none() {
        let mapping_changed = state.mapping_then.as_ref().is_some_and(|m| *m != current.mapping);
        let due = match state.last_done {
            None => true,
            Some(done) => {
                now.saturating_sub(done) >= if current.reachable == Reachable::Unknown { RETRY } else { RECHECK }
            }
        };
        let settled = current.mapping != MapState::Asking;
        if let Some(&master) = masters.resolved().first()
            && settled
            && (due || mapping_changed)
        {
            *state = ReachCheck {
                nonce: reach::new_token(),
                master: Some(master),
                started: now,
                last_done: state.last_done,
                mapping_then: Some(current.mapping.clone()),
                logged: state.logged.take(),
                answers: state.answers,
                answered_at: state.answered_at,
                ..Default::default()
            };
            let request = Reach::Check { nonce: state.nonce.clone() }.padded(CHECK_BYTES);
            transport.expect_reach_nonce(Some(state.nonce.clone()));
            transport.send_datagram(&request, master);
        }
    } else {
        let outcome = if state.probed {
            Some((Reachable::Yes, Nat::Open))
        } else if let Some((seen, _, when)) = state.sent {
            let waited = now.saturating_sub(when);
            match state.you_are {
                _ if waited < PROBE_WAIT => None,
                Some(other) if other.port() != seen.port() => Some((Reachable::No, Nat::Symmetric)),
                Some(_) => Some((Reachable::No, Nat::Punchable)),
                // No answer from the second socket: most routers keep ports.
                None if waited >= PROBE_WAIT * 2 => Some((Reachable::No, Nat::Punchable)),
                None => None,
            }
        } else if now.saturating_sub(state.started) >= NO_ANSWER {
            Some((Reachable::Unknown, Nat::Unknown))
        } else {
            None
        };
        if let Some((reachable, nat)) = outcome {
            let seen = state.sent.map(|(seen, _, _)| seen);
            let one_address = !state.second_address;
            transport.expect_reach_nonce(None);
            report.update(|r| {
                r.reachable = reachable;
                r.nat = nat;
                r.one_address_check = one_address;
                if seen.is_some() {
                    r.seen_by_master = seen;
                }
            });
            state.master = None;
            state.last_done = Some(now);
            transport.set_master_pairs(master_pairs(&punches.key, nat, current.port));
            // The router's binding to the master is kept open unless a
            // mapping or a hand-forwarded port holds the door: a probe from
            // the master's own address proves less than it seems behind a
            // router that filters by address only (it lets in anything
            // from an address the server sent to).
            let held_open = matches!(current.mapping, MapState::Mapped { .. }) || !current.manual.is_empty();
            masters.keep_alive = !held_open;
            if nat != current.nat {
                masters.beat_soon();
            }
        }
    }
    let line = report.get().line();
    if state.logged.as_ref() != Some(&line) {
        info!("{line}");
        state.logged = Some(line);
    }
}

/// The pairs only masters' `getinfo` answers carry.
pub(crate) fn master_pairs(key: &str, nat: Nat, game_port: u16) -> Vec<(String, String)> {
    vec![
        (reach::INTRO_KEY.to_string(), key.to_string()),
        (reach::NAT_KEY.to_string(), nat.as_str().to_string()),
        (reach::GAME_PORT_KEY.to_string(), game_port.to_string()),
    ]
}
