//! User commands: local input, read before the fixed loop every frame, is
//! folded into exactly one command per tick, stamped with the tick and the
//! server time the player was seeing, and kept in a window until the server
//! acknowledges it. A packet carries each command and the few before it
//! still unacknowledged, so that a lost packet loses no input. With the
//! socket on its own thread, each command leaves at its tick's pace, one
//! frame's time after its tick ([`SendLead`]), not in a bunch when the next
//! frame happens; with I/O once a frame, a frame's commands go together.

use std::collections::VecDeque;
use std::time::Duration;

use arena_protocol::command_packet::CommandPacket;
use arena_protocol::{MAX_CMDS_PER_PACKET, ToServer, encode};
use arena_sim::{Buttons, SpawnPoint, UserCmd, tick_after};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::command_clock::{ClientTick, ClockSync, next_command_tick};
use crate::render_clock::ServerClock;
use crate::scoreboard::MatchStatus;
use crate::settings::NetcodeSettings;
use crate::sub_tick_shots::{self, ClickFor, PendingClick, drawn_others};
use crate::vocabulary::{
    Baselines, ClickedFrame, ClientStats, ClientWorld, Drawn, DrawnFrame, LocalPlayer, MessageTally, NetPlayer, Outbox,
    Roster, SessionState, SnapshotApplied,
};

/// Commands in each packet, at least: the new ones and enough unacknowledged
/// ones before them to make this many (94 ms of redundancy at 64 Hz).
pub(crate) const COMMANDS_PER_PACKET: usize = 6;
/// Most unacknowledged commands kept (4 s at 64 Hz); older ones are forgotten.
pub(crate) const MAX_PENDING: usize = 256;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<LocalInput>()
        .init_session_resource::<DrawnFrame>()
        .init_session_resource::<ClickedFrame>()
        .init_session_resource::<ThisTick>()
        .init_session_resource::<CommandWindow>()
        .init_resource::<SendLead>()
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
    /// The life (the server's spawn count) the view last followed: none
    /// before the first snapshot with our player.
    pub view_life: Option<u8>,
    /// The life a teleport the prediction made began (the view turned for
    /// it then, not again when the server's word comes).
    pub predicted_teleport: Option<u8>,
    /// Whether a snapshot has shown our player dead, or the match its
    /// results, since: the next life is a respawn at a spawn point, whose
    /// view is turned to that point's way.
    pub turn_at_next_life: bool,
    /// A press of fire not yet in a command: where the view was (press
    /// before turning the view for the frame) and the frame looked at.
    pub click: Option<PendingClick>,
    /// Counts the clicks made (presses of fire that became a click).
    pub clicks: u64,
    /// The weapon wanted in hand (every command says it), and the one before.
    pub weapon: arena_sim::Weapon,
    pub last_weapon: arena_sim::Weapon,
}

impl LocalInput {
    /// Takes `weapon` in hand (from the next command); the one in hand
    /// becomes the last weapon.
    pub fn choose_weapon(&mut self, weapon: arena_sim::Weapon) {
        if weapon != self.weapon {
            self.last_weapon = self.weapon;
            self.weapon = weapon;
        }
    }

    /// Presses `button` now. A press of fire is a click at the frame drawn
    /// last, seen along the view as it is (so press before turning the view
    /// by this frame's mouse motion).
    pub fn press(&mut self, button: Buttons) {
        self.press_after(button, 0.0);
    }

    /// Presses `button` `after_s` seconds after the frame drawn last (for
    /// input that knows when it happened), with the view as it is then.
    pub fn press_after(&mut self, button: Buttons, after_s: f64) {
        self.held = self.held.union(button);
        self.pressed = self.pressed.union(button);
        if button.contains(Buttons::FIRE) && self.click.is_none() {
            let after_s = if after_s.is_finite() { after_s.clamp(0.0, 1.0) } else { 0.0 };
            self.click = Some(PendingClick { yaw: self.yaw, pitch: self.pitch, after_s, frame: None });
            self.clicks += 1;
        }
    }

    /// The command for `tick`, made while the other players were drawn at
    /// server time `render_tick`; consumes the latched presses.
    pub fn take_cmd(&mut self, tick: u32, render_tick: f64) -> UserCmd {
        let mut buttons = self.held.union(self.pressed);
        if self.weapon == arena_sim::Weapon::Rocket {
            buttons = buttons.union(Buttons::ROCKET);
        }
        self.pressed = Buttons::default();
        let mut cmd = UserCmd {
            tick,
            forward: self.forward,
            right: self.right,
            yaw: self.yaw,
            pitch: self.pitch,
            buttons,
            render_tick,
            click: None,
            drawn_between: None,
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
pub(crate) struct CommandWindow {
    pub pending: VecDeque<UserCmd>,
    /// The newest tick the server has acknowledged.
    pub last_ack: Option<u32>,
    /// Commands made since the last packet went out (the newest in `pending`).
    pub unsent: usize,
    /// When each of those is to leave, on the app's real clock (oldest first).
    pub departures: VecDeque<Duration>,
}

/// How long after its tick's time a command leaves: the time a frame takes
/// (smoothed), when the socket has a thread to send it then. A frame makes
/// the commands for the ticks since the last; leaving one frame after its
/// tick, each goes at its tick's pace, not in a bunch with the frame's
/// others. With I/O once a frame (time stepped by hand) it is zero: every
/// command goes with the frame that made it.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub(crate) struct SendLead(pub Duration);

/// Longest lead, seconds: a frame slower than this sends its commands in a bunch.
pub(crate) const MAX_SEND_LEAD_S: f64 = 0.25;
/// How quickly the lead follows the frame time.
const SEND_LEAD_SMOOTHING: f64 = 0.1;

/// Every frame: the lead, from how long frames take.
pub(crate) fn pace_departures(
    time: Res<Time<Real>>,
    transport: Option<Res<crate::transport::UdpTransport>>,
    mut lead: ResMut<SendLead>,
) {
    if !transport.is_some_and(|t| t.io_mode().between_frames()) {
        lead.0 = Duration::ZERO;
        return;
    }
    // Smoothed from zero: the first frames in a game (and any one long
    // frame) do not set it alone.
    let frame_s = time.delta_secs_f64().min(MAX_SEND_LEAD_S);
    let lead_s = lead.0.as_secs_f64();
    let lead_s = lead_s + (frame_s - lead_s) * SEND_LEAD_SMOOTHING;
    lead.0 = Duration::from_secs_f64(lead_s.clamp(0.0, MAX_SEND_LEAD_S));
}

/// Makes this tick's command (or none, while holding).
pub(crate) fn sample_command(
    mut tick: ResMut<ClientTick>,
    mut input: ResMut<LocalInput>,
    mut this_tick: ResMut<ThisTick>,
    mut sync: Option<ResMut<ClockSync>>,
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    clock: Res<ServerClock>,
    drawn: Res<DrawnFrame>,
    fixed: Res<Time<Fixed>>,
    window: Res<CommandWindow>,
    others: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    histories: Query<&crate::interpolation::History, Without<LocalPlayer>>,
    mut clicked: ResMut<ClickedFrame>,
) {
    let Some(cmd_tick) = next_command_tick(&mut tick, sync.as_deref_mut()) else {
        this_tick.0 = None;
        return;
    };
    let rates = (1.0 / fixed.timestep().as_secs_f64(), f64::from(roster.tick_rate().hz()));
    let click = if settings.subtick && roster.subtick {
        sub_tick_shots::click_for(&mut input.click, cmd_tick, &drawn, rates, || drawn_others(&others))
    } else {
        input.click = None;
        ClickFor::Nothing
    };
    // What the player saw when pressing fire: the others drawn at the
    // server clock's render time (as of the last frame), or as the newest
    // snapshot had them with interpolation off.
    let mut cmd = input.take_cmd(cmd_tick, clock.seen_tick(settings.interpolation));
    match click {
        ClickFor::Now(click, render_tick, seen) => {
            // A click: the shot goes from the click's instant, and the others
            // are rewound to what was drawn then.
            cmd.click = Some(click);
            cmd.render_tick = render_tick;
            cmd.sanitize();
            cmd.quantize();
            *clicked = ClickedFrame { tick: cmd_tick, others: seen };
        }
        ClickFor::Later => {
            // Pressed after this tick's end (several ticks in one long
            // frame): the press belongs to a later command.
            cmd.buttons.set(Buttons::FIRE, false);
            cmd.sanitize();
            cmd.quantize();
            input.pressed = input.pressed.union(Buttons::FIRE);
        }
        ClickFor::Nothing => {}
    }
    // A shot says which two snapshots the others were drawn between at its
    // render time (interpolation's own choice; with it off, the newest and
    // the one before), so the server blends those same two.
    if cmd.held(Buttons::FIRE) {
        let render = if settings.interpolation { cmd.render_tick } else { f64::from(u32::MAX) };
        cmd.drawn_between = histories.iter().find_map(|h| h.between(render));
        cmd.sanitize();
        cmd.quantize();
    }
    if roster.watching() {
        // A watcher's commands keep its clock in step and carry its
        // acknowledgements; its view turns, but it neither moves nor acts.
        cmd = UserCmd { tick: cmd.tick, yaw: cmd.yaw, pitch: cmd.pitch, ..UserCmd::default() };
    }
    if window.last_ack.is_none() {
        // Until the server has run one of our commands, the clock is still
        // finding its lead and the server drops what comes too late: a shot
        // predicted now would flash and sound on our screen and never
        // happen on the server (a round trip of phantom shots on joining).
        cmd.buttons.set(Buttons::FIRE.union(Buttons::RELOAD), false);
        cmd.click = None;
    }
    this_tick.0 = Some(cmd);
}

/// A click still waiting for its command is stamped with the frame it was
/// made in, and the others as that frame drew them, before the next frame
/// is drawn over it.
pub(crate) fn stamp_clicks(
    drawn: Res<DrawnFrame>,
    others: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    mut input: ResMut<LocalInput>,
) {
    if let Some(click) = input.click.as_mut().filter(|c| c.frame.is_none()) {
        click.frame = Some((*drawn, drawn_others(&others)));
    }
}

/// The view on joining and after each respawn (after a death, or at a new
/// match): where the server spawned us.
/// On joining, the state has not run a command of ours: its view is the
/// spawn's. On a respawn, the commands in flight when the server put us
/// back still carried the view we died with, so the state has turned back
/// to it: the spawn point's own yaw is the one that faces into the arena.
/// A new life with neither between is a teleporter's: the view turns the
/// way it sends players (the prediction turned it already when it
/// predicted the teleport, and took the new life as seen).
fn turn_to_spawn(
    input: &mut LocalInput,
    state: &arena_sim::PlayerState,
    spawns: &[SpawnPoint],
    teleporters: &[arena_sim::TeleporterDef],
) {
    if !state.alive {
        input.turn_at_next_life = true;
        return;
    }
    if input.view_life == Some(state.spawn_count) {
        return;
    }

    match input.view_life {
        None => (input.yaw, input.pitch) = (state.yaw, state.pitch),
        Some(_) if input.turn_at_next_life => {
            input.yaw = spawn_yaw(spawns, state.pos).unwrap_or(state.yaw);
            input.pitch = 0.0;
        }
        // A teleport the prediction already turned the view for: as it is
        // (the mouse has moved it on since).
        Some(_) if input.predicted_teleport == Some(state.spawn_count) => {}
        Some(_) => {
            if let Some(t) = teleporters.iter().find(|t| t.dest.distance(state.pos) <= SPAWN_FOUND_WITHIN_M) {
                input.yaw = t.yaw();
            }
        }
    }
    input.view_life = Some(state.spawn_count);
    input.turn_at_next_life = false;
}

/// The yaw of the spawn point a player put back at `pos` stands on: the
/// nearest within [`SPAWN_FOUND_WITHIN_M`] (the ground a round trip of
/// walking covers; spawn points lie twice as far apart or more).
fn spawn_yaw(spawns: &[SpawnPoint], pos: Vec3) -> Option<f32> {
    spawns
        .iter()
        .map(|s| (s.pos.distance(pos), s))
        .filter(|(d, _)| *d <= SPAWN_FOUND_WITHIN_M)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| s.yaw())
}

/// How far from its spawn point a respawned player may be when its client
/// first sees it, metres: 7 m/s for the round trip and a slow frame.
const SPAWN_FOUND_WITHIN_M: f32 = 5.0;

/// Puts this tick's command in the window of unacknowledged ones, to leave
/// the lead after its tick's time (the end of the tick, on the app's real
/// clock: the frame's time less how far the fixed loop still has to go).
pub(crate) fn record_command(
    this_tick: Res<ThisTick>,
    mut window: ResMut<CommandWindow>,
    lead: Res<SendLead>,
    real: Res<Time<Real>>,
    frame: Res<Time<Virtual>>,
    fixed: Res<Time<Fixed>>,
) {
    let Some(cmd) = this_tick.0 else { return };
    let behind_frame = frame.elapsed().saturating_sub(fixed.elapsed());
    let leave_at = real.elapsed().saturating_sub(behind_frame) + lead.0;
    window.pending.push_back(cmd);
    window.departures.push_back(leave_at);
    window.unsent += 1;
    while window.pending.len() > MAX_PENDING {
        window.pending.pop_front();
    }
    while window.departures.len() > window.unsent.min(MAX_PENDING) {
        window.departures.pop_front();
    }
}

/// Once a frame in which commands were made: packets with them (and the
/// unacknowledged ones before, for redundancy) and the newest snapshot
/// decoded, so the server knows what to delta against. Commands due now go
/// together; each later one goes alone at its own time.
pub(crate) fn send_commands(
    mut window: ResMut<CommandWindow>,
    baselines: Res<Baselines>,
    client: Option<Res<RenetClient>>,
    time: Res<Time<Real>>,
    settings: Res<NetcodeSettings>,
    mut last_packet: Local<Option<std::time::Duration>>,
    mut outbox: ResMut<Outbox>,
    mut stats: ResMut<ClientStats>,
    mut tally: ResMut<MessageTally>,
) {
    if client.is_none() {
        return;
    }
    let now = time.elapsed();
    // `cl_cmdrate`: at most so many packets a second; the commands made in
    // between wait, and go together in the next.
    if settings.cmd_rate > 0
        && last_packet
            .is_some_and(|at| now < at + std::time::Duration::from_secs_f64(1.0 / f64::from(settings.cmd_rate)))
    {
        return;
    }
    if window.unsent > 0 {
        *last_packet = Some(now);
    }
    let len = window.pending.len();
    let first_new = len - window.unsent.min(len);
    window.unsent = 0;
    let mut departures = std::mem::take(&mut window.departures);
    if settings.cmd_rate > 0 {
        // Held to the command rate: everything waiting goes now, together.
        departures.clear();
    }
    // The departure of pending command `i` (those without one: now).
    let leave_at = |i: usize| {
        let from_end = len - i;
        departures.len().checked_sub(from_end).and_then(|j| departures.get(j)).copied().unwrap_or(now).max(now)
    };
    let mut start = first_new;
    while start < len {
        let at = leave_at(start);
        let mut end = start + 1;
        while end < len && end - start < MAX_CMDS_PER_PACKET && at == now && leave_at(end) == now {
            end += 1;
        }
        let from = end.saturating_sub(COMMANDS_PER_PACKET).min(start);
        let cmds: Vec<UserCmd> = window.pending.range(from..end).copied().collect();
        let newest = cmds.last().map_or(0, |c| c.tick);
        let message = ToServer::Commands(CommandPacket { snapshot_ack: baselines.ack(), cmds }.encode());
        match encode(&message) {
            Ok(bytes) => {
                tally.count_up(message.kind(), bytes.len());
                outbox.commands.push((at, message.channel(), bytes, newest));
                stats.commands_sent += 1;
            }
            Err(e) => error!("could not encode commands: {e}"),
        }
        start = end;
    }
}

/// On each snapshot: forget what the server has run; on the first, and on
/// the first of each new life, look where the server spawned us.
pub(crate) fn acknowledge(
    mut applied: MessageReader<SnapshotApplied>,
    mut window: ResMut<CommandWindow>,
    mut input: ResMut<LocalInput>,
    world: Res<ClientWorld>,
    status: Res<MatchStatus>,
) {
    // A new match puts everyone back at a spawn point.
    input.turn_at_next_life |= status.is_over();
    for snapshot in applied.read() {
        if let Some(state) = snapshot.local_state {
            turn_to_spawn(&mut input, &state, &world.0.map().spawns, &world.0.map().teleporters);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_respawned_player_looks_the_way_its_spawn_point_faces() {
        let spawns = arena_sim::MapDef::foundry().spawns;
        for spawn in &spawns {
            // A step or two off it, as a round trip of commands may carry it.
            let yaw = spawn_yaw(&spawns, spawn.pos + Vec3::new(0.8, 0.0, -1.1));
            assert_eq!(yaw, Some(spawn.yaw()), "{spawn:?}");
            // Facing into the arena: the centre lies ahead (forward is -z
            // at yaw 0, turning toward -x as yaw grows).
            let forward = Vec3::new(-spawn.yaw().sin(), 0.0, -spawn.yaw().cos());
            let to_centre = (Vec3::ZERO - spawn.pos).with_y(0.0).normalize();
            assert!(forward.dot(to_centre) > 0.7, "{spawn:?} faces away from the centre");
        }
        // Nowhere near a spawn point (the range's firing line): the state's own.
        assert_eq!(spawn_yaw(&spawns, Vec3::new(0.0, 0.0, 0.0)), None);
    }

    fn turn_to_spawn_no_teleporters(input: &mut LocalInput, state: &arena_sim::PlayerState, spawns: &[SpawnPoint]) {
        turn_to_spawn(input, state, spawns, &[]);
    }

    #[test]
    fn the_view_turns_to_the_spawn_on_joining_and_after_a_death_only() {
        let spawns = arena_sim::MapDef::foundry().spawns;
        let spawn = spawns[1];
        let mut input = LocalInput::default();
        let at = |pos: Vec3, yaw: f32, alive: bool, spawn_count: u8| arena_sim::PlayerState {
            pos,
            yaw,
            pitch: 0.3,
            alive,
            spawn_count,
            ..Default::default()
        };
        // Joining: the state's view.
        turn_to_spawn_no_teleporters(&mut input, &at(spawn.pos, 1.0, true, 0), &spawns);
        assert_eq!((input.yaw, input.pitch), (1.0, 0.3));
        // Looking around, then teleported (a new life, no death): kept.
        (input.yaw, input.pitch) = (2.0, -0.2);
        turn_to_spawn_no_teleporters(&mut input, &at(Vec3::new(5.0, 0.0, 5.0), 0.5, true, 1), &spawns);
        assert_eq!((input.yaw, input.pitch), (2.0, -0.2));
        // Killed, then back at a spawn point with the old view in the state:
        // the spawn point's yaw, level.
        turn_to_spawn_no_teleporters(&mut input, &at(Vec3::new(5.0, 0.0, 5.0), 2.0, false, 1), &spawns);
        assert_eq!((input.yaw, input.pitch), (2.0, -0.2));
        turn_to_spawn_no_teleporters(&mut input, &at(spawn.pos + Vec3::X, 2.0, true, 2), &spawns);
        assert_eq!((input.yaw, input.pitch), (spawn.yaw(), 0.0));
        // The same life again changes nothing.
        input.yaw = 0.7;
        turn_to_spawn_no_teleporters(&mut input, &at(spawn.pos, 2.0, true, 2), &spawns);
        assert_eq!(input.yaw, 0.7);
    }
}
