//! Maps sent to the clients that lack them (Quake 3's downloads): a client
//! told of a map from a file it has not got asks for it (`WantMap`), and
//! the server sends the file in chunks over the reliable channel, paced to
//! [`UPLOAD_BYTES_PER_S`] (or the client's `rate`, if lower) and never more
//! than [`MAX_IN_FLIGHT_BYTES`] unacknowledged (renet resends what is not
//! acknowledged: a client that never acknowledges gets that much again
//! every resend, not the whole map); a client that has loaded the map says
//! so (`MapLoaded`), and its player is let into the world. Only a client
//! held out of the world for the map may ask; an address gets at most
//! [`MAX_COPIES_PER_ADDRESS`] copies of one map a session (reconnecting
//! gets no more); other asks are counted and dropped.

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
/// Copies of one map an address may ask for (a download lost to a crash, a
/// reconnect, a few players behind one router): more is a flood.
const MAX_COPIES_PER_ADDRESS: u8 = 8;
/// Map bytes sent and not yet acknowledged, at most.
pub(crate) const MAX_IN_FLIGHT_BYTES: usize = 16 * 1024;
/// Addresses whose copies are counted, at most (the oldest count goes).
const MAX_ADDRESSES: usize = 1024;

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<MapAsked>().init_resource::<MapUploads>();
}

/// The maps being sent, and what was sent.
#[derive(Resource, Debug, Default)]
pub struct MapUploads {
    sending: HashMap<ClientId, Upload>,
    copies: HashMap<(std::net::IpAddr, [u8; 32]), u8>,
    pub stats: UploadStats,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct UploadStats {
    /// Downloads begun and sent to their end.
    pub started: u64,
    pub finished: u64,
    /// Map bytes sent.
    pub bytes: u64,
    /// Asks dropped (a built-in map, a player not held for it, too many
    /// copies, one already going).
    pub refused: u64,
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
    mut commands: Commands,
) {
    let current = served.find(&identity.map);
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
                if uploads.copies.len() >= MAX_ADDRESSES && !uploads.copies.contains_key(&(addr.ip(), map.id.hash)) {
                    // Bounded: a flood of addresses forgets the counts (each still paced).
                    uploads.copies.clear();
                }
                let copies = uploads.copies.entry((addr.ip(), map.id.hash)).or_default();
                if *copies >= MAX_COPIES_PER_ADDRESS {
                    uploads.stats.refused += 1;
                    continue;
                }
                *copies += 1;
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
