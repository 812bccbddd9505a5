//! The datagram guard's rules: what a netcode.io packet must look like before
//! renetcode may parse it, how a connection request's private token is opened
//! and sealed again with the values the server chooses, and the small
//! connectionless refusal a server sends a client it will not let in.
//!
//! renetcode 2.0.0 (the newest release) panics on some malformed packets, all
//! before it authenticates them: a sequence length above 8 slices past an
//! 8-byte array, a packet shorter than its MAC underflows a subtraction, and a
//! sequence near `u64::MAX` overflows the replay window. [`check`] rejects
//! every such datagram, so that renetcode only ever sees packets of the exact
//! shape and size it was written for.
//!
//! Layout (netcode.io 1.02, as renetcode writes it): a prefix byte (packet
//! type in the low nibble, sequence length in the high nibble), then for a
//! connection request the version, protocol id, expiry, nonce and the 1024-byte
//! encrypted private token; for every other packet the sequence (0-8 bytes,
//! little-endian), the encrypted body and a 16-byte MAC.

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};

use crate::key::NetcodeKey;

/// Largest datagram either side accepts, bytes (netcode's packet limit).
pub const MAX_DATAGRAM_BYTES: usize = 1400;
/// Connectionless datagrams (server queries and refusals) start with this.
pub const CONNECTIONLESS_PREFIX: [u8; 4] = [0xFF; 4];
/// netcode's version string, with its terminating zero.
pub const VERSION_INFO: &[u8; 13] = b"NETCODE 1.02\0";
const MAC_BYTES: usize = 16;
const XNONCE_BYTES: usize = 24;
const PRIVATE_TOKEN_BYTES: usize = 1024;
const CHALLENGE_TOKEN_BYTES: usize = 300;
/// Most payload bytes netcode carries in one packet.
pub const MAX_PAYLOAD_BYTES: usize = 1300;
/// A connection request's size, bytes: prefix, version, protocol id, expiry,
/// nonce and private token.
pub const CONNECTION_REQUEST_BYTES: usize = 1 + 13 + 8 + 8 + XNONCE_BYTES + PRIVATE_TOKEN_BYTES;
/// Highest packet sequence number let through. A real session never gets
/// near it (2^62 packets); renetcode's replay window adds 256 to a sequence,
/// which must not overflow.
pub const MAX_SEQUENCE: u64 = 1 << 62;

const EXPIRE_AT: usize = 1 + 13 + 8;
const XNONCE_AT: usize = EXPIRE_AT + 8;
const TOKEN_AT: usize = XNONCE_AT + XNONCE_BYTES;

/// netcode's packet types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketKind {
    ConnectionRequest,
    ConnectionDenied,
    Challenge,
    Response,
    KeepAlive,
    Payload,
    Disconnect,
}

impl PacketKind {
    fn from_nibble(value: u8) -> Option<Self> {
        Some(match value {
            0 => PacketKind::ConnectionRequest,
            1 => PacketKind::ConnectionDenied,
            2 => PacketKind::Challenge,
            3 => PacketKind::Response,
            4 => PacketKind::KeepAlive,
            5 => PacketKind::Payload,
            6 => PacketKind::Disconnect,
            _ => return None,
        })
    }

    /// Whether a server may receive it (the others only go to clients).
    pub fn to_server(self) -> bool {
        matches!(
            self,
            PacketKind::ConnectionRequest
                | PacketKind::Response
                | PacketKind::KeepAlive
                | PacketKind::Payload
                | PacketKind::Disconnect
        )
    }

    /// Whether a client may receive it.
    pub fn to_client(self) -> bool {
        matches!(
            self,
            PacketKind::ConnectionDenied
                | PacketKind::Challenge
                | PacketKind::KeepAlive
                | PacketKind::Payload
                | PacketKind::Disconnect
        )
    }

    /// The size of the encrypted body between the sequence and the MAC:
    /// exact, or a range for payloads.
    fn body_bytes(self) -> std::ops::RangeInclusive<usize> {
        match self {
            PacketKind::ConnectionDenied | PacketKind::Disconnect => 0..=0,
            PacketKind::Challenge | PacketKind::Response => 8 + CHALLENGE_TOKEN_BYTES..=8 + CHALLENGE_TOKEN_BYTES,
            PacketKind::KeepAlive => 8..=8,
            PacketKind::Payload => 1..=MAX_PAYLOAD_BYTES,
            PacketKind::ConnectionRequest => 0..=0,
        }
    }
}

/// Which way a datagram travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ToServer,
    ToClient,
}

/// Why a datagram was dropped before netcode saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reject {
    Empty,
    TooLarge,
    /// A packet type netcode does not have.
    UnknownType,
    /// A type that only travels the other way.
    WrongDirection,
    /// More than 8 sequence bytes, or any on a connection request.
    BadSequenceLength,
    /// Not the size its type must have.
    BadLength,
    SequenceTooHigh,
    /// A connection request from another netcode version.
    WrongVersion,
    /// A connection request from another build of Arena (another protocol id).
    WrongProtocol,
}

impl Reject {
    pub fn label(self) -> &'static str {
        match self {
            Reject::Empty => "empty",
            Reject::TooLarge => "too large",
            Reject::UnknownType => "unknown type",
            Reject::WrongDirection => "wrong direction",
            Reject::BadSequenceLength => "bad sequence length",
            Reject::BadLength => "bad length",
            Reject::SequenceTooHigh => "sequence too high",
            Reject::WrongVersion => "wrong netcode version",
            Reject::WrongProtocol => "wrong protocol id",
        }
    }
}

/// What a datagram that passed [`check`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    pub kind: PacketKind,
    /// The packet's sequence number (0 for a connection request).
    pub sequence: u64,
}

/// Checks a netcode datagram's shape: its type, that the type travels this
/// way, its sequence length (at most 8; renetcode writes sequence 0 in zero
/// bytes, so 0 is allowed), its size for its type, its sequence number, and
/// for a connection request the version and protocol id. Nothing is decrypted.
pub fn check(bytes: &[u8], direction: Direction, protocol_id: u64) -> Result<Checked, Reject> {
    let Some(&prefix) = bytes.first() else { return Err(Reject::Empty) };
    if bytes.len() > MAX_DATAGRAM_BYTES {
        return Err(Reject::TooLarge);
    }
    let kind = PacketKind::from_nibble(prefix & 0x0F).ok_or(Reject::UnknownType)?;
    let allowed = match direction {
        Direction::ToServer => kind.to_server(),
        Direction::ToClient => kind.to_client(),
    };
    if !allowed {
        return Err(Reject::WrongDirection);
    }
    let sequence_len = usize::from(prefix >> 4);
    if kind == PacketKind::ConnectionRequest {
        if sequence_len != 0 {
            return Err(Reject::BadSequenceLength);
        }
        if bytes.len() != CONNECTION_REQUEST_BYTES {
            return Err(Reject::BadLength);
        }
        if &bytes[1..14] != VERSION_INFO {
            return Err(Reject::WrongVersion);
        }
        if read_u64(&bytes[14..22]) != protocol_id {
            return Err(Reject::WrongProtocol);
        }
        return Ok(Checked { kind, sequence: 0 });
    }
    if sequence_len > 8 {
        return Err(Reject::BadSequenceLength);
    }
    let body = bytes.len().checked_sub(1 + sequence_len + MAC_BYTES).ok_or(Reject::BadLength)?;
    if !kind.body_bytes().contains(&body) {
        return Err(Reject::BadLength);
    }
    let mut sequence = [0u8; 8];
    sequence[..sequence_len].copy_from_slice(&bytes[1..1 + sequence_len]);
    let sequence = u64::from_le_bytes(sequence);
    if sequence > MAX_SEQUENCE {
        return Err(Reject::SequenceTooHigh);
    }
    Ok(Checked { kind, sequence })
}

fn read_u64(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(b)
}

/// What a connection request's token claimed before the server resealed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenClaims {
    /// The token's MAC as sent: the same token sent again has the same one.
    pub mac: [u8; MAC_BYTES],
    pub client_id: u64,
    pub timeout_s: i32,
    pub expire_timestamp: u64,
}

/// Why a connection request's token could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Not a connection request of the right size.
    NotARequest,
    /// It does not decrypt with this key: a wrong password, or garbage.
    WrongKey,
}

/// What the server decides for a connection, whatever its token said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerTerms {
    pub client_id: u64,
    pub timeout_s: i32,
    /// Unix time (seconds) after which the pending connection is dropped.
    pub expire_timestamp: u64,
}

fn token_aad(protocol_id: u64, expire_timestamp: u64) -> [u8; 13 + 8 + 8] {
    let mut aad = [0u8; 29];
    aad[..13].copy_from_slice(VERSION_INFO);
    aad[13..21].copy_from_slice(&protocol_id.to_le_bytes());
    aad[21..29].copy_from_slice(&expire_timestamp.to_le_bytes());
    aad
}

/// Opens the private token of a connection request (already [`check`]ed)
/// with `key`, writes the server's `terms` into it (client id, timeout and
/// expiry), and seals it again with `inner_key`, in place. The resealed
/// request goes only to the server's own netcode layer, never on the wire.
/// Returns what the token claimed.
pub fn reseal_connection_request(
    request: &mut [u8],
    key: &NetcodeKey,
    inner_key: &NetcodeKey,
    protocol_id: u64,
    terms: ServerTerms,
) -> Result<TokenClaims, TokenError> {
    if request.len() != CONNECTION_REQUEST_BYTES {
        return Err(TokenError::NotARequest);
    }
    let claimed_expire = read_u64(&request[EXPIRE_AT..EXPIRE_AT + 8]);
    let mut xnonce = [0u8; XNONCE_BYTES];
    xnonce.copy_from_slice(&request[XNONCE_AT..XNONCE_AT + XNONCE_BYTES]);
    let xnonce = XNonce::from(xnonce);
    let mut token = [0u8; PRIVATE_TOKEN_BYTES];
    token.copy_from_slice(&request[TOKEN_AT..]);
    let (plain, tag) = token.split_at_mut(PRIVATE_TOKEN_BYTES - MAC_BYTES);
    let mut mac = [0u8; MAC_BYTES];
    mac.copy_from_slice(tag);
    let cipher = XChaCha20Poly1305::new(key.into());
    cipher
        .decrypt_in_place_detached(&xnonce, &token_aad(protocol_id, claimed_expire), plain, Tag::from_slice(&mac))
        .map_err(|_| TokenError::WrongKey)?;
    let claims = TokenClaims {
        mac,
        client_id: read_u64(&plain[0..8]),
        timeout_s: i32::from_le_bytes([plain[8], plain[9], plain[10], plain[11]]),
        expire_timestamp: claimed_expire,
    };
    plain[0..8].copy_from_slice(&terms.client_id.to_le_bytes());
    plain[8..12].copy_from_slice(&terms.timeout_s.to_le_bytes());
    let inner = XChaCha20Poly1305::new(inner_key.into());
    // The nonce is reused on purpose: the resealed token never leaves this
    // process, so nobody ever sees two ciphertexts under one nonce.
    let new_tag = inner
        .encrypt_in_place_detached(&xnonce, &token_aad(protocol_id, terms.expire_timestamp), plain)
        .map_err(|_| TokenError::WrongKey)?;
    request[EXPIRE_AT..EXPIRE_AT + 8].copy_from_slice(&terms.expire_timestamp.to_le_bytes());
    request[TOKEN_AT..TOKEN_AT + PRIVATE_TOKEN_BYTES - MAC_BYTES].copy_from_slice(plain);
    request[TOKEN_AT + PRIVATE_TOKEN_BYTES - MAC_BYTES..].copy_from_slice(&new_tag);
    Ok(claims)
}

/// Why a server refused a connection request before netcode saw it, told to
/// the client in a connectionless datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The token did not open with the server's key. `server_has_password`
    /// tells a client with no password ("this server needs one") from one
    /// with a wrong one, or with one for an open server.
    PasswordMismatch { server_has_password: bool },
    /// Another build of Arena.
    WrongVersion,
}

/// A refusal's header: the connectionless prefix, 'z', "ARENA".
const REFUSAL_HEADER: [u8; 10] = [0xFF, 0xFF, 0xFF, 0xFF, b'z', b'A', b'R', b'E', b'N', b'A'];
/// A refusal's size, bytes: far smaller than the request it answers, so it
/// cannot amplify a flood sent with a forged source address.
pub const REFUSAL_BYTES: usize = REFUSAL_HEADER.len() + 1;

impl Refusal {
    pub fn encode(self) -> [u8; REFUSAL_BYTES] {
        let mut out = [0u8; REFUSAL_BYTES];
        out[..REFUSAL_HEADER.len()].copy_from_slice(&REFUSAL_HEADER);
        out[REFUSAL_HEADER.len()] = match self {
            Refusal::PasswordMismatch { server_has_password: false } => 1,
            Refusal::PasswordMismatch { server_has_password: true } => 2,
            Refusal::WrongVersion => 3,
        };
        out
    }

    /// Reads a refusal; anything else (including other connectionless
    /// datagrams) is `None`.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != REFUSAL_BYTES || bytes[..REFUSAL_HEADER.len()] != REFUSAL_HEADER {
            return None;
        }
        match bytes[REFUSAL_HEADER.len()] {
            1 => Some(Refusal::PasswordMismatch { server_has_password: false }),
            2 => Some(Refusal::PasswordMismatch { server_has_password: true }),
            3 => Some(Refusal::WrongVersion),
            _ => None,
        }
    }

    /// Why, in words for the player who did (`gave_password`) or did not
    /// type a password: a clause to follow "the server refused to let you in: ".
    pub fn explain(self, gave_password: bool) -> String {
        match self {
            Refusal::PasswordMismatch { server_has_password: true } if gave_password => "wrong password".into(),
            Refusal::PasswordMismatch { server_has_password: true } => {
                "the game is private and needs a password".into()
            }
            Refusal::PasswordMismatch { server_has_password: false } => {
                "the game has no password; join it without one".into()
            }
            Refusal::WrongVersion => "it runs another version of Arena".into(),
        }
    }
}

/// Whether a datagram is connectionless (a query or a refusal) rather than netcode.
pub fn is_connectionless(bytes: &[u8]) -> bool {
    bytes.starts_with(&CONNECTIONLESS_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTOCOL: u64 = 0x1234;

    fn request() -> [u8; CONNECTION_REQUEST_BYTES] {
        let mut r = [0u8; CONNECTION_REQUEST_BYTES];
        r[1..14].copy_from_slice(VERSION_INFO);
        r[14..22].copy_from_slice(&PROTOCOL.to_le_bytes());
        r
    }

    /// What netcode.io (as renetcode 2.0.0 writes it) allows for a datagram
    /// of `len` bytes after the prefix byte `prefix`, every other byte 0xA5,
    /// written from the standard's table rather than from [`check`]: the
    /// packet types and which way each travels, the encrypted body's size
    /// of each (renetcode's payload limit is 1300 bytes), a 16-byte MAC, at
    /// most 8 sequence bytes, and a connection request of exactly 1078
    /// bytes whose version string (0xA5 bytes are not one) is checked.
    fn standard(prefix: u8, len: usize, direction: Direction) -> Result<Checked, Reject> {
        if len == 0 {
            return Err(Reject::Empty);
        }
        if len > 1400 {
            return Err(Reject::TooLarge);
        }
        let (kind, to_server, to_client, body) = match prefix & 0x0F {
            0 => (PacketKind::ConnectionRequest, true, false, 0..=0),
            1 => (PacketKind::ConnectionDenied, false, true, 0..=0),
            2 => (PacketKind::Challenge, false, true, 308..=308),
            3 => (PacketKind::Response, true, false, 308..=308),
            4 => (PacketKind::KeepAlive, true, true, 8..=8),
            5 => (PacketKind::Payload, true, true, 1..=1300),
            6 => (PacketKind::Disconnect, true, true, 0..=0),
            _ => return Err(Reject::UnknownType),
        };
        if !(if direction == Direction::ToServer { to_server } else { to_client }) {
            return Err(Reject::WrongDirection);
        }
        let sequence_bytes = usize::from(prefix >> 4);
        if kind == PacketKind::ConnectionRequest {
            return Err(if sequence_bytes != 0 {
                Reject::BadSequenceLength
            } else if len != 1078 {
                Reject::BadLength
            } else {
                Reject::WrongVersion
            });
        }
        if sequence_bytes > 8 {
            return Err(Reject::BadSequenceLength);
        }
        if len < 1 + sequence_bytes + 16 || !body.contains(&(len - 1 - sequence_bytes - 16)) {
            return Err(Reject::BadLength);
        }
        // 0xA5 repeated: above 2^62 only when all 8 bytes are there.
        let sequence = (0..sequence_bytes).fold(0u64, |s, i| s | 0xA5u64 << (8 * i));
        if sequence_bytes == 8 {
            return Err(Reject::SequenceTooHigh);
        }
        Ok(Checked { kind, sequence })
    }

    #[test]
    fn every_prefix_and_length_is_judged_as_the_standard_says() {
        let mut buf = vec![0xA5u8; MAX_DATAGRAM_BYTES + 10];
        let mut passed = 0;
        for prefix in 0..=255u8 {
            buf[0] = prefix;
            for len in 0..buf.len() {
                for direction in [Direction::ToServer, Direction::ToClient] {
                    let verdict = check(&buf[..len], direction, PROTOCOL);
                    assert_eq!(verdict, standard(prefix, len, direction), "prefix {prefix:#04x}, {len} bytes");
                    passed += usize::from(verdict.is_ok());
                }
            }
        }
        // Behind 0-7 sequence bytes: payloads of 1..=1300 bytes, keep-alives
        // and disconnects both ways; challenges and denials to a client,
        // responses to a server.
        assert_eq!(passed, 8 * (2 * 1300 + 2 * 2 + 3));
    }

    #[test]
    fn shapes_renetcode_would_panic_on_are_refused() {
        // Sequence length 15.
        assert_eq!(check(&[0xF5; 40], Direction::ToServer, PROTOCOL), Err(Reject::BadSequenceLength));
        // Shorter than its MAC.
        assert_eq!(
            check(&[0x85, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], Direction::ToServer, PROTOCOL),
            Err(Reject::BadLength)
        );
        // Sequence u64::MAX.
        let mut max = vec![0x85u8];
        max.extend_from_slice(&u64::MAX.to_le_bytes());
        max.extend_from_slice(&[0; 1 + MAC_BYTES]);
        assert_eq!(check(&max, Direction::ToServer, PROTOCOL), Err(Reject::SequenceTooHigh));
        // The same with a sane sequence passes.
        max[1..9].copy_from_slice(&7u64.to_le_bytes());
        assert_eq!(check(&max, Direction::ToServer, PROTOCOL), Ok(Checked { kind: PacketKind::Payload, sequence: 7 }));
    }

    #[test]
    fn types_only_travel_their_way_and_sizes_are_exact() {
        let keep_alive = [&[0x14u8, 3][..], &[0; 8 + MAC_BYTES]].concat();
        assert!(check(&keep_alive, Direction::ToServer, PROTOCOL).is_ok());
        assert!(check(&keep_alive[..keep_alive.len() - 1], Direction::ToServer, PROTOCOL).is_err());
        let challenge = [&[0x12u8, 3][..], &[0; 308 + MAC_BYTES]].concat();
        assert_eq!(check(&challenge, Direction::ToServer, PROTOCOL), Err(Reject::WrongDirection));
        assert!(check(&challenge, Direction::ToClient, PROTOCOL).is_ok());
        assert_eq!(check(&request(), Direction::ToClient, PROTOCOL), Err(Reject::WrongDirection));
        assert!(check(&request(), Direction::ToServer, PROTOCOL).is_ok());
        assert_eq!(check(&request(), Direction::ToServer, PROTOCOL + 1), Err(Reject::WrongProtocol));
        assert_eq!(check(&[0x07; 30], Direction::ToServer, PROTOCOL), Err(Reject::UnknownType));
    }

    #[test]
    fn a_resealed_token_opens_with_the_inner_key_and_carries_the_server_terms() {
        let key = [7u8; 32];
        let inner = [0u8; 32];
        let mut r = request();
        let expire = 1_000u64;
        r[EXPIRE_AT..EXPIRE_AT + 8].copy_from_slice(&expire.to_le_bytes());
        let mut plain = [0u8; PRIVATE_TOKEN_BYTES];
        plain[0..8].copy_from_slice(&99u64.to_le_bytes());
        plain[8..12].copy_from_slice(&(-1i32).to_le_bytes());
        let xnonce = XNonce::from([3u8; XNONCE_BYTES]);
        r[XNONCE_AT..XNONCE_AT + XNONCE_BYTES].copy_from_slice(&xnonce);
        let (body, _) = plain.split_at_mut(PRIVATE_TOKEN_BYTES - MAC_BYTES);
        let tag = XChaCha20Poly1305::new((&key).into())
            .encrypt_in_place_detached(&xnonce, &token_aad(PROTOCOL, expire), body)
            .expect("encrypts");
        r[TOKEN_AT..TOKEN_AT + PRIVATE_TOKEN_BYTES - MAC_BYTES].copy_from_slice(body);
        r[TOKEN_AT + PRIVATE_TOKEN_BYTES - MAC_BYTES..].copy_from_slice(&tag);

        let terms = ServerTerms { client_id: 5, timeout_s: 10, expire_timestamp: 500 };
        assert_eq!(
            reseal_connection_request(&mut r.clone(), &[8; 32], &inner, PROTOCOL, terms),
            Err(TokenError::WrongKey)
        );
        let claims = reseal_connection_request(&mut r, &key, &inner, PROTOCOL, terms).expect("opens");
        assert_eq!((claims.client_id, claims.timeout_s, claims.expire_timestamp), (99, -1, 1_000));
        // It now opens with the inner key and says what the server decided.
        let again = ServerTerms { client_id: 6, timeout_s: 10, expire_timestamp: 600 };
        let resealed = reseal_connection_request(&mut r, &inner, &inner, PROTOCOL, again).expect("opens");
        assert_eq!((resealed.client_id, resealed.timeout_s, resealed.expire_timestamp), (5, 10, 500));
    }

    #[test]
    fn refusals_round_trip_and_nothing_else_reads_as_one() {
        for r in [
            Refusal::PasswordMismatch { server_has_password: true },
            Refusal::PasswordMismatch { server_has_password: false },
            Refusal::WrongVersion,
        ] {
            assert_eq!(Refusal::decode(&r.encode()), Some(r));
            assert!(r.encode().len() < CONNECTION_REQUEST_BYTES / 10);
        }
        assert_eq!(Refusal::decode(&[0xFF; REFUSAL_BYTES]), None);
        assert!(is_connectionless(&Refusal::WrongVersion.encode()));
    }
}
