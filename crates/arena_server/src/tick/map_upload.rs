//! Maps sent to the clients that lack them (Quake 3's downloads): a client
//! told of a map from a file it has not got asks for it (`WantMap`), and
//! the server sends the file in chunks over the reliable channel, paced to
//! [`UPLOAD_BYTES_PER_S`] (or the client's `rate`, if lower) and never more
//! than [`MAX_IN_FLIGHT_BYTES`] unacknowledged (renet resends what is not
//! acknowledged: a client that never acknowledges gets that much again
//! every resend, not the whole map); a client that has loaded the map says
//! so (`MapLoaded`), and its player is let into the world. Only a client
//! held out of the world for the map may ask; an address gets copies on a
//! budget that refills ([`COPY_BURST`] at once, then one every
//! [`COPY_REFILL_S`]), and an ask over it is answered `MapRefused` with
//! when to ask again (the ninth player behind one router waits seconds,
//! not forever: issue 60); other asks are counted and dropped.

use std::collections::HashMap;

use arena_protocol::ToClient;
use arena_protocol::map_transfer::MAP_CHUNK_BYTES;
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use super::life::let_in;
use crate::net::send;
use crate::socket::transport::ServerTransport;
use crate::vocabulary::{AwaitingMap, ClientPrefs, MapAsked, Roster, ServedMaps, ServerIdentity, ServerTick, Sim};

/// How fast a map goes to one client, bytes a second (a map of 256 KiB,
/// the largest, in two seconds).
pub(crate) const UPLOAD_BYTES_PER_S: f64 = 128.0 * 1024.0;
/// Copies of maps an address (an IPv4 address or an IPv6 /64) may have at
/// once (a download lost to a crash, a reconnect, a few players behind one
/// router)...
pub(crate) const COPY_BURST: f64 = 8.0;
/// ...and one more each this many seconds: at most 8 maps of the largest
/// size at once, then 64 KiB a second, to one address.
pub(crate) const COPY_REFILL_S: f64 = 4.0;
/// Map bytes sent and not yet acknowledged, at most.
pub(crate) const MAX_IN_FLIGHT_BYTES: usize = 16 * 1024;
/// Addresses whose budgets are kept, at most. Full: the budgets that have
/// refilled go (a full budget is the same as none), then the fullest, so a
/// flood of new addresses never gives a drained one its copies back.
const MAX_ADDRESSES: usize = 1024;

/// The copies each address may still have now.
#[derive(Debug, Default)]
pub(crate) struct CopyBudgets {
    /// Copies left, and when that was (seconds of the server's real time).
    left: HashMap<std::net::IpAddr, (f64, f64)>,
}

impl CopyBudgets {
    fn at(&self, key: std::net::IpAddr, now_s: f64) -> f64 {
        self.left
            .get(&key)
            .map_or(COPY_BURST, |(left, at)| (left + (now_s - at).max(0.0) / COPY_REFILL_S).min(COPY_BURST))
    }

    /// Takes a copy for `ip`, or says in how many seconds one is due.
    pub(crate) fn take(&mut self, ip: std::net::IpAddr, now_s: f64) -> Result<(), f64> {
        let key = arena_udp::limit_key(ip);
        let left = self.at(key, now_s);
        if left < 1.0 {
            return Err((1.0 - left) * COPY_REFILL_S);
        }
        if !self.left.contains_key(&key) && self.left.len() >= MAX_ADDRESSES {
            self.left.retain(|_, (l, at)| (*l + (now_s - *at).max(0.0) / COPY_REFILL_S) < COPY_BURST);
            if self.left.len() >= MAX_ADDRESSES {
                let fullest = self
                    .left
                    .iter()
                    .max_by(|a, b| {
                        (a.1.0 + (now_s - a.1.1) / COPY_REFILL_S).total_cmp(&(b.1.0 + (now_s - b.1.1) / COPY_REFILL_S))
                    })
                    .map(|(k, _)| *k);
                if let Some(k) = fullest {
                    self.left.remove(&k);
                }
            }
        }
        self.left.insert(key, (left - 1.0, now_s));
        Ok(())
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<MapAsked>().init_resource::<MapUploads>();
}

/// The maps being sent, and what was sent.
#[derive(Resource, Debug, Default)]
pub struct MapUploads {
    sending: HashMap<ClientId, Upload>,
    copies: CopyBudgets,
    /// Clients told to wait (`MapRefused`), until when (real seconds): their
    /// asks before it are counted and dropped, unanswered and unlogged.
    refused_until: HashMap<ClientId, f64>,
    pub stats: UploadStats,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct UploadStats {
    /// Downloads begun and sent to their end.
    pub started: u64,
    pub finished: u64,
    /// Map bytes sent.
    pub bytes: u64,
    /// Asks dropped (a built-in map, a player not held for it, one
    /// already going) or refused for now (over the address's budget).
    pub refused: u64,
    /// Of those, refused for now (told `MapRefused`).
    pub over_budget: u64,
    /// Clients that said they loaded the map played, and were let in.
    pub loaded: u64,
}

#[derive(Debug)]
struct Upload {
    hash: [u8; 32],
    offset: usize,
    /// Bytes it may send now.
    allowance: f64,
}

/// What clients asked for or said, this frame.
pub(crate) fn take_map_asks(
    mut asked: MessageReader<MapAsked>,
    (roster, served, identity, tick): (Res<Roster>, Res<ServedMaps>, Res<ServerIdentity>, Res<ServerTick>),
    mut uploads: ResMut<MapUploads>,
    players: Query<(Has<AwaitingMap>, Has<Sim>)>,
    transport: Res<ServerTransport>,
    (time, mut server): (Res<Time<Real>>, Option<ResMut<RenetServer>>),
    mut commands: Commands,
) {
    let current = served.find(&identity.map);
    let now_s = time.elapsed_secs_f64();
    if !uploads.refused_until.is_empty() {
        uploads.refused_until.retain(|_, until| *until > now_s);
    }
    for MapAsked { client, loaded } in asked.read() {
        let Some((_, entry)) = roster.by_client(*client) else { continue };
        let Ok((awaiting, plays)) = players.get(entry.entity) else { continue };
        match loaded {
            None => {
                let (Some(map), true, Some(addr)) =
                    (current.filter(|m| m.file), awaiting, transport.client_addr(*client))
                else {
                    uploads.stats.refused += 1;
                    continue;
                };
                if uploads.sending.contains_key(client) {
                    uploads.stats.refused += 1;
                    continue;
                }
                if uploads.refused_until.contains_key(client) {
                    // Told when to ask again: one answer and one log line a wait.
                    uploads.stats.refused += 1;
                    uploads.stats.over_budget += 1;
                    continue;
                }
                if let Err(wait_s) = uploads.copies.take(addr.ip(), now_s) {
                    uploads.stats.refused += 1;
                    uploads.stats.over_budget += 1;
                    let retry_in_s = wait_s.ceil().clamp(1.0, f64::from(u16::MAX)) as u16;
                    // A moment early, so the ask after the wait is not one of these.
                    uploads.refused_until.insert(*client, now_s + f64::from(retry_in_s) - 0.5);
                    info!(
                        "not sending the map {} to {} now: its address has had its copies lately (again in {retry_in_s} s)",
                        map.id.name, entry.name
                    );
                    if let Some(server) = server.as_deref_mut() {
                        send(server, *client, &ToClient::MapRefused { retry_in_s });
                    }
                    continue;
                }
                uploads.stats.started += 1;
                info!("sending the map {} ({} bytes) to {}", map.id.name, map.id.bytes, entry.name);
                let upload = Upload { hash: map.id.hash, offset: 0, allowance: MAP_CHUNK_BYTES as f64 };
                uploads.sending.insert(*client, upload);
            }
            Some(hash) => {
                if awaiting && current.is_some_and(|m| m.id.hash == *hash) {
                    uploads.stats.loaded += 1;
                    debug!("{} has the map: in", entry.name);
                    let_in(&mut commands, entry.entity, *tick, plays);
                }
            }
        }
    }
}

/// Each download on by what its pace allows this frame.
pub(crate) fn send_map_chunks(
    time: Res<Time<Real>>,
    (served, identity): (Res<ServedMaps>, Res<ServerIdentity>),
    mut uploads: ResMut<MapUploads>,
    server: Option<ResMut<RenetServer>>,
    (roster, prefs): (Res<Roster>, Query<&ClientPrefs>),
) {
    let Some(mut server) = server else { return };
    if uploads.sending.is_empty() {
        return;
    }
    let current = served.find(&identity.map);
    let dt = time.delta_secs_f64();
    let MapUploads { sending, stats, .. } = &mut *uploads;
    sending.retain(|client, upload| {
        let Some(map) = current.filter(|m| m.id.hash == upload.hash) else {
            // The map changed under it: the new one is asked for anew.
            return false;
        };
        let Some((_, entry)) = roster.by_client(*client) else { return false };
        let rate = prefs.get(entry.entity).map_or(0, |p| p.0.rate);
        let pace = if rate > 0 { UPLOAD_BYTES_PER_S.min(f64::from(rate)) } else { UPLOAD_BYTES_PER_S };
        // At most a quarter second's worth waits to be sent.
        upload.allowance = (upload.allowance + pace * dt).min(pace / 4.0 + MAP_CHUNK_BYTES as f64);
        while upload.offset < map.text.len() {
            let end = (upload.offset + MAP_CHUNK_BYTES).min(map.text.len());
            let len = end - upload.offset;
            let in_flight = arena_protocol::CHANNEL_MEMORY_BYTES
                .saturating_sub(server.channel_available_memory(*client, arena_protocol::channel::RELIABLE));
            if upload.allowance < len as f64 || in_flight + len > MAX_IN_FLIGHT_BYTES {
                break;
            }
            let bytes = map.text[upload.offset..end].to_vec();
            let tag = map.id.tag();
            send(&mut server, *client, &ToClient::MapData { tag, offset: upload.offset as u32, bytes });
            upload.allowance -= len as f64;
            upload.offset = end;
            stats.bytes += len as u64;
        }
        if upload.offset >= map.text.len() {
            stats.finished += 1;
            return false;
        }
        true
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> std::net::IpAddr {
        std::net::IpAddr::from([198, 51, 100, last])
    }

    #[test]
    fn copies_come_eight_at_once_then_one_every_few_seconds() {
        let mut budgets = CopyBudgets::default();
        for _ in 0..8 {
            assert_eq!(budgets.take(ip(1), 0.0), Ok(()));
        }
        let wait = budgets.take(ip(1), 0.0).expect_err("a ninth at once");
        assert!((wait - COPY_REFILL_S).abs() < 1e-9, "{wait}");
        assert!(budgets.take(ip(1), 2.0).is_err());
        assert_eq!(budgets.take(ip(1), COPY_REFILL_S), Ok(()), "one more once it refilled");
        assert_eq!(budgets.take(ip(2), 0.0), Ok(()), "another address has its own");
        // A flood of new addresses does not give the drained one its copies back.
        for i in 0..(MAX_ADDRESSES as u32 * 2) {
            let _ = budgets.take(std::net::IpAddr::V4(std::net::Ipv4Addr::from(0x0A00_0000u32 | i)), COPY_REFILL_S);
        }
        assert!(budgets.left.len() <= MAX_ADDRESSES);
        assert!(budgets.take(ip(1), COPY_REFILL_S).is_err(), "the drained address was forgotten");
    }
}
