//! The link conditioner: fake latency, jitter and loss on the client's
//! datagrams, in both directions, between netcode and the UDP socket.
//!
//! It is driven by the link's clock (the app's real clock: the sum of frame
//! times in an app stepped by hand, so a test sees exactly the delays it
//! asked for; real time on the I/O thread of a real game).

use std::collections::BinaryHeap;
use std::time::Duration;

pub use arena_sim::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// What the conditioner does to every datagram, each way.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkConditions {
    /// Round trip it adds, milliseconds (half on the way out, half on the way in).
    pub latency_ms: f32,
    /// Each datagram's one-way delay varies by up to ± this, milliseconds.
    pub jitter_ms: f32,
    /// Probability (0..=1) that a datagram is dropped, each way.
    pub loss: f32,
}

impl Default for LinkConditions {
    fn default() -> Self {
        Self::OFF
    }
}

impl LinkConditions {
    pub const OFF: Self = Self { latency_ms: 0.0, jitter_ms: 0.0, loss: 0.0 };
    /// A good broadband connection.
    pub const GOOD: Self = Self { latency_ms: 40.0, jitter_ms: 4.0, loss: 0.002 };
    /// A typical connection to a server in another country.
    pub const AVERAGE: Self = Self { latency_ms: 100.0, jitter_ms: 12.0, loss: 0.01 };
    /// A bad connection: far away, on a busy wireless link.
    pub const POOR: Self = Self { latency_ms: 200.0, jitter_ms: 30.0, loss: 0.05 };

    pub const PRESETS: [(&'static str, Self); 4] =
        [("off", Self::OFF), ("good", Self::GOOD), ("average", Self::AVERAGE), ("poor", Self::POOR)];

    /// Highest latency and jitter the conditioner accepts, milliseconds.
    pub const MAX_MS: f32 = 2000.0;

    /// The same conditions with every field in range.
    pub fn clamped(self) -> Self {
        let ms = |v: f32| if v.is_finite() { v.clamp(0.0, Self::MAX_MS) } else { 0.0 };
        let loss = if self.loss.is_finite() { self.loss.clamp(0.0, 1.0) } else { 0.0 };
        Self { latency_ms: ms(self.latency_ms), jitter_ms: ms(self.jitter_ms), loss }
    }

    pub fn is_off(&self) -> bool {
        self.latency_ms == 0.0 && self.jitter_ms == 0.0 && self.loss == 0.0
    }

    /// The name of the preset these conditions match, if any.
    pub fn preset_name(&self) -> Option<&'static str> {
        Self::PRESETS.iter().find(|(_, p)| p == self).map(|(name, _)| *name)
    }
}

/// A datagram waiting for its time.
#[derive(Debug)]
struct Delayed {
    due: Duration,
    /// Arrival order, so that equal due times keep their order.
    seq: u64,
    bytes: Vec<u8>,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        self.due == other.due && self.seq == other.seq
    }
}
impl Eq for Delayed {}
impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Delayed {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.due.cmp(&self.due).then(other.seq.cmp(&self.seq))
    }
}

/// One direction of the link.
#[derive(Debug, Default)]
pub struct DelayLine {
    queue: BinaryHeap<Delayed>,
    seq: u64,
    pub dropped: u64,
    pub passed: u64,
}

impl DelayLine {
    /// Takes a datagram at time `now`: drops it, or schedules it after this
    /// direction's share of the latency, give or take the jitter.
    pub fn push(&mut self, now: Duration, bytes: Vec<u8>, conditions: &LinkConditions, rng: &mut SplitMix64) {
        if conditions.loss > 0.0 && rng.next_f32() < conditions.loss {
            self.dropped += 1;
            return;
        }
        let jitter = if conditions.jitter_ms > 0.0 { (rng.next_f32() * 2.0 - 1.0) * conditions.jitter_ms } else { 0.0 };
        let delay_ms = (conditions.latency_ms * 0.5 + jitter).max(0.0);
        let due = now + Duration::from_secs_f64(f64::from(delay_ms) / 1000.0);
        self.seq += 1;
        self.queue.push(Delayed { due, seq: self.seq, bytes });
    }

    /// The next datagram whose time has come, if any.
    pub fn pop_due(&mut self, now: Duration) -> Option<Vec<u8>> {
        self.pop_due_at(now).map(|(_, bytes)| bytes)
    }

    /// The next datagram whose time has come, with the time it came due.
    pub fn pop_due_at(&mut self, now: Duration) -> Option<(Duration, Vec<u8>)> {
        if self.queue.peek().is_some_and(|d| d.due <= now) {
            self.passed += 1;
            self.queue.pop().map(|d| (d.due, d.bytes))
        } else {
            None
        }
    }

    /// When the next datagram falls due, if one waits.
    pub fn next_due(&self) -> Option<Duration> {
        self.queue.peek().map(|d| d.due)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Both directions and their shared settings.
#[derive(Debug)]
pub struct LinkConditioner {
    pub conditions: LinkConditions,
    pub outgoing: DelayLine,
    pub incoming: DelayLine,
    rng: SplitMix64,
}

impl LinkConditioner {
    pub fn new(conditions: LinkConditions, seed: u64) -> Self {
        Self {
            conditions: conditions.clamped(),
            outgoing: DelayLine::default(),
            incoming: DelayLine::default(),
            rng: SplitMix64::new(seed),
        }
    }

    pub fn send(&mut self, now: Duration, bytes: Vec<u8>) {
        self.outgoing.push(now, bytes, &self.conditions, &mut self.rng);
    }

    pub fn receive(&mut self, now: Duration, bytes: Vec<u8>) {
        self.incoming.push(now, bytes, &self.conditions, &mut self.rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn delays_by_half_the_round_trip_each_way() {
        let mut c = LinkConditioner::new(LinkConditions { latency_ms: 100.0, ..LinkConditions::OFF }, 1);
        c.send(Duration::ZERO, vec![1]);
        assert_eq!(c.outgoing.pop_due(49 * MS), None);
        assert_eq!(c.outgoing.pop_due(50 * MS), Some(vec![1]));
    }

    #[test]
    fn jitter_stays_within_bounds_and_can_reorder() {
        let conditions = LinkConditions { latency_ms: 100.0, jitter_ms: 20.0, loss: 0.0 };
        let mut line = DelayLine::default();
        let mut rng = SplitMix64::new(7);
        for i in 0..1000u32 {
            line.push(Duration::from_millis(u64::from(i)), i.to_le_bytes().to_vec(), &conditions, &mut rng);
        }
        let mut out = Vec::new();
        for t in 0..2000u64 {
            while let Some(bytes) = line.pop_due(Duration::from_millis(t)) {
                let sent = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                let delay = t as i64 - i64::from(sent);
                assert!((30..=71).contains(&delay), "one-way delay {delay} ms outside 50 ± 20");
                out.push(sent);
            }
        }
        assert_eq!(out.len(), 1000);
        assert!(out.windows(2).any(|w| w[0] > w[1]), "jitter reorders some datagrams");
    }

    #[test]
    fn loss_drops_about_the_asked_share() {
        let conditions = LinkConditions { loss: 0.05, ..LinkConditions::OFF };
        let mut line = DelayLine::default();
        let mut rng = SplitMix64::new(3);
        for _ in 0..20_000 {
            line.push(Duration::ZERO, vec![0], &conditions, &mut rng);
        }
        let share = line.dropped as f32 / 20_000.0;
        assert!((0.04..0.06).contains(&share), "dropped {share}");
    }

    #[test]
    fn bad_settings_are_clamped() {
        let c = LinkConditions { latency_ms: f32::NAN, jitter_ms: -5.0, loss: 3.0 }.clamped();
        assert_eq!(c, LinkConditions { latency_ms: 0.0, jitter_ms: 0.0, loss: 1.0 });
        assert_eq!(LinkConditions::POOR.preset_name(), Some("poor"));
    }
}
