//! What the master has done since it started: datagrams, bytes, servers
//! proving themselves, lists, and every drop by its reason (the summary a
//! second reports the change of these).

use std::collections::BTreeMap;

/// What the master has done, since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MasterCounters {
    pub datagrams: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub heartbeats: u64,
    pub challenges_sent: u64,
    pub listed_new: u64,
    pub refreshed: u64,
    /// Servers that said goodbye (and were dropped at once).
    pub farewells: u64,
    pub expired: u64,
    /// Pending servers pushed out by newer ones.
    pub evicted_pending: u64,
    /// Listings given up, the list full, by the network holding the most
    /// to one holding fewer.
    pub evicted_for_fairness: u64,
    pub lists_asked: u64,
    pub list_datagrams: u64,
    /// Replies not sent (or cut short) because the address had not sent enough.
    pub withheld: u64,
    /// Datagrams handled without keeping their address's credit (the
    /// table of addresses full of busy ones).
    pub untracked: u64,
    /// Reachability checks answered (a probe from the second socket).
    pub reach_checks: u64,
    /// Introductions sent to servers, and cookies handed out.
    pub introductions: u64,
    pub cookies: u64,
    /// Relay credentials handed out.
    pub relay_grants: u64,
    /// Listings looked at to answer list requests (work, not bytes: a
    /// request that matches nothing must not look at the whole list).
    pub scanned: u64,
    /// Datagrams dropped, by reason.
    pub dropped: BTreeMap<&'static str, u64>,
}

impl MasterCounters {
    pub(super) fn drop(&mut self, why: &'static str) {
        *self.dropped.entry(why).or_default() += 1;
    }
}
