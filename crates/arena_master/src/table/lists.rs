//! Lists for clients (`getservers`, `getserversExt`): which listings a
//! request matches, read from the index from where its last part stopped,
//! in parts no larger than the asker's credit, continued under a
//! per-refresh token.

use std::net::SocketAddr;
use std::time::Duration;

use super::{Continuation, Listing, MAX_CONTINUATIONS, Master};
use crate::credit::SWEEP_PERIOD;
use crate::wire::{self, ServerQuery};

impl Master {
    pub(super) fn matches(query: &ServerQuery, addr: &SocketAddr, listing: &Listing) -> bool {
        listing.game == query.game
            && listing.protocol == query.protocol
            && (query.empty || listing.clients > 0)
            && (query.full || listing.clients < listing.max_clients)
            && query.gametype.as_ref().is_none_or(|g| *g == listing.gametype)
            && query.wants(addr)
    }

    pub(super) fn get_servers(
        &mut self,
        from: SocketAddr,
        query: ServerQuery,
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        self.counters.lists_asked += 1;
        if !self.config.games.contains(&query.game) {
            self.counters.drop("list of a game not listed here");
            return;
        }
        // A repeat of a list that did not all go resumes after what went
        // (the same address, query and per-refresh token).
        let place = (from, query.refresh.clone());
        let after = match self.continuations.get(&place) {
            Some(c) if c.query == query && c.expires > now => Some(c.after),
            _ => None,
        };
        // No more than the credit could carry (one past, so that a list
        // that does not end here is not taken for one that does).
        let most = self.credit_of(from.ip()) / wire::MIN_ENTRY_BYTES + 1;
        let listed = &self.listed;
        let (matching, scanned) = self.index.matching(&query, after, most, |addr| {
            listed.get(addr).is_some_and(|l| l.expires > now && Self::matches(&query, addr, l))
        });
        self.counters.scanned += scanned;
        let mut rest: &[SocketAddr] = &matching;
        let mut last_sent = after;
        loop {
            let room = self.credit_of(from.ip()).min(wire::MAX_DATAGRAM_BYTES);
            let part = wire::servers_response(query.extended, rest, true, room);
            if part.taken == 0 && !part.ended {
                // Not even one entry (or the end mark) fits what it sent.
                self.counters.withheld += 1;
                break;
            }
            let (sent, unsent) = rest.split_at_checked(part.taken).unwrap_or((rest, &[]));
            if let Some(last) = sent.last() {
                last_sent = Some(*last);
            }
            rest = unsent;
            self.counters.list_datagrams += 1;
            self.send(from, part.datagram, out);
            if part.ended {
                self.continuations.remove(&place);
                return;
            }
        }
        // Not all of it went: the same request again gets the rest.
        if let Some(after) = last_sent {
            if self.continuations.len() >= MAX_CONTINUATIONS
                && !self.continuations.contains_key(&place)
                && self.continuations_swept.is_none_or(|t| now.saturating_sub(t) >= SWEEP_PERIOD)
            {
                self.continuations_swept = Some(now);
                self.continuations.retain(|_, c| c.expires > now);
            }
            if self.continuations.len() < MAX_CONTINUATIONS || self.continuations.contains_key(&place) {
                let expires = now + self.config.continuation_timeout;
                self.continuations.insert(place, Continuation { query, after, expires });
            }
        }
    }
}
