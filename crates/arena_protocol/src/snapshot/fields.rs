//! The field tables, as Quake 3's `netField_t` lists: every field of the
//! two states a snapshot carries (the owner's and everyone else's), in wire
//! order, with its width when sent whole, how a change to it travels in a
//! delta, and whether a delta carries it on at the rate it was moving. One
//! table per state; one writer and one reader for both (`codec.rs`) and one
//! carry rule for both (`baseline.rs`) read them, so the two ends cannot
//! disagree about a field.

use super::state::{
    OwnState, REMOTE_GAIT_BITS, REMOTE_LANDING_BITS, REMOTE_LANDING_STEPS, REMOTE_PITCH_BITS, REMOTE_TWIST_BITS,
    REMOTE_TWIST_STEPS, REMOTE_VEL_BITS, REMOTE_VEL_MAX_Q, REMOTE_YAW_BITS, RemoteState,
};

/// Bits of an absolute position coordinate: ±32 km on the owner's grid.
const POS_BITS: u32 = 26;
/// The owner's twist, yaw steps, whole (±8344 fits 15 bits).
const TWIST_BITS: u32 = 15;
/// A velocity component, grid steps (1/256 m/s).
const VEL_BITS: u32 = 20;
/// The quad's time on the timer grid: up to 60 s in 1/4096 s.
const QUAD_BITS: u32 = 18;

/// Most fields a state has.
pub(super) const MAX_FIELDS: usize = 20;
/// A state's fields as numbers, in table order (the rest zero).
pub(super) type Values = [i32; MAX_FIELDS];

/// How one field travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Field {
    pub name: &'static str,
    /// Width when sent whole, bits.
    pub bits: u32,
    /// Two's complement when sent whole.
    pub signed: bool,
    pub delta: Delta,
    pub motion: Motion,
}

/// How a changed field travels in a delta (as a number the model codes:
/// `model.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Delta {
    /// Its difference from the expected value.
    Difference,
    /// An angle of [`Field::bits`] bits: its difference the short way round.
    Turn,
}

/// What a delta expects of a field, given how it changed between the two
/// acknowledged snapshots before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Motion {
    /// The same as in the baseline.
    Held,
    /// Carried on at the rate it changed (within the world's bounds).
    Moves,
    /// Carried on at the rate it turned, round the circle.
    Turns,
}

const fn field(name: &'static str, bits: u32, signed: bool, delta: Delta, motion: Motion) -> Field {
    Field { name, bits, signed, delta, motion }
}

/// A state that travels field by field.
pub(super) trait Fields: Copy + Sized {
    /// Its fields, in wire order.
    const TABLE: &'static [Field];
    /// The field of flags, and the flag that says the player is alive.
    const ALIVE: (usize, i32);
    /// The spawn counter's field: a respawn changes it.
    const LIFE: usize;
    /// The flag (in the field of flags) that says the player stands on the
    /// ground, and the height's field and its grid steps per metre: a
    /// player in the air is expected to fall.
    const ON_GROUND: i32;
    const HEIGHT: usize = 1;
    const STEPS_PER_M: i64;
    fn values(&self) -> Values;
    /// The state from untrusted values: `None` if any is out of its range.
    fn from_values(v: &Values) -> Option<Self>;
    /// Largest value a [`Motion::Moves`] field may be carried to, either way.
    fn move_limit() -> i64;
}

impl Fields for RemoteState {
    const TABLE: &'static [Field] = &[
        field("pos.x", POS_BITS, true, Delta::Difference, Motion::Moves),
        field("pos.y", POS_BITS, true, Delta::Difference, Motion::Moves),
        field("pos.z", POS_BITS, true, Delta::Difference, Motion::Moves),
        field("yaw", REMOTE_YAW_BITS, false, Delta::Turn, Motion::Turns),
        field("pitch", REMOTE_PITCH_BITS, true, Delta::Difference, Motion::Held),
        field("flags", RemoteState::FLAG_BITS, false, Delta::Difference, Motion::Held),
        field("spawn_count", 8, false, Delta::Difference, Motion::Held),
        field("vel.x", REMOTE_VEL_BITS, true, Delta::Difference, Motion::Held),
        field("vel.z", REMOTE_VEL_BITS, true, Delta::Difference, Motion::Held),
        field("gait", REMOTE_GAIT_BITS, false, Delta::Turn, Motion::Turns),
        field("twist", REMOTE_TWIST_BITS, true, Delta::Difference, Motion::Held),
        field("landing", REMOTE_LANDING_BITS, false, Delta::Difference, Motion::Held),
    ];
    const ALIVE: (usize, i32) = (5, RemoteState::ALIVE as i32);
    const LIFE: usize = 6;
    const ON_GROUND: i32 = RemoteState::ON_GROUND as i32;
    const STEPS_PER_M: i64 = 64;

    fn values(&self) -> Values {
        let mut v = [0; MAX_FIELDS];
        v[..12].copy_from_slice(&[
            self.pos[0],
            self.pos[1],
            self.pos[2],
            i32::from(self.yaw),
            i32::from(self.pitch),
            i32::from(self.flags),
            i32::from(self.spawn_count),
            i32::from(self.vel[0]),
            i32::from(self.vel[1]),
            i32::from(self.gait),
            i32::from(self.twist),
            i32::from(self.landing),
        ]);
        v
    }

    fn from_values(v: &Values) -> Option<Self> {
        let max = Self::max_pos_q();
        if v[..3].iter().any(|p| i64::from(*p).abs() > max) {
            return None;
        }
        let pitch = i16::try_from(v[4]).ok()?;
        let vel = |q: i32| i8::try_from(q).ok().map(|q| q.clamp(-REMOTE_VEL_MAX_Q, REMOTE_VEL_MAX_Q));
        Some(Self {
            pos: [v[0], v[1], v[2]],
            yaw: (u16::try_from(v[3]).ok()?) % (1 << REMOTE_YAW_BITS),
            pitch: pitch.clamp(-Self::max_pitch(), Self::max_pitch()),
            flags: u8::try_from(v[5]).ok()?,
            spawn_count: u8::try_from(v[6]).ok()?,
            vel: [vel(v[7])?, vel(v[8])?],
            gait: (u8::try_from(v[9]).ok()?) % (1 << REMOTE_GAIT_BITS),
            twist: i8::try_from(v[10]).ok()?.clamp(-REMOTE_TWIST_STEPS, REMOTE_TWIST_STEPS),
            landing: u8::try_from(v[11]).ok()?.min(REMOTE_LANDING_STEPS),
        })
    }

    fn move_limit() -> i64 {
        Self::max_pos_q()
    }
}

impl Fields for OwnState {
    const TABLE: &'static [Field] = &[
        field("pos.x", POS_BITS, true, Delta::Difference, Motion::Moves),
        field("pos.y", POS_BITS, true, Delta::Difference, Motion::Moves),
        field("pos.z", POS_BITS, true, Delta::Difference, Motion::Moves),
        field("vel.x", VEL_BITS, true, Delta::Difference, Motion::Held),
        field("vel.y", VEL_BITS, true, Delta::Difference, Motion::Held),
        field("vel.z", VEL_BITS, true, Delta::Difference, Motion::Held),
        field("yaw", 16, false, Delta::Turn, Motion::Turns),
        field("pitch", 16, true, Delta::Difference, Motion::Held),
        field("flags", OwnState::FLAG_BITS, false, Delta::Difference, Motion::Held),
        field("step_phase", 16, false, Delta::Difference, Motion::Held),
        field("health", 8, false, Delta::Difference, Motion::Held),
        field("ammo", 8, false, Delta::Difference, Motion::Held),
        field("fire_cooldown", 16, true, Delta::Difference, Motion::Held),
        field("reload", 16, false, Delta::Difference, Motion::Held),
        field("spawn_count", 8, false, Delta::Difference, Motion::Held),
        field("protected", 16, false, Delta::Difference, Motion::Held),
        field("twist", TWIST_BITS, true, Delta::Difference, Motion::Held),
        field("landing", 8, false, Delta::Difference, Motion::Held),
        field("armour", 8, false, Delta::Difference, Motion::Held),
        field("quad", QUAD_BITS, false, Delta::Difference, Motion::Held),
    ];
    const ALIVE: (usize, i32) = (8, OwnState::ALIVE as i32);
    const LIFE: usize = 14;
    const ON_GROUND: i32 = OwnState::ON_GROUND as i32;
    const STEPS_PER_M: i64 = 512;

    fn values(&self) -> Values {
        [
            self.pos[0],
            self.pos[1],
            self.pos[2],
            self.vel[0],
            self.vel[1],
            self.vel[2],
            i32::from(self.yaw),
            i32::from(self.pitch),
            i32::from(self.flags),
            i32::from(self.step_phase),
            i32::from(self.health),
            i32::from(self.ammo),
            i32::from(self.fire_cooldown),
            i32::from(self.reload),
            i32::from(self.spawn_count),
            i32::from(self.protected),
            i32::from(self.twist),
            i32::from(self.landing),
            i32::from(self.armour),
            i32::try_from(self.quad).unwrap_or(i32::MAX),
        ]
    }

    fn from_values(v: &Values) -> Option<Self> {
        let within = |values: &[i32], max: i64| values.iter().all(|x| i64::from(*x).abs() <= max);
        if !within(&v[..3], Self::max_pos_q()) || !within(&v[3..6], Self::max_vel_q()) {
            return None;
        }
        let u16_of = |x: i32| u16::try_from(x).ok();
        let u8_of = |x: i32| u8::try_from(x).ok();
        Some(Self {
            pos: [v[0], v[1], v[2]],
            vel: [v[3], v[4], v[5]],
            yaw: u16_of(v[6])?,
            pitch: i16::try_from(v[7]).ok()?.clamp(-i16::MAX, i16::MAX),
            flags: u8_of(v[8])?,
            step_phase: u16_of(v[9])?,
            health: u8_of(v[10])?,
            ammo: u8_of(v[11])?,
            fire_cooldown: i16::try_from(v[12]).ok()?,
            reload: u16_of(v[13])?,
            spawn_count: u8_of(v[14])?,
            protected: u16_of(v[15])?,
            twist: arena_sim::quant::twist_to_q(arena_sim::quant::q_to_twist(i16::try_from(v[16]).ok()?)),
            landing: u8::try_from(v[17]).ok()?,
            armour: u8::try_from(v[18]).ok()?.min(arena_sim::items::MAX_ARMOUR),
            quad: arena_sim::quant::powerup_to_q(arena_sim::quant::q_to_powerup(u32::try_from(v[19]).ok()?)),
        })
    }

    fn move_limit() -> i64 {
        Self::max_pos_q()
    }
}

/// `new - old` the short way round an angle of `bits` bits.
pub(super) fn turn(new: i32, old: i32, bits: u32) -> i32 {
    let span = 1i64 << bits;
    ((i64::from(new) - i64::from(old) + span / 2).rem_euclid(span) - span / 2) as i32
}

/// `old` turned by `by`, round an angle of `bits` bits.
pub(super) fn turned(old: i32, by: i64, bits: u32) -> i32 {
    (i64::from(old) + by).rem_euclid(1i64 << bits) as i32
}

/// One row of a table as the layout block over the encoder shows it.
#[cfg(test)]
pub(super) fn describe(field: &Field) -> String {
    let delta = match field.delta {
        Delta::Difference => "difference",
        Delta::Turn => "turn",
    };
    let motion = match field.motion {
        Motion::Held => "held",
        Motion::Moves => "moves",
        Motion::Turns => "turns",
    };
    let whole = format!("{}{}", if field.signed { "s" } else { "u" }, field.bits);
    format!("{:<14}{:<6}{:<12}{motion}", field.name, whole, delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_consistent() {
        for table in [RemoteState::TABLE, OwnState::TABLE] {
            assert!(table.len() <= MAX_FIELDS);
            for f in table {
                assert!((1..=32).contains(&f.bits), "{}", f.name);
            }
        }
        // Only positions move, and only yaw (and another player's gait) turns.
        for table in [RemoteState::TABLE, OwnState::TABLE] {
            for f in table {
                let expected = match f.name {
                    "pos.x" | "pos.y" | "pos.z" => Motion::Moves,
                    "yaw" | "gait" => Motion::Turns,
                    _ => Motion::Held,
                };
                assert_eq!(f.motion, expected, "{}", f.name);
                assert_eq!(matches!(f.delta, Delta::Turn), f.motion == Motion::Turns, "{}", f.name);
            }
        }
    }

    /// The alive flag and the spawn counter are where each table says.
    fn life_fields<S: Fields>(alive: S, dead: S, name: &str) {
        let (flags, bit) = S::ALIVE;
        assert_eq!(S::TABLE[flags].name, "flags", "{name}");
        assert_eq!(S::TABLE[S::LIFE].name, "spawn_count", "{name}");
        assert_ne!(alive.values()[flags] & bit, 0, "{name}");
        assert_eq!(dead.values()[flags] & bit, 0, "{name}");
    }

    #[test]
    fn the_life_of_a_state_is_read_from_its_table() {
        let alive = arena_sim::PlayerState::spawned_at(glam::Vec3::ZERO, 0.0);
        let dead = arena_sim::PlayerState { alive: false, ..alive };
        life_fields(RemoteState::of(&alive), RemoteState::of(&dead), "remote");
        life_fields(OwnState::of(&alive), OwnState::of(&dead), "own");
    }

    #[test]
    fn turns_go_the_short_way_round() {
        assert_eq!(turn(1, 1023, 10), 2);
        assert_eq!(turn(1023, 1, 10), -2);
        assert_eq!(turn(512, 0, 10), -512);
        assert_eq!(turn(0, 65535, 16), 1);
        assert_eq!(turned(1023, 2, 10), 1);
        assert_eq!(turned(0, -1, 16), 65535);
        // The owner's yaw the way the old code did it: u16 wrapping.
        for (new, old) in [(0u16, 40000u16), (65535, 0), (123, 32891), (32768, 0)] {
            assert_eq!(turn(i32::from(new), i32::from(old), 16), i32::from(new.wrapping_sub(old) as i16));
        }
    }

    #[test]
    fn values_round_trip_and_out_of_range_values_are_refused() {
        let remote = RemoteState {
            pos: [10, -20, 30],
            yaw: 500,
            pitch: -100,
            flags: 5,
            spawn_count: 9,
            vel: [-7, 12],
            gait: 41,
            twist: -30,
            landing: 9,
        };
        assert_eq!(RemoteState::from_values(&remote.values()), Some(remote));
        let own = OwnState {
            pos: [1, 2, 3],
            vel: [-4, 5, -6],
            yaw: 65000,
            pitch: -32000,
            flags: 63,
            step_phase: 7,
            health: 100,
            ammo: 30,
            fire_cooldown: 8,
            reload: 9,
            spawn_count: 255,
            protected: 10,
            twist: 11,
            landing: 3,
            armour: 150,
            quad: 4096 * 20,
        };
        assert_eq!(OwnState::from_values(&own.values()), Some(own));
        let mut far = own.values();
        far[0] = i32::MAX;
        assert_eq!(OwnState::from_values(&far), None);
        let mut health = own.values();
        health[10] = 256;
        assert_eq!(OwnState::from_values(&health), None);
        let mut pitch = remote.values();
        pitch[4] = 40_000;
        assert_eq!(RemoteState::from_values(&pitch), None);
        // A pitch past the coarse grid's limit is held at it.
        pitch[4] = 1000;
        assert_eq!(RemoteState::from_values(&pitch).map(|s| s.pitch), Some(RemoteState::max_pitch()));
    }
}
