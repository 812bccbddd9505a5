//! The demo file: a recorded match as frames (a tick and its bytes), in
//! chunks compressed with DEFLATE (`flate2`), each checked by a CRC-32, and
//! an index of the chunks' ticks at the end for seeking. The writer keeps
//! at most one chunk in memory and writes each out as it closes (at the
//! latest a second of match after it opened), so a recorder killed midway
//! leaves a file whole up to its last chunk: without the index and footer
//! (written only when the recording finishes), the reader finds the chunks
//! by reading forward and says where the file was cut. The reader trusts
//! nothing: every length is bounded before anything is allocated, a chunk
//! inflates to at most its stated size, and a damaged file is an error that
//! says what is wrong and where, never a panic. What the frames hold is the
//! recorder's business.
//!
//! ```text
//! file    "ARENADEMO\0" u16 format  u32 n  header (bincode, n bytes)
//!         u32 crc32(header)  chunk*  index  footer
//! chunk   "CHNK" u32 compressed  u32 raw  u32 first_tick  u32 last_tick
//!         u32 frames  u32 crc32(compressed)  compressed bytes
//!         raw = frames x (u32 tick, u32 n, n bytes)
//! index   "INDX" u32 chunks  chunks x (u64 offset, u32 first_tick, u32 last_tick)
//! footer  u64 index offset  "ARENAEND"
//! ```
//! All integers little-endian. A file that does not end in `ARENAEND` was
//! cut (its recording did not finish): it is read as the header and the
//! whole chunks after it, up to a chunk or an index that runs past its end.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

/// The first bytes of every demo.
pub const DEMO_MAGIC: &[u8; 10] = b"ARENADEMO\0";
const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
const INDEX_MAGIC: &[u8; 4] = b"INDX";
const END_MAGIC: &[u8; 8] = b"ARENAEND";
/// This layout's version, the one written; a reader refuses others by
/// name. Format 3 marks how a frag was scored: on a teammate, or not at
/// all after the match's end (bits in its zone byte).
pub const DEMO_FORMAT: u16 = 3;
const _: () = assert!(DEMO_FORMAT >= crate::demo_frame::FRAG_SCORE_FORMAT);
/// The oldest format still read: format 2 differs only in never marking how
/// a frag was scored, so its frags verify as they always did.
pub const OLDEST_DEMO_FORMAT: u16 = 2;
/// A chunk is closed once its frames reach this many bytes (raw).
pub const CHUNK_TARGET_BYTES: usize = 64 * 1024;
/// A chunk is also closed once it spans this many seconds of match (the
/// header's tick rate times this, in ticks, first to last), and every chunk
/// is written out and the writer flushed as it closes. So a crash, even
/// SIGKILL, loses at most this much of the match (the open chunk, or the
/// chunk being written when it came), plus the tick being recorded; the
/// header is flushed as the file is created. (Flushed to the operating
/// system, not synced to the disk: a power cut may lose what the system had
/// not yet written.) A recorder that keyframes once a second gets chunks
/// that each start on a keyframe.
pub const CHUNK_MAX_SECONDS: u32 = 1;
/// Largest frame, bytes.
pub const MAX_FRAME_BYTES: usize = 256 * 1024;
/// Largest chunk, raw or compressed, bytes: a full chunk plus one frame.
pub const MAX_CHUNK_BYTES: usize = CHUNK_TARGET_BYTES + MAX_FRAME_BYTES + 8;
/// Largest header, bytes, and most chunks a file may have: at a chunk a
/// second ([`CHUNK_MAX_SECONDS`]), 65536 s, over 18 hours of match; a
/// match busy enough to fill 64 KiB chunks sooner reaches it at 4 GiB of
/// frames before compression.
pub const MAX_HEADER_BYTES: usize = 4096;
pub const MAX_CHUNKS: usize = 1 << 16;
/// Bytes of a chunk's head, an index entry, the footer.
const CHUNK_HEAD_BYTES: usize = 4 + 6 * 4;
const INDEX_ENTRY_BYTES: usize = 8 + 4 + 4;
const FOOTER_BYTES: usize = 8 + 8;

/// What a demo says of itself before its frames.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoHeader {
    /// The wire protocol the recording server spoke.
    pub protocol: u64,
    pub tick_hz: u16,
    pub map: String,
    pub server_name: String,
    /// When the recording started, seconds since 1970.
    pub started_unix_s: u64,
}

/// What went wrong reading or writing a demo.
#[derive(Debug)]
pub enum DemoError {
    Io(std::io::Error),
    /// The file does not start as a demo does.
    NotADemo,
    /// A demo of another layout version.
    UnsupportedFormat(u16),
    /// The file ends inside `what`, which starts at byte `at`.
    Truncated {
        what: &'static str,
        at: u64,
    },
    /// `what` at byte `at` is not as it must be.
    Corrupt {
        what: String,
        at: u64,
    },
    /// `what` is `size` bytes (or items), over the limit.
    TooLarge {
        what: &'static str,
        size: u64,
        limit: u64,
    },
    /// A demo cut (its recording did not finish) before its first chunk
    /// was whole: a header that starts at byte `at`, nothing to play. It
    /// opens (to say so), but cannot be played or verified.
    CutBeforeFirstChunk {
        at: u64,
        file_bytes: u64,
    },
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Io(e) => write!(f, "{e}"),
            DemoError::NotADemo => write!(f, "not an Arena demo (it does not start with ARENADEMO)"),
            DemoError::UnsupportedFormat(v) => {
                write!(f, "a demo of format {v}; this build reads formats {OLDEST_DEMO_FORMAT} to {DEMO_FORMAT}")
            }
            DemoError::Truncated { what, at } => {
                write!(f, "the file ends inside the {what} that starts at byte {at} (cut short?)")
            }
            DemoError::Corrupt { what, at } => write!(f, "damaged: {what} (at byte {at})"),
            DemoError::TooLarge { what, size, limit } => write!(f, "the {what} is {size}, over the limit of {limit}"),
            DemoError::CutBeforeFirstChunk { at, file_bytes } => write!(
                f,
                "cut before its first chunk (the recording did not finish): only its header is whole, \
                 {at} of {file_bytes} bytes, and there is nothing to play"
            ),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<std::io::Error> for DemoError {
    fn from(e: std::io::Error) -> Self {
        DemoError::Io(e)
    }
}

/// Where a chunk is and which ticks it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkEntry {
    /// Byte offset of the chunk's head in the file.
    pub offset: u64,
    pub first_tick: u32,
    pub last_tick: u32,
}

/// Writes a demo: frames go into the open chunk, which is compressed,
/// written out and flushed when it reaches [`CHUNK_TARGET_BYTES`] or spans
/// [`CHUNK_MAX_SECONDS`] of ticks (or on [`DemoWriter::flush_chunk`]);
/// [`DemoWriter::finish`] writes the index. What is on disk is always a
/// demo cut after its last chunk, which the reader takes.
pub struct DemoWriter<W: Write> {
    out: W,
    written: u64,
    /// Most ticks a chunk spans, first to last: [`CHUNK_MAX_SECONDS`] at the header's rate.
    chunk_ticks: u32,
    raw: Vec<u8>,
    frames: u32,
    ticks: Option<(u32, u32)>,
    index: Vec<ChunkEntry>,
}

impl<W: Write> DemoWriter<W> {
    pub fn new(mut out: W, header: &DemoHeader) -> Result<Self, DemoError> {
        let head = bincode::serde::encode_to_vec(header, bincode::config::standard())
            .map_err(|e| DemoError::Corrupt { what: format!("the header would not encode: {e}"), at: 0 })?;
        if head.len() > MAX_HEADER_BYTES {
            return Err(DemoError::TooLarge {
                what: "header",
                size: head.len() as u64,
                limit: MAX_HEADER_BYTES as u64,
            });
        }
        out.write_all(DEMO_MAGIC)?;
        out.write_all(&DEMO_FORMAT.to_le_bytes())?;
        out.write_all(&(head.len() as u32).to_le_bytes())?;
        out.write_all(&head)?;
        let mut crc = flate2::Crc::new();
        crc.update(&head);
        out.write_all(&crc.sum().to_le_bytes())?;
        // Out now: a recorder killed before its first chunk still leaves
        // a file that says what it was.
        out.flush()?;
        let written = (DEMO_MAGIC.len() + 2 + 4 + head.len() + 4) as u64;
        let chunk_ticks = u32::from(header.tick_hz.max(1)).saturating_mul(CHUNK_MAX_SECONDS).max(1);
        Ok(Self { out, written, chunk_ticks, raw: Vec::new(), frames: 0, ticks: None, index: Vec::new() })
    }

    /// Adds a frame: tick `tick`'s bytes. Ticks must not go backwards.
    pub fn push(&mut self, tick: u32, bytes: &[u8]) -> Result<(), DemoError> {
        if bytes.len() > MAX_FRAME_BYTES {
            return Err(DemoError::TooLarge { what: "frame", size: bytes.len() as u64, limit: MAX_FRAME_BYTES as u64 });
        }
        let last = self.ticks.map(|(_, last)| last).or_else(|| self.index.last().map(|c| c.last_tick));
        if last.is_some_and(|last| tick < last) {
            return Err(DemoError::Corrupt { what: format!("tick {tick} after tick {last:?}"), at: self.written });
        }
        self.raw.extend_from_slice(&tick.to_le_bytes());
        self.raw.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.raw.extend_from_slice(bytes);
        self.frames += 1;
        let first = self.ticks.map_or(tick, |(first, _)| first);
        self.ticks = Some((first, tick));
        // Closed after the frame that fills it, never before a frame: a
        // recorder codes the frame after an empty chunk on its own.
        if self.raw.len() >= CHUNK_TARGET_BYTES || tick - first >= self.chunk_ticks - 1 {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Compresses and writes the open chunk, if it has frames, and flushes
    /// the writer (the chunk is then on disk, whatever happens next).
    pub fn flush_chunk(&mut self) -> Result<(), DemoError> {
        if self.ticks.is_some() && self.index.len() >= MAX_CHUNKS {
            // A reader would refuse the file: refuse the chunk instead.
            let size = self.index.len() as u64 + 1;
            return Err(DemoError::TooLarge { what: "chunk count", size, limit: MAX_CHUNKS as u64 });
        }
        let Some((first_tick, last_tick)) = self.ticks.take() else { return Ok(()) };
        let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        deflate.write_all(&self.raw)?;
        let compressed = deflate.finish()?;
        let mut crc = flate2::Crc::new();
        crc.update(&compressed);
        self.out.write_all(CHUNK_MAGIC)?;
        for n in [compressed.len() as u32, self.raw.len() as u32, first_tick, last_tick, self.frames, crc.sum()] {
            self.out.write_all(&n.to_le_bytes())?;
        }
        self.out.write_all(&compressed)?;
        self.out.flush()?;
        self.index.push(ChunkEntry { offset: self.written, first_tick, last_tick });
        self.written += (CHUNK_HEAD_BYTES + compressed.len()) as u64;
        self.raw.clear();
        self.frames = 0;
        Ok(())
    }

    /// Writes the last chunk, the index and the footer.
    pub fn finish(mut self) -> Result<W, DemoError> {
        self.flush_chunk()?;
        let index_offset = self.written;
        self.out.write_all(INDEX_MAGIC)?;
        self.out.write_all(&(self.index.len() as u32).to_le_bytes())?;
        for c in &self.index {
            self.out.write_all(&c.offset.to_le_bytes())?;
            self.out.write_all(&c.first_tick.to_le_bytes())?;
            self.out.write_all(&c.last_tick.to_le_bytes())?;
        }
        self.out.write_all(&index_offset.to_le_bytes())?;
        self.out.write_all(END_MAGIC)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Bytes held in memory for the open chunk.
    pub fn buffered_bytes(&self) -> usize {
        self.raw.len()
    }
}

/// Largest demo file read, bytes (a 10-minute match is meant to be a few
/// megabytes).
pub const MAX_DEMO_FILE_BYTES: u64 = 1 << 30;

/// What `arena demo info` prints: the header, and the chunks and frames
/// counted by reading every one (so a damaged chunk is found); of a cut
/// demo, what is whole and where it ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DemoSummary {
    pub format: u16,
    pub protocol: u64,
    pub tick_hz: u16,
    pub map: String,
    pub server_name: String,
    pub started_unix_s: u64,
    pub file_bytes: u64,
    pub chunks: usize,
    pub frames: usize,
    /// The frames' bytes before compression.
    pub frame_bytes: u64,
    pub first_tick: Option<u32>,
    pub last_tick: Option<u32>,
    /// From the first tick to the last, at the recorded tick rate.
    pub duration_s: f64,
    /// Whether the recording finished (its index and footer are there); a
    /// cut demo is read up to its last whole chunk, `last_tick`.
    pub complete: bool,
    /// Bytes read: the whole file, or a cut one's up to its last whole chunk.
    pub whole_bytes: u64,
    /// Where a cut demo ends, said ([`DemoReader::ends`]); none when complete.
    pub ends: Option<String>,
}

/// A demo file's bytes, up to [`MAX_DEMO_FILE_BYTES`].
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>, DemoError> {
    let size = std::fs::metadata(path)?.len();
    if size > MAX_DEMO_FILE_BYTES {
        return Err(DemoError::TooLarge { what: "file", size, limit: MAX_DEMO_FILE_BYTES });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // One byte past the limit: a file grown since is refused, not cut short.
    std::fs::File::open(path)?.take(MAX_DEMO_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_DEMO_FILE_BYTES {
        return Err(DemoError::TooLarge { what: "file", size: bytes.len() as u64, limit: MAX_DEMO_FILE_BYTES });
    }
    Ok(bytes)
}

/// Reads a demo file whole (up to [`MAX_DEMO_FILE_BYTES`]) and every chunk of it.
pub fn summarize_file(path: &std::path::Path) -> Result<DemoSummary, DemoError> {
    summarize(&read_file(path)?)
}

/// The summary of a demo in memory, every chunk read.
pub fn summarize(bytes: &[u8]) -> Result<DemoSummary, DemoError> {
    let r = DemoReader::open(bytes)?;
    let (mut frames, mut frame_bytes) = (0, 0u64);
    for i in 0..r.chunks.len() {
        let chunk = r.read_chunk(i)?;
        frames += chunk.len();
        frame_bytes += chunk.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
    }
    let first_tick = r.chunks.first().map(|c| c.first_tick);
    let last_tick = r.chunks.last().map(|c| c.last_tick);
    let ticks = first_tick.zip(last_tick).map_or(0, |(a, b)| b - a);
    Ok(DemoSummary {
        format: r.format,
        protocol: r.header.protocol,
        tick_hz: r.header.tick_hz,
        map: r.header.map.clone(),
        server_name: r.header.server_name.clone(),
        started_unix_s: r.header.started_unix_s,
        file_bytes: bytes.len() as u64,
        chunks: r.chunks.len(),
        frames,
        frame_bytes,
        first_tick,
        last_tick,
        duration_s: f64::from(ticks) / f64::from(r.header.tick_hz.max(1)),
        complete: r.cut.is_none(),
        whole_bytes: r.cut.map_or(bytes.len() as u64, |c| c.whole_bytes),
        ends: r.ends(),
    })
}

/// Where a demo whose recording did not finish (no index, no footer: the
/// recorder was killed, or the machine stopped) ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DemoCut {
    /// Bytes up to the end of the last whole chunk (or of the header, if
    /// none is whole): what is read.
    pub whole_bytes: u64,
    /// The file's bytes; those past `whole_bytes` (a chunk or the index cut
    /// short) are left unread.
    pub file_bytes: u64,
    /// The last tick of the last whole chunk; none if no chunk is whole.
    pub last_tick: Option<u32>,
}

/// A demo read from bytes: its header and index checked, its chunks read
/// one at a time. A cut demo (no footer) has the chunks found whole in it,
/// and says where it ends in `cut`.
#[derive(Debug, Clone)]
pub struct DemoReader {
    /// The whole file (shared: a reader clones cheaply).
    bytes: std::sync::Arc<[u8]>,
    pub header: DemoHeader,
    /// The file's format (`OLDEST_DEMO_FORMAT..=DEMO_FORMAT`).
    pub format: u16,
    pub chunks: Vec<ChunkEntry>,
    /// Where the frames end (the index's offset, or a cut demo's end of
    /// its last whole chunk).
    frames_end: u64,
    /// Set when the recording did not finish: where what is whole ends.
    pub cut: Option<DemoCut>,
}

fn u32_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u32, DemoError> {
    let b = bytes.get(at..at + 4).ok_or(DemoError::Truncated { what, at: at as u64 })?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u64, DemoError> {
    let lo = u64::from(u32_at(bytes, at, what)?);
    let hi = u64::from(u32_at(bytes, at + 4, what)?);
    Ok(lo | hi << 32)
}

/// The whole chunks of a demo without its footer (a recording that did not
/// finish), read forward from `at`, the header's end: each head bounded,
/// its ticks after the last chunk's, its data all there and passing its
/// CRC. They end at a cut: the file's end, or a chunk or an index that runs
/// past it; anything else there (bytes that are no chunk, an index and a
/// footer all there but the footer not one) is damage. Also gives where the
/// last whole chunk ends.
fn scan_chunks(bytes: &[u8], mut at: usize) -> Result<(Vec<ChunkEntry>, usize), DemoError> {
    let mut chunks: Vec<ChunkEntry> = Vec::new();
    loop {
        let rest = &bytes[at..];
        let magic = &rest[..rest.len().min(4)];
        if magic.len() < 4 && (CHUNK_MAGIC.starts_with(magic) || INDEX_MAGIC.starts_with(magic)) {
            return Ok((chunks, at));
        }
        if magic == INDEX_MAGIC {
            // The index is written all at once with the footer after the
            // last chunk: cut inside them, the chunks are all whole.
            let Ok(count) = u32_at(bytes, at + 4, "index") else { return Ok((chunks, at)) };
            if count as usize != chunks.len() {
                return Err(DemoError::Corrupt {
                    what: format!("an index of {count} chunks after {} chunks", chunks.len()),
                    at: at as u64,
                });
            }
            let footer_at = at + 8 + chunks.len() * INDEX_ENTRY_BYTES;
            if footer_at + FOOTER_BYTES <= bytes.len() {
                return Err(DemoError::Corrupt {
                    what: "the footer does not end in ARENAEND".into(),
                    at: footer_at as u64,
                });
            }
            return Ok((chunks, at));
        }
        if magic != CHUNK_MAGIC {
            return Err(DemoError::Corrupt {
                what: "bytes that are no chunk where a chunk starts".into(),
                at: at as u64,
            });
        }
        if rest.len() < CHUNK_HEAD_BYTES {
            return Ok((chunks, at));
        }
        let field = |k: usize| u32_at(bytes, at + 4 + 4 * k, "chunk head");
        let (compressed, raw, first, last, crc) = (field(0)?, field(1)?, field(2)?, field(3)?, field(5)?);
        for (what, size) in [("chunk (compressed)", compressed), ("chunk (raw)", raw)] {
            if size as usize > MAX_CHUNK_BYTES {
                return Err(DemoError::TooLarge { what, size: u64::from(size), limit: MAX_CHUNK_BYTES as u64 });
            }
        }
        let i = chunks.len();
        if i >= MAX_CHUNKS {
            return Err(DemoError::TooLarge { what: "chunk count", size: i as u64 + 1, limit: MAX_CHUNKS as u64 });
        }
        if first > last || chunks.last().is_some_and(|p| first < p.last_tick) {
            return Err(DemoError::Corrupt { what: format!("chunk {i}'s ticks {first} to {last}"), at: at as u64 });
        }
        let data_at = at + CHUNK_HEAD_BYTES;
        let Some(data) = bytes.get(data_at..data_at + compressed as usize) else { return Ok((chunks, at)) };
        let mut sum = flate2::Crc::new();
        sum.update(data);
        if sum.sum() != crc {
            return Err(DemoError::Corrupt { what: format!("chunk {i} fails its CRC"), at: at as u64 });
        }
        chunks.push(ChunkEntry { offset: at as u64, first_tick: first, last_tick: last });
        at = data_at + data.len();
    }
}

impl DemoReader {
    /// Checks a demo's header, footer and index (the chunks are checked as
    /// they are read); `bytes` is the whole file. A file cut after its
    /// header (its recording did not finish: no footer) opens with the
    /// chunks whole in it, and `cut` set; one cut inside its header is
    /// [`DemoError::Truncated`] (or [`DemoError::NotADemo`]).
    pub fn open(bytes: impl Into<std::sync::Arc<[u8]>>) -> Result<Self, DemoError> {
        let owned: std::sync::Arc<[u8]> = bytes.into();
        let bytes = &owned[..];
        if bytes.len() < DEMO_MAGIC.len() || &bytes[..DEMO_MAGIC.len()] != DEMO_MAGIC {
            return Err(DemoError::NotADemo);
        }
        let at = DEMO_MAGIC.len();
        let format = bytes.get(at..at + 2).ok_or(DemoError::Truncated { what: "header", at: 0 })?;
        let format = u16::from_le_bytes([format[0], format[1]]);
        if !(OLDEST_DEMO_FORMAT..=DEMO_FORMAT).contains(&format) {
            return Err(DemoError::UnsupportedFormat(format));
        }
        let head_len = u32_at(bytes, at + 2, "header")? as usize;
        if head_len > MAX_HEADER_BYTES {
            return Err(DemoError::TooLarge { what: "header", size: head_len as u64, limit: MAX_HEADER_BYTES as u64 });
        }
        let head_at = at + 6;
        let head = bytes.get(head_at..head_at + head_len).ok_or(DemoError::Truncated { what: "header", at: 0 })?;
        let mut crc = flate2::Crc::new();
        crc.update(head);
        if u32_at(bytes, head_at + head_len, "header")? != crc.sum() {
            return Err(DemoError::Corrupt { what: "the header fails its CRC".into(), at: head_at as u64 });
        }
        let config = bincode::config::standard().with_limit::<MAX_HEADER_BYTES>();
        let (header, used): (DemoHeader, usize) = bincode::serde::decode_from_slice(head, config)
            .map_err(|e| DemoError::Corrupt { what: format!("the header does not decode: {e}"), at: head_at as u64 })?;
        if used != head_len {
            return Err(DemoError::Corrupt { what: "bytes after the header".into(), at: (head_at + used) as u64 });
        }
        let frames_start = (head_at + head_len + 4) as u64;
        // The footer, then the index it points to; no footer, a cut.
        let footer_at =
            bytes.len().checked_sub(FOOTER_BYTES).filter(|&f| f as u64 >= frames_start && &bytes[f + 8..] == END_MAGIC);
        let Some(footer_at) = footer_at else {
            let (chunks, whole) = scan_chunks(bytes, frames_start as usize)?;
            let cut = DemoCut {
                whole_bytes: whole as u64,
                file_bytes: bytes.len() as u64,
                last_tick: chunks.last().map(|c| c.last_tick),
            };
            return Ok(Self { bytes: owned.clone(), header, format, chunks, frames_end: whole as u64, cut: Some(cut) });
        };
        let index_at = u64_at(bytes, footer_at, "footer")?;
        if index_at < frames_start || index_at > footer_at as u64 {
            return Err(DemoError::Corrupt { what: format!("the index offset {index_at}"), at: footer_at as u64 });
        }
        let index_at = index_at as usize;
        if bytes.get(index_at..index_at + 4) != Some(INDEX_MAGIC.as_slice()) {
            return Err(DemoError::Corrupt { what: "no index where the footer says".into(), at: index_at as u64 });
        }
        let count = u32_at(bytes, index_at + 4, "index")? as usize;
        if count > MAX_CHUNKS {
            return Err(DemoError::TooLarge { what: "chunk count", size: count as u64, limit: MAX_CHUNKS as u64 });
        }
        if index_at + 8 + count * INDEX_ENTRY_BYTES != footer_at {
            return Err(DemoError::Corrupt { what: format!("an index of {count} chunks"), at: index_at as u64 });
        }
        let mut chunks = Vec::with_capacity(count);
        for i in 0..count {
            let at = index_at + 8 + i * INDEX_ENTRY_BYTES;
            let entry = ChunkEntry {
                offset: u64_at(bytes, at, "index")?,
                first_tick: u32_at(bytes, at + 8, "index")?,
                last_tick: u32_at(bytes, at + 12, "index")?,
            };
            let in_order =
                chunks.last().is_none_or(|p: &ChunkEntry| entry.offset > p.offset && entry.first_tick >= p.last_tick);
            if !in_order
                || entry.first_tick > entry.last_tick
                || entry.offset < frames_start
                || entry.offset >= index_at as u64
            {
                return Err(DemoError::Corrupt { what: format!("index entry {i}"), at: at as u64 });
            }
            chunks.push(entry);
        }
        Ok(Self { bytes: owned.clone(), header, format, chunks, frames_end: index_at as u64, cut: None })
    }

    /// Where a cut demo ends, as a sentence ("cut short (the recording did
    /// not finish): whole up to tick 1919, 0:30 into the match, byte 183220
    /// of 190551"); none for a complete one.
    pub fn ends(&self) -> Option<String> {
        let cut = self.cut?;
        let said = "cut short (the recording did not finish)";
        let (bytes, of) = (cut.whole_bytes, cut.file_bytes);
        Some(match (self.chunks.first(), cut.last_tick) {
            (Some(first), Some(last)) => {
                // At the end of tick `last`: a second's chunk whole is 0:01.
                let s = (u64::from(last - first.first_tick) + 1) / u64::from(self.header.tick_hz.max(1));
                format!(
                    "{said}: whole up to tick {last}, {}:{:02} into the match, byte {bytes} of {of}",
                    s / 60,
                    s % 60
                )
            }
            _ => format!("{said} before its first chunk: whole up to byte {bytes} of {of}"),
        })
    }

    /// Whether there is anything to play or verify: a demo cut before its
    /// first chunk has nothing, and is [`DemoError::CutBeforeFirstChunk`].
    /// (A finished demo without frames is not refused here: there is
    /// nothing in it to be wrong.)
    pub fn check_playable(&self) -> Result<(), DemoError> {
        match self.cut {
            Some(cut) if self.chunks.is_empty() => {
                Err(DemoError::CutBeforeFirstChunk { at: cut.whole_bytes, file_bytes: cut.file_bytes })
            }
            _ => Ok(()),
        }
    }

    /// The chunk holding `tick` (or the first after it), for seeking.
    pub fn chunk_for(&self, tick: u32) -> Option<usize> {
        let i = self.chunks.partition_point(|c| c.last_tick < tick);
        (i < self.chunks.len()).then_some(i)
    }

    /// Chunk `i`'s frames (tick and bytes), checked against its head, its
    /// CRC and the index.
    pub fn read_chunk(&self, i: usize) -> Result<Vec<(u32, Vec<u8>)>, DemoError> {
        let entry = *self.chunks.get(i).ok_or(DemoError::Corrupt { what: format!("no chunk {i}"), at: 0 })?;
        let at = entry.offset as usize;
        if self.bytes.get(at..at + 4) != Some(CHUNK_MAGIC.as_slice()) {
            return Err(DemoError::Corrupt {
                what: format!("chunk {i} is not where the index says"),
                at: entry.offset,
            });
        }
        let field = |k: usize| u32_at(&self.bytes, at + 4 + 4 * k, "chunk head");
        let (compressed, raw, first, last, frames, crc) =
            (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?, field(5)?);
        for (what, size) in [("chunk (compressed)", compressed), ("chunk (raw)", raw)] {
            if size as usize > MAX_CHUNK_BYTES {
                return Err(DemoError::TooLarge { what, size: u64::from(size), limit: MAX_CHUNK_BYTES as u64 });
            }
        }
        if (first, last) != (entry.first_tick, entry.last_tick) {
            return Err(DemoError::Corrupt {
                what: format!("chunk {i}'s ticks differ from the index"),
                at: entry.offset,
            });
        }
        let data_at = at + CHUNK_HEAD_BYTES;
        let data_end = data_at + compressed as usize;
        if data_end as u64 > self.frames_end {
            return Err(DemoError::Truncated { what: "chunk", at: entry.offset });
        }
        let data = &self.bytes[data_at..data_end];
        let mut sum = flate2::Crc::new();
        sum.update(data);
        if sum.sum() != crc {
            return Err(DemoError::Corrupt { what: format!("chunk {i} fails its CRC"), at: entry.offset });
        }
        // Inflate to at most the size it says (and notice if it is more).
        let mut out = Vec::with_capacity(raw as usize);
        flate2::read::DeflateDecoder::new(data)
            .take(u64::from(raw) + 1)
            .read_to_end(&mut out)
            .map_err(|e| DemoError::Corrupt { what: format!("chunk {i} does not inflate: {e}"), at: entry.offset })?;
        if out.len() != raw as usize {
            return Err(DemoError::Corrupt {
                what: format!("chunk {i} inflates to {} bytes, not {raw}", out.len()),
                at: entry.offset,
            });
        }
        let mut list = Vec::new();
        let mut p = 0usize;
        let mut previous = first;
        while p < out.len() {
            let tick = u32_at(&out, p, "frame")?;
            let len = u32_at(&out, p + 4, "frame")? as usize;
            let body = out.get(p + 8..p + 8 + len).ok_or(DemoError::Corrupt {
                what: format!("chunk {i}: a frame runs past its end"),
                at: entry.offset,
            })?;
            if len > MAX_FRAME_BYTES || tick < previous || tick > last {
                return Err(DemoError::Corrupt {
                    what: format!("chunk {i}: a frame of tick {tick}, {len} bytes"),
                    at: entry.offset,
                });
            }
            list.push((tick, body.to_vec()));
            previous = tick;
            p += 8 + len;
        }
        if list.len() != frames as usize
            || list.first().map(|f| f.0) != Some(first)
            || list.last().map(|f| f.0) != Some(last)
        {
            return Err(DemoError::Corrupt {
                what: format!("chunk {i}'s frames differ from its head"),
                at: entry.offset,
            });
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> DemoHeader {
        DemoHeader {
            protocol: crate::PROTOCOL_VERSION,
            tick_hz: 64,
            map: "Foundry".into(),
            server_name: "test".into(),
            started_unix_s: 1_790_000_000,
        }
    }

    /// A frame's bytes for `tick`: varied lengths and contents.
    fn frame(tick: u32) -> Vec<u8> {
        (0..(tick * 37 % 300)).map(|i| (i * 7 + tick) as u8).collect()
    }

    fn demo(ticks: u32) -> Vec<u8> {
        let mut w = DemoWriter::new(Vec::new(), &header()).expect("header");
        for tick in 0..ticks {
            w.push(tick * 2, &frame(tick)).expect("frame");
            assert!(w.buffered_bytes() < CHUNK_TARGET_BYTES, "at most one chunk in memory");
        }
        w.finish().expect("finish")
    }

    #[test]
    fn frames_come_back_as_written_chunk_by_chunk_and_seek_by_tick() {
        let bytes = demo(4000);
        let r = DemoReader::open(&bytes[..]).expect("opens");
        assert_eq!(r.header, header());
        assert!(r.chunks.len() > 3, "{} chunks", r.chunks.len());
        let mut all = Vec::new();
        for i in 0..r.chunks.len() {
            all.extend(r.read_chunk(i).expect("chunk"));
        }
        assert_eq!(all.len(), 4000);
        for (n, (tick, body)) in all.iter().enumerate() {
            assert_eq!((*tick, body), (n as u32 * 2, &frame(n as u32)));
        }
        // Seeking: the chunk holding a tick, or the next after a gap.
        for tick in [0, 1, 777, 4000, 7998] {
            let i = r.chunk_for(tick).expect("a chunk");
            let c = r.chunks[i];
            assert!(c.last_tick >= tick && (i == 0 || r.chunks[i - 1].last_tick < tick), "{tick}: {c:?}");
        }
        assert_eq!(r.chunk_for(9000), None);
    }

    #[test]
    fn a_cut_demo_reads_up_to_its_last_whole_chunk() {
        let bytes = demo(600);
        let full = DemoReader::open(&bytes[..]).expect("opens");
        assert_eq!((full.cut, full.ends()), (None, None));
        let all: Vec<(u32, Vec<u8>)> =
            (0..full.chunks.len()).flat_map(|i| full.read_chunk(i).expect("chunk")).collect();
        // Where each chunk ends: at the next one, the last at the index.
        let ends: Vec<usize> =
            full.chunks.iter().skip(1).map(|c| c.offset as usize).chain([full.frames_end as usize]).collect();
        let header_end = full.chunks[0].offset as usize;
        let cuts = (0..bytes.len()).step_by(13).chain(ends.iter().flat_map(|&e| [e - 1, e, e + 1]));
        for len in cuts.chain([header_end, bytes.len() - 1]) {
            let cut = &bytes[..len];
            if len < header_end {
                match DemoReader::open(cut) {
                    Err(DemoError::Truncated { .. } | DemoError::NotADemo) => {}
                    other => panic!("cut at {len}, inside the header: {other:?}"),
                }
                continue;
            }
            let r = DemoReader::open(cut).unwrap_or_else(|e| panic!("cut at {len}: {e}"));
            let whole = ends.iter().filter(|&&e| e <= len).count();
            assert_eq!(r.chunks, full.chunks[..whole], "cut at {len}");
            let expected = DemoCut {
                whole_bytes: whole.checked_sub(1).map_or(header_end, |i| ends[i]) as u64,
                file_bytes: len as u64,
                last_tick: whole.checked_sub(1).map(|i| full.chunks[i].last_tick),
            };
            assert_eq!(r.cut, Some(expected), "cut at {len}");
            let frames: Vec<(u32, Vec<u8>)> = (0..whole).flat_map(|i| r.read_chunk(i).expect("chunk")).collect();
            assert_eq!(frames, all[..frames.len()], "cut at {len}");
            let said = r.ends().expect("where it ends");
            assert!(said.contains("did not finish") && said.contains(&format!("of {len}")), "{said}");
            if whole == 0 {
                let e = r.check_playable().expect_err("nothing to play");
                assert!(e.to_string().contains("cut before its first chunk"), "{e}");
            } else {
                r.check_playable().expect("playable");
            }
        }
        // Cut inside the third chunk: the sentence, in full (ticks go by
        // two at 64 a second, a chunk spans 64 ticks).
        let r = DemoReader::open(&bytes[..ends[1] + 50]).expect("opens");
        let said = r.ends().expect("where it ends");
        let whole_up_to = format!("whole up to tick 130, 0:02 into the match, byte {} of {}", ends[1], ends[1] + 50);
        assert_eq!(said, format!("cut short (the recording did not finish): {whole_up_to}"));
        // A file whose index and footer are all there but whose footer is
        // not one is damaged, not cut; so are bytes that are no chunk where
        // a chunk starts, and a whole chunk that fails its CRC.
        let mut footer = bytes.clone();
        let last = footer.len() - 1;
        footer[last] ^= 1;
        assert!(matches!(DemoReader::open(&footer[..]), Err(DemoError::Corrupt { .. })));
        let mut no_chunk = bytes[..ends[2] + 10].to_vec();
        no_chunk[ends[1]] ^= 1;
        assert!(matches!(DemoReader::open(&no_chunk[..]), Err(DemoError::Corrupt { .. })));
        let mut crc = bytes[..ends[2] + 10].to_vec();
        crc[ends[1] - 1] ^= 1;
        let e = DemoReader::open(&crc[..]).expect_err("damaged");
        assert!(e.to_string().contains("chunk 1 fails its CRC"), "{e}");
    }

    #[test]
    fn the_writer_leaves_the_header_and_each_second_on_disk_as_it_goes() {
        let path = std::env::temp_dir().join(format!("arena-demo-writer-{}.demo", std::process::id()));
        let file = std::fs::File::create(&path).expect("create");
        let mut w = DemoWriter::new(std::io::BufWriter::new(file), &header()).expect("header");
        let head = bincode::serde::encode_to_vec(header(), bincode::config::standard()).expect("encodes");
        let header_bytes = (DEMO_MAGIC.len() + 2 + 4 + head.len() + 4) as u64;
        let on_disk = || std::fs::read(&path).expect("read");
        assert_eq!(on_disk().len() as u64, header_bytes, "the header is on disk at once");
        let second = u32::from(header().tick_hz) * CHUNK_MAX_SECONDS;
        for tick in 0..second + 10 {
            w.push(tick, &frame(tick)).expect("frame");
            // Closed after the second's last tick: a keyframe a second (as
            // the recorder writes) starts every chunk.
            assert_eq!(w.buffered_bytes() == 0, tick + 1 == second, "tick {tick}");
        }
        // Without finish (a recorder killed now): the first second whole.
        let r = DemoReader::open(on_disk()).expect("a cut demo opens");
        assert_eq!(r.chunks, [ChunkEntry { offset: header_bytes, first_tick: 0, last_tick: second - 1 }]);
        assert_eq!(r.cut.and_then(|c| c.last_tick), Some(second - 1));
        assert_eq!(r.read_chunk(0).expect("chunk").len(), second as usize);
        drop(w);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn flipped_bits_are_caught_and_never_panic() {
        let bytes = demo(600);
        let good: Vec<(u32, Vec<u8>)> = {
            let r = DemoReader::open(&bytes[..]).expect("opens");
            (0..r.chunks.len()).flat_map(|i| r.read_chunk(i).expect("chunk")).collect()
        };
        let mut caught = 0;
        let mut flips = 0;
        for at in (0..bytes.len()).step_by(7) {
            for bit in [0u8, 3, 7] {
                let mut damaged = bytes.clone();
                damaged[at] ^= 1 << bit;
                flips += 1;
                // Either an error, or (a flip in a field nobody checks: the
                // index's copy of a tick it can tell from the chunk) the same.
                match DemoReader::open(&damaged[..]) {
                    Err(e) => {
                        assert!(!e.to_string().is_empty());
                        caught += 1;
                    }
                    Ok(r) => {
                        let frames: Result<Vec<_>, _> = (0..r.chunks.len()).map(|i| r.read_chunk(i)).collect();
                        match frames {
                            Err(_) => caught += 1,
                            Ok(frames) => {
                                assert_eq!(r.header, header(), "a flip of bit {bit} at {at} changed the header");
                                assert_eq!(frames.concat(), good, "a flip of bit {bit} at {at} went unseen");
                            }
                        }
                    }
                }
            }
        }
        assert!(caught as f64 > 0.95 * flips as f64, "{caught} of {flips} caught");
    }

    #[test]
    fn the_writer_stops_at_the_chunks_a_reader_takes() {
        let mut w = DemoWriter::new(Vec::new(), &header()).expect("header");
        for tick in 0..MAX_CHUNKS as u32 {
            w.push(tick, &[1]).expect("frame");
            w.flush_chunk().expect("chunk");
        }
        w.push(u32::MAX, &[1]).expect("frame");
        assert!(matches!(w.flush_chunk(), Err(DemoError::TooLarge { what: "chunk count", .. })));
    }

    #[test]
    fn hostile_lengths_are_refused_before_anything_is_allocated() {
        let bytes = demo(10);
        // A header that claims to be huge.
        let mut huge = bytes.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(DemoReader::open(&huge[..]), Err(DemoError::TooLarge { what: "header", .. })));
        // An index of a million chunks.
        let r = DemoReader::open(&bytes[..]).expect("opens");
        let index_at = r.frames_end as usize;
        let mut many = bytes.clone();
        many[index_at + 4..index_at + 8].copy_from_slice(&1_000_000u32.to_le_bytes());
        assert!(matches!(DemoReader::open(&many[..]), Err(DemoError::TooLarge { what: "chunk count", .. })));
        // A chunk that says it inflates to a gigabyte.
        let mut bomb = bytes.clone();
        let head = r.chunks[0].offset as usize;
        bomb[head + 8..head + 12].copy_from_slice(&(1u32 << 30).to_le_bytes());
        let r = DemoReader::open(&bomb[..]).expect("the index is intact");
        assert!(matches!(r.read_chunk(0), Err(DemoError::TooLarge { .. })));
        // Another format, and not a demo at all.
        let mut other = bytes.clone();
        other[10] = 9;
        assert!(matches!(DemoReader::open(&other[..]), Err(DemoError::UnsupportedFormat(9))));
        assert!(matches!(DemoReader::open(&b"GIF89a"[..]), Err(DemoError::NotADemo)));
    }
}
