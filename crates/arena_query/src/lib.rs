//! Server queries: Valve's A2S protocol (A2S_INFO, A2S_PLAYER and A2S_RULES
//! with the challenge handshake, as the public "Server queries"
//! specification describes them), so that server browsers, trackers,
//! monitoring tools and `arena servers` can list a server and see who plays.
//! Requests and replies both ways, and replies too long for one datagram
//! split and joined (the Source multi-packet format, uncompressed). Pure: no
//! sockets. Everything parsed is untrusted: lengths, counts and strings are
//! bounded, and a bad datagram is an error, never a panic.
//!
//! Its own crate, with nothing but std, so that tools outside the game's
//! build (the `arena-agones` sidecar) read servers with this same parser.
//!
//! Every A2S datagram starts with `FF FF FF FF` (or `FE FF FF FF` for a part
//! of a long reply). The game's own connectionless packets (the server's
//! refusals) use the same prefix but another type byte, and netcode's packets
//! never start with `FF`.

/// The prefix of a whole A2S datagram.
pub const SIMPLE_HEADER: [u8; 4] = [0xFF; 4];
/// The prefix of one part of a long reply.
pub const MULTI_HEADER: [u8; 4] = [0xFE, 0xFF, 0xFF, 0xFF];

const A2S_INFO: u8 = 0x54;
const A2S_PLAYER: u8 = 0x55;
const A2S_RULES: u8 = 0x56;
const S2C_CHALLENGE: u8 = 0x41;
const INFO_REPLY: u8 = 0x49;
const PLAYER_REPLY: u8 = 0x44;
const RULES_REPLY: u8 = 0x45;
const INFO_QUERY: &[u8] = b"Source Engine Query\0";

/// Extra data flags of an info reply: the game port follows, keywords follow.
const EDF_PORT: u8 = 0x80;
const EDF_KEYWORDS: u8 = 0x20;

/// The challenge that asks for one (and that no server ever hands out).
pub const ASK_FOR_CHALLENGE: i32 = -1;

/// Longest datagram a reply uses, bytes (well inside any path's MTU).
pub const MAX_REPLY_DATAGRAM_BYTES: usize = 1200;
/// The multi-packet header: prefix, id, total, number, size.
const MULTI_HEADER_BYTES: usize = 4 + 4 + 1 + 1 + 2;
/// Most parts of one long reply a reader accepts.
pub const MAX_PARTS: u8 = 16;
/// Longest string kept from a reply, bytes (longer ones are cut).
pub const MAX_STRING_BYTES: usize = 256;
/// Most rules a reply may carry.
pub const MAX_RULES: usize = 64;
/// Longest server name a server announces, characters.
pub const MAX_SERVER_NAME_CHARS: usize = 48;

/// Why a datagram is not a query or a reply we read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// Not starting with an A2S prefix.
    NotA2s,
    /// A type byte this side does not handle.
    UnknownType(u8),
    /// Shorter than its fields, or longer than it should be.
    Length,
    /// A count or field out of bounds.
    Invalid,
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::NotA2s => f.write_str("not an A2S datagram"),
            QueryError::UnknownType(t) => write!(f, "A2S type 0x{t:02X} is not handled"),
            QueryError::Length => f.write_str("A2S datagram of the wrong length"),
            QueryError::Invalid => f.write_str("A2S datagram with a field out of bounds"),
        }
    }
}

impl std::error::Error for QueryError {}

/// What a query asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryKind {
    Info,
    Players,
    Rules,
}

/// A query, as a client sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub kind: QueryKind,
    /// `None` (info only) or [`ASK_FOR_CHALLENGE`] (or any number the server
    /// did not hand out) asks for a challenge.
    pub challenge: Option<i32>,
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = SIMPLE_HEADER.to_vec();
        match self.kind {
            QueryKind::Info => {
                out.push(A2S_INFO);
                out.extend_from_slice(INFO_QUERY);
            }
            QueryKind::Players => out.push(A2S_PLAYER),
            QueryKind::Rules => out.push(A2S_RULES),
        }
        if let Some(c) = self.challenge.or(match self.kind {
            QueryKind::Info => None,
            _ => Some(ASK_FOR_CHALLENGE),
        }) {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    /// Reads a query from a datagram, which must be exactly one.
    pub fn parse(datagram: &[u8]) -> Result<Self, QueryError> {
        let body = datagram.strip_prefix(&SIMPLE_HEADER).ok_or(QueryError::NotA2s)?;
        let (&kind, rest) = body.split_first().ok_or(QueryError::Length)?;
        let challenge = |bytes: &[u8]| -> Result<i32, QueryError> {
            let array: [u8; 4] = bytes.try_into().map_err(|_| QueryError::Length)?;
            Ok(i32::from_le_bytes(array))
        };
        match kind {
            A2S_INFO => {
                let rest = rest.strip_prefix(INFO_QUERY).ok_or(QueryError::Invalid)?;
                let challenge = if rest.is_empty() { None } else { Some(challenge(rest)?) };
                Ok(Request { kind: QueryKind::Info, challenge })
            }
            A2S_PLAYER => Ok(Request { kind: QueryKind::Players, challenge: Some(challenge(rest)?) }),
            A2S_RULES => Ok(Request { kind: QueryKind::Rules, challenge: Some(challenge(rest)?) }),
            other => Err(QueryError::UnknownType(other)),
        }
    }
}

/// A dedicated server, or one a player hosts from the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    Dedicated,
    Listen,
}

/// What A2S_INFO says of a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerListing {
    /// Arena's protocol version (a browser greys out servers it cannot join).
    pub protocol: u8,
    pub name: String,
    pub map: String,
    /// The game's folder and name: "arena" and "Arena".
    pub folder: String,
    pub game: String,
    /// Everyone playing, bots included.
    pub players: u8,
    /// Players the server holds, bots included.
    pub max_players: u8,
    pub bots: u8,
    pub kind: ServerKind,
    /// 'l' (Linux), 'w' (Windows) or 'm' (macOS).
    pub environment: char,
    /// Joining needs a password.
    pub password: bool,
    pub version: String,
    /// The game port (the one queries go to, here).
    pub port: Option<u16>,
    pub keywords: Option<String>,
}

impl ServerListing {
    /// The environment byte of the machine this runs on.
    pub fn this_environment() -> char {
        if cfg!(target_os = "windows") {
            'w'
        } else if cfg!(target_os = "macos") {
            'm'
        } else {
            'l'
        }
    }
}

/// One player in an A2S_PLAYER reply.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerEntry {
    pub name: String,
    pub score: i32,
    /// Time connected, seconds.
    pub duration_s: f32,
}

/// A server's reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Ask again with this number.
    Challenge(i32),
    Info(ServerListing),
    Players(Vec<PlayerEntry>),
    Rules(Vec<(String, String)>),
}

/// Appends a C string: the text up to any NUL, cut to `max_bytes` at a
/// character boundary.
fn put_string(out: &mut Vec<u8>, text: &str, max_bytes: usize) {
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if c == '\0' || i + c.len_utf8() > max_bytes {
            break;
        }
        end = i + c.len_utf8();
    }
    out.extend_from_slice(&text.as_bytes()[..end]);
    out.push(0);
}

impl Reply {
    /// The reply's body (after the prefix), in one piece.
    fn body(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Reply::Challenge(c) => {
                out.push(S2C_CHALLENGE);
                out.extend_from_slice(&c.to_le_bytes());
            }
            Reply::Info(info) => {
                out.push(INFO_REPLY);
                out.push(info.protocol);
                put_string(&mut out, &info.name, MAX_STRING_BYTES - 1);
                put_string(&mut out, &info.map, MAX_STRING_BYTES - 1);
                put_string(&mut out, &info.folder, MAX_STRING_BYTES - 1);
                put_string(&mut out, &info.game, MAX_STRING_BYTES - 1);
                // No Steam application id.
                out.extend_from_slice(&0u16.to_le_bytes());
                out.extend_from_slice(&[info.players, info.max_players, info.bots]);
                out.push(match info.kind {
                    ServerKind::Dedicated => b'd',
                    ServerKind::Listen => b'l',
                });
                out.push(if info.environment.is_ascii() { info.environment as u8 } else { b'l' });
                out.push(u8::from(info.password));
                // No anti-cheat service.
                out.push(0);
                put_string(&mut out, &info.version, MAX_STRING_BYTES - 1);
                let edf = info.port.map_or(0, |_| EDF_PORT) | info.keywords.as_ref().map_or(0, |_| EDF_KEYWORDS);
                out.push(edf);
                if let Some(port) = info.port {
                    out.extend_from_slice(&port.to_le_bytes());
                }
                if let Some(keywords) = &info.keywords {
                    put_string(&mut out, keywords, MAX_STRING_BYTES - 1);
                }
            }
            Reply::Players(players) => {
                out.push(PLAYER_REPLY);
                let players = &players[..players.len().min(usize::from(u8::MAX))];
                out.push(players.len() as u8);
                for p in players {
                    // The index: clients ignore it; 0 as Source servers send.
                    out.push(0);
                    put_string(&mut out, &p.name, MAX_STRING_BYTES - 1);
                    out.extend_from_slice(&p.score.to_le_bytes());
                    out.extend_from_slice(&p.duration_s.to_le_bytes());
                }
            }
            Reply::Rules(rules) => {
                out.push(RULES_REPLY);
                let rules = &rules[..rules.len().min(MAX_RULES)];
                out.extend_from_slice(&(rules.len() as u16).to_le_bytes());
                for (name, value) in rules {
                    put_string(&mut out, name, MAX_STRING_BYTES - 1);
                    put_string(&mut out, value, MAX_STRING_BYTES - 1);
                }
            }
        }
        out
    }

    /// The datagrams of this reply: one, or a multi-packet reply of up to
    /// [`MAX_PARTS`] parts (each no longer than
    /// [`MAX_REPLY_DATAGRAM_BYTES`]) with this message id. A reply too long
    /// even for that is cut at its last whole part (never happens with 64
    /// players and names of 16 characters).
    pub fn datagrams(&self, message_id: u32) -> Vec<Vec<u8>> {
        let mut whole = SIMPLE_HEADER.to_vec();
        whole.extend_from_slice(&self.body());
        if whole.len() <= MAX_REPLY_DATAGRAM_BYTES {
            return vec![whole];
        }
        let room = MAX_REPLY_DATAGRAM_BYTES - MULTI_HEADER_BYTES;
        let parts: Vec<&[u8]> = whole.chunks(room).take(usize::from(MAX_PARTS)).collect();
        // Bits 15 and 31 of the id mark compressed parts: never set here.
        let id = message_id & 0x7FFF;
        parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let mut out = MULTI_HEADER.to_vec();
                out.extend_from_slice(&id.to_le_bytes());
                out.push(parts.len() as u8);
                out.push(i as u8);
                out.extend_from_slice(&(MAX_REPLY_DATAGRAM_BYTES as u16).to_le_bytes());
                out.extend_from_slice(part);
                out
            })
            .collect()
    }

    /// Reads a whole reply (a single datagram, or the parts joined).
    pub fn parse(datagram: &[u8]) -> Result<Self, QueryError> {
        let body = datagram.strip_prefix(&SIMPLE_HEADER).ok_or(QueryError::NotA2s)?;
        let mut r = Reader { rest: body };
        let kind = r.u8()?;
        let reply = match kind {
            S2C_CHALLENGE => Reply::Challenge(r.i32()?),
            INFO_REPLY => {
                let protocol = r.u8()?;
                let name = r.string()?;
                let map = r.string()?;
                let folder = r.string()?;
                let game = r.string()?;
                let _app_id = r.u16()?;
                let (players, max_players, bots) = (r.u8()?, r.u8()?, r.u8()?);
                let kind = match r.u8()?.to_ascii_lowercase() {
                    b'l' => ServerKind::Listen,
                    _ => ServerKind::Dedicated,
                };
                let environment = char::from(r.u8()?.to_ascii_lowercase());
                let password = r.u8()? != 0;
                let _vac = r.u8()?;
                let version = r.string()?;
                let edf = if r.rest.is_empty() { 0 } else { r.u8()? };
                let port = if edf & EDF_PORT != 0 { Some(r.u16()?) } else { None };
                if edf & 0x10 != 0 {
                    r.skip(8)?;
                }
                if edf & 0x40 != 0 {
                    r.u16()?;
                    r.string()?;
                }
                let keywords = if edf & EDF_KEYWORDS != 0 { Some(r.string()?) } else { None };
                if edf & 0x01 != 0 {
                    r.skip(8)?;
                }
                Reply::Info(ServerListing {
                    protocol,
                    name,
                    map,
                    folder,
                    game,
                    players,
                    max_players,
                    bots,
                    kind,
                    environment,
                    password,
                    version,
                    port,
                    keywords,
                })
            }
            PLAYER_REPLY => {
                let count = r.u8()?;
                let mut players = Vec::with_capacity(usize::from(count));
                for _ in 0..count {
                    let _index = r.u8()?;
                    let name = r.string()?;
                    let score = r.i32()?;
                    let duration_s = f32::from_le_bytes(r.bytes::<4>()?);
                    let duration_s = if duration_s.is_finite() { duration_s.max(0.0) } else { 0.0 };
                    players.push(PlayerEntry { name, score, duration_s });
                }
                Reply::Players(players)
            }
            RULES_REPLY => {
                let count = usize::from(r.u16()?);
                if count > MAX_RULES {
                    return Err(QueryError::Invalid);
                }
                let mut rules = Vec::with_capacity(count);
                for _ in 0..count {
                    rules.push((r.string()?, r.string()?));
                }
                Reply::Rules(rules)
            }
            other => return Err(QueryError::UnknownType(other)),
        };
        if !r.rest.is_empty() {
            return Err(QueryError::Length);
        }
        Ok(reply)
    }
}

/// A bounds-checked little-endian reader.
struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], QueryError> {
        let (head, rest) = self.rest.split_first_chunk::<N>().ok_or(QueryError::Length)?;
        self.rest = rest;
        Ok(*head)
    }

    fn skip(&mut self, n: usize) -> Result<(), QueryError> {
        self.rest = self.rest.get(n..).ok_or(QueryError::Length)?;
        Ok(())
    }

    fn u8(&mut self) -> Result<u8, QueryError> {
        Ok(self.bytes::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, QueryError> {
        Ok(u16::from_le_bytes(self.bytes()?))
    }

    fn i32(&mut self) -> Result<i32, QueryError> {
        Ok(i32::from_le_bytes(self.bytes()?))
    }

    /// A C string, at most [`MAX_STRING_BYTES`] with its NUL; invalid UTF-8
    /// is replaced.
    fn string(&mut self) -> Result<String, QueryError> {
        let len = self.rest.iter().take(MAX_STRING_BYTES).position(|&b| b == 0).ok_or(QueryError::Invalid)?;
        let text = String::from_utf8_lossy(&self.rest[..len]).into_owned();
        self.rest = &self.rest[len + 1..];
        Ok(text)
    }
}

/// One part of a long reply.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Part {
    id: u32,
    total: u8,
    number: u8,
    payload: Vec<u8>,
}

impl Part {
    fn parse(datagram: &[u8]) -> Result<Self, QueryError> {
        let body = datagram.strip_prefix(&MULTI_HEADER).ok_or(QueryError::NotA2s)?;
        let mut r = Reader { rest: body };
        let id = u32::from_le_bytes(r.bytes()?);
        let (total, number) = (r.u8()?, r.u8()?);
        let _size = r.u16()?;
        // Compressed parts (bit 31, or bit 15 as some clients read it) are not
        // made by Arena and not read.
        if id & 0x8000_8000 != 0 || total == 0 || total > MAX_PARTS || number >= total || r.rest.is_empty() {
            return Err(QueryError::Invalid);
        }
        Ok(Part { id, total, number, payload: r.rest.to_vec() })
    }
}

/// Joins the parts of long replies from one server: at most one reply in
/// the making (a new id starts afresh), at most [`MAX_PARTS`] parts.
#[derive(Clone, Debug, Default)]
pub struct Reassembly {
    parts: Vec<Part>,
}

impl Reassembly {
    /// Takes a datagram from the server: a whole reply comes back at once,
    /// a part once all its siblings are here.
    pub fn accept(&mut self, datagram: &[u8]) -> Option<Result<Reply, QueryError>> {
        if datagram.starts_with(&SIMPLE_HEADER) {
            return Some(Reply::parse(datagram));
        }
        let part = match Part::parse(datagram) {
            Ok(part) => part,
            Err(e) => return Some(Err(e)),
        };
        if self.parts.first().is_some_and(|p| p.id != part.id || p.total != part.total) {
            self.parts.clear();
        }
        if self.parts.iter().any(|p| p.number == part.number) {
            return None;
        }
        let total = part.total;
        self.parts.push(part);
        if self.parts.len() < usize::from(total) {
            return None;
        }
        self.parts.sort_by_key(|p| p.number);
        let joined: Vec<u8> = self.parts.drain(..).flat_map(|p| p.payload).collect();
        Some(Reply::parse(&joined))
    }
}

/// Characters that draw nothing or change the direction of the text around
/// them: zero-width spaces and joiners, direction marks, embeddings,
/// overrides and isolates, fillers, variation selectors, tags, and the like.
/// A name with them could look like another or reverse the scoreboard's line.
pub fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            u32::from(c),
            0x00AD
                | 0x034F
                | 0x061C
                | 0x115F
                | 0x1160
                | 0x17B4
                | 0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x206F
                | 0x2800
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFFB
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
        )
}

/// A server name fit to announce: cleaned like a player's (no invisible or
/// control characters, spaces collapsed), at most [`MAX_SERVER_NAME_CHARS`].
pub fn clean_server_name(raw: &str) -> String {
    let words: Vec<String> = raw
        .split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .map(|w| w.chars().filter(|c| !c.is_control() && !is_invisible(*c)).collect::<String>())
        .filter(|w| !w.is_empty())
        .collect();
    words.join(" ").chars().take(MAX_SERVER_NAME_CHARS).collect::<String>().trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing() -> ServerListing {
        ServerListing {
            protocol: 3,
            name: "Ada's game".into(),
            map: "Foundry".into(),
            folder: "arena".into(),
            game: "Arena".into(),
            players: 9,
            max_players: 16,
            bots: 7,
            kind: ServerKind::Dedicated,
            environment: 'l',
            password: true,
            version: "0.1.0".into(),
            port: Some(27015),
            keywords: Some("arena".into()),
        }
    }

    #[test]
    fn requests_round_trip_and_match_the_specification_bytes() {
        let info = Request { kind: QueryKind::Info, challenge: None };
        assert_eq!(info.encode(), b"\xFF\xFF\xFF\xFFTSource Engine Query\0".to_vec());
        let players = Request { kind: QueryKind::Players, challenge: None };
        assert_eq!(players.encode(), vec![0xFF, 0xFF, 0xFF, 0xFF, 0x55, 0xFF, 0xFF, 0xFF, 0xFF]);
        for request in [
            info,
            Request { kind: QueryKind::Info, challenge: Some(0x1234_5678) },
            Request { kind: QueryKind::Players, challenge: Some(7) },
            Request { kind: QueryKind::Rules, challenge: Some(ASK_FOR_CHALLENGE) },
        ] {
            assert_eq!(Request::parse(&request.encode()), Ok(request));
        }
        assert_eq!(Request::parse(b"\xFF\xFF\xFF\xFFTSource Engine Query"), Err(QueryError::Invalid));
        assert_eq!(Request::parse(&[0xFF, 0xFF, 0xFF, 0xFF, 0x55, 1, 2]), Err(QueryError::Length));
        assert_eq!(Request::parse(&[0xFF, 0xFF, 0xFF, 0xFF, 0x57, 1, 2, 3, 4]), Err(QueryError::UnknownType(0x57)));
    }

    #[test]
    fn replies_round_trip_in_one_datagram_or_in_parts() {
        let players: Vec<PlayerEntry> = (0..64)
            .map(|i| PlayerEntry { name: format!("Player number {i:02}"), score: i - 3, duration_s: i as f32 * 1.5 })
            .collect();
        let rules = vec![("tick_hz".to_string(), "64".to_string()), ("frag_limit".into(), "20".into())];
        for (reply, parts) in [
            (Reply::Challenge(-5), 1),
            (Reply::Info(listing()), 1),
            (Reply::Players(players[..4].to_vec()), 1),
            (Reply::Players(players.clone()), 2),
            (Reply::Rules(rules), 1),
        ] {
            let datagrams = reply.datagrams(77);
            assert_eq!(datagrams.len(), parts, "{reply:?}");
            assert!(datagrams.iter().all(|d| d.len() <= MAX_REPLY_DATAGRAM_BYTES));
            let mut reassembly = Reassembly::default();
            // Parts may come in any order.
            let mut got = None;
            for d in datagrams.iter().rev() {
                got = reassembly.accept(d);
            }
            assert_eq!(got, Some(Ok(reply)));
        }
    }

    #[test]
    fn long_strings_are_cut_and_nul_never_leaks() {
        let mut info = listing();
        info.name = format!("a\0b{}", "x".repeat(400));
        let Some(Ok(Reply::Info(back))) = Reassembly::default().accept(&Reply::Info(info).datagrams(1)[0]) else {
            panic!("an info reply reads back");
        };
        assert_eq!(back.name, "a");
        let mut info = listing();
        info.map = "é".repeat(300);
        let Ok(Reply::Info(back)) = Reply::parse(&Reply::Info(info).datagrams(1)[0]) else { panic!() };
        assert!(back.map.len() < MAX_STRING_BYTES && back.map.chars().all(|c| c == 'é'));
    }

    #[test]
    fn garbage_and_truncation_are_errors() {
        let whole = Reply::Info(listing()).datagrams(1).remove(0);
        // The extra data (port, keywords) is optional: a reply may end before it.
        let edf_at = whole.len() - 1 - 2 - "arena".len() - 1;
        for len in 0..whole.len() {
            assert_eq!(Reply::parse(&whole[..len]).is_ok(), len == edf_at, "cut at {len}");
        }
        let mut reassembly = Reassembly::default();
        let mut part = MULTI_HEADER.to_vec();
        part.extend_from_slice(&[1, 0, 0, 0, 200, 0, 0, 4, 1]);
        assert_eq!(reassembly.accept(&part), Some(Err(QueryError::Invalid)), "too many parts");
        let mut rng = 0x1234_5678u32;
        for len in 0..600 {
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    rng = rng.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    if i < 4 { 0xFF } else { (rng >> 24) as u8 }
                })
                .collect();
            let _ = Reply::parse(&bytes);
            let _ = Request::parse(&bytes);
            let _ = reassembly.accept(&bytes);
        }
    }

    #[test]
    fn server_names_are_cleaned() {
        assert_eq!(clean_server_name("  Ada's\u{200B}   game \n"), "Ada's game");
        assert_eq!(clean_server_name(&"x".repeat(100)).chars().count(), MAX_SERVER_NAME_CHARS);
        assert_eq!(clean_server_name("\u{7}"), "");
    }
}
