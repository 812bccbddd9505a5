//! Shot effects: for our own shots (predicted, played the first time their
//! tick is predicted, never on replay) a muzzle flash and a tracer from the
//! rifle to where the shot stops; for other players' shots a tracer from their
//! rifle; a mark where a shot struck a wall; a puff of sparks where a shot
//! struck a player (ours once the server confirms it); a burst of debris in
//! the victim's colour where a player died.

use arena_client::{
    ClientWorld, Drawn, DrawnDied, HitConfirmed, HitPredicted, LocalPlayer, NetPlayer, PredictedEvents, RemoteShot,
};
use arena_sim::rng::SplitMix64;
use arena_sim::weapon::RANGE_M;
use arena_sim::{HitZone, Hitbox, PlayerId};
use bevy::prelude::*;

use crate::camera::MainCamera;
use crate::looks::glow;
use crate::players::PlayerLooks;
use crate::view_model::{Muzzle, ViewModel};
use crate::vocabulary::ViewSet;

/// How long a tracer is seen, seconds.
const TRACER_S: f32 = 0.09;
/// How long a muzzle flash is seen, seconds.
const FLASH_S: f32 = 0.05;
/// How long an impact mark stays, seconds.
const IMPACT_S: f32 = 6.0;
/// Thickness of a tracer, metres.
const TRACER_WIDTH_M: f32 = 0.025;
/// Sparks in a hit puff, their speed (m/s), size (m) and life (s).
const PUFF_PARTS: usize = 7;
const PUFF_SPEED_MPS: f32 = 3.0;
const PUFF_SIZE_M: f32 = 0.06;
const PUFF_S: f32 = 0.35;
/// Pieces in a death burst, their speed (m/s), size (m) and life (s).
const DEATH_PARTS: usize = 22;
const DEATH_SPEED_MPS: f32 = 5.5;
const DEATH_SIZE_M: f32 = 0.16;
const DEATH_S: f32 = 1.1;
/// Pull on debris, m/s² (the game's own gravity, for the same feel).
const DEBRIS_GRAVITY_MPS2: f32 = arena_sim::movement::GRAVITY_MPS2;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, load_assets).add_systems(
        Update,
        (own_shots, remote_shots, hit_puffs, death_bursts, fly, fade).chain().in_set(ViewSet::Overlay),
    );
}

#[derive(Resource)]
struct EffectAssets {
    unit_cube: Handle<Mesh>,
    flash_mesh: Handle<Mesh>,
    tracer: Handle<StandardMaterial>,
    flash: Handle<StandardMaterial>,
    impact: Handle<StandardMaterial>,
    spark: Handle<StandardMaterial>,
}

/// Randomness for debris directions (looks only; never the simulation's).
#[derive(Resource)]
struct EffectRng(SplitMix64);

/// A piece of debris in flight: falls under gravity.
#[derive(Component)]
struct Debris {
    vel: Vec3,
}

/// Shrinks to nothing over its life, then goes.
#[derive(Component)]
struct Fade {
    age_s: f32,
    life_s: f32,
    scale: Vec3,
    /// Shrink along z too (debris), not only across (tracers, marks).
    all_axes: bool,
}

fn load_assets(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.insert_resource(EffectAssets {
        unit_cube: meshes.add(Cuboid::new(1.0, 1.0, 1.0)),
        flash_mesh: meshes.add(Sphere::new(0.06).mesh().ico(2).unwrap_or_else(|_| Sphere::new(0.06).into())),
        tracer: materials.add(glow(1.0, 0.85, 0.45, 6.0)),
        flash: materials.add(glow(1.0, 0.75, 0.3, 12.0)),
        impact: materials.add(StandardMaterial {
            base_color: Color::srgb(0.05, 0.05, 0.05),
            perceptual_roughness: 1.0,
            ..default()
        }),
        spark: materials.add(glow(1.0, 0.55, 0.25, 8.0)),
    });
    commands.insert_resource(EffectRng(SplitMix64::new(0x5eed)));
}

/// Pieces flying out from `at` in random directions, biased upwards.
fn burst(
    commands: &mut Commands,
    assets: &EffectAssets,
    rng: &mut SplitMix64,
    at: Vec3,
    material: &Handle<StandardMaterial>,
    (count, speed_mps, size_m, life_s): (usize, f32, f32, f32),
) {
    for _ in 0..count {
        let dir = Vec3::new(rng.range(-1.0, 1.0), rng.range(-0.3, 1.0), rng.range(-1.0, 1.0)).normalize_or(Vec3::Y);
        let scale = Vec3::splat(size_m * rng.range(0.6, 1.2));
        commands.spawn((
            Mesh3d(assets.unit_cube.clone()),
            MeshMaterial3d(material.clone()),
            Debris { vel: dir * speed_mps * rng.range(0.5, 1.0) },
            crate::vocabulary::live_layer(),
            Fade { age_s: 0.0, life_s: life_s * rng.range(0.7, 1.0), scale, all_axes: true },
            Transform::from_translation(at)
                .with_rotation(Quat::from_euler(EulerRot::XYZ, rng.range(0.0, 3.0), rng.range(0.0, 3.0), 0.0))
                .with_scale(scale),
        ));
    }
}

/// A thin box from `from` to `to`.
fn tracer_transform(from: Vec3, to: Vec3) -> Option<Transform> {
    let length = from.distance(to);
    (length > 0.05).then(|| {
        Transform::from_translation((from + to) * 0.5)
            .looking_at(to, if (to - from).normalize().y.abs() > 0.99 { Vec3::X } else { Vec3::Y })
            .with_scale(Vec3::new(TRACER_WIDTH_M, TRACER_WIDTH_M, length))
    })
}

fn spawn_tracer(commands: &mut Commands, assets: &EffectAssets, from: Vec3, to: Vec3) {
    if let Some(transform) = tracer_transform(from, to) {
        commands.spawn((
            Mesh3d(assets.unit_cube.clone()),
            MeshMaterial3d(assets.tracer.clone()),
            Fade { age_s: 0.0, life_s: TRACER_S, scale: transform.scale, all_axes: false },
            crate::vocabulary::live_layer(),
            transform,
        ));
    }
}

fn spawn_impact(commands: &mut Commands, assets: &EffectAssets, at: Vec3, facing: Vec3) {
    let scale = Vec3::new(0.09, 0.09, 0.01);
    commands.spawn((
        Mesh3d(assets.unit_cube.clone()),
        MeshMaterial3d(assets.impact.clone()),
        Fade { age_s: 0.0, life_s: IMPACT_S, scale, all_axes: false },
        Transform::from_translation(at - facing * 0.004).looking_to(facing, Vec3::Y).with_scale(scale),
    ));
}

/// The muzzle's position this frame. Global transforms are last frame's
/// until propagation, and at a few frames a second the view turns a long way
/// in between: compose the current local transforms instead.
fn muzzle_now(
    camera: &Query<&Transform, With<MainCamera>>,
    rifle: &Query<&Transform, (With<ViewModel>, Without<MainCamera>)>,
    muzzle: &Query<&Transform, (With<Muzzle>, Without<ViewModel>, Without<MainCamera>)>,
) -> Option<Vec3> {
    let (camera, rifle, muzzle) = (camera.single().ok()?, rifle.single().ok()?, muzzle.single().ok()?);
    Some(camera.mul_transform(*rifle).transform_point(muzzle.translation))
}

/// Our shots, the first time their tick is predicted.
#[allow(clippy::too_many_arguments)]
fn own_shots(
    mut events: MessageReader<PredictedEvents>,
    assets: Option<Res<EffectAssets>>,
    world: Res<ClientWorld>,
    camera: Query<&Transform, With<MainCamera>>,
    rifle: Query<&Transform, (With<ViewModel>, Without<MainCamera>)>,
    muzzle: Query<&Transform, (With<Muzzle>, Without<ViewModel>, Without<MainCamera>)>,
    others: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    for event in events.read() {
        let Some(shot) = event.events.weapon.shot else { continue };
        // Where it stops, as far as we can tell: a wall, or a player as drawn.
        let drawn: Vec<(PlayerId, Hitbox)> = others.iter().map(|(p, d)| (p.id, Hitbox::of(&d.0))).collect();
        let (player, end) = world.first_hit(shot, &drawn);
        let muzzle_at = muzzle_now(&camera, &rifle, &muzzle);
        spawn_tracer(&mut commands, &assets, muzzle_at.unwrap_or(shot.origin), end);
        if let Some(at) = muzzle_at {
            // A small flash, stretched along the shot.
            let scale = Vec3::new(0.6, 0.6, 1.4);
            commands.spawn((
                Mesh3d(assets.flash_mesh.clone()),
                MeshMaterial3d(assets.flash.clone()),
                Fade { age_s: 0.0, life_s: FLASH_S, scale, all_axes: false },
                Transform::from_translation(at).looking_to(shot.dir, Vec3::Y).with_scale(scale),
                PointLight { intensity: 40_000.0, range: 6.0, color: Color::srgb(1.0, 0.8, 0.5), ..default() },
            ));
        }
        if player.is_none() && end.distance(shot.origin) < RANGE_M - 0.01 {
            spawn_impact(&mut commands, &assets, end, shot.dir);
        }
    }
}

/// Other players' shots, as the server reports them.
fn remote_shots(
    mut shots: MessageReader<RemoteShot>,
    assets: Option<Res<EffectAssets>>,
    mut rng: ResMut<EffectRng>,
    world: Res<ClientWorld>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    for shot in shots.read() {
        let dir = (shot.to - shot.from).normalize_or_zero();
        // From the shooter's rifle: a little below and to the right of the eye.
        let right = dir.cross(Vec3::Y).normalize_or_zero();
        let start = shot.from + right * 0.35 - Vec3::Y * 0.35 + dir * 0.6;
        spawn_tracer(&mut commands, &assets, start, shot.to);
        let length = shot.from.distance(shot.to);
        if world.cast_ray(shot.from, dir, length + 0.05).is_some_and(|t| (t - length).abs() < 0.05) {
            spawn_impact(&mut commands, &assets, shot.to, dir);
        } else if length < RANGE_M - 0.1 {
            // Stopped short of any wall: it struck a player.
            let puff = (PUFF_PARTS, PUFF_SPEED_MPS, PUFF_SIZE_M, PUFF_S);
            burst(&mut commands, &assets, &mut rng.0, shot.to - dir * 0.1, &assets.spark, puff);
        }
    }
}

/// Sparks on the player we hit: where the shot met the body as drawn, the
/// moment the hit is foreseen; for a hit the server found that was not
/// foreseen, at the head or the body as we draw them, once it says so.
fn hit_puffs(
    mut foreseen: MessageReader<HitPredicted>,
    mut hits: MessageReader<HitConfirmed>,
    assets: Option<Res<EffectAssets>>,
    mut rng: ResMut<EffectRng>,
    players: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    let puff = (PUFF_PARTS, PUFF_SPEED_MPS, PUFF_SIZE_M, PUFF_S);
    for hit in foreseen.read() {
        burst(&mut commands, &assets, &mut rng.0, hit.hit.at, &assets.spark, puff);
    }
    for hit in hits.read().filter(|h| !h.predicted) {
        let Some((_, drawn)) = players.iter().find(|(p, _)| p.id == hit.victim) else { continue };
        let hitbox = Hitbox::of(&drawn.0);
        let at = if hit.zone == HitZone::Head { hitbox.head_center() } else { hitbox.body_center() };
        burst(&mut commands, &assets, &mut rng.0, at, &assets.spark, puff);
    }
}

/// A burst of the victim's colour where another player dies, the moment its
/// drawn body does (interpolated: a little after the server's kill).
fn death_bursts(
    assets: Option<Res<EffectAssets>>,
    mut rng: ResMut<EffectRng>,
    mut deaths: MessageReader<DrawnDied>,
    mut looks: ResMut<PlayerLooks>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    for death in deaths.read().filter(|d| !d.local) {
        let color = looks.colour(death.id);
        let material = looks.colours(death.id, &mut materials).burst;
        let at = Hitbox::of(&death.state).body_center();
        let parts = (DEATH_PARTS, DEATH_SPEED_MPS, DEATH_SIZE_M, DEATH_S);
        burst(&mut commands, &assets, &mut rng.0, at, &material, parts);
        commands.spawn((
            Mesh3d(assets.flash_mesh.clone()),
            MeshMaterial3d(assets.spark.clone()),
            Fade { age_s: 0.0, life_s: 0.15, scale: Vec3::splat(5.0), all_axes: true },
            Transform::from_translation(at).with_scale(Vec3::splat(5.0)),
            PointLight { intensity: 200_000.0, range: 10.0, color: color.lighter(0.2), ..default() },
        ));
    }
}

/// Debris flies and falls; it stops on the floor.
fn fly(time: Res<Time>, mut debris: Query<(&mut Debris, &mut Transform)>) {
    let dt = time.delta_secs();
    for (mut piece, mut transform) in &mut debris {
        piece.vel.y -= DEBRIS_GRAVITY_MPS2 * dt;
        transform.translation += piece.vel * dt;
        if transform.translation.y < 0.02 {
            transform.translation.y = 0.02;
            piece.vel = Vec3::ZERO;
        }
    }
}

fn fade(time: Res<Time>, mut fading: Query<(Entity, Mut<Fade>, &mut Transform)>, mut commands: Commands) {
    for (entity, mut fade, mut transform) in &mut fading {
        // Every effect is drawn for at least one frame, however slow frames are.
        if fade.is_added() {
            continue;
        }
        fade.age_s += time.delta_secs();
        if fade.age_s >= fade.life_s {
            commands.entity(entity).despawn();
            continue;
        }
        // Tracers and flashes thin out; marks stay until their last second.
        let left = 1.0 - fade.age_s / fade.life_s;
        let k = if fade.life_s > 1.0 && !fade.all_axes { (left * fade.life_s).min(1.0) } else { left };
        let z = if fade.all_axes { fade.scale.z * k } else { fade.scale.z };
        transform.scale = Vec3::new(fade.scale.x * k, fade.scale.y * k, z);
    }
}
