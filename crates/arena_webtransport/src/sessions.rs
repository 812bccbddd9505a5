//! The sessions' table: who may open one (bans, the per-address and total
//! caps, counted from the handshake on), the peer address each open
//! session is known by, and the real address behind it. No I/O: the
//! endpoint keeps its connection handles in it.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use arena_udp::{canonical, is_web_peer, limit_key, web_peer_addr, web_session};

use crate::limits::MAX_SESSIONS_PER_IP;

/// Addresses banned at most (the console's `ban` of a browser player).
const MAX_BANNED: usize = 4096;

/// Why a session was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Banned,
    PerAddress,
    Full,
}

/// A place held for a session in its handshake.
#[derive(Debug)]
pub(crate) struct Ticket {
    real: SocketAddr,
    key: IpAddr,
}

#[derive(Debug)]
pub(crate) struct Session<H> {
    pub(crate) real: SocketAddr,
    key: IpAddr,
    /// Its whole peer address (a lookup matches all of it).
    peer: SocketAddr,
    pub(crate) handle: H,
}

/// One real address's sessions open or in their handshake.
#[derive(Debug)]
struct Origin {
    sessions: usize,
}

#[derive(Debug)]
pub(crate) struct Table<H> {
    open: HashMap<u64, Session<H>>,
    origins: HashMap<IpAddr, Origin>,
    handshaking: usize,
    banned: HashSet<IpAddr>,
    next_session: u64,
    /// Names a real address in its sessions' peer addresses: a keyed hash
    /// (its key this server's own), so that one address keeps its number
    /// (and its rate limits' budgets) however often it reconnects, and
    /// nobody can aim at another's.
    origin_hash: std::collections::hash_map::RandomState,
    max_sessions: usize,
}

impl<H> Table<H> {
    /// A table for at most `max_sessions` sessions at once.
    pub(crate) fn new(max_sessions: usize) -> Self {
        Self {
            open: HashMap::new(),
            origins: HashMap::new(),
            handshaking: 0,
            banned: HashSet::new(),
            next_session: 1,
            origin_hash: std::collections::hash_map::RandomState::new(),
            max_sessions,
        }
    }

    /// Holds a place for a session from `real`, or says why not.
    pub(crate) fn admit(&mut self, real: SocketAddr) -> Result<Ticket, Refusal> {
        let real = canonical(real);
        let key = limit_key(real.ip());
        if self.banned.contains(&key) {
            return Err(Refusal::Banned);
        }
        if self.origins.get(&key).is_some_and(|o| o.sessions >= MAX_SESSIONS_PER_IP) {
            return Err(Refusal::PerAddress);
        }
        if self.open.len() + self.handshaking >= self.max_sessions {
            return Err(Refusal::Full);
        }
        self.origins.entry(key).or_insert(Origin { sessions: 0 }).sessions += 1;
        self.handshaking += 1;
        Ok(Ticket { real, key })
    }

    /// Handshakes under way.
    pub(crate) fn handshaking(&self) -> usize {
        self.handshaking
    }

    /// Sessions open.
    pub(crate) fn open_count(&self) -> usize {
        self.open.len()
    }

    /// A handshake that failed gives its place back.
    pub(crate) fn abandon(&mut self, ticket: Ticket) {
        self.handshaking = self.handshaking.saturating_sub(1);
        self.release(ticket.key);
    }

    /// The session is open: its peer address (`None` if the address was
    /// banned during the handshake: the place is given back).
    pub(crate) fn open(&mut self, ticket: Ticket, handle: H) -> Option<SocketAddr> {
        self.handshaking = self.handshaking.saturating_sub(1);
        if self.banned.contains(&ticket.key) {
            self.release(ticket.key);
            return None;
        }
        let number = std::hash::BuildHasher::hash_one(&self.origin_hash, ticket.key) as u32;
        let session = self.next_session;
        self.next_session += 1;
        let peer = web_peer_addr(number, session);
        self.open.insert(session, Session { real: ticket.real, key: ticket.key, peer, handle });
        Some(peer)
    }

    pub(crate) fn get(&self, peer: SocketAddr) -> Option<&Session<H>> {
        self.open.get(&web_session(peer)?).filter(|s| s.peer == peer)
    }

    /// Ends a session (its place given back); its handle, if it was open.
    pub(crate) fn close(&mut self, peer: SocketAddr) -> Option<H> {
        self.get(peer)?;
        let session = self.open.remove(&web_session(peer)?)?;
        self.release(session.key);
        Some(session.handle)
    }

    /// Bans the real address `ip` (by its limit key): no new session from
    /// it; the handles of its open sessions, to close. `None` when the ban
    /// list is full.
    pub(crate) fn ban(&mut self, ip: IpAddr) -> Option<Vec<&H>> {
        if is_web_peer(ip) {
            // A peer's address is no real one: the caller names the real.
            return None;
        }
        let key = limit_key(canonical(SocketAddr::new(ip, 0)).ip());
        if self.banned.len() >= MAX_BANNED && !self.banned.contains(&key) {
            return None;
        }
        self.banned.insert(key);
        Some(self.open.values().filter(|s| s.key == key).map(|s| &s.handle).collect())
    }

    fn release(&mut self, key: IpAddr) {
        if let Some(origin) = self.origins.get_mut(&key) {
            origin.sessions = origin.sessions.saturating_sub(1);
            if origin.sessions == 0 {
                self.origins.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn one_address_holds_its_share_and_the_table_its_total() {
        let mut table: Table<u32> = Table::new(10);
        let mut tickets = Vec::new();
        for port in 0..MAX_SESSIONS_PER_IP as u16 {
            tickets.push(table.admit(addr(&format!("192.0.2.1:{}", 1000 + port))).unwrap());
        }
        assert_eq!(table.admit(addr("192.0.2.1:9")).unwrap_err(), Refusal::PerAddress);
        // Another /64 of IPv6 is another address; the same /64 is the same one.
        let a = table.admit(addr("[2001:db8:0:1::1]:5")).unwrap();
        assert!(table.admit(addr("[2001:db8:0:2::1]:5")).is_ok());
        assert_eq!(table.admit(addr("[2001:db8:0:3::1]:5")).unwrap_err(), Refusal::Full);
        // A failed handshake gives its place back.
        table.abandon(tickets.pop().unwrap());
        assert!(table.admit(addr("192.0.2.1:9")).is_ok());
        let peer = table.open(a, 7).unwrap();
        assert!(is_web_peer(peer.ip()));
        assert_eq!(table.get(peer).map(|s| s.real), Some(addr("[2001:db8:0:1::1]:5")));
        assert_eq!(table.close(peer), Some(7));
        assert!(table.get(peer).is_none() && table.close(peer).is_none());
    }

    #[test]
    fn sessions_of_one_address_share_a_limit_key_and_others_do_not() {
        let mut table: Table<()> = Table::new(10);
        let t1 = table.admit(addr("198.51.100.7:1")).unwrap();
        let t2 = table.admit(addr("198.51.100.7:2")).unwrap();
        let t3 = table.admit(addr("198.51.100.8:1")).unwrap();
        let (p1, p2, p3) = (table.open(t1, ()).unwrap(), table.open(t2, ()).unwrap(), table.open(t3, ()).unwrap());
        assert_ne!(p1, p2);
        assert_eq!(limit_key(p1.ip()), limit_key(p2.ip()));
        assert_ne!(limit_key(p1.ip()), limit_key(p3.ip()));
    }

    #[test]
    fn a_ban_of_a_real_address_names_its_sessions_and_keeps_it_out() {
        let mut table: Table<u8> = Table::new(10);
        let t1 = table.admit(addr("203.0.113.5:1")).unwrap();
        let t2 = table.admit(addr("203.0.113.5:2")).unwrap();
        let t3 = table.admit(addr("203.0.113.6:1")).unwrap();
        let p1 = table.open(t1, 1).unwrap();
        table.open(t2, 2).unwrap();
        table.open(t3, 3).unwrap();
        assert!(table.ban(p1.ip()).is_none(), "a peer's address is not a real one");
        let real = table.get(p1).unwrap().real.ip();
        let mut closed: Vec<u8> = table.ban(real).unwrap().into_iter().copied().collect();
        closed.sort();
        assert_eq!(closed, vec![1, 2]);
        assert_eq!(table.admit(addr("203.0.113.5:3")).unwrap_err(), Refusal::Banned);
        assert_eq!(table.admit(addr("[::ffff:203.0.113.5]:3")).unwrap_err(), Refusal::Banned);
        let other = table.admit(addr("203.0.113.6:2")).unwrap();
        table.abandon(other);
        // A ban during a handshake keeps the session out and gives its place back.
        let t = table.admit(addr("203.0.113.9:1")).unwrap();
        table.ban("203.0.113.9".parse().unwrap());
        assert_eq!(table.open(t, 9), None);
        assert_eq!(table.handshaking(), 0);
    }

    #[test]
    fn an_address_keeps_its_number_and_a_peer_is_found_by_all_of_its_address() {
        let mut table: Table<()> = Table::new(10);
        let first = table.admit(addr("198.51.100.9:1")).unwrap();
        let first = table.open(first, ()).unwrap();
        table.close(first);
        let again = table.admit(addr("198.51.100.9:2")).unwrap();
        let again = table.open(again, ()).unwrap();
        assert_eq!(limit_key(first.ip()), limit_key(again.ip()), "reconnecting keeps the budgets");
        // Another origin with the same session number finds nothing.
        let session = web_session(again).unwrap();
        let forged = web_peer_addr(12345, session);
        assert!(forged != again && table.get(forged).is_none() && table.close(forged).is_none());
        assert!(table.get(again).is_some());
    }
}
