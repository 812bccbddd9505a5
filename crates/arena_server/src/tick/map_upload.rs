//! Maps sent to the clients that lack them (Quake 3's downloads): a client
//! told of a map from a file it has not got asks for it (`WantMap`), and
//! the server sends the file in chunks over the reliable channel, paced to
//! [`UPLOAD_BYTES_PER_S`] (or the client's `rate`, if lower); a client that
//! has loaded the map says so (`MapLoaded`), and its player is let into
//! the world. A client gets at most [`MAX_COPIES`] copies of one map; asks
//! beyond (and asks for a built-in map) are counted and dropped.

use std::collections::HashMap;

use arena_protocol::ToClient;
use arena_protocol::map_transfer::MAP_CHUNK_BYTES;
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use super::life::let_in;
use crate::net::send;
use crate::vocabulary::{AwaitingMap, ClientPrefs, MapAsked, Roster, ServedMaps, ServerIdentity, ServerTick, Sim};

/// How fast a map goes to one client, bytes a second (a map of 256 KiB,
/// the largest, in two seconds).
pub(crate) const UPLOAD_BYTES_PER_S: f64 = 128.0 * 1024.0;
/// Copies of one map a client may ask for (a download lost to a crash, a
/// reconnect): more is a flood.
const MAX_COPIES: u8 = 3;

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<MapAsked>().init_resource::<MapUploads>();
}

/// The maps being sent, and what was sent.
#[derive(Resource, Debug, Default)]
pub struct MapUploads {
    sending: HashMap<ClientId, Upload>,
    copies: HashMap<(ClientId, [u8; 32]), u8>,
    pub stats: UploadStats,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct UploadStats {
    /// Downloads begun and sent to their end.
    pub started: u64,
    pub finished: u64,
    /// Map bytes sent.
    pub bytes: u64,
    /// Asks dropped (a built-in map, too many copies, one already going).
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
    mut commands: Commands,
) {
    let current = served.find(&identity.map);
    let mut any = false;
    for MapAsked { client, loaded } in asked.read() {
        any = true;
        let Some((_, entry)) = roster.by_client(*client) else { continue };
        match loaded {
            None => {
                let Some(map) = current.filter(|m| m.file) else {
                    uploads.stats.refused += 1;
                    continue;
                };
                let copies = uploads.copies.entry((*client, map.id.hash)).or_default();
                if *copies >= MAX_COPIES {
                    uploads.stats.refused += 1;
                    continue;
                }
                *copies += 1;
                if uploads.sending.contains_key(client) {
                    uploads.stats.refused += 1;
                    continue;
                }
                uploads.stats.started += 1;
                info!("sending the map {} ({} bytes) to {}", map.id.name, map.id.bytes, entry.name);
                let upload = Upload { hash: map.id.hash, offset: 0, allowance: MAP_CHUNK_BYTES as f64 };
                uploads.sending.insert(*client, upload);
            }
            Some(hash) => {
                let Ok((awaiting, plays)) = players.get(entry.entity) else { continue };
                if awaiting && current.is_some_and(|m| m.id.hash == *hash) {
                    uploads.stats.loaded += 1;
                    debug!("{} has the map: in", entry.name);
                    let_in(&mut commands, entry.entity, *tick, plays);
                }
            }
        }
    }
    if any {
        // What is kept of clients that left goes (the table holds players only).
        uploads.copies.retain(|(client, _), _| roster.by_client(*client).is_some());
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
            if upload.allowance < len as f64 {
                break;
            }
            let bytes = map.text[upload.offset..end].to_vec();
            send(&mut server, *client, &ToClient::MapData { offset: upload.offset as u32, bytes });
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
