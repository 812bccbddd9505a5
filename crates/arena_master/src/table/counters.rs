//! What the master has done since it started: datagrams, bytes, servers
//! proving themselves, lists, and every drop by its reason (the summary a
//! second reports the change of these, written here too).

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Master, SUMMARY_PERIOD};

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

impl Master {
    /// One line about what happened since the last, at most once a second,
    /// and only if anything did.
    pub fn summary(&mut self, now: Duration) -> Option<String> {
        if self.last_summary.is_some_and(|t| now.saturating_sub(t) < SUMMARY_PERIOD) {
            return None;
        }
        let before = std::mem::replace(&mut self.summarised, self.counters.clone());
        self.last_summary = Some(now);
        let c = &self.counters;
        if c.datagrams == before.datagrams && c.expired == before.expired {
            return None;
        }
        let dropped: Vec<String> = c
            .dropped
            .iter()
            .filter_map(|(why, n)| {
                let new = n - before.dropped.get(why).copied().unwrap_or(0);
                (new > 0).then(|| format!("{new} {why}"))
            })
            .collect();
        Some(format!(
            "master: {} datagrams in ({} B), {} B out; {} heartbeats, {} challenges; {} new, {} refreshed, \
             {} said goodbye, {} expired; {} lists asked ({} datagrams, {} withheld); dropped: {}; \
             {} listed, {} pending",
            c.datagrams - before.datagrams,
            c.bytes_in - before.bytes_in,
            c.bytes_out - before.bytes_out,
            c.heartbeats - before.heartbeats,
            c.challenges_sent - before.challenges_sent,
            c.listed_new - before.listed_new,
            c.refreshed - before.refreshed,
            c.farewells - before.farewells,
            c.expired - before.expired,
            c.lists_asked - before.lists_asked,
            c.list_datagrams - before.list_datagrams,
            c.withheld - before.withheld,
            if dropped.is_empty() { "none".to_string() } else { dropped.join(", ") },
            self.listed.len(),
            self.pending,
        ))
    }
}
