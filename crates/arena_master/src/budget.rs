//! Budgets by network: token buckets per key, and a budget for one kind of
//! grant (an introduction to a server; later, relay credentials) spent per
//! target in all, per client network and per client address, so that one
//! network cannot spend a target's budget for everyone.
//!
//! A client's network is its IPv4 address, or its IPv6 /56 (the prefix a
//! home is given: RIPE-690 recommends /56 for residential lines, so a /64
//! would let one home act as 256 networks); its address is its IPv4
//! address, or its IPv6 /64 (one host may use any address of its /64,
//! privacy addresses do). Every table is bounded: when a table is full of
//! busy keys, a new key is refused (the grant waits) rather than kept.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

use arena_udp::limit_key;

use crate::credit::SWEEP_PERIOD;

/// A client's network: its IPv4 address, or its IPv6 /56.
pub(crate) fn network_key(ip: IpAddr) -> IpAddr {
    match limit_key(ip) {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (!0u128 << 72))),
        v4 => v4,
    }
}

/// A client's address, for budgets: its IPv4 address, or its IPv6 /64.
pub(crate) fn address_key(ip: IpAddr) -> IpAddr {
    limit_key(ip)
}

/// A rate and a burst: tokens a second, and the most a bucket holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rate {
    pub(crate) per_s: f64,
    pub(crate) burst: f64,
}

impl Rate {
    /// How long an untouched bucket takes to fill (then it is the same as none).
    fn refill(self) -> Duration {
        Duration::from_secs_f64((self.burst / self.per_s.max(f64::MIN_POSITIVE)).min(3600.0))
    }
}

/// Token buckets by key, at most `max_keys` of them.
#[derive(Debug)]
pub(crate) struct Buckets<K> {
    rate: Rate,
    max_keys: usize,
    /// Tokens left and when they were counted.
    buckets: HashMap<K, (f64, Duration)>,
    swept: Option<Duration>,
}

impl<K: Hash + Eq + Copy> Buckets<K> {
    pub(crate) fn new(rate: Rate, max_keys: usize) -> Self {
        Self { rate, max_keys, buckets: HashMap::new(), swept: None }
    }

    /// Tokens `key` has at `now`.
    fn tokens(&self, key: &K, now: Duration) -> f64 {
        match self.buckets.get(key) {
            None => self.rate.burst,
            Some(&(tokens, at)) => {
                (tokens + now.saturating_sub(at).as_secs_f64() * self.rate.per_s).min(self.rate.burst)
            }
        }
    }

    /// Whether `key` could take a token now (a key the table has no room
    /// for cannot).
    pub(crate) fn can_take(&mut self, key: &K, now: Duration) -> bool {
        if !self.buckets.contains_key(key) && self.buckets.len() >= self.max_keys {
            // A sweep of the full table at most every SWEEP_PERIOD: a flood
            // of new keys must not pay for one each.
            if self.swept.is_none_or(|t| now.saturating_sub(t) >= SWEEP_PERIOD) {
                self.swept = Some(now);
                self.forget_idle(now);
            }
            if self.buckets.len() >= self.max_keys {
                return false;
            }
        }
        self.tokens(key, now) >= 1.0
    }

    /// Takes a token from `key` (call after [`Buckets::can_take`] said yes).
    pub(crate) fn take(&mut self, key: K, now: Duration) {
        let tokens = self.tokens(&key, now);
        self.buckets.insert(key, ((tokens - 1.0).max(0.0), now));
    }

    /// Forgets the buckets full again.
    pub(crate) fn forget_idle(&mut self, now: Duration) {
        let refill = self.rate.refill();
        self.buckets.retain(|_, (_, at)| now.saturating_sub(*at) < refill);
    }
}

/// The rates of one kind of grant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rates {
    /// Per target, in all.
    pub(crate) target: Rate,
    /// Per target and client network.
    pub(crate) network: Rate,
    /// Per target and client address (for IPv6, where an address is a /64
    /// within a /56 network; an IPv4 address is its own network).
    pub(crate) address: Rate,
}

/// A budget of one kind of grant: per target `T` (a server for
/// introductions), per (target, client network), per (target, client
/// address). A grant takes a token from all three, or from none.
#[derive(Debug)]
pub(crate) struct NetworkBudget<T> {
    target: Buckets<T>,
    network: Buckets<(T, IpAddr)>,
    address: Buckets<(T, IpAddr)>,
}

impl<T: Hash + Eq + Copy> NetworkBudget<T> {
    /// `max_targets` targets, and `max_clients` (target, client) pairs of
    /// each finer kind, at most.
    pub(crate) fn new(rates: Rates, max_targets: usize, max_clients: usize) -> Self {
        Self {
            target: Buckets::new(rates.target, max_targets),
            network: Buckets::new(rates.network, max_clients),
            address: Buckets::new(rates.address, max_clients),
        }
    }

    /// Takes one grant for `client` to `target`; false when any of the
    /// three budgets is spent (then none is charged).
    pub(crate) fn allow(&mut self, target: T, client: IpAddr, now: Duration) -> bool {
        let network = (target, network_key(client));
        let address = (target, address_key(client));
        // An IPv4 address is its own network: counted once.
        let own_address = address.1 != network.1;
        let ok = self.target.can_take(&target, now)
            && self.network.can_take(&network, now)
            && (!own_address || self.address.can_take(&address, now));
        if ok {
            self.target.take(target, now);
            self.network.take(network, now);
            if own_address {
                self.address.take(address, now);
            }
        }
        ok
    }

    pub(crate) fn forget_idle(&mut self, now: Duration) {
        self.target.forget_idle(now);
        self.network.forget_idle(now);
        self.address.forget_idle(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn networks_are_ipv4_addresses_and_ipv6_56s() {
        assert_eq!(network_key(ip("198.51.100.7")), ip("198.51.100.7"));
        assert_eq!(network_key(ip("::ffff:198.51.100.7")), ip("198.51.100.7"));
        assert_eq!(network_key(ip("2001:db8:1:2ff:1:2:3:4")), ip("2001:db8:1:200::"));
        assert_eq!(address_key(ip("2001:db8:1:2ff:1:2:3:4")), ip("2001:db8:1:2ff::"));
    }

    #[test]
    fn a_bucket_refills_and_a_full_table_refuses_new_keys() {
        let rate = Rate { per_s: 2.0, burst: 4.0 };
        let mut b: Buckets<u8> = Buckets::new(rate, 1);
        let now = Duration::from_secs(1);
        let mut granted = 0;
        for _ in 0..10 {
            if b.can_take(&1, now) {
                b.take(1, now);
                granted += 1;
            }
        }
        assert_eq!(granted, 4);
        assert!(!b.can_take(&2, now), "the table is full of a busy key");
        assert!(b.can_take(&1, now + Duration::from_millis(500)));
        assert!(b.can_take(&2, now + Duration::from_secs(3)), "the idle key forgotten");
    }
}
