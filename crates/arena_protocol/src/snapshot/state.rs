//! What a client may know of the world after a tick: its own player whole
//! ([`OwnState`], it predicts it) and everyone else only as drawing and hit
//! effects need them ([`RemoteState`]: position, view angles, alive,
//! crouched, on the ground, spawn-protected, the spawn counter, and what
//! its pose needs: the pace, the gait's phase, the hips' twist and a landing's bent knees), each on its
//! grid; a [`Frame`] of them; and the [`Feedback`] about the client's own
//! commands. Nobody's ammo, health or timers but its own.

use arena_sim::player::{GAIT_CYCLE_M, PlayerState, Weapon};
use arena_sim::quant::{
    dist_to_q, landing_to_q, pitch_to_q, pos_to_q, powerup_to_q, q_to_dist, q_to_landing, q_to_pitch, q_to_pos,
    q_to_powerup, q_to_signed_timer, q_to_timer, q_to_twist, q_to_vel, q_to_yaw, signed_timer_to_q, timer_to_q,
    twist_to_q, vel_to_q, yaw_to_q,
};
use arena_sim::{ItemSlot, PlayerId};

use crate::messages::{MAX_COORDINATE_M, MAX_SPEED_MPS};

/// Another player's position grid, metres: coarser than the owner's (whose
/// prediction needs the exact state); at most 8 mm off where it is drawn,
/// finer than Quake 3's whole units (2.5 cm) for the same thing. Since
/// protocol 20 (1/256 m before): two bits less per coordinate that changed.
pub const REMOTE_POS_STEP_M: f32 = 1.0 / 64.0;
/// Another player's yaw and pitch grids: 512 steps a turn (0.7°, at most
/// 0.35° off: 5 mm at the end of an arm; Quake 3 sends whole degrees), and
/// 128 steps from level to the limit each way (the same step). Drawing and
/// the hitboxes the server tests use them alike: shots travel with their
/// own traces.
const REMOTE_YAW_SHIFT: u32 = 7;
const REMOTE_PITCH_SHIFT: u32 = 8;
pub(super) const REMOTE_YAW_BITS: u32 = 16 - REMOTE_YAW_SHIFT;
pub(super) const REMOTE_PITCH_BITS: u32 = 16 - REMOTE_PITCH_SHIFT;

/// Another player's horizontal velocity grid, metres per second (the pose's
/// pace and direction; nothing else uses it: at a run a step is 7% of the
/// stride and 4° of its direction, where Quake 3 sends eight directions),
/// and its largest step either way (±15.5 m/s: past a run, a stride is a
/// stride).
pub(super) const REMOTE_VEL_STEP_MPS: f32 = 0.5;
pub(super) const REMOTE_VEL_MAX_Q: i8 = 31;
pub(super) const REMOTE_VEL_BITS: u32 = 6;
/// Another player's gait phase: 64 steps a gait cycle (5 cm of walking).
pub(super) const REMOTE_GAIT_BITS: u32 = 6;
/// Another player's hips' twist: 63 steps either way of the limit (0.7°
/// a step), and a landing's depth in 15 steps: drawing and the hitboxes the
/// server records both use these coarse values (the owner's are exact).
pub(super) const REMOTE_TWIST_BITS: u32 = 7;
pub(super) const REMOTE_TWIST_STEPS: i8 = 63;
pub(super) const REMOTE_LANDING_BITS: u32 = 4;
pub(super) const REMOTE_LANDING_STEPS: u8 = 15;

fn remote_twist_to_q(twist: f32) -> i8 {
    let steps = f32::from(REMOTE_TWIST_STEPS);
    let q = if twist.is_finite() { (twist / arena_sim::player::MAX_TWIST_RAD * steps).round() } else { 0.0 };
    q.clamp(-steps, steps) as i8
}

fn remote_landing_to_q(landing: f32) -> u8 {
    let steps = f32::from(REMOTE_LANDING_STEPS);
    let q = if landing.is_finite() { (landing * steps).round() } else { 0.0 };
    q.clamp(0.0, steps) as u8
}
const REMOTE_GAIT_STEPS: f32 = (1u32 << REMOTE_GAIT_BITS) as f32;

fn remote_vel_to_q(v: f32) -> i8 {
    let q = if v.is_finite() { (v / REMOTE_VEL_STEP_MPS).round() } else { 0.0 };
    q.clamp(-f32::from(REMOTE_VEL_MAX_Q), f32::from(REMOTE_VEL_MAX_Q)) as i8
}

fn remote_gait_to_q(gait_m: f32) -> u8 {
    let steps = if gait_m.is_finite() { (gait_m / GAIT_CYCLE_M * REMOTE_GAIT_STEPS).round() } else { 0.0 };
    (steps.clamp(-1e6, 1e6) as i32).rem_euclid(1 << REMOTE_GAIT_BITS) as u8
}

fn remote_pos_to_q(v: f32) -> i32 {
    if v.is_finite() { (v / REMOTE_POS_STEP_M).round() as i32 } else { 0 }
}

/// What a client is told of another player: enough to draw it and its hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteState {
    /// Feet position, steps of [`REMOTE_POS_STEP_M`].
    pub pos: [i32; 3],
    /// Yaw, 512 steps a turn.
    pub yaw: u16,
    /// Pitch, 128 steps from level to the limit.
    pub pitch: i16,
    /// [`RemoteState::ALIVE`] and friends.
    pub flags: u8,
    pub spawn_count: u8,
    /// Horizontal velocity (x, z), steps of [`REMOTE_VEL_STEP_MPS`].
    pub vel: [i8; 2],
    /// Where in its gait cycle, 64 steps a cycle.
    pub gait: u8,
    /// The view's turn from the hips, [`REMOTE_TWIST_STEPS`] either way.
    pub twist: i8,
    /// How deep a landing bends the knees, 0 to [`REMOTE_LANDING_STEPS`].
    pub landing: u8,
}

impl RemoteState {
    pub const ALIVE: u8 = 1;
    pub const CROUCHED: u8 = 2;
    pub const ON_GROUND: u8 = 4;
    /// Spawn protection on (drawn as a bubble); how long it lasts is not said.
    pub const PROTECTED: u8 = 8;
    /// The rocket launcher in hand (else the rifle).
    pub const ROCKET: u8 = 16;
    /// The quad damage on (drawn as a glow); how long it lasts is not said.
    pub const QUAD: u8 = 32;
    pub(super) const FLAG_BITS: u32 = 6;

    pub fn of(s: &PlayerState) -> Self {
        let flag = |on: bool, f: u8| if on { f } else { 0 };
        Self {
            pos: [remote_pos_to_q(s.pos.x), remote_pos_to_q(s.pos.y), remote_pos_to_q(s.pos.z)],
            // Rounded to the nearest coarse step (wrapping for yaw).
            yaw: (((u32::from(yaw_to_q(s.yaw)) + (1 << (REMOTE_YAW_SHIFT - 1))) >> REMOTE_YAW_SHIFT)
                % (1 << REMOTE_YAW_BITS)) as u16,
            // Rounded to the nearest step, within the field: the limit
            // itself (32767) would round to one past the largest.
            pitch: (((i32::from(pitch_to_q(s.pitch)) + (1 << (REMOTE_PITCH_SHIFT - 1))) >> REMOTE_PITCH_SHIFT) as i16)
                .clamp(-Self::max_pitch(), Self::max_pitch()),
            flags: flag(s.alive, Self::ALIVE)
                | flag(s.crouched, Self::CROUCHED)
                | flag(s.on_ground, Self::ON_GROUND)
                | flag(s.protected_s > 0.0, Self::PROTECTED)
                | flag(s.weapon == Weapon::Rocket, Self::ROCKET)
                | flag(s.quad_s > 0.0, Self::QUAD),
            spawn_count: s.spawn_count,
            vel: [remote_vel_to_q(s.vel.x), remote_vel_to_q(s.vel.z)],
            gait: remote_gait_to_q(s.step_phase),
            twist: remote_twist_to_q(s.twist),
            landing: remote_landing_to_q(s.landing),
        }
    }

    /// A player state for drawing: what is not said is left at its default
    /// (no vertical velocity, ammo or timers; full health if alive). The
    /// server tests shots against hitboxes of exactly this state (its pose
    /// included), so what a client draws and what the server tests agree.
    pub fn to_state(&self) -> PlayerState {
        let alive = self.is_alive();
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
            quad_s: if self.flags & Self::QUAD != 0 { arena_sim::quant::TIMER_STEP_S } else { 0.0 },
            health: if alive { arena_sim::player::MAX_HEALTH } else { 0 },
            weapon: if self.flags & Self::ROCKET != 0 { Weapon::Rocket } else { Weapon::Rifle },
            spawn_count: self.spawn_count,
            vel: glam::Vec3::new(
                f32::from(self.vel[0]) * REMOTE_VEL_STEP_MPS,
                0.0,
                f32::from(self.vel[1]) * REMOTE_VEL_STEP_MPS,
            ),
            step_phase: f32::from(self.gait) * (GAIT_CYCLE_M / REMOTE_GAIT_STEPS),
            twist: f32::from(self.twist.clamp(-REMOTE_TWIST_STEPS, REMOTE_TWIST_STEPS)) / f32::from(REMOTE_TWIST_STEPS)
                * arena_sim::player::MAX_TWIST_RAD,
            landing: f32::from(self.landing.min(REMOTE_LANDING_STEPS)) / f32::from(REMOTE_LANDING_STEPS),
            ..PlayerState::default()
        }
    }

    pub fn is_alive(&self) -> bool {
        self.flags & Self::ALIVE != 0
    }

    /// Largest coordinate either way, grid steps.
    pub(super) fn max_pos_q() -> i64 {
        i64::from(remote_pos_to_q(MAX_COORDINATE_M).unsigned_abs())
    }

    /// Largest pitch either way, steps.
    pub(super) fn max_pitch() -> i16 {
        (1i16 << (REMOTE_PITCH_BITS - 1)) - 1
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
    /// May be a little below zero (see `PlayerState::fire_cooldown_s`).
    pub fire_cooldown: i16,
    pub reload: u16,
    pub spawn_count: u8,
    pub protected: u16,
    /// The hips' twist ([`arena_sim::quant::twist_to_q`]).
    pub twist: i16,
    /// A landing's depth ([`arena_sim::quant::landing_to_q`]).
    pub landing: u8,
    pub armour: u8,
    /// The quad's time left ([`arena_sim::quant::powerup_to_q`]).
    pub quad: u32,
}

impl OwnState {
    pub(super) const ON_GROUND: u8 = 1;
    const CROUCHED: u8 = 2;
    const JUMP_HELD: u8 = 4;
    pub(super) const ALIVE: u8 = 8;
    const FIRE_HELD: u8 = 16;
    const RELOAD_HELD: u8 = 32;
    const ROCKET: u8 = 64;
    pub(super) const FLAG_BITS: u32 = 7;

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
                | flag(s.reload_held, Self::RELOAD_HELD)
                | flag(s.weapon == Weapon::Rocket, Self::ROCKET),
            step_phase: dist_to_q(s.step_phase),
            health: s.health,
            ammo: s.ammo,
            fire_cooldown: signed_timer_to_q(s.fire_cooldown_s),
            reload: timer_to_q(s.reload_s),
            spawn_count: s.spawn_count,
            protected: timer_to_q(s.protected_s),
            twist: twist_to_q(s.twist),
            landing: landing_to_q(s.landing),
            armour: s.armour,
            quad: powerup_to_q(s.quad_s),
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
            weapon: if has(Self::ROCKET) { Weapon::Rocket } else { Weapon::Rifle },
            fire_cooldown_s: q_to_signed_timer(self.fire_cooldown),
            reload_s: q_to_timer(self.reload),
            fire_held: has(Self::FIRE_HELD),
            reload_held: has(Self::RELOAD_HELD),
            spawn_count: self.spawn_count,
            protected_s: q_to_timer(self.protected),
            twist: q_to_twist(self.twist),
            landing: q_to_landing(self.landing),
            armour: self.armour,
            quad_s: q_to_powerup(self.quad),
        }
    }

    /// Largest coordinate either way, grid steps.
    pub(super) fn max_pos_q() -> i64 {
        i64::from(pos_to_q(MAX_COORDINATE_M).unsigned_abs())
    }

    /// Largest velocity component either way, grid steps.
    pub(super) fn max_vel_q() -> i64 {
        i64::from(vel_to_q(MAX_SPEED_MPS).unsigned_abs())
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
    pub others: Others,
    /// The map's items, in the map's order: there or taken (when, by whom).
    /// Everyone sees them alike.
    pub items: Vec<ItemSlot>,
}

/// Everyone else in a frame, in id order: a sorted list, as a map of ids to
/// states. The server builds one per client per snapshot and keeps dozens
/// as baselines, and the codec walks them in order beside one another: one
/// allocation each, and no tree to search or take apart (issue 61).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Others(Vec<(PlayerId, RemoteState)>);

impl Others {
    fn find(&self, id: &PlayerId) -> Result<usize, usize> {
        self.0.binary_search_by_key(id, |(i, _)| *i)
    }

    pub fn get(&self, id: &PlayerId) -> Option<&RemoteState> {
        self.find(id).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, id: &PlayerId) -> Option<&mut RemoteState> {
        self.find(id).ok().map(|i| &mut self.0[i].1)
    }

    pub fn contains_key(&self, id: &PlayerId) -> bool {
        self.find(id).is_ok()
    }

    /// Puts `id`'s state in its place; the one it had, if any.
    pub fn insert(&mut self, id: PlayerId, state: RemoteState) -> Option<RemoteState> {
        match self.find(&id) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, state)),
            Err(i) => {
                self.0.insert(i, (id, state));
                None
            }
        }
    }

    pub fn remove(&mut self, id: &PlayerId) -> Option<RemoteState> {
        self.find(id).ok().map(|i| self.0.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In id order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&PlayerId, &RemoteState)> + ExactSizeIterator {
        self.0.iter().map(|(id, s)| (id, s))
    }

    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&PlayerId, &mut RemoteState)> + ExactSizeIterator {
        self.0.iter_mut().map(|(id, s)| (&*id, s))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &PlayerId> + ExactSizeIterator {
        self.0.iter().map(|(id, _)| id)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &RemoteState> + ExactSizeIterator {
        self.0.iter().map(|(_, s)| s)
    }
}

/// As a map's: in id order, a later state for an id replacing an earlier.
impl FromIterator<(PlayerId, RemoteState)> for Others {
    fn from_iter<I: IntoIterator<Item = (PlayerId, RemoteState)>>(iter: I) -> Self {
        let mut all: Vec<(PlayerId, RemoteState)> = iter.into_iter().collect();
        // Already in id order, each id once (as the server builds each
        // client's): as it is, with no sort and no second list.
        if all.is_sorted_by(|a, b| a.0 < b.0) {
            return Self(all);
        }
        // Stable: of one id's states, the last stays last.
        all.sort_by_key(|(id, _)| *id);
        let mut out: Vec<(PlayerId, RemoteState)> = Vec::with_capacity(all.len());
        for entry in all {
            match out.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => out.push(entry),
            }
        }
        Self(out)
    }
}

impl<const N: usize> From<[(PlayerId, RemoteState); N]> for Others {
    fn from(all: [(PlayerId, RemoteState); N]) -> Self {
        all.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a Others {
    type Item = (&'a PlayerId, &'a RemoteState);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (PlayerId, RemoteState)>,
        fn(&'a (PlayerId, RemoteState)) -> (&'a PlayerId, &'a RemoteState),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(id, s)| (id, s))
    }
}

/// What the snapshot tells the client about its commands and about when it
/// left, for the reconciliation, the clock sync and the server clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Feedback {
    /// The newest of its commands the server has run.
    pub last_cmd_tick: Option<u32>,
    /// The newest of its command ticks the server has received.
    pub newest_cmd_tick: Option<u32>,
    /// How early the command run at this tick arrived, hundredths of a tick.
    pub margin_centiticks: Option<i16>,
    /// How long after its tick's time the server's frame that sent the
    /// snapshot began, 1/256 tick. A server
    /// runs its ticks in frames: at 60 frames a second a 64 Hz snapshot
    /// leaves up to a frame after its tick, by an amount that changes every
    /// frame. Without this a client's estimate of the server's clock (and
    /// so the render time its shots are rewound to) would carry the
    /// server's frame timing.
    pub sent_after_256ths: u16,
}

/// Steps of [`Feedback::sent_after_256ths`] in a tick.
const SENT_AFTER_STEPS_PER_TICK: f64 = 256.0;

impl Feedback {
    /// `sent_after` in ticks, on the wire's grid (at most 256 ticks).
    pub fn sent_after_of(ticks: f64) -> u16 {
        if ticks.is_finite() {
            (ticks * SENT_AFTER_STEPS_PER_TICK).round().clamp(0.0, f64::from(u16::MAX)) as u16
        } else {
            0
        }
    }

    /// How long after its tick the snapshot left, ticks.
    pub fn sent_after_ticks(&self) -> f64 {
        f64::from(self.sent_after_256ths) / SENT_AFTER_STEPS_PER_TICK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::quant::snap_state;

    #[test]
    fn another_players_state_is_on_its_coarser_grid_and_holds_no_secrets() {
        let s = snap_state(&PlayerState {
            pos: glam::Vec3::new(1.2345, 0.5, -7.0),
            yaw: 1.0,
            pitch: -0.4,
            health: 13,
            ammo: 2,
            reload_s: 0.3,
            ..PlayerState::spawned_at(glam::Vec3::ZERO, 0.0)
        });
        let seen = RemoteState::of(&s).to_state();
        assert!(seen.pos.distance(s.pos) <= REMOTE_POS_STEP_M, "{} vs {}", seen.pos, s.pos);
        assert!((seen.yaw - s.yaw).abs() < 0.01 && (seen.pitch - s.pitch).abs() < 0.01);
        assert_eq!((seen.health, seen.ammo, seen.reload_s), (arena_sim::player::MAX_HEALTH, 0, 0.0));
    }
}
