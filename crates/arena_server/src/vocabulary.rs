//! The server's shared vocabulary: the components, resources and messages
//! every part of the server speaks of. It imports no other module of the
//! crate; every other module may import it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arena_protocol::modes::{Mode, Side, harms};
use arena_protocol::snapshot::Acknowledged;
use arena_protocol::{ClientSettings, HitReport, PlayerInfo};
use arena_sim::{ArenaWorld, HitZone, Hitbox, PlayerId, PlayerState, Shot, UserCmd};
use bevy::prelude::*;
use bevy_renet::renet::ClientId;

/// A player on the server: a client's, or a bot (no client).
#[derive(Component, Debug, Clone)]
pub struct ServerPlayer {
    pub id: PlayerId,
    pub client_id: Option<ClientId>,
}

impl ServerPlayer {
    pub fn is_bot(&self) -> bool {
        self.client_id.is_none()
    }
}

/// A player's authoritative state.
#[derive(Component, Debug, Clone, Copy, Deref, DerefMut)]
#[require(SimBefore, LastRun)]
pub struct Sim(pub PlayerState);

/// A player's state a tick before its [`Sim`]: a clicked shot leaves the eye
/// as the shooter's client drew it between the two. (At first, nobody: no
/// blend.)
#[derive(Component, Debug, Default, Clone, Copy)]
pub(crate) struct SimBefore(pub PlayerState);

/// What the last tick ran for this player, for the demo recorder: the
/// command as run, the state it ran from, and the state the shared rules
/// gave (before the server's own changes: hits, deaths, kicks).
#[derive(Component, Debug, Default, Clone, Copy)]
pub(crate) struct LastRun {
    /// The server tick it ran in (none yet: not run).
    pub tick: Option<u32>,
    pub cmd: UserCmd,
    pub from: PlayerState,
    pub stepped: PlayerState,
}

/// A dead player, and the tick it comes back.
#[derive(Component, Debug, Clone, Copy)]
pub struct Dead {
    pub respawn_tick: u32,
}

/// A player's frags and deaths in this match.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Score {
    pub frags: i16,
    pub deaths: u16,
}

/// A client's netcode choices, as it last told the server.
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct ClientPrefs(pub ClientSettings);

impl ClientPrefs {
    /// What a client uses until it says otherwise: lag compensation, and the
    /// interpolation delay clients default to.
    pub(crate) fn default_for(snapshot_rate: arena_sim::TickRate) -> Self {
        let interp_ms = ClientSettings::interp_ms_of(arena_protocol::default_interp_ms(snapshot_rate));
        Self(ClientSettings {
            lag_compensation: true,
            interp_ms,
            projectile_compensation: true,
            kill_cam: false,
            update_rate: 0,
            rate: 0,
            voice: false,
        })
    }
}

/// The snapshots a client says it has decoded lately: the next one is a
/// delta against the newest of them (none: a whole snapshot).
#[derive(Component, Debug, Default, Clone)]
pub(crate) struct SnapshotAck(pub Acknowledged);

/// Clients with something to send this frame (a snapshot went to them): the
/// transport sends their renet packets now, bundled in one datagram, and
/// otherwise waits (see `socket/transport.rs`).
#[derive(Resource, Debug, Default)]
pub(crate) struct DueClients(pub Vec<ClientId>);

/// Messages of the unreliable channel (snapshots, tracers) for each
/// client, sent outside renet in the client's next datagram (see
/// `arena_protocol::bundle`). Bounded: past [`UnreliableOut::MAX_WAITING`]
/// for a client, the oldest go.
#[derive(Resource, Debug, Default)]
pub struct UnreliableOut(
    pub std::collections::HashMap<ClientId, std::collections::VecDeque<Vec<u8>>>,
    /// Clients with a voice frame waiting: their datagram goes this frame,
    /// not with the next snapshot (a late voice frame is worth nothing).
    pub std::collections::HashSet<ClientId>,
);

impl UnreliableOut {
    pub const MAX_WAITING: usize = 32;

    pub(crate) fn push(&mut self, client: ClientId, message: Vec<u8>) {
        let waiting = self.0.entry(client).or_default();
        if waiting.len() >= Self::MAX_WAITING {
            waiting.pop_front();
        }
        waiting.push_back(message);
    }

    /// As [`UnreliableOut::push`], sent this frame.
    pub(crate) fn push_now(&mut self, client: ClientId, message: Vec<u8>) {
        self.push(client, message);
        self.1.insert(client);
    }
}

/// Each client's round trip, measured by the server: from a snapshot's
/// departure to the first command packet acknowledging it, smoothed as renet
/// smooths its own (an eighth of each new sample). renet's figure times only
/// renet's packets, whose acknowledgements now wait up to
/// `arena_protocol::ack_pace::AckPace::INTERVAL`; lag compensation's bounds,
/// the scoreboard's pings and the demos read this one. Bounded: the last
/// [`RoundTrips::KEPT`] departures of each connected client.
#[derive(Resource, Debug, Default)]
pub struct RoundTrips(std::collections::HashMap<ClientId, ClientRoundTrip>);

#[derive(Debug, Default)]
struct ClientRoundTrip {
    /// Snapshots' ticks and departures (the real clock), oldest first.
    sent: std::collections::VecDeque<(u32, std::time::Duration)>,
    /// The newest snapshot acknowledged (older ones say nothing new).
    newest_acked: Option<u32>,
    rtt_s: Option<f64>,
}

impl RoundTrips {
    /// Departures remembered per client (2 s at 32 snapshots a second).
    pub const KEPT: usize = 64;
    /// A sample longer than this is not a round trip (seconds).
    const MAX_SAMPLE_S: f64 = 2.0;

    /// The snapshot of `tick` left for `client` at `at`.
    pub(crate) fn sent(&mut self, client: ClientId, tick: u32, at: std::time::Duration) {
        let trip = self.0.entry(client).or_default();
        trip.sent.push_back((tick, at));
        while trip.sent.len() > Self::KEPT {
            trip.sent.pop_front();
        }
    }

    /// `client` acknowledged the snapshot of `tick`, heard at `at`.
    pub(crate) fn acked(&mut self, client: ClientId, tick: u32, at: std::time::Duration) {
        let Some(trip) = self.0.get_mut(&client) else { return };
        if trip.newest_acked.is_some_and(|newest| !arena_sim::tick_after(tick, newest)) {
            return;
        }
        let Some(&(_, departed)) = trip.sent.iter().find(|(t, _)| *t == tick) else { return };
        trip.newest_acked = Some(tick);
        let sample = at.saturating_sub(departed).as_secs_f64();
        if sample > Self::MAX_SAMPLE_S {
            return;
        }
        trip.rtt_s = Some(trip.rtt_s.map_or(sample, |rtt| rtt * 0.875 + sample * 0.125));
    }

    /// `client`'s round trip, seconds (`None` before its first acknowledgement).
    pub fn rtt_s(&self, client: ClientId) -> Option<f64> {
        self.0.get(&client).and_then(|t| t.rtt_s)
    }

    /// `client`'s round trip, seconds: renet's figure until the first
    /// acknowledgement (it timed the connection's reliable messages).
    pub fn of(&self, client: ClientId, renet: &bevy_renet::RenetServer) -> f64 {
        self.rtt_s(client).unwrap_or_else(|| renet.rtt(client))
    }

    /// Forgets the clients `keep` says are gone.
    pub(crate) fn retain(&mut self, keep: impl Fn(ClientId) -> bool) {
        self.0.retain(|client, _| keep(*client));
    }
}

/// The number of the tick being simulated (or last simulated).
#[derive(Resource, Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTick(pub u32);

/// The map's items on this server: whether the server plays with them
/// (`--no-items`: none), and each one's state (there, or taken when and by
/// whom), in the map's order; every snapshot carries them.
#[derive(Resource, Debug, Clone, Default)]
pub struct Items {
    pub on: bool,
    pub slots: Vec<arena_sim::ItemSlot>,
}

/// The tick rate the server runs at.
#[derive(Resource, Clone, Copy, Debug, Deref)]
pub(crate) struct TickRate(pub arena_sim::TickRate);

/// Snapshots per second.
#[derive(Resource, Clone, Copy, Debug, Deref)]
pub(crate) struct SnapshotRate(pub arena_sim::TickRate);

/// The arena's collision world, shared with nothing else.
#[derive(Resource, Clone, Deref)]
pub(crate) struct SimWorld(pub Arc<ArenaWorld>);

/// Lag compensation for the whole server (`--no-lag-compensation` turns it
/// off), and how far back it rewinds at most (`--max-unlag-ms`), seconds.
#[derive(Resource, Debug, Clone, Copy)]
pub(crate) struct LagCompensation {
    pub on: bool,
    pub max_unlag_s: f64,
}

/// Whether shots go from where fire was pressed within a tick (the click a
/// command carries), or from the tick, as before sub-tick shots
/// (`--no-subtick`).
#[derive(Resource, Debug, Clone, Copy)]
pub(crate) struct SubTickShots(pub bool);

/// Present when the server is a shooting range: nobody takes damage.
#[derive(Resource, Debug, Clone, Copy, Default)]
pub(crate) struct Range;

/// When a player joined (real time since the server started).
#[derive(Component, Debug, Clone, Copy)]
pub struct Joined(pub std::time::Duration);

/// What the server calls itself and holds, for queries.
#[derive(Resource, Debug, Clone)]
pub(crate) struct ServerIdentity {
    pub name: String,
    pub map: String,
    pub kind: arena_protocol::query::ServerKind,
    /// Bots and clients together.
    pub max_players: usize,
    pub max_clients: usize,
    /// The port it listens on.
    pub port: u16,
}

/// The maps this server can play: the built-in ones, and the map files
/// `--map`/`--maps` named (sent to clients that do not have them).
#[derive(Resource, Debug, Clone)]
pub struct ServedMaps(pub Vec<ServedMap>);

impl Default for ServedMaps {
    fn default() -> Self {
        Self::built_in()
    }
}

/// One map a server can play.
#[derive(Debug, Clone)]
pub struct ServedMap {
    pub def: arena_sim::MapDef,
    /// Its name, hash and size, as clients are told.
    pub id: arena_protocol::map_transfer::MapId,
    /// Its file's bytes (sent to a client without it).
    pub text: Arc<[u8]>,
    /// From a file (clients may lack it), not built in.
    pub file: bool,
}

impl ServedMaps {
    /// The built-in maps.
    pub fn built_in() -> Self {
        Self(
            arena_sim::map::BUILT_IN_MAPS
                .iter()
                .filter_map(|(name, text)| {
                    let def = arena_sim::MapDef::from_ron(text).ok()?;
                    let id = arena_protocol::map_transfer::MapId::of(name, text.as_bytes());
                    Some(ServedMap { def, id, text: Arc::from(text.as_bytes()), file: false })
                })
                .collect(),
        )
    }

    /// The map called `name` (any case).
    pub fn find(&self, name: &str) -> Option<&ServedMap> {
        self.0.iter().find(|m| m.id.name.eq_ignore_ascii_case(name.trim()))
    }

    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(|m| m.id.name.clone()).collect()
    }
}

/// A client player held out of the world until its client says it has
/// loaded the map (one from a file, which it may first have to download).
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct AwaitingMap;

/// A vote call or ballot a client sent (from intake to `tick/votes.rs`), as it came.
#[derive(Message, Debug, Clone)]
pub(crate) struct VoteSaid {
    pub client: ClientId,
    pub said: VoteSaying,
}

#[derive(Debug, Clone)]
pub(crate) enum VoteSaying {
    Call(arena_protocol::vote::VoteCall),
    Ballot(bool),
}

/// A client asked for the map (`None`), or loaded the map of this hash
/// (from intake to `tick/map_upload.rs`).
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct MapAsked {
    pub client: ClientId,
    pub loaded: Option<[u8; 32]>,
}

/// Who is on the server. Kept in step with the player entities, and updated
/// at once (not through deferred commands) so that several players joining in
/// one frame get different ids and names.
#[derive(Resource, Default, Debug)]
pub struct Roster {
    pub players: BTreeMap<PlayerId, RosterEntry>,
}

#[derive(Debug, Clone)]
pub struct RosterEntry {
    /// `None` for a bot: the one place that says who is a bot.
    pub client_id: Option<ClientId>,
    pub name: String,
    pub entity: Entity,
    /// Playing (for a team) or watching: the one place that says which.
    /// A player who watches has no [`Sim`]: nothing simulates, shoots or
    /// scores it.
    pub side: Side,
}

impl RosterEntry {
    pub fn is_bot(&self) -> bool {
        self.client_id.is_none()
    }
}

impl Roster {
    pub fn by_client(&self, client_id: ClientId) -> Option<(PlayerId, &RosterEntry)> {
        self.players.iter().find(|(_, e)| e.client_id == Some(client_id)).map(|(id, e)| (*id, e))
    }

    pub fn free_id(&self) -> Option<PlayerId> {
        (0..=u8::MAX).map(PlayerId).find(|id| !self.players.contains_key(id))
    }

    pub fn infos(&self) -> Vec<PlayerInfo> {
        self.players.iter().map(|(id, e)| self.info(*id, e)).collect()
    }

    pub fn info(&self, id: PlayerId, entry: &RosterEntry) -> PlayerInfo {
        PlayerInfo { id, name: entry.name.clone(), bot: entry.is_bot(), side: entry.side }
    }

    /// A player's side (one who is not here: watching).
    pub fn side(&self, id: PlayerId) -> Side {
        self.players.get(&id).map_or(Side::Spectating, |e| e.side)
    }

    /// Players on each team, red then blue.
    pub fn team_counts(&self) -> [usize; 2] {
        let mut counts = [0; 2];
        for team in self.players.values().filter_map(|e| e.side.team()) {
            counts[team.index()] += 1;
        }
        counts
    }

    /// Players in the world (not watching).
    pub fn playing(&self) -> usize {
        self.players.values().filter(|e| e.side.plays()).count()
    }

    /// Clients that hold a player's place (playing, or in the duel's queue):
    /// what `--max-clients` bounds.
    pub fn clients_playing(&self) -> usize {
        self.players.values().filter(|e| !e.is_bot() && e.side != Side::Spectating).count()
    }

    /// Those watching by choice (the duel's queue is not counted).
    pub fn spectators(&self) -> usize {
        self.players.values().filter(|e| e.side == Side::Spectating).count()
    }

    pub fn name(&self, id: PlayerId) -> &str {
        self.players.get(&id).map(|e| e.name.as_str()).unwrap_or("?")
    }

    /// The name as logs show it: a bot's marked as one.
    pub fn label(&self, id: PlayerId) -> String {
        match self.players.get(&id) {
            Some(e) if e.is_bot() => format!("{} (bot)", e.name),
            Some(e) => e.name.clone(),
            None => "?".into(),
        }
    }
}

/// How matches are played here (`--mode`, `--friendly-fire`), and how
/// many may watch (`--max-spectators`).
#[derive(Resource, Debug, Clone, Copy, Default)]
pub struct GameMode {
    pub mode: Mode,
    pub friendly_fire: bool,
    pub max_spectators: usize,
}

impl GameMode {
    /// Whether `attacker`'s damage reaches `victim` (see [`harms`]).
    pub fn harms(&self, roster: &Roster, attacker: PlayerId, victim: PlayerId) -> bool {
        harms(roster.side(attacker), roster.side(victim), attacker == victim, self.friendly_fire)
    }
}

/// A player's switch of side, waiting for its death (a team switch), or
/// for the balance of teams.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SideSwitch(pub Side);

/// A player asked for a side (from intake to `tick/sides.rs`), as it came.
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct SideAsked {
    pub client: ClientId,
    pub choice: arena_protocol::modes::SideChoice,
}

/// A kill (`killer == victim`: the victim fell out of the world).
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct Frag {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
}

/// Someone joined or left: the scoreboard and match state go out again.
#[derive(Event, Debug, Clone, Copy)]
pub(crate) struct PlayersChanged;

/// A chat line a client sent (from intake to `tick/chat.rs`), as it came.
#[derive(Message, Debug, Clone)]
pub(crate) struct ChatSaid {
    pub client: bevy_renet::renet::ClientId,
    pub text: String,
    pub team: bool,
}

/// A frame of voice a client sent (from intake to `tick/voice.rs`), as it came.
#[derive(Message, Debug, Clone)]
pub(crate) struct VoiceSaid {
    pub client: bevy_renet::renet::ClientId,
    pub frame: arena_protocol::voice::VoiceFrame,
}

/// Voice on this server: whether it is passed on at all (`--voice off`,
/// the console's `sv_voice`), and the players the console muted
/// (`voice_mute`; a player's mute goes when it leaves: its id is given to
/// the next one).
#[derive(Resource, Debug, Clone)]
pub struct VoiceControl {
    pub on: bool,
    pub muted: std::collections::BTreeSet<PlayerId>,
}

impl Default for VoiceControl {
    fn default() -> Self {
        Self { on: true, muted: std::collections::BTreeSet::new() }
    }
}

/// Chat lines passed on since the last tick, for the demo being recorded.
/// The recorder takes them every tick, recording or not.
#[derive(Resource, Debug, Default)]
pub(crate) struct PassedChat(pub Vec<arena_protocol::demo_frame::DemoChat>);

/// A player asked to skip its kill-cam (from intake to the kill-cam rules).
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct KillCamSkipped(pub Entity);

/// Shots fired this tick, resolved after everyone has moved.
#[derive(Resource, Debug, Default)]
pub(crate) struct PendingShots(pub Vec<PendingShot>);

#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingShot {
    pub shooter: PlayerId,
    pub cmd: UserCmd,
    pub shot: Shot,
    /// How early the command came, ticks, for the render-time estimate.
    pub margin_ticks: f32,
    /// Fired from a stand-in for a command that had not come: the render
    /// time is the server's guess, not what the shooter drew.
    pub repeated: bool,
}

/// Rockets fired this tick (the shot and its instant within the tick),
/// launched after everyone has moved.
#[derive(Resource, Debug, Default)]
pub(crate) struct PendingRockets(pub Vec<(PendingShot, f32)>);

/// A rocket's end, judged: whom its splash reached (none for one that flew
/// its whole flight into the sky), for the range's tally.
#[derive(Message, Debug, Clone)]
pub(crate) struct RocketResolved {
    pub owner: PlayerId,
    pub reached: Vec<PlayerId>,
}

/// A rocket's splash killed someone: its flight and whom it met, for the
/// victim's kill-cam.
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct RocketKill {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub origin: Vec3,
    /// Unit.
    pub dir: Vec3,
    pub blast: Vec3,
    /// The server time of the players it met (earlier than the present
    /// when it met them during its catch-up), ticks.
    pub met_tick: f64,
    /// The victim's hitbox as it met it.
    pub met: Hitbox,
}

/// Whether rockets are brought up to the time their shooter fired them.
#[derive(Resource, Debug, Clone, Copy)]
pub(crate) struct ProjectileCompensation(pub bool);

/// A shot and the other players it is tested against: rewound by lag
/// compensation to what its shooter saw, or as they are now.
#[derive(Debug, Clone)]
pub(crate) struct TestedShot {
    pub pending: PendingShot,
    /// Whether the others were rewound.
    pub compensated: bool,
    /// The server time the others are from, ticks.
    pub tick: f64,
    /// The server's own estimate of the shooter's render time, ticks.
    pub estimate: f64,
    /// The other players (never the shooter) at `tick`.
    pub others: Vec<(PlayerId, Hitbox)>,
    /// The other players as they are at the newest tick.
    pub current: Vec<(PlayerId, Hitbox)>,
}

/// This tick's shots, with what each is tested against, for the combat rules.
#[derive(Resource, Debug, Default)]
pub(crate) struct TestedShots(pub Vec<TestedShot>);

/// A shot the combat rules have judged: for the range's tally.
#[derive(Message, Debug, Clone)]
pub(crate) struct ShotResolved {
    pub tested: TestedShot,
    pub hit: Option<HitReport>,
}

/// Counters of the combat rules and their refusals.
#[derive(Resource, Debug, Default, Clone)]
pub struct CombatStats {
    pub shots: u64,
    pub hits: u64,
    pub kills: u64,
    /// Claimed render times further than the tolerance from the estimate.
    pub render_times_rejected: u64,
    /// Render times outside the history, clamped into it.
    pub render_times_clamped: u64,
    /// Of those, rewinds cut short by the rewind cap (`--max-unlag-ms`).
    pub rewinds_capped: u64,
    /// Shots tested against the two snapshots their shooter drew between
    /// (the rest: the two recorded ticks around the render time).
    pub rewinds_as_drawn: u64,
    pub fire_while_dead: u64,
    pub reload_when_full: u64,
    pub fire_too_soon: u64,
    pub rockets_fired: u64,
    pub rocket_blasts: u64,
    /// Rockets that met a player (a direct hit).
    pub rocket_direct_hits: u64,
    /// Players hurt or pushed by a splash (each player each blast).
    pub splash_hits: u64,
    /// Rockets whose catch-up the cap cut short.
    pub catch_ups_capped: u64,
    /// Rockets not launched because too many were in flight.
    pub rockets_dropped: u64,
    /// Jump pads' launches, teleports and items taken (everyone's, bots' too).
    pub pad_launches: u64,
    pub teleports: u64,
    pub pickups: u64,
}

/// Counters of what the server had to reject or repair, for logs and tests.
#[derive(Resource, Default, Debug, Clone)]
pub struct ServerStats {
    /// Messages that did not decode or failed validation.
    pub bad_messages: u64,
    /// Messages from a client with no player.
    pub unknown_client_messages: u64,
    /// Commands with NaN or out-of-range fields that were repaired.
    pub repaired_commands: u64,
    /// Commands dropped because their tick made no sense.
    pub dropped_commands: u64,
    pub joins: u64,
    pub leaves: u64,
    /// Clients sent away for their name.
    pub names_refused: u64,
    /// Whole snapshots sent: on joining, on a client's request, and when the
    /// snapshot a client acknowledged is no longer kept (`stale_acks`).
    pub full_snapshots: u64,
    pub stale_acks: u64,
    /// Commands from a player who watches that would have moved or fired:
    /// never run.
    pub watcher_commands: u64,
    /// Snapshots left out for a client's `rate` (bytes a second it can take).
    pub snapshots_over_rate: u64,
    /// Snapshots not sent to clients that asked for fewer (`cl_updaterate`).
    pub snapshots_not_asked: u64,
}

/// Where a console line came from, and so where its answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleSource {
    /// The server's standard input (a terminal): answered on its output.
    Terminal,
    /// The remote console, its MAC checked: answered to `addr`, under the
    /// challenge the command came with.
    Remote { addr: std::net::SocketAddr, challenge: [u8; 16] },
    /// A vote that passed (`tick/votes.rs`): logged, answered to nobody.
    Vote,
}

/// Console lines waiting to run, and answers waiting to go: the terminal's
/// and the remote console's lines run on the game (`tick/console.rs`); the
/// socket wing sends the remote answers.
#[derive(Resource, Debug, Default)]
pub struct ConsoleLines {
    pub waiting: std::collections::VecDeque<(ConsoleSource, String)>,
    pub answers: Vec<(ConsoleSource, String)>,
}

impl ConsoleLines {
    /// Most lines waiting: more are refused (the remote console's rate
    /// limit keeps it far below).
    pub const MAX_WAITING: usize = 64;

    /// Queues `line` from `source`; false if the queue is full.
    pub fn push(&mut self, source: ConsoleSource, line: String) -> bool {
        if self.waiting.len() >= Self::MAX_WAITING {
            return false;
        }
        self.waiting.push_back((source, line));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_runs_from_a_snapshots_departure_to_its_first_acknowledgement() {
        let ms = std::time::Duration::from_millis;
        let mut trips = RoundTrips::default();
        trips.acked(7, 10, ms(50));
        assert_eq!(trips.rtt_s(7), None, "nothing sent: nothing measured");
        trips.sent(7, 10, ms(0));
        trips.sent(7, 12, ms(31));
        trips.acked(7, 10, ms(80));
        assert_eq!(trips.rtt_s(7), Some(0.080));
        trips.acked(7, 10, ms(200));
        assert_eq!(trips.rtt_s(7), Some(0.080), "the same acknowledgement again is no sample");
        trips.acked(7, 12, ms(31 + 160));
        let rtt = trips.rtt_s(7).expect("measured");
        assert!((rtt - (0.080 * 0.875 + 0.160 * 0.125)).abs() < 1e-12, "{rtt}");
        trips.acked(7, 99, ms(300));
        assert_eq!(trips.rtt_s(7), Some(rtt), "a tick never sent is no sample");
        for tick in 0..200 {
            trips.sent(8, tick, ms(u64::from(tick)));
        }
        assert_eq!(trips.0[&8].sent.len(), RoundTrips::KEPT);
        trips.retain(|c| c != 7);
        assert_eq!(trips.rtt_s(7), None);
    }
}
