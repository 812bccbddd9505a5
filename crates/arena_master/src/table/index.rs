//! The master's indexes of its list, so that work per request follows what
//! the request gets, never the size of the list:
//!
//! - the listed servers by what list requests filter on (game, protocol,
//!   family, and whether empty, full or neither; and again with the game
//!   type), each set in address order: a request merges the few sets it
//!   wants from where its list stopped, and looks only at listings it
//!   sends (a request that matches nothing looks at none);
//! - the listed servers per network (IPv6 /56 and /48, IPv4 address), for
//!   the caps per network and for fairness when the list is full: the
//!   network holding the most listings gives one up to a network holding
//!   fewer (its largest address goes).

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6};

use super::Listing;
use crate::wire::ServerQuery;

/// Whether a listing has no players, some, or no room left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Fill {
    Empty,
    Some,
    Full,
}

impl Fill {
    fn of(listing: &Listing) -> Fill {
        if listing.clients == 0 {
            Fill::Empty
        } else if listing.clients >= listing.max_clients {
            Fill::Full
        } else {
            Fill::Some
        }
    }
}

/// game, protocol, IPv6, fill.
type Key = (String, i64, bool, Fill);
/// The same with the game type.
type TypedKey = (String, i64, String, bool, Fill);

/// A network, for caps and fairness: prefix length and the masked address.
pub(super) type Network = (u8, IpAddr);

/// The prefix of `ip` (canonical) `bits` long.
fn masked(ip: IpAddr, bits: u8) -> Network {
    match ip {
        IpAddr::V4(_) => (32, ip),
        IpAddr::V6(v6) => {
            let mask = if bits == 0 { 0 } else { !0u128 << (128 - u32::from(bits.min(128))) };
            (bits, IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask)))
        }
    }
}

/// The networks a listing counts in, for the caps: an IPv6 address's /56
/// and /48 (an IPv4 address is capped as an address, elsewhere).
pub(super) fn capped_networks(ip: IpAddr) -> Vec<Network> {
    match ip {
        IpAddr::V4(_) => Vec::new(),
        IpAddr::V6(_) => vec![masked(ip, 56), masked(ip, 48)],
    }
}

/// The network a listing counts in for fairness: an IPv4 address, or an
/// IPv6 /48 (a site: the most a home or a business is given).
pub(super) fn fairness_group(ip: IpAddr) -> Network {
    match ip {
        IpAddr::V4(_) => (32, ip),
        IpAddr::V6(_) => masked(ip, 48),
    }
}

/// The first and last socket address of a fairness group.
fn group_bounds((bits, ip): Network) -> (SocketAddr, SocketAddr) {
    match ip {
        IpAddr::V4(_) => (SocketAddr::new(ip, 0), SocketAddr::new(ip, u16::MAX)),
        IpAddr::V6(v6) => {
            let host = if bits >= 128 { 0 } else { !0u128 >> u32::from(bits) };
            let last = Ipv6Addr::from(u128::from(v6) | host);
            (
                SocketAddr::V6(SocketAddrV6::new(v6, 0, 0, 0)),
                SocketAddr::V6(SocketAddrV6::new(last, u16::MAX, u32::MAX, u32::MAX)),
            )
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct ListIndex {
    by_filter: HashMap<Key, BTreeSet<SocketAddr>>,
    by_type: HashMap<TypedKey, BTreeSet<SocketAddr>>,
    /// Listings per capped network and per fairness group.
    per_network: HashMap<Network, usize>,
    /// The fairness groups by their count (the largest last).
    by_count: BTreeSet<(usize, Network)>,
}

impl ListIndex {
    pub(super) fn insert(&mut self, addr: SocketAddr, listing: &Listing) {
        let fill = Fill::of(listing);
        let v6 = addr.is_ipv6();
        self.by_filter.entry((listing.game.clone(), listing.protocol, v6, fill)).or_default().insert(addr);
        let typed = (listing.game.clone(), listing.protocol, listing.gametype.clone(), v6, fill);
        self.by_type.entry(typed).or_default().insert(addr);
    }

    pub(super) fn remove(&mut self, addr: SocketAddr, listing: &Listing) {
        let fill = Fill::of(listing);
        let v6 = addr.is_ipv6();
        let key = (listing.game.clone(), listing.protocol, v6, fill);
        if let Some(set) = self.by_filter.get_mut(&key) {
            set.remove(&addr);
            if set.is_empty() {
                self.by_filter.remove(&key);
            }
        }
        let typed = (listing.game.clone(), listing.protocol, listing.gametype.clone(), v6, fill);
        if let Some(set) = self.by_type.get_mut(&typed) {
            set.remove(&addr);
            if set.is_empty() {
                self.by_type.remove(&typed);
            }
        }
    }

    /// A new listing of `ip` counted (`up`) or gone.
    pub(super) fn count(&mut self, ip: IpAddr, up: bool) {
        for network in capped_networks(ip) {
            self.add(network, up);
        }
        let group = fairness_group(ip);
        let before = self.listed_in(group);
        self.add(group, up);
        self.by_count.remove(&(before, group));
        let after = self.listed_in(group);
        if after > 0 {
            self.by_count.insert((after, group));
        }
    }

    fn add(&mut self, network: Network, up: bool) {
        let n = self.per_network.entry(network).or_default();
        *n = if up { n.saturating_add(1) } else { n.saturating_sub(1) };
        if *n == 0 {
            self.per_network.remove(&network);
        }
    }

    /// Listings in `network`.
    pub(super) fn listed_in(&self, network: Network) -> usize {
        self.per_network.get(&network).copied().unwrap_or(0)
    }

    /// The fairness group holding the most listings, and how many.
    pub(super) fn largest_group(&self) -> Option<(usize, Network)> {
        self.by_count.last().copied()
    }

    /// The socket addresses a fairness group spans.
    pub(super) fn bounds(group: Network) -> (SocketAddr, SocketAddr) {
        group_bounds(group)
    }

    /// Up to `most` listed addresses `query` asks for, after `after`, in
    /// address order, with `live` (not expired) true; and how many
    /// listings were looked at.
    pub(super) fn matching(
        &self,
        query: &ServerQuery,
        after: Option<SocketAddr>,
        most: usize,
        live: impl Fn(&SocketAddr) -> bool,
    ) -> (Vec<SocketAddr>, u64) {
        use std::ops::Bound;
        let fills: Vec<Fill> = [(Fill::Empty, query.empty), (Fill::Some, true), (Fill::Full, query.full)]
            .into_iter()
            .filter_map(|(fill, wanted)| wanted.then_some(fill))
            .collect();
        let v4 = SocketAddr::from(([0, 0, 0, 0], 0));
        let v6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0));
        let families: Vec<bool> =
            [false, true].into_iter().filter(|&is_v6| query.wants(if is_v6 { &v6 } else { &v4 })).collect();
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut ranges: Vec<std::collections::btree_set::Range<'_, SocketAddr>> = Vec::new();
        for &is_v6 in &families {
            for &fill in &fills {
                let set = match &query.gametype {
                    None => self.by_filter.get(&(query.game.clone(), query.protocol, is_v6, fill)),
                    Some(t) => self.by_type.get(&(query.game.clone(), query.protocol, t.clone(), is_v6, fill)),
                };
                if let Some(set) = set {
                    ranges.push(set.range((start, Bound::Unbounded)));
                }
            }
        }
        // Each set's next address, merged (at most six sets).
        let mut heads: Vec<Option<SocketAddr>> = ranges.iter_mut().map(|r| r.next().copied()).collect();
        let mut found = Vec::new();
        let mut scanned = 0u64;
        while found.len() < most {
            let Some((i, addr)) =
                heads.iter().enumerate().filter_map(|(i, h)| h.map(|a| (i, a))).min_by_key(|(_, a)| *a)
            else {
                break;
            };
            heads[i] = ranges[i].next().copied();
            scanned += 1;
            if live(&addr) {
                found.push(addr);
            }
        }
        (found, scanned)
    }
}
