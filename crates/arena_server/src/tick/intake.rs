//! Command intake: decode what clients sent, check it, repair or drop bad
//! fields, and file each command under its tick in the player's buffer.
//!
//! The simulation takes exactly one command per player per tick from that
//! buffer: the one stamped with the tick, or, if it has not come, a repeat of
//! the last one (counted as missing). So a client gains nothing by sending
//! faster; commands for ticks already simulated are late, and commands too
//! far in the future are dropped (the budget Source keeps with
//! `sv_maxusrcmdprocessticks`); all of it is counted.

use std::collections::{BTreeMap, VecDeque};

use arena_protocol::command_packet::CommandPacket;
use arena_protocol::{ToServer, channel, decode};
use arena_sim::{UserCmd, tick_after, tick_diff};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::socket::transport::ServerTransport;
use crate::vocabulary::{
    ChatSaid, ClientPrefs, KillCamSkipped, MapAsked, Roster, RoundTrips, ServerStats, ServerTick, SideAsked,
    SnapshotAck, TickRate, VoiceSaid, VoteSaid, VoteSaying,
};

/// Furthest ahead of the server's tick a command is taken, seconds. A client
/// whose commands come from further ahead has a broken (or fast) clock.
pub(crate) const MAX_AHEAD_S: u32 = 1;
/// Repeated ticks remembered to recognise late commands for them.
const REMEMBERED_REPEATS: usize = 64;
/// The margin reported for a tick whose command had not come, ticks.
pub(crate) const MISSING_MARGIN_TICKS: f32 = -1.0;
/// How long a missing command is stood in for by a repeat of the last one,
/// seconds. Beyond it the player's commands have stalled: it gets neutral
/// ones (no walking, no firing) until they come again, so that a client that
/// stops sending cannot keep running and shooting on the server.
pub(crate) const STALL_REPEAT_S: f32 = 0.0625;
/// Largest arrival margin the jitter statistics take in, ticks.
const ARRIVAL_SAMPLE_LIMIT_TICKS: f32 = 128.0;
/// How quickly the arrival statistics follow new commands.
const ARRIVAL_SMOOTHING: f32 = 0.05;
/// Longest frame of a client's the server measures, seconds (a frame a
/// second, as a software renderer draws a busy scene): a slower "frame"
/// says nothing a rewind could use.
pub(crate) const MAX_CLIENT_FRAME_S: f32 = 1.0;
/// How quickly the measured frame interval follows new frames.
const FRAME_SMOOTHING: f32 = 0.25;

/// Per player: what happened to its commands.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CommandStats {
    /// Commands received (redundant copies included).
    pub received: u64,
    /// Ticks run with the player's own command for that tick.
    pub run: u64,
    /// Ticks run with a repeat of the last command because the right one had not come.
    pub missing: u64,
    /// Commands that came after their tick had been simulated.
    pub late: u64,
    /// Commands for ticks too far ahead, dropped.
    pub too_far_ahead: u64,
    /// Commands with NaN or out-of-range fields, repaired.
    pub repaired: u64,
    /// Ticks run on a neutral command because the player's had stalled.
    pub neutral: u64,
}

/// Where the render time a client's commands claim last changed.
#[derive(Debug, Clone, Copy)]
struct FrameStart {
    tick: u32,
    render_tick: f64,
    /// Changed from another claimed render time (a frame's start), not
    /// first seen in a run.
    whole: bool,
}

/// A player's commands by tick, waiting for their tick.
#[derive(Component, Debug, Default)]
pub struct CommandBuffer {
    /// Each command with how early it arrived before its tick, in ticks.
    queue: BTreeMap<u32, (UserCmd, f32)>,
    /// How early the command run last came, ticks ([`MISSING_MARGIN_TICKS`]
    /// if it had not come).
    pub last_margin: Option<f32>,
    /// The command run last, repeated when the next one is missing.
    last: Option<UserCmd>,
    /// Whether the command run last was a stand-in (a repeat or a neutral
    /// one) for one that had not come.
    pub last_repeated: bool,
    /// The tick simulated last for this player, if any of its commands has run.
    pub last_run_tick: Option<u32>,
    /// The newest command tick received, run or not.
    pub newest_received: Option<u32>,
    /// Recent ticks that ran on a repeat.
    repeated: VecDeque<u32>,
    /// The newest tick whose command came late.
    newest_late: Option<u32>,
    /// Ticks in a row run without the player's own command.
    missing_in_a_row: u32,
    /// Smoothed margin of arriving commands, and smoothed deviation from it
    /// (the arrival jitter), ticks.
    margin_mean: Option<f32>,
    jitter_ticks: f32,
    /// The client's frames as its commands show them: a client makes the
    /// commands of every tick its frame covers at once, all claiming the
    /// render time of that frame. The tick where the claimed render time
    /// last changed, and the smoothed ticks between changes.
    frame_started: Option<FrameStart>,
    frame_ticks: f32,
    pub stats: CommandStats,
}

impl CommandBuffer {
    /// Files a sanitised command. `server_tick` is the tick simulated last and
    /// `since_tick` how far (in ticks) time has moved on since it ran.
    pub fn offer(&mut self, cmd: UserCmd, server_tick: u32, since_tick: f32, max_ahead_ticks: u32) {
        self.stats.received += 1;
        // Before the range checks on purpose: a client running too far
        // ahead learns it from this (its clock resets on it), even while
        // every command it sends is dropped as too far ahead.
        if self.newest_received.is_none_or(|newest| tick_after(cmd.tick, newest)) {
            self.newest_received = Some(cmd.tick);
        }
        // Tick `cmd.tick` runs `tick_diff` ticks after `server_tick`, of which
        // `since_tick` have passed: this is how early the command came.
        let margin = tick_diff(cmd.tick, server_tick) as f32 - since_tick;
        if !tick_after(cmd.tick, server_tick) {
            // Its tick is past. A redundant copy of a command already run is
            // normal; the first copy of the real command for a tick that ran
            // without it is late, and how late tells the client's clock sync.
            let ran_without_it = match self.repeated.iter().position(|&t| t == cmd.tick) {
                Some(i) => {
                    self.repeated.remove(i);
                    true
                }
                // Before any command has run, every command so far has been late.
                None => self.last.is_none() && self.newest_late.is_none_or(|late| tick_after(cmd.tick, late)),
            };
            if ran_without_it {
                self.newest_late = Some(cmd.tick);
                self.stats.late += 1;
            }
            return;
        }
        if tick_diff(cmd.tick, server_tick) > max_ahead_ticks as i32 {
            self.stats.too_far_ahead += 1;
            return;
        }
        // The first copy of a command wins; redundant copies are identical.
        if let std::collections::btree_map::Entry::Vacant(slot) = self.queue.entry(cmd.tick) {
            slot.insert((cmd, margin));
            if !margin.is_finite() {
                return;
            }
            // A command a second early or late says nothing more about jitter.
            let margin = margin.clamp(-ARRIVAL_SAMPLE_LIMIT_TICKS, ARRIVAL_SAMPLE_LIMIT_TICKS);
            let mean = self.margin_mean.map_or(margin, |m| m + (margin - m) * ARRIVAL_SMOOTHING);
            self.jitter_ticks += ((margin - mean).abs() - self.jitter_ticks) * ARRIVAL_SMOOTHING;
            self.margin_mean = Some(mean);
        }
    }

    /// How much the arrival of this player's commands varies, ticks (a
    /// smoothed mean deviation).
    pub fn arrival_jitter_ticks(&self) -> f32 {
        self.jitter_ticks
    }

    /// How long the client's frames are, ticks, as its commands show them
    /// (1 when it draws at least a frame a tick; at most
    /// [`MAX_CLIENT_FRAME_S`]` × tick_hz`). A claim of the client's, so it
    /// widens only what the rewind cap bounds anyway.
    pub fn frame_ticks(&self, tick_hz: u32) -> f32 {
        self.frame_ticks.clamp(1.0, (MAX_CLIENT_FRAME_S * tick_hz as f32).max(1.0))
    }

    /// Counts a run command's render time towards [`Self::frame_ticks`]:
    /// the ticks between two changes of the render time commands claim. Only
    /// commands that claim one count (fire held; a click's render time is its
    /// own instant, not its frame's); without one the count starts again,
    /// at the next change (a run's first change ends no whole frame).
    fn measure_frame(&mut self, cmd: &UserCmd) {
        if cmd.click.is_some() {
            return;
        }
        if !(cmd.render_tick.is_finite() && cmd.render_tick > 0.0) {
            self.frame_started = None;
            return;
        }
        let Some(frame) = self.frame_started else {
            self.frame_started = Some(FrameStart { tick: cmd.tick, render_tick: cmd.render_tick, whole: false });
            return;
        };
        if cmd.render_tick == frame.render_tick {
            return;
        }
        if frame.whole {
            let limit = MAX_CLIENT_FRAME_S * *arena_sim::TICK_HZ_RANGE.end() as f32;
            let ticks = (tick_diff(cmd.tick, frame.tick) as f32).clamp(1.0, limit);
            let smoothed = if self.frame_ticks > 0.0 { self.frame_ticks } else { ticks };
            self.frame_ticks = (smoothed + (ticks - smoothed) * FRAME_SMOOTHING).clamp(1.0, limit);
        }
        self.frame_started = Some(FrameStart { tick: cmd.tick, render_tick: cmd.render_tick, whole: true });
    }

    /// The command to run at `tick`: the player's own; if it has not come, a
    /// repeat of the last one for up to `max_repeats` ticks in a row, then a
    /// neutral one that only keeps the view (`None` until any command has come).
    pub fn take(&mut self, tick: u32, max_repeats: u32) -> Option<UserCmd> {
        // Anything older than `tick` missed its tick.
        while let Some((&t, _)) = self.queue.first_key_value() {
            if !tick_after(tick, t) {
                break;
            }
            self.queue.pop_first();
            self.stats.late += 1;
        }
        if let Some((cmd, margin)) = self.queue.remove(&tick) {
            self.missing_in_a_row = 0;
            self.last_repeated = false;
            self.last_margin = Some(margin);
            self.stats.run += 1;
            self.last = Some(cmd);
            self.last_run_tick = Some(tick);
            self.measure_frame(&cmd);
            return Some(cmd);
        }
        let last = self.last?;
        self.last_repeated = true;
        self.last_margin = Some(MISSING_MARGIN_TICKS);
        self.stats.missing += 1;
        self.repeated.push_back(tick);
        while self.repeated.len() > REMEMBERED_REPEATS {
            self.repeated.pop_front();
        }
        self.last_run_tick = Some(tick);
        self.missing_in_a_row = self.missing_in_a_row.saturating_add(1);
        if self.missing_in_a_row > max_repeats {
            self.stats.neutral += 1;
            return Some(UserCmd {
                tick,
                yaw: last.yaw,
                pitch: last.pitch,
                render_tick: last.render_tick,
                ..UserCmd::default()
            });
        }
        // A repeat is the same input, not the same press: no click. Its
        // client drew the others later by as many ticks as it stands for (the
        // render clock runs at the tick rate): a held trigger firing on a
        // repeat is tested there, not at the last command's instant. The two
        // snapshots the last command named still hold while that time lies
        // between them; past the newer, the client may well have had the next
        // one, so the server's own recorded ticks are the better guess.
        let render_tick = last.render_tick + f64::from(tick_diff(tick, last.tick).max(0));
        let drawn_between = last.drawn_between.filter(|&(_, newer)| render_tick <= f64::from(newer));
        Some(UserCmd { tick, click: None, render_tick, drawn_between, ..last })
    }

    /// The most ticks in a row a missing command is repeated at `tick_hz`.
    pub fn max_repeats(rate: arena_sim::TickRate) -> u32 {
        ((STALL_REPEAT_S * rate.hz() as f32).round() as u32).max(1)
    }

    /// Commands waiting for their tick.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

pub(crate) fn receive_commands(
    mut server: ResMut<RenetServer>,
    roster: Res<Roster>,
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    virtual_time: Res<Time<Virtual>>,
    fixed_time: Res<Time<Fixed>>,
    mut buffers: Query<(&mut CommandBuffer, &mut ClientPrefs, &mut SnapshotAck)>,
    mut stats: ResMut<ServerStats>,
    mut transport: ResMut<ServerTransport>,
    mut skips: MessageWriter<KillCamSkipped>,
    (mut chat, mut voice): (MessageWriter<ChatSaid>, MessageWriter<VoiceSaid>),
    mut sides: MessageWriter<SideAsked>,
    (mut votes, mut maps): (MessageWriter<VoteSaid>, MessageWriter<MapAsked>),
    (mut round_trips, real): (ResMut<RoundTrips>, Res<Time<Real>>),
) {
    let clients = server.clients_id();
    round_trips.retain(|c| clients.contains(&c));
    let max_ahead = MAX_AHEAD_S * rate.hz();
    // Time since the last tick ran, in ticks: the fixed clock lags the frame's
    // clock by what has not been simulated yet.
    let since_tick = (virtual_time.elapsed().saturating_sub(fixed_time.elapsed())).as_secs_f32()
        / fixed_time.timestep().as_secs_f32().max(1e-6);
    for client_id in clients {
        let entity = roster.by_client(client_id).map(|(_, e)| e.entity);
        let watching = roster.by_client(client_id).is_some_and(|(_, e)| e.side.watches());
        // Reliable messages through renet; commands outside it (renet's
        // unreliable channel is read too: a client may use either).
        let mut messages: Vec<bevy_renet::renet::Bytes> = Vec::new();
        for channel in [channel::RELIABLE, channel::UNRELIABLE] {
            while let Some(bytes) = server.receive_message(client_id, channel) {
                messages.push(bytes);
            }
        }
        messages.extend(transport.take_raw(client_id).into_iter().map(bevy_renet::renet::Bytes::from));
        {
            for bytes in messages {
                let Some((mut buffer, mut prefs, mut ack)) = entity.and_then(|e| buffers.get_mut(e).ok()) else {
                    stats.unknown_client_messages += 1;
                    debug!("dropped a message from client {client_id}, which has no player");
                    continue;
                };
                let message = match decode::<ToServer>(&bytes).map_err(|e| e.to_string()).and_then(|m| {
                    m.validate()?;
                    Ok(m)
                }) {
                    Ok(message) => message,
                    Err(e) => {
                        stats.bad_messages += 1;
                        transport.report_bad_message(client_id);
                        debug!("dropped a bad message from client {client_id}: {e}");
                        continue;
                    }
                };
                match message {
                    ToServer::Commands(bytes) => {
                        // Its newest tick is read nearest ours (it comes as its low bits).
                        let Ok(packet) = CommandPacket::decode(&bytes, tick.0) else {
                            stats.bad_messages += 1;
                            transport.report_bad_message(client_id);
                            debug!("dropped a command packet from client {client_id} that does not decode");
                            continue;
                        };
                        // Out of order or not; "none": the client lost its
                        // baselines and asks for a whole snapshot.
                        ack.0.note(packet.snapshot_ack);
                        if let Some(acked) = packet.snapshot_ack {
                            round_trips.acked(client_id, acked, real.elapsed());
                        }
                        for mut cmd in packet.cmds {
                            if watching {
                                // A watcher's commands keep its clock in step
                                // and nothing else: one that would move or
                                // fire is counted, and filed without it.
                                if cmd.acts() {
                                    stats.watcher_commands += 1;
                                }
                                cmd = UserCmd { tick: cmd.tick, yaw: cmd.yaw, pitch: cmd.pitch, ..UserCmd::default() };
                            }
                            if cmd.sanitize().any() {
                                buffer.stats.repaired += 1;
                                stats.repaired_commands += 1;
                                debug!("repaired an out-of-range command from client {client_id}");
                            }
                            buffer.offer(cmd, tick.0, since_tick, max_ahead);
                        }
                    }
                    ToServer::Settings(mut settings) => {
                        debug!("client {client_id} settings: {settings:?}");
                        if settings.rate != 0 {
                            let range = arena_protocol::RATE_RANGE;
                            settings.rate = settings.rate.clamp(*range.start(), *range.end());
                        }
                        prefs.0 = settings;
                    }
                    ToServer::SkipKillCam => {
                        if let Some(entity) = entity {
                            skips.write(KillCamSkipped(entity));
                        }
                    }
                    ToServer::Chat { text, team } => {
                        chat.write(ChatSaid { client: client_id, text, team });
                    }
                    ToServer::ChooseSide(choice) => {
                        sides.write(SideAsked { client: client_id, choice });
                    }
                    ToServer::CallVote(call) => {
                        votes.write(VoteSaid { client: client_id, said: VoteSaying::Call(call) });
                    }
                    ToServer::Vote { yes } => {
                        votes.write(VoteSaid { client: client_id, said: VoteSaying::Ballot(yes) });
                    }
                    ToServer::WantMap => {
                        maps.write(MapAsked { client: client_id, loaded: None });
                    }
                    ToServer::MapLoaded { hash } => {
                        maps.write(MapAsked { client: client_id, loaded: Some(hash) });
                    }
                    ToServer::Voice(frame) => {
                        voice.write(VoiceSaid { client: client_id, frame });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(tick: u32) -> UserCmd {
        UserCmd { tick, forward: 1.0, ..Default::default() }
    }

    #[test]
    fn the_clients_frames_show_in_its_render_times() {
        // A client drawing a frame every 16 ticks: 16 commands a frame, all
        // claiming that frame's render time; a click's own instant is no frame.
        let mut b = CommandBuffer::default();
        for tick in 1..=160u32 {
            let frame_render = f64::from((tick - 1) / 16 * 16);
            let mut c = UserCmd { render_tick: frame_render, ..cmd(tick) };
            if tick % 16 == 5 {
                c.click = Some(arena_sim::Click { fraction: 0.5, yaw: 0.0, pitch: 0.0 });
                c.render_tick += 0.3;
            }
            b.offer(c, tick - 1, 0.0, 64);
            b.take(tick, 3);
        }
        assert!((b.frame_ticks(64) - 16.0).abs() < 0.5, "{}", b.frame_ticks(64));
        // A frame a tick: 1. And never more than MAX_CLIENT_FRAME_S.
        let mut fast = CommandBuffer::default();
        for tick in 1..=100u32 {
            fast.offer(UserCmd { render_tick: f64::from(tick) - 10.0, ..cmd(tick) }, tick - 1, 0.0, 64);
            fast.take(tick, 3);
        }
        assert_eq!(fast.frame_ticks(64), 1.0);
        assert!(b.frame_ticks(20) <= MAX_CLIENT_FRAME_S * 20.0);
        // Commands without a render time (fire not held: none on the wire)
        // and short runs of fire end no frame: the measure stays.
        for tick in 161..=400u32 {
            let firing = tick % 20 < 6;
            let render_tick = if firing { f64::from((tick - 1) / 16 * 16) } else { 0.0 };
            b.offer(UserCmd { render_tick, ..cmd(tick) }, tick - 1, 0.0, 64);
            b.take(tick, 3);
        }
        assert!((b.frame_ticks(64) - 16.0).abs() < 0.5, "{}", b.frame_ticks(64));
    }

    #[test]
    fn one_command_per_tick_in_order_with_repeats_for_gaps() {
        let mut b = CommandBuffer::default();
        for t in [11, 12, 14] {
            b.offer(cmd(t), 10, 0.5, 64);
        }
        assert_eq!(b.take(11, 64).map(|c| c.tick), Some(11));
        assert_eq!(b.take(12, 64).map(|c| c.tick), Some(12));
        assert_eq!(b.take(13, 64).map(|c| c.tick), Some(13), "a repeat, stamped with its tick");
        assert_eq!(b.stats.missing, 1);
        assert_eq!(b.last_margin, Some(MISSING_MARGIN_TICKS));
        b.offer(cmd(13), 13, 0.0, 64);
        assert_eq!(b.stats.late, 1, "the real one came too late");
        assert_eq!(b.take(14, 64).map(|c| c.tick), Some(14));
        assert_eq!(b.stats.run, 3);
        assert_eq!(b.newest_received, Some(14));
        // 14 came 3.5 ticks before its tick.
        assert_eq!(b.last_margin, Some(3.5));
    }

    #[test]
    fn redundant_copies_are_neither_late_nor_run_twice() {
        let mut b = CommandBuffer::default();
        b.offer(cmd(5), 4, 0.0, 64);
        b.offer(cmd(5), 4, 0.0, 64);
        assert_eq!(b.take(5, 64).map(|c| c.tick), Some(5));
        b.offer(cmd(5), 5, 0.0, 64);
        assert_eq!((b.stats.late, b.stats.run, b.queued()), (0, 1, 0));
    }

    #[test]
    fn sending_faster_gains_nothing() {
        let mut b = CommandBuffer::default();
        // A client whose clock runs three times too fast.
        let mut next = 1;
        let mut run = 0;
        for server_tick in 0..640u32 {
            for _ in 0..3 {
                b.offer(cmd(next), server_tick, 0.0, 64);
                next += 1;
            }
            run += usize::from(b.take(server_tick + 1, 64).is_some());
        }
        assert_eq!(run, 640, "exactly one command per tick");
        assert!(b.queued() <= 65, "the buffer stays bounded: {}", b.queued());
        assert!(b.stats.too_far_ahead > 1000);
    }

    #[test]
    fn a_stalled_player_is_repeated_briefly_then_goes_neutral() {
        let mut b = CommandBuffer::default();
        let firing =
            UserCmd { tick: 1, forward: 1.0, yaw: 0.5, buttons: arena_sim::Buttons::FIRE, ..Default::default() };
        b.offer(firing, 0, 0.0, 64);
        assert_eq!(b.take(1, 3), Some(firing));
        for tick in 2..=4 {
            let render_tick = f64::from(tick - 1);
            assert_eq!(b.take(tick, 3), Some(UserCmd { tick, render_tick, ..firing }), "repeated at {tick}");
            assert!(b.last_repeated);
        }
        let neutral = b.take(5, 3).expect("a command");
        assert_eq!((neutral.forward, neutral.buttons, neutral.yaw), (0.0, arena_sim::Buttons::default(), 0.5));
        assert_eq!(b.stats.neutral, 1);
        // Commands coming again are run as they are.
        b.offer(UserCmd { tick: 6, ..firing }, 5, 0.0, 64);
        assert_eq!(b.take(6, 3), Some(UserCmd { tick: 6, ..firing }));
        assert!(!b.last_repeated);
        assert_eq!(b.take(7, 3), Some(UserCmd { tick: 7, render_tick: 1.0, ..firing }), "and repeated afresh");
    }

    #[test]
    fn arrival_jitter_follows_how_much_margins_vary() {
        let mut steady = CommandBuffer::default();
        let mut shaky = CommandBuffer::default();
        for t in 1..500u32 {
            steady.offer(cmd(t + 2), t, 0.0, 64);
            let wobble = if t % 2 == 0 { 0.0 } else { 1.5 };
            shaky.offer(cmd(t + 2), t, wobble, 64);
        }
        assert!(steady.arrival_jitter_ticks() < 0.01, "{}", steady.arrival_jitter_ticks());
        assert!((0.5..1.0).contains(&shaky.arrival_jitter_ticks()), "{}", shaky.arrival_jitter_ticks());
    }
}
