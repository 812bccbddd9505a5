//! User commands: local input, sampled as often as the frame rate allows, is
//! folded into exactly one command per tick, stamped with the tick and sent.

use arena_protocol::{ToServer, encode};
use arena_sim::{Buttons, UserCmd};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::{ClientSet, ClientStats, Session};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LocalInput>()
        .init_resource::<ClientTick>()
        .add_systems(FixedUpdate, send_command.in_set(ClientSet::Commands))
        .add_systems(OnEnter(Session::Connecting), reset_tick);
}

/// What the local player is doing right now. The view (keyboard and mouse) or
/// a test writes it; every tick turns it into a [`UserCmd`].
#[derive(Resource, Debug, Default, Clone)]
pub struct LocalInput {
    /// Forward intent, -1..=1.
    pub forward: f32,
    /// Right intent, -1..=1.
    pub right: f32,
    /// View yaw, radians. Mouse look changes it every frame.
    pub yaw: f32,
    /// View pitch, radians.
    pub pitch: f32,
    /// Buttons held now.
    pub held: Buttons,
    /// Buttons pressed since the last tick, even if already released: a click
    /// shorter than a tick still fires.
    pub pressed: Buttons,
    /// Whether the view angles have been taken from the server's spawn yet.
    pub view_initialised: bool,
}

impl LocalInput {
    pub fn press(&mut self, button: Buttons) {
        self.held = self.held.union(button);
        self.pressed = self.pressed.union(button);
    }

    /// The command for `tick`; consumes the latched presses.
    pub fn take_cmd(&mut self, tick: u32) -> UserCmd {
        let buttons = self.held.union(self.pressed);
        self.pressed = Buttons::default();
        let mut cmd = UserCmd {
            tick,
            forward: self.forward,
            right: self.right,
            yaw: self.yaw,
            pitch: self.pitch,
            buttons,
            render_tick: 0.0,
        };
        cmd.sanitize();
        cmd
    }
}

/// The client's tick counter: the tick its next command is for.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClientTick(pub u32);

fn reset_tick(mut tick: ResMut<ClientTick>, mut input: ResMut<LocalInput>) {
    tick.0 = 0;
    input.view_initialised = false;
}

fn send_command(
    mut tick: ResMut<ClientTick>,
    mut input: ResMut<LocalInput>,
    client: Option<ResMut<RenetClient>>,
    mut stats: ResMut<ClientStats>,
) {
    let Some(mut client) = client else { return };
    tick.0 = tick.0.wrapping_add(1);
    let cmd = input.take_cmd(tick.0);
    let message = ToServer::Commands(vec![cmd]);
    match encode(&message) {
        Ok(bytes) => {
            client.send_message(message.channel(), bytes);
            stats.commands_sent += 1;
        }
        Err(e) => error!("could not encode a command: {e}"),
    }
}
