//! Keyboard and mouse into the local input, every frame: WASD, Space jump,
//! Ctrl (or C) crouch, left mouse fire, R reload; mouse look while the cursor
//! is grabbed. Esc opens the pause menu and releases the mouse.

use arena_client::{LocalInput, Session};
use arena_sim::Buttons;
use arena_sim::cmd::MAX_PITCH_RAD;
use bevy::input::mouse::AccumulatedMouseMotion;
use bevy::prelude::*;
use bevy::window::{CursorGrabMode, CursorOptions};

use crate::ViewSet;
use crate::netcode_panel::NetcodePanel;

/// Radians of view turn per mouse count (about Quake's default feel).
pub const MOUSE_RAD_PER_COUNT: f32 = 0.0022;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PauseMenu>()
        .init_resource::<AutoAim>()
        .add_systems(
            Update,
            (toggle_pause, read_input, auto_aim).chain().in_set(ViewSet::Input).run_if(in_state(Session::InGame)),
        )
        .add_systems(Update, grab_cursor.after(ViewSet::Menus))
        .add_systems(OnEnter(Session::InGame), close_pause_menu);
}

/// A demonstration aid (netcode panel, `--auto-aim`): the view follows the
/// nearest player in sight, exactly as this client draws it. With lag
/// compensation every shot then hits; without it, they trail the target by
/// its speed times the latency.
#[derive(Resource, Default, Debug)]
pub struct AutoAim(pub bool);

/// Whether the in-game pause menu is open (the game goes on; your player stands still).
#[derive(Resource, Default, Debug)]
pub struct PauseMenu {
    pub open: bool,
}

fn close_pause_menu(mut pause: ResMut<PauseMenu>) {
    pause.open = false;
}

fn toggle_pause(
    keys: Res<ButtonInput<KeyCode>>,
    mut focus: MessageReader<bevy::window::WindowFocused>,
    mut had_focus: Local<bool>,
    mut pause: ResMut<PauseMenu>,
) {
    if keys.just_pressed(KeyCode::Escape) {
        pause.open = !pause.open;
    }
    // Alt-tabbing away opens the menu, so the mouse is free. (Only a loss of
    // focus the window had: some desktops report "unfocused" at start.)
    for event in focus.read() {
        if *had_focus && !event.focused {
            pause.open = true;
        }
        *had_focus = event.focused;
    }
}

fn read_input(
    keys: Res<ButtonInput<KeyCode>>,
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    pause: Res<PauseMenu>,
    panel: Res<NetcodePanel>,
    mut input: ResMut<LocalInput>,
) {
    if pause.open {
        // The player stands still while the menu is open.
        input.forward = 0.0;
        input.right = 0.0;
        input.held = Buttons::default();
        return;
    }
    if keys.get_just_pressed().len() > 0 {
        debug!("keys pressed: {:?}", keys.get_just_pressed().collect::<Vec<_>>());
    }
    let axis = |plus: KeyCode, minus: KeyCode| {
        f32::from(u8::from(keys.pressed(plus))) - f32::from(u8::from(keys.pressed(minus)))
    };
    input.forward = axis(KeyCode::KeyW, KeyCode::KeyS);
    input.right = axis(KeyCode::KeyD, KeyCode::KeyA);

    let bindings: [(Buttons, bool, bool); 4] = [
        (Buttons::JUMP, keys.pressed(KeyCode::Space), keys.just_pressed(KeyCode::Space)),
        (
            Buttons::CROUCH,
            keys.any_pressed([KeyCode::ControlLeft, KeyCode::KeyC]),
            keys.any_just_pressed([KeyCode::ControlLeft, KeyCode::KeyC]),
        ),
        // With the netcode panel open, clicks are for the panel.
        (
            Buttons::FIRE,
            !panel.open && buttons.pressed(MouseButton::Left),
            !panel.open && buttons.just_pressed(MouseButton::Left),
        ),
        (Buttons::RELOAD, keys.pressed(KeyCode::KeyR), keys.just_pressed(KeyCode::KeyR)),
    ];
    let mut held = Buttons::default();
    for (button, is_held, just) in bindings {
        held.set(button, is_held);
        if just {
            input.press(button);
        }
    }
    input.held = held;

    // Mouse look: every frame, never waiting for a tick (the mouse is the
    // panel's while it is open).
    let delta = motion.delta;
    if delta != Vec2::ZERO && !panel.open {
        input.yaw = arena_sim::cmd::wrap_angle(input.yaw - delta.x * MOUSE_RAD_PER_COUNT);
        input.pitch = (input.pitch - delta.y * MOUSE_RAD_PER_COUNT).clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
    }
}

/// The cursor is grabbed and hidden while playing, free in every menu.
fn grab_cursor(session: Res<State<Session>>, pause: Res<PauseMenu>, mut cursor: Query<&mut CursorOptions>) {
    let playing = *session.get() == Session::InGame && !pause.open;
    let (grab, visible) = if playing { (CursorGrabMode::Locked, false) } else { (CursorGrabMode::None, true) };
    for mut options in &mut cursor {
        if options.grab_mode != grab || options.visible != visible {
            options.grab_mode = grab;
            options.visible = visible;
        }
    }
}

fn auto_aim(
    auto: Res<AutoAim>,
    pause: Res<PauseMenu>,
    local: Res<arena_client::LocalRender>,
    world: Res<arena_client::ClientWorld>,
    others: Query<&arena_client::Interpolated, Without<arena_client::LocalPlayer>>,
    mut input: ResMut<LocalInput>,
) {
    let (true, false, Some(me)) = (auto.0, pause.open, local.state) else { return };
    let eye = me.eye_pos();
    let target = others
        .iter()
        .filter(|o| o.alive)
        .map(|o| arena_sim::Hitbox::of(&o.0).body_center())
        .filter(|p| world.cast_ray(eye, (*p - eye).normalize_or_zero(), eye.distance(*p)).is_none())
        .min_by(|a, b| a.distance_squared(eye).total_cmp(&b.distance_squared(eye)));
    if let Some(point) = target {
        let dir = (point - eye).normalize_or_zero();
        input.yaw = (-dir.x).atan2(-dir.z);
        input.pitch = dir.y.clamp(-1.0, 1.0).asin().clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
    }
}
