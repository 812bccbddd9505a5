//! Fuzz targets of what shots and rockets hit: rocket flight and splash
//! from hostile launches and blasts, poses and hitboxes from any state.

use arbitrary::{Arbitrary, Unstructured};
use arena_protocol::messages::state_is_sane;
use arena_protocol::rocket::{RocketBlast, RocketLaunch};
use arena_sim::rocket::{self, Launch};
use arena_sim::{ArenaWorld, Hitbox, MapDef, PlayerId, PlayerState};
use glam::Vec3;

use super::any::{any_state, f32_any, sane_state};
use crate::target::Target;

/// A rocket fired at eye height down -Z: a valid launch to start from.
pub fn seed_launch() -> Launch {
    Launch { origin: Vec3::new(1.0, 1.6, 20.0), dir: Vec3::NEG_Z, tick: 1000, at_s: -0.004 }
}

/// The arena, built once: rockets are tested against its walls.
fn arena() -> &'static ArenaWorld {
    static WORLD: std::sync::OnceLock<ArenaWorld> = std::sync::OnceLock::new();
    WORLD.get_or_init(|| ArenaWorld::new(MapDef::foundry()))
}

/// A rocket from a launch as a client reads one: its flight, its wall, the
/// tick it gets there, a player in its way; every figure finite.
pub fn fly(launch: &Launch) {
    let dt = 1.0 / 64.0;
    assert!(launch.origin.is_finite() && launch.dir.is_finite() && launch.at_s.is_finite());
    let wall = launch.wall_distance(arena());
    assert!(wall.is_finite() && wall >= 0.0);
    let tick = launch.tick_reaching(wall, dt);
    assert!(arena_sim::tick_diff(tick, launch.tick) >= 0);
    assert!(launch.pos(launch.flown_s(tick, dt)).is_finite());
    let someone = [(PlayerId(1), Hitbox::of(&PlayerState::spawned_at(launch.blast_point(wall), 0.0)))];
    if let Some((_, at)) = rocket::player_hit(launch, PlayerId(0), (0.0, wall), &someone) {
        assert!(at.is_finite() && at <= wall + 1e-3);
    }
}

/// A blast at `point` on `state`: the splash and its kick stay finite and bounded.
pub fn splash_around(point: Vec3, state: &PlayerState) {
    if let Some(hit) = rocket::splash(arena(), point, &Hitbox::of(state), false, true) {
        assert!(hit.kick.is_finite() && hit.kick.length() <= rocket::KNOCKBACK_MPS + 1e-3);
        assert!((0.0..=1.0).contains(&hit.falloff));
    }
    if let Some((kicked, _)) = rocket::own_splash(arena(), point, state) {
        assert!(!state_is_sane(state) || state_is_sane(&kicked));
    }
}

/// Rockets from hostile bytes: launches and blasts packed by anyone, and
/// the shared flight and splash rules on any launch and any state (a
/// client's own rocket comes from its own, sanitised, command).
pub struct Rockets;

impl Target for Rockets {
    fn name(&self) -> &'static str {
        "rockets"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let launch_bytes: [u8; 16] = <[u8; 16]>::arbitrary(&mut u).unwrap_or([0; 16]);
        let blast_bytes: [u8; 12] = <[u8; 12]>::arbitrary(&mut u).unwrap_or([0; 12]);
        let near = u32::arbitrary(&mut u).unwrap_or(0);
        let launch = arena_protocol::decode::<RocketLaunch>(&launch_bytes).map(|l| l.read().launch(near, 1.0 / 64.0));
        if let Ok(launch) = launch {
            fly(&launch);
        }
        if let Ok(blast) = arena_protocol::decode::<RocketBlast>(&blast_bytes) {
            let state = sane_state(&mut u);
            splash_around(blast.read().point, &state);
        }
        // A launch from a command: the eye of a sane state along any view.
        let state = sane_state(&mut u);
        let dir = arena_sim::player::view_forward(f32_any(&mut u), f32_any(&mut u));
        if dir.is_finite() {
            let at_s = f32_any(&mut u);
            let at_s = if at_s.is_finite() { at_s.clamp(-1.0 / 64.0, 1.0 / 64.0) } else { 0.0 };
            fly(&Launch { origin: state.eye_pos(), dir, tick: near, at_s });
        }
        let point = Vec3::new(f32_any(&mut u), f32_any(&mut u), f32_any(&mut u));
        splash_around(point, &state);
    }
}

/// Poses and hitboxes from any state: a state through the wire's grids for
/// others gives the same bits on a second trip (so the server and a client
/// pose it alike) and a finite pose; hitboxes with any fields (a hostile
/// server's shot result), their blends and rays never panic.
pub struct Poses;

impl Target for Poses {
    fn name(&self) -> &'static str {
        "poses"
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::snapshot::RemoteState;
        let mut u = Unstructured::new(input);
        let (a, b) = (any_state(&mut u), any_state(&mut u));
        let t = f32_any(&mut u);
        let seen = RemoteState::of(&a).to_state();
        assert_eq!(RemoteState::of(&seen), RemoteState::of(&a), "the wire's grids are stable");
        let parts = Hitbox::of(&seen).parts();
        assert!(parts.iter().all(|c| c.a.is_finite() && c.b.is_finite()), "{seen:?}");
        let blended = Hitbox::of(&a).lerp(&Hitbox::of(&b), t);
        let origin = Vec3::new(f32_any(&mut u), f32_any(&mut u), f32_any(&mut u));
        let dir = Vec3::new(f32_any(&mut u), f32_any(&mut u), f32_any(&mut u)).normalize_or_zero();
        for hitbox in [Hitbox::of(&seen), blended] {
            if let Some((d, _)) = hitbox.ray_part(origin, dir, arena_sim::weapon::RANGE_M) {
                assert!(d <= arena_sim::weapon::RANGE_M, "{d}");
            }
            let _ = hitbox.nearest_point(origin);
        }
    }
}
