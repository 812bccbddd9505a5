//! The second gate: a renet packet, decrypted and authenticated by netcode,
//! is checked here before renet parses it. It comes from a peer that holds a
//! session key, which does not make it honest.
//!
//! renet 2.0.1 trusts what its peer says in ways that cost memory or panic:
//! its ordered reliable channel keeps every message whose id lies ahead of
//! the next one it expects, counting only payload bytes, so zero-length
//! messages after a gap in ids pile up without limit; and a slice whose
//! message has another slice count than the first slice said, or whose index
//! is past the count, indexes past the end of its buffers. So every packet
//! must parse completely, on the right channel, with no empty message,
//! reliable ids within a window of the next expected one, and slices
//! (which only the server sends) consistent with the first slice of their
//! message. The guard mirrors renet's receive state just far enough to know.
//!
//! Slices of unreliable messages are refused, whoever sends them. Since
//! protocol 18 unreliable messages travel outside renet (see
//! [`crate::bundle`]) and one too long for a datagram goes on the reliable
//! channel, so nothing unreliable is sliced; and renet forgets incomplete
//! unreliable messages by a rule (in order of id, stopping at the first one
//! still fresh, on its own clock, skipping the ones it had no memory to
//! start) that no mirror can follow exactly: the fuzz target
//! `client_payloads` found a slice count the guard had forgotten and renet
//! had not, which indexed past renet's buffer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::channel;
use crate::codec::MAX_MESSAGE_BYTES;

/// How far ahead of the next expected reliable message an id may be.
pub const RELIABLE_WINDOW: u64 = 256;
/// renet's slice size, bytes.
pub const SLICE_BYTES: usize = 1200;
/// Most slices a message may have: the largest message we accept.
pub const MAX_SLICES: usize = MAX_MESSAGE_BYTES.div_ceil(SLICE_BYTES);
/// Incomplete sliced messages tracked; slices of more are dropped.
const MAX_INCOMPLETE: usize = 32;

/// Why a payload was dropped before renet saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PayloadReject {
    /// Does not parse as a renet packet, or has bytes after it.
    Malformed,
    /// A channel the packet's kind does not travel on.
    WrongChannel,
    /// No messages, or a message with no bytes.
    EmptyMessage,
    /// A reliable message id too far ahead of the next expected one.
    OutOfWindow,
    /// A sliced message from a peer that never needs to slice (a client).
    SliceNotAllowed,
    /// A slice inconsistent with its message, or of a bad size.
    BadSlice,
    /// Too many sliced messages in assembly at once.
    TooManySlices,
}

impl PayloadReject {
    pub fn label(self) -> &'static str {
        match self {
            PayloadReject::Malformed => "malformed",
            PayloadReject::WrongChannel => "wrong channel",
            PayloadReject::EmptyMessage => "empty message",
            PayloadReject::OutOfWindow => "reliable id out of window",
            PayloadReject::SliceNotAllowed => "slice not allowed",
            PayloadReject::BadSlice => "bad slice",
            PayloadReject::TooManySlices => "too many sliced messages",
        }
    }
}

impl From<octets::BufferTooShortError> for PayloadReject {
    fn from(_: octets::BufferTooShortError) -> Self {
        PayloadReject::Malformed
    }
}

/// Mirrors renet's ordered reliable receive channel: which ids have come.
#[derive(Debug, Default, Clone)]
struct ReliableWindow {
    /// Every id below this has come (renet's `oldest_pending_message_id`,
    /// given that the game reads every message each frame).
    next_expected: u64,
    /// Ids at or above `next_expected` that have come.
    received: BTreeSet<u64>,
}

impl ReliableWindow {
    fn allows(&self, id: u64) -> bool {
        id < self.next_expected.saturating_add(RELIABLE_WINDOW)
    }

    fn has(&self, id: u64) -> bool {
        id < self.next_expected || self.received.contains(&id)
    }

    fn receive(&mut self, id: u64) {
        if id >= self.next_expected {
            self.received.insert(id);
        }
        while self.received.remove(&self.next_expected) {
            self.next_expected += 1;
        }
    }
}

/// A sliced message in assembly: its slice count and the slices that came.
#[derive(Debug, Clone)]
struct Assembly {
    num_slices: usize,
    received: Vec<bool>,
}

#[derive(Debug, Default, Clone)]
struct SliceLedger {
    incomplete: BTreeMap<u64, Assembly>,
}

/// One slice as parsed.
struct SliceHeader {
    message_id: u64,
    index: usize,
    num_slices: usize,
    len: usize,
}

impl SliceHeader {
    /// A sane slice whatever its message: one of at most [`MAX_SLICES`], a
    /// whole [`SLICE_BYTES`] unless it is the last.
    fn shape_ok(&self) -> bool {
        if self.num_slices == 0 || self.num_slices > MAX_SLICES || self.index >= self.num_slices {
            return false;
        }
        let last = self.index == self.num_slices - 1;
        if last { (1..=SLICE_BYTES).contains(&self.len) } else { self.len == SLICE_BYTES }
    }
}

impl SliceLedger {
    /// Checks a slice against its message; does not record it.
    fn judge(&self, slice: &SliceHeader) -> Result<(), PayloadReject> {
        if !slice.shape_ok() {
            return Err(PayloadReject::BadSlice);
        }
        match self.incomplete.get(&slice.message_id) {
            Some(a) if a.num_slices != slice.num_slices => Err(PayloadReject::BadSlice),
            Some(_) => Ok(()),
            None if self.incomplete.len() >= MAX_INCOMPLETE => Err(PayloadReject::TooManySlices),
            None => Ok(()),
        }
    }

    /// Records a judged slice; returns true when its message is complete.
    fn record(&mut self, slice: &SliceHeader) -> bool {
        let a = self
            .incomplete
            .entry(slice.message_id)
            .or_insert_with(|| Assembly { num_slices: slice.num_slices, received: vec![false; slice.num_slices] });
        if let Some(seen) = a.received.get_mut(slice.index) {
            *seen = true;
        }
        let complete = a.received.iter().all(|s| *s);
        if complete {
            self.incomplete.remove(&slice.message_id);
        }
        complete
    }
}

/// Checks the renet packets one peer sends to us.
#[derive(Debug, Clone)]
pub struct PayloadGuard {
    /// Whether this peer may send sliced messages (only a server does).
    allow_slices: bool,
    reliable: ReliableWindow,
    reliable_slices: SliceLedger,
}

impl PayloadGuard {
    /// The guard for what a client sends a server: small messages only.
    pub fn from_client() -> Self {
        Self::new(false)
    }

    /// The guard for what a server sends a client.
    pub fn from_server() -> Self {
        Self::new(true)
    }

    fn new(allow_slices: bool) -> Self {
        Self { allow_slices, reliable: ReliableWindow::default(), reliable_slices: SliceLedger::default() }
    }

    /// Checks one renet packet received at `_now` (any monotonic clock;
    /// nothing the guard remembers expires since unreliable slices are
    /// refused: renet never gives up on a reliable message, so neither does
    /// the guard). On success the guard has recorded it, and renet may have it.
    pub fn check(&mut self, packet: &[u8], _now: Duration) -> Result<(), PayloadReject> {
        let mut b = octets::Octets::with_slice(packet);
        let kind = b.get_u8()?;
        let _sequence = b.get_varint()?;
        match kind {
            // Small reliable messages: (id, length, bytes) each.
            0 => {
                if b.get_u8()? != channel::RELIABLE {
                    return Err(PayloadReject::WrongChannel);
                }
                let count = b.get_u16()?;
                if count == 0 {
                    return Err(PayloadReject::EmptyMessage);
                }
                let mut ids = Vec::with_capacity(usize::from(count).min(64));
                for _ in 0..count {
                    let id = b.get_varint()?;
                    let message = b.get_bytes_with_varint_length()?;
                    if message.is_empty() {
                        return Err(PayloadReject::EmptyMessage);
                    }
                    if message.len() > MAX_MESSAGE_BYTES {
                        return Err(PayloadReject::Malformed);
                    }
                    if !self.reliable.allows(id) {
                        return Err(PayloadReject::OutOfWindow);
                    }
                    // A message assembled from slices cannot also come whole.
                    if self.reliable_slices.incomplete.contains_key(&id) {
                        return Err(PayloadReject::BadSlice);
                    }
                    ids.push(id);
                }
                finished(&b)?;
                for id in ids {
                    self.reliable.receive(id);
                }
                Ok(())
            }
            // Small unreliable messages: (length, bytes) each.
            1 => {
                if b.get_u8()? != channel::UNRELIABLE {
                    return Err(PayloadReject::WrongChannel);
                }
                let count = b.get_u16()?;
                if count == 0 {
                    return Err(PayloadReject::EmptyMessage);
                }
                for _ in 0..count {
                    let message = b.get_bytes_with_varint_length()?;
                    if message.is_empty() {
                        return Err(PayloadReject::EmptyMessage);
                    }
                }
                finished(&b)
            }
            // A slice of an unreliable message: never sent (see above).
            3 => Err(PayloadReject::SliceNotAllowed),
            // A slice of a reliable message.
            2 => {
                if b.get_u8()? != channel::RELIABLE {
                    return Err(PayloadReject::WrongChannel);
                }
                if !self.allow_slices {
                    return Err(PayloadReject::SliceNotAllowed);
                }
                let message_id = b.get_varint()?;
                let index = usize::try_from(b.get_varint()?).map_err(|_| PayloadReject::BadSlice)?;
                let num_slices = usize::try_from(b.get_varint()?).map_err(|_| PayloadReject::BadSlice)?;
                let len = b.get_bytes_with_varint_length()?.len();
                finished(&b)?;
                let slice = SliceHeader { message_id, index, num_slices, len };
                if !self.reliable.allows(message_id) {
                    return Err(PayloadReject::OutOfWindow);
                }
                if self.reliable.has(message_id) {
                    // Already whole: renet ignores it, and so may we
                    // (the shape must still be sane).
                    return if slice.shape_ok() { Ok(()) } else { Err(PayloadReject::BadSlice) };
                }
                self.reliable_slices.judge(&slice)?;
                if self.reliable_slices.record(&slice) {
                    self.reliable.receive(message_id);
                }
                Ok(())
            }
            // Acks: ranges of packet sequences, each below the one before
            // with a gap between. renet refuses (and disconnects on) a range
            // that runs below zero, so the guard does too.
            4 => {
                let end = b.get_varint()?;
                let size = b.get_varint()?;
                let mut start = end.checked_sub(size).ok_or(PayloadReject::Malformed)?;
                let ranges = b.get_varint()?;
                for _ in 0..ranges {
                    let gap = b.get_varint()?;
                    let end = start.checked_sub(gap).and_then(|s| s.checked_sub(2)).ok_or(PayloadReject::Malformed)?;
                    start = end.checked_sub(b.get_varint()?).ok_or(PayloadReject::Malformed)?;
                }
                finished(&b)
            }
            _ => Err(PayloadReject::Malformed),
        }
    }
}

fn finished(b: &octets::Octets) -> Result<(), PayloadReject> {
    if b.cap() == 0 { Ok(()) } else { Err(PayloadReject::Malformed) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64, out: &mut Vec<u8>) {
        let mut buf = [0u8; 8];
        let mut o = octets::OctetsMut::with_slice(&mut buf);
        let written = o.put_varint(v).map(|s| s.len()).unwrap_or(0);
        out.extend_from_slice(&buf[..written]);
    }

    fn small_reliable(messages: &[(u64, &[u8])]) -> Vec<u8> {
        let mut p = vec![0u8];
        varint(1, &mut p);
        p.push(channel::RELIABLE);
        p.extend_from_slice(&(messages.len() as u16).to_be_bytes());
        for (id, m) in messages {
            varint(*id, &mut p);
            varint(m.len() as u64, &mut p);
            p.extend_from_slice(m);
        }
        p
    }

    fn slice(reliable: bool, id: u64, index: u64, num: u64, len: usize) -> Vec<u8> {
        let mut p = vec![if reliable { 2 } else { 3 }];
        varint(9, &mut p);
        p.push(if reliable { channel::RELIABLE } else { channel::UNRELIABLE });
        varint(id, &mut p);
        varint(index, &mut p);
        varint(num, &mut p);
        varint(len as u64, &mut p);
        p.extend(std::iter::repeat_n(7u8, len));
        p
    }

    #[test]
    fn reliable_ids_stay_within_a_window_and_empty_messages_are_refused() {
        let mut g = PayloadGuard::from_client();
        let now = Duration::ZERO;
        assert_eq!(g.check(&small_reliable(&[(0, b"a")]), now), Ok(()));
        assert_eq!(g.check(&small_reliable(&[(5, b"")]), now), Err(PayloadReject::EmptyMessage));
        assert_eq!(g.check(&small_reliable(&[(RELIABLE_WINDOW + 1, b"x")]), now), Err(PayloadReject::OutOfWindow));
        assert_eq!(g.check(&small_reliable(&[(RELIABLE_WINDOW, b"x")]), now), Ok(()), "just inside: 1 + 255");
        // A gap followed by many ids: at most a window's worth is ever held.
        for id in 2..10_000u64 {
            let _ = g.check(&small_reliable(&[(id, b"x")]), now);
        }
        assert!(g.reliable.received.len() as u64 <= RELIABLE_WINDOW);
        // Filling the gap moves the window on.
        assert_eq!(g.check(&small_reliable(&[(1, b"y")]), now), Ok(()));
        assert_eq!(g.reliable.next_expected, RELIABLE_WINDOW + 1);
        assert_eq!(g.check(&[0, 1, 9, 0, 1, 0, 1, b'x'], now), Err(PayloadReject::WrongChannel));
        assert_eq!(g.check(&[0, 1, 0, 0, 1, 0, 1, b'x', 0], now), Err(PayloadReject::Malformed), "trailing byte");
    }

    #[test]
    fn slices_must_agree_with_their_message() {
        let now = Duration::ZERO;
        assert_eq!(
            PayloadGuard::from_client().check(&slice(true, 0, 0, 2, 1200), now),
            Err(PayloadReject::SliceNotAllowed)
        );
        let mut g = PayloadGuard::from_server();
        assert_eq!(g.check(&slice(true, 3, 0, 2, SLICE_BYTES), now), Ok(()));
        assert_eq!(g.check(&slice(true, 3, 4, 5, 10), now), Err(PayloadReject::BadSlice), "another count");
        assert_eq!(g.check(&slice(true, 4, 2, 2, 10), now), Err(PayloadReject::BadSlice), "index past the count");
        assert_eq!(g.check(&slice(true, 4, 0, 2, 10), now), Err(PayloadReject::BadSlice), "short middle slice");
        assert_eq!(g.check(&slice(true, 3, 1, 2, 10), now), Ok(()));
        assert!(g.reliable.has(3), "whole");
        // Once whole, stray slices are harmless (renet ignores them).
        assert_eq!(g.check(&slice(true, 3, 0, 9, SLICE_BYTES), now), Ok(()));
        assert_eq!(g.check(&slice(true, 3, 0, 99, SLICE_BYTES), now), Err(PayloadReject::BadSlice));
        // A message whole cannot also come in slices, nor one in slices whole.
        assert_eq!(g.check(&slice(true, 5, 0, 2, SLICE_BYTES), now), Ok(()));
        assert_eq!(g.check(&small_reliable(&[(5, b"x")]), now), Err(PayloadReject::BadSlice));
    }

    #[test]
    fn incomplete_slices_are_bounded() {
        let mut g = PayloadGuard::from_server();
        for id in 0..MAX_INCOMPLETE as u64 {
            assert_eq!(g.check(&slice(true, id, 0, 2, SLICE_BYTES), Duration::ZERO), Ok(()));
        }
        let next = slice(true, 200, 0, 2, SLICE_BYTES);
        assert_eq!(g.check(&next, Duration::ZERO), Err(PayloadReject::TooManySlices));
        assert_eq!(
            g.check(&next, Duration::from_secs(3600)),
            Err(PayloadReject::TooManySlices),
            "renet keeps them too"
        );
        assert_eq!(g.check(&slice(true, 0, 1, 2, 10), Duration::ZERO), Ok(()), "one completes");
        assert_eq!(g.check(&next, Duration::ZERO), Ok(()));
    }

    /// renet drops the first slices of an unreliable message while the
    /// channel's memory is full, then assembles it from a later slice; and
    /// forgets incomplete ones in an order a hostile peer steers. The guard
    /// cannot follow it, so unreliable slices never reach it (the panic the
    /// fuzz target `client_payloads` found: a slice index past renet's
    /// buffer).
    #[test]
    fn unreliable_slices_are_refused_whoever_sends_them() {
        use renet::RenetClient;
        let mut guard = PayloadGuard::from_server();
        let mut client = RenetClient::new(crate::connection_config());
        let mut admit = |packet: &[u8], client: &mut RenetClient| {
            let ok = guard.check(packet, Duration::ZERO).is_ok();
            if ok {
                client.process_packet(packet);
            }
            ok
        };
        // Fill the unreliable channel's memory with whole messages nobody reads.
        let mut filler = vec![1u8];
        varint(1, &mut filler);
        filler.push(channel::UNRELIABLE);
        filler.extend_from_slice(&1u16.to_be_bytes());
        varint(1100, &mut filler);
        filler.extend(std::iter::repeat_n(5u8, 1100));
        for _ in 0..crate::CHANNEL_MEMORY_BYTES / 1100 + 1 {
            assert!(admit(&filler, &mut client));
        }
        assert!(!admit(&slice(false, 5, 0, 2, SLICE_BYTES), &mut client));
        while client.receive_message(channel::UNRELIABLE).is_some() {}
        assert!(!admit(&slice(false, 5, 1, 2, 10), &mut client));
        assert!(!admit(&slice(false, 5, 3, 5, SLICE_BYTES), &mut client), "would index past renet's buffer");
        assert_eq!(
            PayloadGuard::from_client().check(&slice(false, 0, 0, 1, 10), Duration::ZERO),
            Err(PayloadReject::SliceNotAllowed)
        );
    }

    /// Packets of every kind, mostly well formed, some damaged, with ids
    /// and counts near and past the limits.
    fn packets(rng: &mut u64, n: usize) -> Vec<Vec<u8>> {
        let mut next = move || {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            *rng
        };
        (0..n)
            .map(|_| {
                let pick = next() % 100;
                let small = |r: u64| r % 300;
                let mut p = match next() % 6 {
                    0 => {
                        let messages: Vec<(u64, Vec<u8>)> =
                            (0..1 + next() % 3).map(|_| (small(next()), vec![1; (next() % 40) as usize])).collect();
                        let refs: Vec<(u64, &[u8])> = messages.iter().map(|(id, m)| (*id, m.as_slice())).collect();
                        small_reliable(&refs)
                    }
                    1 => {
                        let mut p = vec![1u8];
                        varint(next() % 1000, &mut p);
                        p.push(channel::UNRELIABLE);
                        p.extend_from_slice(&((next() % 3) as u16).to_be_bytes());
                        varint(next() % 5, &mut p);
                        p.extend(std::iter::repeat_n(2u8, 4));
                        p
                    }
                    2 | 3 => {
                        let num = 1 + next() % 4;
                        let len = if next() % 2 == 0 { SLICE_BYTES } else { 1 + (next() % 30) as usize };
                        slice(next() % 2 == 0, small(next()) % 40, next() % (num + 1), num, len)
                    }
                    4 => {
                        let mut p = vec![4u8];
                        varint(next() % 1000, &mut p);
                        varint(next() % 300, &mut p);
                        varint(next() % 300, &mut p);
                        let ranges = next() % 4;
                        varint(ranges, &mut p);
                        for _ in 0..ranges {
                            varint(next() % 100, &mut p);
                            varint(next() % 100, &mut p);
                        }
                        p
                    }
                    _ => (0..next() % 40).map(|_| (next() % 6) as u8).collect(),
                };
                // A fifth damaged: a byte changed, cut short or one added.
                if pick < 20 && !p.is_empty() {
                    let at = (next() % p.len() as u64) as usize;
                    match pick % 3 {
                        0 => p[at] = next() as u8,
                        1 => p.truncate(at),
                        _ => p.push(next() as u8),
                    }
                }
                p
            })
            .collect()
    }

    /// What the guard lets through, renet parses and keeps the connection
    /// over: the guard is never laxer than renet's own parser. And what it
    /// remembers stays bounded whatever comes.
    #[test]
    fn what_the_guard_lets_through_renet_parses() {
        use renet::{DisconnectReason, RenetClient};
        let mut seed = 0x9E37_79B9_7F4A_7C15;
        let mut guard = PayloadGuard::from_server();
        let mut client = RenetClient::new(crate::connection_config());
        let (mut passed, mut refused) = (0, 0);
        let mut last = Duration::ZERO;
        for (i, packet) in packets(&mut seed, 20_000).into_iter().enumerate() {
            let now = Duration::from_millis(i as u64);
            if guard.check(&packet, now).is_err() {
                refused += 1;
                continue;
            }
            passed += 1;
            // renet's clock runs with the guard's, as the transports run it.
            client.update(now.saturating_sub(last));
            last = now;
            client.process_packet(&packet);
            for channel in [channel::RELIABLE, channel::UNRELIABLE] {
                while client.receive_message(channel).is_some() {}
            }
            let parse_error = matches!(
                client.disconnect_reason(),
                Some(DisconnectReason::PacketDeserialization(_) | DisconnectReason::ReceivedInvalidChannelId(_))
            );
            assert!(!parse_error, "renet refused {packet:?}, which the guard let through");
            assert!(guard.reliable.received.len() as u64 <= RELIABLE_WINDOW);
            assert!(guard.reliable_slices.incomplete.len() <= MAX_INCOMPLETE);
        }
        assert!(passed > 2000 && refused > 2000, "{passed} passed, {refused} refused");
    }

    #[test]
    fn ack_ranges_that_run_below_zero_are_refused() {
        let ack = |values: &[u64]| {
            let mut p = vec![4u8];
            for v in values {
                varint(*v, &mut p);
            }
            p
        };
        let mut g = PayloadGuard::from_server();
        let now = Duration::ZERO;
        // Sequence 1; newest range 10 - 3 ..= 10; then one more: gap 2, size 1.
        assert_eq!(g.check(&ack(&[1, 10, 3, 1, 2, 1]), now), Ok(()));
        assert_eq!(g.check(&ack(&[1, 3, 4, 0]), now), Err(PayloadReject::Malformed), "size beyond the end");
        assert_eq!(g.check(&ack(&[1, 10, 3, 1, 6, 0]), now), Err(PayloadReject::Malformed), "gap below zero");
        assert_eq!(g.check(&ack(&[1, 10, 3, 1, 2, 4]), now), Err(PayloadReject::Malformed), "range below zero");
    }
}
