//! Rate limits of the datagram guard: a token bucket, and buckets per
//! address (an IPv4 address or an IPv6 /64), bounded in number.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use arena_udp::limit_key;

/// Per-address rate limiters remembered; beyond, unknown addresses are
/// refused until idle ones are forgotten.
const MAX_TRACKED_IPS: usize = 4096;
/// Least time between two sweeps of a full table.
const SWEEP_PERIOD: Duration = Duration::from_millis(100);

/// A token bucket: `rate` per second, up to `burst` at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bucket {
    tokens: f32,
    last: Duration,
}

impl Bucket {
    pub(crate) fn full(burst: f32, now: Duration) -> Self {
        Self { tokens: burst, last: now }
    }

    pub(crate) fn take(&mut self, now: Duration, rate: f32, burst: f32) -> bool {
        self.take_n(now, rate, burst, 1.0)
    }

    /// Takes `n` tokens at once (a frame's bytes), or none if fewer are there.
    pub(crate) fn take_n(&mut self, now: Duration, rate: f32, burst: f32, n: f32) -> bool {
        let elapsed = now.saturating_sub(self.last).as_secs_f32();
        self.tokens = (self.tokens + elapsed * rate).min(burst);
        self.last = now;
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }

    /// Whether a token would be there at `now` (nothing taken).
    pub(crate) fn has_token_at(&self, now: Duration, rate: f32, burst: f32) -> bool {
        (self.tokens + now.saturating_sub(self.last).as_secs_f32() * rate).min(burst) >= 1.0
    }

    pub(crate) fn is_full_at(&self, now: Duration, rate: f32, burst: f32) -> bool {
        self.tokens + now.saturating_sub(self.last).as_secs_f32() * rate >= burst
    }
}

/// Per-address rate limits, bounded in number. An address is an IPv4
/// address or an IPv6 /64 (see [`arena_udp::limit_key`]): a host
/// rotating addresses inside its block gets no more.
#[derive(Debug, Default)]
pub(crate) struct IpLimits {
    buckets: HashMap<IpAddr, Bucket>,
    swept: Option<Duration>,
}

impl IpLimits {
    pub(crate) fn take(&mut self, ip: IpAddr, now: Duration, rate: f32, burst: f32) -> bool {
        let ip = limit_key(ip);
        if !self.buckets.contains_key(&ip) {
            // A sweep is a pass over the whole table: at most one per
            // SWEEP_PERIOD, or a flood from new addresses pays one each.
            if self.buckets.len() >= MAX_TRACKED_IPS && self.swept.is_none_or(|t| now.saturating_sub(t) >= SWEEP_PERIOD)
            {
                self.swept = Some(now);
                self.buckets.retain(|_, b| !b.is_full_at(now, rate, burst));
            }
            if self.buckets.len() >= MAX_TRACKED_IPS {
                return false;
            }
        }
        self.buckets.entry(ip).or_insert_with(|| Bucket::full(burst, now)).take(now, rate, burst)
    }

    pub(crate) fn forget_idle(&mut self, now: Duration, rate: f32, burst: f32) {
        self.buckets.retain(|_, b| !b.is_full_at(now, rate, burst));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_refill_at_their_rate_up_to_the_burst() {
        let mut b = Bucket::full(2.0, Duration::ZERO);
        assert!(b.take(Duration::ZERO, 1.0, 2.0));
        assert!(b.take(Duration::ZERO, 1.0, 2.0));
        assert!(!b.take(Duration::ZERO, 1.0, 2.0));
        assert!(b.take(Duration::from_secs(1), 1.0, 2.0));
        assert!(!b.take(Duration::from_secs(1), 1.0, 2.0));
        assert!(b.is_full_at(Duration::from_secs(10), 1.0, 2.0));
    }
}
