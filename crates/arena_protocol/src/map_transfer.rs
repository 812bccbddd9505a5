//! Maps sent by the server (Quake 3's downloads): a map is named by its
//! name, its content's hash (BLAKE2b-256) and its size; a client that has
//! no map of that hash asks for it and the server sends its bytes in
//! chunks over the reliable channel. [`MapDownload`] puts them together on
//! the client and refuses whatever does not fit what was announced: a map
//! over [`MAX_MAP_BYTES`], a chunk out of place, more bytes than announced,
//! a hash that does not match. (The map's own check comes after, on the
//! whole text.)

use blake2::{Blake2b256, Digest};
use serde::{Deserialize, Serialize};

/// Largest map sent, bytes: the same cap as `arena map check`'s.
pub const MAX_MAP_BYTES: usize = arena_sim::map_check::MAX_MAP_BYTES;
/// Longest map name a server may send, bytes.
pub const MAX_MAP_NAME_BYTES: usize = 64;
/// Bytes in one chunk: under renet's slice size, so that a chunk is one
/// message in one datagram.
pub const MAP_CHUNK_BYTES: usize = 1024;

/// A map as the server names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MapId {
    pub name: String,
    /// BLAKE2b-256 of the map file's bytes.
    pub hash: [u8; 32],
    /// The map file's size, bytes.
    pub bytes: u32,
}

impl MapId {
    /// The id of the map `name` whose file is `text`.
    pub fn of(name: &str, text: &[u8]) -> Self {
        Self { name: name.to_string(), hash: map_hash(text), bytes: u32::try_from(text.len()).unwrap_or(u32::MAX) }
    }

    /// Checks what the wire gave: a name's length. (A size over the cap is
    /// the download's to refuse, with a message: [`MapDownload::new`].)
    pub fn validate(&self) -> Result<(), String> {
        if self.name.len() > MAX_MAP_NAME_BYTES {
            return Err(format!("a map name of {} bytes (at most {MAX_MAP_NAME_BYTES})", self.name.len()));
        }
        Ok(())
    }

    /// The hash in hex: the cache's file name.
    pub fn hex(&self) -> String {
        self.hash.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A short name for the map in each of its pieces: the hash's first bytes.
    pub fn tag(&self) -> u32 {
        u32::from_le_bytes([self.hash[0], self.hash[1], self.hash[2], self.hash[3]])
    }

    /// Whether `text` is this map's file.
    pub fn matches(&self, text: &[u8]) -> bool {
        text.len() == self.bytes as usize && map_hash(text) == self.hash
    }
}

/// BLAKE2b-256 of a map file.
pub fn map_hash(text: &[u8]) -> [u8; 32] {
    Blake2b256::digest(text).into()
}

/// The chunks of a map file, each with its offset.
pub fn chunks(text: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    text.chunks(MAP_CHUNK_BYTES).enumerate().map(|(i, c)| ((i * MAP_CHUNK_BYTES) as u32, c))
}

/// Why a download was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferError {
    /// The map announced is over the cap.
    TooLarge { bytes: u32 },
    /// The announcement itself was bad (a name too long).
    BadId(String),
    /// A chunk not where the last one ended (`expected`), or empty, or
    /// larger than a chunk may be.
    BadChunk { expected: u32, offset: u32, len: usize },
    /// More bytes than announced.
    TooMuch { announced: u32 },
    /// All the bytes came, and their hash is not the announced one.
    Damaged,
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferError::TooLarge { bytes } => {
                write!(f, "the map is {bytes} bytes; at most {MAX_MAP_BYTES} are taken")
            }
            TransferError::BadId(why) => write!(f, "the map's announcement is bad: {why}"),
            TransferError::BadChunk { expected, offset, len } => {
                write!(f, "a piece of {len} bytes at {offset} where {expected} was due")
            }
            TransferError::TooMuch { announced } => write!(f, "more bytes came than the {announced} announced"),
            TransferError::Damaged => write!(f, "the map arrived damaged (its hash does not match)"),
        }
    }
}

impl std::error::Error for TransferError {}

/// A map coming in.
#[derive(Debug, Clone)]
pub struct MapDownload {
    id: MapId,
    data: Vec<u8>,
}

impl MapDownload {
    /// Starts the download of `id` (refused over the cap).
    pub fn new(id: MapId) -> Result<Self, TransferError> {
        if id.bytes as usize > MAX_MAP_BYTES {
            return Err(TransferError::TooLarge { bytes: id.bytes });
        }
        id.validate().map_err(TransferError::BadId)?;
        // What was announced, and no more, is kept: the cap bounds it.
        Ok(Self { data: Vec::with_capacity(id.bytes as usize), id })
    }

    pub fn id(&self) -> &MapId {
        &self.id
    }

    /// Bytes received so far.
    pub fn received(&self) -> usize {
        self.data.len()
    }

    /// How far it is, 0 to 1.
    pub fn progress(&self) -> f32 {
        if self.id.bytes == 0 { 1.0 } else { self.data.len() as f32 / self.id.bytes as f32 }
    }

    /// Takes the chunk at `offset`; the whole file once its last byte came
    /// and its hash matched.
    pub fn accept(&mut self, offset: u32, chunk: &[u8]) -> Result<Option<Vec<u8>>, TransferError> {
        let expected = self.data.len() as u32;
        if offset != expected || chunk.is_empty() || chunk.len() > MAP_CHUNK_BYTES {
            return Err(TransferError::BadChunk { expected, offset, len: chunk.len() });
        }
        if self.data.len() + chunk.len() > self.id.bytes as usize {
            return Err(TransferError::TooMuch { announced: self.id.bytes });
        }
        self.data.extend_from_slice(chunk);
        if self.data.len() < self.id.bytes as usize {
            return Ok(None);
        }
        if map_hash(&self.data) != self.id.hash {
            return Err(TransferError::Damaged);
        }
        Ok(Some(std::mem::take(&mut self.data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn a_map_sent_in_chunks_arrives_whole() {
        let text = map(3 * MAP_CHUNK_BYTES + 17);
        let id = MapId::of("Tower", &text);
        let mut download = MapDownload::new(id.clone()).unwrap();
        let mut whole = None;
        for (offset, chunk) in chunks(&text) {
            assert!(whole.is_none());
            whole = download.accept(offset, chunk).unwrap();
        }
        assert_eq!(whole.as_deref(), Some(&text[..]));
        assert!(id.matches(&text));
        assert_eq!(id.hex().len(), 64);
    }

    #[test]
    fn damaged_oversized_and_misplaced_transfers_are_refused() {
        let text = map(2500);
        let id = MapId::of("Tower", &text);
        // One byte changed on the way.
        let mut damaged = text.clone();
        damaged[2000] ^= 1;
        let mut download = MapDownload::new(id.clone()).unwrap();
        let results: Vec<_> = chunks(&damaged).map(|(o, c)| download.accept(o, c)).collect();
        assert_eq!(results.last(), Some(&Err(TransferError::Damaged)));
        // More than announced.
        let mut download = MapDownload::new(MapId { bytes: 1000, ..id.clone() }).unwrap();
        assert_eq!(download.accept(0, &text[..1024]), Err(TransferError::TooMuch { announced: 1000 }));
        // A chunk out of place, an empty one, one too large.
        let mut download = MapDownload::new(id.clone()).unwrap();
        assert!(matches!(download.accept(1024, &text[..10]), Err(TransferError::BadChunk { .. })));
        assert!(matches!(download.accept(0, &[]), Err(TransferError::BadChunk { .. })));
        assert!(matches!(download.accept(0, &text[..MAP_CHUNK_BYTES + 1]), Err(TransferError::BadChunk { .. })));
        // Over the cap: refused before anything is kept.
        let huge = MapId { bytes: MAX_MAP_BYTES as u32 + 1, ..id };
        assert!(matches!(MapDownload::new(huge), Err(TransferError::TooLarge { .. })));
    }
}
