//! Arena's extension to the dpmaster protocol (plain masters ignore it,
//! which leaves a server's reachability "unknown"): a reachability check
//! and introductions for UDP hole punching. Pure datagrams, both ways, with
//! bounded parsers.
//!
//! Reachability (server and master):
//! - server → master: `reachCheck NONCE`;
//! - master → server, from its second socket (another port, which the
//!   server has never sent to): `reachProbe NONCE`: if it arrives,
//!   strangers can reach the server;
//! - master → server: `reachSent NONCE ADDR PORT [IP]`: the probe went out;
//!   ADDR is the server as the master sees it; PORT is the second socket's;
//!   IP, if given, the second socket's own address (`arena master
//!   --probe-bind`): when it is not the master's, the probe came from an
//!   address the server never sent to, and a router that admits any port of
//!   an address it has talked to ("address-restricted cone") cannot pass it
//!   off as reachable; without it the check is only as good as one address
//!   (the server's report says so). The probe may come from that address:
//!   the server takes it from anyone with the check's nonce;
//! - server → master's second socket: `whoami NONCE`, answered
//!   `youAre NONCE ADDR`: if ADDR's port differs from the first one, the
//!   server's router gives every destination a new port (hole punching
//!   cannot work through it).
//!
//! Introductions (client, master, server):
//! - client → master: `punchRequest SERVER COOKIE` (COOKIE `-` at first);
//! - master → client: `punchChallenge SERVER COOKIE`: the cookie proves
//!   the request came from the address it claims (a forged address never
//!   sees it);
//! - master → server (its listed address): `punchIntro CLIENT KEY`, KEY the
//!   introduction key the server gave the master in its authenticated
//!   `infoResponse`; the server then sends a few `punchProbe` to CLIENT,
//!   opening its router toward the client, whose connection requests
//!   then pass;
//! - master → client: `punchStarted SERVER NAT PORT` or `punchRefused SERVER
//!   WHY PORT`, PORT the server's own game port (0: not known).
//!
//! The relay, for the routers punching cannot cross (client, master, a TURN
//! server the master's operator runs, server):
//! - client → master: `relayRequest SERVER COOKIE` (COOKIE `-` at first),
//!   answered `relayChallenge SERVER COOKIE` as a punch request is;
//! - master → client: `relayGrant SERVER TURN USERNAME PASSWORD`: TURN REST
//!   credentials (coturn's `--use-auth-secret`) named after the client's
//!   address, or `relayRefused SERVER WHY`;
//! - client → master, once the TURN server gave it a relayed address:
//!   `relayIntro SERVER RELAYED COOKIE`; the master checks that RELAYED is
//!   on its TURN server and sends the server `punchIntro RELAYED KEY relay`:
//!   the server probes the relayed address as any other, and the TURN
//!   server (which admits listed servers only) hands the probes on.

use std::net::{IpAddr, SocketAddr};

use crate::wire::{MAX_DATAGRAM_BYTES, PREFIX};

/// Nonces, cookies and keys: 8 to 32 ASCII letters and digits (the rule of
/// [`crate::wire::is_nonce`]).
pub const MIN_TOKEN_BYTES: usize = 8;
pub const MAX_TOKEN_BYTES: usize = 32;

/// The infostring key that carries a server's introduction key (only in
/// its answers to its masters).
pub const INTRO_KEY: &str = "introkey";
/// The infostring key that says how a server's router behaves ([`Nat`]).
pub const NAT_KEY: &str = "nat";
/// The infostring key of the server's own game port (the one a host
/// forwards by hand: behind NAT the listed port may be another).
pub const GAME_PORT_KEY: &str = "gameport";

/// What a server learnt of its router.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Nat {
    /// Strangers reach it (a mapping, a forwarded port, or no NAT).
    Open,
    /// Not reachable; the router keeps one port for every destination, so
    /// introductions can punch through.
    Punchable,
    /// Not reachable; the router gives every destination a new port.
    Symmetric,
    /// Not known (no check answered).
    Unknown,
}

impl Nat {
    pub fn as_str(self) -> &'static str {
        match self {
            Nat::Open => "open",
            Nat::Punchable => "punchable",
            Nat::Symmetric => "symmetric",
            Nat::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Nat {
        match text {
            "open" => Nat::Open,
            "punchable" => Nat::Punchable,
            "symmetric" => Nat::Symmetric,
            _ => Nat::Unknown,
        }
    }
}

/// Why a master did not introduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The server is not listed (or gave no introduction key).
    Unlisted,
    /// The server's router gives every destination a new port.
    Symmetric,
    /// Too many introductions to that server just now.
    Busy,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Unlisted => "unlisted",
            Refusal::Symmetric => "symmetric",
            Refusal::Busy => "busy",
        }
    }

    fn parse(text: &str) -> Option<Refusal> {
        match text {
            "unlisted" => Some(Refusal::Unlisted),
            "symmetric" => Some(Refusal::Symmetric),
            "busy" => Some(Refusal::Busy),
            _ => None,
        }
    }
}

/// Why a master gave no relay credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayRefusal {
    /// The master runs no relay.
    Off,
    /// The server is not listed (or is not an Arena server).
    Unlisted,
    /// Strangers reach the server directly: no relay needed.
    Open,
    /// Too many credentials for this network just now.
    Busy,
}

impl RelayRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            RelayRefusal::Off => "off",
            RelayRefusal::Unlisted => "unlisted",
            RelayRefusal::Open => "open",
            RelayRefusal::Busy => "busy",
        }
    }

    fn parse(text: &str) -> Option<RelayRefusal> {
        match text {
            "off" => Some(RelayRefusal::Off),
            "unlisted" => Some(RelayRefusal::Unlisted),
            "open" => Some(RelayRefusal::Open),
            "busy" => Some(RelayRefusal::Busy),
            _ => None,
        }
    }
}

/// Longest TURN password carried: base64 of a 20-byte HMAC-SHA1 is 28.
pub const MAX_RELAY_PASSWORD_BYTES: usize = 44;

/// Whether `s` is a TURN REST user name as a master makes them:
/// `EXPIRY:ADDRESS`, EXPIRY a Unix time in seconds, ADDRESS an IP address.
pub fn is_relay_username(s: &str) -> bool {
    let Some((expiry, address)) = s.split_once(':') else { return false };
    (1..=12).contains(&expiry.len())
        && expiry.bytes().all(|c| c.is_ascii_digit())
        && address.parse::<std::net::IpAddr>().is_ok()
}

/// Whether `s` is a TURN password as a master makes them (base64).
pub fn is_relay_password(s: &str) -> bool {
    (1..=MAX_RELAY_PASSWORD_BYTES).contains(&s.len())
        && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'=')
}

/// One extension datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    Check {
        nonce: String,
    },
    Probe {
        nonce: String,
    },
    Sent {
        nonce: String,
        seen: SocketAddr,
        probe_port: u16,
        probe_ip: Option<IpAddr>,
    },
    WhoAmI {
        nonce: String,
    },
    YouAre {
        nonce: String,
        seen: SocketAddr,
    },
    PunchRequest {
        server: SocketAddr,
        cookie: Option<String>,
    },
    PunchChallenge {
        server: SocketAddr,
        cookie: String,
    },
    PunchIntro {
        client: SocketAddr,
        key: String,
    },
    PunchProbe,
    PunchStarted {
        server: SocketAddr,
        nat: Nat,
        game_port: u16,
    },
    PunchRefused {
        server: SocketAddr,
        why: Refusal,
        game_port: u16,
    },
    /// `punchIntro CLIENT KEY relay`: CLIENT is a relayed address.
    PunchIntroRelayed {
        client: SocketAddr,
        key: String,
    },
    RelayRequest {
        server: SocketAddr,
        cookie: Option<String>,
    },
    RelayChallenge {
        server: SocketAddr,
        cookie: String,
    },
    RelayGrant {
        server: SocketAddr,
        turn: SocketAddr,
        username: String,
        password: String,
    },
    RelayRefused {
        server: SocketAddr,
        why: RelayRefusal,
    },
    RelayIntro {
        server: SocketAddr,
        relayed: SocketAddr,
        cookie: String,
    },
}

/// Whether `s` is a nonce, cookie or key.
pub fn is_token(s: &str) -> bool {
    crate::wire::is_nonce(s)
}

/// A fresh random token of 16 characters.
pub fn new_token() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(web_time::SystemTime::now());
    let b = RandomState::new().hash_one(a);
    format!("{a:016x}{b:016x}")[..16].to_owned()
}

impl Reach {
    /// The datagram.
    pub fn encode(&self) -> Vec<u8> {
        let text = match self {
            Reach::Check { nonce } => format!("reachCheck {nonce}"),
            Reach::Probe { nonce } => format!("reachProbe {nonce}"),
            Reach::Sent { nonce, seen, probe_port, probe_ip: None } => format!("reachSent {nonce} {seen} {probe_port}"),
            Reach::Sent { nonce, seen, probe_port, probe_ip: Some(ip) } => {
                format!("reachSent {nonce} {seen} {probe_port} {ip}")
            }
            Reach::WhoAmI { nonce } => format!("whoami {nonce}"),
            Reach::YouAre { nonce, seen } => format!("youAre {nonce} {seen}"),
            Reach::PunchRequest { server, cookie } => {
                format!("punchRequest {server} {}", cookie.as_deref().unwrap_or("-"))
            }
            Reach::PunchChallenge { server, cookie } => format!("punchChallenge {server} {cookie}"),
            Reach::PunchIntro { client, key } => format!("punchIntro {client} {key}"),
            Reach::PunchProbe => "punchProbe".to_owned(),
            Reach::PunchStarted { server, nat, game_port } => {
                format!("punchStarted {server} {} {game_port}", nat.as_str())
            }
            Reach::PunchRefused { server, why, game_port } => {
                format!("punchRefused {server} {} {game_port}", why.as_str())
            }
            Reach::PunchIntroRelayed { client, key } => format!("punchIntro {client} {key} relay"),
            Reach::RelayRequest { server, cookie } => {
                format!("relayRequest {server} {}", cookie.as_deref().unwrap_or("-"))
            }
            Reach::RelayChallenge { server, cookie } => format!("relayChallenge {server} {cookie}"),
            Reach::RelayGrant { server, turn, username, password } => {
                format!("relayGrant {server} {turn} {username} {password}")
            }
            Reach::RelayRefused { server, why } => format!("relayRefused {server} {}", why.as_str()),
            Reach::RelayIntro { server, relayed, cookie } => format!("relayIntro {server} {relayed} {cookie}"),
        };
        let mut out = PREFIX.to_vec();
        out.extend_from_slice(text.as_bytes());
        out
    }

    /// The datagram padded to `bytes` after a newline (which readers skip):
    /// a master answers no address with more bytes than it sent, so a
    /// request is padded to earn its answers.
    pub fn padded(&self, bytes: usize) -> Vec<u8> {
        let mut datagram = self.encode();
        datagram.push(b'\n');
        datagram.resize(bytes.max(datagram.len()), 0);
        datagram
    }

    /// Reads an extension datagram; `None` for anything else (a plain
    /// dpmaster message, a game packet, garbage). Trailing padding after
    /// a newline is ignored (requests may be padded to earn their answer).
    pub fn parse(datagram: &[u8]) -> Option<Reach> {
        if datagram.len() > MAX_DATAGRAM_BYTES {
            return None;
        }
        let body = datagram.strip_prefix(&PREFIX)?;
        let line = body.split(|&c| c == b'\n').next()?;
        let text = std::str::from_utf8(line).ok()?;
        let mut words = text.split(' ');
        let command = words.next()?;
        let args: Vec<&str> = words.by_ref().take(4).collect();
        if words.next().is_some() {
            return None;
        }
        let token = |s: &str| is_token(s).then(|| s.to_owned());
        let addr = |s: &str| s.parse::<SocketAddr>().ok().map(arena_udp::canonical);
        Some(match (command, args.as_slice()) {
            ("reachCheck", [n]) => Reach::Check { nonce: token(n)? },
            ("reachProbe", [n]) => Reach::Probe { nonce: token(n)? },
            ("reachSent", [n, a, p]) => Reach::Sent {
                nonce: token(n)?,
                seen: addr(a)?,
                probe_port: p.parse().ok().filter(|&p| p != 0)?,
                probe_ip: None,
            },
            ("reachSent", [n, a, p, ip]) => Reach::Sent {
                nonce: token(n)?,
                seen: addr(a)?,
                probe_port: p.parse().ok().filter(|&p| p != 0)?,
                probe_ip: Some(ip.parse::<IpAddr>().ok().map(|ip| arena_udp::canonical(SocketAddr::new(ip, 0)).ip())?),
            },
            ("whoami", [n]) => Reach::WhoAmI { nonce: token(n)? },
            ("youAre", [n, a]) => Reach::YouAre { nonce: token(n)?, seen: addr(a)? },
            ("punchRequest", [s, c]) => {
                Reach::PunchRequest { server: addr(s)?, cookie: if *c == "-" { None } else { Some(token(c)?) } }
            }
            ("punchChallenge", [s, c]) => Reach::PunchChallenge { server: addr(s)?, cookie: token(c)? },
            ("punchIntro", [a, k]) => Reach::PunchIntro { client: addr(a)?, key: token(k)? },
            ("punchIntro", [a, k, "relay"]) => Reach::PunchIntroRelayed { client: addr(a)?, key: token(k)? },
            ("punchProbe", []) => Reach::PunchProbe,
            ("punchStarted", [s, n, p]) => {
                Reach::PunchStarted { server: addr(s)?, nat: Nat::parse(n), game_port: p.parse().ok()? }
            }
            ("punchRefused", [s, w, p]) => {
                Reach::PunchRefused { server: addr(s)?, why: Refusal::parse(w)?, game_port: p.parse().ok()? }
            }
            ("relayRequest", [s, c]) => {
                Reach::RelayRequest { server: addr(s)?, cookie: if *c == "-" { None } else { Some(token(c)?) } }
            }
            ("relayChallenge", [s, c]) => Reach::RelayChallenge { server: addr(s)?, cookie: token(c)? },
            ("relayGrant", [s, t, u, p]) if is_relay_username(u) && is_relay_password(p) => Reach::RelayGrant {
                server: addr(s)?,
                turn: addr(t)?,
                username: (*u).to_owned(),
                password: (*p).to_owned(),
            },
            ("relayRefused", [s, w]) => Reach::RelayRefused { server: addr(s)?, why: RelayRefusal::parse(w)? },
            ("relayIntro", [s, r, c]) => Reach::RelayIntro { server: addr(s)?, relayed: addr(r)?, cookie: token(c)? },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let v4: SocketAddr = "11.0.0.2:27015".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::7]:27015".parse().unwrap();
        let nonce = new_token();
        assert!(is_token(&nonce));
        for message in [
            Reach::Check { nonce: nonce.clone() },
            Reach::Probe { nonce: nonce.clone() },
            Reach::Sent { nonce: nonce.clone(), seen: v4, probe_port: 27951, probe_ip: None },
            Reach::Sent {
                nonce: nonce.clone(),
                seen: v6,
                probe_port: 27951,
                probe_ip: Some("2001:db8::9".parse().unwrap()),
            },
            Reach::WhoAmI { nonce: nonce.clone() },
            Reach::YouAre { nonce: nonce.clone(), seen: v6 },
            Reach::PunchRequest { server: v4, cookie: None },
            Reach::PunchRequest { server: v6, cookie: Some(nonce.clone()) },
            Reach::PunchChallenge { server: v4, cookie: nonce.clone() },
            Reach::PunchIntro { client: v6, key: nonce.clone() },
            Reach::PunchProbe,
            Reach::PunchStarted { server: v4, nat: Nat::Punchable, game_port: 27015 },
            Reach::PunchRefused { server: v4, why: Refusal::Symmetric, game_port: 0 },
            Reach::PunchIntroRelayed { client: v4, key: nonce.clone() },
            Reach::RelayRequest { server: v4, cookie: None },
            Reach::RelayRequest { server: v6, cookie: Some(nonce.clone()) },
            Reach::RelayChallenge { server: v4, cookie: nonce.clone() },
            Reach::RelayGrant {
                server: v6,
                turn: v4,
                username: "1764212345:2001:db8::9".into(),
                password: "q7uTmiJ3tbEVq2aD3Ri9hDEHaSs=".into(),
            },
            Reach::RelayRefused { server: v4, why: RelayRefusal::Open },
            Reach::RelayIntro { server: v4, relayed: v4, cookie: nonce.clone() },
        ] {
            assert_eq!(Reach::parse(&message.encode()), Some(message.clone()), "{message:?}");
            let mut padded = message.encode();
            padded.extend_from_slice(b"\n\0\0\0\0");
            assert_eq!(Reach::parse(&padded), Some(message));
        }
    }

    #[test]
    fn refuses_what_is_not_one() {
        for bad in [
            &b"reachCheck abcdefgh"[..],
            b"\xFF\xFF\xFF\xFFreachCheck short",
            b"\xFF\xFF\xFF\xFFreachCheck abcdefgh extra",
            b"\xFF\xFF\xFF\xFFreachCheck abcd-fgh",
            b"\xFF\xFF\xFF\xFFreachSent abcdefgh 1.2.3.4:5 0",
            b"\xFF\xFF\xFF\xFFpunchIntro 1.2.3.4 abcdefgh",
            b"\xFF\xFF\xFF\xFFpunchRefused 1.2.3.4:5 why 0",
            b"\xFF\xFF\xFF\xFFpunchStarted 1.2.3.4:5 open 70000",
            b"\xFF\xFF\xFF\xFFgetinfo abc",
            b"\xFF\xFF\xFF\xFF\xC3\x28",
            b"\xFF\xFF\xFF\xFFpunchRequest 1.2.3.4:5 - a b c d e",
            b"\xFF\xFF\xFF\xFFpunchIntro 1.2.3.4:5 abcdefgh relayed",
            b"\xFF\xFF\xFF\xFFrelayGrant 1.2.3.4:5 1.2.3.4:3478 nocolon pass",
            b"\xFF\xFF\xFF\xFFrelayGrant 1.2.3.4:5 1.2.3.4:3478 12:not-an-ip pass",
            b"\xFF\xFF\xFF\xFFrelayGrant 1.2.3.4:5 1.2.3.4:3478 12:1.2.3.4 pa ss",
            b"\xFF\xFF\xFF\xFFrelayGrant 1.2.3.4:5 1.2.3.4:3478 12:1.2.3.4 pa\x01ss",
            b"\xFF\xFF\xFF\xFFrelayRefused 1.2.3.4:5 maybe",
        ] {
            assert_eq!(Reach::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Reach::parse(&[0xFF; 2000]), None);
    }
}
