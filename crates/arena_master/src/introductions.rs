//! The master's side of introductions for hole punching (see `reach.rs`
//! for the messages): cookies that prove a client's address (a keyed MAC of
//! the client, the server it asks for and the time, kept nowhere), and a
//! budget of introductions per server, per client network and per client
//! address (`budget.rs`), so that no one can make a server spray probes
//! (a server hears only of addresses that asked the master themselves, at
//! most [`INTRODUCTIONS_PER_S`] a second) and one network cannot spend a
//! server's budget for everyone.
//!
//! Work per request is bounded: the table of recent introductions is kept
//! in the order they were made and forgotten from its old end, never swept
//! whole for a request; and only introductions made are remembered (after
//! the budget said yes), so requests the budget refuses add nothing.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arena_udp::{INTRODUCTION_BURST, INTRODUCTIONS_PER_S};

use crate::budget::{NetworkBudget, Rate, Rates};

/// A cookie is made in a window this long and is good until
/// [`COOKIE_LIFETIME`] after its window began.
const COOKIE_WINDOW: Duration = Duration::from_millis(250);
pub(crate) const COOKIE_LIFETIME: Duration = Duration::from_secs(2);

/// The budget of introductions: per server what the server itself takes
/// (`arena_udp`'s figures, so the master never sends more than a server
/// accepts); per client network half of it, and per client address (an
/// IPv6 /64 within its /56) a quarter, so that at least two networks, and
/// four hosts of one, share a busy server's burst.
const RATES: Rates = Rates {
    target: Rate { per_s: INTRODUCTIONS_PER_S, burst: INTRODUCTION_BURST },
    network: Rate { per_s: INTRODUCTIONS_PER_S / 2.0, burst: INTRODUCTION_BURST / 2.0 },
    address: Rate { per_s: INTRODUCTIONS_PER_S / 4.0, burst: INTRODUCTION_BURST / 4.0 },
};
/// (server, client network) and (server, client address) budgets kept, at
/// most, each.
const MAX_CLIENT_BUDGETS: usize = 16_384;

/// A client (its address and port) introduced to a server is not
/// introduced to it again within this: a replayed cookie does not spend the
/// server's budget. (Players sharing an address have ports of their own.)
pub(crate) const REINTRODUCE_AFTER: Duration = Duration::from_secs(2);
/// Recent introductions remembered, at most.
const MAX_RECENT: usize = 16_384;

#[derive(Debug)]
pub(crate) struct Introductions {
    key: RandomState,
    budget: NetworkBudget<SocketAddr>,
    /// (client, server) introduced lately, and when.
    recent: HashMap<(SocketAddr, SocketAddr), Duration>,
    /// The same in the order they were made (time never goes back in the
    /// socket loop; an entry whose time no longer matches is stale).
    recent_order: VecDeque<((SocketAddr, SocketAddr), Duration)>,
    /// Entries of the tables looked at to forget old ones (work, for tests).
    pub(crate) swept: u64,
}

impl Introductions {
    pub(crate) fn new(max_servers: usize) -> Self {
        Self {
            key: RandomState::new(),
            budget: NetworkBudget::new(RATES, max_servers, MAX_CLIENT_BUDGETS),
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            swept: 0,
        }
    }

    fn window(now: Duration) -> u64 {
        (now.as_millis() / COOKIE_WINDOW.as_millis()) as u64
    }

    fn cookie_in(&self, client: SocketAddr, server: SocketAddr, window: u64) -> String {
        let a = self.key.hash_one((client, server, window, 0u8));
        let b = self.key.hash_one((client, server, window, 1u8));
        format!("{a:016x}{b:08x}")[..24].to_owned()
    }

    /// The cookie for `client` asking for `server` now.
    pub(crate) fn cookie(&self, client: SocketAddr, server: SocketAddr, now: Duration) -> String {
        self.cookie_in(client, server, Self::window(now))
    }

    /// Whether `cookie` was made for this pair within its lifetime.
    pub(crate) fn cookie_good(&self, client: SocketAddr, server: SocketAddr, cookie: &str, now: Duration) -> bool {
        let newest = Self::window(now);
        let windows = (COOKIE_LIFETIME.as_millis() / COOKIE_WINDOW.as_millis()) as u64;
        (newest.saturating_sub(windows)..=newest).rev().any(|w| {
            let began = COOKIE_WINDOW.saturating_mul(u32::try_from(w).unwrap_or(u32::MAX));
            began + COOKIE_LIFETIME > now && self.cookie_in(client, server, w) == cookie
        })
    }

    /// Whether `client` was introduced to `server` within
    /// [`REINTRODUCE_AFTER`] (then it is not again).
    pub(crate) fn introduced_lately(&mut self, client: SocketAddr, server: SocketAddr, now: Duration) -> bool {
        self.forget_old(now);
        self.recent.get(&(client, server)).is_some_and(|&at| now.saturating_sub(at) < REINTRODUCE_AFTER)
    }

    /// Takes one introduction of `client` to `server` from the budgets and
    /// remembers it; false (nothing taken, nothing kept) when spent.
    pub(crate) fn allow(&mut self, client: SocketAddr, server: SocketAddr, now: Duration) -> bool {
        self.allow_charged(client.ip(), client, server, now)
    }

    /// The same for an introduction of `client` charged to the budgets of
    /// `asker` (a relayed address is the relay's: its player pays).
    pub(crate) fn allow_charged(
        &mut self,
        asker: IpAddr,
        client: SocketAddr,
        server: SocketAddr,
        now: Duration,
    ) -> bool {
        if !self.budget.allow(server, asker, now) {
            return false;
        }
        self.forget_old(now);
        // Full of fresh ones (more than the budgets let through in
        // REINTRODUCE_AFTER): not remembered, the budgets still hold.
        if self.recent.len() < MAX_RECENT {
            self.recent.insert((client, server), now);
            self.recent_order.push_back(((client, server), now));
        }
        true
    }

    /// Forgets the introductions older than [`REINTRODUCE_AFTER`], from the
    /// old end: each entry is looked at once after it is made.
    fn forget_old(&mut self, now: Duration) {
        while let Some(&(key, at)) = self.recent_order.front() {
            if now.saturating_sub(at) < REINTRODUCE_AFTER && self.recent_order.len() <= 2 * MAX_RECENT {
                break;
            }
            self.swept += 1;
            self.recent_order.pop_front();
            if self.recent.get(&key) == Some(&at) {
                self.recent.remove(&key);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn recent_len(&self) -> usize {
        self.recent.len()
    }

    pub(crate) fn forget_idle(&mut self, now: Duration) {
        self.budget.forget_idle(now);
        self.forget_old(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_belong_to_their_pair_and_time() {
        let intros = Introductions::new(4);
        let client: SocketAddr = "11.0.0.9:5000".parse().unwrap();
        let other: SocketAddr = "11.0.0.9:5001".parse().unwrap();
        let server: SocketAddr = "11.0.0.2:27015".parse().unwrap();
        let now = Duration::from_secs(100);
        let cookie = intros.cookie(client, server, now);
        assert!(crate::reach::is_token(&cookie));
        assert!(intros.cookie_good(client, server, &cookie, now));
        assert!(intros.cookie_good(client, server, &cookie, now + Duration::from_millis(1500)));
        assert!(!intros.cookie_good(client, server, &cookie, now + Duration::from_millis(2300)));
        assert!(!intros.cookie_good(other, server, &cookie, now));
        assert!(!intros.cookie_good(client, other, &cookie, now));
        assert!(!Introductions::new(4).cookie_good(client, server, &cookie, now));
    }

    #[test]
    fn a_server_gets_a_bounded_number_of_introductions() {
        let mut intros = Introductions::new(1);
        let server: SocketAddr = "11.0.0.2:27015".parse().unwrap();
        let now = Duration::from_secs(5);
        let client = |i: u16| SocketAddr::from(([11, 0, 9, (i % 200) as u8], 1000 + i));
        let granted = (0..100).filter(|&i| intros.allow(client(i), server, now)).count();
        assert_eq!(granted, INTRODUCTION_BURST as usize);
        assert!(intros.allow(client(500), server, now + Duration::from_millis(150)));
        // The table is full of one busy server: another waits.
        assert!(!intros.allow(client(501), "11.0.0.3:27015".parse().unwrap(), now));
        assert!(intros.allow(client(502), "11.0.0.3:27015".parse().unwrap(), now + Duration::from_secs(20)));
        // Only what was granted is remembered.
        assert!(intros.recent_len() <= granted + 2);
    }
}
