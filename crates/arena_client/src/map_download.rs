//! The server's map, found or fetched: a map the server names (by name,
//! hash and size) is built in, or in the cache (`<cache>/<hash>.ron`), or
//! asked for and received in pieces (`arena_protocol::map_transfer`); a
//! received map must match its hash and pass `arena map check`'s checks
//! before it is cached and loaded. Anything else (over the cap, damaged,
//! unplayable, a built-in map's name with other contents) ends the
//! connection with the reason, never loaded. Once the map is in, the server
//! is told, and lets our player into the world. The cache keeps at most
//! [`MAX_CACHED_MAPS`] maps (the least recently used go).

use std::path::PathBuf;
use std::sync::Arc;

use arena_protocol::map_transfer::{MapDownload, MapId};
use arena_protocol::names::clean_name;
use arena_protocol::{ToClient, ToServer};
use arena_sim::{ArenaWorld, MapDef};
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::connection::end_connection;
use crate::vocabulary::{ClientWorld, GameMessage, MapNeeded, MessageTally, Roster, Session, send_to_server};

/// Maps the cache keeps, at most: [`MAX_CACHED_MAPS`] of 256 KiB at most is
/// 8 MiB on disk, whatever servers send.
pub(crate) const MAX_CACHED_MAPS: usize = 32;
/// A download that gets no piece for this long has stopped, seconds.
pub(crate) const STALLED_S: f64 = 15.0;
/// A wait the server asks for (`MapRefused`) is taken within these bounds,
/// seconds: a hostile server can neither spin us nor park us for hours.
const RETRY_BOUNDS_S: (f64, f64) = (1.0, 60.0);
/// Waiting on the server's word for this long in all, the download is given
/// up with its reason, seconds.
const MAX_WAITING_S: f64 = 180.0;
/// Maps kept in memory without a cache directory.
const KEPT_IN_MEMORY: usize = 2;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<MapCache>()
        .init_resource::<MapFetch>()
        .add_message::<MapNeeded>()
        // A download does not outlive its connection (the map loaded does).
        .add_systems(OnEnter(Session::Connecting), |mut fetch: ResMut<MapFetch>| fetch.download = None);
}

/// Where maps received from servers are kept (the view sets it under the
/// configuration directory; none: the last [`KEPT_IN_MEMORY`] received are
/// kept in memory, for a rotation back to them).
#[derive(Resource, Debug, Clone, Default)]
pub struct MapCache {
    pub dir: Option<PathBuf>,
}

impl MapCache {
    fn path(&self, id: &MapId) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{}.ron", id.hex())))
    }

    /// The cached file of `id`, if it is there whole.
    fn read(&self, id: &MapId) -> Option<Vec<u8>> {
        use std::io::Read;
        let mut text = Vec::new();
        let cap = arena_protocol::map_transfer::MAX_MAP_BYTES as u64 + 1;
        let path = self.path(id)?;
        std::fs::File::open(&path).ok()?.take(cap).read_to_end(&mut text).ok()?;
        if !id.matches(&text) {
            return None;
        }
        // Used now: the last to go when the cache is full.
        let _ = std::fs::File::options()
            .append(true)
            .open(&path)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        Some(text)
    }

    /// Takes the least recently used maps out until `keep` are left.
    fn trim(&self, keep: usize) {
        let Some(dir) = &self.dir else { return };
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut maps: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| is_cached_map(p))
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        if maps.len() <= keep {
            return;
        }
        maps.sort();
        for (_, path) in &maps[..maps.len() - keep] {
            let _ = std::fs::remove_file(path);
        }
    }

    fn write(&self, id: &MapId, text: &[u8]) {
        let Some(path) = self.path(id) else { return };
        self.trim(MAX_CACHED_MAPS.saturating_sub(1));
        // Written whole under another name, then renamed: a crash leaves no half map.
        let partial = path.with_extension("part");
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&partial, text))
            .and_then(|()| std::fs::rename(&partial, &path));
        match written {
            Ok(()) => info!("the map {} is kept in {}", clean_name(&id.name), path.display()),
            Err(e) => warn!("the map {} could not be kept in {}: {e}", clean_name(&id.name), path.display()),
        }
    }
}

/// Whether `path` is one of the cache's own files (`<64 hex digits>.ron`, as
/// [`MapCache::path`] names them): the trim never touches anything else a
/// player keeps in that folder.
fn is_cached_map(path: &std::path::Path) -> bool {
    let hash_hex_digits = 64;
    path.extension().is_some_and(|e| e == "ron")
        && path.file_stem().and_then(|s| s.to_str()).is_some_and(|stem| {
            stem.len() == hash_hex_digits && stem.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// The map being fetched, and the map loaded.
#[derive(Resource, Debug, Default)]
pub struct MapFetch {
    download: Option<MapDownload>,
    /// The hash of the map the world holds (for the server's map).
    loaded: Option<[u8; 32]>,
    /// Maps received (and cached, or not).
    pub received: u32,
    /// Pieces of no map being fetched (of one given up for the next).
    pub stray_pieces: u32,
    /// Maps received, when there is no cache directory.
    kept: std::collections::VecDeque<(MapId, Vec<u8>)>,
    /// When the download last moved (began, or a piece came), real seconds.
    moved_at_s: f64,
    /// The server said "not now" (`MapRefused`): when to ask again (real
    /// seconds; the stall clock stands still until then)...
    retry_at_s: Option<f64>,
    /// ...and when it first said so, since no piece has come.
    refused_since_s: Option<f64>,
    /// The real time of the last frame, for [`MapFetch::waiting`].
    now_s: f64,
}

impl MapFetch {
    /// The map coming in: its name, and how far it is (0 to 1).
    pub fn progress(&self) -> Option<(String, f32)> {
        self.download.as_ref().map(|d| (arena_protocol::names::clean_name(&d.id().name), d.progress()))
    }

    /// While the server has said "not now" to the download: in how many
    /// seconds it is asked again.
    pub fn waiting(&self) -> Option<f64> {
        self.download.as_ref()?;
        self.retry_at_s.map(|retry_at_s| (retry_at_s - self.now_s).max(0.0))
    }
}

/// `map`, if it is called what the server announced.
fn named(map: MapDef, id: &MapId) -> Result<MapDef, String> {
    if map.name == id.name {
        Ok(map)
    } else {
        Err(format!("it calls itself \"{}\"", arena_protocol::names::clean_name(&map.name)))
    }
}

/// The id of the built-in map called `name`.
fn built_in_id(name: &str) -> Option<MapId> {
    let (name, text) = arena_sim::map::BUILT_IN_MAPS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
    Some(MapId::of(name, text.as_bytes()))
}

/// Why a received map is not loaded.
fn refuse(commands: &mut Commands, name: &str, why: &str) {
    let name = arena_protocol::names::clean_name(name);
    end_connection(commands, format!("The server's map \"{name}\" was refused: {why}. It was not loaded."));
}

/// The map's own checks on its text (as `arena map check`): the map, or why not.
fn check(text: &[u8]) -> Result<MapDef, String> {
    let text = std::str::from_utf8(text).map_err(|_| "it is not text".to_string())?;
    let (map, checked) = arena_sim::map_check::check_text(text);
    match map {
        Some(map) if checked.ok() => Ok(map),
        _ => Err(format!("it fails the map check ({})", checked.errors.join("; "))),
    }
}

/// What finding, fetching and loading a map reach.
#[derive(SystemParam)]
pub(crate) struct Loader<'w, 's> {
    cache: Res<'w, MapCache>,
    fetch: ResMut<'w, MapFetch>,
    world: ResMut<'w, ClientWorld>,
    roster: ResMut<'w, Roster>,
    client: Option<ResMut<'w, RenetClient>>,
    tally: ResMut<'w, MessageTally>,
    time: Res<'w, Time<Real>>,
    commands: Commands<'w, 's>,
}

impl Loader<'_, '_> {
    fn tell(&mut self, message: &ToServer) {
        if let Some(client) = self.client.as_deref_mut() {
            send_to_server(client, &mut self.tally, message);
        }
    }

    fn refuse(&mut self, name: &str, why: &str) {
        self.fetch.download = None;
        refuse(&mut self.commands, name, why);
    }

    /// Puts `map` in the world (unless it is there) and tells the server.
    fn load(&mut self, id: &MapId, map: MapDef) {
        // Written only for another map: the view rebuilds the arena whenever
        // the world changes. (Before any map came, the world is a built-in one.)
        let same = self.world.map().name == map.name
            && match self.fetch.loaded {
                Some(hash) => hash == id.hash,
                None => id.hash == [0; 32] || built_in_id(&map.name).is_some_and(|b| b.hash == id.hash),
            };
        if !same {
            info!("map: {}", clean_name(&map.name));
            *self.world = ClientWorld(Arc::new(ArenaWorld::new(map)));
        }
        self.fetch.loaded = Some(id.hash);
        self.roster.map_name = arena_protocol::names::clean_name(&self.world.map().name);
        self.tell(&ToServer::MapLoaded { hash: id.hash });
    }
}

/// Each map the server named: loaded from what we have, or asked for.
pub(crate) fn find_maps(mut needed: MessageReader<MapNeeded>, mut l: Loader) {
    if l.client.is_none() {
        needed.clear();
        return;
    }
    for MapNeeded(id) in needed.read() {
        l.fetch.download = None;
        (l.fetch.retry_at_s, l.fetch.refused_since_s) = (None, None);
        l.fetch.moved_at_s = l.time.elapsed_secs_f64();
        if l.fetch.loaded == Some(id.hash) && l.world.map().name == id.name {
            l.tell(&ToServer::MapLoaded { hash: id.hash });
            continue;
        }
        let built_in = arena_sim::map::BUILT_IN_MAPS.iter().find(|(name, _)| name.eq_ignore_ascii_case(&id.name));
        // A server without a file for its world (a test's) names it with no hash.
        let unhashed = id.bytes == 0 && id.hash == [0; 32];
        let have = match built_in {
            Some((_, text)) if unhashed || id.matches(text.as_bytes()) => Some(text.as_bytes().to_vec()),
            Some(_) => {
                // Servers send only maps of their own names: this is another build's.
                l.refuse(&id.name, "it is not the map of that name this game has (another version?)");
                continue;
            }
            None => l.cache.read(id).or_else(|| l.fetch.kept.iter().find(|(k, _)| k == id).map(|(_, t)| t.clone())),
        };
        match have {
            Some(text) => match check(&text).and_then(|map| named(map, id)) {
                Ok(map) => l.load(id, map),
                Err(why) => l.refuse(&id.name, &why),
            },
            None => match MapDownload::new(id.clone()) {
                Ok(download) => {
                    info!("the server's map {} ({} bytes) is not here: asking for it", clean_name(&id.name), id.bytes);
                    l.fetch.download = Some(download);
                    l.tell(&ToServer::WantMap);
                }
                Err(e) => l.refuse(&id.name, &e.to_string()),
            },
        }
    }
}

/// The pieces of the map being fetched; the whole map checked, kept, loaded.
pub(crate) fn receive_map(mut messages: MessageReader<GameMessage>, mut l: Loader) {
    if l.client.is_none() {
        return;
    }
    let now_s = l.time.elapsed_secs_f64();
    l.fetch.now_s = now_s;
    if l.fetch.download.is_none() {
        (l.fetch.retry_at_s, l.fetch.refused_since_s) = (None, None);
    }
    // Told to wait: ask again when the wait is over (the stall clock stands
    // still meanwhile, and runs from the new ask), or give up after being
    // refused for too long in all.
    if let Some(download) = l.fetch.download.as_ref() {
        if l.fetch.refused_since_s.is_some_and(|since| now_s - since > MAX_WAITING_S) {
            let why = format!(
                "the server kept refusing to send it for {MAX_WAITING_S:.0} s (it sends only so many copies to one \
                 address, and others behind your router have had them)"
            );
            let name = download.id().name.clone();
            l.refuse(&name, &why);
            return;
        }
        if let Some(retry_at_s) = l.fetch.retry_at_s {
            l.fetch.moved_at_s = now_s;
            if now_s >= retry_at_s {
                l.fetch.retry_at_s = None;
                l.tell(&ToServer::WantMap);
            }
        }
    }
    if let Some(download) = l.fetch.download.as_ref()
        && now_s - l.fetch.moved_at_s > STALLED_S
    {
        let why = format!(
            "its download stopped at {} of {} bytes (nothing for {STALLED_S:.0} s)",
            download.received(),
            download.id().bytes
        );
        let name = download.id().name.clone();
        l.refuse(&name, &why);
        return;
    }
    for GameMessage(message) in messages.read() {
        if let ToClient::MapRefused { retry_in_s } = message {
            if let Some(name) = l.fetch.download.as_ref().map(|d| clean_name(&d.id().name)) {
                let wait_s = f64::from(*retry_in_s).clamp(RETRY_BOUNDS_S.0, RETRY_BOUNDS_S.1);
                l.fetch.retry_at_s = Some(now_s + wait_s);
                l.fetch.refused_since_s.get_or_insert(now_s);
                l.fetch.moved_at_s = now_s;
                info!("the server has sent {name} to others at our address lately: asking again in {wait_s:.0} s");
            }
            continue;
        }
        let ToClient::MapData { tag, offset, bytes } = message else { continue };
        let Some(download) = l.fetch.download.as_mut().filter(|d| d.id().tag() == *tag) else {
            // Pieces of nothing asked for (or of a map given up): dropped.
            l.fetch.stray_pieces += 1;
            continue;
        };
        let id = download.id().clone();
        let whole = match download.accept(*offset, bytes) {
            Ok(None) => {
                l.fetch.moved_at_s = now_s;
                l.fetch.refused_since_s = None;
                continue;
            }
            Ok(Some(whole)) => whole,
            Err(e) => {
                l.refuse(&id.name, &e.to_string());
                return;
            }
        };
        l.fetch.download = None;
        match check(&whole).and_then(|map| named(map, &id)) {
            Ok(map) => {
                l.fetch.received += 1;
                if l.cache.dir.is_some() {
                    l.cache.write(&id, &whole);
                } else {
                    if l.fetch.kept.len() >= KEPT_IN_MEMORY {
                        l.fetch.kept.pop_front();
                    }
                    l.fetch.kept.push_back((id.clone(), whole));
                }
                l.load(&id, map);
            }
            Err(why) => {
                l.refuse(&id.name, &why);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trim takes the oldest of the cache's own maps and nothing else:
    /// a player's own `.ron` in that folder stays.
    #[test]
    fn the_trim_takes_only_the_caches_own_maps() {
        let dir = std::env::temp_dir().join(format!("arena-map-cache-trim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let own = dir.join("my_map.ron");
        std::fs::write(&own, "mine").unwrap();
        let upper = dir.join(format!("{}.ron", "AB".repeat(32)));
        std::fs::write(&upper, "not ours either").unwrap();
        let cached: Vec<PathBuf> =
            (0..4u8).map(|i| dir.join(format!("{}.ron", format!("{i:02x}").repeat(32)))).collect();
        for (i, path) in cached.iter().enumerate() {
            std::fs::write(path, "map").unwrap();
            let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i as u64);
            std::fs::File::options().append(true).open(path).unwrap().set_modified(at).unwrap();
        }
        // The player's files are the oldest of all: a trim by age alone takes them first.
        for path in [&own, &upper] {
            let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
            std::fs::File::options().append(true).open(path).unwrap().set_modified(at).unwrap();
        }
        MapCache { dir: Some(dir.clone()) }.trim(2);
        let left: Vec<bool> = cached.iter().map(|p| p.exists()).collect();
        assert_eq!(left, [false, false, true, true], "the two oldest cached maps go");
        assert!(own.exists() && upper.exists(), "a file the cache did not name stays");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
