//! Players joining and leaving: a connected client (or a new bot) gets a
//! player at a free spawn point and, for a client, a welcome; everyone else
//! hears about it. A leaving or timed-out client's player disappears at once.

use std::collections::BTreeMap;

use arena_protocol::names::{name_from_user_data, refuse_name, unique_name};
use arena_protocol::{PlayerInfo, Refusal, ToClient, Welcome};
use arena_sim::{PlayerId, PlayerState, pick_spawn};
use bevy::prelude::*;
use bevy_renet::renet::{ClientId, ServerEvent};
use bevy_renet::{RenetServer, RenetServerEvent};

use crate::combat::ClientPrefs;
use crate::intake::CommandBuffer;
use crate::match_flow::Score;
use crate::net::{broadcast, send};
use crate::simulation::{ServerTick, Sim};
use crate::transport::ServerTransport;
use crate::{ServerStats, SimWorld, SnapshotRate, TickRate};

/// How long a refused client has to read why before it is disconnected, seconds.
const REFUSAL_GRACE_S: f64 = 1.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Roster>()
        .init_resource::<Refused>()
        .add_observer(on_server_event)
        .add_systems(Update, send_away_the_refused);
}

/// Clients told why they may not play, and when (real time, seconds) they go.
#[derive(Resource, Default, Debug)]
struct Refused(Vec<(ClientId, f64)>);

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

/// A player on the server: a client's, or a bot (no client).
#[derive(Component, Debug, Clone)]
pub struct ServerPlayer {
    pub id: PlayerId,
    pub client_id: Option<ClientId>,
}

/// Who is on the server. Kept in step with the player entities, and updated
/// at once (not through deferred commands) so that several players joining in
/// one frame get different ids, names and spawn points.
#[derive(Resource, Default, Debug)]
pub struct Roster {
    pub players: BTreeMap<PlayerId, RosterEntry>,
    /// Rotates through equally good spawn points.
    spawn_rotation: usize,
}

#[derive(Debug, Clone)]
pub struct RosterEntry {
    /// `None` for a bot.
    pub client_id: Option<ClientId>,
    pub name: String,
    pub entity: Entity,
    /// Where the player was last known to be, for choosing spawn points.
    pub last_pos: Vec3,
}

impl Roster {
    pub fn by_client(&self, client_id: ClientId) -> Option<(PlayerId, &RosterEntry)> {
        self.players.iter().find(|(_, e)| e.client_id == Some(client_id)).map(|(id, e)| (*id, e))
    }

    fn free_id(&self) -> Option<PlayerId> {
        (0..=u8::MAX).map(PlayerId).find(|id| !self.players.contains_key(id))
    }

    pub fn infos(&self) -> Vec<PlayerInfo> {
        self.players
            .iter()
            .map(|(id, e)| PlayerInfo { id: *id, name: e.name.clone(), bot: e.client_id.is_none() })
            .collect()
    }

    /// A spawn point away from everyone else, and its yaw.
    pub fn choose_spawn(&mut self, world: &SimWorld, except: Option<PlayerId>) -> (Vec3, f32) {
        let spawns = &world.map().spawns;
        let occupied: Vec<Vec3> =
            self.players.iter().filter(|(id, _)| Some(**id) != except).map(|(_, e)| e.last_pos).collect();
        self.spawn_rotation = self.spawn_rotation.wrapping_add(1);
        match pick_spawn(spawns, &occupied, self.spawn_rotation).and_then(|i| spawns.get(i)) {
            Some(spawn) => (spawn.pos, spawn.yaw()),
            None => (Vec3::ZERO, 0.0),
        }
    }

    /// Adds a player called (about) `wanted_name` at a free spawn point and
    /// returns its id and entity, or `None` if every id is taken.
    pub fn admit(
        &mut self,
        commands: &mut Commands,
        world: &SimWorld,
        wanted_name: &str,
        client_id: Option<ClientId>,
    ) -> Option<(PlayerId, Entity)> {
        let id = self.free_id()?;
        let name = unique_name(wanted_name, self.players.values().map(|e| e.name.as_str()));
        let (pos, yaw) = self.choose_spawn(world, None);
        let entity = commands
            .spawn((
                Name::new(format!("player {} ({name})", id.0)),
                ServerPlayer { id, client_id },
                // Protected on joining too: nobody is shot while still loading in.
                Sim(PlayerState {
                    protected_s: arena_sim::player::SPAWN_PROTECTION_S,
                    ..PlayerState::spawned_at(pos, yaw)
                }),
                CommandBuffer::default(),
                ClientPrefs::default(),
                Score::default(),
            ))
            .id();
        self.players.insert(id, RosterEntry { client_id, name, entity, last_pos: pos });
        Some((id, entity))
    }

    pub fn name(&self, id: PlayerId) -> &str {
        self.players.get(&id).map(|e| e.name.as_str()).unwrap_or("?")
    }
}

fn on_server_event(
    event: On<RenetServerEvent>,
    mut commands: Commands,
    mut server: ResMut<RenetServer>,
    transport: Res<ServerTransport>,
    mut roster: ResMut<Roster>,
    mut refused: ResMut<Refused>,
    time: Res<Time<Real>>,
    world: Res<SimWorld>,
    tick: Res<ServerTick>,
    tick_rate: Res<TickRate>,
    snapshot_rate: Res<SnapshotRate>,
    mut stats: ResMut<ServerStats>,
) {
    match event.event().0 {
        ServerEvent::ClientConnected { client_id } => {
            let wanted = transport.user_data(client_id).map(|d| name_from_user_data(&d)).unwrap_or_default();
            if let Some(refusal) = refuse_name(&wanted, roster.players.values().map(|e| e.name.as_str())) {
                debug!("refused client {client_id}: {}", refusal.explain(&wanted));
                stats.names_refused += 1;
                send(&mut server, client_id, &ToClient::Refused(Refusal::Name(refusal)));
                refused.0.push((client_id, time.elapsed_secs_f64() + REFUSAL_GRACE_S));
                return;
            }
            let Some((id, _)) = roster.admit(&mut commands, &world, &wanted, Some(client_id)) else {
                warn!("client {client_id} connected but every player id is taken; disconnecting it");
                server.disconnect(client_id);
                return;
            };
            stats.joins += 1;
            let name = roster.name(id).to_string();
            let addr = transport.client_addr(client_id).map(|a| a.to_string()).unwrap_or_else(|| "?".into());
            info!("{name} joined from {addr} as player {}", id.0);
            let welcome = ToClient::Welcome(Welcome {
                your_id: id,
                tick_hz: tick_rate.0,
                snapshot_hz: snapshot_rate.0,
                server_tick: tick.0,
                map_name: world.map().name.clone(),
                players: roster.infos(),
            });
            send(&mut server, client_id, &welcome);
            broadcast(&mut server, &ToClient::PlayerJoined(PlayerInfo { id, name, bot: false }), Some(client_id));
            commands.trigger(PlayersChanged);
        }
        ServerEvent::ClientDisconnected { client_id, reason } => {
            let Some((id, entry)) = roster.by_client(client_id).map(|(id, e)| (id, e.clone())) else {
                debug!("client {client_id} left before it had a player ({reason})");
                return;
            };
            roster.players.remove(&id);
            commands.entity(entry.entity).despawn();
            stats.leaves += 1;
            info!("{} (player {}) left: {reason}", entry.name, id.0);
            broadcast(&mut server, &ToClient::PlayerLeft { id }, Some(client_id));
            commands.trigger(PlayersChanged);
        }
    }
}

/// Someone joined or left: the scoreboard and match state go out again.
#[derive(Event, Debug, Clone, Copy)]
pub struct PlayersChanged;
