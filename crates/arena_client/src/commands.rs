//! User commands: local input, sampled as often as the frame rate allows, is
//! folded into exactly one command per tick, stamped with the tick, and sent
//! together with the few before it that the server has not acknowledged, so
//! that a lost packet loses no input.

use arena_protocol::{ToServer, encode};
use arena_sim::{Buttons, UserCmd};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::interpolation::InterpClock;
use crate::prediction::Prediction;
use crate::settings::NetcodeSettings;
use crate::sync::ClockSync;
use crate::{ClientSet, ClientStats, Session};

/// Commands in each packet: this tick's and up to this many minus one
/// unacknowledged ones before it.
pub const COMMANDS_PER_PACKET: usize = 6;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LocalInput>()
        .init_resource::<ClientTick>()
        .init_resource::<ThisTick>()
        .add_systems(FixedUpdate, sample_command.in_set(ClientSet::Sample))
        .add_systems(FixedUpdate, send_commands.in_set(ClientSet::SendCommands))
        .add_systems(OnEnter(Session::Connecting), reset);
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

    /// The command for `tick`, made while the other players were drawn at
    /// server time `render_tick`; consumes the latched presses.
    pub fn take_cmd(&mut self, tick: u32, render_tick: f64) -> UserCmd {
        let buttons = self.held.union(self.pressed);
        self.pressed = Buttons::default();
        let mut cmd = UserCmd {
            tick,
            forward: self.forward,
            right: self.right,
            yaw: self.yaw,
            pitch: self.pitch,
            buttons,
            render_tick,
        };
        cmd.sanitize();
        cmd
    }
}

/// The tick the client's next command is for.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClientTick(pub u32);

/// The command made this tick, if one was (none while holding for clock sync).
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct ThisTick(pub Option<UserCmd>);

fn reset(mut tick: ResMut<ClientTick>, mut input: ResMut<LocalInput>, mut this_tick: ResMut<ThisTick>) {
    tick.0 = 0;
    this_tick.0 = None;
    input.view_initialised = false;
}

fn sample_command(
    mut tick: ResMut<ClientTick>,
    mut input: ResMut<LocalInput>,
    mut this_tick: ResMut<ThisTick>,
    sync: Option<ResMut<ClockSync>>,
    settings: Res<NetcodeSettings>,
    clock: Res<InterpClock>,
) {
    if let Some(mut sync) = sync
        && sync.hold_ticks > 0
    {
        sync.hold_ticks -= 1;
        this_tick.0 = None;
        return;
    }
    // What the player saw when pressing fire: the others drawn at the
    // interpolation clock (as of the last frame), or as the newest snapshot
    // had them with interpolation off.
    let render_tick =
        if settings.interpolation { clock.render_tick } else { clock.newest_tick.map(f64::from).unwrap_or(0.0) };
    this_tick.0 = Some(input.take_cmd(tick.0, render_tick));
    tick.0 = tick.0.wrapping_add(1);
}

fn send_commands(
    this_tick: Res<ThisTick>,
    prediction: Res<Prediction>,
    client: Option<ResMut<RenetClient>>,
    mut stats: ResMut<ClientStats>,
) {
    let (Some(_), Some(mut client)) = (this_tick.0, client) else { return };
    let skip = prediction.pending.len().saturating_sub(COMMANDS_PER_PACKET);
    let cmds: Vec<UserCmd> = prediction.pending.iter().skip(skip).map(|p| p.cmd).collect();
    let message = ToServer::Commands(cmds);
    match encode(&message) {
        Ok(bytes) => {
            client.send_message(message.channel(), bytes);
            stats.commands_sent += 1;
        }
        Err(e) => error!("could not encode commands: {e}"),
    }
}
