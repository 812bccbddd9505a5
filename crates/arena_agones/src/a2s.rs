//! Looking at a server through A2S, as any server browser or tracker does:
//! A2S_INFO, then A2S_PLAYER, with the challenge handshake, read by the
//! game's own parser (`arena_query`). One socket for every look and the
//! server's challenge kept, so a look costs two queries (the server allows
//! 8 a second from one address). Everything the server says is untrusted:
//! replies that do not parse are dropped, and a look whose player list does
//! not match its info is taken again.

use std::net::SocketAddr;
use std::time::Duration;

use arena_query::{QueryError, QueryKind, Reassembly, Reply, Request, ServerListing};
use tokio::net::UdpSocket;

/// Most challenge rounds for one request (a server hands out one challenge).
const MAX_CHALLENGE_ROUNDS: usize = 3;
/// Most datagrams read for one request before giving up on it (strays,
/// parts, garbage): bounds the work a hostile answerer can cause.
const MAX_DATAGRAMS_PER_REQUEST: usize = 32;
/// Most looks taken to get an info and a player list that agree (the server
/// refreshes its answers once a second, and when someone joins or leaves).
const MAX_LOOKS: usize = 3;
/// Largest datagram read, bytes (Arena's replies are at most 1200).
const RECV_BYTES: usize = 1500;

/// What one look says of a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerView {
    pub name: String,
    pub map: String,
    /// The people playing (the server's bots left out), by name.
    pub people: Vec<String>,
    pub bots: u8,
    /// How many people the server takes (its slots less its bots).
    pub capacity: u8,
}

/// Why a look failed.
#[derive(Debug)]
pub enum LookError {
    Io(std::io::Error),
    /// No answer within the time allowed.
    Silent,
    /// Answers that do not parse, or that ask for challenge after challenge.
    Garbled(Option<QueryError>),
    /// The info and the player list disagreed on every try.
    Inconsistent {
        players: u8,
        listed: usize,
    },
}

impl std::fmt::Display for LookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookError::Io(e) => write!(f, "socket error: {e}"),
            LookError::Silent => f.write_str("no answer"),
            LookError::Garbled(Some(e)) => write!(f, "unreadable answer: {e}"),
            LookError::Garbled(None) => f.write_str("no usable answer (challenge after challenge)"),
            LookError::Inconsistent { players, listed } => {
                write!(f, "info says {players} players but the list has {listed}")
            }
        }
    }
}

impl std::error::Error for LookError {}

impl From<std::io::Error> for LookError {
    fn from(e: std::io::Error) -> Self {
        LookError::Io(e)
    }
}

/// A server being looked at: the socket, and the challenge it handed out.
pub struct Looker {
    socket: UdpSocket,
    challenge: Option<i32>,
    /// Each request's wait for its answer.
    timeout: Duration,
}

impl Looker {
    pub async fn new(server: SocketAddr, timeout: Duration) -> Result<Self, LookError> {
        let any: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(any).await?;
        socket.connect(server).await?;
        Ok(Looker { socket, challenge: None, timeout })
    }

    /// One look: the server's info and the people on it.
    pub async fn look(&mut self) -> Result<ServerView, LookError> {
        let mut last = LookError::Silent;
        for _ in 0..MAX_LOOKS {
            let info = match self.ask(QueryKind::Info).await? {
                Reply::Info(info) => info,
                _ => return Err(LookError::Garbled(None)),
            };
            let players = match self.ask(QueryKind::Players).await? {
                Reply::Players(players) => players,
                _ => return Err(LookError::Garbled(None)),
            };
            match view(info, players.into_iter().map(|p| p.name).collect()) {
                Ok(view) => return Ok(view),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends one request and reads its reply, answering a new challenge.
    async fn ask(&mut self, kind: QueryKind) -> Result<Reply, LookError> {
        for _ in 0..MAX_CHALLENGE_ROUNDS {
            self.socket.send(&Request { kind, challenge: self.challenge }.encode()).await?;
            match receive(&self.socket, self.timeout).await? {
                Reply::Challenge(c) => self.challenge = Some(c),
                reply => return Ok(reply),
            }
        }
        Err(LookError::Garbled(None))
    }
}

/// One look at the server at `server` on a socket of its own.
pub async fn look(server: SocketAddr, timeout: Duration) -> Result<ServerView, LookError> {
    Looker::new(server, timeout).await?.look().await
}

/// Puts an info and a player list together. A2S has no bot flag: Arena lists
/// people first and its bots after them, so the people are the first
/// `players - bots` names, and only when the counts agree.
fn view(info: ServerListing, names: Vec<String>) -> Result<ServerView, LookError> {
    let people_count = usize::from(info.players.saturating_sub(info.bots));
    if names.len() != usize::from(info.players) {
        return Err(LookError::Inconsistent { players: info.players, listed: names.len() });
    }
    let mut people = names;
    people.truncate(people_count);
    Ok(ServerView {
        name: info.name,
        map: info.map,
        people,
        bots: info.bots,
        capacity: info.max_players.saturating_sub(info.bots),
    })
}

/// Reads datagrams until one reply is whole, or the time is up.
async fn receive(socket: &UdpSocket, timeout: Duration) -> Result<Reply, LookError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut reassembly = Reassembly::default();
    let mut buf = [0u8; RECV_BYTES];
    let mut last_error = None;
    for _ in 0..MAX_DATAGRAMS_PER_REQUEST {
        let len = match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
            Ok(received) => received?,
            Err(_) => break,
        };
        match reassembly.accept(&buf[..len]) {
            Some(Ok(reply)) => return Ok(reply),
            Some(Err(e)) => last_error = Some(e),
            None => {}
        }
    }
    Err(match last_error {
        Some(e) => LookError::Garbled(Some(e)),
        None => LookError::Silent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_query::ServerKind;

    fn info(players: u8, bots: u8) -> ServerListing {
        ServerListing {
            protocol: 9,
            name: "Test".into(),
            map: "Foundry".into(),
            folder: "arena".into(),
            game: "Arena".into(),
            players,
            max_players: 10,
            bots,
            kind: ServerKind::Dedicated,
            environment: 'l',
            password: false,
            version: "0.1.0".into(),
            port: Some(27015),
            keywords: None,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_people_are_listed_before_the_bots() {
        let v = view(info(3, 2), names(&["Ada", "Bot 1", "Bot 2"])).expect("counts agree");
        assert_eq!(v.people, names(&["Ada"]));
        assert_eq!((v.bots, v.capacity), (2, 8));
    }

    #[test]
    fn a_list_that_disagrees_with_the_info_is_refused() {
        assert!(matches!(
            view(info(3, 2), names(&["Ada", "Bot 1"])),
            Err(LookError::Inconsistent { players: 3, listed: 2 })
        ));
        // More bots claimed than players: no people, nothing negative.
        let v = view(info(1, 5), names(&["Bot 1"])).expect("counts agree");
        assert!(v.people.is_empty());
        assert_eq!(v.capacity, 5);
    }

    /// A fake server on loopback that answers with a challenge first, then
    /// garbage, then the real replies: the look still reads it.
    #[tokio::test]
    async fn a_look_answers_challenges_and_skips_garbage() {
        let server = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
        let addr = server.local_addr().expect("addr");
        tokio::spawn(async move {
            let mut buf = [0u8; 1500];
            while let Ok((len, from)) = server.recv_from(&mut buf).await {
                let Ok(request) = Request::parse(&buf[..len]) else { continue };
                let reply = match (request.kind, request.challenge) {
                    (_, None) | (_, Some(arena_query::ASK_FOR_CHALLENGE)) => Reply::Challenge(77),
                    (QueryKind::Info, Some(77)) => Reply::Info(info(2, 1)),
                    (QueryKind::Players, Some(77)) => Reply::Players(vec![
                        arena_query::PlayerEntry { name: "Ada".into(), score: 3, duration_s: 1.0 },
                        arena_query::PlayerEntry { name: "Bot 1".into(), score: 9, duration_s: 1.0 },
                    ]),
                    _ => continue,
                };
                let _ = server.send_to(b"\xFF\xFF\xFF\xFF\x99junk", from).await;
                for datagram in reply.datagrams(1) {
                    let _ = server.send_to(&datagram, from).await;
                }
            }
        });
        let v = look(addr, Duration::from_millis(500)).await.expect("the look reads the fake server");
        assert_eq!((v.map.as_str(), v.people.clone(), v.bots), ("Foundry", names(&["Ada"]), 1));
    }

    #[tokio::test]
    async fn a_silent_server_is_silent() {
        let quiet = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
        let addr = quiet.local_addr().expect("addr");
        assert!(matches!(look(addr, Duration::from_millis(100)).await, Err(LookError::Silent)));
    }
}
