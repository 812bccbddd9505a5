//! The master's no-reflection rule: a byte credit per address (an IPv4
//! address or an IPv6 /64). Every datagram received adds its length; every
//! byte sent takes from it; credit not topped up for a second is forgotten.
//! So no address is ever sent more bytes in all than it sent, and a forged
//! source address cannot turn the master into an amplifier. The table is
//! bounded: when it is full of busy addresses, a new one's datagram is
//! handled with a credit of its own length that is not kept.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use arena_udp::limit_key;

/// Most bytes of credit an address can hold (what it sent lately).
const MAX_CREDIT_BYTES: u64 = 64 * 1024;
/// Credit not topped up for this long is forgotten.
const CREDIT_LIFETIME: Duration = Duration::from_secs(1);
/// How often a full table may be swept for idle addresses (a sweep is a
/// pass over the whole table: a flood from new addresses must not pay for
/// one per datagram).
pub(crate) const SWEEP_PERIOD: Duration = Duration::from_millis(100);

/// What one address has sent and been sent lately.
#[derive(Clone, Copy, Debug)]
struct Credit {
    bytes: u64,
    last_in: Duration,
}

/// Every address's credit.
#[derive(Debug)]
pub(crate) struct Credits {
    max_addresses: usize,
    credit: HashMap<IpAddr, Credit>,
    swept: Option<Duration>,
    /// The credit of the datagram being handled when its address could not
    /// be kept: what it sent, and no more.
    transient: Option<(IpAddr, u64)>,
}

impl Credits {
    pub(crate) fn new(max_addresses: usize) -> Self {
        Self { max_addresses, credit: HashMap::new(), swept: None, transient: None }
    }

    /// Counts `len` bytes in from `ip` (the datagram about to be handled);
    /// false if its address could not be kept (its credit lasts until
    /// [`Credits::datagram_done`]).
    pub(crate) fn received(&mut self, ip: IpAddr, len: usize, now: Duration) -> bool {
        let key = limit_key(ip);
        self.transient = None;
        if !self.credit.contains_key(&key) && self.credit.len() >= self.max_addresses {
            if self.swept.is_none_or(|t| now.saturating_sub(t) >= SWEEP_PERIOD) {
                self.swept = Some(now);
                self.credit.retain(|_, c| now.saturating_sub(c.last_in) < CREDIT_LIFETIME);
            }
            if self.credit.len() >= self.max_addresses {
                self.transient = Some((key, len as u64));
                return false;
            }
        }
        let credit = self.credit.entry(key).or_insert(Credit { bytes: 0, last_in: now });
        if now.saturating_sub(credit.last_in) >= CREDIT_LIFETIME {
            credit.bytes = 0;
        }
        credit.bytes = (credit.bytes + len as u64).min(MAX_CREDIT_BYTES);
        credit.last_in = now;
        true
    }

    /// The datagram is handled: a credit that was not kept goes.
    pub(crate) fn datagram_done(&mut self) {
        self.transient = None;
    }

    /// Bytes `ip` may still be sent.
    pub(crate) fn available(&self, ip: IpAddr) -> usize {
        let key = limit_key(ip);
        match self.transient {
            Some((k, bytes)) if k == key => bytes as usize,
            _ => self.credit.get(&key).map_or(0, |c| c.bytes as usize),
        }
    }

    /// `len` bytes went to `ip`.
    pub(crate) fn spend(&mut self, ip: IpAddr, len: usize) {
        let key = limit_key(ip);
        let len = len as u64;
        match &mut self.transient {
            Some((k, bytes)) if *k == key => *bytes = bytes.saturating_sub(len),
            _ => {
                if let Some(credit) = self.credit.get_mut(&key) {
                    credit.bytes = credit.bytes.saturating_sub(len);
                }
            }
        }
    }

    /// Forgets the addresses silent for a second.
    pub(crate) fn expire(&mut self, now: Duration) {
        self.credit.retain(|_, c| now.saturating_sub(c.last_in) < CREDIT_LIFETIME);
    }

    /// Addresses kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.credit.len()
    }
}
