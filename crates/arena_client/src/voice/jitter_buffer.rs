//! The adaptive jitter buffer, one per talker: frames held by number until
//! their turn, played one every 20 ms. Its delay is the voice's whole
//! delay beyond the network's, so it is as short as the talker's arrivals
//! allow: the 95th percentile of how late the last second's frames came
//! (after the earliest), a frame's worth at least. A talk starts once its
//! first frame has waited that long; a frame missing at its turn is taken
//! from the next one's error correction when that is here, else concealed
//! (a frame that comes after its turn is dropped, but its lateness counts);
//! when the delay wanted grew past the one a talk is played with, the
//! buffer waits a frame in concealment, and when it is two frames under,
//! it drops one (at most one in [`SHRINK_EVERY`] turns). A talk ends after its last frame, or after
//! [`MAX_CONCEALED_RUN`] frames with nothing (the last one lost). No
//! library: the decoding is the caller's.

use std::collections::{BTreeMap, VecDeque};

use arena_protocol::voice::{FRAME_MS, VoiceFrame, seq_after};

/// One frame's time, seconds.
const FRAME_S: f64 = FRAME_MS as f64 / 1000.0;
/// Frames held at most (two and a half seconds); later ones are dropped.
pub const MAX_HELD: usize = 128;
/// How far ahead of the next one to play a frame may be, frames.
const MAX_AHEAD: i32 = MAX_HELD as i32;
/// Frames concealed in a row with nothing held before a talk is over.
pub(crate) const MAX_CONCEALED_RUN: u32 = 10;
/// Arrivals remembered for the delay (a second of frames).
const LATENESS_WINDOW: usize = 50;
/// The delay's bounds, seconds.
pub(crate) const MIN_DELAY_S: f64 = FRAME_S;
pub const MAX_DELAY_S: f64 = 0.3;
/// Added to the lateness the delay covers, seconds: the lab's frames and
/// the mixer's steps are a few milliseconds apart.
const DELAY_MARGIN_S: f64 = 0.005;
/// Later than the delay by more than this, the buffer skips to the frame
/// due now, seconds.
const CATCH_UP_S: f64 = 0.1;
/// How far before the talk's first arrival a frame may still start it, frames.
const EARLIER_FIRST: i32 = 3;
/// Frames after which the talk's clock is moved on (well under 32768).
const REANCHOR_FRAMES: i32 = 8192;
/// Frames dropped to shrink at most one in this many played.
const SHRINK_EVERY: u32 = 10;

/// What to play in a frame's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Nothing: no talk is playing.
    Silent,
    /// This frame (its number, and whether it starts a talk).
    Play { frame: VoiceFrame, first: bool },
    /// The frame numbered `seq` is missing; the next one is here: recover it from its error correction.
    Recover { seq: u16, next: VoiceFrame },
    /// Missing, with nothing to recover it from: conceal (`last`: the talk
    /// ends after it, fade out).
    Conceal { last: bool },
}

/// Counts, for the lab and the netcode panel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JitterCounts {
    /// Frames taken in, played from their own bytes, recovered, concealed.
    pub received: u64,
    pub played: u64,
    pub recovered: u64,
    pub concealed: u64,
    /// Frames that came after their turn, or twice, or too far ahead (dropped).
    pub late: u64,
    pub duplicate: u64,
    pub too_far: u64,
    /// Frames dropped to shrink the delay, and turns waited to grow it.
    pub shrunk: u64,
    pub stretched: u64,
    /// Frames that never came (recovered or concealed in their turn).
    pub lost: u64,
}

/// One talker's buffer.
#[derive(Debug, Clone, Default)]
pub struct JitterBuffer {
    /// Frames held, by their number.
    held: BTreeMap<u16, VoiceFrame>,
    /// The number of the next frame to play; `None`: no talk under way.
    next: Option<u16>,
    /// Playing (else the talk's first frame waits until `start_at_s`).
    playing: bool,
    start_at_s: f64,
    /// The first frame of this talk: its number and arrival, the clock
    /// that lateness is measured on.
    anchor: Option<(u16, f64)>,
    /// The smallest transit seen this talk (arrival less the frame's place).
    min_transit_s: f64,
    /// How late recent frames came after the earliest, seconds.
    lateness: VecDeque<f64>,
    delay_s: f64,
    concealed_run: u32,
    since_shrink: u32,
    /// When the last turn was taken (a stall shows as a gap).
    last_turn_s: Option<f64>,
    pub counts: JitterCounts,
}

impl JitterBuffer {
    /// The delay the buffer aims for now, seconds.
    pub fn delay_s(&self) -> f64 {
        if self.delay_s > 0.0 { self.delay_s } else { MIN_DELAY_S }
    }

    /// Whether a talk is under way (waiting to start or playing).
    pub fn active(&self) -> bool {
        self.next.is_some()
    }

    /// Frames held now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// A frame that arrived at `now_s`.
    pub fn push(&mut self, frame: VoiceFrame, now_s: f64) {
        let Some(next) = self.next else {
            // A new talk.
            self.start_talk(frame, now_s);
            return;
        };
        let ahead = seq_after(frame.seq, next);
        if ahead < 0 && !self.playing && ahead >= -EARLIER_FIRST && !frame.last && self.held.len() < MAX_HELD {
            // Just before the talk's first arrival (overtaken on the way),
            // and nothing played yet: the talk starts from it. Further back,
            // or a last frame, it is the talk before's.
            self.note_arrival(frame.seq, now_s);
            self.counts.received += 1;
            self.next = Some(frame.seq);
            self.held.insert(frame.seq, frame);
            return;
        }
        if ahead < 0 {
            // Too late to play. A frame of this talk: its lateness counts
            // toward the delay (one of the talk before's says nothing of it).
            if self.anchor.is_some_and(|(first, _)| seq_after(frame.seq, first) >= -EARLIER_FIRST) {
                self.note_arrival(frame.seq, now_s);
            }
            self.counts.late += 1;
            return;
        }
        if ahead >= MAX_AHEAD || self.held.len() >= MAX_HELD {
            self.counts.too_far += 1;
            return;
        }
        if self.held.contains_key(&frame.seq) {
            self.counts.duplicate += 1;
            return;
        }
        self.note_arrival(frame.seq, now_s);
        self.counts.received += 1;
        self.held.insert(frame.seq, frame);
    }

    fn start_talk(&mut self, frame: VoiceFrame, now_s: f64) {
        self.held.clear();
        self.next = Some(frame.seq);
        self.playing = false;
        self.concealed_run = 0;
        self.anchor = Some((frame.seq, now_s));
        self.min_transit_s = now_s;
        self.start_at_s = now_s + self.delay_s();
        self.counts.received += 1;
        self.held.insert(frame.seq, frame);
    }

    /// The frame numbered `seq` came at `now_s`: how late, against the
    /// earliest of this talk; the delay follows.
    fn note_arrival(&mut self, seq: u16, now_s: f64) {
        let Some((first, _)) = self.anchor else { return };
        let transit = now_s - f64::from(seq_after(seq, first)) * FRAME_S;
        if transit < self.min_transit_s {
            // Earlier than any so far: the others were that much later.
            let shift = self.min_transit_s - transit;
            for l in &mut self.lateness {
                *l += shift;
            }
            self.min_transit_s = transit;
        }
        if self.lateness.len() >= LATENESS_WINDOW {
            self.lateness.pop_front();
        }
        self.lateness.push_back(transit - self.min_transit_s);
        let mut sorted: Vec<f64> = self.lateness.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let p95 = sorted[((sorted.len() - 1) as f64 * 0.95).round() as usize];
        self.delay_s = (p95 + DELAY_MARGIN_S).clamp(MIN_DELAY_S, MAX_DELAY_S);
    }

    /// What to play in the turn at `now_s` (one a frame's time).
    pub fn turn(&mut self, now_s: f64) -> Turn {
        let Some(next) = self.next else { return Turn::Silent };
        if !self.playing {
            if now_s < self.start_at_s {
                return Turn::Silent;
            }
            self.playing = true;
            // A talk starts at its first frame held (the first may be lost).
            let first = self.held.keys().copied().min_by_key(|s| seq_after(*s, next));
            if let Some(first) = first {
                self.next = Some(first);
                if let Some(frame) = self.held.remove(&first) {
                    self.advance(first);
                    self.counts.played += 1;
                    return Turn::Play { frame, first: true };
                }
            }
        }
        // After a stall (no turn for a while: the game's frame, or the
        // machine, stopped), far behind the delay: skip to the frame due
        // now rather than stay late for the rest of the talk. Only after a
        // stall: a delay that merely fell is followed a frame at a time.
        let stalled = self.last_turn_s.is_some_and(|t| now_s - t > CATCH_UP_S);
        self.last_turn_s = Some(now_s);
        if stalled
            && let Some(lag) = self.lag_s(next, now_s)
            && lag > self.delay_s() + CATCH_UP_S
        {
            let skip = ((lag - self.delay_s()) / FRAME_S).floor();
            if skip >= f64::from(MAX_AHEAD) {
                // Longer than the buffer holds: this talk is over.
                self.counts.lost += 1;
                self.finish();
                return Turn::Conceal { last: true };
            }
            let skip = skip as i32;
            let skipped = |seq: u16| (0..skip).contains(&seq_after(seq, next));
            let last = self.held.iter().any(|(seq, f)| skipped(*seq) && f.last);
            let arrived = self.held.keys().filter(|seq| skipped(**seq)).count() as u64;
            self.held.retain(|seq, _| !skipped(*seq));
            self.counts.shrunk += arrived;
            self.counts.lost += skip as u64 - arrived;
            if last {
                self.finish();
                return Turn::Conceal { last: true };
            }
            // Moved on as if the skipped frames had played (the talk's
            // clock kept within reach).
            self.advance(next.wrapping_add(skip as u16).wrapping_sub(1));
            return self.turn_after_shrink();
        }
        // Behind the delay wanted (it grew): wait a frame in concealment.
        // Well ahead of it: drop a frame, now and then.
        if let Some(lag) = self.lag_s(next, now_s) {
            if lag < self.delay_s() - FRAME_S * 0.5 {
                self.counts.stretched += 1;
                self.counts.concealed += 1;
                return Turn::Conceal { last: false };
            }
            self.since_shrink = self.since_shrink.saturating_add(1);
            if lag > self.delay_s() + 2.0 * FRAME_S
                && self.since_shrink >= SHRINK_EVERY
                && self.held.get(&next).is_some_and(|f| !f.last)
            {
                self.held.remove(&next);
                self.counts.shrunk += 1;
                self.since_shrink = 0;
                self.advance(next);
                return self.turn_after_shrink();
            }
        }
        if let Some(frame) = self.held.remove(&next) {
            self.concealed_run = 0;
            self.advance(next);
            self.counts.played += 1;
            return Turn::Play { frame, first: false };
        }
        let following = next.wrapping_add(1);
        if let Some(frame) = self.held.get(&following).cloned() {
            // Lost (the one after it is here): its error correction.
            self.counts.lost += 1;
            self.counts.recovered += 1;
            self.concealed_run = 0;
            self.advance(next);
            return Turn::Recover { seq: next, next: frame };
        }
        self.conceal_missing(next)
    }

    /// Frame `next` is lost, or later than the delay allows (its lateness
    /// raised the delay when it came): conceal it and go on; a talk whose
    /// last frame never comes ends after a run of these.
    fn conceal_missing(&mut self, next: u16) -> Turn {
        self.counts.concealed += 1;
        self.counts.lost += 1;
        self.concealed_run += 1;
        self.advance(next);
        if self.concealed_run >= MAX_CONCEALED_RUN {
            self.finish();
            return Turn::Conceal { last: true };
        }
        Turn::Conceal { last: false }
    }

    fn advance(&mut self, played: u16) {
        self.next = Some(played.wrapping_add(1));
        // Keep the talk's clock within reach of the 16-bit numbers: a talk
        // longer than 32768 frames (11 minutes) would read as in the past.
        if let Some((first, at)) = self.anchor
            && seq_after(played, first) > REANCHOR_FRAMES
        {
            let step = REANCHOR_FRAMES as u16;
            self.anchor = Some((first.wrapping_add(step), at));
            self.min_transit_s += f64::from(step) * FRAME_S;
        }
    }

    /// How long after its place on the talk's earliest clock the frame
    /// numbered `seq` plays at `now_s`: the delay it actually has.
    fn lag_s(&self, seq: u16, now_s: f64) -> Option<f64> {
        let (first, _) = self.anchor?;
        Some(now_s - (self.min_transit_s + f64::from(seq_after(seq, first)) * FRAME_S))
    }

    /// The turn once frames were dropped: the next one, as any turn plays
    /// it, or its concealment (counted toward the talk's end).
    fn turn_after_shrink(&mut self) -> Turn {
        let Some(next) = self.next else { return Turn::Silent };
        match self.held.remove(&next) {
            Some(frame) => {
                self.concealed_run = 0;
                self.advance(next);
                self.counts.played += 1;
                Turn::Play { frame, first: false }
            }
            None => self.conceal_missing(next),
        }
    }

    /// Marks the talk over once `frame` (just taken to play) was its last.
    pub fn played_last(&mut self, frame: &VoiceFrame) {
        if frame.last {
            self.finish();
        }
    }

    fn finish(&mut self) {
        self.next = None;
        self.last_turn_s = None;
        self.playing = false;
        self.concealed_run = 0;
        self.anchor = None;
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u16, last: bool) -> VoiceFrame {
        VoiceFrame { seq, last, opus: vec![seq as u8; 3] }
    }

    /// Plays a talk of `n` frames sent every 20 ms from `t0`, each arriving
    /// after `transit(i)` (None: lost); returns the turns and the buffer.
    fn play(n: u16, first_seq: u16, transit: impl Fn(u16) -> Option<f64>) -> (Vec<Turn>, JitterBuffer) {
        let mut buffer = JitterBuffer::default();
        let mut arrivals: Vec<(f64, VoiceFrame)> = (0..n)
            .filter_map(|i| {
                transit(i).map(|t| (f64::from(i) * FRAME_S + t, frame(first_seq.wrapping_add(i), i + 1 == n)))
            })
            .collect();
        arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut turns = Vec::new();
        let mut arrivals = arrivals.into_iter().peekable();
        let mut now = 0.0;
        while now < f64::from(n) * FRAME_S + 1.0 {
            while let Some((at, _)) = arrivals.peek() {
                if *at > now {
                    break;
                }
                let (at, f) = arrivals.next().unwrap();
                buffer.push(f, at);
            }
            let turn = buffer.turn(now);
            if let Turn::Play { frame, .. } = &turn {
                buffer.played_last(frame);
            }
            turns.push(turn);
            now += FRAME_S;
        }
        (turns, buffer)
    }

    fn played(turns: &[Turn]) -> Vec<u16> {
        turns
            .iter()
            .filter_map(|t| match t {
                Turn::Play { frame, .. } => Some(frame.seq),
                Turn::Recover { seq, .. } => Some(*seq),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_steady_talk_plays_every_frame_in_order_once_and_ends() {
        let (turns, buffer) = play(100, 65500, |_| Some(0.05));
        let seqs = played(&turns);
        assert_eq!(seqs.len(), 100);
        assert!(seqs.windows(2).all(|w| w[1] == w[0].wrapping_add(1)), "in order across the wrap");
        assert!(!buffer.active(), "over after its last frame");
        assert_eq!(buffer.counts.concealed, 0);
        assert!(buffer.delay_s() <= 2.0 * FRAME_S, "no jitter, a short delay: {}", buffer.delay_s());
    }

    #[test]
    fn a_lost_frame_is_recovered_from_the_next_and_the_tail_loss_ends_the_talk() {
        let (turns, buffer) = play(50, 0, |i| (i != 20 && i != 49).then_some(0.03));
        assert!(turns.contains(&Turn::Recover { seq: 20, next: frame(21, false) }), "{turns:?}");
        assert_eq!(buffer.counts.recovered, 1);
        assert!(!buffer.active(), "the lost last frame: over after the concealment's limit");
        assert!(turns.contains(&Turn::Conceal { last: true }));
    }

    #[test]
    fn jitter_grows_the_delay_so_late_frames_still_play() {
        // Every fifth frame 60 ms late.
        let (turns, buffer) = play(200, 0, |i| Some(if i % 5 == 0 { 0.09 } else { 0.03 }));
        assert!(buffer.delay_s() >= 0.06, "{}", buffer.delay_s());
        let late_early = turns.iter().take(60).filter(|t| matches!(t, Turn::Conceal { .. })).count();
        let seqs = played(&turns);
        assert!(buffer.counts.late <= 3, "only while it grew: {:?}", buffer.counts);
        assert!(seqs.len() >= 197, "{} of 200 played ({late_early} concealed early)", seqs.len());
    }

    #[test]
    fn after_a_stall_it_catches_up_and_a_long_talk_keeps_its_clock() {
        // A second without turns and without arrivals (a stalled game: what
        // came in the meantime is read in one burst after it), then 40000
        // frames on time: past the 16-bit numbers' halfway point.
        let mut buffer = JitterBuffer::default();
        let mut played = Vec::new();
        let mut burst = Vec::new();
        for step in 0..40_000u16 {
            let t = f64::from(step) * FRAME_S;
            let stalled = (100..150).contains(&step);
            if stalled {
                burst.push(frame(step, false));
                continue;
            }
            for f in burst.drain(..) {
                buffer.push(f, t);
            }
            buffer.push(frame(step, false), t);
            if let Turn::Play { frame, .. } = buffer.turn(t) {
                played.push((frame.seq, t));
            }
        }
        let lag_after = |after_s: f64| {
            let (seq, at) = *played.iter().find(|(_, at)| *at >= after_s).unwrap();
            at - f64::from(seq) * FRAME_S
        };
        let stalled_lag = lag_after(150.0 * FRAME_S);
        assert!(stalled_lag <= MAX_DELAY_S + FRAME_S, "skipped to its delay at once: {stalled_lag}");
        assert!(lag_after(400.0 * FRAME_S) < 0.1, "back to a short delay within seconds");
        let counts = buffer.counts;
        let end_lag = lag_after(39_000.0 * FRAME_S);
        assert!(end_lag < 0.1, "on time past frame 32768: {end_lag} ({counts:?})");
        let after: Vec<u16> = played.iter().map(|(seq, _)| *seq).filter(|seq| *seq >= 1000).collect();
        assert!(after.windows(2).all(|w| w[1] == w[0] + 1), "every frame after the first thousand played, once");
        assert!(after.last().is_some_and(|last| *last >= 39_997), "to the end: {:?} ({counts:?})", after.last());
    }

    #[test]
    fn a_talks_last_frame_skipped_after_a_stall_ends_it() {
        let mut buffer = JitterBuffer::default();
        for seq in 0..5u16 {
            buffer.push(frame(seq, false), f64::from(seq) * FRAME_S);
            buffer.turn(f64::from(seq) * FRAME_S);
        }
        // Stalled: the rest of the talk, its last frame among it, came meanwhile.
        for seq in 5..20u16 {
            buffer.push(frame(seq, seq == 19), 4.0 * FRAME_S);
        }
        assert_eq!(buffer.turn(60.0 * FRAME_S), Turn::Conceal { last: true });
        assert!(!buffer.active(), "over, not 200 ms of concealment later");
    }

    #[test]
    fn a_first_frame_that_comes_second_still_starts_the_talk() {
        let mut buffer = JitterBuffer::default();
        buffer.push(frame(11, false), 0.0);
        buffer.push(frame(10, false), 0.005);
        // The talk before's: too far back, or its last frame.
        buffer.push(frame(2, false), 0.006);
        buffer.push(frame(9, true), 0.007);
        let mut seqs = Vec::new();
        for i in 0..10 {
            if let Turn::Play { frame, .. } = buffer.turn(f64::from(i) * FRAME_S) {
                seqs.push(frame.seq);
            }
        }
        assert_eq!(&seqs[..2], &[10, 11]);
        assert_eq!(buffer.counts.late, 2, "the talk before's frames are late");
    }

    #[test]
    fn frames_far_ahead_duplicates_and_a_flood_are_bounded() {
        let mut buffer = JitterBuffer::default();
        buffer.push(frame(0, false), 0.0);
        buffer.push(frame(0, false), 0.0);
        buffer.push(frame(5000, false), 0.0);
        for seq in 1..1000u16 {
            buffer.push(frame(seq, false), 0.0);
        }
        assert!(buffer.held() <= MAX_HELD);
        assert_eq!(buffer.counts.duplicate, 1);
        assert!(buffer.counts.too_far >= 1);
    }
}
