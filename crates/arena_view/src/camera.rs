//! The camera: first person at the local player's eyes in a game, a slow
//! flight around the arena behind the menus.

use arena_client::{Drawn, LocalInput, LocalPlayer, PredictedEvents, Session};
use arena_sim::player::view_rotation;
use bevy::camera::Exposure;
use bevy::pbr::{DistanceFog, FogFalloff};
use bevy::prelude::*;

use crate::scene::SKY;
use crate::settings::Settings;
use crate::vocabulary::ViewSet;

/// Vertical field of view before the settings are applied, degrees (about
/// 100° across at 16:9).
pub const FOV_VERTICAL_DEG: f32 = 70.0;
/// Where the rifle rests relative to the camera, metres.
const VIEW_MODEL_AT: Vec3 = Vec3::new(0.22, -0.2, -0.45);

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Recoil>()
        .add_systems(Startup, spawn_camera)
        .add_systems(
            Update,
            (
                (first_person_camera, animate_view_model).chain().run_if(in_state(Session::InGame)),
                menu_camera.run_if(not(in_state(Session::InGame))),
            )
                .in_set(ViewSet::Follow),
        )
        .add_systems(Update, apply_fov.run_if(resource_changed::<Settings>));
    if std::env::var_os("ARENA_TRACE_INPUT").is_some() {
        app.add_systems(Update, trace_input_to_camera.after(ViewSet::Follow));
    }
}

/// `ARENA_TRACE_INPUT=1`: logs, for each press of the forward key, how many
/// frames later the camera moved (0: the frame of the press). For checking
/// by hand, in a real window, that input reaches the view with no frame lag.
fn trace_input_to_camera(
    keys: Res<ButtonInput<KeyCode>>,
    settings: Res<Settings>,
    buttons: Res<ButtonInput<MouseButton>>,
    camera: Query<&Transform, With<MainCamera>>,
    mut waiting_since: Local<Option<u32>>,
    mut last: Local<Option<Vec3>>,
    mut frame: Local<u32>,
) {
    *frame += 1;
    let Ok(transform) = camera.single() else { return };
    let now = transform.translation;
    let moved = last.is_some_and(|before| before.distance(now) > 1.0e-3);
    *last = Some(now);
    if settings.input(crate::settings::Action::Forward).just_pressed(&keys, &buttons) {
        info!("input trace: forward pressed in frame {}", *frame);
        *waiting_since = Some(*frame);
    }
    if let Some(pressed) = *waiting_since
        && moved
    {
        info!("input trace: the camera moved {} frame(s) after the press (frame {})", *frame - pressed, *frame);
        *waiting_since = None;
    }
}

/// The one 3D camera.
#[derive(Component)]
pub struct MainCamera;

/// The first-person rifle, a child of the camera.
#[derive(Component)]
pub struct ViewModel;

/// The end of the first-person rifle's barrel: where shots start on screen.
#[derive(Component)]
pub struct Muzzle;

/// The first-person rocket launcher, a child of the camera.
#[derive(Component)]
pub struct LauncherModel;

/// Where the launcher rests relative to the camera, metres.
pub const LAUNCHER_AT: Vec3 = Vec3::new(0.2, -0.2, -0.55);
/// How far a weapon dips out of view while switching, metres.
const SWITCH_DIP_M: f32 = 0.3;

fn spawn_camera(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let gunmetal = materials.add(StandardMaterial {
        base_color: Color::srgb(0.12, 0.13, 0.15),
        perceptual_roughness: 0.35,
        metallic: 0.6,
        ..default()
    });
    let accent = materials.add(StandardMaterial {
        base_color: Color::srgb(0.95, 0.62, 0.15),
        perceptual_roughness: 0.5,
        ..default()
    });
    let camera = commands.spawn((
        Name::new("camera"),
        MainCamera,
        Camera3d::default(),
        Projection::Perspective(PerspectiveProjection {
            fov: FOV_VERTICAL_DEG.to_radians(),
            near: 0.05,
            far: 500.0,
            ..default()
        }),
        Exposure { ev100: 12.5 },
        DistanceFog {
            color: SKY.with_alpha(1.0),
            falloff: FogFalloff::Linear { start: 45.0, end: 220.0 },
            ..default()
        },
        Transform::from_xyz(0.0, 20.0, 40.0).looking_at(Vec3::ZERO, Vec3::Y),
        // The ears, for positional sounds: about a head's width apart.
        SpatialListener::new(0.3),
    ));
    let camera = camera.id();
    // The rifle, low and to the right; shown only in a game.
    let rifle = commands
        .spawn((
            Name::new("view model"),
            ViewModel,
            Transform::from_translation(VIEW_MODEL_AT),
            Visibility::Hidden,
            ChildOf(camera),
        ))
        .id();
    for (size, offset, material) in [
        (Vec3::new(0.07, 0.1, 0.55), Vec3::ZERO, gunmetal.clone()),
        (Vec3::new(0.035, 0.035, 0.3), Vec3::new(0.0, 0.02, -0.42), gunmetal.clone()),
        (Vec3::new(0.05, 0.14, 0.08), Vec3::new(0.0, -0.1, 0.05), gunmetal),
        (Vec3::new(0.075, 0.03, 0.2), Vec3::new(0.0, 0.065, -0.05), accent),
    ] {
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::from_size(size))),
            MeshMaterial3d(material),
            Transform::from_translation(offset),
            ChildOf(rifle),
        ));
    }
    commands.spawn((
        Name::new("muzzle"),
        Muzzle,
        Transform::from_xyz(0.0, 0.02, -0.6),
        Visibility::default(),
        ChildOf(rifle),
    ));
    // The launcher: a fat tube on the right shoulder, a sight, a grip.
    let launcher = commands
        .spawn((
            Name::new("launcher view model"),
            LauncherModel,
            Transform::from_translation(LAUNCHER_AT),
            Visibility::Hidden,
            ChildOf(camera),
        ))
        .id();
    let olive = materials.add(StandardMaterial {
        base_color: Color::srgb(0.24, 0.27, 0.2),
        perceptual_roughness: 0.6,
        metallic: 0.2,
        ..default()
    });
    let tube = meshes.add(Cylinder::new(0.06, 0.8));
    commands.spawn((
        Mesh3d(tube),
        MeshMaterial3d(olive),
        Transform::from_xyz(0.0, 0.0, -0.1).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
        ChildOf(launcher),
    ));
    // A dark mouth ring, the grip below, the sight on the left.
    let mouth = meshes.add(Torus::new(0.045, 0.07));
    commands.spawn((
        Mesh3d(mouth),
        MeshMaterial3d(materials.add(StandardMaterial { base_color: Color::srgb(0.05, 0.05, 0.05), ..default() })),
        Transform::from_xyz(0.0, 0.0, -0.5).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
        ChildOf(launcher),
    ));
    for (size, offset) in [
        (Vec3::new(0.035, 0.12, 0.05), Vec3::new(0.0, -0.1, 0.05)),
        (Vec3::new(0.02, 0.05, 0.1), Vec3::new(-0.06, 0.06, -0.2)),
    ] {
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::from_size(size))),
            MeshMaterial3d(accent_for_launcher(&mut materials)),
            Transform::from_translation(offset),
            ChildOf(launcher),
        ));
    }
}

fn accent_for_launcher(materials: &mut Assets<StandardMaterial>) -> Handle<StandardMaterial> {
    materials.add(StandardMaterial {
        base_color: Color::srgb(0.95, 0.62, 0.15),
        perceptual_roughness: 0.5,
        ..default()
    })
}

/// At the local player's eyes as drawn this frame (predicted and smoothed, or
/// the server's with prediction off), looking where the mouse says right now:
/// the view direction is never delayed.
fn first_person_camera(
    input: Res<LocalInput>,
    local: Query<&Drawn, With<LocalPlayer>>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
    mut rifle: Query<&mut Visibility, (With<ViewModel>, Without<LauncherModel>)>,
    mut launcher: Query<(&mut Visibility, &mut Transform), (With<LauncherModel>, Without<MainCamera>)>,
    time: Res<Time>,
    mut switched: Local<(Option<arena_sim::Weapon>, f32)>,
) {
    let Ok(Drawn(state)) = local.single() else { return };
    let rockets = state.weapon == arena_sim::Weapon::Rocket;
    let shown = |on: bool| if on { Visibility::Inherited } else { Visibility::Hidden };
    for mut visibility in &mut rifle {
        *visibility = shown(state.alive && !rockets);
    }
    // The weapon in hand rises into view over the switch.
    if switched.0 != Some(state.weapon) {
        *switched = (Some(state.weapon), 0.0);
    }
    switched.1 += time.delta_secs();
    let dip = (1.0 - switched.1 / arena_sim::weapon::SWITCH_S).clamp(0.0, 1.0) * SWITCH_DIP_M;
    for (mut visibility, mut transform) in &mut launcher {
        *visibility = shown(state.alive && rockets);
        transform.translation = LAUNCHER_AT - Vec3::Y * dip;
    }
    let Ok(mut transform) = camera.single_mut() else { return };
    trace!("camera at {:.3}", state.eye_pos());
    transform.translation = state.eye_pos();
    transform.rotation = view_rotation(input.yaw, input.pitch);
}

/// Circles the arena slowly behind the menus.
fn menu_camera(
    time: Res<Time<Real>>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
    mut rifle: Query<&mut Visibility, With<ViewModel>>,
) {
    for mut visibility in &mut rifle {
        *visibility = Visibility::Hidden;
    }
    let Ok(mut transform) = camera.single_mut() else { return };
    let angle = time.elapsed_secs() * 0.05 + 0.6;
    let eye = Vec3::new(angle.sin() * 42.0, 22.0, angle.cos() * 42.0);
    *transform = Transform::from_translation(eye).looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
}

/// Sets the camera's vertical field of view from the horizontal one in the
/// settings (as seen on a 16:9 screen).
fn apply_fov(settings: Res<Settings>, mut projections: Query<&mut Projection, With<MainCamera>>) {
    let horizontal = settings.fov_deg.to_radians();
    let vertical = 2.0 * ((horizontal * 0.5).tan() * 9.0 / 16.0).atan();
    for mut projection in &mut projections {
        if let Projection::Perspective(perspective) = projection.as_mut() {
            perspective.fov = vertical;
        }
    }
}

/// How hard the rifle was just kicked back by a shot (fades quickly).
#[derive(Resource, Default, Debug)]
struct Recoil(f32);

/// The rifle kicks back with every shot, dips and turns during a reload and
/// sways with the player's steps.
fn animate_view_model(
    time: Res<Time>,
    mut shots: MessageReader<PredictedEvents>,
    local: Query<&Drawn, With<LocalPlayer>>,
    mut recoil: ResMut<Recoil>,
    mut rifle: Query<&mut Transform, With<ViewModel>>,
) {
    for shot in shots.read().filter(|e| e.events.weapon.shot.is_some()) {
        let _ = shot;
        recoil.0 = (recoil.0 + 1.0).min(1.6);
    }
    recoil.0 *= (-time.delta_secs() * 16.0).exp();
    let Ok(Drawn(state)) = local.single() else { return };
    // 0 → 1 → 0 over the reload.
    let reload = if state.reload_s > 0.0 {
        (std::f32::consts::PI * (1.0 - state.reload_s / arena_sim::weapon::RELOAD_S)).sin()
    } else {
        0.0
    };
    let stride = state.step_phase / arena_sim::movement::FOOTSTEP_DISTANCE_M * std::f32::consts::TAU;
    let sway = if state.on_ground { (state.ground_speed() / 7.0).min(1.0) } else { 0.0 };
    for mut transform in &mut rifle {
        transform.translation = VIEW_MODEL_AT
            + Vec3::new(
                stride.sin() * 0.012 * sway,
                -(stride * 2.0).cos().abs() * 0.01 * sway - 0.14 * reload,
                0.07 * recoil.0,
            );
        transform.rotation =
            Quat::from_rotation_x(0.10 * recoil.0 - 0.6 * reload) * Quat::from_rotation_z(0.5 * reload);
    }
}
