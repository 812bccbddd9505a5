//! Spectating on screen: a watcher's keys (left and right mouse buttons
//! follow the next or previous player, Space switches first person and
//! chase view, F flies freely), its camera (at the followed player's eyes as
//! drawn, from behind it, or flying), and the line that says whom it
//! watches. The followed player is drawn by interpolation, as every other
//! player is (in first person `players` hides its body: the camera is
//! inside its head).

use arena_client::{Drawn, LocalInput, NetPlayer, Roster, Session, Spectating, SpectatorInput, WatchView};
use arena_protocol::modes::Side;
use arena_sim::player::view_rotation;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::camera::MainCamera;
use crate::settings::{Action, Settings};
use crate::vocabulary::{ChatInput, ConsoleWindow, PauseMenu, ViewSet};

/// How far behind and above the followed player's eyes the chase view is, metres.
const CHASE_BACK_M: f32 = 3.2;
const CHASE_UP_M: f32 = 0.9;
/// Free flight's speed, metres a second.
const FLY_SPEED_MPS: f32 = 9.0;

pub(crate) fn plugin(app: &mut App) {
    let watching = |roster: Res<Roster>| roster.watching();
    app.init_resource::<Flight>()
        .add_systems(OnEnter(Session::InGame), |mut flight: ResMut<Flight>| flight.at = None)
        .add_systems(
            RunFixedMainLoop,
            read_watcher_keys.after(ViewSet::Input).run_if(in_state(Session::InGame).and_then(watching)),
        )
        .add_systems(
            Update,
            watcher_camera.in_set(ViewSet::Follow).run_if(in_state(Session::InGame).and_then(watching)),
        )
        .add_systems(EguiPrimaryContextPass, watcher_line.run_if(in_state(Session::InGame).and_then(watching)));
}

/// Where free flight is.
#[derive(Resource, Debug, Default)]
struct Flight {
    at: Option<Vec3>,
}

/// A watcher's keys into its choices.
fn read_watcher_keys(
    keys: Res<ButtonInput<KeyCode>>,
    buttons: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    (pause, chat, console): (Res<PauseMenu>, Res<ChatInput>, Res<ConsoleWindow>),
    spectating: Res<Spectating>,
    mut choices: MessageWriter<SpectatorInput>,
) {
    if pause.open || chat.open || console.open {
        return;
    }
    // In free flight Space lifts (a click follows someone again).
    let flying = spectating.view == WatchView::FreeFly;
    if buttons.just_pressed(MouseButton::Left) {
        choices.write(SpectatorInput::Next);
    }
    if buttons.just_pressed(MouseButton::Right) {
        choices.write(SpectatorInput::Previous);
    }
    if !flying && settings.input(Action::Jump).just_pressed(&keys, &buttons) {
        choices.write(SpectatorInput::SwitchView);
    }
    if keys.just_pressed(KeyCode::KeyF) {
        choices.write(SpectatorInput::FreeFly);
    }
}

/// The camera of a watcher, and the followed player's body hidden in first person.
fn watcher_camera(
    time: Res<Time>,
    spectating: Res<Spectating>,
    input: Res<LocalInput>,
    keys: Res<ButtonInput<KeyCode>>,
    buttons: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    mut flight: ResMut<Flight>,
    players: Query<(&NetPlayer, &Drawn)>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
) {
    let Ok(mut transform) = camera.single_mut() else { return };
    let followed = spectating.target.and_then(|id| players.iter().find(|(p, _)| p.id == id).map(|(_, d)| d.0));
    match (spectating.view, followed) {
        (WatchView::FirstPerson, Some(state)) => {
            transform.translation = state.eye_pos();
            transform.rotation = view_rotation(state.yaw, state.pitch);
        }
        (WatchView::Chase, Some(state)) => {
            let forward = arena_sim::player::view_forward(state.yaw, 0.0);
            let eye = state.eye_pos();
            transform.translation = eye - forward * CHASE_BACK_M + Vec3::Y * CHASE_UP_M;
            transform.look_at(eye + forward * 2.0, Vec3::Y);
        }
        _ => {
            // Free flight (or nobody to follow): where the mouse looks, moved
            // by the movement keys, Space up and the crouch key down.
            let at = flight.at.get_or_insert(transform.translation);
            let rotation = view_rotation(input.yaw, input.pitch);
            let up = f32::from(u8::from(settings.input(Action::Jump).pressed(&keys, &buttons)))
                - f32::from(u8::from(settings.input(Action::Crouch).pressed(&keys, &buttons)));
            let step = rotation * Vec3::new(input.right, 0.0, -input.forward) + Vec3::Y * up;
            *at += step.normalize_or_zero() * FLY_SPEED_MPS * time.delta_secs();
            transform.translation = *at;
            transform.rotation = rotation;
            return;
        }
    }
    // Following: flight starts from here when it is chosen.
    flight.at = Some(transform.translation);
}

/// Whom a watcher watches, and its keys, at the bottom of the screen.
fn watcher_line(mut contexts: EguiContexts, roster: Res<Roster>, spectating: Res<Spectating>) -> Result {
    let ctx = contexts.ctx_mut()?;
    let waiting = roster.local_side() == Side::Waiting;
    let watching = match (spectating.view, spectating.target) {
        (WatchView::FreeFly, _) => "Flying freely".to_string(),
        (view, Some(id)) => {
            let how = if view == WatchView::Chase { "chase view" } else { "first person" };
            format!("Watching {} ({how})", roster.name(id))
        }
        (_, None) => "Nobody to watch yet".to_string(),
    };
    let keys = if spectating.view == WatchView::FreeFly {
        "WASD: fly · Space/crouch: up/down · left/right click: follow a player · Esc: join the game"
    } else {
        "left/right click: next/previous player · Space: first person/chase · F: fly · Esc: join the game"
    };
    egui::Area::new(egui::Id::new("watcher line")).anchor(egui::Align2::CENTER_BOTTOM, [0.0, -56.0]).show(ctx, |ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
        egui::Frame::new().fill(egui::Color32::from_black_alpha(160)).inner_margin(8.0).corner_radius(4.0).show(
            ui,
            |ui| {
                ui.vertical_centered(|ui| {
                    if waiting {
                        ui.label(
                            egui::RichText::new("In the queue: you play a duel when your turn comes")
                                .size(18.0)
                                .color(egui::Color32::from_rgb(255, 200, 70)),
                        );
                    }
                    ui.label(egui::RichText::new(watching).size(18.0).color(egui::Color32::WHITE).strong());
                    ui.label(egui::RichText::new(keys).size(13.0).color(egui::Color32::LIGHT_GRAY));
                });
            },
        );
    });
    Ok(())
}
