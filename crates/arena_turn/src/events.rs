//! What an allocation tells its caller: events from the relay's datagrams,
//! and why a relay stopped, with STUN's error codes in words.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// Why a relay stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnError {
    /// No answer to a request through its whole retransmission schedule.
    TimedOut { request: &'static str },
    /// An error response: its code and the relay's reason phrase (cleaned,
    /// bounded).
    Refused { request: &'static str, code: u16, reason: String },
    /// A success response missing what it must carry.
    BadAnswer { request: &'static str },
}

impl TurnError {
    /// The STUN error code, if the relay answered with one.
    pub fn code(&self) -> Option<u16> {
        match self {
            TurnError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// An error code in words (RFC 8489 §14.8, RFC 8656 §18).
pub fn code_in_words(code: u16) -> &'static str {
    match code {
        300 => "try alternate server",
        400 => "bad request",
        401 => "unauthorized (credentials refused or expired)",
        403 => "forbidden (the relay denies that peer)",
        420 => "unknown attribute",
        437 => "allocation mismatch (the relay has no such allocation)",
        438 => "stale nonce",
        440 => "address family not supported",
        441 => "wrong credentials",
        442 => "unsupported transport protocol",
        443 => "peer address family mismatch",
        486 => "allocation quota reached",
        500 => "server error",
        508 => "insufficient capacity",
        _ => "error",
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnError::TimedOut { request } => write!(f, "the relay did not answer {request}"),
            TurnError::Refused { request, code, reason } => {
                write!(f, "the relay refused {request}: {code} {}", code_in_words(*code))?;
                if !reason.is_empty() {
                    write!(f, " (\"{reason}\")")?;
                }
                Ok(())
            }
            TurnError::BadAnswer { request } => write!(f, "the relay's answer to {request} is incomplete"),
        }
    }
}

impl std::error::Error for TurnError {}

/// What a datagram from the relay meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An allocation exists (again, after a 437: the address may differ).
    Allocated { relayed: SocketAddr, mapped: Option<SocketAddr> },
    /// A datagram from a permitted peer, relayed.
    Data { peer: SocketAddr, payload: Vec<u8> },
    /// The relay refused a permission (or a channel) for this peer.
    PermissionRefused { peer_ip: IpAddr, code: u16 },
    /// The relay is lost (see [`TurnError`]); nothing more will happen.
    Failed(TurnError),
}
