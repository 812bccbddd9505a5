//! Players joining and leaving: a connected client (or a new bot, or a range
//! target) gets a player on the side it arrives at (see `sides`), at a free
//! spawn point if it plays (on a range, a client stands on the firing line),
//! and, for a client, a welcome; one that finds no room to play or watch is
//! told so; everyone else
//! hears about it. A name the rules refuse gets a reason and a disconnect. A
//! leaving or timed-out client's player disappears at once. Joins and leaves
//! are logged a line each, and under a flood once a second in sum.

use std::collections::BTreeMap;

use arena_protocol::map_transfer::MapId;
use arena_protocol::modes::{Mode, Side};
use arena_protocol::names::{name_from_user_data, refuse_name, spectate_from_user_data, unique_name};
use arena_protocol::{PlayerInfo, Refusal, ToClient, Welcome};
use arena_sim::PlayerId;
use bevy::prelude::*;
use bevy_renet::renet::{ClientId, ServerEvent};
use bevy_renet::{RenetServer, RenetServerEvent};

use super::intake::CommandBuffer;
use super::life::{SpawnRotation, choose_spawn, positions};
use super::match_flow::MatchState;
use super::range::{RangeTally, RangeTarget};
use super::sides::{arriving_state, side_for_arrival};
use crate::net::{broadcast, send};
use crate::range_lanes::{LANES, firing_spot};
use crate::socket::guard::SILENT_CLIENT_TIMEOUT;
use crate::socket::transport::{Parting, ServerTransport};
use crate::vocabulary::{
    AwaitingMap, ClientPrefs, GameMode, Joined, PlayersChanged, Range, Roster, RosterEntry, Score, ServedMaps,
    ServerIdentity, ServerPlayer, ServerStats, ServerTick, Sim, SimWorld, SnapshotAck, SnapshotRate, SubTickShots,
    TickRate,
};

/// How long a refused client has to read why before it is disconnected, seconds.
const REFUSAL_GRACE_S: f64 = 1.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Roster>()
        .init_resource::<Refused>()
        .init_resource::<JustJoined>()
        .init_resource::<ArrivalLog>()
        .add_observer(on_server_event)
        .add_systems(Startup, add_range_targets)
        .add_systems(Update, (send_away_the_refused, sum_up_arrivals));
}

/// Joins and leaves logged a line each in a second, at most.
pub(crate) const ARRIVAL_LINES_PER_S: u32 = 5;

/// The log of joins and leaves: a line each, up to [`ARRIVAL_LINES_PER_S`]
/// in a second; past that they are counted, and said once, in sum, when the
/// second is over (a flood of players must not flood the log).
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub(crate) struct ArrivalLog {
    /// When the current second began, real seconds.
    since_s: f64,
    /// Lines written in it.
    lines: u32,
    /// Joins and leaves not written in it.
    pub quiet_joins: u32,
    pub quiet_leaves: u32,
}

impl ArrivalLog {
    /// Whether a join or leave at `now_s` gets its own line (else it is counted).
    pub(crate) fn note(&mut self, now_s: f64, join: bool) -> bool {
        if now_s - self.since_s >= 1.0 && self.quiet_joins + self.quiet_leaves == 0 {
            (self.since_s, self.lines) = (now_s, 0);
        }
        if self.lines < ARRIVAL_LINES_PER_S {
            self.lines += 1;
            return true;
        }
        if join {
            self.quiet_joins += 1;
        } else {
            self.quiet_leaves += 1;
        }
        false
    }

    /// Once the second is over: the joins and leaves not written, taken.
    pub(crate) fn sum_up(&mut self, now_s: f64) -> Option<(u32, u32)> {
        if now_s - self.since_s < 1.0 || self.quiet_joins + self.quiet_leaves == 0 {
            return None;
        }
        let sum = (self.quiet_joins, self.quiet_leaves);
        (self.since_s, self.lines, self.quiet_joins, self.quiet_leaves) = (now_s, 0, 0, 0);
        Some(sum)
    }
}

fn sum_up_arrivals(time: Res<Time<Real>>, mut log: ResMut<ArrivalLog>, roster: Res<Roster>) {
    if let Some((joins, leaves)) = log.sum_up(time.elapsed_secs_f64()) {
        info!("and {joins} more joined, {leaves} more left in the last second ({} players now)", roster.players.len());
    }
}

/// Clients told why they may not play, and when (real time, seconds) they go.
#[derive(Resource, Default, Debug)]
struct Refused(Vec<(ClientId, f64)>);

/// Where players admitted this frame stand, until their entities exist: so
/// that several joining at once spread out over the spawn points.
#[derive(Resource, Default, Debug)]
pub(crate) struct JustJoined(BTreeMap<PlayerId, Vec3>);

/// What admitting a player needs.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct Admission<'w, 's> {
    commands: Commands<'w, 's>,
    roster: ResMut<'w, Roster>,
    world: Res<'w, SimWorld>,
    rotation: ResMut<'w, SpawnRotation>,
    just_joined: ResMut<'w, JustJoined>,
    snapshot_rate: Res<'w, SnapshotRate>,
    players: Query<'w, 's, (&'static ServerPlayer, &'static Sim)>,
    time: Res<'w, Time<Real>>,
    pub(crate) range: Option<Res<'w, Range>>,
    subtick: Res<'w, SubTickShots>,
    mode: Res<'w, GameMode>,
    match_state: Res<'w, MatchState>,
    identity: Res<'w, ServerIdentity>,
    served: Res<'w, ServedMaps>,
}

/// Why nobody more can be admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoPlace {
    /// Every player id is taken.
    Ids,
    /// Every place to play and to watch is taken (`spectators`: it came to watch).
    Full { spectators: bool },
}

impl<'w, 's> Admission<'w, 's> {
    /// Adds a player called (about) `wanted_name`, on the side it arrives
    /// at (watching if `spectate`, or if every place to play is taken),
    /// and, if it plays, at a free spawn point; returns its id and entity.
    pub(crate) fn admit(
        &mut self,
        wanted_name: &str,
        client_id: Option<ClientId>,
        spectate: bool,
    ) -> Result<(PlayerId, Entity), NoPlace> {
        let id =
            self.roster.free_id().filter(|id| usize::from(id.0) < arena_protocol::MAX_PLAYERS).ok_or(NoPlace::Ids)?;
        let on_range = self.range.is_some();
        let mode = if on_range { Mode::Ffa } else { self.mode.mode };
        let mut side = side_for_arrival(mode, &self.roster, self.match_state.team_frags, spectate && !on_range);
        if client_id.is_some() && side != Side::Spectating && self.roster.clients_playing() >= self.identity.max_clients
        {
            side = Side::Spectating;
        }
        if side == Side::Spectating && self.roster.spectators() >= self.mode.max_spectators {
            return Err(NoPlace::Full { spectators: spectate });
        }
        let name = unique_name(wanted_name, self.roster.players.values().map(|e| e.name.as_str()));
        let mut entity = self.commands.spawn((
            Name::new(format!("player {} ({name})", id.0)),
            ServerPlayer { id, client_id },
            CommandBuffer::default(),
            SnapshotAck::default(),
            ClientPrefs::default_for(**self.snapshot_rate),
            Joined(self.time.elapsed()),
        ));
        // Its client may not have this map: out of the world until it says it has.
        let held = client_id.is_some() && self.served.find(&self.identity.map).is_some_and(|m| m.file);
        if held {
            entity.insert(AwaitingMap);
        }
        if side.plays() {
            let mut others: Vec<(PlayerId, Vec3)> = positions(self.players.iter());
            others.extend(self.just_joined.0.iter().map(|(id, pos)| (*id, *pos)));
            let (pos, yaw) = if on_range && client_id.is_some() {
                firing_spot(&others.iter().map(|(_, p)| *p).collect::<Vec<_>>())
            } else {
                choose_spawn(&self.world, &self.roster, side, &others, &mut self.rotation)
            };
            let mut state = arriving_state(pos, yaw);
            state.0.alive = !held;
            entity.insert((state, Score::default()));
            self.just_joined.0.insert(id, pos);
        }
        if on_range && client_id.is_some() {
            entity.insert(RangeTally::default());
        }
        let entity = entity.id();
        self.roster.players.insert(id, RosterEntry { client_id, name, entity, side });
        Ok((id, entity))
    }

    pub(crate) fn commands(&mut self) -> &mut Commands<'w, 's> {
        &mut self.commands
    }

    /// The map played, as clients are told.
    pub(crate) fn map_id(&self) -> MapId {
        match self.served.find(&self.world.map().name) {
            Some(map) => map.id.clone(),
            // A world a test put in by hand: named, with no file to send.
            None => MapId { name: self.world.map().name.clone(), hash: [0; 32], bytes: 0 },
        }
    }

    pub(crate) fn roster_ref(&self) -> &Roster {
        &self.roster
    }

    /// Most clients in the world at once (`--max-clients`).
    pub(crate) fn max_clients(&self) -> usize {
        self.identity.max_clients
    }

    /// Takes a player with no client (a bot) out of the game, as a client's
    /// leaving does; false if `id` is no bot.
    pub(crate) fn remove_bot(&mut self, server: &mut RenetServer, id: PlayerId) -> bool {
        let Some(entry) = self.roster.players.get(&id).filter(|e| e.client_id.is_none()).cloned() else {
            return false;
        };
        self.roster.players.remove(&id);
        self.commands.entity(entry.entity).despawn();
        broadcast(server, &ToClient::PlayerLeft { id }, None);
        self.commands.trigger(PlayersChanged);
        true
    }
}

/// On a range, one target per lane.
fn add_range_targets(mut admission: Admission) {
    if admission.range.is_none() {
        return;
    }
    for (index, lane) in LANES.iter().enumerate() {
        match admission.admit(&lane.name(), None, false) {
            Ok((_, entity)) => {
                admission.commands().entity(entity).insert(RangeTarget(index));
            }
            Err(_) => warn!("no player id left for range target {index}"),
        }
    }
    info!("shooting range: {} targets on their lanes", LANES.len());
    admission.commands().trigger(PlayersChanged);
}

/// Once their entities exist, the players who joined stand where their `Sim` says.
pub(crate) fn settle_joiners(mut just_joined: ResMut<JustJoined>) {
    just_joined.0.clear();
}

fn send_away_the_refused(mut refused: ResMut<Refused>, mut server: ResMut<RenetServer>, time: Res<Time<Real>>) {
    let now = time.elapsed_secs_f64();
    refused.0.retain(|(client_id, at)| {
        let due = now >= *at;
        if due {
            server.disconnect(*client_id);
        }
        !due
    });
}

fn on_server_event(
    event: On<RenetServerEvent>,
    mut admission: Admission,
    mut server: ResMut<RenetServer>,
    mut transport: ResMut<ServerTransport>,
    mut refused: ResMut<Refused>,
    time: Res<Time<Real>>,
    tick: Res<ServerTick>,
    tick_rate: Res<TickRate>,
    mut stats: ResMut<ServerStats>,
    mut arrivals: ResMut<ArrivalLog>,
) {
    let now = time.elapsed_secs_f64();
    match event.event().0 {
        ServerEvent::ClientConnected { client_id } => {
            let wanted = transport.user_data(client_id).map(|d| name_from_user_data(&d)).unwrap_or_default();
            if let Some(refusal) = refuse_name(&wanted, admission.roster.players.values().map(|e| e.name.as_str())) {
                debug!("refused client {client_id}: {}", refusal.explain(&wanted));
                stats.names_refused += 1;
                send(&mut server, client_id, &ToClient::Refused(Refusal::Name(refusal)));
                refused.0.push((client_id, time.elapsed_secs_f64() + REFUSAL_GRACE_S));
                return;
            }
            let spectate = transport.user_data(client_id).is_some_and(|d| spectate_from_user_data(&d));
            let id = match admission.admit(&wanted, Some(client_id), spectate) {
                Ok((id, _)) => id,
                Err(NoPlace::Ids) => {
                    warn!("client {client_id} connected but every player id is taken; refusing it");
                    send(&mut server, client_id, &ToClient::Refused(Refusal::Full { spectators: spectate }));
                    refused.0.push((client_id, time.elapsed_secs_f64() + REFUSAL_GRACE_S));
                    return;
                }
                Err(NoPlace::Full { spectators }) => {
                    debug!("refused client {client_id}: no room (to watch: {spectators})");
                    send(&mut server, client_id, &ToClient::Refused(Refusal::Full { spectators }));
                    refused.0.push((client_id, time.elapsed_secs_f64() + REFUSAL_GRACE_S));
                    return;
                }
            };
            stats.joins += 1;
            let name = admission.roster.name(id).to_string();
            let addr = transport.client_label(client_id).unwrap_or_else(|| "?".into());
            let side = admission.roster.side(id);
            if arrivals.note(now, true) {
                info!("{name} joined from {addr} as player {} ({})", id.0, side.label());
            }
            let welcome = ToClient::Welcome(Welcome {
                your_id: id,
                tick_hz: tick_rate.hz(),
                snapshot_hz: admission.snapshot_rate.hz(),
                server_tick: tick.0,
                map: admission.map_id(),
                players: admission.roster.infos(),
                range: admission.range.is_some(),
                subtick: admission.subtick.0,
                mode: admission.mode.mode,
            });
            send(&mut server, client_id, &welcome);
            broadcast(&mut server, &ToClient::PlayerJoined(PlayerInfo { id, name, bot: false, side }), Some(client_id));
            admission.commands().trigger(PlayersChanged);
        }
        ServerEvent::ClientDisconnected { client_id, reason } => {
            let parting = transport.take_parting(client_id);
            let Some((id, entry)) = admission.roster.by_client(client_id).map(|(id, e)| (id, e.clone())) else {
                debug!("client {client_id} left before it had a player ({reason})");
                return;
            };
            admission.roster.players.remove(&id);
            admission.commands().entity(entry.entity).despawn();
            stats.leaves += 1;
            if arrivals.note(now, false) {
                let (name, player) = (&entry.name, id.0);
                match parting {
                    Some(Parting::Left) => info!("{name} (player {player}) left"),
                    Some(Parting::TimedOut) => info!(
                        "{name} (player {player}) timed out: nothing heard from it for {} s",
                        SILENT_CLIENT_TIMEOUT.as_secs()
                    ),
                    Some(Parting::BadMessages) => {
                        info!("{name} (player {player}) was disconnected: it kept sending bad messages")
                    }
                    None => info!("{name} (player {player}) was disconnected: {reason}"),
                }
            }
            broadcast(&mut server, &ToClient::PlayerLeft { id }, Some(client_id));
            admission.commands().trigger(PlayersChanged);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_arrivals_is_summed_up_once_a_second() {
        let mut log = ArrivalLog::default();
        // A quiet server: every join and leave has its line.
        assert!(log.note(10.0, true) && log.note(12.0, false));
        assert_eq!(log.sum_up(13.5), None);
        // A hundred joins and fifty leaves within half a second.
        let written = (0..150).filter(|i| log.note(20.0 + f64::from(*i) * 0.003, *i < 100)).count();
        assert_eq!(written, ARRIVAL_LINES_PER_S as usize);
        assert_eq!(log.sum_up(20.6), None, "not before the second is over");
        let (joins, leaves) = log.sum_up(21.0).expect("summed up");
        assert_eq!(joins + leaves, 150 - ARRIVAL_LINES_PER_S);
        assert_eq!(leaves, 50);
        // Then lines again, a few a second.
        assert!(log.note(21.1, true));
        assert_eq!(log.sum_up(25.0), None);
    }
}
