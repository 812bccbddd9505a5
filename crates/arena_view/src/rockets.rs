//! Rockets drawn: each rocket the client draws this frame (ours from the
//! click, everyone else's on the interpolated timeline) as a body with a
//! glowing tail and a light, ours leaving from the launcher's mouth and
//! joining its true line over the first metres; each blast as a fireball
//! with a light, smoke rising and a scorch on the floor.

use arena_client::{BlastDrawn, DrawnRockets};
use arena_sim::rng::SplitMix64;
use bevy::prelude::*;

use crate::camera::MainCamera;
use crate::looks::glow;
use crate::view_model::LAUNCHER_AT;
use crate::vocabulary::ViewSet;

/// Over this much flight our rocket joins its true line from the launcher's mouth, metres.
const JOIN_LINE_M: f32 = 4.0;
/// How long a fireball lasts and how big it grows, seconds and metres.
const FIREBALL_S: f32 = 0.45;
const FIREBALL_M: f32 = 2.6;
/// Smoke puffs of a blast, their life (s) and rise (m/s).
const SMOKE_PUFFS: usize = 7;
const SMOKE_S: f32 = 1.4;
const SMOKE_RISE_MPS: f32 = 1.2;
/// How long a scorch mark stays, seconds.
const SCORCH_S: f32 = 8.0;
/// Longest smoke trail behind a rocket, metres.
const TRAIL_M: f32 = 3.5;
/// Most a blast ages in one frame, seconds: at a few frames a second (software
/// rendering) a fireball is still seen.
const MAX_AGE_STEP_S: f32 = 0.08;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, load_assets)
        .add_systems(Update, (draw_rockets, spawn_blasts, age_blasts).chain().in_set(ViewSet::Overlay));
}

#[derive(Resource)]
struct RocketAssets {
    body: Handle<Mesh>,
    tail: Handle<Mesh>,
    trail: Handle<Mesh>,
    trail_smoke: Handle<StandardMaterial>,
    halo: Handle<StandardMaterial>,
    ball: Handle<Mesh>,
    scorch: Handle<Mesh>,
    metal: Handle<StandardMaterial>,
    flame: Handle<StandardMaterial>,
    fire: Handle<StandardMaterial>,
    smoke: Handle<StandardMaterial>,
    soot: Handle<StandardMaterial>,
}

/// A rocket's smoke trail, stretched behind it as far as it has flown.
#[derive(Component)]
struct Trail;

/// The entities rockets are drawn with, reused frame to frame.
#[derive(Resource, Default)]
struct RocketPool(Vec<Entity>);

/// A blast's part not drawn yet.
#[derive(Component)]
struct NewPart;

/// A blast's parts, ageing.
#[derive(Component)]
struct BlastPart {
    age_s: f32,
    life_s: f32,
    kind: Part,
}

#[derive(Clone, Copy)]
enum Part {
    Fireball,
    Smoke { rise: Vec3, size_m: f32 },
    Scorch,
}

#[derive(Resource)]
struct BlastRng(SplitMix64);

fn load_assets(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.insert_resource(RocketAssets {
        body: meshes.add(Capsule3d::new(0.1, 0.45)),
        tail: meshes.add(Cone::new(0.15, 0.9)),
        trail: meshes.add(Cylinder::new(0.12, 1.0)),
        // A glow around the motor: a rocket reads at 40 m, as in every arena shooter.
        halo: materials.add(StandardMaterial {
            base_color: Color::srgba(1.0, 0.7, 0.3, 0.55),
            emissive: LinearRgba::rgb(6.0, 3.0, 0.8),
            alpha_mode: AlphaMode::Blend,
            unlit: true,
            ..default()
        }),
        trail_smoke: materials.add(StandardMaterial {
            base_color: Color::srgba(0.85, 0.85, 0.85, 0.45),
            alpha_mode: AlphaMode::Blend,
            unlit: true,
            ..default()
        }),
        ball: meshes.add(Sphere::new(0.5).mesh().ico(3).unwrap_or_else(|_| Sphere::new(0.5).into())),
        scorch: meshes.add(Cylinder::new(1.0, 0.01)),
        metal: materials.add(StandardMaterial {
            base_color: Color::srgb(0.35, 0.37, 0.33),
            metallic: 0.5,
            perceptual_roughness: 0.4,
            ..default()
        }),
        flame: materials.add(glow(1.0, 0.6, 0.2, 10.0)),
        fire: materials.add(StandardMaterial {
            base_color: Color::srgba(1.0, 0.55, 0.15, 0.85),
            emissive: LinearRgba::rgb(9.0, 4.0, 1.0),
            alpha_mode: AlphaMode::Blend,
            unlit: true,
            ..default()
        }),
        smoke: materials.add(StandardMaterial {
            base_color: Color::srgba(0.3, 0.29, 0.28, 0.75),
            alpha_mode: AlphaMode::Blend,
            perceptual_roughness: 1.0,
            ..default()
        }),
        soot: materials.add(StandardMaterial {
            base_color: Color::srgba(0.03, 0.03, 0.03, 0.85),
            alpha_mode: AlphaMode::Blend,
            perceptual_roughness: 1.0,
            ..default()
        }),
    });
    commands.insert_resource(RocketPool::default());
    commands.insert_resource(BlastRng(SplitMix64::new(0xb1a5)));
}

/// One pooled rocket: the body, its tail of flame, and a light.
fn spawn_rocket(commands: &mut Commands, assets: &RocketAssets) -> Entity {
    commands
        .spawn((Name::new("rocket"), Transform::default(), Visibility::Hidden))
        .with_children(|rocket| {
            rocket.spawn((
                Mesh3d(assets.body.clone()),
                MeshMaterial3d(assets.metal.clone()),
                // Rockets and blasts happen now: the kill-cam's past leaves them out.
                crate::vocabulary::live_layer(),
                Transform::from_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
            ));
            rocket.spawn((
                Mesh3d(assets.tail.clone()),
                MeshMaterial3d(assets.flame.clone()),
                crate::vocabulary::live_layer(),
                // Behind the body (the rocket looks along -Z), pointing back.
                Transform::from_xyz(0.0, 0.0, 0.7).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
            ));
            rocket.spawn((
                Mesh3d(assets.ball.clone()),
                MeshMaterial3d(assets.halo.clone()),
                crate::vocabulary::live_layer(),
                Transform::from_xyz(0.0, 0.0, 0.5).with_scale(Vec3::splat(0.8)),
            ));
            rocket.spawn((
                Trail,
                Mesh3d(assets.trail.clone()),
                MeshMaterial3d(assets.trail_smoke.clone()),
                crate::vocabulary::live_layer(),
                Transform::from_xyz(0.0, 0.0, 1.0).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
            ));
            rocket.spawn((
                PointLight { intensity: 60_000.0, range: 7.0, color: Color::srgb(1.0, 0.65, 0.3), ..default() },
                crate::vocabulary::live_layer(),
                Transform::from_xyz(0.0, 0.0, 0.6),
            ));
        })
        .id()
}

/// Every rocket drawn this frame, where the client draws it.
fn draw_rockets(
    drawn: Res<DrawnRockets>,
    assets: Option<Res<RocketAssets>>,
    mut pool: ResMut<RocketPool>,
    cameras: Query<&Transform, With<MainCamera>>,
    mut rockets: Query<(&mut Transform, &mut Visibility, &Children), (Without<MainCamera>, Without<Trail>)>,
    mut trails: Query<&mut Transform, (With<Trail>, Without<MainCamera>)>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    while pool.0.len() < drawn.0.len() {
        let e = spawn_rocket(&mut commands, &assets);
        pool.0.push(e);
    }
    // Our rocket leaves from the launcher's mouth on screen, not from the eye.
    let mouth = cameras.single().ok().map(|c| c.transform_point(LAUNCHER_AT + Vec3::new(0.0, 0.0, -0.5)));
    for (i, entity) in pool.0.iter().enumerate() {
        let Ok((mut transform, mut visibility, children)) = rockets.get_mut(*entity) else { continue };
        let Some(rocket) = drawn.0.get(i) else {
            *visibility = Visibility::Hidden;
            continue;
        };
        let mut at = rocket.pos;
        if let (true, Some(mouth)) = (rocket.own, mouth) {
            let eye_to_rocket = rocket.pos - mouth;
            let along = eye_to_rocket.dot(rocket.dir).max(0.0);
            let join = (along / JOIN_LINE_M).clamp(0.0, 1.0);
            let off_line = mouth + rocket.dir * along;
            at = off_line.lerp(rocket.pos, join);
        }
        *visibility = Visibility::Inherited;
        let trail_m = rocket.flown_m.clamp(0.0, TRAIL_M).max(0.05);
        for child in children.iter() {
            if let Ok(mut trail) = trails.get_mut(child) {
                trail.translation = Vec3::Z * (0.7 + trail_m * 0.5);
                trail.scale = Vec3::new(1.0, trail_m, 1.0);
            }
        }
        *transform = Transform::from_translation(at)
            .looking_to(rocket.dir, if rocket.dir.y.abs() > 0.99 { Vec3::X } else { Vec3::Y })
            .with_scale(Vec3::splat(rocket.alpha.max(0.05)));
    }
}

/// Each blast drawn this frame: a fireball and its light, smoke, a scorch.
fn spawn_blasts(
    mut blasts: MessageReader<BlastDrawn>,
    assets: Option<Res<RocketAssets>>,
    mut rng: ResMut<BlastRng>,
    world: Res<arena_client::ClientWorld>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    for blast in blasts.read() {
        commands.spawn((
            Name::new("fireball"),
            Mesh3d(assets.ball.clone()),
            MeshMaterial3d(assets.fire.clone()),
            crate::vocabulary::live_layer(),
            BlastPart { age_s: 0.0, life_s: FIREBALL_S, kind: Part::Fireball },
            NewPart,
            Transform::from_translation(blast.point).with_scale(Vec3::splat(0.2)),
            PointLight { intensity: 900_000.0, range: 14.0, color: Color::srgb(1.0, 0.6, 0.25), ..default() },
        ));
        for _ in 0..SMOKE_PUFFS {
            let r = &mut rng.0;
            let rise = Vec3::new(r.range(-0.6, 0.6), SMOKE_RISE_MPS * r.range(0.6, 1.2), r.range(-0.6, 0.6));
            let size_m = r.range(0.6, 1.2);
            let offset = Vec3::new(r.range(-0.5, 0.5), r.range(0.0, 0.4), r.range(-0.5, 0.5));
            commands.spawn((
                Mesh3d(assets.ball.clone()),
                MeshMaterial3d(assets.smoke.clone()),
                crate::vocabulary::live_layer(),
                BlastPart { age_s: 0.0, life_s: SMOKE_S * r.range(0.7, 1.1), kind: Part::Smoke { rise, size_m } },
                NewPart,
                Transform::from_translation(blast.point + offset).with_scale(Vec3::splat(0.1)),
            ));
        }
        // A scorch where it met the floor.
        if let Some(down) = world.cast_ray(blast.point + Vec3::Y * 0.05, Vec3::NEG_Y, 0.6) {
            let at = blast.point + Vec3::Y * (0.05 - down + 0.006);
            commands.spawn((
                Mesh3d(assets.scorch.clone()),
                MeshMaterial3d(assets.soot.clone()),
                crate::vocabulary::live_layer(),
                BlastPart { age_s: 0.0, life_s: SCORCH_S, kind: Part::Scorch },
                NewPart,
                Transform::from_translation(at).with_scale(Vec3::new(1.1, 1.0, 1.1)),
            ));
        }
    }
}

/// Fireballs swell and fade, smoke rises and spreads, scorches wait and go.
fn age_blasts(
    time: Res<Time>,
    mut parts: Query<(Entity, &mut BlastPart, &mut Transform, Option<&mut PointLight>, Has<NewPart>)>,
    mut commands: Commands,
) {
    let dt = time.delta_secs().min(MAX_AGE_STEP_S);
    for (entity, mut part, mut transform, light, added) in &mut parts {
        // Every part is drawn once as it starts, however slow the frames.
        if !added {
            part.age_s += dt;
        }
        if part.age_s >= part.life_s {
            commands.entity(entity).despawn();
            continue;
        }
        if added {
            commands.entity(entity).remove::<NewPart>();
        }
        let k = (part.age_s / part.life_s).max(0.15);
        match part.kind {
            Part::Fireball => {
                transform.scale = Vec3::splat(FIREBALL_M * (1.0 - (1.0 - k).powi(3)) * (1.0 - 0.5 * k));
                if let Some(mut light) = light {
                    light.intensity = 900_000.0 * (1.0 - k).powi(2);
                }
            }
            Part::Smoke { rise, size_m } => {
                transform.translation += rise * dt;
                transform.scale = Vec3::splat(size_m * (0.3 + 0.9 * k) * (1.0 - k * k).sqrt().max(0.05));
            }
            Part::Scorch => {
                let left = ((1.0 - k) * part.life_s).min(1.0);
                transform.scale = Vec3::new(1.1 * left, 1.0, 1.1 * left);
            }
        }
    }
}
