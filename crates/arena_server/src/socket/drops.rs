//! What the datagram guard drops, by reason, and its counters since the
//! server started (the log's summary and tests read them).

use std::collections::BTreeMap;

use arena_protocol::datagram::Reject;
use arena_protocol::payload_guard::PayloadReject;

/// Why the guard dropped something, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The datagram's shape (see [`Reject`]).
    Shape(Reject),
    /// A connectionless datagram the server does not answer.
    Connectionless,
    /// Not a connection request, from an address that is neither pending nor connected.
    UnknownSender,
    /// Not a packet that address's state expects.
    Unexpected,
    /// More new connections (with tokens that open) from one address than its rate limit.
    RateLimited,
    /// More connection requests from one address (or in all) than the guard
    /// opens a second: most of them garbage.
    OpensLimited,
    /// The pending table is full.
    PendingFull,
    /// One address has [`super::guard::MAX_PENDING_PER_IP`] connections pending already.
    PendingPerAddress,
    /// A token that does not open with the server's key (a wrong password, or garbage).
    WrongKey,
    /// A token already used from another address.
    TokenReplayed,
    /// A connected client sending faster than any client does.
    Flood,
    /// An authenticated payload renet must not see (see [`PayloadReject`]).
    Payload(PayloadReject),
    /// An authenticated payload that is not a bundle of renet packets.
    Bundle,
    /// A payload from a connected client's address that netcode could not
    /// authenticate (forged, replayed, or corrupted on the way).
    Unauthenticated,
    /// A server query beyond its address's or the server's rate limit.
    QueryLimited,
    /// A `getinfo` from a stranger smaller than the answer: answering would
    /// amplify a flood sent with a forged address.
    WouldAmplify,
    /// A connection request from an address the console banned.
    Banned,
    /// A UDP datagram claiming a browser session's address (only the
    /// session itself speaks for one: `arena_udp::web_peer_addr`).
    ForgedWebPeer,
}

impl DropReason {
    pub fn label(self) -> &'static str {
        match self {
            DropReason::Shape(r) => r.label(),
            DropReason::Connectionless => "connectionless",
            DropReason::UnknownSender => "unknown sender",
            DropReason::Unexpected => "unexpected packet",
            DropReason::RateLimited => "rate limited",
            DropReason::OpensLimited => "too many requests to open",
            DropReason::PendingFull => "pending table full",
            DropReason::PendingPerAddress => "pending per address",
            DropReason::WrongKey => "wrong password",
            DropReason::TokenReplayed => "token replayed",
            DropReason::Flood => "client flooding",
            DropReason::Payload(r) => r.label(),
            DropReason::Unauthenticated => "unauthenticated",
            DropReason::Bundle => "bad bundle",
            DropReason::QueryLimited => "queries rate limited",
            DropReason::WouldAmplify => "getinfo smaller than its answer",
            DropReason::Banned => "banned address",
            DropReason::ForgedWebPeer => "forged web peer",
        }
    }
}

/// Totals since the server started, for tests, logs and the lab.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GuardCounters {
    pub datagrams: u64,
    pub dropped: BTreeMap<DropReason, u64>,
    /// Connectionless refusals sent (wrong password, wrong version).
    pub refusals_sent: u64,
    /// Clients disconnected for sending bad messages.
    pub disconnected_for_bad_messages: u64,
    /// Clients disconnected for silence.
    pub timed_out: u64,
    /// Server queries answered in full, and answered with a challenge.
    pub queries_answered: u64,
    pub query_challenges: u64,
    /// `getinfo` requests answered (from masters, and from others who sent
    /// a request at least as large as the answer).
    pub getinfo_answered: u64,
}

impl GuardCounters {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    pub fn dropped(&self, what: DropReason) -> u64 {
        self.dropped.get(&what).copied().unwrap_or(0)
    }
}
