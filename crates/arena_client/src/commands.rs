//! User commands: local input, read before the fixed loop every frame, is
//! folded into exactly one command per tick, stamped with the tick and the
//! server time the player was seeing, and kept in a window until the server
//! acknowledges it. Once a frame, a packet carries the commands made since
//! the last and the few before them still unacknowledged, so that a lost
//! packet loses no input (and a slow frame that made many commands sends
//! them all).

use std::collections::VecDeque;

use arena_protocol::command_packet::CommandPacket;
use arena_protocol::{MAX_CMDS_PER_PACKET, ToServer, encode};
use arena_sim::{Buttons, UserCmd, tick_after};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::settings::NetcodeSettings;
use crate::timeline::{ClientTick, ClockSync, ServerClock, next_command_tick};
use crate::vocabulary::{Baselines, ClientStats, MessageTally, Outbox, SessionState, SnapshotApplied};

/// Commands in each packet, at least: the new ones and enough unacknowledged
/// ones before them to make this many (94 ms of redundancy at 64 Hz).
pub const COMMANDS_PER_PACKET: usize = 6;
/// Most unacknowledged commands kept (4 s at 64 Hz); older ones are forgotten.
pub const MAX_PENDING: usize = 256;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<LocalInput>()
        .init_session_resource::<ThisTick>()
        .init_session_resource::<CommandWindow>()
        .init_resource::<Outbox>();
}

/// What the local player is doing right now. The view (keyboard and mouse,
/// read before the fixed loop) or a test writes it; every tick turns it into
/// a [`UserCmd`].
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
        // On the wire's grids before prediction: the server runs exactly this.
        cmd.quantize();
        cmd
    }
}

/// The command made this tick, if one was (none while holding for clock sync).
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct ThisTick(pub Option<UserCmd>);

/// The commands the server has not acknowledged yet, oldest first: what each
/// packet resends, and what reconciliation replays.
#[derive(Resource, Debug, Default, Clone)]
pub struct CommandWindow {
    pub pending: VecDeque<UserCmd>,
    /// The newest tick the server has acknowledged.
    pub last_ack: Option<u32>,
    /// Commands made since the last packet went out (the newest in `pending`).
    pub unsent: usize,
}

impl CommandWindow {
    /// The commands after `ack`, oldest first.
    pub fn after(&self, ack: u32) -> impl Iterator<Item = &UserCmd> {
        self.pending.iter().filter(move |c| tick_after(c.tick, ack))
    }
}

/// Makes this tick's command (or none, while holding).
pub(crate) fn sample_command(
    mut tick: ResMut<ClientTick>,
    mut input: ResMut<LocalInput>,
    mut this_tick: ResMut<ThisTick>,
    mut sync: Option<ResMut<ClockSync>>,
    settings: Res<NetcodeSettings>,
    clock: Res<ServerClock>,
    window: Res<CommandWindow>,
) {
    let Some(cmd_tick) = next_command_tick(&mut tick, sync.as_deref_mut()) else {
        this_tick.0 = None;
        return;
    };
    // What the player saw when pressing fire: the others drawn at the
    // server clock's render time (as of the last frame), or as the newest
    // snapshot had them with interpolation off.
    let mut cmd = input.take_cmd(cmd_tick, clock.seen_tick(settings.interpolation));
    if window.last_ack.is_none() {
        // Until the server has run one of our commands, the clock is still
        // finding its lead and the server drops what comes too late: a shot
        // predicted now would flash and sound on our screen and never
        // happen on the server (a round trip of phantom shots on joining).
        cmd.buttons.set(Buttons::FIRE.union(Buttons::RELOAD), false);
    }
    this_tick.0 = Some(cmd);
}

/// Puts this tick's command in the window of unacknowledged ones.
pub(crate) fn record_command(this_tick: Res<ThisTick>, mut window: ResMut<CommandWindow>) {
    let Some(cmd) = this_tick.0 else { return };
    window.pending.push_back(cmd);
    window.unsent += 1;
    while window.pending.len() > MAX_PENDING {
        window.pending.pop_front();
    }
}

/// Once a frame in which commands were made: a packet with them (and the
/// unacknowledged ones before, for redundancy) and the newest snapshot
/// decoded, so the server knows what to delta against.
pub(crate) fn send_commands(
    mut window: ResMut<CommandWindow>,
    baselines: Res<Baselines>,
    client: Option<ResMut<RenetClient>>,
    mut outbox: ResMut<Outbox>,
    mut stats: ResMut<ClientStats>,
    mut tally: ResMut<MessageTally>,
) {
    let Some(mut client) = client else { return };
    let len = window.pending.len();
    let mut start = len - window.unsent.min(len);
    window.unsent = 0;
    // Usually one packet; a frame long enough to make more commands than a
    // packet holds sends them in several (all in this frame's datagram).
    while start < len {
        let end = (start + MAX_CMDS_PER_PACKET).min(len);
        let from = end.saturating_sub(COMMANDS_PER_PACKET).min(start);
        let cmds = window.pending.range(from..end).copied().collect();
        let message = ToServer::Commands(CommandPacket { snapshot_ack: baselines.ack(), cmds }.encode());
        match encode(&message) {
            Ok(bytes) => {
                tally.count_up(message.kind(), bytes.len());
                client.send_message(message.channel(), bytes);
                stats.commands_sent += 1;
                outbox.due = true;
            }
            Err(e) => error!("could not encode commands: {e}"),
        }
        start = end;
    }
}

/// On each snapshot: forget what the server has run; on the first, look
/// where the server spawned us.
pub(crate) fn acknowledge(
    mut applied: MessageReader<SnapshotApplied>,
    mut window: ResMut<CommandWindow>,
    mut input: ResMut<LocalInput>,
) {
    for snapshot in applied.read() {
        if let Some(state) = snapshot.local_state
            && !input.view_initialised
        {
            input.yaw = state.yaw;
            input.pitch = state.pitch;
            input.view_initialised = true;
        }
        let Some(ack) = snapshot.ack else { continue };
        if window.last_ack.is_some_and(|last| !tick_after(ack, last)) {
            continue;
        }
        window.last_ack = Some(ack);
        while window.pending.front().is_some_and(|c| !tick_after(c.tick, ack)) {
            window.pending.pop_front();
        }
    }
}
