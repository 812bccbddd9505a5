//! Input is read before the fixed loop: a key pressed in a frame is in the
//! command that frame's tick makes, with no frame of lag. Driven by real
//! keyboard events through the view's input plugin (no window needed), not
//! by writing the local input directly.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use arena_client::{ClientTick, NetcodeSettings, Session, ThisTick};
use arena_lab::harness::{client_app_with, loopback_config, server_app_with_frame, session, step, step_until};
use bevy::input::ButtonState;
use bevy::input::keyboard::{Key, KeyboardInput};
use bevy::prelude::*;

const HZ: u32 = 64;

#[test]
fn a_key_pressed_in_a_frame_is_in_the_command_of_that_frame() {
    // One tick per frame, so that every frame makes a command.
    let frame = Duration::from_secs_f64(1.0 / f64::from(HZ));
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), frame);
    let mut client = client_app_with(frame, info.local_addr, "Ada", NetcodeSettings::default());
    client.add_plugins((bevy::input::InputPlugin, arena_view::InputPlugin));
    assert!(step_until(&mut [&mut server, &mut client], 5 * HZ as usize, |apps| session(apps[1]) == Session::InGame));
    step(&mut [&mut server, &mut client], 2 * HZ as usize);

    let mut checked = 0;
    for round in 0..8 {
        let press = round % 2 == 0;
        let window = Entity::PLACEHOLDER;
        client.world_mut().write_message(KeyboardInput {
            key_code: KeyCode::KeyW,
            logical_key: Key::Character("w".into()),
            state: if press { ButtonState::Pressed } else { ButtonState::Released },
            text: None,
            repeat: false,
            window,
        });
        let tick_before = client.world().resource::<ClientTick>().0;
        server.update();
        client.update();
        let made_a_command = client.world().resource::<ClientTick>().0 != tick_before;
        if let (true, Some(cmd)) = (made_a_command, client.world().resource::<ThisTick>().0) {
            let expected = if press { 1.0 } else { 0.0 };
            assert_eq!(cmd.forward, expected, "round {round}: the command of the frame of the key event");
            checked += 1;
        }
        step(&mut [&mut server, &mut client], 10);
    }
    assert!(checked >= 6, "only {checked} frames made a command");
}
