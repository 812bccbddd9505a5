//! The camera: first person at the local player's eyes in a game (the arms
//! and weapon it carries are `view_model`'s), a slow flight around the arena
//! behind the menus.

use arena_client::{Drawn, LocalInput, LocalPlayer, Roster, Session};
use arena_sim::player::view_rotation;
use bevy::camera::Exposure;
use bevy::pbr::{DistanceFog, FogFalloff};
use bevy::prelude::*;

use crate::scene::SKY;
use crate::settings::Settings;
use crate::vocabulary::ViewSet;

/// Vertical field of view before the settings are applied, degrees (about
/// 100° across at 16:9).
pub(crate) const FOV_VERTICAL_DEG: f32 = 70.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_camera)
        .add_systems(
            Update,
            (
                // A watcher's camera is `spectating`'s.
                first_person_camera.run_if(in_state(Session::InGame).and_then(|r: Res<Roster>| !r.watching())),
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
pub(crate) struct MainCamera;

pub(crate) fn spawn_camera(mut commands: Commands) {
    commands.spawn((
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
        crate::vocabulary::camera_layers(true),
        // The ears, for positional sounds: about a head's width apart.
        SpatialListener::new(0.3),
    ));
}

/// At the local player's eyes as drawn this frame (predicted and smoothed, or
/// the server's with prediction off), looking where the mouse says right now:
/// the view direction is never delayed.
fn first_person_camera(
    input: Res<LocalInput>,
    local: Query<&Drawn, With<LocalPlayer>>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let Ok(Drawn(state)) = local.single() else { return };
    let Ok(mut transform) = camera.single_mut() else { return };
    trace!("camera at {:.3}", state.eye_pos());
    transform.translation = state.eye_pos();
    transform.rotation = view_rotation(input.yaw, input.pitch);
}

/// Circles the arena slowly behind the menus.
fn menu_camera(time: Res<Time<Real>>, mut camera: Query<&mut Transform, With<MainCamera>>) {
    let Ok(mut transform) = camera.single_mut() else { return };
    let angle = time.elapsed_secs() * 0.05 + 0.6;
    let eye = Vec3::new(angle.sin() * 42.0, 22.0, angle.cos() * 42.0);
    *transform = Transform::from_translation(eye).looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
}

/// Sets the camera's vertical field of view from the horizontal one in the
/// settings (as seen on a 16:9 screen).
/// The vertical field of view the settings ask for, radians.
pub(crate) fn vertical_fov(settings: &Settings) -> f32 {
    let horizontal = settings.fov_deg.to_radians();
    2.0 * ((horizontal * 0.5).tan() * 9.0 / 16.0).atan()
}

pub(crate) fn apply_fov(settings: Res<Settings>, mut projections: Query<&mut Projection, With<MainCamera>>) {
    let vertical = vertical_fov(&settings);
    for mut projection in &mut projections {
        if let Projection::Perspective(perspective) = projection.as_mut() {
            perspective.fov = vertical;
        }
    }
}
