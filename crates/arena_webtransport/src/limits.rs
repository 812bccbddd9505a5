//! What the endpoint allows a stranger and what it counts: the caps on
//! sessions, buffers, frames and page requests, and the counters summed up
//! in the log every [`SUMMARY_INTERVAL`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sessions (open or in their handshake) from one real address (an IPv6
/// address's /64) at once: a LAN party behind one NAT, and not a flood.
pub const MAX_SESSIONS_PER_IP: usize = 8;
/// Handshakes under way at once beyond which a new address must first
/// prove it receives at its address (QUIC's Retry): a flood from forged
/// addresses then costs a packet each, not a handshake.
pub(crate) const RETRY_ABOVE_HANDSHAKES: usize = 4;
/// Longest a QUIC handshake and the WebTransport CONNECT may take.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// A session from which nothing (no datagram, no frame) came for this long
/// is closed: netcode's own timeout is shorter, so a live player never
/// meets it, and a stalled one does not hold its place.
pub const SILENT_SESSION_TIMEOUT: Duration = Duration::from_secs(15);
/// The UDP payload of every QUIC packet the endpoint sends: QUIC's own
/// minimum (RFC 9000 14.1), which every path carries.
pub(crate) const QUIC_PACKET_BYTES: u16 = 1200;
/// A session whose peer has not become a netcode client this long after it
/// opened is closed: a session costs a place of the endpoint's, and only a
/// player (who passed the guard and netcode, password and all) may keep
/// one. The guard's own pending connections last 5 s; a page on a slow
/// machine takes a few frames to finish its handshake.
pub const ADMIT_TIMEOUT: Duration = Duration::from_secs(10);
/// QUIC's own idle timeout (nothing at all, not even its keep-alives).
pub(crate) const QUIC_IDLE_TIMEOUT: Duration = Duration::from_secs(20);
/// Datagrams received from all sessions and not yet read by the game,
/// at most (a second of 64 players at 64 Hz); beyond it they are dropped.
pub(crate) const MAX_INBOX: usize = 4096;
/// Frames waiting to go out on one session's stream, at most (beyond it a
/// datagram is dropped as a full socket drops it).
pub(crate) const MAX_QUEUED_FRAMES: usize = 64;
/// Longest one frame's write may wait for the peer's flow control.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// QUIC's receive windows: a session's stream carries a frame of at most
/// 1402 bytes at a time, so a few KiB in flight is plenty.
pub(crate) const STREAM_RECEIVE_WINDOW: u32 = 64 * 1024;
pub(crate) const CONNECTION_RECEIVE_WINDOW: u32 = 256 * 1024;
pub(crate) const DATAGRAM_RECEIVE_BUFFER: usize = 128 * 1024;
/// Streams a peer may open: HTTP/3 needs three unidirectional ones (control
/// and QPACK's two) and one request stream; Arena's framing one more.
pub(crate) const MAX_UNI_STREAMS: u32 = 8;
pub(crate) const MAX_BIDI_STREAMS: u32 = 4;
/// The path a session asks for (`https://HOST:PORT/arena`).
pub use arena_protocol::web_link::SESSION_PATH;

/// Page connections at once in all, and from one address.
pub(crate) const MAX_HTTP_CONNECTIONS: usize = 64;
pub(crate) const MAX_HTTP_CONNECTIONS_PER_IP: usize = 8;
/// A request's head (request line and headers), bytes and headers at most.
pub(crate) const MAX_REQUEST_BYTES: usize = 8 * 1024;
pub(crate) const MAX_HEADERS: usize = 64;
/// Longest a page connection may take to send its request head, and to
/// take the answer.
pub(crate) const HTTP_READ_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const HTTP_WRITE_TIMEOUT: Duration = Duration::from_secs(120);

/// How often the counters are summed up in the log (when any moved).
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(10);

/// Everything the endpoint counts, from every thread.
#[derive(Debug, Default)]
pub struct Counters {
    pub sessions_opened: AtomicU64,
    pub sessions_closed: AtomicU64,
    pub refused_per_ip: AtomicU64,
    pub refused_full: AtomicU64,
    pub refused_banned: AtomicU64,
    pub refused_path: AtomicU64,
    pub retries: AtomicU64,
    pub handshakes_failed: AtomicU64,
    pub timed_out: AtomicU64,
    /// Sessions closed because their peer never became a netcode client.
    pub not_admitted: AtomicU64,
    pub datagrams_in: AtomicU64,
    pub datagrams_out: AtomicU64,
    pub frames_in: AtomicU64,
    pub frames_out: AtomicU64,
    /// Received datagrams or frames over netcode's largest datagram.
    pub dropped_too_long: AtomicU64,
    /// Datagrams to send that neither fitted a datagram nor found room on
    /// the stream: what a browser's size limit cost.
    pub dropped_for_size: AtomicU64,
    pub dropped_inbox_full: AtomicU64,
    pub broken_streams: AtomicU64,
    pub extra_streams: AtomicU64,
    pub http_served: AtomicU64,
    pub http_refused: AtomicU64,
    pub http_connections_refused: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub sessions_opened: u64,
    pub sessions_closed: u64,
    pub refused_per_ip: u64,
    pub refused_full: u64,
    pub refused_banned: u64,
    pub refused_path: u64,
    pub retries: u64,
    pub handshakes_failed: u64,
    pub timed_out: u64,
    pub not_admitted: u64,
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    pub frames_in: u64,
    pub frames_out: u64,
    pub dropped_too_long: u64,
    pub dropped_for_size: u64,
    pub dropped_inbox_full: u64,
    pub broken_streams: u64,
    pub extra_streams: u64,
    pub http_served: u64,
    pub http_refused: u64,
    pub http_connections_refused: u64,
}

pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    pub fn tally(&self) -> Tally {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Tally {
            sessions_opened: get(&self.sessions_opened),
            sessions_closed: get(&self.sessions_closed),
            refused_per_ip: get(&self.refused_per_ip),
            refused_full: get(&self.refused_full),
            refused_banned: get(&self.refused_banned),
            refused_path: get(&self.refused_path),
            retries: get(&self.retries),
            handshakes_failed: get(&self.handshakes_failed),
            timed_out: get(&self.timed_out),
            not_admitted: get(&self.not_admitted),
            datagrams_in: get(&self.datagrams_in),
            datagrams_out: get(&self.datagrams_out),
            frames_in: get(&self.frames_in),
            frames_out: get(&self.frames_out),
            dropped_too_long: get(&self.dropped_too_long),
            dropped_for_size: get(&self.dropped_for_size),
            dropped_inbox_full: get(&self.dropped_inbox_full),
            broken_streams: get(&self.broken_streams),
            extra_streams: get(&self.extra_streams),
            http_served: get(&self.http_served),
            http_refused: get(&self.http_refused),
            http_connections_refused: get(&self.http_connections_refused),
        }
    }
}

impl Tally {
    /// The log's summary of what changed since `before`, with the sessions
    /// open now; `None` when nothing did.
    pub fn summary(&self, before: &Tally, open: usize) -> Option<String> {
        if self == before {
            return None;
        }
        let d = |now: u64, then: u64| now.saturating_sub(then);
        let refused = d(self.refused_per_ip, before.refused_per_ip)
            + d(self.refused_full, before.refused_full)
            + d(self.refused_banned, before.refused_banned)
            + d(self.refused_path, before.refused_path);
        let dropped = d(self.dropped_too_long, before.dropped_too_long)
            + d(self.dropped_for_size, before.dropped_for_size)
            + d(self.dropped_inbox_full, before.dropped_inbox_full);
        Some(format!(
            "web: {open} sessions open; in the last {}s {} opened, {} closed ({} silent, {} never joined), {} refused \
             ({} per-address cap, {} full, {} banned, {} wrong path), {} retries, {} handshakes failed; \
             datagrams {} in, {} out; frames {} in, {} out; dropped {} (too long {}, for size {}, inbox full {}); \
             {} broken streams, {} extra streams; page: {} served, {} refused, {} connections refused",
            SUMMARY_INTERVAL.as_secs(),
            d(self.sessions_opened, before.sessions_opened),
            d(self.sessions_closed, before.sessions_closed),
            d(self.timed_out, before.timed_out),
            d(self.not_admitted, before.not_admitted),
            refused,
            d(self.refused_per_ip, before.refused_per_ip),
            d(self.refused_full, before.refused_full),
            d(self.refused_banned, before.refused_banned),
            d(self.refused_path, before.refused_path),
            d(self.retries, before.retries),
            d(self.handshakes_failed, before.handshakes_failed),
            d(self.datagrams_in, before.datagrams_in),
            d(self.datagrams_out, before.datagrams_out),
            d(self.frames_in, before.frames_in),
            d(self.frames_out, before.frames_out),
            dropped,
            d(self.dropped_too_long, before.dropped_too_long),
            d(self.dropped_for_size, before.dropped_for_size),
            d(self.dropped_inbox_full, before.dropped_inbox_full),
            d(self.broken_streams, before.broken_streams),
            d(self.extra_streams, before.extra_streams),
            d(self.http_served, before.http_served),
            d(self.http_refused, before.http_refused),
            d(self.http_connections_refused, before.http_connections_refused),
        ))
    }
}
