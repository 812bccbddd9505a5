//! The master's side of introductions for hole punching (see `reach.rs`
//! for the messages): cookies that prove a client's address (a keyed MAC of
//! the client, the server it asks for and the time, kept nowhere), and a
//! budget of introductions per server, so that no one can make a server
//! spray probes: a server hears only of addresses that asked the master
//! themselves, at most [`INTRODUCTIONS_PER_S`] a second.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::time::Duration;

use arena_udp::{INTRODUCTION_BURST, INTRODUCTIONS_PER_S};

/// A cookie is made in a window this long and is good until
/// [`COOKIE_LIFETIME`] after its window began.
const COOKIE_WINDOW: Duration = Duration::from_millis(250);
pub(crate) const COOKIE_LIFETIME: Duration = Duration::from_secs(2);
/// Budgets idle this long are forgotten (a full one is the same as none).
const IDLE: Duration = Duration::from_secs(10);

/// A client (its address and port) introduced to a server is not
/// introduced to it again within this: a replayed cookie does not spend the
/// server's budget. (Players sharing an address have ports of their own.)
pub(crate) const REINTRODUCE_AFTER: Duration = Duration::from_secs(2);
/// Recent introductions remembered, at most.
const MAX_RECENT: usize = 16_384;

#[derive(Debug)]
pub(crate) struct Introductions {
    key: RandomState,
    /// Per server: tokens left and when they were counted.
    budgets: HashMap<SocketAddr, (f64, Duration)>,
    max_budgets: usize,
    /// (client, server) introduced lately, and when.
    recent: HashMap<(SocketAddr, SocketAddr), Duration>,
}

impl Introductions {
    pub(crate) fn new(max_servers: usize) -> Self {
        Self { key: RandomState::new(), budgets: HashMap::new(), max_budgets: max_servers, recent: HashMap::new() }
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
    /// [`REINTRODUCE_AFTER`] (then it is not again); remembers it if not.
    pub(crate) fn introduced_lately(&mut self, client: SocketAddr, server: SocketAddr, now: Duration) -> bool {
        let key = (client, server);
        if let Some(&at) = self.recent.get(&key)
            && now.saturating_sub(at) < REINTRODUCE_AFTER
        {
            return true;
        }
        if self.recent.len() >= MAX_RECENT {
            self.recent.retain(|_, at| now.saturating_sub(*at) < REINTRODUCE_AFTER);
            if self.recent.len() >= MAX_RECENT {
                // Full of fresh ones: not remembered (the budget still holds).
                return false;
            }
        }
        self.recent.insert(key, now);
        false
    }

    /// Takes one introduction from `server`'s budget; false when spent.
    pub(crate) fn allow(&mut self, server: SocketAddr, now: Duration) -> bool {
        if !self.budgets.contains_key(&server) && self.budgets.len() >= self.max_budgets {
            self.forget_idle(now);
            if self.budgets.len() >= self.max_budgets {
                return false;
            }
        }
        let (tokens, at) = self.budgets.entry(server).or_insert((INTRODUCTION_BURST, now));
        *tokens = (*tokens + now.saturating_sub(*at).as_secs_f64() * INTRODUCTIONS_PER_S).min(INTRODUCTION_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }

    pub(crate) fn forget_idle(&mut self, now: Duration) {
        self.budgets.retain(|_, (_, at)| now.saturating_sub(*at) < IDLE);
        self.recent.retain(|_, at| now.saturating_sub(*at) < REINTRODUCE_AFTER);
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
        let granted = (0..100).filter(|_| intros.allow(server, now)).count();
        assert_eq!(granted, INTRODUCTION_BURST as usize);
        assert!(intros.allow(server, now + Duration::from_millis(150)));
        // The table is full of one busy server: another waits.
        assert!(!intros.allow("11.0.0.3:27015".parse().unwrap(), now));
        assert!(intros.allow("11.0.0.3:27015".parse().unwrap(), now + IDLE * 2));
    }
}
