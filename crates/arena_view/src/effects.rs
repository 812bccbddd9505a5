//! Shot effects: for our own shots (predicted, played the first time their
//! tick is predicted, never on replay) a muzzle flash and a tracer from the
//! rifle to where the shot stops; for other players' shots a tracer from their
//! rifle; a mark where a shot struck a wall.

use arena_client::{ClientWorld, Interpolated, LocalPlayer, NetPlayer, PredictedEvents, RemoteShot};
use arena_sim::Hitbox;
use arena_sim::weapon::RANGE_M;
use bevy::prelude::*;

use crate::ViewSet;
use crate::camera::Muzzle;

/// How long a tracer is seen, seconds.
const TRACER_S: f32 = 0.09;
/// How long a muzzle flash is seen, seconds.
const FLASH_S: f32 = 0.05;
/// How long an impact mark stays, seconds.
const IMPACT_S: f32 = 6.0;
/// Thickness of a tracer, metres.
const TRACER_WIDTH_M: f32 = 0.025;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, load_assets)
        .add_systems(Update, (own_shots, remote_shots, fade).chain().in_set(ViewSet::Overlay));
}

#[derive(Resource)]
struct EffectAssets {
    unit_cube: Handle<Mesh>,
    flash_mesh: Handle<Mesh>,
    tracer: Handle<StandardMaterial>,
    flash: Handle<StandardMaterial>,
    impact: Handle<StandardMaterial>,
}

/// Shrinks to nothing over its life, then goes.
#[derive(Component)]
struct Fade {
    age_s: f32,
    life_s: f32,
    scale: Vec3,
}

fn load_assets(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let glow = |r: f32, g: f32, b: f32, strength: f32| StandardMaterial {
        base_color: Color::srgb(r, g, b),
        emissive: LinearRgba::rgb(r * strength, g * strength, b * strength),
        unlit: true,
        ..default()
    };
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
    });
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
            Fade { age_s: 0.0, life_s: TRACER_S, scale: transform.scale },
            transform,
        ));
    }
}

fn spawn_impact(commands: &mut Commands, assets: &EffectAssets, at: Vec3, facing: Vec3) {
    let scale = Vec3::new(0.09, 0.09, 0.01);
    commands.spawn((
        Mesh3d(assets.unit_cube.clone()),
        MeshMaterial3d(assets.impact.clone()),
        Fade { age_s: 0.0, life_s: IMPACT_S, scale },
        Transform::from_translation(at - facing * 0.004).looking_to(facing, Vec3::Y).with_scale(scale),
    ));
}

/// Our shots, the first time their tick is predicted.
fn own_shots(
    mut events: MessageReader<PredictedEvents>,
    assets: Option<Res<EffectAssets>>,
    world: Res<ClientWorld>,
    muzzle: Query<&GlobalTransform, With<Muzzle>>,
    others: Query<&Interpolated, (With<NetPlayer>, Without<LocalPlayer>)>,
    mut commands: Commands,
) {
    let Some(assets) = assets else { return };
    for event in events.read() {
        let Some(shot) = event.events.weapon.shot else { continue };
        // Where it stops, as far as we can tell: a wall, or a player as drawn.
        let wall = world.cast_ray(shot.origin, shot.dir, RANGE_M);
        let player = others
            .iter()
            .filter_map(|drawn| Hitbox::of(&drawn.0).ray_test(shot.origin, shot.dir, wall.unwrap_or(RANGE_M)))
            .map(|(t, _)| t)
            .min_by(f32::total_cmp);
        let distance = player.or(wall).unwrap_or(RANGE_M);
        let end = shot.origin + shot.dir * distance;
        let start = muzzle.single().map(|m| m.translation()).unwrap_or(shot.origin);
        spawn_tracer(&mut commands, &assets, start, end);
        if let Ok(muzzle) = muzzle.single() {
            commands.spawn((
                Mesh3d(assets.flash_mesh.clone()),
                MeshMaterial3d(assets.flash.clone()),
                Fade { age_s: 0.0, life_s: FLASH_S, scale: Vec3::ONE },
                Transform::from_translation(muzzle.translation()),
                PointLight { intensity: 40_000.0, range: 6.0, color: Color::srgb(1.0, 0.8, 0.5), ..default() },
            ));
        }
        if player.is_none() && wall.is_some() {
            spawn_impact(&mut commands, &assets, end, shot.dir);
        }
    }
}

/// Other players' shots, as the server reports them.
fn remote_shots(
    mut shots: MessageReader<RemoteShot>,
    assets: Option<Res<EffectAssets>>,
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
        let k = if fade.life_s > 1.0 { (left * fade.life_s).min(1.0) } else { left };
        transform.scale = Vec3::new(fade.scale.x * k, fade.scale.y * k, fade.scale.z);
    }
}
