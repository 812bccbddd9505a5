//! The remote console's datagrams (rcon, issues 40 and 60): a client that
//! knows the server's rcon password asks for a challenge, which comes with
//! the server's salt; it derives the key from the password and that salt,
//! sends its command sealed (encrypted and authenticated) for that
//! challenge, and reads back an answer sealed the same way. Neither the
//! password nor a command's or an answer's text ever crosses in clear: a
//! capture of `sv_password NEWPASS` holds neither word. Pure: no sockets, no
//! clocks. The server's bookkeeping (challenges, rate limits) is
//! `arena_server`'s `RconGate`; the client's exchange is
//! `arena_client::remote_console`.
//!
//! The key is Argon2id of the password under the server's salt: 16 random
//! bytes the server makes once at its start and hands out with every
//! challenge (not a secret). Two servers with one password have two keys, a
//! table of passwords computed for one server fits no other, and the key is
//! never the netcode key of a game with the same password (whose salt is
//! fixed). From it come, by keyed BLAKE2b over a label, a seal key and a
//! nonce key for each way, so a command's seal can never pass for an
//! answer's. A text is sealed with XChaCha20-Poly1305: its additional data
//! is every byte of the datagram before the nonce (the header, the challenge
//! and an answer's place), so a seal opens only for its challenge, its kind
//! and its place; its 24-byte nonce is synthetic (as in SIV): keyed
//! BLAKE2b-192 of that additional data and the text, under the way's nonce
//! key. The challenge is not authenticated, so a client may be handed one
//! challenge twice; its nonce still repeats only for the same text under the
//! same challenge (the same datagram, which says nothing new), and sealing
//! needs no randomness. What a capture still shows: the kinds, the
//! challenges, the salt, an answer's place, and each text's length (texts
//! are not padded).
//!
//! Every datagram is connectionless: `FF FF FF FF`, the ASCII text `rcon`,
//! then one kind byte (1 to 5). No other connectionless datagram on the game
//! port starts so: A2S puts one type byte after the prefix (`T`, `U`, `V`,
//! `A`, `I`, `D`, `E`), the server's refusals `z`, and dpmaster's commands
//! and Arena's extension are words followed by a space, a newline or
//! nothing, never by a byte below 0x20. A Quake-style text rcon
//! (`rcon PASSWORD COMMAND`) has a space there and is refused too.
//!
//! Layout (all fixed offsets; the sealed text, UTF-8 before sealing, runs
//! to the datagram's end, its 16-byte tag last):
//!
//! | kind | name              | after the 9-byte header                                                | bytes   |
//! |------|-------------------|------------------------------------------------------------------------|---------|
//! | 1    | challenge request | 32 zero bytes (padding: the answer is never larger)                    | 41      |
//! | 2    | challenge         | challenge (16), salt (16)                                              | 41      |
//! | 3    | command           | challenge (16), nonce (24), sealed command (1-512 + tag 16)            | 66-577  |
//! | 4    | answer            | challenge (16), part, parts, nonce (24), sealed text (0-1133 + tag 16) | 67-1200 |
//! | 5    | refused           | reason (1 byte)                                                        | 10      |
//!
//! # Files, bottom up
//!
//! - `key`: [`RconKey`], Argon2id of the password under the salt, and its
//!   subkeys; [`RconKeyError`].

mod key;

use blake2::Blake2bMac;
use blake2::digest::consts::U24;
use blake2::digest::{KeyInit as MacKeyInit, Mac};
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};

use self::key::WayKeys;
pub use self::key::{RconKey, RconKeyError, check_password, new_salt};
use crate::datagram::CONNECTIONLESS_PREFIX;

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
/// Bytes in a server's salt (Argon2's recommended length).
pub const SALT_BYTES: usize = 16;
/// Bytes in a seal's nonce (XChaCha20-Poly1305's).
pub const NONCE_BYTES: usize = 24;
/// Bytes in a seal's tag (Poly1305's), after the encrypted text.
pub const TAG_BYTES: usize = 16;
/// Bytes of Argon2id output a key is derived from (BLAKE2b's longest key:
/// the subkeys are keyed BLAKE2b of it).
pub const KEY_BYTES: usize = 64;
/// Longest command, bytes of UTF-8 (before sealing).
pub const MAX_COMMAND_BYTES: usize = 512;
/// Largest rcon datagram either way, bytes (well inside any path's MTU,
/// as A2S's replies).
pub const MAX_DATAGRAM_BYTES: usize = 1200;
/// Most datagrams one answer is split into.
pub const MAX_ANSWER_PARTS: u8 = 8;

/// A challenge datagram's size, bytes.
pub const CHALLENGE_PACKET_BYTES: usize = HEADER_BYTES + CHALLENGE_BYTES + SALT_BYTES;
/// A challenge request's size, bytes: padded to the challenge it asks
/// for, so that an address that has proved nothing never gets more bytes
/// back than it sent.
pub const CHALLENGE_REQUEST_BYTES: usize = CHALLENGE_PACKET_BYTES;
/// A refusal's size, bytes: smaller than every request it answers.
pub const REFUSED_BYTES: usize = HEADER_BYTES + 1;
/// What comes before a command's sealed text, bytes.
const COMMAND_HEADER_BYTES: usize = HEADER_BYTES + CHALLENGE_BYTES + NONCE_BYTES;
/// The smallest and largest command datagrams, bytes.
pub const MIN_COMMAND_PACKET_BYTES: usize = COMMAND_HEADER_BYTES + 1 + TAG_BYTES;
pub const MAX_COMMAND_PACKET_BYTES: usize = COMMAND_HEADER_BYTES + MAX_COMMAND_BYTES + TAG_BYTES;
/// What comes before an answer's sealed text, bytes.
const ANSWER_HEADER_BYTES: usize = HEADER_BYTES + CHALLENGE_BYTES + 2 + NONCE_BYTES;
/// The smallest answer datagram (an empty text), bytes.
pub const MIN_ANSWER_PACKET_BYTES: usize = ANSWER_HEADER_BYTES + TAG_BYTES;
/// Most text in one answer datagram, bytes of UTF-8 (before sealing).
pub const MAX_ANSWER_TEXT_BYTES: usize = MAX_DATAGRAM_BYTES - MIN_ANSWER_PACKET_BYTES;
/// What ends an answer too long for [`MAX_ANSWER_PARTS`] datagrams.
pub const CUT_MARKER: &str = "…(cut)";

// What an address that has proved nothing gets is never larger than what it
// sent: a challenge is no larger than its request, and a refusal is smaller
// than any request it can answer. Checked when this compiles.
const _: () = assert!(CHALLENGE_PACKET_BYTES <= CHALLENGE_REQUEST_BYTES);
const _: () = assert!(REFUSED_BYTES < CHALLENGE_REQUEST_BYTES && REFUSED_BYTES < MIN_COMMAND_PACKET_BYTES);
const _: () = assert!(MAX_COMMAND_PACKET_BYTES <= MAX_DATAGRAM_BYTES);

const KIND_CHALLENGE_REQUEST: u8 = 1;
const KIND_CHALLENGE: u8 = 2;
const KIND_COMMAND: u8 = 3;
const KIND_ANSWER: u8 = 4;
const KIND_REFUSED: u8 = 5;

/// A challenge the server hands out.
pub type Challenge = [u8; CHALLENGE_BYTES];
/// A server's salt, handed out with each challenge.
pub type Salt = [u8; SALT_BYTES];
/// A seal's nonce.
pub type Nonce = [u8; NONCE_BYTES];

/// A sealed text as it travels: its nonce, then the encrypted text followed
/// by its tag (`bytes` is the text's length plus [`TAG_BYTES`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    pub nonce: Nonce,
    pub bytes: Vec<u8>,
}

/// Why a server refused a datagram, told to its sender. Unauthenticated (the
/// server answers it to anyone), so a client takes it as a hint only from
/// the address it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// The command's seal did not open (its tag, Poly1305's MAC, did not
    /// check): the sender's password is wrong.
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
    /// Server → client: use this once, within seconds, from this address,
    /// with the key of the password under this salt.
    Challenge { challenge: Challenge, salt: Salt },
    /// Client → server: a command, [`seal_command`]ed for `challenge`.
    Command { challenge: Challenge, sealed: Sealed },
    /// Server → client: part `part` (from 0) of `parts` of the command's
    /// output, sealed for the challenge and that place ([`open_answer`]).
    Answer { challenge: Challenge, part: u8, parts: u8, sealed: Sealed },
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

/// Why a datagram is not an rcon packet. What is sealed is not read here:
/// see [`OpenError`].
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
            RconParseError::BadPart { part, parts } => write!(f, "rcon answer part {part} of {parts}"),
            RconParseError::UnknownReason(r) => write!(f, "rcon refusal reason {r} is not known"),
        }
    }
}

impl std::error::Error for RconParseError {}

/// Why a sealed command or answer part does not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Its tag does not check: sealed under another key (a wrong password,
    /// or another server's salt), for another challenge, kind or place, or
    /// changed on the way. Nothing of it is read.
    BadMac,
    /// Opened, but not UTF-8 (only a peer with the key could send it).
    NotUtf8,
    /// An opened command that is not one.
    Command(CommandError),
    /// An opened answer text with a control character other than a line
    /// end or a tab.
    ControlInAnswer,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::BadMac => f.write_str("not sealed with the rcon password's key for this challenge"),
            OpenError::NotUtf8 => f.write_str("rcon text that is not UTF-8"),
            OpenError::Command(e) => write!(f, "a bad rcon command: {e}"),
            OpenError::ControlInAnswer => f.write_str("an rcon answer with a control character"),
        }
    }
}

impl std::error::Error for OpenError {}

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
            Packet::Challenge { challenge, salt } => {
                out.push(KIND_CHALLENGE);
                out.extend_from_slice(challenge);
                out.extend_from_slice(salt);
            }
            Packet::Command { challenge, sealed } => {
                out.push(KIND_COMMAND);
                out.extend_from_slice(challenge);
                out.extend_from_slice(&sealed.nonce);
                out.extend_from_slice(&sealed.bytes);
            }
            Packet::Answer { challenge, part, parts, sealed } => {
                out.push(KIND_ANSWER);
                out.extend_from_slice(challenge);
                out.push(*part);
                out.push(*parts);
                out.extend_from_slice(&sealed.nonce);
                out.extend_from_slice(&sealed.bytes);
            }
            Packet::Refused { reason } => {
                out.push(KIND_REFUSED);
                out.push(reason.code());
            }
        }
        out
    }

    /// Reads one rcon datagram: the exact size its kind has (or a size in
    /// its range, for the two that carry a sealed text), part numbers within
    /// their count. The size is checked before anything is copied. What is
    /// sealed stays sealed: [`open_command`] and [`open_answer`] read it. An
    /// error, never a panic.
    pub fn parse(datagram: &[u8]) -> Result<Packet, RconParseError> {
        if !is_rcon(datagram) {
            return Err(RconParseError::NotRcon);
        }
        let kind = datagram[MAGIC.len()];
        let body = &datagram[HEADER_BYTES..];
        let bytes = datagram.len();
        let short = RconParseError::Length { kind, bytes };
        let length = |ok: bool| if ok { Ok(()) } else { Err(short) };
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
                let (challenge, rest) = split_challenge(body).ok_or(short)?;
                let salt = rest.first_chunk::<SALT_BYTES>().ok_or(short)?;
                Ok(Packet::Challenge { challenge, salt: *salt })
            }
            KIND_COMMAND => {
                length((MIN_COMMAND_PACKET_BYTES..=MAX_COMMAND_PACKET_BYTES).contains(&bytes))?;
                let (challenge, rest) = split_challenge(body).ok_or(short)?;
                let sealed = split_sealed(rest).ok_or(short)?;
                Ok(Packet::Command { challenge, sealed })
            }
            KIND_ANSWER => {
                length((MIN_ANSWER_PACKET_BYTES..=MAX_DATAGRAM_BYTES).contains(&bytes))?;
                let (challenge, rest) = split_challenge(body).ok_or(short)?;
                let ([part, parts], rest) = rest.split_first_chunk::<2>().ok_or(short)?;
                let (part, parts) = (*part, *parts);
                if parts == 0 || parts > MAX_ANSWER_PARTS || part >= parts {
                    return Err(RconParseError::BadPart { part, parts });
                }
                let sealed = split_sealed(rest).ok_or(short)?;
                Ok(Packet::Answer { challenge, part, parts, sealed })
            }
            KIND_REFUSED => {
                length(bytes == REFUSED_BYTES)?;
                let code = body.first().copied().ok_or(short)?;
                let reason = RefusalReason::from_code(code).ok_or(RconParseError::UnknownReason(code))?;
                Ok(Packet::Refused { reason })
            }
            other => Err(RconParseError::UnknownKind(other)),
        }
    }

    /// A command sealed under `key` for `challenge`, if `command` may be sent.
    pub fn command(key: &RconKey, challenge: Challenge, command: &str) -> Result<Packet, CommandError> {
        Ok(Packet::Command { challenge, sealed: seal_command(key, &challenge, command)? })
    }
}

fn split_challenge(body: &[u8]) -> Option<(Challenge, &[u8])> {
    body.split_first_chunk::<CHALLENGE_BYTES>().map(|(c, rest)| (*c, rest))
}

/// A nonce and the sealed bytes after it (at least a tag's worth; the
/// callers bounded the whole datagram's size already).
fn split_sealed(rest: &[u8]) -> Option<Sealed> {
    let (nonce, bytes) = rest.split_first_chunk::<NONCE_BYTES>()?;
    (bytes.len() >= TAG_BYTES).then(|| Sealed { nonce: *nonce, bytes: bytes.to_vec() })
}

/// What a seal authenticates without hiding: every byte of its datagram
/// before the nonce (the header, the challenge, an answer's place).
fn associated_data(kind: u8, challenge: &Challenge, place: &[u8]) -> Vec<u8> {
    [MAGIC.as_slice(), &[kind], challenge, place].concat()
}

/// `text` sealed under `keys` with `aad`: the synthetic nonce (keyed
/// BLAKE2b-192 of the additional data, whose size is fixed for each way,
/// and the text), then the encrypted text and its tag.
fn seal(keys: &WayKeys, aad: &[u8], text: &[u8]) -> Sealed {
    let mut mac = <Blake2bMac<U24> as MacKeyInit>::new((&keys.nonce).into());
    Mac::update(&mut mac, aad);
    Mac::update(&mut mac, text);
    let nonce: Nonce = mac.finalize().into_bytes().into();
    let mut bytes = text.to_vec();
    let cipher = XChaCha20Poly1305::new((&keys.seal).into());
    match cipher.encrypt_in_place_detached(&XNonce::from(nonce), aad, &mut bytes) {
        Ok(tag) => bytes.extend_from_slice(&tag),
        // Only a text of hundreds of GiB fails (ours are at most 1133
        // bytes). Were it to, nothing of the text goes: zeros, whose tag
        // never checks.
        Err(_) => bytes = vec![0; text.len() + TAG_BYTES],
    }
    Sealed { nonce, bytes }
}

/// The text of `sealed` under `keys` with `aad`, if its tag checks
/// (compared in constant time, before any of it is decrypted).
fn open(keys: &WayKeys, aad: &[u8], sealed: &Sealed) -> Result<Vec<u8>, OpenError> {
    let (text, tag) = sealed.bytes.split_last_chunk::<TAG_BYTES>().ok_or(OpenError::BadMac)?;
    let mut text = text.to_vec();
    let cipher = XChaCha20Poly1305::new((&keys.seal).into());
    cipher
        .decrypt_in_place_detached(&XNonce::from(sealed.nonce), aad, &mut text, &Tag::from(*tag))
        .map_err(|_| OpenError::BadMac)?;
    Ok(text)
}

/// `command` sealed under `key` for `challenge`, if it may be sent.
pub fn seal_command(key: &RconKey, challenge: &Challenge, command: &str) -> Result<Sealed, CommandError> {
    check_command(command)?;
    Ok(seal(&key.command, &associated_data(KIND_COMMAND, challenge, &[]), command.as_bytes()))
}

/// The command in `sealed`, sent with `challenge`, if it was sealed under
/// `key` for that challenge and is a command ([`check_command`]).
pub fn open_command(key: &RconKey, challenge: &Challenge, sealed: &Sealed) -> Result<String, OpenError> {
    let text = open(&key.command, &associated_data(KIND_COMMAND, challenge, &[]), sealed)?;
    let command = String::from_utf8(text).map_err(|_| OpenError::NotUtf8)?;
    check_command(&command).map_err(OpenError::Command)?;
    Ok(command)
}

/// One part of an answer sealed: its place and count are in the additional
/// data, so no part can be moved, dropped or taken from another answer.
fn seal_answer(key: &RconKey, challenge: &Challenge, part: u8, parts: u8, text: &str) -> Sealed {
    seal(&key.answer, &associated_data(KIND_ANSWER, challenge, &[part, parts]), text.as_bytes())
}

/// The text of answer part `part` of `parts` to the command sent with
/// `challenge`, if the server with the password sealed it for that place:
/// UTF-8, no control character but line ends and tabs.
pub fn open_answer(
    key: &RconKey,
    challenge: &Challenge,
    part: u8,
    parts: u8,
    sealed: &Sealed,
) -> Result<String, OpenError> {
    let text = open(&key.answer, &associated_data(KIND_ANSWER, challenge, &[part, parts]), sealed)?;
    let text = String::from_utf8(text).map_err(|_| OpenError::NotUtf8)?;
    if !answer_text_ok(&text) {
        return Err(OpenError::ControlInAnswer);
    }
    Ok(text)
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
/// at most [`MAX_DATAGRAM_BYTES`], each sealed; a longer text is cut and
/// ends with [`CUT_MARKER`]. An empty text is one empty part.
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
        .iter()
        .zip(0..parts)
        .map(|(text, part)| Packet::Answer {
            challenge: *challenge,
            part,
            parts,
            sealed: seal_answer(key, challenge, part, parts, text),
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
    /// A part whose seal does not open: not from the server with the password.
    BadMac {
        part: u8,
    },
    /// A part that opens but whose text is not UTF-8 or holds a control
    /// character other than a line end or a tab.
    BadText {
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
                write!(f, "answer part {part} was not sealed with the rcon password (not from the server?)")
            }
            AnswerError::BadText { part } => {
                write!(f, "answer part {part} is not text that can be shown (not UTF-8, or a control character)")
            }
        }
    }
}

impl std::error::Error for AnswerError {}

/// The text of an answer from its parts, in any order (a part repeated
/// word for word, as the network may, counts once): every part an answer to
/// `challenge` that opens under `key`, all of one count, none missing.
pub fn join_answer(key: &RconKey, challenge: &Challenge, parts: &[Packet]) -> Result<String, AnswerError> {
    let mut slots: [Option<String>; MAX_ANSWER_PARTS as usize] = Default::default();
    let mut count = None;
    for packet in parts {
        let Packet::Answer { challenge: c, part, parts, sealed } = packet else {
            return Err(AnswerError::NotAnswer);
        };
        let (part, parts) = (*part, *parts);
        if c != challenge {
            return Err(AnswerError::WrongChallenge);
        }
        if parts == 0 || parts > MAX_ANSWER_PARTS || part >= parts || count.is_some_and(|n| n != parts) {
            return Err(AnswerError::PartsDisagree);
        }
        count = Some(parts);
        let text = open_answer(key, challenge, part, parts, sealed).map_err(|e| match e {
            OpenError::BadMac => AnswerError::BadMac { part },
            OpenError::NotUtf8 | OpenError::Command(_) | OpenError::ControlInAnswer => AnswerError::BadText { part },
        })?;
        let slot = slots.get_mut(usize::from(part)).ok_or(AnswerError::PartsDisagree)?;
        match slot {
            Some(earlier) if *earlier != text => return Err(AnswerError::Duplicate { part }),
            _ => *slot = Some(text),
        }
    }
    let count = count.ok_or(AnswerError::NoParts)?;
    let mut joined = String::new();
    for (part, slot) in (0..count).zip(slots.iter()) {
        joined.push_str(slot.as_deref().ok_or(AnswerError::Missing { part })?);
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::datagram::Refusal;
    use crate::query::{QueryError, Reply, Request};

    const SALT: Salt = [0x42; SALT_BYTES];

    /// Argon2id once for the whole module: every test shares the keys.
    fn key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::derive("correct horse", &SALT).unwrap())
    }

    /// Another password, the same salt.
    fn other_key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::derive("battery staple", &SALT).unwrap())
    }

    /// The same password, another server's salt.
    fn other_salt_key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::derive("correct horse", &[0x43; SALT_BYTES]).unwrap())
    }

    const C: Challenge = [7; CHALLENGE_BYTES];

    fn every_kind() -> Vec<Packet> {
        let mut packets = vec![
            Packet::ChallengeRequest,
            Packet::Challenge { challenge: C, salt: SALT },
            Packet::command(key(), C, "status").unwrap(),
            Packet::command(key(), C, &"é".repeat(MAX_COMMAND_BYTES / 2)).unwrap(),
        ];
        packets.extend(answer_packets(key(), &C, "line one\nline two\twith a tab"));
        packets.extend(answer_packets(key(), &C, ""));
        packets.extend(answer_packets(key(), &C, &"x".repeat(MAX_ANSWER_TEXT_BYTES)));
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
                Packet::Command { challenge, sealed } => {
                    COMMAND_HEADER_BYTES + open_command(key(), challenge, sealed).unwrap().len() + TAG_BYTES
                }
                Packet::Answer { challenge, part, parts, sealed } => {
                    ANSWER_HEADER_BYTES
                        + open_answer(key(), challenge, *part, *parts, sealed).unwrap().len()
                        + TAG_BYTES
                }
                Packet::Refused { .. } => REFUSED_BYTES,
            };
            assert_eq!(bytes.len(), expected, "{packet:?}");
            // One byte more or less is another size: refused, never read as
            // something else (the sealed kinds have ranges, checked below).
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
        assert_eq!(CHALLENGE_REQUEST_BYTES, 41);
        assert_eq!(CHALLENGE_PACKET_BYTES, 41);
        assert_eq!(MIN_COMMAND_PACKET_BYTES, 66);
        assert_eq!(MAX_COMMAND_PACKET_BYTES, 577);
        assert_eq!(MIN_ANSWER_PACKET_BYTES, 67);
        assert_eq!(MAX_ANSWER_TEXT_BYTES, 1133);
        let full = answer_packets(key(), &C, &"x".repeat(MAX_ANSWER_TEXT_BYTES));
        assert_eq!(full.len(), 1);
        assert_eq!(full[0].encode().len(), MAX_DATAGRAM_BYTES);
    }

    #[test]
    fn rcon_a_challenge_is_never_larger_than_its_request() {
        let request = Packet::ChallengeRequest.encode();
        let challenge = Packet::Challenge { challenge: [0xFF; CHALLENGE_BYTES], salt: [0xFF; SALT_BYTES] }.encode();
        assert!(challenge.len() <= request.len(), "{} bytes answer {} bytes", challenge.len(), request.len());
        for reason in
            [RefusalReason::BadMac, RefusalReason::UnknownChallenge, RefusalReason::NoRcon, RefusalReason::Limited]
        {
            let refusal = Packet::Refused { reason }.encode().len();
            assert!(refusal < request.len() && refusal < MIN_COMMAND_PACKET_BYTES);
        }
        assert_eq!(Packet::parse(&challenge), Ok(Packet::Challenge { challenge: [0xFF; 16], salt: [0xFF; 16] }));
    }

    #[test]
    fn rcon_bad_datagrams_are_typed_errors() {
        let mut request = Packet::ChallengeRequest.encode();
        request[CHALLENGE_REQUEST_BYTES - 1] = 1;
        assert_eq!(Packet::parse(&request), Err(RconParseError::Padding));
        assert_eq!(Packet::parse(&MAGIC), Err(RconParseError::NotRcon));
        assert_eq!(Packet::parse(b""), Err(RconParseError::NotRcon));
        assert_eq!(Packet::parse(&[MAGIC.as_slice(), &[9]].concat()), Err(RconParseError::UnknownKind(9)));
        assert_eq!(Packet::parse(&[MAGIC.as_slice(), &[5, 0]].concat()), Err(RconParseError::UnknownReason(0)));
        // Commands: sealed text of 1 to MAX_COMMAND_BYTES bytes, its tag after it.
        let command =
            |sealed: usize| [MAGIC.as_slice(), &[KIND_COMMAND], &C, &[0; NONCE_BYTES], &vec![0; sealed]].concat();
        assert!(matches!(Packet::parse(&command(TAG_BYTES)), Err(RconParseError::Length { .. })));
        assert!(matches!(
            Packet::parse(&command(MAX_COMMAND_BYTES + TAG_BYTES + 1)),
            Err(RconParseError::Length { .. })
        ));
        assert!(Packet::parse(&command(1 + TAG_BYTES)).is_ok());
        assert!(Packet::parse(&command(MAX_COMMAND_BYTES + TAG_BYTES)).is_ok());
        // Nothing is sealed that may not be sent.
        assert!(Packet::command(key(), C, "").is_err());
        assert!(Packet::command(key(), C, &"x".repeat(MAX_COMMAND_BYTES + 1)).is_err());
        assert_eq!(Packet::command(key(), C, "\u{1b}[2J"), Err(CommandError::ControlCharacter { at: 0 }));
        assert_eq!(seal_command(key(), &C, "kick 1\nquit"), Err(CommandError::ControlCharacter { at: 6 }));
        // Answers: part numbers, sizes.
        let answer = |part: u8, parts: u8, sealed: usize| {
            [MAGIC.as_slice(), &[KIND_ANSWER], &C, &[part, parts], &[0; NONCE_BYTES], &vec![0; sealed]].concat()
        };
        assert_eq!(Packet::parse(&answer(0, 0, TAG_BYTES)), Err(RconParseError::BadPart { part: 0, parts: 0 }));
        assert_eq!(Packet::parse(&answer(2, 2, TAG_BYTES)), Err(RconParseError::BadPart { part: 2, parts: 2 }));
        assert_eq!(Packet::parse(&answer(0, 9, TAG_BYTES)), Err(RconParseError::BadPart { part: 0, parts: 9 }));
        assert!(matches!(Packet::parse(&answer(0, 1, TAG_BYTES - 1)), Err(RconParseError::Length { .. })));
        assert!(matches!(
            Packet::parse(&answer(0, 1, MAX_ANSWER_TEXT_BYTES + TAG_BYTES + 1)),
            Err(RconParseError::Length { .. })
        ));
        assert!(Packet::parse(&answer(0, 1, TAG_BYTES)).is_ok());
        // All zeros parse (the sizes are right) and open to nothing.
        let Ok(Packet::Answer { sealed, .. }) = Packet::parse(&answer(0, 1, TAG_BYTES + 3)) else { panic!() };
        assert_eq!(open_answer(key(), &C, 0, 1, &sealed), Err(OpenError::BadMac));
        let Ok(Packet::Command { sealed, .. }) = Packet::parse(&command(TAG_BYTES + 3)) else { panic!() };
        assert_eq!(open_command(key(), &C, &sealed), Err(OpenError::BadMac));
    }

    #[test]
    fn rcon_what_opens_is_checked_as_what_was_sealed() {
        // A peer with the key may seal what no honest one sends: opened, then refused.
        let way = |text: &[u8]| seal(&key().command, &associated_data(KIND_COMMAND, &C, &[]), text);
        assert_eq!(
            open_command(key(), &C, &way(b"kick 1\nquit")),
            Err(OpenError::Command(CommandError::ControlCharacter { at: 6 }))
        );
        assert_eq!(open_command(key(), &C, &way(b"\xC3\x28")), Err(OpenError::NotUtf8));
        assert_eq!(open_command(key(), &C, &way(b"")), Err(OpenError::Command(CommandError::Empty)));
        let escape = seal(&key().answer, &associated_data(KIND_ANSWER, &C, &[0, 1]), b"\x1b[31m");
        assert_eq!(open_answer(key(), &C, 0, 1, &escape), Err(OpenError::ControlInAnswer));
        let packet = Packet::Answer { challenge: C, part: 0, parts: 1, sealed: escape };
        assert_eq!(join_answer(key(), &C, &[packet]), Err(AnswerError::BadText { part: 0 }));
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
    fn rcon_key_is_its_own_per_salt_and_never_printed() {
        assert_eq!(RconKey::derive("", &SALT).map(|_| ()), Err(RconKeyError::Empty));
        assert_eq!(RconKey::derive("   ", &SALT).map(|_| ()), Err(RconKeyError::Empty));
        assert!(matches!(RconKey::derive(&"x".repeat(129), &SALT), Err(RconKeyError::TooLong { bytes: 129 })));
        assert_eq!(RconKey::with_new_salt(" ").map(|_| ()), Err(RconKeyError::Empty));
        assert_eq!(check_password("  "), Err(RconKeyError::Empty));
        assert_eq!(check_password(&"x".repeat(129)), Err(RconKeyError::TooLong { bytes: 129 }));
        assert_eq!(check_password(" correct horse "), Ok(()));
        let again = RconKey::derive("  correct horse ", &SALT).unwrap();
        assert_eq!(again.command.seal, key().command.seal, "surrounding spaces do not count");
        assert_eq!(again.answer.nonce, key().answer.nonce);
        assert_eq!(key().salt(), &SALT);
        // Another password, or another salt: other keys, every one of them.
        for other in [other_key(), other_salt_key()] {
            assert_ne!(other.command.seal, key().command.seal);
            assert_ne!(other.command.nonce, key().command.nonce);
            assert_ne!(other.answer.seal, key().answer.seal);
            assert_ne!(other.answer.nonce, key().answer.nonce);
        }
        // The four subkeys differ from each other.
        assert_ne!(key().command.seal, key().answer.seal);
        assert_ne!(key().command.nonce, key().answer.nonce);
        assert_ne!(key().command.seal[..], key().command.nonce[..32]);
        let netcode = crate::key::Password::new("correct horse").unwrap().key().unwrap();
        assert_ne!(key().command.seal, netcode, "the rcon key is not the netcode key");
        assert_ne!(key().answer.seal, netcode);
        assert_eq!(format!("{:?}", key()), "RconKey(..)");
        // Salts come from the system's randomness: two are never alike.
        assert_ne!(new_salt().unwrap(), new_salt().unwrap());
    }

    #[test]
    fn rcon_seals_open_only_with_the_key_the_challenge_and_the_way() {
        let sealed = seal_command(key(), &C, "status").unwrap();
        assert_eq!(open_command(key(), &C, &sealed), Ok("status".into()));
        assert_eq!(open_command(other_key(), &C, &sealed), Err(OpenError::BadMac), "another password");
        assert_eq!(open_command(other_salt_key(), &C, &sealed), Err(OpenError::BadMac), "another salt");
        assert_eq!(open_command(key(), &[8; CHALLENGE_BYTES], &sealed), Err(OpenError::BadMac), "another challenge");
        // A command's seal is no answer's, whatever the bytes.
        assert_eq!(open_answer(key(), &C, 0, 1, &sealed), Err(OpenError::BadMac));
        let Packet::Answer { sealed, .. } = &answer_packets(key(), &C, "status")[0] else { panic!() };
        assert_eq!(open_command(key(), &C, sealed), Err(OpenError::BadMac));
        assert_eq!(open_answer(key(), &C, 0, 1, sealed), Ok("status".into()));
        assert_eq!(open_answer(key(), &C, 0, 2, sealed), Err(OpenError::BadMac), "another count");
        assert_eq!(open_answer(key(), &C, 1, 2, sealed), Err(OpenError::BadMac), "another part");
        assert_eq!(open_answer(other_key(), &C, 0, 1, sealed), Err(OpenError::BadMac));
        // The nonce is synthetic: the same text under the same challenge
        // seals the same (one datagram, sent again), anything else does not.
        assert_eq!(seal_command(key(), &C, "status").unwrap(), seal_command(key(), &C, "status").unwrap());
        let nonces = [
            seal_command(key(), &C, "status").unwrap().nonce,
            seal_command(key(), &C, "statut").unwrap().nonce,
            seal_command(key(), &[8; CHALLENGE_BYTES], "status").unwrap().nonce,
            seal_command(other_key(), &C, "status").unwrap().nonce,
        ];
        for (i, a) in nonces.iter().enumerate() {
            assert!(nonces[i + 1..].iter().all(|b| a != b), "nonce {i} repeats");
        }
    }

    /// Issue 60: a capture of `sv_password NEWPASS` holds neither word,
    /// nor anything of the password, in any datagram either way.
    #[test]
    fn rcon_a_sealed_datagram_never_holds_its_text() {
        fn holds(haystack: &[u8], needle: &[u8]) -> bool {
            haystack.windows(needle.len()).any(|w| w == needle)
        }
        let command = Packet::command(key(), C, "sv_password NEWPASS").unwrap().encode();
        let answer: Vec<Vec<u8>> =
            answer_packets(key(), &C, "sv_password is now NEWPASS\n").iter().map(Packet::encode).collect();
        for datagram in std::iter::once(&command).chain(&answer) {
            for word in [&b"NEWPASS"[..], b"sv_password", b"password", b"correct horse", b"correct"] {
                assert!(!holds(datagram, word), "{:?} in {datagram:?}", String::from_utf8_lossy(word));
            }
        }
        // Not even a long run of one letter shows through.
        let long = Packet::command(key(), C, &"a".repeat(MAX_COMMAND_BYTES)).unwrap().encode();
        assert!(!holds(&long, &[b'a'; 8]));
        // And the parts are what was sent.
        let Ok(Packet::Command { challenge, sealed }) = Packet::parse(&command) else { panic!() };
        assert_eq!(open_command(key(), &challenge, &sealed), Ok("sv_password NEWPASS".into()));
        let parts: Vec<Packet> = answer.iter().map(|d| Packet::parse(d).unwrap()).collect();
        assert_eq!(join_answer(key(), &C, &parts), Ok("sv_password is now NEWPASS\n".into()));
    }

    #[test]
    fn rcon_any_flipped_bit_is_refused() {
        let command = Packet::command(key(), C, "sv_password NEWPASS").unwrap().encode();
        let answers: Vec<Vec<u8>> = answer_packets(key(), &C, &"status line\n".repeat(150))
            .iter()
            .chain(&answer_packets(key(), &C, ""))
            .map(Packet::encode)
            .collect();
        assert!(answers.len() > 2);
        for datagram in std::iter::once(&command).chain(&answers) {
            for bit in 0..datagram.len() * 8 {
                let mut flipped = datagram.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                let opened = match Packet::parse(&flipped) {
                    Ok(Packet::Command { challenge, sealed }) => open_command(key(), &challenge, &sealed).is_ok(),
                    Ok(Packet::Answer { challenge, part, parts, sealed }) => {
                        open_answer(key(), &challenge, part, parts, &sealed).is_ok()
                    }
                    // Another kind, or no rcon at all: nothing opened.
                    Ok(_) | Err(_) => false,
                };
                assert!(!opened, "bit {bit} of {datagram:?} flipped, still opened");
            }
        }
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
        assert_eq!(join_answer(other_salt_key(), &C, &packets), Err(AnswerError::BadMac { part: 0 }));
        assert_eq!(join_answer(key(), &[1; CHALLENGE_BYTES], &packets), Err(AnswerError::WrongChallenge));
        assert_eq!(
            join_answer(key(), &C, &[Packet::Refused { reason: RefusalReason::BadMac }]),
            Err(AnswerError::NotAnswer)
        );
        // A part moved to another place, or its sealed bytes changed, no
        // longer opens.
        let mut moved = packets.clone();
        if let Packet::Answer { part, .. } = &mut moved[0] {
            *part = 1;
        }
        assert_eq!(join_answer(key(), &C, &moved), Err(AnswerError::BadMac { part: 1 }));
        let mut changed = packets.clone();
        if let Packet::Answer { sealed, .. } = &mut changed[2] {
            sealed.bytes[0] ^= 1;
        }
        assert_eq!(join_answer(key(), &C, &changed), Err(AnswerError::BadMac { part: 2 }));
        let mut grown = packets.clone();
        if let Packet::Answer { sealed, .. } = &mut grown[1] {
            sealed.bytes.push(b'!');
        }
        assert_eq!(join_answer(key(), &C, &grown), Err(AnswerError::BadMac { part: 1 }));
        // Parts of two answers of different counts.
        let short = answer_packets(key(), &C, "short");
        assert_eq!(join_answer(key(), &C, &[packets[0].clone(), short[0].clone()]), Err(AnswerError::PartsDisagree));
        // Two validly sealed different texts for one part (a server answering
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
        let mut opened = 0;
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
            let flips = next() % 4;
            for _ in 0..flips {
                if bytes.is_empty() {
                    break;
                }
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] ^= 1 << (next() % 8);
            }
            let Ok(packet) = Packet::parse(&bytes) else { continue };
            assert_eq!(packet.encode(), bytes);
            // Opening never panics either; what opens was a seed untouched
            // (or changed back by a second flip of the same bit).
            let open = match &packet {
                Packet::Command { challenge, sealed } => open_command(key(), challenge, sealed).is_ok(),
                Packet::Answer { challenge, part, parts, sealed } => {
                    open_answer(key(), challenge, *part, *parts, sealed).is_ok()
                }
                _ => false,
            };
            if open {
                assert!(seeds.contains(&bytes), "{bytes:?} opened");
                opened += 1;
            }
        }
        assert!(opened > 100, "only {opened} seeds opened: the property was hardly tried");
    }
}
