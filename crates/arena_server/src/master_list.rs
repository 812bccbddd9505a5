//! Being listed on internet masters (the dpmaster protocol, see the
//! `arena_master` crate): the masters' names looked up off the game's
//! thread, a heartbeat at start, whenever what a list shows changes (the
//! number of players, the map), every few minutes, and a farewell on a
//! clean stop so that each master drops the server at once.
//!
//! A master answers a heartbeat with `getinfo` and a fresh challenge; the
//! guard lets a master's `getinfo` through and the transport answers it with
//! the server's `infoResponse` (see `queries.rs` for what it says). A master
//! lists the server only once that answer comes back from this address.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

use arena_master::wire;
use bevy::prelude::*;

use crate::transport::ServerTransport;
use crate::vocabulary::{Roster, ServerIdentity};

/// Least time between two heartbeats: players coming and going in a burst
/// make one heartbeat, not one each.
pub const MIN_HEARTBEAT_GAP: Duration = Duration::from_secs(2);
/// How long a clean stop waits for the masters' `getinfo` to say goodbye.
pub const FAREWELL_WAIT: Duration = Duration::from_millis(1000);

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
    last_heartbeat: Option<Duration>,
    /// What the list showed at the last heartbeat: players, most players, map.
    shown: Option<(usize, usize, String)>,
    interval: Duration,
    /// Whether the socket takes IPv6 (else only IPv4 masters are told).
    ipv6: bool,
}

impl Masters {
    pub(crate) fn new(names: Vec<String>, interval_s: u32, ipv6: bool) -> Self {
        Self {
            names,
            resolved: Vec::new(),
            lookup: None,
            last_lookup: None,
            last_heartbeat: None,
            shown: None,
            interval: Duration::from_secs(u64::from(interval_s.max(1))),
            ipv6,
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, (look_up_masters, send_heartbeats).chain())
        .add_systems(Last, say_farewell.after(crate::transport::disconnect_on_exit));
}

/// Looks the masters up on a thread of its own at start and every
/// heartbeat interval (names move), and hands the result to the guard.
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
                if resolved != masters.resolved {
                    if resolved.is_empty() {
                        warn!("no master could be found: {} (not listed on the internet)", masters.names.join(", "));
                    } else {
                        let list: Vec<String> = resolved.iter().map(SocketAddr::to_string).collect();
                        info!("listing this server on the master(s) at {}", list.join(", "));
                    }
                    transport.set_masters(resolved.clone());
                    masters.resolved = resolved;
                    // New masters hear from us at once.
                    masters.last_heartbeat = None;
                }
            }
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => masters.lookup = None,
        }
        return;
    }
    let due = masters.last_lookup.is_none_or(|t| now.saturating_sub(t) >= masters.interval);
    if masters.names.is_empty() || !due {
        return;
    }
    masters.last_lookup = Some(now);
    let (names, ipv6) = (masters.names.clone(), masters.ipv6);
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("arena-master-lookup".into()).spawn(move || {
        // A master on both families is told from both, so that players of
        // either family find this server.
        let mut all: Vec<SocketAddr> =
            names.iter().flat_map(|n| arena_master::net::resolve(n, wire::DEFAULT_PORT, ipv6)).collect();
        all.dedup();
        let _ = tx.send(all);
    });
    match spawned {
        Ok(_) => masters.lookup = Some(Mutex::new(rx)),
        Err(e) => warn!("cannot look the masters up: {e}"),
    }
}

/// A heartbeat to every master: at start, when what a list shows changes
/// (at most one per [`MIN_HEARTBEAT_GAP`]), and every interval.
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
    let since = masters.last_heartbeat.map(|t| now.saturating_sub(t));
    let due = match since {
        None => true,
        Some(since) => {
            since >= masters.interval || (masters.shown.as_ref() != Some(&shown) && since >= MIN_HEARTBEAT_GAP)
        }
    };
    if !due {
        return;
    }
    let heartbeat = wire::heartbeat();
    for master in masters.resolved.clone() {
        transport.send_connectionless(&heartbeat, master);
    }
    masters.last_heartbeat = Some(now);
    masters.shown = Some(shown);
}

/// On a clean stop (after the clients were told): the farewell.
fn say_farewell(exit: MessageReader<AppExit>, masters: Res<Masters>, mut transport: ResMut<ServerTransport>) {
    if exit.is_empty() || masters.resolved.is_empty() {
        return;
    }
    let told = transport.farewell(&masters.resolved, FAREWELL_WAIT);
    info!("told {told} of {} masters that this server is leaving", masters.resolved.len());
}
