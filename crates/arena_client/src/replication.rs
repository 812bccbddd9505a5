//! Replication: the server's messages become entities. Every player in the
//! newest snapshot has an entity with its latest state; the local player's is
//! marked. This is the paper's "dumb client": it draws what the server said.

use std::collections::{BTreeMap, HashMap};

use arena_protocol::names::clean_name;
use arena_protocol::{MAX_PLAYERS, Refusal, Snapshot, ToClient, channel, decode};
use arena_sim::{PlayerId, PlayerState, tick_after};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::commands::LocalInput;
use crate::{ClientSet, ClientStats, Session};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Roster>()
        .init_resource::<PlayerEntities>()
        .add_message::<Welcomed>()
        .add_message::<SnapshotApplied>()
        .add_message::<GameMessage>()
        .add_systems(PreUpdate, receive_messages.in_set(ClientSet::Apply).run_if(resource_exists::<RenetClient>))
        .add_systems(OnEnter(Session::Offline), clear_world);
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

#[derive(Component, Debug, Clone, PartialEq, Eq)]
pub struct PlayerName(pub String);

/// Who is on the server, and who we are.
#[derive(Resource, Debug, Default, Clone)]
pub struct Roster {
    pub local_id: Option<PlayerId>,
    pub tick_hz: u32,
    pub snapshot_hz: u32,
    pub map_name: String,
    pub names: BTreeMap<PlayerId, String>,
    /// The server's bots.
    pub bots: std::collections::BTreeSet<PlayerId>,
    /// Tick of the newest snapshot applied.
    pub last_snapshot_tick: Option<u32>,
}

#[derive(Resource, Debug, Default)]
struct PlayerEntities(HashMap<PlayerId, Entity>);

/// Shots, damage, kills, scores and the match's state from the server.
#[derive(Message, Debug, Clone)]
pub struct GameMessage(pub ToClient);

/// The server welcomed us.
#[derive(Message, Debug, Clone, Copy)]
pub struct Welcomed {
    pub tick_hz: u32,
    pub server_tick: u32,
}

/// A newer snapshot was applied: what it says about us.
#[derive(Message, Debug, Clone, Copy)]
pub struct SnapshotApplied {
    pub tick: u32,
    /// The newest of our commands the server has run.
    pub ack: Option<u32>,
    /// The newest of our command ticks the server has received.
    pub newest_cmd_tick: Option<u32>,
    /// How early our commands reached the server at worst lately, ticks.
    pub margin_ticks: Option<f32>,
    /// Our player's state after `ack`.
    pub local_state: Option<PlayerState>,
}

fn receive_messages(
    mut client: ResMut<RenetClient>,
    mut roster: ResMut<Roster>,
    mut entities: ResMut<PlayerEntities>,
    mut stats: ResMut<ClientStats>,
    mut input: ResMut<LocalInput>,
    mut fixed: ResMut<Time<Fixed>>,
    session: Res<State<Session>>,
    mut next: ResMut<NextState<Session>>,
    mut commands: Commands,
    mut players: Query<(&mut NetState, &mut PlayerName)>,
    mut welcomed: MessageWriter<Welcomed>,
    mut applied: MessageWriter<SnapshotApplied>,
    mut combat: MessageWriter<GameMessage>,
    connection: Option<Res<crate::ServerConnection>>,
    mut transport: Option<ResMut<crate::transport::UdpTransport>>,
) {
    let mut newest: Option<Snapshot> = None;
    for channel in [channel::RELIABLE, channel::UNRELIABLE] {
        while let Some(bytes) = client.receive_message(channel) {
            let message = match decode::<ToClient>(&bytes).map_err(|e| e.to_string()).and_then(|m| {
                m.validate()?;
                Ok(m)
            }) {
                Ok(message) => message,
                Err(e) => {
                    stats.bad_messages += 1;
                    debug!("dropped a bad message from the server: {e}");
                    continue;
                }
            };
            match message {
                ToClient::Refused(Refusal::Name(refusal)) => {
                    let name = connection.as_ref().map(|c| c.name.clone()).unwrap_or_default();
                    crate::connection::end_connection(&mut commands, refusal.explain(&name));
                    if let Some(transport) = transport.as_mut() {
                        transport.disconnect();
                    }
                    return;
                }
                ToClient::Welcome(welcome) => {
                    if !arena_sim::TICK_HZ_RANGE.contains(&welcome.tick_hz) || welcome.players.len() > MAX_PLAYERS {
                        stats.bad_messages += 1;
                        warn!("ignored a malformed welcome (tick rate {} Hz)", welcome.tick_hz);
                        continue;
                    }
                    info!(
                        "joined {} as player {} ({} Hz, {} players)",
                        welcome.map_name,
                        welcome.your_id.0,
                        welcome.tick_hz,
                        welcome.players.len()
                    );
                    roster.local_id = Some(welcome.your_id);
                    roster.tick_hz = welcome.tick_hz;
                    roster.snapshot_hz = welcome.snapshot_hz.clamp(1, welcome.tick_hz);
                    roster.map_name = clean_name(&welcome.map_name);
                    roster.bots = welcome.players.iter().filter(|p| p.bot).map(|p| p.id).collect();
                    roster.names = welcome.players.into_iter().map(|p| (p.id, clean_name(&p.name))).collect();
                    roster.last_snapshot_tick = None;
                    fixed.set_timestep_hz(f64::from(welcome.tick_hz));
                    welcomed.write(Welcomed { tick_hz: welcome.tick_hz, server_tick: welcome.server_tick });
                    if *session.get() == Session::Connecting {
                        next.set(Session::InGame);
                    }
                }
                ToClient::PlayerJoined(info) => {
                    info!("{} joined", info.name);
                    roster.names.insert(info.id, clean_name(&info.name));
                    if info.bot {
                        roster.bots.insert(info.id);
                    }
                }
                ToClient::PlayerLeft { id } => {
                    roster.bots.remove(&id);
                    if let Some(name) = roster.names.remove(&id) {
                        info!("{name} left");
                    }
                    if let Some(entity) = entities.0.remove(&id) {
                        commands.entity(entity).despawn();
                    }
                }
                message @ (ToClient::ShotResult(_)
                | ToClient::ShotFired { .. }
                | ToClient::Damaged { .. }
                | ToClient::Killed { .. }
                | ToClient::Scores(_)
                | ToClient::Match(_)) => {
                    combat.write(GameMessage(message));
                }
                ToClient::Snapshot(snapshot) => {
                    stats.snapshots_received += 1;
                    if newest.as_ref().is_none_or(|n| tick_after(snapshot.tick, n.tick)) {
                        newest = Some(snapshot);
                    } else {
                        stats.stale_snapshots += 1;
                    }
                }
            }
        }
    }

    let Some(snapshot) = newest else { return };
    let Some(local_id) = roster.local_id else { return };
    if roster.last_snapshot_tick.is_some_and(|last| !tick_after(snapshot.tick, last)) {
        stats.stale_snapshots += 1;
        return;
    }
    if snapshot.players.len() > MAX_PLAYERS {
        stats.bad_messages += 1;
        return;
    }
    roster.last_snapshot_tick = Some(snapshot.tick);

    // The snapshot says who is in the world: spawn newcomers, update everyone,
    // remove whoever is no longer in it.
    let mut seen = Vec::with_capacity(snapshot.players.len());
    let mut local_state = None;
    for player in &snapshot.players {
        let state = player.state;
        if !(state.pos.is_finite() && state.vel.is_finite() && state.yaw.is_finite() && state.pitch.is_finite()) {
            stats.bad_messages += 1;
            continue;
        }
        seen.push(player.id);
        if player.id == local_id {
            local_state = Some(state);
        }
        let name = roster.names.get(&player.id).cloned().unwrap_or_else(|| format!("player {}", player.id.0));
        let net_state = NetState { state, tick: snapshot.tick };
        if player.id == local_id && !input.view_initialised {
            // Look where the server spawned us.
            input.yaw = state.yaw;
            input.pitch = state.pitch;
            input.view_initialised = true;
        }
        let existing = entities.0.get(&player.id).copied().filter(|e| players.contains(*e));
        if let Some((mut current, mut current_name)) = existing.and_then(|e| players.get_mut(e).ok()) {
            *current = net_state;
            if current_name.0 != name {
                current_name.0 = name;
            }
        } else {
            let mut entity = commands.spawn((
                Name::new(format!("net player {}", player.id.0)),
                NetPlayer { id: player.id },
                net_state,
                PlayerName(name),
            ));
            if player.id == local_id {
                entity.insert(LocalPlayer);
            }
            entities.0.insert(player.id, entity.id());
        }
    }
    applied.write(SnapshotApplied {
        tick: snapshot.tick,
        ack: snapshot.last_cmd_tick,
        newest_cmd_tick: snapshot.newest_cmd_tick,
        margin_ticks: snapshot.cmd_margin_centiticks.map(|c| f32::from(c) / 100.0),
        local_state,
    });
    entities.0.retain(|id, entity| {
        let keep = seen.contains(id);
        if !keep {
            commands.entity(*entity).despawn();
        }
        keep
    });
}

fn clear_world(mut commands: Commands, mut entities: ResMut<PlayerEntities>, mut roster: ResMut<Roster>) {
    for (_, entity) in entities.0.drain() {
        commands.entity(entity).despawn();
    }
    *roster = Roster::default();
}
