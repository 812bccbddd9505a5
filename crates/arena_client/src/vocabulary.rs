//! The client's shared vocabulary: the session, and the components,
//! resources and messages its parts speak of, [`Drawn`] first among them.
//! It imports no other module of the crate.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use arena_protocol::modes::{Mode, Side};
use arena_protocol::snapshot::Frame;
use arena_protocol::{PlayerInfo, ToClient, Welcome};
use arena_sim::{ArenaWorld, PlayerId, PlayerState, TickRate};
use bevy::ecs::component::Mutable;
use bevy::prelude::*;

/// Where the client is in its life with a server.
#[derive(States, Default, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Session {
    /// Not connected (the main menu).
    #[default]
    Offline,
    /// Asked to connect; waiting for the server's welcome.
    Connecting,
    /// Welcomed: playing.
    InGame,
}

/// State that lasts one session with a server: each part registers its own,
/// and it starts afresh whenever the client begins to connect, so that no
/// list of resets has to be kept in step with the parts.
pub(crate) trait SessionState {
    /// `R` from its default, and back to it on every new connection.
    fn init_session_resource<R: Resource<Mutability = Mutable> + Default>(&mut self) -> &mut Self;
    /// `R` (made when the session needs it) removed on every new connection.
    fn remove_on_connect<R: Resource>(&mut self) -> &mut Self;
}

impl SessionState for App {
    fn init_session_resource<R: Resource<Mutability = Mutable> + Default>(&mut self) -> &mut Self {
        self.init_resource::<R>().add_systems(OnEnter(Session::Connecting), |mut r: ResMut<R>| *r = R::default())
    }

    fn remove_on_connect<R: Resource>(&mut self) -> &mut Self {
        self.add_systems(OnEnter(Session::Connecting), |mut commands: Commands| commands.remove_resource::<R>())
    }
}

/// A player the server told us about.
#[derive(Component, Debug, Clone, Copy)]
pub struct NetPlayer {
    pub id: PlayerId,
}

/// Marks the local player's entity.
#[derive(Component, Debug, Clone, Copy)]
pub struct LocalPlayer;

/// A player's state in the newest snapshot, and that snapshot's tick.
#[derive(Component, Debug, Clone, Copy)]
pub struct NetState {
    pub state: PlayerState,
    pub tick: u32,
}

/// The frame drawn last, as a click in the next needs it: between which two
/// predicted ticks the local player was drawn and how far, and the server
/// time the others were drawn at. The player clicks while looking at it.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct DrawnFrame {
    /// The command tick of the newer of the two predicted states (none: the
    /// local player is not drawn between predicted ticks).
    pub tick: Option<u32>,
    /// How far between them, 0..1.
    pub fraction: f32,
    /// The server time the others were drawn at, ticks (the newest
    /// snapshot's with interpolation off; 0: none yet).
    pub render_tick: f64,
}

/// The other players as drawn in the frame of the click that the command
/// of `tick` carries: what the shot is foreseen on.
#[derive(Resource, Debug, Default, Clone)]
pub(crate) struct ClickedFrame {
    pub tick: u32,
    pub others: Vec<(PlayerId, PlayerState)>,
}

/// Where a network player is drawn this frame: what the paper's client
/// shows, as [`NetState`] is what the server said. Every network player has
/// one from the moment it is spawned; prediction writes the local player's
/// and interpolation everyone else's, in `ClientSet::Present`. The view,
/// hit effects and ghosts read this and nothing else.
#[derive(Component, Debug, Clone, Copy, Deref)]
pub struct Drawn(pub PlayerState);

/// A drawn body died this frame: as drawn, so for another player an
/// interpolation delay after the server's kill, and never twice.
#[derive(Message, Debug, Clone, Copy)]
pub struct DrawnDied {
    pub entity: Entity,
    pub id: PlayerId,
    /// The local player's own body.
    pub local: bool,
    /// The body as last drawn alive.
    pub last_alive: PlayerState,
    /// As drawn now (dead).
    pub state: PlayerState,
}

/// A drawn body came back this frame (a respawn).
#[derive(Message, Debug, Clone, Copy)]
pub struct DrawnRespawned {
    pub entity: Entity,
    pub id: PlayerId,
    pub local: bool,
    pub state: PlayerState,
}

/// A drawn body went through a teleporter this frame: from where it was
/// last drawn to the destination (nobody draws it between).
#[derive(Message, Debug, Clone, Copy)]
pub struct DrawnTeleported {
    pub entity: Entity,
    pub id: PlayerId,
    pub local: bool,
    pub from: Vec3,
    pub to: Vec3,
}

/// A jump pad took hold of a drawn body this frame.
#[derive(Message, Debug, Clone, Copy)]
pub struct DrawnLaunched {
    pub entity: Entity,
    pub id: PlayerId,
    pub local: bool,
    pub at: Vec3,
}

#[derive(Component, Debug, Clone, PartialEq, Eq)]
pub struct PlayerName(pub String);

/// Who is on the server, and who we are.
#[derive(Resource, Debug, Default, Clone)]
pub struct Roster {
    pub local_id: Option<PlayerId>,
    pub tick_hz: u32,
    pub snapshot_hz: u32,
    /// The snapshots a second we last asked for (`cl_updaterate`; 0: all):
    /// the server sends by [`arena_protocol::snapshot_stride`].
    pub update_rate: u8,
    pub map_name: String,
    /// Names as shown: a bot's marked " (bot)" (the server's flag says who is one).
    pub names: BTreeMap<PlayerId, String>,
    /// The server's bots.
    pub bots: BTreeSet<PlayerId>,
    /// Tick of the newest snapshot applied.
    pub last_snapshot_tick: Option<u32>,
    /// The server is a shooting range.
    pub range: bool,
    /// The server fires from clicks within the tick (sub-tick shots).
    pub subtick: bool,
    /// How matches are played on the server.
    pub mode: Mode,
    /// Each player's side (a team, watching, the duel's queue).
    pub sides: BTreeMap<PlayerId, Side>,
}

impl Roster {
    pub fn tick_rate(&self) -> TickRate {
        TickRate::new(self.tick_hz)
    }

    /// The snapshots a second this client receives: the server's rate, or
    /// what it asked for (`cl_updaterate`), as the server reckons it.
    pub fn snapshot_rate(&self) -> TickRate {
        TickRate::new(arena_protocol::snapshot_hz_for(self.snapshot_hz, self.update_rate))
    }

    /// Takes in a player the server announced (on the welcome or later).
    pub fn add(&mut self, info: &PlayerInfo) {
        let name = arena_protocol::names::clean_name(&info.name);
        let shown = if info.bot { format!("{name} (bot)") } else { name };
        self.names.insert(info.id, shown);
        self.sides.insert(info.id, info.side);
        if info.bot {
            self.bots.insert(info.id);
        } else {
            self.bots.remove(&info.id);
        }
    }

    /// A player's side (one not announced: free).
    pub fn side(&self, id: PlayerId) -> Side {
        self.sides.get(&id).copied().unwrap_or_default()
    }

    /// Our own side.
    pub fn local_side(&self) -> Side {
        self.local_id.map(|id| self.side(id)).unwrap_or_default()
    }

    /// Whether we watch (by choice, or in the duel's queue).
    pub fn watching(&self) -> bool {
        self.local_id.is_some() && self.local_side().watches()
    }

    /// The name shown for a player.
    pub fn name(&self, id: PlayerId) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| format!("player {}", id.0))
    }
}

/// The entity of each player in the newest snapshot.
#[derive(Resource, Debug, Default)]
pub(crate) struct PlayerEntities(pub HashMap<PlayerId, Entity>);

/// The arena's collision world as the client knows it.
#[derive(Resource, Clone, Deref)]
pub struct ClientWorld(pub Arc<ArenaWorld>);

/// Where our own rockets' splashes land on us, for the prediction: the
/// tick of our timeline and the blast's centre.
#[derive(Resource, Debug, Default, Clone)]
pub(crate) struct OwnSplashSchedule(pub Vec<(u32, Vec3)>);

/// Counters of what the client had to drop, for logs and tests.
#[derive(Resource, Default, Debug, Clone)]
pub struct ClientStats {
    pub bad_messages: u64,
    pub snapshots_received: u64,
    /// Snapshots that arrived after a newer one and were ignored.
    pub stale_snapshots: u64,
    /// Command packets sent (usually one a frame).
    pub commands_sent: u64,
    /// Combat messages beyond what any fair server sends in a frame, dropped.
    pub flood_dropped: u64,
    /// Snapshots against a baseline no longer kept (a full one was asked for).
    pub unknown_baselines: u64,
    /// Snapshots that came whole (the first, and after a lost baseline).
    pub full_snapshots: u64,
    /// Snapshots that came as deltas, and how old their baselines were in
    /// all, ticks (a delta says what changed since its baseline: the older,
    /// the more; at least a round trip).
    pub delta_snapshots: u64,
    pub baseline_age_ticks: u64,
    /// Deltas that carried players on at the motion an older acknowledged
    /// snapshot showed (the rest expected everyone where they were).
    pub deltas_with_motion: u64,
}

/// Who joins and leaves, as the server says: routed to the roster.
#[derive(Message, Debug, Clone)]
pub(crate) enum RosterNews {
    Welcome(Welcome),
    Joined(PlayerInfo),
    Left(PlayerId),
    Side(PlayerId, Side),
    /// The next match is on this map.
    Map(arena_protocol::map_transfer::MapId),
    /// From the next match, this mode.
    Mode(arena_protocol::modes::Mode),
}

/// The server plays this map: find it here or fetch it (`map_download`).
#[derive(Message, Debug, Clone)]
pub(crate) struct MapNeeded(pub arena_protocol::map_transfer::MapId);

/// A snapshot as it came (packed), in the order they came, and when it came
/// (on the app's real clock): routed to replication.
#[derive(Message, Debug, Clone)]
pub(crate) struct SnapshotReceived {
    pub bytes: Vec<u8>,
    pub arrived: std::time::Duration,
}

/// A snapshot newer than any before it came: when, and what it says of our
/// commands. One for every such snapshot, even when a slow frame reads
/// several and applies only the newest: the clock sync, the round trip and
/// the interpolation delay take every one at its own arrival time.
#[derive(Message, Debug, Clone, Copy)]
pub struct SnapshotArrived {
    pub tick: u32,
    /// When it came, seconds of the app's real clock.
    pub arrived_s: f64,
    /// The newest of our commands the server has run.
    pub last_cmd_tick: Option<u32>,
    /// The newest of our command ticks the server has received.
    pub newest_cmd_tick: Option<u32>,
    /// How early the command run at `tick` reached the server, ticks
    /// (negative: it had not come, and the tick ran without it).
    pub margin_ticks: Option<f32>,
    /// How long after its tick the snapshot left the server, ticks.
    pub sent_after_ticks: f64,
}

/// Snapshots a slow frame read but did not apply (older than the newest it
/// read): every other player's state in each, oldest first, for the
/// interpolation history, which would otherwise only see one a frame.
#[derive(Resource, Debug, Default, Clone)]
pub(crate) struct PassedSnapshots(pub Vec<(u32, Vec<(PlayerId, PlayerState)>)>);

/// The snapshots decoded lately, as baselines for the deltas to come, and
/// which one the server should delta against next.
#[derive(Resource, Debug, Default)]
pub struct Baselines {
    /// Newest last.
    pub frames: VecDeque<Frame>,
    /// The newest snapshot decoded.
    pub newest: Option<u32>,
    /// A delta came against a baseline no longer here: ask for a full one.
    pub want_full: bool,
}

impl Baselines {
    /// Snapshots kept: more than the server's 64, so any it deltas against is here.
    pub const KEPT: usize = 80;

    /// What to acknowledge in the next command packet (`None`: send a full snapshot).
    pub fn ack(&self) -> Option<u32> {
        if self.want_full { None } else { self.newest }
    }

    pub fn get(&self, tick: u32) -> Option<&Frame> {
        self.frames.iter().rev().find(|f| f.tick == tick)
    }
}

/// Messages by kind, each way: how many and how many bytes (the encoded
/// message, without renet's and netcode's headers), since connecting.
#[derive(Resource, Debug, Default, Clone)]
pub struct MessageTally {
    pub down: BTreeMap<&'static str, (u64, u64)>,
    pub up: BTreeMap<&'static str, (u64, u64)>,
}

impl MessageTally {
    pub fn count_down(&mut self, kind: &'static str, bytes: usize) {
        let entry = self.down.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += bytes as u64;
    }

    pub fn count_up(&mut self, kind: &'static str, bytes: usize) {
        let entry = self.up.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += bytes as u64;
    }
}

/// Sends `message` to the server on its channel and counts it; whether it
/// went (a message that does not encode is a bug, logged).
pub(crate) fn send_to_server(
    client: &mut bevy_renet::RenetClient,
    tally: &mut MessageTally,
    message: &arena_protocol::ToServer,
) -> bool {
    match arena_protocol::encode(message) {
        Ok(bytes) => {
            tally.count_up(message.kind(), bytes.len());
            client.send_message(message.channel(), bytes);
            true
        }
        Err(e) => {
            error!("could not encode a {} message: {e}", message.kind());
            false
        }
    }
}

/// What the transport has to send this frame (commands, voice).
#[derive(Resource, Debug, Default)]
pub(crate) struct Outbox {
    /// Command messages for renet, each with its departure time on the
    /// app's real clock, its channel and the newest command it carries.
    pub commands: Vec<(std::time::Duration, u8, Vec<u8>, u32)>,
    /// Voice frames (encoded `ToServer::Voice` messages): outside renet,
    /// with the frame's first command datagram, or in one of their own.
    pub voice: Vec<Vec<u8>>,
}

/// Shots, damage, kills, scores and the match's state from the server.
#[derive(Message, Debug, Clone)]
pub struct GameMessage(pub ToClient);

/// The server welcomed us.
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct Welcomed {
    pub tick_hz: u32,
    pub server_tick: u32,
}

/// The map's items as the newest snapshot lists them (there, or taken when
/// and by whom; none on a server without items), and its tick.
#[derive(Resource, Debug, Default, Clone)]
pub struct ItemTable {
    pub tick: Option<u32>,
    pub slots: Vec<arena_sim::ItemSlot>,
}

impl ItemTable {
    /// Whether item `i` (of `kind`) is there at `tick`: listed as there, or
    /// taken long enough before to be back by the server's timer.
    pub fn there_at(&self, i: usize, kind: arena_sim::ItemKind, tick: u32, rate: arena_sim::TickRate) -> bool {
        self.slots.get(i).is_some_and(|slot| {
            slot.available() || slot.back_at(kind, rate).is_some_and(|back| !arena_sim::tick_after(back, tick))
        })
    }
}

/// A newer snapshot was applied (the newest a frame read): what it says
/// about us. Its timing is in [`SnapshotArrived`].
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct SnapshotApplied {
    /// The newest of our commands the server has run.
    pub ack: Option<u32>,
    /// Our player's state after `ack`.
    pub local_state: Option<PlayerState>,
}
