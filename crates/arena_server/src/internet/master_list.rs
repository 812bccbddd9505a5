//! Being listed on internet masters (the dpmaster protocol, see the
//! `arena_master` crate): the masters' names looked up off the game's
//! thread, a heartbeat at start, whenever what a list shows changes (the
//! number of players, the map), every few minutes, and a farewell on a
//! clean stop so that each master drops the server at once.
//!
//! A master answers a heartbeat with `getinfo` and a challenge; the guard
//! lets a master's `getinfo` through (in full within a few seconds of a
//! heartbeat to it) and the socket answers it with the server's
//! `infoResponse` (see `queries.rs` for what it says, `socket/answers.rs`
//! for what masters alone are told). A master lists the server only once
//! that answer comes back from this address. The socket's side of all this
//! is `socket/master_traffic.rs` and, for the farewell, `socket/farewell.rs`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

use arena_master::wire;
use bevy::prelude::*;

use crate::socket::transport::ServerTransport;
use crate::vocabulary::{Roster, ServerIdentity};

/// Least time between two heartbeats: players coming and going in a burst
/// make one heartbeat, not one each.
pub(crate) const MIN_HEARTBEAT_GAP: Duration = Duration::from_secs(2);
/// How long a clean stop waits for the masters' `getinfo` to say goodbye.
pub(crate) const FAREWELL_WAIT: Duration = Duration::from_millis(1000);

/// A heartbeat that got no `getinfo` back is sent again after this, then
/// after twice as long, up to the heartbeat interval (a master that is
/// down, or a challenge lost on the way, does not cost 5 minutes listed).
pub(crate) const RETRY_UNANSWERED: Duration = Duration::from_secs(5);
/// A lookup that found no master is tried again after this.
pub(crate) const RETRY_LOOKUP: Duration = Duration::from_secs(30);

/// One master's heartbeats.
#[derive(Debug, Clone, Copy)]
struct Beat {
    last: Duration,
    /// Its `getinfo` answered (the transport's count) when it was sent.
    answers_then: u64,
    /// How long to wait for that `getinfo` before sending again.
    retry_after: Duration,
    /// Heartbeats sent again in a row, each unanswered.
    unanswered: u32,
    /// Whether the log was told this master does not answer.
    warned: bool,
}

/// Heartbeats re-sent unanswered (after 5, 10 and 20 s) before the log
/// warns that a master does not answer: a lost datagram or two is normal,
/// 35 s of silence is not.
const UNANSWERED_BEFORE_WARNING: u32 = 3;

/// The masters this server is listed on.
#[derive(Resource, Debug)]
pub(crate) struct Masters {
    /// As given: `host` or `host:port`.
    names: Vec<String>,
    /// Their addresses, once looked up.
    resolved: Vec<SocketAddr>,
    /// A lookup in flight (a `Mutex` only because a resource must be
    /// `Sync`; one system reads it).
    lookup: Option<Mutex<Receiver<Vec<SocketAddr>>>>,
    last_lookup: Option<Duration>,
    /// Whether the last lookup found none (then it is tried again soon).
    lookup_failed: bool,
    beats: HashMap<SocketAddr, Beat>,
    /// What the list showed at the last heartbeat: players, most players, map.
    shown: Option<(usize, usize, String)>,
    interval: Duration,
    /// The families the socket reaches: IPv4, IPv6.
    families: (bool, bool),
    /// Heartbeats every [`KEEP_ALIVE`] (strangers cannot reach the server:
    /// its router's binding to each master must stay open for introductions).
    pub(crate) keep_alive: bool,
    /// A heartbeat to each master at once (what they should know changed).
    urgent: bool,
}

/// The heartbeat interval of a server strangers cannot reach: home routers
/// forget a UDP binding after 30 s or more of silence.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(20);

impl Masters {
    /// The masters' addresses, once looked up.
    pub(crate) fn resolved(&self) -> &[SocketAddr] {
        &self.resolved
    }

    /// How long after a master's last `getinfo` the server counts itself
    /// listed: two heartbeat intervals and the retries' slack (a master
    /// asks once per heartbeat; silence for that long means it dropped the
    /// server, or cannot reach it).
    pub(crate) fn listed_for(&self) -> Duration {
        let interval = if self.keep_alive { self.interval.min(KEEP_ALIVE) } else { self.interval };
        interval * 2 + RETRY_UNANSWERED * 6
    }

    /// A heartbeat to each master at once: what they should know of the
    /// server's router has changed (introductions depend on it).
    pub(crate) fn beat_soon(&mut self) {
        self.urgent = true;
    }
}

impl Masters {
    /// `local` is the bound address: `[::]` reaches both families, another
    /// IPv6 address only IPv6, an IPv4 one only IPv4.
    pub(crate) fn new(names: Vec<String>, interval_s: u32, local: SocketAddr) -> Self {
        let families = match local {
            SocketAddr::V4(_) => (true, false),
            SocketAddr::V6(v6) => (v6.ip().is_unspecified(), true),
        };
        Self {
            names,
            resolved: Vec::new(),
            lookup: None,
            last_lookup: None,
            lookup_failed: false,
            beats: HashMap::new(),
            shown: None,
            interval: Duration::from_secs(u64::from(interval_s.max(1))),
            families,
            keep_alive: false,
            urgent: false,
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, (look_up_masters, send_heartbeats).chain())
        .add_systems(Last, say_farewell.after(crate::socket::transport::disconnect_on_exit));
}

/// Looks the masters up on a thread of its own at start and every
/// heartbeat interval (names move), and hands the result to the guard. A
/// lookup that finds none keeps the addresses known (a passing DNS failure
/// must not unlist the server) and is tried again soon.
fn look_up_masters(mut masters: ResMut<Masters>, mut transport: ResMut<ServerTransport>, time: Res<Time<Real>>) {
    let now = time.elapsed();
    if let Some(lookup) = &masters.lookup {
        let received = match lookup.lock() {
            Ok(receiver) => receiver.try_recv(),
            Err(_) => Err(TryRecvError::Disconnected),
        };
        match received {
            Ok(resolved) => {
                masters.lookup = None;
                masters.lookup_failed = resolved.is_empty();
                if resolved.is_empty() {
                    warn!(
                        "no master could be found at {} (retrying in {} s){}",
                        masters.names.join(", "),
                        RETRY_LOOKUP.as_secs(),
                        if masters.resolved.is_empty() {
                            ": not listed on the internet"
                        } else {
                            "; keeping the last addresses"
                        }
                    );
                } else if resolved != masters.resolved {
                    let list: Vec<String> = resolved.iter().map(SocketAddr::to_string).collect();
                    info!("listing this server on the master(s) at {}", list.join(", "));
                    transport.set_masters(resolved.clone());
                    masters.beats.retain(|addr, _| resolved.contains(addr));
                    masters.resolved = resolved;
                }
            }
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => masters.lookup = None,
        }
        return;
    }
    let wait = if masters.lookup_failed { RETRY_LOOKUP } else { masters.interval };
    let due = masters.last_lookup.is_none_or(|t| now.saturating_sub(t) >= wait);
    if masters.names.is_empty() || !due {
        return;
    }
    masters.last_lookup = Some(now);
    let (names, (v4, v6)) = (masters.names.clone(), masters.families);
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("arena-master-lookup".into()).spawn(move || {
        // A master on both families is told from both, so that players of
        // either family find this server.
        let mut all: Vec<SocketAddr> = names
            .iter()
            .flat_map(|n| arena_udp::resolve(n, wire::DEFAULT_PORT, v6))
            .filter(|a| v4 || a.is_ipv6())
            .collect();
        all.sort();
        all.dedup();
        let _ = tx.send(all);
    });
    match spawned {
        Ok(_) => masters.lookup = Some(Mutex::new(rx)),
        Err(e) => warn!("cannot look the masters up: {e}"),
    }
}

/// A heartbeat to each master: at start, when what a list shows changes
/// (at most one per [`MIN_HEARTBEAT_GAP`]), every interval, and again
/// after [`RETRY_UNANSWERED`] (doubling) while its `getinfo` does not come.
fn send_heartbeats(
    mut masters: ResMut<Masters>,
    mut transport: ResMut<ServerTransport>,
    roster: Res<Roster>,
    identity: Res<ServerIdentity>,
    time: Res<Time<Real>>,
) {
    if masters.resolved.is_empty() {
        return;
    }
    let now = time.elapsed();
    let shown = (roster.players.len(), identity.max_players, identity.map.clone());
    let changed = masters.shown.as_ref() != Some(&shown);
    let urgent = std::mem::take(&mut masters.urgent);
    let interval = if masters.keep_alive { masters.interval.min(KEEP_ALIVE) } else { masters.interval };
    let mut sent = false;
    for master in masters.resolved.clone() {
        let answers = transport.master_answers(master);
        if let Some(beat) = masters.beats.get_mut(&master)
            && beat.warned
            && answers != beat.answers_then
        {
            beat.warned = false;
            info!("the master at {master} answers now: this server is listed there");
        }
        let beat = masters.beats.get(&master).copied();
        let (due, retry_after) = match beat {
            None => (true, RETRY_UNANSWERED),
            Some(beat) => {
                let since = now.saturating_sub(beat.last);
                let unanswered = answers == beat.answers_then;
                if unanswered && since >= beat.retry_after {
                    (true, (beat.retry_after * 2).min(interval))
                } else {
                    (urgent || since >= interval || (changed && since >= MIN_HEARTBEAT_GAP), RETRY_UNANSWERED)
                }
            }
        };
        if due {
            let silent = beat.filter(|beat| answers == beat.answers_then);
            let unanswered = silent.map_or(0, |beat| beat.unanswered.saturating_add(1));
            let mut warned = silent.is_some_and(|beat| beat.warned);
            if unanswered >= UNANSWERED_BEFORE_WARNING && !warned {
                warned = true;
                warn!(
                    "the master at {master} has not answered {unanswered} heartbeats: this server is not listed \
                     there (is the master running, and can its datagrams reach this server's UDP port?); still \
                     trying, every {} s at most",
                    interval.as_secs()
                );
            }
            transport.send_heartbeat(master);
            masters.beats.insert(master, Beat { last: now, answers_then: answers, retry_after, unanswered, warned });
            sent = true;
        }
    }
    if sent {
        masters.shown = Some(shown);
    }
}

/// On a clean stop (after the clients were told): the farewell.
fn say_farewell(exit: MessageReader<AppExit>, masters: Res<Masters>, mut transport: ResMut<ServerTransport>) {
    if exit.is_empty() || masters.resolved.is_empty() {
        return;
    }
    let told = transport.farewell(&masters.resolved, FAREWELL_WAIT);
    info!("told {told} of {} masters that this server is leaving", masters.resolved.len());
}
