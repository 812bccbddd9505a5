//! Snapshots on the wire: what each client is told of the world after a
//! tick, quantised, delta-coded against the newest snapshot it acknowledged
//! (as Quake 3 does), and packed into bits.
//!
//! What a client gets: its own player's full state (it predicts it), and for
//! everyone else only what drawing and hit effects need ([`RemoteState`]:
//! position, view angles, alive, crouched, on the ground, spawn-protected,
//! the spawn counter). Nobody's ammo, health or timers but its own.
//!
//! A delta walks the baseline's players in id order: one bit for each
//! where it was expected, two for one that left, and for one that changed a
//! bit mask of its changed fields, each as a difference in as few bits as it
//! needs; newcomers follow whole. "Expected" is "predict, then send the
//! difference": each player carried on from the baseline at the speed and
//! turn rate it had between an older acknowledged snapshot and the baseline
//! (see [`Baseline`]). Both snapshots are ones the client said it has, so
//! both sides predict the same, and a short span between them measures how
//! a player was moving at the baseline, not on average since long before.
//! Without an acknowledged baseline the snapshot is full. A client keeps the
//! snapshots it decoded and says which is its newest in each command packet;
//! the server deltas only against ones the client has, so a lost snapshot
//! never leaves it on a wrong state, it only makes the next delta a little
//! larger.

use std::collections::{BTreeMap, VecDeque};

use arena_sim::player::PlayerState;
use arena_sim::quant::{
    dist_to_q, pitch_to_q, pos_to_q, q_to_dist, q_to_pitch, q_to_pos, q_to_timer, q_to_vel, q_to_yaw, timer_to_q,
    vel_to_q, yaw_to_q,
};
use arena_sim::{PlayerId, tick_after};

use crate::bits::{BitsError, BitsIn, BitsOut};
use crate::messages::{MAX_COORDINATE_M, MAX_SPEED_MPS};

/// Bits of a player id on the wire (ids below 128).
const ID_BITS: u32 = 7;
/// Bits of a count of players.
const COUNT_BITS: u32 = 7;
/// Widths of a position difference, grid steps (1/512 m): up to 3 cm, 1 m, 16 m, any.
const POS_DELTA: [u32; 4] = [5, 10, 14, 26];
/// Widths of the error in another player's carried-forward position, remote
/// grid steps (1/256 m): up to 3 cm (running straight), 12 cm, 50 cm (turning
/// over a round trip), 2 m, 8 m, any. Chosen on a recorded 16-player game
/// with baselines 2 to 10 ticks old (`examples/snapshot_sizes.rs`).
const REMOTE_POS_DELTA: [u32; 6] = [4, 6, 8, 10, 12, 25];
/// Widths of another player's yaw or pitch difference, remote angle steps
/// (0.35°): up to 1.4°, 5.6°, 22°, any.
const REMOTE_ANGLE_DELTA: [u32; 4] = [3, 5, 7, 10];
/// An absolute position coordinate, grid steps: ±32 km.
const POS_BITS: u32 = 26;
/// Widths of a velocity difference, grid steps (1/256 m/s).
const VEL_DELTA: [u32; 4] = [5, 9, 13, 20];
const VEL_BITS: u32 = 20;
/// Widths of an angle difference, grid steps.
const ANGLE_DELTA: [u32; 4] = [5, 8, 11, 17];
/// Widths of a timer or distance difference, grid steps.
const TIMER_DELTA: [u32; 3] = [6, 10, 17];
/// Widths of tick offsets.
const TICK_OFFSET: [u32; 4] = [4, 8, 16, 32];
const MARGIN: [u32; 3] = [7, 10, 16];
/// How far back a baseline may be, ticks.
const BASELINE_AGE: [u32; 3] = [5, 8, 16];

/// The oldest baseline players are carried forward from, ticks (half a
/// second at 64 Hz); past it a delta is against where they were.
pub const MAX_CARRY_TICKS: u32 = 32;
/// The longest span over which how a player moves is measured, ticks: the
/// older acknowledged snapshot of a [`Baseline`] is at most this far behind
/// it (a quarter of a second at 64 Hz).
pub const MAX_MOTION_GAP_TICKS: u32 = 16;
/// Widths of that span.
const MOTION_GAP: [u32; 2] = [3, 4];

/// Largest coordinate a decoded snapshot may hold, grid steps.
fn max_pos_q() -> i32 {
    pos_to_q(MAX_COORDINATE_M)
}

/// Another player's position grid, metres: coarser than the owner's (whose
/// prediction needs the exact state); at most 2 mm off where it is drawn.
pub const REMOTE_POS_STEP_M: f32 = 1.0 / 256.0;
/// Another player's yaw and pitch grids: 1024 steps a turn (0.35°, at most
/// 0.18° off: 3 mm at the end of an arm), and 256 steps from level to the
/// limit each way (the same step). Only drawing uses them: shots travel with
/// their own traces.
const REMOTE_YAW_SHIFT: u32 = 6;
const REMOTE_PITCH_SHIFT: u32 = 7;
const REMOTE_YAW_BITS: u32 = 16 - REMOTE_YAW_SHIFT;
const REMOTE_PITCH_BITS: u32 = 16 - REMOTE_PITCH_SHIFT;

fn remote_pos_to_q(v: f32) -> i32 {
    if v.is_finite() { (v / REMOTE_POS_STEP_M).round() as i32 } else { 0 }
}

/// A difference of two remote yaws, the short way round.
fn remote_yaw_delta(new: u16, old: u16) -> i32 {
    let span = 1i32 << REMOTE_YAW_BITS;
    (i32::from(new) - i32::from(old) + span / 2).rem_euclid(span) - span / 2
}

/// What a client is told of another player: enough to draw it and its hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteState {
    /// Feet position, steps of [`REMOTE_POS_STEP_M`].
    pub pos: [i32; 3],
    /// Yaw, 1024 steps a turn.
    pub yaw: u16,
    /// Pitch, 256 steps from level to the limit.
    pub pitch: i16,
    /// [`RemoteState::ALIVE`] and friends.
    pub flags: u8,
    pub spawn_count: u8,
}

impl RemoteState {
    pub const ALIVE: u8 = 1;
    pub const CROUCHED: u8 = 2;
    pub const ON_GROUND: u8 = 4;
    /// Spawn protection on (drawn as a bubble); how long it lasts is not said.
    pub const PROTECTED: u8 = 8;
    const FLAG_BITS: u32 = 4;

    pub fn of(s: &PlayerState) -> Self {
        let flag = |on: bool, f: u8| if on { f } else { 0 };
        Self {
            pos: [remote_pos_to_q(s.pos.x), remote_pos_to_q(s.pos.y), remote_pos_to_q(s.pos.z)],
            // Rounded to the nearest coarse step (wrapping for yaw).
            yaw: (((u32::from(yaw_to_q(s.yaw)) + (1 << (REMOTE_YAW_SHIFT - 1))) >> REMOTE_YAW_SHIFT)
                % (1 << REMOTE_YAW_BITS)) as u16,
            pitch: ((i32::from(pitch_to_q(s.pitch)) + (1 << (REMOTE_PITCH_SHIFT - 1))) >> REMOTE_PITCH_SHIFT) as i16,
            flags: flag(s.alive, Self::ALIVE)
                | flag(s.crouched, Self::CROUCHED)
                | flag(s.on_ground, Self::ON_GROUND)
                | flag(s.protected_s > 0.0, Self::PROTECTED),
            spawn_count: s.spawn_count,
        }
    }

    /// A player state for drawing: what is not said is left at its default
    /// (no velocity, ammo or timers; full health if alive).
    pub fn to_state(&self) -> PlayerState {
        let alive = self.flags & Self::ALIVE != 0;
        let pos = |q: i32| q as f32 * REMOTE_POS_STEP_M;
        let pitch = (i32::from(self.pitch) << REMOTE_PITCH_SHIFT).clamp(-i32::from(i16::MAX), i32::from(i16::MAX));
        PlayerState {
            pos: glam::Vec3::new(pos(self.pos[0]), pos(self.pos[1]), pos(self.pos[2])),
            yaw: q_to_yaw(self.yaw << REMOTE_YAW_SHIFT),
            pitch: q_to_pitch(pitch as i16),
            alive,
            crouched: self.flags & Self::CROUCHED != 0,
            on_ground: self.flags & Self::ON_GROUND != 0,
            protected_s: if self.flags & Self::PROTECTED != 0 { arena_sim::quant::TIMER_STEP_S } else { 0.0 },
            health: if alive { arena_sim::player::MAX_HEALTH } else { 0 },
            spawn_count: self.spawn_count,
            ..PlayerState::default()
        }
    }
}

/// The owner's full state, on the grids (exact for a snapped state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnState {
    pub pos: [i32; 3],
    pub vel: [i32; 3],
    pub yaw: u16,
    pub pitch: i16,
    pub flags: u8,
    pub step_phase: u16,
    pub health: u8,
    pub ammo: u8,
    pub fire_cooldown: u16,
    pub reload: u16,
    pub spawn_count: u8,
    pub protected: u16,
}

impl OwnState {
    const ON_GROUND: u8 = 1;
    const CROUCHED: u8 = 2;
    const JUMP_HELD: u8 = 4;
    const ALIVE: u8 = 8;
    const FIRE_HELD: u8 = 16;
    const RELOAD_HELD: u8 = 32;
    const FLAG_BITS: u32 = 6;
    /// Fields, in mask order.
    const FIELDS: u32 = 16;

    pub fn of(s: &PlayerState) -> Self {
        let flag = |on: bool, f: u8| if on { f } else { 0 };
        Self {
            pos: [pos_to_q(s.pos.x), pos_to_q(s.pos.y), pos_to_q(s.pos.z)],
            vel: [vel_to_q(s.vel.x), vel_to_q(s.vel.y), vel_to_q(s.vel.z)],
            yaw: yaw_to_q(s.yaw),
            pitch: pitch_to_q(s.pitch),
            flags: flag(s.on_ground, Self::ON_GROUND)
                | flag(s.crouched, Self::CROUCHED)
                | flag(s.jump_held, Self::JUMP_HELD)
                | flag(s.alive, Self::ALIVE)
                | flag(s.fire_held, Self::FIRE_HELD)
                | flag(s.reload_held, Self::RELOAD_HELD),
            step_phase: dist_to_q(s.step_phase),
            health: s.health,
            ammo: s.ammo,
            fire_cooldown: timer_to_q(s.fire_cooldown_s),
            reload: timer_to_q(s.reload_s),
            spawn_count: s.spawn_count,
            protected: timer_to_q(s.protected_s),
        }
    }

    pub fn to_state(&self) -> PlayerState {
        let has = |f: u8| self.flags & f != 0;
        PlayerState {
            pos: glam::Vec3::new(q_to_pos(self.pos[0]), q_to_pos(self.pos[1]), q_to_pos(self.pos[2])),
            vel: glam::Vec3::new(q_to_vel(self.vel[0]), q_to_vel(self.vel[1]), q_to_vel(self.vel[2])),
            yaw: q_to_yaw(self.yaw),
            pitch: q_to_pitch(self.pitch),
            on_ground: has(Self::ON_GROUND),
            crouched: has(Self::CROUCHED),
            jump_held: has(Self::JUMP_HELD),
            step_phase: q_to_dist(self.step_phase),
            alive: has(Self::ALIVE),
            health: self.health,
            ammo: self.ammo,
            fire_cooldown_s: q_to_timer(self.fire_cooldown),
            reload_s: q_to_timer(self.reload),
            fire_held: has(Self::FIRE_HELD),
            reload_held: has(Self::RELOAD_HELD),
            spawn_count: self.spawn_count,
            protected_s: q_to_timer(self.protected),
        }
    }
}

/// One client's view of the world after a tick: what a snapshot says, and
/// what the next one is a delta against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub tick: u32,
    /// The client's own player, if it has one.
    pub own: Option<(PlayerId, OwnState)>,
    /// Everyone else.
    pub others: BTreeMap<PlayerId, RemoteState>,
}

/// What the snapshot tells the client about its commands, for the
/// reconciliation and the clock sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Feedback {
    /// The newest of its commands the server has run.
    pub last_cmd_tick: Option<u32>,
    /// The newest of its command ticks the server has received.
    pub newest_cmd_tick: Option<u32>,
    /// How early the command run at this tick arrived, hundredths of a tick.
    pub margin_centiticks: Option<i16>,
}

/// Why a snapshot did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    Bits(BitsError),
    /// A delta against a snapshot this client does not have (any more).
    UnknownBaseline(u32),
    /// A player twice, an id out of range, a removal of someone absent, or a
    /// position beyond the world's bounds.
    Inconsistent,
}

impl From<BitsError> for SnapshotError {
    fn from(e: BitsError) -> Self {
        SnapshotError::Bits(e)
    }
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Bits(e) => write!(f, "snapshot does not decode: {e}"),
            SnapshotError::UnknownBaseline(t) => write!(f, "snapshot is a delta against tick {t}, which is not kept"),
            SnapshotError::Inconsistent => f.write_str("snapshot is inconsistent"),
        }
    }
}

impl std::error::Error for SnapshotError {}

fn max_remote_q() -> i64 {
    i64::from(remote_pos_to_q(MAX_COORDINATE_M).unsigned_abs())
}

/// Largest remote pitch either way, steps.
fn max_remote_pitch() -> i16 {
    (1i16 << (REMOTE_PITCH_BITS - 1)) - 1
}

/// What a delta is against: the newest snapshot the client acknowledged and,
/// to see how everyone was moving at that moment, an older one it
/// acknowledged too (the newest it did within [`MAX_MOTION_GAP_TICKS`]).
#[derive(Clone, Copy, Debug)]
pub struct Baseline<'a> {
    pub frame: &'a Frame,
    pub before: Option<&'a Frame>,
}

impl<'a> Baseline<'a> {
    /// A baseline with no motion known (everyone is expected where they were).
    pub fn still(frame: &'a Frame) -> Self {
        Self { frame, before: None }
    }
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
    /// before it within [`MAX_MOTION_GAP_TICKS`]. `None`: a whole snapshot.
    pub fn baseline<'a>(&self, sent: &'a VecDeque<Frame>) -> Option<Baseline<'a>> {
        let find = |t: u32| sent.iter().rev().find(|f| f.tick == t);
        let frame = find(self.newest()?)?;
        let before = self
            .ticks
            .iter()
            .rev()
            .skip(1)
            .take_while(|t| frame.tick.wrapping_sub(**t) <= MAX_MOTION_GAP_TICKS)
            .find_map(|t| find(*t));
        Some(Baseline { frame, before })
    }
}

/// `v * num / den`, rounded to the nearest (halves away from zero); `den > 0`.
fn scale_rounded(v: i64, num: i64, den: i64) -> i64 {
    let x = v * num;
    (x + x.signum() * den / 2) / den
}

/// How a delta carries a player on: `age` ticks past the baseline, at the
/// rate it moved over the `gap` ticks before it. Integer arithmetic only:
/// both sides get the same answer.
#[derive(Clone, Copy)]
struct Carry {
    age: i64,
    gap: i64,
}

impl Carry {
    /// Nothing to carry on without an older snapshot, over a span out of
    /// range, from a baseline too old, or for a player dead at either end
    /// or respawned in between (`same_life`).
    fn new(age: u32, gap: u32, alive: [bool; 2], same_life: bool) -> Option<Self> {
        let ok =
            age <= MAX_CARRY_TICKS && (1..=MAX_MOTION_GAP_TICKS).contains(&gap) && alive == [true, true] && same_life;
        ok.then_some(Self { age: i64::from(age), gap: i64::from(gap) })
    }

    /// `now` moved on by its change since `then` (`moved`), scaled to the age.
    fn on(self, now: i64, moved: i64) -> i64 {
        now + scale_rounded(moved, self.age, self.gap)
    }

    fn positions(self, now: &mut [i32; 3], then: [i32; 3], max: i64) {
        for (p, from) in now.iter_mut().zip(then) {
            *p = self.on(i64::from(*p), i64::from(*p) - i64::from(from)).clamp(-max, max) as i32;
        }
    }
}

/// Where a delta expects another player, from its state at the baseline
/// (`base`) and at the older snapshot (`before`) ("predict, then send the
/// difference"): carried on in position and yaw, within the world.
fn expected(base: &RemoteState, before: Option<&RemoteState>, gap: u32, age: u32) -> RemoteState {
    let mut out = *base;
    let alive = |s: &RemoteState| s.flags & RemoteState::ALIVE != 0;
    let Some(before) = before else { return out };
    let Some(carry) = Carry::new(age, gap, [alive(before), alive(base)], before.spawn_count == base.spawn_count) else {
        return out;
    };
    carry.positions(&mut out.pos, before.pos, max_remote_q());
    let yaw = carry.on(i64::from(base.yaw), i64::from(remote_yaw_delta(base.yaw, before.yaw)));
    out.yaw = yaw.rem_euclid(1 << REMOTE_YAW_BITS) as u16;
    out
}

/// The same for the client's own player: moved on and turned on, the rest
/// (velocity, timers, flags) as it was.
fn expected_own(base: &OwnState, before: Option<&OwnState>, gap: u32, age: u32) -> OwnState {
    let mut out = *base;
    let alive = |s: &OwnState| s.flags & OwnState::ALIVE != 0;
    let Some(before) = before else { return out };
    let Some(carry) = Carry::new(age, gap, [alive(before), alive(base)], before.spawn_count == base.spawn_count) else {
        return out;
    };
    carry.positions(&mut out.pos, before.pos, i64::from(max_pos_q()));
    let yaw = carry.on(i64::from(base.yaw), i64::from(angle_delta(base.yaw, before.yaw)));
    out.yaw = yaw.rem_euclid(1 << 16) as u16;
    out
}

/// Where a delta for `tick` against `baseline` expects the own player `id`
/// (none if the baseline had another or none).
fn own_expectation(baseline: &Baseline, id: PlayerId, tick: u32) -> Option<OwnState> {
    let own = |f: &Frame| f.own.filter(|(own_id, _)| *own_id == id).map(|(_, s)| s);
    let base = own(baseline.frame)?;
    let before = baseline.before.and_then(own);
    let gap = baseline.before.map(|b| baseline.frame.tick.wrapping_sub(b.tick)).unwrap_or(0);
    Some(expected_own(&base, before.as_ref(), gap, tick.wrapping_sub(baseline.frame.tick)))
}

/// Where a delta against `baseline`, `age` ticks on, expects each of the
/// others, the same way on both sides.
fn expectations(baseline: &Baseline, age: u32) -> BTreeMap<PlayerId, RemoteState> {
    let gap = baseline.before.map(|b| baseline.frame.tick.wrapping_sub(b.tick)).unwrap_or(0);
    baseline
        .frame
        .others
        .iter()
        .map(|(id, s)| (*id, expected(s, baseline.before.and_then(|b| b.others.get(id)), gap, age)))
        .collect()
}

fn angle_delta(new: u16, old: u16) -> i32 {
    i32::from(new.wrapping_sub(old) as i16)
}

fn write_remote(out: &mut BitsOut, new: &RemoteState, old: Option<&RemoteState>) {
    match old {
        Some(old) => {
            let changed = [
                new.pos[0] != old.pos[0],
                new.pos[1] != old.pos[1],
                new.pos[2] != old.pos[2],
                new.yaw != old.yaw,
                new.pitch != old.pitch,
                new.flags != old.flags,
                new.spawn_count != old.spawn_count,
            ];
            for c in changed {
                out.flag(c);
            }
            for ((c, new), old) in changed.iter().zip(new.pos).zip(old.pos) {
                if *c {
                    out.var_signed(new.wrapping_sub(old), &REMOTE_POS_DELTA);
                }
            }
            if changed[3] {
                out.var_signed(remote_yaw_delta(new.yaw, old.yaw), &REMOTE_ANGLE_DELTA);
            }
            if changed[4] {
                out.var_signed(i32::from(new.pitch) - i32::from(old.pitch), &REMOTE_ANGLE_DELTA);
            }
            if changed[5] {
                out.unsigned(RemoteState::FLAG_BITS, u32::from(new.flags));
            }
            if changed[6] {
                out.unsigned(8, u32::from(new.spawn_count));
            }
        }
        None => {
            for axis in 0..3 {
                out.signed(POS_BITS, new.pos[axis]);
            }
            out.unsigned(REMOTE_YAW_BITS, u32::from(new.yaw));
            out.signed(REMOTE_PITCH_BITS, i32::from(new.pitch));
            out.unsigned(RemoteState::FLAG_BITS, u32::from(new.flags));
            out.unsigned(8, u32::from(new.spawn_count));
        }
    }
}

fn read_remote(input: &mut BitsIn, old: Option<&RemoteState>) -> Result<RemoteState, SnapshotError> {
    let mut s = match old {
        Some(old) => {
            let mut changed = [false; 7];
            for c in &mut changed {
                *c = input.flag()?;
            }
            let mut s = *old;
            for ((c, p), old) in changed.iter().zip(&mut s.pos).zip(old.pos) {
                if *c {
                    *p = old.wrapping_add(input.var_signed(&REMOTE_POS_DELTA)?);
                }
            }
            if changed[3] {
                let yaw = i32::from(old.yaw) + input.var_signed(&REMOTE_ANGLE_DELTA)?;
                s.yaw = yaw.rem_euclid(1 << REMOTE_YAW_BITS) as u16;
            }
            if changed[4] {
                let pitch = i32::from(old.pitch) + input.var_signed(&REMOTE_ANGLE_DELTA)?;
                s.pitch = i16::try_from(pitch).map_err(|_| SnapshotError::Inconsistent)?;
            }
            if changed[5] {
                s.flags = input.unsigned(RemoteState::FLAG_BITS)? as u8;
            }
            if changed[6] {
                s.spawn_count = input.unsigned(8)? as u8;
            }
            s
        }
        None => RemoteState {
            pos: [input.signed(POS_BITS)?, input.signed(POS_BITS)?, input.signed(POS_BITS)?],
            yaw: input.unsigned(REMOTE_YAW_BITS)? as u16,
            pitch: input.signed(REMOTE_PITCH_BITS)? as i16,
            flags: input.unsigned(RemoteState::FLAG_BITS)? as u8,
            spawn_count: input.unsigned(8)? as u8,
        },
    };
    let max_remote_q = remote_pos_to_q(MAX_COORDINATE_M).unsigned_abs();
    if s.pos.iter().any(|p| p.unsigned_abs() > max_remote_q) {
        return Err(SnapshotError::Inconsistent);
    }
    s.pitch = s.pitch.clamp(-max_remote_pitch(), max_remote_pitch());
    s.yaw %= 1 << REMOTE_YAW_BITS;
    Ok(s)
}

/// The own state's fields as numbers, in mask order, and how each is coded.
fn own_fields(s: &OwnState) -> [i32; OwnState::FIELDS as usize] {
    [
        s.pos[0],
        s.pos[1],
        s.pos[2],
        s.vel[0],
        s.vel[1],
        s.vel[2],
        i32::from(s.yaw),
        i32::from(s.pitch),
        i32::from(s.flags),
        i32::from(s.step_phase),
        i32::from(s.health),
        i32::from(s.ammo),
        i32::from(s.fire_cooldown),
        i32::from(s.reload),
        i32::from(s.spawn_count),
        i32::from(s.protected),
    ]
}

/// How a field is coded: its width in a full snapshot, and its delta widths
/// (`None`: sent whole when it changes).
fn own_coding(field: usize) -> (u32, bool, Option<&'static [u32]>) {
    match field {
        0..=2 => (POS_BITS, true, Some(&POS_DELTA)),
        3..=5 => (VEL_BITS, true, Some(&VEL_DELTA)),
        6 => (16, false, Some(&ANGLE_DELTA)),
        7 => (16, true, Some(&ANGLE_DELTA)),
        8 => (OwnState::FLAG_BITS, false, None),
        9 | 12 | 13 | 15 => (16, false, Some(&TIMER_DELTA)),
        _ => (8, false, None),
    }
}

fn own_from_fields(f: &[i32; OwnState::FIELDS as usize]) -> Result<OwnState, SnapshotError> {
    let u16_of = |v: i32| u16::try_from(v).map_err(|_| SnapshotError::Inconsistent);
    let u8_of = |v: i32| u8::try_from(v).map_err(|_| SnapshotError::Inconsistent);
    let s = OwnState {
        pos: [f[0], f[1], f[2]],
        vel: [f[3], f[4], f[5]],
        yaw: u16_of(f[6])?,
        pitch: i16::try_from(f[7]).map_err(|_| SnapshotError::Inconsistent)?.clamp(-i16::MAX, i16::MAX),
        flags: u8_of(f[8])?,
        step_phase: u16_of(f[9])?,
        health: u8_of(f[10])?,
        ammo: u8_of(f[11])?,
        fire_cooldown: u16_of(f[12])?,
        reload: u16_of(f[13])?,
        spawn_count: u8_of(f[14])?,
        protected: u16_of(f[15])?,
    };
    let max_vel = vel_to_q(MAX_SPEED_MPS).unsigned_abs();
    if s.pos.iter().any(|p| p.unsigned_abs() > max_pos_q().unsigned_abs())
        || s.vel.iter().any(|v| v.unsigned_abs() > max_vel)
    {
        return Err(SnapshotError::Inconsistent);
    }
    Ok(s)
}

fn write_own(out: &mut BitsOut, new: &OwnState, old: Option<&OwnState>) {
    let newf = own_fields(new);
    match old.map(own_fields) {
        Some(oldf) => {
            for i in 0..newf.len() {
                out.flag(newf[i] != oldf[i]);
            }
            for i in 0..newf.len() {
                if newf[i] == oldf[i] {
                    continue;
                }
                match own_coding(i) {
                    (_, _, Some(widths)) if i == 6 => out.var_signed(angle_delta(new.yaw, old_yaw(&oldf)), widths),
                    (_, _, Some(widths)) => out.var_signed(newf[i].wrapping_sub(oldf[i]), widths),
                    (bits, signed, None) => write_whole(out, bits, signed, newf[i]),
                }
            }
        }
        None => {
            for (i, v) in newf.iter().enumerate() {
                let (bits, signed, _) = own_coding(i);
                write_whole(out, bits, signed, *v);
            }
        }
    }
}

fn old_yaw(fields: &[i32; OwnState::FIELDS as usize]) -> u16 {
    fields[6] as u16
}

fn write_whole(out: &mut BitsOut, bits: u32, signed: bool, v: i32) {
    if signed { out.signed(bits, v) } else { out.unsigned(bits, v as u32) }
}

fn read_whole(input: &mut BitsIn, bits: u32, signed: bool) -> Result<i32, SnapshotError> {
    Ok(if signed { input.signed(bits)? } else { input.unsigned(bits)? as i32 })
}

fn read_own(input: &mut BitsIn, old: Option<&OwnState>) -> Result<OwnState, SnapshotError> {
    let mut f = [0i32; OwnState::FIELDS as usize];
    match old.map(own_fields) {
        Some(oldf) => {
            let mut changed = [false; OwnState::FIELDS as usize];
            for c in &mut changed {
                *c = input.flag()?;
            }
            for i in 0..f.len() {
                f[i] = if !changed[i] {
                    oldf[i]
                } else {
                    match own_coding(i) {
                        (_, _, Some(widths)) if i == 6 => {
                            i32::from(old_yaw(&oldf).wrapping_add(input.var_signed(widths)? as u16))
                        }
                        (_, _, Some(widths)) => oldf[i].wrapping_add(input.var_signed(widths)?),
                        (bits, signed, None) => read_whole(input, bits, signed)?,
                    }
                };
            }
        }
        None => {
            for (i, v) in f.iter_mut().enumerate() {
                let (bits, signed, _) = own_coding(i);
                *v = read_whole(input, bits, signed)?;
            }
        }
    }
    own_from_fields(&f)
}

fn write_offset(out: &mut BitsOut, v: Option<i32>, widths: &[u32]) {
    out.flag(v.is_some());
    if let Some(v) = v {
        out.var_signed(v, widths);
    }
}

fn read_offset(input: &mut BitsIn, widths: &[u32]) -> Result<Option<i32>, SnapshotError> {
    Ok(if input.flag()? { Some(input.var_signed(widths)?) } else { None })
}

/// What a snapshot says of itself, readable without its baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub tick: u32,
    /// The snapshot it is a delta against (`None`: whole).
    pub baseline: Option<u32>,
    /// The older snapshot that says how everyone was moving at the baseline.
    pub before: Option<u32>,
}

fn write_header(out: &mut BitsOut, h: &Header) {
    out.unsigned(32, h.tick);
    out.flag(h.baseline.is_some());
    if let Some(base) = h.baseline {
        out.var_unsigned(h.tick.wrapping_sub(base), &BASELINE_AGE);
        out.flag(h.before.is_some());
        if let Some(before) = h.before {
            out.var_unsigned(base.wrapping_sub(before).wrapping_sub(1), &MOTION_GAP);
        }
    }
}

fn read_header(input: &mut BitsIn) -> Result<Header, SnapshotError> {
    let tick = input.unsigned(32)?;
    let mut header = Header { tick, baseline: None, before: None };
    if input.flag()? {
        let age = input.var_unsigned(&BASELINE_AGE)?;
        if age == 0 {
            return Err(SnapshotError::Inconsistent);
        }
        let base = tick.wrapping_sub(age);
        header.baseline = Some(base);
        if input.flag()? {
            let gap = input.var_unsigned(&MOTION_GAP)? + 1;
            if gap > MAX_MOTION_GAP_TICKS {
                return Err(SnapshotError::Inconsistent);
            }
            header.before = Some(base.wrapping_sub(gap));
        }
    }
    Ok(header)
}

/// Encodes `frame` (and the feedback for its client) as a delta against
/// `baseline`, or whole without one. A `before` more than
/// [`MAX_MOTION_GAP_TICKS`] behind the baseline (or not behind it) is not used.
pub fn encode(frame: &Frame, feedback: &Feedback, baseline: Option<Baseline>) -> Vec<u8> {
    let baseline = baseline.map(|b| Baseline {
        before: b.before.filter(|before| {
            let gap = b.frame.tick.wrapping_sub(before.tick);
            (1..=MAX_MOTION_GAP_TICKS).contains(&gap)
        }),
        ..b
    });
    let mut out = BitsOut::new();
    write_header(
        &mut out,
        &Header {
            tick: frame.tick,
            baseline: baseline.map(|b| b.frame.tick),
            before: baseline.and_then(|b| b.before).map(|b| b.tick),
        },
    );
    let offset = |t: Option<u32>| t.map(|t| t.wrapping_sub(frame.tick) as i32);
    write_offset(&mut out, offset(feedback.last_cmd_tick), &TICK_OFFSET);
    write_offset(&mut out, offset(feedback.newest_cmd_tick), &TICK_OFFSET);
    write_offset(&mut out, feedback.margin_centiticks.map(i32::from), &MARGIN);

    // Our own player.
    out.flag(frame.own.is_some());
    if let Some((id, own)) = &frame.own {
        out.unsigned(ID_BITS, u32::from(id.0));
        let old = baseline.and_then(|b| own_expectation(&b, *id, frame.tick));
        out.flag(old.is_some());
        write_own(&mut out, own, old.as_ref());
    }

    // Everyone else: those not where they were expected and the new, then
    // those who left.
    let expected = baseline.map(|b| expectations(&b, frame.tick.wrapping_sub(b.frame.tick))).unwrap_or_default();
    // The baseline's players in id order: "0" as expected, "10" changed
    // (then what changed), "11" gone.
    for (id, old) in &expected {
        match frame.others.get(id) {
            Some(new) if new == old => out.flag(false),
            Some(new) => {
                out.flag(true);
                out.flag(false);
                write_remote(&mut out, new, Some(old));
            }
            None => {
                out.flag(true);
                out.flag(true);
            }
        }
    }
    // Then the newcomers, whole.
    let newcomers: Vec<(&PlayerId, &RemoteState)> =
        frame.others.iter().filter(|(id, _)| !expected.contains_key(id)).collect();
    out.unsigned(COUNT_BITS, newcomers.len() as u32);
    for (id, s) in newcomers {
        out.unsigned(ID_BITS, u32::from(id.0));
        write_remote(&mut out, s, None);
    }
    out.finish()
}

/// The tick a snapshot is for and the snapshots it needs, without decoding
/// the rest.
pub fn header(bytes: &[u8]) -> Result<Header, SnapshotError> {
    read_header(&mut BitsIn::new(bytes))
}

/// Decodes a snapshot, finding the snapshots it is coded against (if it is
/// a delta) with `baseline_of`. Every player id is below `max_players`.
pub fn decode<'a>(
    bytes: &[u8],
    baseline_of: impl Fn(u32) -> Option<&'a Frame>,
    max_players: usize,
) -> Result<(Frame, Feedback), SnapshotError> {
    let mut input = BitsIn::new(bytes);
    let header = read_header(&mut input)?;
    let tick = header.tick;
    let find = |t: u32| baseline_of(t).filter(|f| f.tick == t).ok_or(SnapshotError::UnknownBaseline(t));
    let baseline = match header.baseline {
        Some(base) => Some(Baseline { frame: find(base)?, before: header.before.map(find).transpose()? }),
        None => None,
    };
    let back = |v: Option<i32>| v.map(|v| tick.wrapping_add(v as u32));
    let last_cmd_tick = back(read_offset(&mut input, &TICK_OFFSET)?);
    let newest_cmd_tick = back(read_offset(&mut input, &TICK_OFFSET)?);
    let margin_centiticks = read_offset(&mut input, &MARGIN)?
        .map(|m| i16::try_from(m).map_err(|_| SnapshotError::Inconsistent))
        .transpose()?;
    let feedback = Feedback { last_cmd_tick, newest_cmd_tick, margin_centiticks };

    let id_ok = |id: u32| (id as usize) < max_players;
    let own = if input.flag()? {
        let id = input.unsigned(ID_BITS)?;
        if !id_ok(id) {
            return Err(SnapshotError::Inconsistent);
        }
        let id = PlayerId(id as u8);
        let is_delta = input.flag()?;
        let old = baseline.and_then(|b| own_expectation(&b, id, tick));
        if is_delta && old.is_none() {
            return Err(SnapshotError::Inconsistent);
        }
        Some((id, read_own(&mut input, if is_delta { old.as_ref() } else { None })?))
    } else {
        None
    };

    // Unlisted players are where they were expected.
    let mut others = baseline.map(|b| expectations(&b, tick.wrapping_sub(b.frame.tick))).unwrap_or_default();
    let known: Vec<PlayerId> = others.keys().copied().collect();
    for id in known {
        if !input.flag()? {
            continue;
        }
        if input.flag()? {
            others.remove(&id);
        } else if let Some(old) = others.get(&id).copied() {
            others.insert(id, read_remote(&mut input, Some(&old))?);
        }
    }
    let newcomers = input.unsigned(COUNT_BITS)?;
    for _ in 0..newcomers {
        let id = input.unsigned(ID_BITS)?;
        if !id_ok(id) {
            return Err(SnapshotError::Inconsistent);
        }
        let id = PlayerId(id as u8);
        // A newcomer is nobody the baseline had (nor one listed twice).
        if baseline.is_some_and(|b| b.frame.others.contains_key(&id)) || others.contains_key(&id) {
            return Err(SnapshotError::Inconsistent);
        }
        others.insert(id, read_remote(&mut input, None)?);
    }
    input.finish()?;
    if own.as_ref().is_some_and(|(id, _)| others.contains_key(id)) || others.len() > max_players {
        return Err(SnapshotError::Inconsistent);
    }
    Ok((Frame { tick, own, others }, feedback))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::quant::snap_state;
    use arena_sim::rng::SplitMix64;

    fn moving(rng: &mut SplitMix64) -> PlayerState {
        snap_state(&PlayerState {
            pos: glam::Vec3::new(rng.range(-30.0, 30.0), rng.range(0.0, 6.0), rng.range(-30.0, 30.0)),
            vel: glam::Vec3::new(rng.range(-7.0, 7.0), rng.range(-10.0, 7.0), rng.range(-7.0, 7.0)),
            yaw: rng.range(-3.0, 3.0),
            pitch: rng.range(-1.0, 1.0),
            on_ground: rng.next_f32() < 0.7,
            crouched: rng.next_f32() < 0.2,
            alive: rng.next_f32() < 0.9,
            health: (rng.next_f32() * 100.0) as u8,
            ammo: (rng.next_f32() * 30.0) as u8,
            fire_cooldown_s: rng.range(0.0, 0.1),
            reload_s: rng.range(0.0, 1.6),
            step_phase: rng.range(0.0, 2.4),
            protected_s: rng.range(0.0, 1.5),
            spawn_count: rng.below(4) as u8,
            ..PlayerState::default()
        })
    }

    fn frame(tick: u32, rng: &mut SplitMix64, players: u8) -> Frame {
        Frame {
            tick,
            own: Some((PlayerId(0), OwnState::of(&moving(rng)))),
            others: (1..players).map(|id| (PlayerId(id), RemoteState::of(&moving(rng)))).collect(),
        }
    }

    #[test]
    fn the_own_state_round_trips_exactly() {
        let mut rng = SplitMix64::new(3);
        for _ in 0..1000 {
            let s = moving(&mut rng);
            assert_eq!(OwnState::of(&s).to_state(), s, "a snapped state travels bit for bit");
        }
    }

    #[test]
    fn full_and_delta_snapshots_decode_to_what_was_encoded() {
        let mut rng = SplitMix64::new(5);
        let feedback = Feedback { last_cmd_tick: Some(98), newest_cmd_tick: Some(101), margin_centiticks: Some(-40) };
        let a = frame(100, &mut rng, 16);
        let full = encode(&a, &feedback, None);
        assert_eq!(header(&full), Ok(Header { tick: 100, baseline: None, before: None }));
        assert_eq!(decode(&full, |_| None, 64), Ok((a.clone(), feedback)));
        let mut b = frame(103, &mut rng, 16);
        b.others.remove(&PlayerId(5));
        let delta = encode(&b, &feedback, Some(Baseline::still(&a)));
        assert_eq!(header(&delta), Ok(Header { tick: 103, baseline: Some(100), before: None }));
        assert_eq!(decode(&delta, |t| (t == 100).then_some(&a), 64), Ok((b.clone(), feedback)));
        assert_eq!(decode(&delta, |_| None, 64), Err(SnapshotError::UnknownBaseline(100)));
        // With motion from an older snapshot: both are needed.
        let c = frame(107, &mut rng, 16);
        let moving = encode(&c, &feedback, Some(Baseline { frame: &b, before: Some(&a) }));
        assert_eq!(header(&moving), Ok(Header { tick: 107, baseline: Some(103), before: Some(100) }));
        let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
        assert_eq!(decode(&moving, kept, 64), Ok((c.clone(), feedback)));
        assert_eq!(decode(&moving, |t| (t == 103).then_some(&b), 64), Err(SnapshotError::UnknownBaseline(100)));
        // A baseline found under the wrong tick is not used.
        assert_eq!(decode(&moving, |_| Some(&b), 64), Err(SnapshotError::UnknownBaseline(100)));
        // Nothing changed and nobody moving: next to nothing sent.
        let same = Frame { tick: 105, ..b.clone() };
        assert!(encode(&same, &Feedback::default(), Some(Baseline::still(&b))).len() <= 12);
    }

    /// Players running in straight lines at steady speeds and turning at
    /// steady rates, at `tick`.
    fn runners(tick: u32) -> Frame {
        let mut rng = SplitMix64::new(8);
        Frame {
            tick,
            others: (1..16)
                .map(|id| {
                    let (vx, vz) = (rng.below(40) as i32 - 20, rng.below(40) as i32 - 20);
                    let turn = rng.below(9) as i32 - 4;
                    let s = RemoteState {
                        pos: [vx * tick as i32, 0, vz * tick as i32],
                        yaw: (turn * tick as i32).rem_euclid(1 << REMOTE_YAW_BITS) as u16,
                        flags: RemoteState::ALIVE,
                        ..RemoteState::default()
                    };
                    (PlayerId(id), s)
                })
                .collect(),
            ..Frame::default()
        }
    }

    #[test]
    fn players_running_straight_cost_a_bit_each_however_old_the_baseline() {
        let feedback = Feedback::default();
        let (a, b) = (runners(100), runners(102));
        let first_delta = encode(&b, &feedback, Some(Baseline::still(&a))).len();
        assert!(first_delta > 30, "without motion every runner is news ({first_delta} bytes)");
        for age in [2, 8, 16, 30] {
            let c = runners(102 + age);
            let bytes = encode(&c, &feedback, Some(Baseline { frame: &b, before: Some(&a) }));
            let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
            assert_eq!(decode(&bytes, kept, 64).map(|(f, _)| f), Ok(c));
            assert!(bytes.len() <= 10, "{} bytes, {age} ticks on", bytes.len());
        }
    }

    #[test]
    fn the_dead_and_the_respawned_are_not_carried_on() {
        let (a, b) = (runners(100), runners(102));
        let mut c = runners(110);
        // One died where it stood at the baseline; another respawned far away.
        let died = c.others.get_mut(&PlayerId(3)).expect("player 3");
        *died = RemoteState { flags: 0, ..b.others[&PlayerId(3)] };
        let respawned = c.others.get_mut(&PlayerId(4)).expect("player 4");
        respawned.pos = [9000, 0, -9000];
        respawned.spawn_count = 1;
        let bytes = encode(&c, &Feedback::default(), Some(Baseline { frame: &b, before: Some(&a) }));
        let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
        assert_eq!(decode(&bytes, kept, 64).map(|(f, _)| f), Ok(c.clone()));
        // And from that baseline on, they are expected to stay put.
        let d = Frame { tick: 114, ..c.clone() };
        let bytes = encode(&d, &Feedback::default(), Some(Baseline { frame: &c, before: Some(&b) }));
        let kept = |t: u32| [&b, &c].into_iter().find(|f| f.tick == t);
        let (decoded, _) = decode(&bytes, kept, 64).expect("decodes");
        assert_eq!(decoded.others[&PlayerId(3)], c.others[&PlayerId(3)]);
        assert_eq!(decoded.others[&PlayerId(4)], c.others[&PlayerId(4)]);
    }

    #[test]
    fn a_motion_span_out_of_range_is_not_used() {
        let (a, b) = (runners(100), runners(102));
        let too_old = runners(100 - MAX_MOTION_GAP_TICKS - 1);
        for before in [&too_old, &b] {
            let bytes = encode(&b, &Feedback::default(), Some(Baseline { frame: &a, before: Some(before) }));
            assert_eq!(header(&bytes).map(|h| h.before), Ok(None));
            assert_eq!(decode(&bytes, |t| (t == 100).then_some(&a), 64).map(|(f, _)| f), Ok(b.clone()));
        }
    }

    #[test]
    fn acknowledgements_choose_the_baseline_and_the_span_before_it() {
        let sent: VecDeque<Frame> = (0..40).map(|i| Frame { tick: 1000 + 2 * i, ..Frame::default() }).collect();
        let mut acked = Acknowledged::default();
        assert!(acked.baseline(&sent).is_none(), "nothing acknowledged: a whole snapshot");
        // Out of order, and twice.
        for t in [1004, 1010, 1006, 1010, 1008] {
            acked.note(Some(t));
        }
        let b = acked.baseline(&sent).expect("a baseline");
        assert_eq!((b.frame.tick, b.before.map(|f| f.tick)), (1010, Some(1008)));
        // Far ahead: the older ones are beyond a motion span.
        acked.note(Some(1060));
        let b = acked.baseline(&sent).expect("a baseline");
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
        assert!(acked.baseline(&sent).is_none());
        // "I lost my baselines": whole snapshots until it acknowledges again.
        acked.note(None);
        assert_eq!(acked.newest(), None);
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = SplitMix64::new(9);
        let base = frame(10, &mut rng, 8);
        for len in 0..400 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let _ = decode(&bytes, |t| (t == 10).then_some(&base), 64);
            let _ = decode(&bytes, |_| Some(&base), 64);
        }
    }
}
