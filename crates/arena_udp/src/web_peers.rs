//! Browser sessions as peers of the game socket: the address each
//! WebTransport session is known by, which no UDP datagram can claim, and
//! the link the server reaches them through beside its UDP socket.
//!
//! A session's address lies in `0100::/16`, space the IETF reserves (its
//! first /64 is RFC 6666's discard prefix): no real peer has one, and the
//! server drops any UDP datagram that claims one. The address's second /64
//! names the session; its first names the real address the session came
//! from (an origin number, one per real address's [`limit_key`]), so that
//! rate limits, which count by [`limit_key`], count a browser's sessions
//! together as they count a UDP player's datagrams together.
//!
//! [`limit_key`]: crate::limit_key

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The first 16 bits of every web peer's address.
const WEB_PEER_PREFIX: u16 = 0x0100;
/// The port of every web peer's address (sessions differ by address).
const WEB_PEER_PORT: u16 = 1;

/// The address of session `session` from origin `origin`.
pub fn web_peer_addr(origin: u32, session: u64) -> SocketAddr {
    let bits = (u128::from(WEB_PEER_PREFIX) << 112) | (u128::from(origin) << 64) | u128::from(session);
    SocketAddr::new(IpAddr::V6(Ipv6Addr::from(bits)), WEB_PEER_PORT)
}

/// Whether `ip` is a web peer's (some UDP datagram claiming it is forged).
pub fn is_web_peer(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.segments()[0] == WEB_PEER_PREFIX,
        IpAddr::V4(_) => false,
    }
}

/// The session number in a web peer's address.
pub fn web_session(addr: SocketAddr) -> Option<u64> {
    match addr.ip() {
        IpAddr::V6(v6) if is_web_peer(addr.ip()) => Some(u128::from(v6) as u64),
        _ => None,
    }
}

/// What the endpoint has carried and dropped, for the game's reports.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WebCounts {
    pub sessions_open: usize,
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    /// Datagrams that crossed as stream frames (too long for a datagram).
    pub frames_in: u64,
    pub frames_out: u64,
    /// Datagrams to send that found room neither in a datagram nor on the
    /// session's stream.
    pub dropped_for_size: u64,
    /// Sessions refused before their handshake (caps, bans, wrong path).
    pub refused: u64,
}

/// What the game server needs of the browsers' endpoint: datagrams in and
/// out by peer address, the real address behind one, and the console's
/// bans and netcode's disconnections carried out on the sessions. Called
/// from the game's thread; the endpoint runs on its own.
pub trait WebLink: Send + Sync {
    /// Sends one netcode datagram to a web peer (as a datagram or a stream
    /// frame, whichever fits); false when no such session is open.
    fn send(&self, to: SocketAddr, datagram: &[u8]) -> bool;
    /// Moves the datagrams the sessions received since the last call into
    /// `out`, each with its session's address.
    fn receive(&self, out: &mut Vec<(SocketAddr, Vec<u8>)>);
    /// The real address a web peer's session came from.
    fn origin(&self, peer: SocketAddr) -> Option<SocketAddr>;
    /// Refuses new sessions from `ip` (a real address, by its
    /// [`crate::limit_key`]) for the rest of the server's life and closes its
    /// open ones; false when it cannot (a web peer's address, a full list).
    fn ban(&self, ip: IpAddr) -> bool;
    /// The peer became a netcode client (a player): its session may stay.
    fn admitted(&self, peer: SocketAddr);
    /// Closes a peer's session (netcode has let the client go).
    fn close(&self, peer: SocketAddr);
    /// What the endpoint carried and dropped so far.
    fn counts(&self) -> WebCounts;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_web_peer_is_known_by_its_session_and_counted_by_its_origin() {
        let a = web_peer_addr(7, 1);
        let b = web_peer_addr(7, 2);
        let c = web_peer_addr(8, 3);
        assert!(is_web_peer(a.ip()) && is_web_peer(c.ip()));
        assert_eq!(web_session(b), Some(2));
        assert_eq!(crate::limit_key(a.ip()), crate::limit_key(b.ip()));
        assert_ne!(crate::limit_key(a.ip()), crate::limit_key(c.ip()));
        assert_eq!(crate::canonical(a), a, "already canonical");
        for real in ["127.0.0.1", "::1", "192.168.1.5", "2001:db8::1", "::ffff:10.0.0.1"] {
            let ip: IpAddr = real.parse().unwrap();
            assert!(!is_web_peer(ip), "{real}");
            assert_eq!(web_session(SocketAddr::new(ip, 1)), None);
        }
    }
}
