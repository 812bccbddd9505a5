//! What a delta is against, and what it expects. The server remembers which
//! snapshots a client acknowledged ([`Acknowledged`]) and codes each new one
//! against the newest of them ([`Baseline`]); both ends then expect every
//! player carried on from the baseline at the rate it moved and turned
//! between an older acknowledged snapshot and the baseline ("predict, then
//! send the difference"). Both snapshots are ones the client said it has,
//! so both sides expect the same, to the bit: the carry rule is integer
//! arithmetic over the field tables, one rule for the owner's state and the
//! others'.

use std::collections::VecDeque;

use arena_sim::{PlayerId, tick_after};

use super::fields::{Fields, Motion, turn, turned};
use super::state::{Frame, Others, OwnState, RemoteState};

/// The oldest baseline players are carried forward from, ticks (half a
/// second at 64 Hz); past it a delta is against where they were.
pub const MAX_CARRY_TICKS: u32 = 32;
/// The longest span over which how a player moves is measured, ticks: the
/// older acknowledged snapshot of a [`Baseline`] is at most this far behind
/// it (a quarter of a second at 64 Hz).
pub const MAX_MOTION_GAP_TICKS: u32 = 16;

/// What a delta is against: the newest snapshot the client acknowledged and,
/// to see how everyone was moving at that moment, an older one it
/// acknowledged too (the newest it did within [`MAX_MOTION_GAP_TICKS`]).
#[derive(Clone, Copy, Debug)]
pub struct Baseline<'a> {
    pub frame: &'a Frame,
    pub before: Option<&'a Frame>,
    /// The simulation's ticks per second, for the fall of players in the
    /// air (0: carried on in a straight line). Both ends must use the same.
    pub tick_hz: u32,
}

impl<'a> Baseline<'a> {
    /// A baseline with no motion known (everyone is expected where they were).
    pub fn still(frame: &'a Frame) -> Self {
        Self { frame, before: None, tick_hz: 0 }
    }

    /// Ticks from the older snapshot to the baseline (0 without one).
    fn gap(&self) -> u32 {
        self.before.map(|b| self.frame.tick.wrapping_sub(b.tick)).unwrap_or(0)
    }

    /// The own player `id` at the baseline and at the snapshot before it
    /// (each `None` where that snapshot had another or none): what both
    /// ends code its state against.
    pub(super) fn own_ends(&self, id: PlayerId) -> (Option<OwnState>, Option<OwnState>) {
        let own = |f: &Frame| f.own.filter(|(own_id, _)| *own_id == id).map(|(_, s)| s);
        (own(self.frame), self.before.and_then(own))
    }

    /// Another player `id` at the baseline and at the snapshot before it.
    pub(super) fn other_ends(&self, id: PlayerId) -> (Option<&'a RemoteState>, Option<&'a RemoteState>) {
        (self.frame.others.get(&id), self.before.and_then(|b| b.others.get(&id)))
    }

    /// Where a delta for `tick` expects the own player `id` (none if the
    /// baseline had another or none).
    pub(super) fn own_at(&self, id: PlayerId, tick: u32) -> Option<OwnState> {
        let (base, before) = self.own_ends(id);
        Some(carried(&base?, before.as_ref(), (self.gap(), tick.wrapping_sub(self.frame.tick)), self.tick_hz))
    }

    /// Where a delta for `tick` expects each of the others.
    pub(super) fn others_at(&self, tick: u32) -> Others {
        self.others_expected(tick).into_iter().map(|e| (e.id, e.expected)).collect()
    }

    /// Each player of the baseline, in id order: where a delta for `tick`
    /// expects it, and its states at the baseline and the snapshot before
    /// (what its fields are coded against). One walk through both
    /// snapshots' players, which are in id order: no search per player.
    pub(super) fn others_expected(&self, tick: u32) -> Vec<Expected<'a>> {
        let (gap, age) = (self.gap(), tick.wrapping_sub(self.frame.tick));
        let mut before = self.before.map(|b| b.others.iter().peekable());
        self.frame
            .others
            .iter()
            .map(|(id, s)| {
                let was = before.as_mut().and_then(|b| {
                    while b.next_if(|(other, _)| *other < id).is_some() {}
                    b.next_if(|(other, _)| *other == id).map(|(_, was)| was)
                });
                Expected { id: *id, expected: carried(s, was, (gap, age), self.tick_hz), ends: (Some(s), was) }
            })
            .collect()
    }
}

/// A player of a baseline as a delta expects it (see
/// [`Baseline::others_expected`]).
pub(super) struct Expected<'a> {
    pub id: PlayerId,
    pub expected: RemoteState,
    /// Its states at the baseline and at the snapshot before it.
    pub ends: (Option<&'a RemoteState>, Option<&'a RemoteState>),
}

/// What the server knows a client has: the snapshots it acknowledged lately
/// (each command packet names the newest it decoded). Deltas go only against
/// these, so none can need a snapshot the client never had.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acknowledged {
    /// Acknowledged ticks, oldest first, at most [`Acknowledged::KEPT`].
    ticks: VecDeque<u32>,
}

impl Acknowledged {
    /// Acknowledgements remembered: more than a motion span's worth of
    /// snapshots at any snapshot rate.
    pub const KEPT: usize = 8;

    /// Notes a command packet's acknowledgement: `Some(tick)`, the client
    /// has that snapshot; `None`, it lost its baselines and asks for a
    /// whole snapshot. Packets may come out of order.
    pub fn note(&mut self, ack: Option<u32>) {
        let Some(tick) = ack else {
            self.ticks.clear();
            return;
        };
        if self.ticks.contains(&tick) {
            return;
        }
        let at = self.ticks.iter().position(|t| tick_after(*t, tick)).unwrap_or(self.ticks.len());
        if at == 0 && self.ticks.len() >= Self::KEPT {
            return;
        }
        self.ticks.insert(at, tick);
        while self.ticks.len() > Self::KEPT {
            self.ticks.pop_front();
        }
    }

    /// The newest snapshot acknowledged.
    pub fn newest(&self) -> Option<u32> {
        self.ticks.back().copied()
    }

    /// What the next snapshot is coded against, among the frames `sent` (and
    /// still kept): the newest acknowledged, and the newest acknowledged
    /// before it within [`MAX_MOTION_GAP_TICKS`], at `tick_hz` ticks a
    /// second. `None`: a whole snapshot.
    pub fn baseline<'a>(&self, sent: &'a VecDeque<Frame>, tick_hz: u32) -> Option<Baseline<'a>> {
        let find = |t: u32| sent.iter().rev().find(|f| f.tick == t);
        let frame = find(self.newest()?)?;
        let before = self
            .ticks
            .iter()
            .rev()
            .skip(1)
            .take_while(|t| frame.tick.wrapping_sub(**t) <= MAX_MOTION_GAP_TICKS)
            .find_map(|t| find(*t));
        Some(Baseline { frame, before, tick_hz })
    }
}

/// The game's gravity, m/s² (a whole number, for integer arithmetic).
const GRAVITY_MPS2: i64 = arena_sim::movement::GRAVITY_MPS2 as i64;

/// `v * num / den`, rounded to the nearest (halves away from zero); `den > 0`.
fn scale_rounded(v: i64, num: i64, den: i64) -> i64 {
    let x = v * num;
    (x + x.signum() * den / 2) / den
}

/// The carry rule: where a delta expects a player `age` ticks after the
/// baseline (`base`), given its state `gap` ticks before that (`before`).
/// Every field the table marks as moving or turning goes on at the rate it
/// changed over the gap; the rest stay as they were. A player in the air at
/// both (`tick_hz` known) also falls: the parabola through the two heights
/// under the game's gravity, so a jump or a rocket's kick costs little. Nothing is carried
/// without an older snapshot, over a gap out of range, from a baseline older
/// than [`MAX_CARRY_TICKS`], or for a player dead at either end or respawned
/// in between. Integer arithmetic only: both ends get the same answer.
pub(super) fn carried<S: Fields>(base: &S, before: Option<&S>, (gap, age): (u32, u32), tick_hz: u32) -> S {
    let Some(before) = before else { return *base };
    let (mut now, then) = (base.values(), before.values());
    let (flags, alive) = S::ALIVE;
    let carries = age <= MAX_CARRY_TICKS
        && (1..=MAX_MOTION_GAP_TICKS).contains(&gap)
        && now[flags] & alive != 0
        && then[flags] & alive != 0
        && now[S::LIFE] == then[S::LIFE];
    if !carries {
        return *base;
    }
    let (age, gap) = (i64::from(age), i64::from(gap));
    let airborne = now[flags] & S::ON_GROUND == 0 && then[flags] & S::ON_GROUND == 0;
    let hz = i64::from(tick_hz.min(*arena_sim::TICK_HZ_RANGE.end()));
    // g·t²/2 in grid steps, t = age ticks on from a parabola through `before` and `base`.
    let fall = if airborne && hz > 0 {
        scale_rounded(GRAVITY_MPS2 * S::STEPS_PER_M * age * (age + gap), 1, 2 * hz * hz)
    } else {
        0
    };
    for (i, field) in S::TABLE.iter().enumerate() {
        let (v, was) = (now[i], then[i]);
        now[i] = match field.motion {
            Motion::Held => v,
            Motion::Moves => {
                let limit = S::move_limit();
                let moved = i64::from(v) - i64::from(was);
                let fell = if i == S::HEIGHT { fall } else { 0 };
                (i64::from(v) + scale_rounded(moved, age, gap) - fell).clamp(-limit, limit) as i32
            }
            Motion::Turns => turned(v, scale_rounded(i64::from(turn(v, was, field.bits)), age, gap), field.bits),
        };
    }
    // Carried positions stay within the world and angles on their circle, so
    // this always holds; a state that did not would be expected as it was.
    S::from_values(&now).unwrap_or(*base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::state::REMOTE_YAW_BITS;

    fn runner(tick: i32, alive: bool, life: u8) -> (RemoteState, OwnState) {
        let (vx, vz, turn_rate) = (7, -3, 5);
        let remote = RemoteState {
            pos: [vx * tick, 10, vz * tick],
            yaw: (turn_rate * tick).rem_euclid(1 << REMOTE_YAW_BITS) as u16,
            pitch: (tick / 2) as i16,
            flags: if alive { RemoteState::ALIVE } else { 0 },
            spawn_count: life,
            vel: [3, -1],
            gait: (tick * 3).rem_euclid(64) as u8,
            twist: (tick % 40) as i8,
            landing: (tick % 16) as u8,
        };
        let own = OwnState::of(&remote.to_state());
        (remote, own)
    }

    #[test]
    fn one_carry_rule_moves_and_turns_both_states_at_their_rate_and_holds_the_rest() {
        let (before_r, before_o) = runner(100, true, 2);
        let (base_r, base_o) = runner(104, true, 2);
        for age in [1, 4, 9, MAX_CARRY_TICKS] {
            let (truth_r, _) = runner(104 + age as i32, true, 2);
            let expected = carried(&base_r, Some(&before_r), (4, age), 0);
            assert_eq!(expected.pos, truth_r.pos, "{age} ticks on");
            assert_eq!(expected.yaw, truth_r.yaw, "{age} ticks on");
            assert_eq!(expected.gait, truth_r.gait, "{age} ticks on: the gait goes round at its rate");
            assert_eq!(expected.pitch, base_r.pitch, "pitch is not carried");
            // The owner's state follows the same rule on its own grids.
            let own = carried(&base_o, Some(&before_o), (4, age), 0);
            let moved = |k: usize| base_o.pos[k] + (base_o.pos[k] - before_o.pos[k]) * age as i32 / 4;
            assert_eq!(own.pos, [moved(0), moved(1), moved(2)]);
            let turned_by = i64::from(turn(i32::from(base_o.yaw), i32::from(before_o.yaw), 16)) * i64::from(age) / 4;
            assert_eq!(i64::from(own.yaw), (i64::from(base_o.yaw) + turned_by).rem_euclid(1 << 16));
            assert_eq!((own.vel, own.pitch, own.flags), (base_o.vel, base_o.pitch, base_o.flags));
        }
    }

    #[test]
    fn a_player_in_the_air_is_expected_to_fall_under_gravity() {
        // A jump at 64 Hz: up at 7 m/s, 20 m/s² down, heights on the 1/64 m grid.
        let hz = 64u32;
        let height = |t: f64| ((7.0 * t - 10.0 * t * t) * 64.0).round() as i32;
        let at = |tick: u32| RemoteState {
            pos: [0, height(f64::from(tick) / f64::from(hz)), 0],
            flags: RemoteState::ALIVE,
            ..Default::default()
        };
        let (before, base) = (at(2), at(6));
        for age in [2u32, 6, 10] {
            let expected = carried(&base, Some(&before), (4, age), hz);
            let truth = at(6 + age).pos[1];
            assert!((expected.pos[1] - truth).abs() <= 2, "age {age}: {} vs {truth}", expected.pos[1]);
            // Over 2 ticks the fall is 2 cm, a step or two of the grid: a
            // line's miss shows from 6 on.
            let straight = carried(&base, Some(&before), (4, age), 0);
            assert!(
                age < 6 || (straight.pos[1] - truth).abs() > 2 * (expected.pos[1] - truth).abs() + 2,
                "a line misses the fall"
            );
        }
        // On the ground, nothing falls.
        let grounded = |s: RemoteState| RemoteState { flags: s.flags | RemoteState::ON_GROUND, ..s };
        assert_eq!(
            carried(&grounded(base), Some(&grounded(before)), (4, 6), hz),
            carried(&grounded(base), Some(&grounded(before)), (4, 6), 0)
        );
    }

    #[test]
    fn turns_are_carried_across_the_seam_of_the_circle() {
        let turn = 1u16 << REMOTE_YAW_BITS;
        let before = RemoteState { yaw: turn - 4, flags: RemoteState::ALIVE, ..RemoteState::default() };
        let base = RemoteState { yaw: 2, ..before };
        // 6 steps in 2 ticks: 6 more in 2 ticks more.
        assert_eq!(carried(&base, Some(&before), (2, 2), 0).yaw, 8);
        let back = RemoteState { yaw: turn - 8, ..before };
        assert_eq!(carried(&back, Some(&before), (2, 4), 0).yaw, turn - 16);
    }

    #[test]
    fn nothing_is_carried_for_the_dead_the_respawned_or_out_of_range() {
        let (before, _) = runner(100, true, 1);
        let (base, _) = runner(104, true, 1);
        let cases = [
            ("no older snapshot", None, 4, 4),
            ("baseline too old", Some(before), 4, MAX_CARRY_TICKS + 1),
            ("gap too long", Some(before), MAX_MOTION_GAP_TICKS + 1, 4),
            ("no gap", Some(before), 0, 4),
            ("dead before", Some(RemoteState { flags: 0, ..before }), 4, 4),
            ("respawned between", Some(RemoteState { spawn_count: 0, ..before }), 4, 4),
        ];
        for (why, before, gap, age) in cases {
            assert_eq!(carried(&base, before.as_ref(), (gap, age), 0), base, "{why}");
        }
        let dead = RemoteState { flags: 0, ..base };
        assert_eq!(carried(&dead, Some(&before), (4, 4), 0), dead, "dead at the baseline");
    }

    #[test]
    fn carried_positions_stay_within_the_world() {
        let limit = RemoteState::max_pos_q() as i32;
        let before =
            RemoteState { pos: [limit - 100, 0, -limit + 100], flags: RemoteState::ALIVE, ..Default::default() };
        let base = RemoteState { pos: [limit, 0, -limit], ..before };
        let expected = carried(&base, Some(&before), (1, MAX_CARRY_TICKS), 0);
        assert_eq!(expected.pos, [limit, 0, -limit]);
    }

    #[test]
    fn acknowledgements_choose_the_baseline_and_the_span_before_it() {
        let sent: VecDeque<Frame> = (0..40).map(|i| Frame { tick: 1000 + 2 * i, ..Frame::default() }).collect();
        let mut acked = Acknowledged::default();
        assert!(acked.baseline(&sent, 64).is_none(), "nothing acknowledged: a whole snapshot");
        // Out of order, and twice.
        for t in [1004, 1010, 1006, 1010, 1008] {
            acked.note(Some(t));
        }
        let b = acked.baseline(&sent, 64).expect("a baseline");
        assert_eq!((b.frame.tick, b.before.map(|f| f.tick)), (1010, Some(1008)));
        // Far ahead: the older ones are beyond a motion span.
        acked.note(Some(1060));
        let b = acked.baseline(&sent, 64).expect("a baseline");
        assert_eq!((b.frame.tick, b.before.map(|f| f.tick)), (1060, None));
        // Bounded, oldest forgotten first.
        for t in (1062..1078).step_by(2) {
            acked.note(Some(t));
        }
        assert_eq!(acked.ticks.len(), Acknowledged::KEPT);
        acked.note(Some(1002));
        assert!(!acked.ticks.contains(&1002), "too old to remember");
        // An acknowledgement of something not sent (or no longer kept) is no baseline.
        acked.note(Some(5000));
        assert!(acked.baseline(&sent, 64).is_none());
        // "I lost my baselines": whole snapshots until it acknowledges again.
        acked.note(None);
        assert_eq!(acked.newest(), None);
    }
}
