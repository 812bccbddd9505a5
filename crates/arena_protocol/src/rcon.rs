//! The remote console's datagrams (rcon, issue 40): a client that knows the
//! server's rcon password asks for a challenge, sends a command with a keyed
//! MAC over that challenge, and reads back an answer MACed the same way.
//! The password never travels; the key is derived from it with Argon2id
//! under rcon's own salt (so it is not the netcode key of a game with the
//! same password); the MACs are keyed BLAKE2b-256 with a domain byte that
//! tells a command's MAC from an answer's. Pure: no sockets, no clocks. The
//! server's bookkeeping (challenges, rate limits) is `arena_server`'s
//! `RconGate`; the client's exchange is `arena_client::remote_console`.
//!
//! Every datagram is connectionless: `FF FF FF FF`, the ASCII text `rcon`,
//! then one kind byte (1 to 5). No other connectionless datagram on the game
//! port starts so: A2S puts one type byte after the prefix (`T`, `U`, `V`,
//! `A`, `I`, `D`, `E`), the server's refusals `z`, and dpmaster's commands
//! and Arena's extension are words followed by a space, a newline or
//! nothing, never by a byte below 0x20. A Quake-style text rcon
//! (`rcon PASSWORD COMMAND`) has a space there and is refused too.
//!
//! Layout (all fixed offsets; the last field runs to the datagram's end):
//!
//! | kind | name              | after the 9-byte header                                   | bytes     |
//! |------|-------------------|-----------------------------------------------------------|-----------|
//! | 1    | challenge request | 16 zero bytes (padding: the answer is never larger)        | 25        |
//! | 2    | challenge         | challenge (16)                                             | 25        |
//! | 3    | command           | challenge (16), MAC (32), command (1-512 UTF-8)            | 58-569    |
//! | 4    | answer            | challenge (16), part, parts, MAC (32), text (0-1141 UTF-8) | 59-1200   |
//! | 5    | refused           | reason (1 byte)                                            | 10        |

use blake2::Blake2bMac;
use blake2::digest::consts::U32;
use blake2::digest::{KeyInit, Mac};

use crate::datagram::CONNECTIONLESS_PREFIX;
use crate::key::MAX_PASSWORD_BYTES;

/// The bytes every rcon datagram starts with: the connectionless prefix and
/// the ASCII text `rcon`.
pub const MAGIC: [u8; 8] = {
    let p = CONNECTIONLESS_PREFIX;
    [p[0], p[1], p[2], p[3], b'r', b'c', b'o', b'n']
};
/// The magic and the kind byte, bytes.
pub const HEADER_BYTES: usize = MAGIC.len() + 1;
/// Bytes in a challenge.
pub const CHALLENGE_BYTES: usize = 16;
/// Bytes in a MAC (BLAKE2b with a 32-byte output).
pub const MAC_BYTES: usize = 32;
/// Bytes in an rcon key (BLAKE2b's longest key).
pub const KEY_BYTES: usize = 64;
/// Longest command, bytes of UTF-8.
pub const MAX_COMMAND_BYTES: usize = 512;
/// Largest rcon datagram either way, bytes (well inside any path's MTU,
/// as A2S's replies).
pub const MAX_DATAGRAM_BYTES: usize = 1200;
/// Most datagrams one answer is split into.
pub const MAX_ANSWER_PARTS: u8 = 8;

/// A challenge datagram's size, bytes.
pub const CHALLENGE_PACKET_BYTES: usize = HEADER_BYTES + CHALLENGE_BYTES;
/// A challenge request's size, bytes: padded to the challenge it asks
/// for, so that an address that has proved nothing never gets more bytes
/// back than it sent.
pub const CHALLENGE_REQUEST_BYTES: usize = CHALLENGE_PACKET_BYTES;
/// A refusal's size, bytes: smaller than every request it answers.
pub const REFUSED_BYTES: usize = HEADER_BYTES + 1;
/// What comes before a command's text, bytes.
const COMMAND_HEADER_BYTES: usize = HEADER_BYTES + CHALLENGE_BYTES + MAC_BYTES;
/// The smallest and largest command datagrams, bytes.
pub const MIN_COMMAND_PACKET_BYTES: usize = COMMAND_HEADER_BYTES + 1;
pub const MAX_COMMAND_PACKET_BYTES: usize = COMMAND_HEADER_BYTES + MAX_COMMAND_BYTES;
/// What comes before an answer's text, bytes.
const ANSWER_HEADER_BYTES: usize = HEADER_BYTES + CHALLENGE_BYTES + 2 + MAC_BYTES;
/// Most text in one answer datagram, bytes of UTF-8.
pub const MAX_ANSWER_TEXT_BYTES: usize = MAX_DATAGRAM_BYTES - ANSWER_HEADER_BYTES;
/// What ends an answer too long for [`MAX_ANSWER_PARTS`] datagrams.
pub const CUT_MARKER: &str = "…(cut)";

// What an address that has proved nothing gets is never larger than what it
// sent: a challenge is no larger than its request, and a refusal is smaller
// than any request it can answer. Checked when this compiles.
const _: () = assert!(CHALLENGE_PACKET_BYTES <= CHALLENGE_REQUEST_BYTES);
const _: () = assert!(REFUSED_BYTES < CHALLENGE_REQUEST_BYTES && REFUSED_BYTES < MIN_COMMAND_PACKET_BYTES);

const KIND_CHALLENGE_REQUEST: u8 = 1;
const KIND_CHALLENGE: u8 = 2;
const KIND_COMMAND: u8 = 3;
const KIND_ANSWER: u8 = 4;
const KIND_REFUSED: u8 = 5;

/// The first byte under each MAC: a command's MAC can never pass for an
/// answer's, whatever the texts.
const DOMAIN_COMMAND: u8 = 1;
const DOMAIN_ANSWER: u8 = 2;

/// Argon2id's salt for the rcon key: not the netcode key's, so a server
/// whose game password and rcon password are the same still has two keys,
/// and a player who knows the game's key learns nothing of the console's.
const SALT: &[u8] = b"arena rcon key v1";
/// Argon2id memory cost, KiB, and passes (as the netcode key: OWASP's
/// minimum, 19 MiB, 2 passes).
const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;

/// A challenge the server hands out.
pub type Challenge = [u8; CHALLENGE_BYTES];
/// A keyed BLAKE2b-256 tag.
pub type Tag = [u8; MAC_BYTES];

/// Why a server refused a datagram, told to its sender. Unauthenticated (the
/// server answers it to anyone), so a client takes it as a hint only from
/// the address it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// The command's MAC did not check: the sender's password is wrong.
    BadMac,
    /// The challenge is not one the server issued to this address and still
    /// holds: expired, already used (a replay looks like this), or another
    /// address's.
    UnknownChallenge,
    /// The server has no rcon password: it runs no remote console.
    NoRcon,
    /// Too many rcon datagrams from this address (or from everyone) just now.
    Limited,
}

impl RefusalReason {
    fn code(self) -> u8 {
        match self {
            RefusalReason::BadMac => 1,
            RefusalReason::UnknownChallenge => 2,
            RefusalReason::NoRcon => 3,
            RefusalReason::Limited => 4,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => RefusalReason::BadMac,
            2 => RefusalReason::UnknownChallenge,
            3 => RefusalReason::NoRcon,
            4 => RefusalReason::Limited,
            _ => return None,
        })
    }
}

/// One rcon datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Client → server: a challenge, please. Padded to the challenge's size.
    ChallengeRequest,
    /// Server → client: use this once, within seconds, from this address.
    Challenge { challenge: Challenge },
    /// Client → server: run `command`; `mac` is [`command_mac`] over it.
    Command { challenge: Challenge, mac: Tag, command: String },
    /// Server → client: part `part` (from 0) of `parts` of the command's
    /// output; `mac` is [`answer_mac`] over it.
    Answer { challenge: Challenge, part: u8, parts: u8, mac: Tag, text: String },
    /// Server → client: no.
    Refused { reason: RefusalReason },
}

/// Why a command cannot be sent (or was not accepted as one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandError {
    Empty,
    TooLong {
        bytes: usize,
    },
    /// A control character (a line end among them) at this byte offset: a
    /// command is one line, and it is logged as it is.
    ControlCharacter {
        at: usize,
    },
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Empty => f.write_str("the command is empty"),
            CommandError::TooLong { bytes } => {
                write!(f, "the command is {bytes} bytes long; at most {MAX_COMMAND_BYTES} are allowed")
            }
            CommandError::ControlCharacter { at } => {
                write!(f, "the command has a control character (a line end, a tab, ...) at byte {at}")
            }
        }
    }
}

impl std::error::Error for CommandError {}

/// Why a datagram is not an rcon packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RconParseError {
    /// Not starting with [`MAGIC`] and a kind byte.
    NotRcon,
    /// A kind byte rcon does not have.
    UnknownKind(u8),
    /// Not the size its kind must have.
    Length { kind: u8, bytes: usize },
    /// A challenge request's padding is not all zeros.
    Padding,
    /// A command or answer text that is not UTF-8.
    NotUtf8,
    /// A command that is not one.
    Command(CommandError),
    /// An answer's text with a control character other than a line end or a tab.
    ControlInAnswer,
    /// An answer's part number out of its count, or a count of 0 or above
    /// [`MAX_ANSWER_PARTS`].
    BadPart { part: u8, parts: u8 },
    /// A refusal with a reason code rcon does not have.
    UnknownReason(u8),
}

impl std::fmt::Display for RconParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RconParseError::NotRcon => f.write_str("not an rcon datagram"),
            RconParseError::UnknownKind(k) => write!(f, "rcon kind {k} is not known"),
            RconParseError::Length { kind, bytes } => {
                write!(f, "an rcon datagram of kind {kind} cannot be {bytes} bytes")
            }
            RconParseError::Padding => f.write_str("an rcon challenge request whose padding is not zeros"),
            RconParseError::NotUtf8 => f.write_str("rcon text that is not UTF-8"),
            RconParseError::Command(e) => write!(f, "a bad rcon command: {e}"),
            RconParseError::ControlInAnswer => f.write_str("an rcon answer with a control character"),
            RconParseError::BadPart { part, parts } => write!(f, "rcon answer part {part} of {parts}"),
            RconParseError::UnknownReason(r) => write!(f, "rcon refusal reason {r} is not known"),
        }
    }
}

impl std::error::Error for RconParseError {}

/// Whether `datagram` claims to be rcon (its magic and a kind byte); it may
/// still not parse. The server's guard hands such datagrams to the rcon gate.
pub fn is_rcon(datagram: &[u8]) -> bool {
    datagram.len() >= HEADER_BYTES && datagram.starts_with(&MAGIC)
}

/// Whether `command` may be sent: 1 to [`MAX_COMMAND_BYTES`] bytes, no
/// control character.
pub fn check_command(command: &str) -> Result<(), CommandError> {
    if command.is_empty() {
        return Err(CommandError::Empty);
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(CommandError::TooLong { bytes: command.len() });
    }
    match command.char_indices().find(|(_, c)| c.is_control()) {
        Some((at, _)) => Err(CommandError::ControlCharacter { at }),
        None => Ok(()),
    }
}

/// Whether answer text may be shown as it is: line ends and tabs are the
/// only control characters (no terminal escapes, no carriage returns).
fn answer_text_ok(text: &str) -> bool {
    text.chars().all(|c| !c.is_control() || c == '\n' || c == '\t')
}

impl Packet {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        match self {
            Packet::ChallengeRequest => {
                out.push(KIND_CHALLENGE_REQUEST);
                out.resize(CHALLENGE_REQUEST_BYTES, 0);
            }
            Packet::Challenge { challenge } => {
                out.push(KIND_CHALLENGE);
                out.extend_from_slice(challenge);
            }
            Packet::Command { challenge, mac, command } => {
                out.push(KIND_COMMAND);
                out.extend_from_slice(challenge);
                out.extend_from_slice(mac);
                out.extend_from_slice(command.as_bytes());
            }
            Packet::Answer { challenge, part, parts, mac, text } => {
                out.push(KIND_ANSWER);
                out.extend_from_slice(challenge);
                out.push(*part);
                out.push(*parts);
                out.extend_from_slice(mac);
                out.extend_from_slice(text.as_bytes());
            }
            Packet::Refused { reason } => {
                out.push(KIND_REFUSED);
                out.push(reason.code());
            }
        }
        out
    }

    /// Reads one rcon datagram: the exact size its kind has (or a size in
    /// its range, for the two with text), valid UTF-8 without stray control
    /// characters, part numbers within their count. An error, never a panic.
    pub fn parse(datagram: &[u8]) -> Result<Packet, RconParseError> {
        if !is_rcon(datagram) {
            return Err(RconParseError::NotRcon);
        }
        let kind = datagram[MAGIC.len()];
        let body = &datagram[HEADER_BYTES..];
        let bytes = datagram.len();
        let length = |ok: bool| if ok { Ok(()) } else { Err(RconParseError::Length { kind, bytes }) };
        match kind {
            KIND_CHALLENGE_REQUEST => {
                length(bytes == CHALLENGE_REQUEST_BYTES)?;
                if body.iter().any(|&b| b != 0) {
                    return Err(RconParseError::Padding);
                }
                Ok(Packet::ChallengeRequest)
            }
            KIND_CHALLENGE => {
                length(bytes == CHALLENGE_PACKET_BYTES)?;
                let (challenge, _) = split_challenge(body).ok_or(RconParseError::Length { kind, bytes })?;
                Ok(Packet::Challenge { challenge })
            }
            KIND_COMMAND => {
                length((MIN_COMMAND_PACKET_BYTES..=MAX_COMMAND_PACKET_BYTES).contains(&bytes))?;
                let (challenge, rest) = split_challenge(body).ok_or(RconParseError::Length { kind, bytes })?;
                let (mac, text) =
                    rest.split_first_chunk::<MAC_BYTES>().ok_or(RconParseError::Length { kind, bytes })?;
                let command = std::str::from_utf8(text).map_err(|_| RconParseError::NotUtf8)?;
                check_command(command).map_err(RconParseError::Command)?;
                Ok(Packet::Command { challenge, mac: *mac, command: command.to_owned() })
            }
            KIND_ANSWER => {
                length((ANSWER_HEADER_BYTES..=MAX_DATAGRAM_BYTES).contains(&bytes))?;
                let (challenge, rest) = split_challenge(body).ok_or(RconParseError::Length { kind, bytes })?;
                let ([part, parts], rest) =
                    rest.split_first_chunk::<2>().ok_or(RconParseError::Length { kind, bytes })?;
                let (mac, text) =
                    rest.split_first_chunk::<MAC_BYTES>().ok_or(RconParseError::Length { kind, bytes })?;
                let (part, parts) = (*part, *parts);
                if parts == 0 || parts > MAX_ANSWER_PARTS || part >= parts {
                    return Err(RconParseError::BadPart { part, parts });
                }
                let text = std::str::from_utf8(text).map_err(|_| RconParseError::NotUtf8)?;
                if !answer_text_ok(text) {
                    return Err(RconParseError::ControlInAnswer);
                }
                Ok(Packet::Answer { challenge, part, parts, mac: *mac, text: text.to_owned() })
            }
            KIND_REFUSED => {
                length(bytes == REFUSED_BYTES)?;
                let code = body.first().copied().ok_or(RconParseError::Length { kind, bytes })?;
                let reason = RefusalReason::from_code(code).ok_or(RconParseError::UnknownReason(code))?;
                Ok(Packet::Refused { reason })
            }
            other => Err(RconParseError::UnknownKind(other)),
        }
    }

    /// A command with its MAC under `key`, if `command` may be sent.
    pub fn command(key: &RconKey, challenge: Challenge, command: &str) -> Result<Packet, CommandError> {
        check_command(command)?;
        Ok(Packet::Command { challenge, mac: command_mac(key, &challenge, command), command: command.to_owned() })
    }
}

fn split_challenge(body: &[u8]) -> Option<(Challenge, &[u8])> {
    body.split_first_chunk::<CHALLENGE_BYTES>().map(|(c, rest)| (*c, rest))
}

/// Why a password cannot open a remote console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RconKeyError {
    /// Empty, or only spaces: an empty password never opens rcon.
    Empty,
    TooLong {
        bytes: usize,
    },
    Kdf(String),
}

impl std::fmt::Display for RconKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RconKeyError::Empty => f.write_str("the rcon password is empty; an empty password never opens the console"),
            RconKeyError::TooLong { bytes } => {
                write!(f, "the rcon password is {bytes} bytes long; at most {MAX_PASSWORD_BYTES} are allowed")
            }
            RconKeyError::Kdf(e) => write!(f, "cannot derive a key from the rcon password: {e}"),
        }
    }
}

impl std::error::Error for RconKeyError {}

/// The key both ends MAC with, derived from the rcon password.
#[derive(Clone)]
pub struct RconKey([u8; KEY_BYTES]);

impl std::fmt::Debug for RconKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key (logs, panics, debug dumps).
        f.write_str("RconKey(..)")
    }
}

impl RconKey {
    /// The key of `password` (surrounding spaces do not count, as for the
    /// game's password). Argon2id at 19 MiB: tens of milliseconds, once per
    /// server start or per `arena rcon`.
    pub fn from_password(password: &str) -> Result<Self, RconKeyError> {
        let password = password.trim();
        if password.is_empty() {
            return Err(RconKeyError::Empty);
        }
        if password.len() > MAX_PASSWORD_BYTES {
            return Err(RconKeyError::TooLong { bytes: password.len() });
        }
        let params = argon2::Params::new(MEMORY_KIB, PASSES, 1, Some(KEY_BYTES))
            .map_err(|e| RconKeyError::Kdf(e.to_string()))?;
        let kdf = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut key = [0u8; KEY_BYTES];
        kdf.hash_password_into(password.as_bytes(), SALT, &mut key).map_err(|e| RconKeyError::Kdf(e.to_string()))?;
        Ok(Self(key))
    }

    /// A MAC under this key, started with its domain byte and the challenge.
    fn mac(&self, domain: u8, challenge: &Challenge) -> Blake2bMac<U32> {
        let mut mac = <Blake2bMac<U32> as KeyInit>::new((&self.0).into());
        Mac::update(&mut mac, &[domain]);
        Mac::update(&mut mac, challenge);
        mac
    }
}

fn command_state(key: &RconKey, challenge: &Challenge, command: &str) -> Blake2bMac<U32> {
    // The command runs to the end of the datagram, and everything before it
    // has a fixed size: no two (challenge, command) pairs MAC the same bytes.
    let mut mac = key.mac(DOMAIN_COMMAND, challenge);
    Mac::update(&mut mac, command.as_bytes());
    mac
}

fn answer_state(key: &RconKey, challenge: &Challenge, part: u8, parts: u8, text: &str) -> Blake2bMac<U32> {
    let mut mac = key.mac(DOMAIN_ANSWER, challenge);
    Mac::update(&mut mac, &[part, parts]);
    Mac::update(&mut mac, text.as_bytes());
    mac
}

/// The MAC of `command` sent with `challenge`.
pub fn command_mac(key: &RconKey, challenge: &Challenge, command: &str) -> Tag {
    command_state(key, challenge, command).finalize().into_bytes().into()
}

/// The MAC of one part of an answer: the challenge, the part, the count and
/// the text, so the client knows that the server that has the password
/// answered this command, and that no part was moved or dropped.
pub fn answer_mac(key: &RconKey, challenge: &Challenge, part: u8, parts: u8, text: &str) -> Tag {
    answer_state(key, challenge, part, parts, text).finalize().into_bytes().into()
}

/// Whether `mac` is `command`'s MAC, compared in constant time.
pub fn verify_command(key: &RconKey, challenge: &Challenge, command: &str, mac: &Tag) -> bool {
    command_state(key, challenge, command).verify_slice(mac).is_ok()
}

/// Whether `mac` is an answer part's MAC, compared in constant time.
pub fn verify_answer(key: &RconKey, challenge: &Challenge, part: u8, parts: u8, text: &str, mac: &Tag) -> bool {
    answer_state(key, challenge, part, parts, text).verify_slice(mac).is_ok()
}

/// `text` as an answer may carry it: carriage returns left out, other
/// control characters but line ends and tabs shown as U+FFFD.
fn clean_answer_text(text: &str) -> String {
    text.chars()
        .filter(|&c| c != '\r')
        .map(|c| if c.is_control() && c != '\n' && c != '\t' { char::REPLACEMENT_CHARACTER } else { c })
        .collect()
}

/// The longest prefix of `text` of at most `bytes` bytes that ends on a char boundary.
fn head(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The answer datagrams of `text` to the command sent with `challenge`:
/// split on char boundaries into at most [`MAX_ANSWER_PARTS`] datagrams of
/// at most [`MAX_DATAGRAM_BYTES`], each MACed; a longer text is cut and ends
/// with [`CUT_MARKER`]. An empty text is one empty part.
pub fn answer_packets(key: &RconKey, challenge: &Challenge, text: &str) -> Vec<Packet> {
    let text = clean_answer_text(text);
    let mut chunks: Vec<String> = Vec::new();
    let mut rest = text.as_str();
    loop {
        let last = chunks.len() + 1 == usize::from(MAX_ANSWER_PARTS);
        if rest.len() <= MAX_ANSWER_TEXT_BYTES {
            chunks.push(rest.to_owned());
            break;
        }
        if last {
            // Too long for the parts left: this one ends with the marker.
            let kept = head(rest, MAX_ANSWER_TEXT_BYTES - CUT_MARKER.len());
            chunks.push(format!("{kept}{CUT_MARKER}"));
            break;
        }
        let chunk = head(rest, MAX_ANSWER_TEXT_BYTES);
        chunks.push(chunk.to_owned());
        rest = &rest[chunk.len()..];
    }
    // At most MAX_ANSWER_PARTS chunks by the loop above.
    let parts = u8::try_from(chunks.len()).unwrap_or(MAX_ANSWER_PARTS).min(MAX_ANSWER_PARTS);
    chunks
        .into_iter()
        .zip(0..parts)
        .map(|(text, part)| Packet::Answer {
            challenge: *challenge,
            part,
            parts,
            mac: answer_mac(key, challenge, part, parts, &text),
            text,
        })
        .collect()
}

/// Why the parts of an answer do not make one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerError {
    NoParts,
    /// A packet that is not an answer.
    NotAnswer,
    /// An answer to another command (another challenge).
    WrongChallenge,
    /// Parts that disagree on their count, or a part number out of it.
    PartsDisagree,
    /// Two different texts for one part.
    Duplicate {
        part: u8,
    },
    Missing {
        part: u8,
    },
    /// A part whose MAC does not check: not from the server with the password.
    BadMac {
        part: u8,
    },
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerError::NoParts => f.write_str("no part of the answer came"),
            AnswerError::NotAnswer => f.write_str("a datagram that is not part of an answer"),
            AnswerError::WrongChallenge => f.write_str("an answer to another command"),
            AnswerError::PartsDisagree => f.write_str("answer parts that disagree on their count"),
            AnswerError::Duplicate { part } => write!(f, "two different texts for answer part {part}"),
            AnswerError::Missing { part } => write!(f, "answer part {part} is missing"),
            AnswerError::BadMac { part } => {
                write!(f, "answer part {part} was not signed with the rcon password (not from the server?)")
            }
        }
    }
}

impl std::error::Error for AnswerError {}

/// The text of an answer from its parts, in any order (a part repeated
/// word for word, as the network may, counts once): every part an answer to
/// `challenge` whose MAC checks under `key`, all of one count, none missing.
pub fn join_answer(key: &RconKey, challenge: &Challenge, parts: &[Packet]) -> Result<String, AnswerError> {
    let mut slots: [Option<&str>; MAX_ANSWER_PARTS as usize] = Default::default();
    let mut count = None;
    for packet in parts {
        let Packet::Answer { challenge: c, part, parts, mac, text } = packet else {
            return Err(AnswerError::NotAnswer);
        };
        if c != challenge {
            return Err(AnswerError::WrongChallenge);
        }
        if *parts == 0 || *parts > MAX_ANSWER_PARTS || part >= parts || count.is_some_and(|n| n != *parts) {
            return Err(AnswerError::PartsDisagree);
        }
        count = Some(*parts);
        if !verify_answer(key, challenge, *part, *parts, text, mac) {
            return Err(AnswerError::BadMac { part: *part });
        }
        let slot = slots.get_mut(usize::from(*part)).ok_or(AnswerError::PartsDisagree)?;
        match slot {
            Some(earlier) if *earlier != text.as_str() => return Err(AnswerError::Duplicate { part: *part }),
            _ => *slot = Some(text),
        }
    }
    let count = count.ok_or(AnswerError::NoParts)?;
    let mut joined = String::new();
    for (part, slot) in (0..count).zip(slots.iter()) {
        joined.push_str(slot.ok_or(AnswerError::Missing { part })?);
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::datagram::Refusal;
    use crate::query::{QueryError, Reply, Request};

    /// Argon2id once for the whole module: every test shares the key.
    fn key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::from_password("correct horse").unwrap())
    }

    fn other_key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::from_password("battery staple").unwrap())
    }

    const C: Challenge = [7; CHALLENGE_BYTES];

    fn every_kind() -> Vec<Packet> {
        let mut packets = vec![
            Packet::ChallengeRequest,
            Packet::Challenge { challenge: C },
            Packet::command(key(), C, "status").unwrap(),
            Packet::command(key(), C, &"é".repeat(MAX_COMMAND_BYTES / 2)).unwrap(),
        ];
        packets.extend(answer_packets(key(), &C, "line one\nline two\twith a tab"));
        packets.extend(answer_packets(key(), &C, ""));
        for reason in
            [RefusalReason::BadMac, RefusalReason::UnknownChallenge, RefusalReason::NoRcon, RefusalReason::Limited]
        {
            packets.push(Packet::Refused { reason });
        }
        packets
    }

    #[test]
    fn rcon_every_packet_round_trips_at_its_documented_size() {
        for packet in every_kind() {
            let bytes = packet.encode();
            assert_eq!(Packet::parse(&bytes), Ok(packet.clone()));
            assert!(bytes.len() <= MAX_DATAGRAM_BYTES);
            let expected = match &packet {
                Packet::ChallengeRequest => CHALLENGE_REQUEST_BYTES,
                Packet::Challenge { .. } => CHALLENGE_PACKET_BYTES,
                Packet::Command { command, .. } => COMMAND_HEADER_BYTES + command.len(),
                Packet::Answer { text, .. } => ANSWER_HEADER_BYTES + text.len(),
                Packet::Refused { .. } => REFUSED_BYTES,
            };
            assert_eq!(bytes.len(), expected, "{packet:?}");
            // One byte more or less is another size: refused, never read as
            // something else (the text kinds have ranges, checked below).
            if !matches!(packet, Packet::Command { .. } | Packet::Answer { .. }) {
                let mut longer = bytes.clone();
                longer.push(0);
                assert!(matches!(Packet::parse(&longer), Err(RconParseError::Length { .. })), "{packet:?}");
                assert!(
                    matches!(Packet::parse(&bytes[..bytes.len() - 1]), Err(RconParseError::Length { .. })),
                    "{packet:?}"
                );
            }
        }
        assert_eq!(CHALLENGE_REQUEST_BYTES, 25);
        assert_eq!(CHALLENGE_PACKET_BYTES, 25);
        assert_eq!(MIN_COMMAND_PACKET_BYTES, 58);
        assert_eq!(MAX_COMMAND_PACKET_BYTES, 569);
        assert_eq!(MAX_ANSWER_TEXT_BYTES, 1141);
    }

    #[test]
    fn rcon_bad_datagrams_are_typed_errors() {
        let mut request = Packet::ChallengeRequest.encode();
        request[20] = 1;
        assert_eq!(Packet::parse(&request), Err(RconParseError::Padding));
        assert_eq!(Packet::parse(&MAGIC), Err(RconParseError::NotRcon));
        assert_eq!(Packet::parse(b""), Err(RconParseError::NotRcon));
        assert_eq!(Packet::parse(&[MAGIC.as_slice(), &[9]].concat()), Err(RconParseError::UnknownKind(9)));
        assert_eq!(Packet::parse(&[MAGIC.as_slice(), &[5, 0]].concat()), Err(RconParseError::UnknownReason(0)));
        // Commands: empty, too long, a line end, not UTF-8.
        let command = |text: &[u8]| [MAGIC.as_slice(), &[KIND_COMMAND], &C, &[0; MAC_BYTES], text].concat();
        assert!(matches!(Packet::parse(&command(b"")), Err(RconParseError::Length { .. })));
        assert!(matches!(Packet::parse(&command(&[b'x'; MAX_COMMAND_BYTES + 1])), Err(RconParseError::Length { .. })));
        assert_eq!(
            Packet::parse(&command(b"kick 1\nquit")),
            Err(RconParseError::Command(CommandError::ControlCharacter { at: 6 }))
        );
        assert_eq!(Packet::parse(&command(b"\xC3\x28")), Err(RconParseError::NotUtf8));
        assert!(Packet::command(key(), C, &"x".repeat(MAX_COMMAND_BYTES + 1)).is_err());
        assert_eq!(Packet::command(key(), C, "\u{1b}[2J"), Err(CommandError::ControlCharacter { at: 0 }));
        // Answers: part numbers, escapes.
        let answer = |part: u8, parts: u8, text: &[u8]| {
            [MAGIC.as_slice(), &[KIND_ANSWER], &C, &[part, parts], &[0; MAC_BYTES], text].concat()
        };
        assert_eq!(Packet::parse(&answer(0, 0, b"")), Err(RconParseError::BadPart { part: 0, parts: 0 }));
        assert_eq!(Packet::parse(&answer(2, 2, b"")), Err(RconParseError::BadPart { part: 2, parts: 2 }));
        assert_eq!(Packet::parse(&answer(0, 9, b"")), Err(RconParseError::BadPart { part: 0, parts: 9 }));
        assert_eq!(Packet::parse(&answer(0, 1, b"\x1b[31m")), Err(RconParseError::ControlInAnswer));
        assert!(matches!(
            Packet::parse(&answer(0, 1, &[b'x'; MAX_ANSWER_TEXT_BYTES + 1])),
            Err(RconParseError::Length { .. })
        ));
    }

    #[test]
    fn rcon_never_collides_with_the_other_connectionless_datagrams() {
        // Ours are none of theirs.
        for packet in every_kind() {
            let bytes = packet.encode();
            assert!(matches!(Request::parse(&bytes), Err(QueryError::UnknownType(b'r'))), "{packet:?}");
            assert!(Reply::parse(&bytes).is_err(), "{packet:?}");
            assert_eq!(Refusal::decode(&bytes), None);
        }
        // Theirs are none of ours: A2S both ways, the game's refusals,
        // dpmaster's text commands and Arena's extension (arena_master's
        // parsers are checked against ours in arena_server's tests), and a
        // Quake-style text rcon.
        let mut theirs: Vec<Vec<u8>> = Vec::new();
        for kind in [crate::query::QueryKind::Info, crate::query::QueryKind::Players, crate::query::QueryKind::Rules] {
            theirs.push(Request { kind, challenge: None }.encode());
            theirs.push(Request { kind, challenge: Some(-1) }.encode());
        }
        theirs.extend(Reply::Challenge(1234).datagrams(0));
        theirs.extend(Reply::Rules(vec![("a".into(), "b".into())]).datagrams(0));
        theirs.push(Refusal::WrongVersion.encode().to_vec());
        theirs.push(Refusal::PasswordMismatch { server_has_password: true }.encode().to_vec());
        for text in [
            &b"getinfo abc"[..],
            b"heartbeat DarkPlaces\n",
            b"getservers Arena 15",
            b"reachCheck abcdefgh",
            b"punchProbe",
            b"rcon hunter2 status",
            b"rcon",
            b"rconx",
        ] {
            theirs.push([CONNECTIONLESS_PREFIX.as_slice(), text].concat());
        }
        for datagram in theirs {
            assert!(Packet::parse(&datagram).is_err(), "{datagram:?} read as rcon");
        }
    }

    #[test]
    fn rcon_key_is_its_own_and_never_printed() {
        assert_eq!(RconKey::from_password("").map(|_| ()), Err(RconKeyError::Empty));
        assert_eq!(RconKey::from_password("   ").map(|_| ()), Err(RconKeyError::Empty));
        assert!(matches!(RconKey::from_password(&"x".repeat(129)), Err(RconKeyError::TooLong { bytes: 129 })));
        let again = RconKey::from_password("  correct horse ").unwrap();
        assert_eq!(again.0, key().0, "surrounding spaces do not count");
        assert_ne!(key().0, other_key().0);
        let netcode = crate::key::Password::new("correct horse").unwrap().key().unwrap();
        assert_ne!(key().0[..netcode.len()], netcode, "the rcon key is not the netcode key");
        let shown = format!("{:?}", key());
        assert_eq!(shown, "RconKey(..)");
    }

    #[test]
    fn rcon_macs_check_only_with_the_key_the_challenge_and_the_domain() {
        let mac = command_mac(key(), &C, "status");
        assert!(verify_command(key(), &C, "status", &mac));
        assert!(!verify_command(other_key(), &C, "status", &mac), "another password");
        assert!(!verify_command(key(), &[8; CHALLENGE_BYTES], "status", &mac), "another challenge");
        assert!(!verify_command(key(), &C, "status ", &mac), "another command");
        // A command's MAC is no answer's, whatever the bytes.
        assert_ne!(answer_mac(key(), &C, b's', b't', "atus"), command_mac(key(), &C, "status"));
        let tag = answer_mac(key(), &C, 0, 1, "ok");
        assert!(verify_answer(key(), &C, 0, 1, "ok", &tag));
        assert!(!verify_answer(key(), &C, 0, 2, "ok", &tag), "another count");
        assert!(!verify_answer(key(), &C, 1, 2, "ok", &tag), "another part");
        assert!(!verify_answer(other_key(), &C, 0, 1, "ok", &tag));
    }

    #[test]
    fn rcon_answers_split_join_and_cut() {
        // Multi-byte characters straddle every split point.
        let long: String = (0..3000).map(|i| ["a", "é", "€", "𝄞"][i % 4]).collect();
        let packets = answer_packets(key(), &C, &long);
        assert!(packets.len() > 1 && packets.len() <= usize::from(MAX_ANSWER_PARTS));
        for p in &packets {
            assert!(p.encode().len() <= MAX_DATAGRAM_BYTES);
            assert_eq!(Packet::parse(&p.encode()).as_ref(), Ok(p));
        }
        let mut shuffled = packets.clone();
        shuffled.reverse();
        shuffled.push(packets[0].clone());
        assert_eq!(join_answer(key(), &C, &shuffled), Ok(long.clone()), "any order, repeats count once");

        // Too long for eight parts: cut, marked, every part full-sized.
        let huge: String = (0..20_000).map(|i| ["a", "é", "€", "𝄞"][i % 4]).collect();
        let packets = answer_packets(key(), &C, &huge);
        assert_eq!(packets.len(), usize::from(MAX_ANSWER_PARTS));
        let joined = join_answer(key(), &C, &packets).unwrap();
        assert!(joined.ends_with(CUT_MARKER));
        assert!(huge.starts_with(joined.trim_end_matches(CUT_MARKER)));
        assert!(joined.len() > 8 * (MAX_ANSWER_TEXT_BYTES - 4) - CUT_MARKER.len());
        for p in &packets {
            assert!(p.encode().len() <= MAX_DATAGRAM_BYTES);
        }

        // Escapes out, line ends kept; an empty answer is one empty part.
        let packets = answer_packets(key(), &C, "red\x1b[31m\r\nnext\tcol");
        assert_eq!(join_answer(key(), &C, &packets), Ok("red\u{FFFD}[31m\nnext\tcol".into()));
        let empty = answer_packets(key(), &C, "");
        assert_eq!(empty.len(), 1);
        assert_eq!(join_answer(key(), &C, &empty), Ok(String::new()));
    }

    #[test]
    fn rcon_joining_refuses_forged_moved_and_missing_parts() {
        let text = "x".repeat(MAX_ANSWER_TEXT_BYTES * 2 + 10);
        let packets = answer_packets(key(), &C, &text);
        assert_eq!(packets.len(), 3);
        assert_eq!(join_answer(key(), &C, &[]), Err(AnswerError::NoParts));
        assert_eq!(join_answer(key(), &C, &packets[..2]), Err(AnswerError::Missing { part: 2 }));
        assert_eq!(join_answer(other_key(), &C, &packets), Err(AnswerError::BadMac { part: 0 }));
        assert_eq!(join_answer(key(), &[1; CHALLENGE_BYTES], &packets), Err(AnswerError::WrongChallenge));
        assert_eq!(
            join_answer(key(), &C, &[Packet::Refused { reason: RefusalReason::BadMac }]),
            Err(AnswerError::NotAnswer)
        );
        // A part moved to another place, or its text changed, breaks its MAC.
        let mut moved = packets.clone();
        if let Packet::Answer { part, .. } = &mut moved[0] {
            *part = 1;
        }
        assert_eq!(join_answer(key(), &C, &moved), Err(AnswerError::BadMac { part: 1 }));
        let mut changed = packets.clone();
        if let Packet::Answer { text, .. } = &mut changed[2] {
            text.push('!');
        }
        assert_eq!(join_answer(key(), &C, &changed), Err(AnswerError::BadMac { part: 2 }));
        // Parts of two answers of different counts.
        let short = answer_packets(key(), &C, "short");
        assert_eq!(join_answer(key(), &C, &[packets[0].clone(), short[0].clone()]), Err(AnswerError::PartsDisagree));
        // Two validly MACed different texts for one part (a server answering
        // the same challenge twice) are refused, not guessed between.
        let twice: Vec<Packet> =
            answer_packets(key(), &C, "one").into_iter().chain(answer_packets(key(), &C, "two")).collect();
        assert_eq!(join_answer(key(), &C, &twice), Err(AnswerError::Duplicate { part: 0 }));
    }

    #[test]
    fn rcon_parse_never_panics_and_what_parses_re_encodes() {
        // A small deterministic generator: random bytes behind the magic,
        // and mutations of every valid packet.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let seeds: Vec<Vec<u8>> = every_kind().iter().map(Packet::encode).collect();
        for i in 0..20_000 {
            let mut bytes = if i % 2 == 0 {
                let len = (next() % 1300) as usize;
                let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if len >= HEADER_BYTES {
                    b[..MAGIC.len()].copy_from_slice(&MAGIC);
                    b[MAGIC.len()] = (next() % 7) as u8;
                }
                b
            } else {
                seeds[(next() % seeds.len() as u64) as usize].clone()
            };
            for _ in 0..(next() % 4) {
                if bytes.is_empty() {
                    break;
                }
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] ^= 1 << (next() % 8);
            }
            if let Ok(packet) = Packet::parse(&bytes) {
                assert_eq!(packet.encode(), bytes);
            }
        }
    }
}
