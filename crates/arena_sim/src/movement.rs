//! The one function the server runs for every player and the client for
//! prediction: [`step_player`], a tick of movement (`(state, cmd, world) ->
//! state`), then the weapon, the result snapped to the wire's grids.
//!
//! Classic arena-shooter movement in the Quake tradition: ground acceleration
//! towards the wished velocity with friction, weak air control, gravity and
//! jumping, crouching; collision, sliding along walls, climbing steps and ramps
//! through rapier's kinematic character controller against the static arena.
//!
//! The player's collision shape is an upright cylinder: like the boxes of Quake
//! and Source, its flat bottom stands on the edge of a step instead of rolling
//! off it as a capsule would, which makes stairs climbable with a plain
//! step-up. (Hitboxes for shooting are separate.)

use glam::Vec3;
use rapier3d::control::{CharacterLength, KinematicCharacterController};

use crate::cmd::{Buttons, UserCmd};
use crate::player::{PlayerState, STAND_HEIGHT_M, view_forward};
use crate::quant;
use crate::weapon::{Aim, Shot, WeaponEvents, update_weapon};
use crate::world::{ArenaWorld, player_shape};

/// Top running speed on the ground, metres per second.
pub const MAX_GROUND_SPEED_MPS: f32 = crate::player::RUN_SPEED_MPS;
/// Crouched speed as a fraction of the running speed.
pub const CROUCH_SPEED_FACTOR: f32 = 0.45;
/// Ground acceleration, per second (Quake's `sv_accelerate`): the share of the
/// wished speed gained each second.
pub const GROUND_ACCEL_PER_S: f32 = 10.0;
/// Air acceleration, per second: a little steering in the air, no flying.
pub const AIR_ACCEL_PER_S: f32 = 2.0;
/// Ground friction, per second (Quake's `sv_friction`).
pub const FRICTION_PER_S: f32 = 6.0;
/// Below this speed friction acts as if at this speed, so players stop crisply, m/s.
pub const STOP_SPEED_MPS: f32 = 2.5;
/// Gravity, metres per second squared (arcade: about twice the real thing).
pub const GRAVITY_MPS2: f32 = 20.0;
/// Upward speed of a jump, m/s: a jump peaks at v²/2g ≈ 1.2 m.
pub const JUMP_SPEED_MPS: f32 = 7.0;
/// Fastest fall, m/s.
pub const MAX_FALL_SPEED_MPS: f32 = 40.0;
/// Fastest horizontal speed anything can give a player, m/s.
pub const MAX_HORIZONTAL_SPEED_MPS: f32 = 20.0;
/// Highest ledge a player walks up without jumping, metres.
pub const STEP_HEIGHT_M: f32 = 0.45;
/// Gap the collision sweeps keep between the player and the world, metres.
const SKIN_M: f32 = 0.01;
/// Steepest slope a player can walk up, degrees.
pub const MAX_SLOPE_DEG: f32 = 46.0;
/// Distance walked between two footsteps, metres.
pub const FOOTSTEP_DISTANCE_M: f32 = crate::player::GAIT_CYCLE_M / 2.0;
/// Below this height a player has fallen out of the world, metres.
pub const KILL_PLANE_Y_M: f32 = -30.0;

/// Things that happened during one tick of movement, for effects and sounds.
///
/// The movement code only reports them; whoever runs it decides whether to play
/// them (a client replaying commands during reconciliation must not).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoveEvents {
    pub jumped: bool,
    /// Landed this tick, with the downward speed at impact (m/s).
    pub landed: Option<f32>,
    pub footstep: bool,
    /// Fell below the kill plane; the server puts the player back at a spawn.
    pub fell_out: bool,
    /// A jump pad took hold of the body this tick (not while it already had it).
    pub launched: bool,
    /// Went through a teleporter this tick: the state is at its destination.
    pub teleported: bool,
}

/// Runs one tick of movement: the new state after `cmd` is applied for `dt_s` seconds.
///
/// `cmd` must already be sanitised ([`UserCmd::sanitize`]). The result depends only
/// on the arguments, bit for bit.
pub fn move_player(state: &PlayerState, cmd: &UserCmd, world: &ArenaWorld, dt_s: f32) -> (PlayerState, MoveEvents) {
    let mut s = *state;
    let mut events = MoveEvents::default();
    s.yaw = cmd.yaw;
    s.pitch = cmd.pitch;

    // Crouching is instant; standing up needs room above the head.
    if cmd.held(Buttons::CROUCH) {
        s.crouched = true;
    } else if s.crouched && world.player_fits(s.pos, STAND_HEIGHT_M) {
        s.crouched = false;
    }

    let (sin, cos) = cmd.yaw.sin_cos();
    let forward = Vec3::new(-sin, 0.0, -cos);
    let right = Vec3::new(cos, 0.0, -sin);
    let wish = forward * cmd.forward + right * cmd.right;
    let wish_dir = wish.normalize_or_zero();
    let top_speed = if s.crouched { MAX_GROUND_SPEED_MPS * CROUCH_SPEED_FACTOR } else { MAX_GROUND_SPEED_MPS };
    let wish_speed = top_speed * wish.length().min(1.0);

    let jump = cmd.held(Buttons::JUMP);
    if s.on_ground && jump && !s.jump_held {
        s.vel.y = JUMP_SPEED_MPS;
        s.on_ground = false;
        events.jumped = true;
    }
    s.jump_held = jump;

    if s.on_ground {
        apply_friction(&mut s.vel, dt_s);
        accelerate(&mut s.vel, wish_dir, wish_speed, GROUND_ACCEL_PER_S, dt_s);
        s.vel.y = 0.0;
    } else {
        accelerate(&mut s.vel, wish_dir, wish_speed, AIR_ACCEL_PER_S, dt_s);
        s.vel.y = (s.vel.y - GRAVITY_MPS2 * dt_s).max(-MAX_FALL_SPEED_MPS);
    }
    let horizontal = Vec3::new(s.vel.x, 0.0, s.vel.z);
    if horizontal.length() > MAX_HORIZONTAL_SPEED_MPS {
        let capped = horizontal.normalize() * MAX_HORIZONTAL_SPEED_MPS;
        s.vel.x = capped.x;
        s.vel.z = capped.z;
    }

    let desired = s.vel * dt_s;
    let step = step_slide_move(world, &s, desired, dt_s);
    if !step.translation.is_finite() {
        // Never propagate a numerical failure into the game state.
        s.vel = Vec3::ZERO;
        return (s, events);
    }
    let grounded = step.grounded;
    let step = step.translation;
    s.pos += step;

    // Whatever blocked the movement also takes the velocity into it: sliding
    // along a wall keeps only the sliding part, a ceiling stops a jump.
    let desired_h = Vec3::new(desired.x, 0.0, desired.z);
    let step_h = Vec3::new(step.x, 0.0, step.z);
    if step_h.length() + 1.0e-5 < desired_h.length() {
        s.vel.x = step.x / dt_s;
        s.vel.z = step.z / dt_s;
    }
    if desired.y > 0.0 && step.y < desired.y - 1.0e-5 {
        s.vel.y = (step.y / dt_s).clamp(0.0, s.vel.y);
    } else if desired.y < 0.0 && step.y > desired.y + 1.0e-5 {
        s.vel.y = (step.y / dt_s).clamp(s.vel.y, 0.0);
    }

    let was_on_ground = state.on_ground;
    s.on_ground = grounded && s.vel.y <= 0.0;
    if s.on_ground {
        s.vel.y = 0.0;
        if !was_on_ground {
            events.landed = Some(-state.vel.y.min(0.0));
            s.step_phase = 0.0;
        }
        // The gait goes on in a crouch too (the legs walk), silently.
        let before = s.step_phase;
        s.step_phase = (s.step_phase + step_h.length()).rem_euclid(crate::player::GAIT_CYCLE_M);
        // A tick that walks half a cycle or more (fast, at a low tick rate)
        // passed a footstep whichever way the phase seems to have gone.
        let stepped = step_h.length() >= FOOTSTEP_DISTANCE_M || crate::player::footstep_between(before, s.step_phase);
        events.footstep = stepped && !s.crouched;
    }
    s.landing = crate::player::landing_after(state.landing, events.landed, dt_s);
    // The hips: planted while standing on the ground, following the view otherwise.
    let planted = s.on_ground && s.ground_speed() < crate::player::PLANTED_BELOW_MPS;
    s.twist = crate::player::twist_after(state.twist, crate::cmd::wrap_angle(s.yaw - state.yaw), planted, dt_s);
    touch_triggers(world, state, &mut s, &mut events);
    events.fell_out = s.pos.y < KILL_PLANE_Y_M;
    (s, events)
}

/// The map's triggers, touched where the tick's movement ended (Quake 3
/// touches them after `Pmove`): a teleporter puts the body at its
/// destination (one a tick: a destination is never in another entry, which
/// `MapDef::validate` refuses); a jump pad sets the velocity (Quake's
/// `BG_TouchJumpPad`), in the one function both ends run, so a launch and a
/// teleport are predicted to the bit.
fn touch_triggers(world: &ArenaWorld, before: &PlayerState, s: &mut PlayerState, events: &mut MoveEvents) {
    let map = world.map();
    if let Some(t) = map.teleporter_at(s.pos, s.height()) {
        let yaw = t.yaw();
        let speed = t.exit_speed_mps.unwrap_or_else(|| s.ground_speed());
        let out = view_forward(yaw, 0.0) * speed;
        s.pos = t.dest;
        s.vel = Vec3::new(out.x, 0.0, out.z);
        s.yaw = yaw;
        s.on_ground = false;
        s.twist = 0.0;
        s.landing = 0.0;
        // The explicit reset: nobody draws, blends or rewinds across it.
        s.spawn_count = s.spawn_count.wrapping_add(1);
        events.teleported = true;
        events.landed = None;
        events.footstep = false;
        return;
    }
    if let Some(pad) = map.jump_pad_at(s.pos, s.height()) {
        s.vel = pad.launch;
        s.on_ground = false;
        s.landing = 0.0;
        events.landed = None;
        events.launched = map.jump_pad_at(before.pos, before.height()).is_none() || before.on_ground;
    }
}

/// Where one tick's movement ends, relative to the start.
struct Moved {
    translation: Vec3,
    grounded: bool,
}

/// One sweep of the player's cylinder through the world along `desired`,
/// sliding along what it hits (rapier's character controller).
fn slide_move(world: &ArenaWorld, s: &PlayerState, from: Vec3, desired: Vec3, dt_s: f32, snap: bool) -> Moved {
    let controller = KinematicCharacterController {
        up: Vec3::Y,
        offset: CharacterLength::Absolute(SKIN_M),
        slide: true,
        // Steps are climbed by `step_slide_move` (Quake's way), which is
        // more predictable on stairs than rapier's autostep.
        autostep: None,
        max_slope_climb_angle: MAX_SLOPE_DEG.to_radians(),
        min_slope_slide_angle: MAX_SLOPE_DEG.to_radians(),
        snap_to_ground: snap.then_some(CharacterLength::Absolute(STEP_HEIGHT_M)),
        normal_nudge_factor: 1.0e-4,
    };
    let (shape, pose) = player_shape(from, s.height());
    let moved = controller.move_shape(dt_s, &world.queries(), &shape, &pose, desired, |_| {});
    Moved { translation: moved.translation, grounded: moved.grounded }
}

/// Quake's step-slide move: slide along the world; if that was blocked while
/// walking on the ground, also try stepping up by at most [`STEP_HEIGHT_M`],
/// moving, and stepping back down, and keep whichever got farther.
fn step_slide_move(world: &ArenaWorld, s: &PlayerState, desired: Vec3, dt_s: f32) -> Moved {
    // Keep walking players glued to ramps and stairs on the way down; a player
    // in the air (or jumping off) must not be pulled back.
    let plain = slide_move(world, s, s.pos, desired, dt_s, s.on_ground);
    let horizontal = |v: Vec3| Vec3::new(v.x, 0.0, v.z);
    let wanted = horizontal(desired).length();
    let got = horizontal(plain.translation).length();
    if !s.on_ground || wanted < 1.0e-5 || got + 1.0e-4 >= wanted {
        return plain;
    }
    let up = slide_move(world, s, s.pos, Vec3::Y * STEP_HEIGHT_M, dt_s, false);
    let raised = s.pos + up.translation;
    let across = slide_move(world, s, raised, horizontal(desired), dt_s, false);
    let moved_over = raised + across.translation;
    let down = slide_move(world, s, moved_over, Vec3::NEG_Y * (up.translation.y + SKIN_M * 2.0), dt_s, false);
    let landed = moved_over + down.translation;
    let stepped = landed - s.pos;
    // Only a step that lands on walkable ground and gets farther counts.
    if down.grounded && horizontal(stepped).length() > got + 1.0e-4 {
        Moved { translation: stepped, grounded: true }
    } else {
        plain
    }
}

/// Quake's ground friction: speed drops by `max(speed, stop) * friction * dt`.
fn apply_friction(vel: &mut Vec3, dt_s: f32) {
    let speed = Vec3::new(vel.x, 0.0, vel.z).length();
    if speed < 1.0e-4 {
        vel.x = 0.0;
        vel.z = 0.0;
        return;
    }
    let drop = speed.max(STOP_SPEED_MPS) * FRICTION_PER_S * dt_s;
    let scale = (speed - drop).max(0.0) / speed;
    vel.x *= scale;
    vel.z *= scale;
}

/// Quake's acceleration: add speed along `wish_dir` until the velocity's
/// projection on it reaches `wish_speed`, at most `accel * wish_speed * dt` per tick.
fn accelerate(vel: &mut Vec3, wish_dir: Vec3, wish_speed: f32, accel_per_s: f32, dt_s: f32) {
    let current = vel.dot(wish_dir);
    let add = wish_speed - current;
    if add <= 0.0 {
        return;
    }
    let gained = (accel_per_s * wish_speed * dt_s).min(add);
    *vel += wish_dir * gained;
}

/// Everything that happened to a player in one tick.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TickEvents {
    pub movement: MoveEvents,
    pub weapon: WeaponEvents,
    /// The map's item taken this tick (its index): set by whoever decides
    /// pickups (the server, the client's prediction of its own), never by
    /// [`step_player`], which knows nothing of who else took what.
    pub picked: Option<usize>,
}

impl TickEvents {
    /// Whether anything happened that could make a sound or an effect.
    pub fn any(&self) -> bool {
        let w = &self.weapon;
        self.movement != MoveEvents::default()
            || w.shot.is_some()
            || w.rocket.is_some()
            || w.switched
            || w.reload_started
            || w.reloaded
            || w.dry_fire
            || self.picked.is_some()
    }
}

/// One player, one tick: movement, then the rifle, then the result snapped to
/// the wire's grids. The dead do not move; they only look around. The server
/// runs this for every player and the client for its own (prediction): the
/// one function both call. `before` is the player's state a tick before
/// `state`: a clicked shot leaves the eye as drawn at the click's instant,
/// between `before` and `state`, or between `state` and the state after
/// this tick's movement (see [`PlayerState::drawn_after`]); without that
/// history, pass `state` again.
pub fn step_player(
    before: &PlayerState,
    state: &PlayerState,
    cmd: &UserCmd,
    world: &ArenaWorld,
    dt_s: f32,
) -> (PlayerState, TickEvents) {
    let (mut next, movement) = if state.alive {
        move_player(state, cmd, world, dt_s)
    } else {
        (PlayerState { yaw: cmd.yaw, pitch: cmd.pitch, ..*state }, MoveEvents::default())
    };
    let click = cmd.click.map(|click| {
        let drawn = if click.fraction < 1.0 {
            state.drawn_after(before, click.fraction)
        } else {
            next.drawn_after(state, click.fraction - 1.0)
        };
        let dir = view_forward(click.yaw, click.pitch);
        Aim { shot: Shot { origin: drawn.eye_pos(), dir }, at_s: (click.fraction - 1.0) * dt_s }
    });
    let weapon = update_weapon(&mut next, cmd, dt_s, click);
    // Spawn protection runs out, or ends with the first shot.
    next.protected_s =
        if weapon.shot.is_some() || weapon.rocket.is_some() { 0.0 } else { (next.protected_s - dt_s).max(0.0) };
    // The quad runs out, and the mega health wears off, on both ends alike.
    crate::items::wear_off(&mut next, cmd.tick, dt_s);
    // On the wire's grids, on both sides: what the server sends is exactly
    // what it has, and the client's prediction from it stays exact.
    (quant::snap_state(&next), TickEvents { movement, weapon, picked: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{BlockDef, JumpPadDef, MapDef, RampDef, SpawnPoint, StairsDef, SurfaceKind, TeleporterDef};

    const DT: f32 = 1.0 / 64.0;

    /// A test range: a floor, a wall at x = 10, a 0.3 m step at z = -10, a
    /// 2 m high ledge at z = 10, and a ramp and stairs up to a 3 m platform in the west.
    pub(super) fn test_world() -> ArenaWorld {
        let block = |center: Vec3, size: Vec3| BlockDef { kind: SurfaceKind::Wall, center, size };
        ArenaWorld::new(MapDef {
            name: "test".into(),
            blocks: vec![
                block(Vec3::new(0.0, -0.5, 0.0), Vec3::new(200.0, 1.0, 200.0)),
                block(Vec3::new(10.5, 2.0, 0.0), Vec3::new(1.0, 4.0, 40.0)),
                block(Vec3::new(0.0, 0.15, -12.0), Vec3::new(4.0, 0.3, 4.0)),
                block(Vec3::new(0.0, 1.0, 12.0), Vec3::new(4.0, 2.0, 4.0)),
                block(Vec3::new(-40.0, 1.5, 0.0), Vec3::new(10.0, 3.0, 30.0)),
            ],
            ramps: vec![RampDef { bottom: Vec3::new(-25.0, 0.0, -5.0), top: Vec3::new(-35.0, 3.0, -5.0), width: 4.0 }],
            stairs: vec![StairsDef {
                bottom: Vec3::new(-25.0, 0.0, 5.0),
                top: Vec3::new(-35.0, 3.0, 5.0),
                width: 3.0,
                steps: 8,
            }],
            pillars: vec![],
            spawns: vec![SpawnPoint { pos: Vec3::ZERO, yaw_deg: 0.0 }],
            areas: vec![],
            items: vec![],
            jump_pads: vec![JumpPadDef {
                center: Vec3::new(20.0, 0.1, -20.0),
                size: Vec3::new(2.0, 0.2, 2.0),
                launch: Vec3::new(0.0, 14.0, -10.0),
            }],
            teleporters: vec![TeleporterDef {
                center: Vec3::new(20.0, 1.0, 20.0),
                size: Vec3::new(2.0, 2.0, 2.0),
                dest: Vec3::new(-20.0, 0.0, 40.0),
                yaw_deg: 90.0,
                exit_speed_mps: None,
            }],
        })
    }

    fn cmd(forward: f32, right: f32, yaw: f32, buttons: Buttons) -> UserCmd {
        UserCmd { forward, right, yaw, buttons, ..Default::default() }
    }

    fn run(world: &ArenaWorld, mut s: PlayerState, c: UserCmd, ticks: usize) -> PlayerState {
        for _ in 0..ticks {
            s = move_player(&s, &c, world, DT).0;
        }
        s
    }

    fn standing_at(pos: Vec3) -> PlayerState {
        PlayerState::spawned_at(pos, 0.0)
    }

    #[test]
    fn accelerates_to_running_speed_and_no_faster() {
        let world = test_world();
        let forward = cmd(1.0, 0.0, 0.0, Buttons::default());
        let s = run(&world, standing_at(Vec3::ZERO), forward, 8);
        assert!(s.ground_speed() > 4.0 && s.ground_speed() < MAX_GROUND_SPEED_MPS, "after 1/8 s: {}", s.ground_speed());
        let s = run(&world, s, forward, 56);
        assert!((s.ground_speed() - MAX_GROUND_SPEED_MPS).abs() < 0.05, "after 1 s: {}", s.ground_speed());
        assert!(s.vel.z < 0.0 && s.vel.x.abs() < 1e-3, "yaw 0 runs towards -Z: {:?}", s.vel);
        assert!(s.on_ground && s.pos.y.abs() < 0.02, "stays on the floor: {:?}", s.pos);
    }

    #[test]
    fn diagonal_is_not_faster() {
        let world = test_world();
        let s = run(&world, standing_at(Vec3::ZERO), cmd(1.0, 1.0, 0.0, Buttons::default()), 64);
        assert!(s.ground_speed() <= MAX_GROUND_SPEED_MPS + 0.01, "{}", s.ground_speed());
    }

    #[test]
    fn friction_stops_a_runner() {
        let world = test_world();
        let running = run(&world, standing_at(Vec3::ZERO), cmd(1.0, 0.0, 0.0, Buttons::default()), 64);
        let coasting = run(&world, running, cmd(0.0, 0.0, 0.0, Buttons::default()), 10);
        assert!(coasting.ground_speed() < running.ground_speed() * 0.5, "{}", coasting.ground_speed());
        let stopped = run(&world, coasting, cmd(0.0, 0.0, 0.0, Buttons::default()), 30);
        assert_eq!(stopped.ground_speed(), 0.0);
        let slide = running.pos.distance(stopped.pos);
        assert!(slide > 0.5 && slide < 3.0, "stopping distance {slide}");
    }

    #[test]
    fn gravity_and_jump() {
        let world = test_world();
        let mut s = standing_at(Vec3::ZERO);
        let (next, ev) = move_player(&s, &cmd(0.0, 0.0, 0.0, Buttons::JUMP), &world, DT);
        assert!(ev.jumped && !next.on_ground && next.vel.y > 0.0);
        s = next;
        let mut apex = 0.0f32;
        let mut landed = None;
        for tick in 0..200 {
            // Holding jump must not jump again on landing.
            let (n, ev) = move_player(&s, &cmd(0.0, 0.0, 0.0, Buttons::JUMP), &world, DT);
            s = n;
            apex = apex.max(s.pos.y);
            if let Some(speed) = ev.landed {
                landed = Some((tick, speed));
                break;
            }
        }
        let expected_apex = JUMP_SPEED_MPS * JUMP_SPEED_MPS / (2.0 * GRAVITY_MPS2);
        assert!((apex - expected_apex).abs() < 0.1, "apex {apex} vs {expected_apex}");
        let (tick, speed) = landed.expect("lands");
        assert!((40..50).contains(&tick), "airborne for {tick} ticks");
        assert!(speed > 5.0, "lands at {speed} m/s");
        let s = run(&world, s, cmd(0.0, 0.0, 0.0, Buttons::JUMP), 30);
        assert!(s.on_ground && s.pos.y.abs() < 0.02, "held jump does not bounce: {:?}", s.pos);
        // A fresh press jumps again.
        let s = run(&world, s, cmd(0.0, 0.0, 0.0, Buttons::default()), 1);
        assert!(move_player(&s, &cmd(0.0, 0.0, 0.0, Buttons::JUMP), &world, DT).1.jumped);
    }

    #[test]
    fn falls_from_a_ledge() {
        let world = test_world();
        let mut s = standing_at(Vec3::new(0.0, 3.0, 0.0));
        s.on_ground = false;
        let s = run(&world, s, cmd(0.0, 0.0, 0.0, Buttons::default()), 64);
        assert!(s.on_ground && s.pos.y.abs() < 0.02, "{:?}", s.pos);
    }

    #[test]
    fn walls_stop_and_slide() {
        let world = test_world();
        // Run straight east into the wall at x = 10 (its face at x = 10).
        let east = -std::f32::consts::FRAC_PI_2;
        let s = run(&world, standing_at(Vec3::new(5.0, 0.0, 0.0)), cmd(1.0, 0.0, east, Buttons::default()), 128);
        assert!(s.pos.x < 10.0 - 0.39 && s.pos.x > 10.0 - 0.45, "stops at the wall: {}", s.pos.x);
        assert!(s.vel.x.abs() < 0.2, "no speed into the wall: {:?}", s.vel);
        // Run north-east into it: slides north along it at the sliding part of the speed.
        let north_east = -std::f32::consts::FRAC_PI_4;
        let start = standing_at(Vec3::new(8.0, 0.0, 0.0));
        let s = run(&world, start, cmd(1.0, 0.0, north_east, Buttons::default()), 128);
        assert!(s.pos.x < 10.0 - 0.39, "never inside the wall: {}", s.pos.x);
        assert!(s.pos.z < -5.0, "slid along the wall: {:?}", s.pos);
        assert!(s.vel.z < -3.0 && s.vel.x.abs() < 0.5, "keeps the sliding speed: {:?}", s.vel);
    }

    #[test]
    fn steps_up_a_low_ledge_but_not_a_high_one() {
        let world = test_world();
        // The 0.3 m step lies north (-Z) at z -14..-10.
        let s = run(&world, standing_at(Vec3::new(0.0, 0.0, -6.0)), cmd(1.0, 0.0, 0.0, Buttons::default()), 64);
        assert!((s.pos.y - 0.3).abs() < 0.05, "walked up the 0.3 m step: {:?}", s.pos);
        // The 2 m block lies south (+Z) at z 10..14.
        let south = std::f32::consts::PI;
        let s = run(&world, standing_at(Vec3::new(0.0, 0.0, 6.0)), cmd(1.0, 0.0, south, Buttons::default()), 64);
        assert!(s.pos.y < 0.05 && s.pos.z < 10.0, "blocked by the 2 m block: {:?}", s.pos);
    }

    #[test]
    fn climbs_ramps_and_stairs() {
        let world = test_world();
        let west = std::f32::consts::FRAC_PI_2;
        for (name, z) in [("ramp", -5.0), ("stairs", 5.0)] {
            let s = run(&world, standing_at(Vec3::new(-20.0, 0.0, z)), cmd(1.0, 0.0, west, Buttons::default()), 3 * 64);
            assert!(s.pos.x < -36.0, "{name}: got to the platform: {:?}", s.pos);
            assert!((s.pos.y - 3.0).abs() < 0.05 && s.on_ground, "{name}: on top: {:?}", s.pos);
        }
        // And down the ramp again without flying off.
        let east = -std::f32::consts::FRAC_PI_2;
        let mut s = standing_at(Vec3::new(-37.0, 3.0, -5.0));
        let mut airborne_ticks = 0;
        for _ in 0..(3 * 64) {
            s = move_player(&s, &cmd(1.0, 0.0, east, Buttons::default()), &world, DT).0;
            airborne_ticks += usize::from(!s.on_ground);
        }
        assert!(s.pos.y.abs() < 0.05 && s.pos.x > -22.0, "walked down: {:?}", s.pos);
        assert!(airborne_ticks <= 2, "stayed on the ramp going down, {airborne_ticks} ticks airborne");
    }

    #[test]
    fn crouching_is_slower_and_needs_headroom_to_stand() {
        let world = test_world();
        let s = run(&world, standing_at(Vec3::ZERO), cmd(1.0, 0.0, 0.0, Buttons::CROUCH), 64);
        assert!(s.crouched);
        assert!((s.ground_speed() - MAX_GROUND_SPEED_MPS * CROUCH_SPEED_FACTOR).abs() < 0.05);
        let stood = run(&world, s, cmd(0.0, 0.0, 0.0, Buttons::default()), 1);
        assert!(!stood.crouched);
    }

    #[test]
    fn footsteps_while_running() {
        let world = test_world();
        let mut s = standing_at(Vec3::ZERO);
        let mut steps = 0;
        for _ in 0..128 {
            let (n, ev) = move_player(&s, &cmd(1.0, 0.0, 0.0, Buttons::default()), &world, DT);
            s = n;
            steps += usize::from(ev.footstep);
        }
        // About 12.5 m run (from standing), a footstep each 1.6 m.
        assert!((7..=8).contains(&steps), "{steps} footsteps in 2 s of running");
    }

    #[test]
    fn a_jump_pad_launches_once_and_the_arc_is_the_same_every_time() {
        let world = test_world();
        let east = -std::f32::consts::FRAC_PI_2;
        let fly = || {
            let mut s = standing_at(Vec3::new(17.0, 0.0, -20.0));
            let (mut launches, mut peak, mut trace) = (0, 0.0f32, Vec::new());
            for _ in 0..(3 * 64) {
                let (n, ev) = move_player(&s, &cmd(1.0, 0.0, east, Buttons::default()), &world, DT);
                launches += usize::from(ev.launched);
                peak = peak.max(n.pos.y);
                trace.push(n.pos.to_array().map(f32::to_bits));
                s = n;
            }
            (launches, peak, s, trace)
        };
        let (launches, peak, s, trace) = fly();
        assert_eq!(launches, 1, "one launch, one sound");
        // 14 m/s up at 20 m/s²: about 4.9 m.
        assert!((4.0..5.5).contains(&peak), "peak {peak}");
        assert!(s.pos.z < -25.0 && s.on_ground, "carried north by the pad: {:?}", s.pos);
        assert_eq!(fly().3, trace, "bit for bit");
    }

    #[test]
    fn a_teleporter_moves_the_body_in_one_tick_and_resets_it() {
        let world = test_world();
        let south = std::f32::consts::PI;
        let mut s = standing_at(Vec3::new(20.0, 0.0, 17.0));
        let mut teleported = None;
        for tick in 0..128 {
            let (n, ev) = move_player(&s, &cmd(1.0, 0.0, south, Buttons::default()), &world, DT);
            if ev.teleported {
                teleported = Some((tick, s, n));
                break;
            }
            s = n;
        }
        let (_, before, after) = teleported.expect("walked into it");
        assert_eq!(after.pos, Vec3::new(-20.0, 0.0, 40.0));
        assert_eq!(after.spawn_count, before.spawn_count.wrapping_add(1), "the explicit reset");
        assert!((after.yaw - std::f32::consts::FRAC_PI_2).abs() < 1e-6);
        // Speed kept, along the new yaw (west).
        assert!(
            (after.ground_speed() - before.ground_speed()).abs() < 0.5,
            "{} vs {}",
            after.ground_speed(),
            before.ground_speed()
        );
        assert!(after.vel.x < -1.0 && after.vel.z.abs() < 1e-3, "{:?}", after.vel);
    }

    #[test]
    fn deterministic_to_the_bit() {
        let world = test_world();
        let script: Vec<UserCmd> = (0..600)
            .map(|i| {
                let t = i as f32 / 64.0;
                let mut buttons = Buttons::default();
                buttons.set(Buttons::JUMP, i % 90 < 3);
                buttons.set(Buttons::CROUCH, (200..260).contains(&i));
                cmd((t * 1.3).sin(), (t * 0.7).cos(), t * 0.9, buttons)
            })
            .collect();
        let replay = || {
            let mut s = standing_at(Vec3::new(3.0, 0.0, 2.0));
            let mut trace = Vec::new();
            for c in &script {
                s = move_player(&s, c, &world, DT).0;
                trace.push((s.pos.to_array().map(f32::to_bits), s.vel.to_array().map(f32::to_bits)));
            }
            trace
        };
        assert_eq!(replay(), replay());
        // And an independently built world gives the same result.
        let other = test_world();
        let mut a = standing_at(Vec3::new(3.0, 0.0, 2.0));
        let mut b = a;
        for c in &script {
            a = move_player(&a, c, &world, DT).0;
            b = move_player(&b, c, &other, DT).0;
        }
        assert_eq!(a.pos.to_array().map(f32::to_bits), b.pos.to_array().map(f32::to_bits));
    }
}

#[cfg(test)]
mod step_tests {
    use crate::*;

    fn world() -> ArenaWorld {
        ArenaWorld::new(MapDef::foundry())
    }

    #[test]
    fn a_landing_straightens_in_its_time_and_a_slow_turn_twists_the_hips_at_any_tick_rate() {
        let world = world();
        let spawn = world.map().spawns[0];
        for hz in [10, 64, 128] {
            let dt = tick_dt_s(hz);
            // Jump, come down, and count the ticks the knees stay bent.
            let mut state = PlayerState::spawned_at(spawn.pos, spawn.yaw());
            let jump = UserCmd { yaw: spawn.yaw(), buttons: Buttons::JUMP, ..Default::default() };
            state = step_player(&state, &state, &jump, &world, dt).0;
            let still = UserCmd { yaw: spawn.yaw(), ..Default::default() };
            let (mut bent, mut depth) = (0, None);
            for _ in 0..(3.0 / dt) as usize {
                let (next, events) = step_player(&state, &state, &still, &world, dt);
                if events.movement.landed.is_some() {
                    depth = Some(next.landing);
                }
                bent += usize::from(depth.is_some() && next.landing > 0.0);
                state = next;
            }
            // Eased by a tick's share of LANDING_S from its depth at landing
            // (the grid rounds each tick's share a little: within a tenth).
            let depth = depth.expect("lands");
            assert!(depth > player::LANDING_LEAST, "{hz} Hz: a jump's landing {depth}");
            let expected = (depth * player::LANDING_S / dt).ceil() as usize;
            assert!(bent.abs_diff(expected) <= 1 + expected / 10, "{hz} Hz: bent {bent} ticks, not {expected}");
            assert_eq!(state.landing, 0.0);
            // Standing, a view turning at 10°/s turns the hips not at all:
            // the twist takes the turn up, tick by tick, to its limit.
            let rate = 10f32.to_radians();
            let mut yaw = spawn.yaw();
            for tick in 1..=(2.0 / dt) as u32 {
                yaw += rate * dt;
                let turn = UserCmd { tick, yaw, ..Default::default() };
                state = step_player(&state, &state, &turn, &world, dt).0;
            }
            let turned = crate::cmd::wrap_angle(state.yaw - spawn.yaw());
            assert!((state.twist - turned).abs() < 2e-3, "{hz} Hz: twist {} for a turn of {turned}", state.twist);
            assert!(state.twist > 0.3, "{hz} Hz: {}", state.twist);
        }
    }

    #[test]
    fn spawn_protection_runs_out_with_time() {
        let world = world();
        let dt = tick_dt_s(DEFAULT_TICK_HZ);
        let spawn = world.map().spawns[0];
        let mut state = PlayerState::default().respawned_at(spawn.pos, spawn.yaw());
        assert_eq!(state.protected_s, player::SPAWN_PROTECTION_S);
        let ticks = (player::SPAWN_PROTECTION_S / dt).ceil() as u32;
        for tick in 0..ticks + 1 {
            assert!(state.protected_s > 0.0 || tick >= ticks - 1, "ran out early, at tick {tick}");
            state = step_player(&state, &state, &UserCmd { tick, ..Default::default() }, &world, dt).0;
        }
        assert_eq!(state.protected_s, 0.0);
    }

    #[test]
    fn firing_ends_spawn_protection_at_once() {
        let world = world();
        let dt = tick_dt_s(DEFAULT_TICK_HZ);
        let spawn = world.map().spawns[0];
        let state = PlayerState::default().respawned_at(spawn.pos, spawn.yaw());
        let cmd = UserCmd { tick: 1, buttons: Buttons::FIRE, ..Default::default() };
        let (next, events) = step_player(&state, &state, &cmd, &world, dt);
        assert!(events.weapon.shot.is_some());
        assert_eq!(next.protected_s, 0.0);
        // Reloading does not end it: only firing does.
        let empty = PlayerState { ammo: 0, ..state };
        let reload = UserCmd { tick: 1, buttons: Buttons::RELOAD, ..Default::default() };
        let (next, events) = step_player(&empty, &empty, &reload, &world, dt);
        assert!(events.weapon.reload_started);
        assert!(next.protected_s > 0.0);
    }

    #[test]
    fn a_held_trigger_fires_ten_times_a_second_through_the_grids_at_any_tick_rate() {
        let world = world();
        let spawn = world.map().spawns[0];
        for hz in [20u32, 32, 64, 100, 128] {
            let dt = tick_dt_s(hz);
            let mut state = PlayerState::default().respawned_at(spawn.pos, spawn.yaw());
            let mut shots = 0;
            for tick in 0..2 * hz {
                let cmd = UserCmd { tick, buttons: Buttons::FIRE, ..Default::default() };
                let (next, events) = step_player(&state, &state, &cmd, &world, dt);
                shots += u32::from(events.weapon.shot.is_some());
                state = PlayerState { ammo: player::MAGAZINE, ..next };
            }
            assert_eq!(shots, 20, "two seconds at {hz} Hz");
        }
    }

    #[test]
    fn a_click_fires_from_the_eye_as_drawn_between_the_two_ticks_before() {
        let world = world();
        let dt = tick_dt_s(DEFAULT_TICK_HZ);
        let before = PlayerState::spawned_at(glam::Vec3::new(0.0, 0.0, 10.0), 0.0);
        let state = PlayerState { pos: glam::Vec3::new(0.1, 0.0, 10.0), ..before };
        let click = Click { fraction: 0.25, yaw: 0.5, pitch: -0.1 };
        let cmd = UserCmd { tick: 1, buttons: Buttons::FIRE, yaw: 2.0, click: Some(click), ..Default::default() };
        let shot = step_player(&before, &state, &cmd, &world, dt).1.weapon.shot.expect("fires");
        assert!(shot.origin.distance(glam::Vec3::new(0.025, player::STAND_EYE_M, 10.0)) < 1e-6, "{}", shot.origin);
        assert!(shot.dir.distance(player::view_forward(0.5, -0.1)) < 1e-6, "along the click's view, not the tick's");
        // Across a respawn there is nothing to blend: from where it is now.
        let respawned = PlayerState { spawn_count: 1, ..state };
        let shot = step_player(&before, &respawned, &cmd, &world, dt).1.weapon.shot.expect("fires");
        assert_eq!(shot.origin, respawned.eye_pos());
        // A click during the command's own tick: between now and after its movement.
        let walking = PlayerState { vel: glam::Vec3::new(0.0, 0.0, -4.0), ..state };
        let late = Click { fraction: 1.5, ..click };
        let cmd = UserCmd { forward: 1.0, click: Some(late), ..cmd };
        let (after, events) = step_player(&before, &walking, &cmd, &world, dt);
        let shot = events.weapon.shot.expect("fires");
        let halfway = walking.pos.lerp(after.pos, 0.5) + glam::Vec3::Y * player::STAND_EYE_M;
        assert!(shot.origin.distance(halfway) < 1e-3, "{} vs {halfway}", shot.origin);
    }
}
