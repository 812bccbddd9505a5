//! Keyboard and mouse into the local input, every frame, through the player's
//! bindings (by default WASD, Space jump, Ctrl crouch, left mouse fire, R
//! reload, 1 rifle, 2 rocket launcher, Q the last weapon, the wheel either
//! way); mouse look while the cursor is grabbed. Esc opens the pause menu
//! and releases the mouse. Y opens a chat line to everyone and U one to the
//! team (as in Quake and Counter-Strike): the player stands still while it
//! is typed, and Esc closes it. The console (`console.rs`) stops the
//! player the same way while it is open.
//!
//! Input is read before the fixed loop (as in Bevy's
//! `physics_in_fixed_timestep` example), so that the ticks run this frame
//! make their commands from this frame's keys and mouse, not last frame's.

use arena_client::{LocalInput, Session};
use arena_sim::cmd::MAX_PITCH_RAD;
use arena_sim::{Buttons, Weapon};
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll};
use bevy::prelude::*;
use bevy::window::{CursorGrabMode, CursorOptions};

use crate::settings::{Action, Input, Settings};
use crate::settings_menu::SettingsWindow;
use crate::vocabulary::{AutoAim, ChatInput, ConsoleWindow, NetcodePanel, PauseMenu, ViewSet};

/// Radians of view turn per mouse count (about Quake's default feel).
pub(crate) const MOUSE_RAD_PER_COUNT: f32 = 0.0022;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PauseMenu>()
        .init_resource::<AutoAim>()
        .init_resource::<NetcodePanel>()
        .init_resource::<SettingsWindow>()
        .init_resource::<ChatInput>()
        .init_resource::<ConsoleWindow>()
        .init_resource::<Settings>()
        .add_message::<bevy::window::WindowFocused>()
        .add_systems(
            RunFixedMainLoop,
            (toggle_pause, read_input, auto_aim).chain().in_set(ViewSet::Input).run_if(in_state(Session::InGame)),
        )
        .add_systems(Update, grab_cursor.after(ViewSet::Menus))
        .add_systems(OnEnter(Session::InGame), close_pause_menu);
}

fn close_pause_menu(mut pause: ResMut<PauseMenu>, mut chat: ResMut<ChatInput>) {
    pause.open = false;
    *chat = ChatInput::default();
}

fn toggle_pause(
    keys: Res<ButtonInput<KeyCode>>,
    mut focus: MessageReader<bevy::window::WindowFocused>,
    mut had_focus: Local<bool>,
    mut pause: ResMut<PauseMenu>,
    settings_window: Res<SettingsWindow>,
    mut chat: ResMut<ChatInput>,
    console: Res<ConsoleWindow>,
) {
    // Esc closes a chat line being typed; with the settings window open,
    // Esc is the window's; with the console open, the console's.
    if console.open {
        // Keys type into the console (which Esc closes).
    } else if chat.open {
        if keys.just_pressed(KeyCode::Escape) {
            *chat = ChatInput::default();
        }
    } else if keys.just_pressed(KeyCode::Escape) && !settings_window.open {
        pause.open = !pause.open;
    } else if !pause.open && !settings_window.open {
        let team = keys.just_pressed(KeyCode::KeyU);
        if keys.just_pressed(KeyCode::KeyY) || team {
            *chat = ChatInput { open: true, team, text: String::new(), focused: false };
        }
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
    wheel: Res<AccumulatedMouseScroll>,
    pause: Res<PauseMenu>,
    panel: Res<NetcodePanel>,
    settings_window: Res<SettingsWindow>,
    settings: Res<Settings>,
    chat: Res<ChatInput>,
    console: Res<ConsoleWindow>,
    mut input: ResMut<LocalInput>,
) {
    if pause.open || settings_window.open || chat.open || console.open {
        // The player stands still while a menu is open.
        input.forward = 0.0;
        input.right = 0.0;
        input.held = Buttons::default();
        return;
    }
    let pressed = |action: Action| settings.input(action).pressed(&keys, &buttons);
    let just = |action: Action| settings.input(action).just_pressed(&keys, &buttons);
    let axis = |plus: Action, minus: Action| f32::from(u8::from(pressed(plus))) - f32::from(u8::from(pressed(minus)));
    input.forward = axis(Action::Forward, Action::Back);
    input.right = axis(Action::Right, Action::Left);

    // With the netcode panel open, the mouse is the panel's: no firing by click.
    let mouse_free = |action: Action| panel.open && matches!(settings.input(action), Input::Mouse(_));
    let mut held = Buttons::default();
    for (button, action) in [
        (Buttons::JUMP, Action::Jump),
        (Buttons::CROUCH, Action::Crouch),
        (Buttons::FIRE, Action::Fire),
        (Buttons::RELOAD, Action::Reload),
    ] {
        if mouse_free(action) {
            continue;
        }
        held.set(button, pressed(action));
        if just(action) {
            input.press(button);
        }
    }
    input.held = held;

    // Weapons: by slot, the last one, or the wheel (two weapons: either way switches).
    if just(Action::Rifle) {
        input.choose_weapon(Weapon::Rifle);
    } else if just(Action::Launcher) {
        input.choose_weapon(Weapon::Rocket);
    } else if just(Action::LastWeapon) || (wheel.delta.y != 0.0 && !panel.open) {
        let other = if input.weapon == Weapon::Rifle { Weapon::Rocket } else { Weapon::Rifle };
        let next =
            if just(Action::LastWeapon) && input.last_weapon != input.weapon { input.last_weapon } else { other };
        input.choose_weapon(next);
    }

    // Mouse look: every frame, never waiting for a tick.
    let delta = motion.delta;
    if delta != Vec2::ZERO && !panel.open {
        let rad_per_count = MOUSE_RAD_PER_COUNT * settings.mouse_sensitivity;
        let vertical = if settings.invert_y { -delta.y } else { delta.y };
        input.yaw = arena_sim::cmd::wrap_angle(input.yaw - delta.x * rad_per_count);
        input.pitch = (input.pitch - vertical * rad_per_count).clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
    }
}

/// The cursor is grabbed and hidden while playing, free in every menu and panel.
fn grab_cursor(
    session: Res<State<Session>>,
    pause: Res<PauseMenu>,
    panel: Res<NetcodePanel>,
    settings_window: Res<SettingsWindow>,
    console: Res<ConsoleWindow>,
    mut cursor: Query<&mut CursorOptions>,
) {
    let playing =
        *session.get() == Session::InGame && !pause.open && !panel.open && !settings_window.open && !console.open;
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
    world: Res<arena_client::ClientWorld>,
    players: Query<(&arena_client::Drawn, Has<arena_client::LocalPlayer>)>,
    mut input: ResMut<LocalInput>,
) {
    let me = players.iter().find(|(_, local)| *local).map(|(drawn, _)| drawn.0);
    let (true, false, Some(me)) = (auto.0, pause.open, me) else { return };
    let eye = me.eye_pos();
    let target = players
        .iter()
        .filter(|(o, local)| !local && o.alive)
        .map(|(o, _)| arena_sim::Hitbox::of(&o.0).body_center())
        .filter(|p| world.cast_ray(eye, (*p - eye).normalize_or_zero(), eye.distance(*p)).is_none())
        .min_by(|a, b| a.distance_squared(eye).total_cmp(&b.distance_squared(eye)));
    if let Some(point) = target {
        (input.yaw, input.pitch) = arena_sim::look_at(eye, point);
    }
}
