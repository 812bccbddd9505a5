//! The dpmaster protocol's datagrams (dpmaster's `doc/techinfo.txt`, section
//! 3), both ways, pure: `heartbeat`, `getinfo`, `infoResponse`, `getservers`
//! and `getserversExt`, and their responses. Every parser takes untrusted
//! bytes: bounded, and an error, never a panic, for anything else.
//!
//! Every datagram starts with `FF FF FF FF` and its command in text.
//! Addresses in server lists are binary (4 or 16 bytes and a big-endian
//! port), so they are read by position, never split on separators (an
//! address may contain the separator bytes `\` and `/`).

use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The prefix of every dpmaster datagram.
pub const PREFIX: [u8; 4] = [0xFF; 4];
/// Largest datagram sent, and largest read, bytes.
pub const MAX_DATAGRAM_BYTES: usize = 1400;
/// The protocol tag of a heartbeat from a game that names itself (as
/// dpmaster asks every game but Quake 3's family to send).
pub const HEARTBEAT_TAG: &str = "DarkPlaces";
/// A master's UDP port.
pub const DEFAULT_PORT: u16 = 27950;
/// Arena's game name on masters.
pub const GAME: &str = "Arena";

/// Most pairs of an infostring, and longest key and value, bytes.
pub const MAX_INFO_PAIRS: usize = 64;
pub const MAX_INFO_KEY_BYTES: usize = 64;
pub const MAX_INFO_VALUE_BYTES: usize = 256;
/// Longest game name, bytes (dpmaster's limit).
pub const MAX_GAME_BYTES: usize = 63;
/// Most words of a list request looked at (the rest is padding).
const MAX_QUERY_TOKENS: usize = 64;

const HEARTBEAT: &[u8] = b"heartbeat";
const GETINFO: &[u8] = b"getinfo";
const INFO_RESPONSE: &[u8] = b"infoResponse\n";
const GETSERVERS: &[u8] = b"getservers ";
const GETSERVERS_EXT: &[u8] = b"getserversExt ";
const RESPONSE: &[u8] = b"getserversResponse";
const EXT_RESPONSE: &[u8] = b"getserversExtResponse";
/// The fake IPv4 entry that ends a list.
const EOT: &[u8; 6] = b"EOT\0\0\0";

/// Why a datagram is not a dpmaster message this side reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Not starting with `FF FF FF FF`.
    NotMaster,
    /// A command this side does not handle.
    Unknown,
    /// Over [`MAX_DATAGRAM_BYTES`].
    TooLong,
    /// Not in the command's syntax.
    Syntax,
    /// A list request without a game name (an anonymous Quake 3 one).
    NoGame,
    /// An infostring with a bad key, value, count or a duplicate key.
    BadInfoString,
    /// A challenge outside the allowed characters or length.
    BadChallenge,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireError::NotMaster => "not a master-protocol datagram",
            WireError::Unknown => "a command that is not handled",
            WireError::TooLong => "longer than 1400 bytes",
            WireError::Syntax => "not in the command's syntax",
            WireError::NoGame => "a list request without a game name",
            WireError::BadInfoString => "a malformed infostring",
            WireError::BadChallenge => "a malformed challenge",
        })
    }
}

impl std::error::Error for WireError {}

/// The text after the prefix, if the datagram has it and is not too long.
fn body(datagram: &[u8]) -> Result<&[u8], WireError> {
    if datagram.len() > MAX_DATAGRAM_BYTES {
        return Err(WireError::TooLong);
    }
    datagram.strip_prefix(&PREFIX).ok_or(WireError::NotMaster)
}

fn with_prefix(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = PREFIX.to_vec();
    for part in parts {
        out.extend_from_slice(part);
    }
    out
}

// ---------------------------------------------------------------------------
// Challenges

/// Nonces and tokens of Arena's extensions (a heartbeat's nonce, a list's
/// per-refresh token, and `reach.rs`'s): 8 to 32 ASCII letters and digits.
pub fn is_nonce(s: &str) -> bool {
    (8..=32).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_alphanumeric())
}

/// Characters a master's challenge may use: printable ASCII but `\ / ; " %`.
fn challenge_char(c: u8) -> bool {
    (33..=126).contains(&c) && !matches!(c, b'\\' | b'/' | b';' | b'"' | b'%')
}

/// Whether `s` is a challenge a master of ours hands out: 8-11 characters
/// of the allowed set.
pub fn is_challenge(s: &str) -> bool {
    (8..=11).contains(&s.len()) && s.bytes().all(challenge_char)
}

/// Whether `s` may stand as the challenge of a `getinfo` a server answers
/// (looser: other masters and tools use other lengths): 1-64 printable
/// characters that an infostring can carry.
fn is_getinfo_challenge(s: &[u8]) -> bool {
    (1..=64).contains(&s.len()) && s.iter().all(|&c| (33..=126).contains(&c) && !matches!(c, b'\\' | b'"' | b';'))
}

/// Makes challenges no one can predict: SipHash keyed at random (std's
/// `RandomState` draws its keys from the OS) over an address and a time.
#[derive(Debug)]
pub struct Challenges {
    key: RandomState,
}

impl Default for Challenges {
    fn default() -> Self {
        Self { key: RandomState::new() }
    }
}

impl Challenges {
    /// The allowed characters, in order.
    const ALPHABET: &'static [u8] =
        b"!#$&'()*+,-.0123456789:<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~";

    /// The challenge of `addr` in time window `window`: a keyed MAC, so
    /// that a master can tell its own challenge when it comes back without
    /// having kept it (nobody can make one for an address without the key).
    pub fn for_addr(&self, addr: SocketAddr, window: u64) -> String {
        let a = self.key.hash_one((addr, window, 0u8));
        let b = self.key.hash_one((addr, window, 1u8));
        Self::encode(a, b)
    }

    /// 8-11 characters of the alphabet from 128 bits.
    fn encode(a: u64, b: u64) -> String {
        let len = 8 + (b % 4) as usize;
        let mut bits = u128::from(a) << 64 | u128::from(b >> 2);
        let n = Self::ALPHABET.len() as u128;
        (0..len)
            .map(|_| {
                let c = Self::ALPHABET[(bits % n) as usize];
                bits /= n;
                char::from(c)
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Server <-> master

/// A server's heartbeat: "notice me, and ask who I am".
pub fn heartbeat() -> Vec<u8> {
    with_prefix(&[HEARTBEAT, b" ", HEARTBEAT_TAG.as_bytes(), b"\n"])
}

/// The line of a heartbeat that carries Arena's nonce.
const NONCE_LINE: &[u8] = b"nonce ";

/// Arena's heartbeat: a plain one, then a line `nonce NONCE` (dpmaster
/// reads the tag up to the line end and ignores the rest): Arena's master
/// echoes the nonce in its `getinfo`, which only the master that got the
/// heartbeat can, so the server can tell the master's `getinfo` from one
/// forged from the master's (public) address.
pub fn heartbeat_with_nonce(nonce: &str) -> Vec<u8> {
    with_prefix(&[HEARTBEAT, b" ", HEARTBEAT_TAG.as_bytes(), b"\n", NONCE_LINE, nonce.as_bytes(), b"\n"])
}

/// A master's `getinfo` with its challenge.
pub fn getinfo(challenge: &str) -> Vec<u8> {
    with_prefix(&[GETINFO, b" ", challenge.as_bytes()])
}

/// Arena's master's `getinfo` to a heartbeat that carried a nonce: the
/// challenge, then the nonce (a word older Arena servers skip; sent only to
/// servers whose heartbeat had one).
pub fn getinfo_with_nonce(challenge: &str, nonce: &str) -> Vec<u8> {
    with_prefix(&[GETINFO, b" ", challenge.as_bytes(), b" ", nonce.as_bytes()])
}

/// A `getinfo` as a server reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetInfo {
    /// The challenge to echo, if one was given.
    pub challenge: Option<String>,
    /// The heartbeat's nonce, echoed (Arena's master).
    pub nonce: Option<String>,
}

/// Reads a `getinfo`: the command, then optionally a challenge, then
/// anything (a request padded so that its answer is no larger than it).
pub fn parse_getinfo(datagram: &[u8]) -> Result<GetInfo, WireError> {
    let rest = body(datagram)?.strip_prefix(GETINFO).ok_or(WireError::Unknown)?;
    if rest.is_empty() {
        return Ok(GetInfo { challenge: None, nonce: None });
    }
    if !rest[0].is_ascii_whitespace() {
        return Err(WireError::Unknown);
    }
    let mut words = rest.split(|c| c.is_ascii_whitespace()).filter(|w| !w.is_empty());
    match words.next() {
        None => Ok(GetInfo { challenge: None, nonce: None }),
        Some(word) if is_getinfo_challenge(word) => {
            // A second word that is a nonce is Arena's echo; anything else
            // there is padding.
            let nonce = words.next().and_then(|w| std::str::from_utf8(w).ok()).filter(|w| is_nonce(w));
            Ok(GetInfo { challenge: Some(String::from_utf8_lossy(word).into_owned()), nonce: nonce.map(str::to_owned) })
        }
        Some(_) => Err(WireError::BadChallenge),
    }
}

/// An infostring: `\key\value` pairs, in order, keys unique.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoString(Vec<(String, String)>);

fn info_key_ok(key: &str) -> bool {
    (1..=MAX_INFO_KEY_BYTES).contains(&key.len()) && key.bytes().all(|c| info_byte_ok(c) && c != b' ')
}

fn info_value_ok(value: &str) -> bool {
    value.len() <= MAX_INFO_VALUE_BYTES && value.bytes().all(info_byte_ok)
}

fn info_byte_ok(c: u8) -> bool {
    !matches!(c, b'\\' | b'"' | b';' | b'\0' | b'\n' | b'\r')
}

impl InfoString {
    /// The pairs, checked: at most [`MAX_INFO_PAIRS`], each key and value
    /// within bounds and free of `\`, `"`, `;`, NUL and line ends, keys once.
    pub fn new(pairs: Vec<(String, String)>) -> Result<Self, WireError> {
        if pairs.len() > MAX_INFO_PAIRS {
            return Err(WireError::BadInfoString);
        }
        for (i, (key, value)) in pairs.iter().enumerate() {
            if !info_key_ok(key) || !info_value_ok(value) || pairs[..i].iter().any(|(k, _)| k == key) {
                return Err(WireError::BadInfoString);
            }
        }
        Ok(Self(pairs))
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Reads `\k\v\k\v...` (a trailing line end tolerated, as some servers
    /// send). Nothing at all is the empty infostring, so that every
    /// infostring reads back as it was encoded.
    pub fn parse(text: &[u8]) -> Result<Self, WireError> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        if text.is_empty() {
            return Ok(Self::default());
        }
        let text = std::str::from_utf8(text).map_err(|_| WireError::BadInfoString)?;
        let rest = text.strip_prefix('\\').ok_or(WireError::BadInfoString)?;
        let mut parts = rest.split('\\');
        let mut pairs = Vec::new();
        while let Some(key) = parts.next() {
            let value = parts.next().ok_or(WireError::BadInfoString)?;
            if pairs.len() >= MAX_INFO_PAIRS {
                return Err(WireError::BadInfoString);
            }
            pairs.push((key.to_string(), value.to_string()));
        }
        Self::new(pairs)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (key, value) in &self.0 {
            out.push(b'\\');
            out.extend_from_slice(key.as_bytes());
            out.push(b'\\');
            out.extend_from_slice(value.as_bytes());
        }
        out
    }
}

/// `text` made fit for an infostring value: the characters it cannot carry
/// become spaces, and it is cut to [`MAX_INFO_VALUE_BYTES`] on a character
/// boundary.
pub fn sanitize_value(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let c = if c.is_ascii() && !info_byte_ok(c as u8) { ' ' } else { c };
        if out.len() + c.len_utf8() > MAX_INFO_VALUE_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

/// A server's answer to `getinfo`.
pub fn info_response(info: &InfoString) -> Result<Vec<u8>, WireError> {
    let out = with_prefix(&[INFO_RESPONSE, &info.encode()]);
    if out.len() > MAX_DATAGRAM_BYTES { Err(WireError::TooLong) } else { Ok(out) }
}

// ---------------------------------------------------------------------------
// Client <-> master

/// A list request: which game, which protocol, which servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerQuery {
    /// `getserversExt` (both families, the answer `getserversExtResponse`)
    /// rather than `getservers` (IPv4 only).
    pub extended: bool,
    pub game: String,
    pub protocol: i64,
    /// Include empty servers, and full ones (left out by default).
    pub empty: bool,
    pub full: bool,
    /// The families asked for (`getserversExt` only; neither means both).
    pub ipv4: bool,
    pub ipv6: bool,
    /// Only servers of this game type.
    pub gametype: Option<String>,
    /// Arena's per-refresh token (`refresh=TOKEN`, a word other masters
    /// skip): a list that did not all go is continued only for requests
    /// carrying it, so a request forged from the asker's address cannot
    /// move its place.
    pub refresh: Option<String>,
}

impl ServerQuery {
    /// Every server of `game` at `protocol`, empty and full ones too, of
    /// both families (a browser's question: it filters itself).
    pub fn everything(game: &str, protocol: i64) -> Self {
        Self {
            extended: true,
            game: game.to_string(),
            protocol,
            empty: true,
            full: true,
            ipv4: true,
            ipv6: true,
            gametype: None,
            refresh: None,
        }
    }

    /// Whether servers of this family are asked for.
    pub fn wants(&self, addr: &SocketAddr) -> bool {
        if !self.extended {
            return addr.is_ipv4();
        }
        if !self.ipv4 && !self.ipv6 {
            return true;
        }
        if addr.is_ipv4() { self.ipv4 } else { self.ipv6 }
    }
}

/// The request, padded with spaces up to `pad_to` bytes (at most
/// [`MAX_DATAGRAM_BYTES`]): a master sends no more bytes than it got, so a
/// client asks with a datagram as large as the answer it wants.
pub fn get_servers(query: &ServerQuery, pad_to: usize) -> Vec<u8> {
    let mut text = format!("{} {}", query.game, query.protocol);
    for (on, word) in [(query.empty, "empty"), (query.full, "full")] {
        if on {
            text.push(' ');
            text.push_str(word);
        }
    }
    if query.extended {
        for (on, word) in [(query.ipv4, "ipv4"), (query.ipv6, "ipv6")] {
            if on {
                text.push(' ');
                text.push_str(word);
            }
        }
    }
    if let Some(gametype) = &query.gametype {
        text.push_str(" gametype=");
        text.push_str(gametype);
    }
    if let Some(token) = &query.refresh {
        text.push_str(" refresh=");
        text.push_str(token);
    }
    let command = if query.extended { GETSERVERS_EXT } else { GETSERVERS };
    let mut out = with_prefix(&[command, text.as_bytes()]);
    let pad_to = pad_to.min(MAX_DATAGRAM_BYTES);
    if out.len() < pad_to {
        out.resize(pad_to, b' ');
    }
    out
}

fn game_ok(game: &str) -> bool {
    (1..=MAX_GAME_BYTES).contains(&game.len()) && game.bytes().all(|c| c.is_ascii_graphic())
}

fn parse_query(text: &[u8], extended: bool) -> Result<ServerQuery, WireError> {
    let text = std::str::from_utf8(text).map_err(|_| WireError::Syntax)?;
    let mut words = text.split_ascii_whitespace().take(MAX_QUERY_TOKENS);
    let game = words.next().ok_or(WireError::Syntax)?;
    if game.parse::<i64>().is_ok() {
        return Err(WireError::NoGame);
    }
    if !game_ok(game) {
        return Err(WireError::Syntax);
    }
    let protocol = words.next().and_then(|p| p.parse::<i64>().ok()).ok_or(WireError::Syntax)?;
    let mut query = ServerQuery {
        extended,
        game: game.to_string(),
        protocol,
        empty: false,
        full: false,
        ipv4: false,
        ipv6: false,
        gametype: None,
        refresh: None,
    };
    for word in words {
        match word {
            "empty" => query.empty = true,
            "full" => query.full = true,
            "ipv4" if extended => query.ipv4 = true,
            "ipv6" if extended => query.ipv6 = true,
            "ffa" => query.gametype = Some("0".into()),
            "tourney" => query.gametype = Some("1".into()),
            "team" => query.gametype = Some("3".into()),
            "ctf" => query.gametype = Some("4".into()),
            _ => {
                if let Some(gametype) = word.strip_prefix("gametype=")
                    && (1..=MAX_INFO_VALUE_BYTES).contains(&gametype.len())
                {
                    query.gametype = Some(gametype.to_string());
                } else if let Some(token) = word.strip_prefix("refresh=")
                    && is_nonce(token)
                {
                    query.refresh = Some(token.to_string());
                }
                // Anything else is skipped, as dpmaster does: padding.
            }
        }
    }
    Ok(query)
}

/// What a master receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToMaster {
    /// `nonce`: Arena's, to echo in the `getinfo` (none from other games).
    Heartbeat {
        tag: String,
        nonce: Option<String>,
    },
    InfoResponse(InfoString),
    GetServers(ServerQuery),
}

/// Reads a datagram sent to a master.
pub fn parse_to_master(datagram: &[u8]) -> Result<ToMaster, WireError> {
    let body = body(datagram)?;
    if let Some(rest) = body.strip_prefix(INFO_RESPONSE) {
        return InfoString::parse(rest).map(ToMaster::InfoResponse);
    }
    if let Some(rest) = body.strip_prefix(GETSERVERS_EXT) {
        return parse_query(rest, true).map(ToMaster::GetServers);
    }
    if let Some(rest) = body.strip_prefix(GETSERVERS) {
        return parse_query(rest, false).map(ToMaster::GetServers);
    }
    if let Some(rest) = body.strip_prefix(HEARTBEAT) {
        let rest = rest.strip_prefix(b" ").ok_or(WireError::Syntax)?;
        let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        let tag = &rest[..end];
        if tag.is_empty() || tag.len() > 64 || !tag.iter().all(u8::is_ascii_graphic) {
            return Err(WireError::Syntax);
        }
        // The next line may carry Arena's nonce; anything else after the
        // tag is ignored, as dpmaster does.
        let next = rest.get(end + 1..).unwrap_or_default();
        let line = next.split(|&c| c == b'\n').next().unwrap_or_default();
        let nonce = line
            .strip_prefix(NONCE_LINE)
            .and_then(|n| std::str::from_utf8(n).ok())
            .filter(|n| is_nonce(n))
            .map(str::to_owned);
        return Ok(ToMaster::Heartbeat { tag: String::from_utf8_lossy(tag).into_owned(), nonce });
    }
    Err(WireError::Unknown)
}

/// Bytes the smallest entry of a list takes (an IPv4 one).
pub const MIN_ENTRY_BYTES: usize = 1 + 4 + 2;

/// Bytes one entry takes in a list: its separator, address and port.
pub fn entry_bytes(addr: &SocketAddr) -> usize {
    if arena_udp::canonical(*addr).is_ipv4() { 1 + 4 + 2 } else { 1 + 16 + 2 }
}

fn push_entry(out: &mut Vec<u8>, addr: SocketAddr) {
    match arena_udp::canonical(addr) {
        SocketAddr::V4(v4) => {
            out.push(b'\\');
            out.extend_from_slice(&v4.ip().octets());
            out.extend_from_slice(&v4.port().to_be_bytes());
        }
        SocketAddr::V6(v6) => {
            out.push(b'/');
            out.extend_from_slice(&v6.ip().octets());
            out.extend_from_slice(&v6.port().to_be_bytes());
        }
    }
}

/// The header of a list answer, bytes.
pub fn response_header_bytes(extended: bool) -> usize {
    PREFIX.len() + if extended { EXT_RESPONSE.len() } else { RESPONSE.len() }
}

/// The end mark's size, bytes.
pub const EOT_BYTES: usize = 1 + EOT.len();

/// One datagram of a list answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponsePart {
    pub datagram: Vec<u8>,
    /// How many of the addresses given it took (IPv6 ones a plain answer
    /// cannot carry count as taken: they are skipped).
    pub taken: usize,
    /// It carries the end mark.
    pub ended: bool,
}

/// One datagram of a list answer, at most `max_bytes` (and 1400): as many
/// of `addrs` as fit, in order, and the end mark if `end` and they all fit
/// with it. If not even the header fits, nothing: an empty datagram, none
/// taken, not ended (so the datagram is never longer than `max_bytes`).
/// A datagram that took no address and did not end says nothing and
/// should not be sent.
pub fn servers_response(extended: bool, addrs: &[SocketAddr], end: bool, max_bytes: usize) -> ResponsePart {
    let max_bytes = max_bytes.min(MAX_DATAGRAM_BYTES);
    if response_header_bytes(extended) > max_bytes {
        return ResponsePart { datagram: Vec::new(), taken: 0, ended: false };
    }
    let mut datagram = with_prefix(&[if extended { EXT_RESPONSE } else { RESPONSE }]);
    let mut taken = 0;
    for addr in addrs {
        let addr = arena_udp::canonical(*addr);
        if !extended && addr.is_ipv6() {
            taken += 1;
            continue;
        }
        if datagram.len() + entry_bytes(&addr) > max_bytes {
            break;
        }
        push_entry(&mut datagram, addr);
        taken += 1;
    }
    let ended = end && taken == addrs.len() && datagram.len() + EOT_BYTES <= max_bytes;
    if ended {
        datagram.push(b'\\');
        datagram.extend_from_slice(EOT);
    }
    ResponsePart { datagram, taken, ended }
}

/// One datagram of a list, as a client reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServersPart {
    pub extended: bool,
    pub servers: Vec<SocketAddr>,
    /// The list ends with this datagram.
    pub end: bool,
    /// Entries left out: addresses no one can join.
    pub dropped: usize,
}

/// Reads one datagram of a master's list.
pub fn parse_servers_response(datagram: &[u8]) -> Result<ServersPart, WireError> {
    let body = body(datagram)?;
    let (extended, mut rest) = if let Some(rest) = body.strip_prefix(EXT_RESPONSE) {
        (true, rest)
    } else if let Some(rest) = body.strip_prefix(RESPONSE) {
        (false, rest)
    } else {
        return Err(WireError::Unknown);
    };
    let mut part = ServersPart { extended, ..ServersPart::default() };
    while let Some((&separator, after)) = rest.split_first() {
        if part.end {
            return Err(WireError::Syntax);
        }
        let addr = match separator {
            b'\\' => {
                let (entry, after) = after.split_at_checked(6).ok_or(WireError::Syntax)?;
                rest = after;
                if entry == EOT {
                    part.end = true;
                    continue;
                }
                let ip = Ipv4Addr::new(entry[0], entry[1], entry[2], entry[3]);
                SocketAddr::new(IpAddr::V4(ip), u16::from_be_bytes([entry[4], entry[5]]))
            }
            b'/' if extended => {
                let (entry, after) = after.split_at_checked(18).ok_or(WireError::Syntax)?;
                rest = after;
                let mut octets = [0u8; 16];
                octets.copy_from_slice(&entry[..16]);
                let addr =
                    SocketAddr::new(IpAddr::V6(Ipv6Addr::from(octets)), u16::from_be_bytes([entry[16], entry[17]]));
                arena_udp::canonical(addr)
            }
            _ => return Err(WireError::Syntax),
        };
        if arena_udp::is_joinable(addr) {
            part.servers.push(addr);
        } else {
            part.dropped += 1;
        }
    }
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn query(extended: bool) -> ServerQuery {
        ServerQuery {
            extended,
            game: GAME.into(),
            protocol: 12,
            empty: true,
            full: false,
            ipv4: false,
            ipv6: extended,
            gametype: None,
            refresh: None,
        }
    }

    #[test]
    fn every_message_reads_back_as_written() {
        assert_eq!(parse_to_master(&heartbeat()), Ok(ToMaster::Heartbeat { tag: HEARTBEAT_TAG.into(), nonce: None }));
        assert_eq!(heartbeat(), b"\xFF\xFF\xFF\xFFheartbeat DarkPlaces\n");
        // Arena's nonce rides on the next line, which dpmaster ignores.
        assert_eq!(heartbeat_with_nonce("abcdefgh1234"), b"\xFF\xFF\xFF\xFFheartbeat DarkPlaces\nnonce abcdefgh1234\n");
        assert_eq!(
            parse_to_master(&heartbeat_with_nonce("abcdefgh1234")),
            Ok(ToMaster::Heartbeat { tag: HEARTBEAT_TAG.into(), nonce: Some("abcdefgh1234".into()) })
        );
        assert_eq!(
            parse_to_master(b"\xFF\xFF\xFF\xFFheartbeat DarkPlaces\nnonce short\n"),
            Ok(ToMaster::Heartbeat { tag: HEARTBEAT_TAG.into(), nonce: None })
        );
        assert_eq!(
            parse_getinfo(&getinfo_with_nonce("A_ch4Lleng3", "abcdefgh1234")),
            Ok(GetInfo { challenge: Some("A_ch4Lleng3".into()), nonce: Some("abcdefgh1234".into()) })
        );
        let mut q = query(true);
        q.refresh = Some("refresh12345".into());
        assert_eq!(parse_to_master(&get_servers(&q, 300)), Ok(ToMaster::GetServers(q)));
        for extended in [false, true] {
            let q = query(extended);
            assert_eq!(parse_to_master(&get_servers(&q, 0)), Ok(ToMaster::GetServers(q.clone())));
            let padded = get_servers(&q, 900);
            assert_eq!(padded.len(), 900);
            assert_eq!(parse_to_master(&padded), Ok(ToMaster::GetServers(q)));
        }
        let info = InfoString::new(vec![("challenge".into(), "abcdefgh".into()), ("clients".into(), "3".into())])
            .expect("valid");
        assert_eq!(parse_to_master(&info_response(&info).expect("fits")), Ok(ToMaster::InfoResponse(info)));
        assert_eq!(
            parse_getinfo(&getinfo("A_ch4Lleng3")),
            Ok(GetInfo { challenge: Some("A_ch4Lleng3".into()), nonce: None })
        );
        assert_eq!(parse_getinfo(b"\xFF\xFF\xFF\xFFgetinfo"), Ok(GetInfo { challenge: None, nonce: None }));
        let mut bytes = PREFIX.to_vec();
        bytes.extend_from_slice(b"getinfo qstat ");
        bytes.extend([b'.'; 300]);
        assert_eq!(parse_getinfo(&bytes).map(|g| g.challenge), Ok(Some("qstat".into())));
        assert_eq!(parse_getinfo(b"\xFF\xFF\xFF\xFFgetinfoX"), Err(WireError::Unknown));
        assert_eq!(parse_getinfo(b"\xFF\xFF\xFF\xFFgetinfo a\\b"), Err(WireError::BadChallenge));
    }

    #[test]
    fn requests_are_read_as_dpmaster_reads_them() {
        let read = |text: &str| {
            let mut d = PREFIX.to_vec();
            d.extend_from_slice(text.as_bytes());
            parse_to_master(&d)
        };
        let Ok(ToMaster::GetServers(q)) = read("getservers Arena 12 full ffa pad=.... ipv6 junk") else { panic!() };
        assert!(q.full && !q.empty && !q.extended && !q.ipv6, "{q:?}");
        assert_eq!(q.gametype.as_deref(), Some("0"));
        let Ok(ToMaster::GetServers(q)) = read("getserversExt Arena 12 ipv4 gametype=dm") else { panic!() };
        assert!(q.ipv4 && !q.ipv6 && q.extended);
        assert_eq!(q.gametype.as_deref(), Some("dm"));
        assert_eq!(read("getservers 68 empty full"), Err(WireError::NoGame));
        assert_eq!(read("getservers Arena"), Err(WireError::Syntax));
        assert_eq!(read("getservers Arena twelve"), Err(WireError::Syntax));
        assert_eq!(read("heartbeat"), Err(WireError::Syntax));
        assert_eq!(read("hello"), Err(WireError::Unknown));
        assert_eq!(parse_to_master(b"getservers Arena 12"), Err(WireError::NotMaster));
        assert_eq!(parse_to_master(&vec![0xFF; MAX_DATAGRAM_BYTES + 1]), Err(WireError::TooLong));
    }

    #[test]
    fn infostrings_refuse_what_they_cannot_carry() {
        assert!(InfoString::parse(b"\\a\\1\\b\\2").is_ok());
        assert!(InfoString::parse(b"\\a\\1\\b\\2\n").is_ok(), "a trailing line end");
        for bad in [&b"a\\1"[..], b"\\a\\1\\b", b"\\a\\1\\a\\2", b"\\\\1", b"\\a\\\xFF"] {
            assert_eq!(InfoString::parse(bad), Err(WireError::BadInfoString), "{bad:?}");
        }
        let many: Vec<u8> = (0..=MAX_INFO_PAIRS).flat_map(|i| format!("\\k{i}\\v").into_bytes()).collect();
        assert_eq!(InfoString::parse(&many), Err(WireError::BadInfoString));
        assert!(InfoString::new(vec![("a b".into(), "1".into())]).is_err());
        assert!(InfoString::new(vec![("a".into(), "x;y".into())]).is_err());
        let clean = sanitize_value("Bob's \"best\" \\ server;\nnow ünïcode");
        assert!(InfoString::new(vec![("hostname".into(), clean.clone())]).is_ok(), "{clean}");
        assert_eq!(clean, "Bob's  best    server  now ünïcode");
        let long = sanitize_value(&"é".repeat(300));
        assert!(long.len() <= MAX_INFO_VALUE_BYTES && long.chars().all(|c| c == 'é'));
    }

    #[test]
    fn challenges_are_fresh_and_of_the_allowed_characters() {
        let challenges = Challenges::default();
        let addr = SocketAddr::from(([192, 0, 2, 1], 27015));
        let all: Vec<String> = (0..1000).map(|window| challenges.for_addr(addr, window)).collect();
        assert!(all.iter().all(|c| is_challenge(c)), "{all:?}");
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len());
        assert!(!is_challenge("short") && !is_challenge("has/slash") && !is_challenge("twelve chars"));
    }

    #[test]
    fn a_full_datagram_holds_196_ipv4_or_72_ipv6_servers_and_the_end_mark() {
        let v4: Vec<SocketAddr> =
            (0..300u32).map(|i| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27015))).collect();
        let part = servers_response(false, &v4, true, MAX_DATAGRAM_BYTES);
        assert_eq!((part.taken, part.ended), (196, false));
        assert!(part.datagram.len() <= MAX_DATAGRAM_BYTES);
        let part = servers_response(false, &v4[..196], true, MAX_DATAGRAM_BYTES);
        assert_eq!((part.taken, part.ended), (196, false), "196 fill it: the end mark goes alone");
        let part = servers_response(false, &v4[..195], true, MAX_DATAGRAM_BYTES);
        assert_eq!((part.taken, part.ended), (195, true), "195 and the end mark fit");
        assert!(part.datagram.len() <= MAX_DATAGRAM_BYTES);
        let v6: Vec<SocketAddr> =
            (0..100u16).map(|i| SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, i], 27015))).collect();
        let part = servers_response(true, &v6[..72], true, MAX_DATAGRAM_BYTES);
        assert_eq!((part.taken, part.ended), (72, true));
        assert!(part.datagram.len() <= MAX_DATAGRAM_BYTES);
        assert_eq!(servers_response(true, &v6, true, MAX_DATAGRAM_BYTES).taken, 72, "no more without the end mark");
        // A plain answer skips IPv6 servers.
        let part = servers_response(false, &v6[..3], true, MAX_DATAGRAM_BYTES);
        assert_eq!((part.taken, part.ended), (3, true));
        assert_eq!(parse_servers_response(&part.datagram).map(|p| p.servers.len()), Ok(0));
    }

    #[test]
    fn lists_are_read_by_position_and_nonsense_is_dropped() {
        // Addresses and ports holding the separator bytes themselves.
        let tricky = vec![
            addr("92.47.92.47:23644"),
            addr("[2f5c::5c2f]:12124"),
            addr("[::ffff:10.0.0.1]:27015"),
            addr("192.0.2.1:27015"),
        ];
        let part = servers_response(true, &tricky, true, MAX_DATAGRAM_BYTES);
        let read = parse_servers_response(&part.datagram).expect("reads");
        assert!(read.end && read.extended);
        assert_eq!(read.servers, vec![tricky[0], tricky[1], addr("10.0.0.1:27015"), tricky[3]]);
        let nonsense = vec![
            addr("0.0.0.0:27015"),
            addr("192.0.2.1:0"),
            addr("224.0.0.1:27015"),
            addr("255.255.255.255:27015"),
            addr("[ff02::1]:27015"),
            addr("[::]:1"),
        ];
        let part = servers_response(true, &nonsense, true, MAX_DATAGRAM_BYTES);
        let read = parse_servers_response(&part.datagram).expect("reads");
        assert_eq!((read.servers.len(), read.dropped), (0, nonsense.len()));
        // Truncated, after the end, unknown separators: errors.
        let whole = servers_response(true, &tricky, true, MAX_DATAGRAM_BYTES).datagram;
        for cut in 1..whole.len() - response_header_bytes(true) {
            let short = &whole[..whole.len() - cut];
            let _ = parse_servers_response(short);
        }
        let mut after_end = whole.clone();
        after_end.extend_from_slice(b"\\\x01\x02\x03\x04\x05\x06");
        assert_eq!(parse_servers_response(&after_end), Err(WireError::Syntax));
        let mut slash_in_plain = servers_response(false, &[], false, MAX_DATAGRAM_BYTES).datagram;
        slash_in_plain.extend_from_slice(&[b'/'; 19]);
        assert_eq!(parse_servers_response(&slash_in_plain), Err(WireError::Syntax));
        assert_eq!(parse_servers_response(&whole[..whole.len() - 1]), Err(WireError::Syntax));
    }

    #[test]
    fn the_challenge_alphabet_is_every_allowed_character() {
        let allowed: Vec<u8> = (33..=126u8).filter(|&c| challenge_char(c)).collect();
        assert_eq!(Challenges::ALPHABET, &allowed[..]);
        assert_eq!(allowed.len(), 89);
        let challenges = Challenges::default();
        let addr = SocketAddr::from(([192, 0, 2, 1], 27015));
        let lengths: std::collections::BTreeSet<usize> = (0..200).map(|w| challenges.for_addr(addr, w).len()).collect();
        assert_eq!(lengths.into_iter().collect::<Vec<_>>(), vec![8, 9, 10, 11], "every length comes up");
        let other = SocketAddr::from(([192, 0, 2, 1], 27016));
        assert_ne!(challenges.for_addr(addr, 7), challenges.for_addr(other, 7), "another port, another challenge");
        assert_eq!(challenges.for_addr(addr, 7), challenges.for_addr(addr, 7), "the master knows its own");
        assert_ne!(Challenges::default().for_addr(addr, 7), challenges.for_addr(addr, 7), "keyed afresh");
    }

    #[test]
    fn getinfo_challenges_and_tokens_are_bounded() {
        let with = |text: &[u8]| {
            let mut d = PREFIX.to_vec();
            d.extend_from_slice(text);
            d
        };
        let longest = "x".repeat(64);
        assert_eq!(parse_getinfo(&getinfo(&longest)).map(|g| g.challenge), Ok(Some(longest.clone())));
        assert_eq!(parse_getinfo(&getinfo(&format!("{longest}x"))), Err(WireError::BadChallenge));
        assert_eq!(parse_getinfo(&with(b"getinfo\tabc\n")).map(|g| g.challenge), Ok(Some("abc".into())));
        assert_eq!(parse_getinfo(&with(b"getinfo   ")), Ok(GetInfo { challenge: None, nonce: None }));
        assert_eq!(parse_getinfo(&with(b"getinfo a\"b")), Err(WireError::BadChallenge));
        assert_eq!(parse_getinfo(b"getinfo abc"), Err(WireError::NotMaster));
        let mut long = getinfo("abcdefgh");
        long.resize(MAX_DATAGRAM_BYTES + 1, b' ');
        assert_eq!(parse_getinfo(&long), Err(WireError::TooLong));
        long.truncate(MAX_DATAGRAM_BYTES);
        assert!(parse_getinfo(&long).is_ok(), "padding up to the limit is fine");
        // Heartbeat tags and game names have their bounds too.
        let tag = "T".repeat(64);
        assert!(parse_to_master(&with(format!("heartbeat {tag}\n").as_bytes())).is_ok());
        assert_eq!(parse_to_master(&with(format!("heartbeat {tag}T\n").as_bytes())), Err(WireError::Syntax));
        let game = "G".repeat(MAX_GAME_BYTES);
        assert!(parse_to_master(&with(format!("getservers {game} 1").as_bytes())).is_ok());
        assert_eq!(parse_to_master(&with(format!("getservers {game}G 1").as_bytes())), Err(WireError::Syntax));
        // An empty infostring reads back as written.
        assert_eq!(InfoString::parse(&InfoString::default().encode()), Ok(InfoString::default()));
        let too_long =
            InfoString::new((0..8).map(|i| (format!("k{i}"), "v".repeat(MAX_INFO_VALUE_BYTES))).collect::<Vec<_>>())
                .expect("valid");
        assert_eq!(info_response(&too_long), Err(WireError::TooLong));
    }

    #[test]
    fn a_response_never_exceeds_its_budget_and_reads_back() {
        let v4: Vec<SocketAddr> = (1..=5u8).map(|i| SocketAddr::from(([192, 0, 2, i], 27015))).collect();
        let v6: Vec<SocketAddr> =
            (1..=5u16).map(|i| SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, i], 27015))).collect();
        let mixed: Vec<SocketAddr> = v4.iter().zip(&v6).flat_map(|(a, b)| [*a, *b]).collect();
        for addrs in [&v4[..], &v6[..], &mixed[..], &[]] {
            for extended in [false, true] {
                for end in [false, true] {
                    for budget in 0..=MAX_DATAGRAM_BYTES + 100 {
                        let part = servers_response(extended, addrs, end, budget);
                        assert!(part.datagram.len() <= budget.min(MAX_DATAGRAM_BYTES), "{budget}");
                        assert!(part.taken <= addrs.len() && (!part.ended || end));
                        if part.datagram.is_empty() {
                            assert!(part.taken == 0 && !part.ended);
                            assert!(budget < response_header_bytes(extended));
                            continue;
                        }
                        let read = parse_servers_response(&part.datagram).expect("reads");
                        let carried: Vec<SocketAddr> =
                            addrs[..part.taken].iter().copied().filter(|a| extended || a.is_ipv4()).collect();
                        assert_eq!((read.servers, read.end, read.extended), (carried, part.ended, extended));
                    }
                }
            }
        }
        // The arithmetic: a plain header of 22 bytes and 7 per entry (196 fill
        // 1394 bytes, and the 7-byte end mark would make 1401); an extended
        // header of 25 and 19 per IPv6 entry (72 and the end mark: 1400).
        assert_eq!((response_header_bytes(false), response_header_bytes(true), EOT_BYTES), (22, 25, 7));
        assert_eq!(response_header_bytes(false) + 196 * MIN_ENTRY_BYTES, 1394);
        assert_eq!(response_header_bytes(true) + 72 * (1 + 16 + 2) + EOT_BYTES, MAX_DATAGRAM_BYTES);
    }

    #[test]
    fn no_bytes_make_a_parser_panic() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let heads: [&[u8]; 8] = [
            b"",
            b"\xFF\xFF\xFF\xFF",
            b"\xFF\xFF\xFF\xFFgetinfo ",
            b"\xFF\xFF\xFF\xFFinfoResponse\n\\",
            b"\xFF\xFF\xFF\xFFgetservers Arena ",
            b"\xFF\xFF\xFF\xFFgetserversExt Arena 12 ",
            b"\xFF\xFF\xFF\xFFgetserversResponse\\",
            b"\xFF\xFF\xFF\xFFgetserversExtResponse/",
        ];
        // Bytes that matter to the parsers, more often than at random.
        let alphabet = b"\\/ \n\0\"; =EOTabc0123456789\xFF\x80";
        for _ in 0..20_000 {
            let r = next();
            let mut datagram = heads[(r % 8) as usize].to_vec();
            let len = (r >> 8) as usize % if r & (1 << 40) != 0 { 64 } else { 1500 };
            for _ in 0..len {
                let r = next();
                datagram.push(if r & 1 == 0 { alphabet[(r >> 1) as usize % alphabet.len()] } else { (r >> 8) as u8 });
            }
            let _ = parse_to_master(&datagram);
            let _ = parse_getinfo(&datagram);
            let _ = InfoString::parse(&datagram);
            if let Ok(part) = parse_servers_response(&datagram) {
                assert!(part.servers.iter().all(|a| arena_udp::is_joinable(*a)));
            }
        }
    }
}
