//! The roster: who is on the server and who we are, from the welcome and the
//! joins and leaves after it. The welcome puts us in the game, on the
//! server's map (a built-in one by name; another ends the connection).

use bevy::prelude::*;

use crate::vocabulary::{ClientWorld, PlayerEntities, Roster, RosterNews, Session, Welcomed};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Roster>().init_resource::<PlayerEntities>().add_message::<Welcomed>();
}

pub(crate) fn apply_roster_news(
    mut news: MessageReader<RosterNews>,
    mut roster: ResMut<Roster>,
    mut entities: ResMut<PlayerEntities>,
    session: Res<State<Session>>,
    mut next: ResMut<NextState<Session>>,
    mut welcomed: MessageWriter<Welcomed>,
    mut world: ResMut<ClientWorld>,
    mut commands: Commands,
) {
    for news in news.read() {
        match news {
            RosterNews::Welcome(welcome) => {
                // The server's map, built in: the world predicted and drawn in.
                if !load_map(&welcome.map_name, &mut world, &mut commands) {
                    continue;
                }
                info!(
                    "joined {} as player {} ({} Hz, {} players)",
                    welcome.map_name,
                    welcome.your_id.0,
                    welcome.tick_hz,
                    welcome.players.len()
                );
                *roster = Roster {
                    local_id: Some(welcome.your_id),
                    tick_hz: welcome.tick_hz,
                    snapshot_hz: welcome.snapshot_hz,
                    map_name: arena_protocol::names::clean_name(&welcome.map_name),
                    range: welcome.range,
                    subtick: welcome.subtick,
                    mode: welcome.mode,
                    ..Roster::default()
                };
                for info in &welcome.players {
                    roster.add(info);
                }
                welcomed.write(Welcomed { tick_hz: welcome.tick_hz, server_tick: welcome.server_tick });
                if *session.get() == Session::Connecting {
                    next.set(Session::InGame);
                }
            }
            RosterNews::Joined(info) => {
                info!("{} joined", info.name);
                roster.add(info);
            }
            RosterNews::Side(id, side) => {
                if roster.names.contains_key(id) {
                    info!("{} is now {}", roster.name(*id), side.label());
                    roster.sides.insert(*id, *side);
                }
            }
            RosterNews::Map(name) => {
                if load_map(name, &mut world, &mut commands) {
                    info!("the next match is on {}", world.map().name);
                    roster.map_name = world.map().name.clone();
                }
            }
            RosterNews::Left(id) => {
                roster.bots.remove(id);
                roster.sides.remove(id);
                if let Some(name) = roster.names.remove(id) {
                    info!("{name} left");
                }
                if let Some(entity) = entities.0.remove(id) {
                    commands.entity(entity).despawn();
                }
            }
        }
    }
}

/// Back at the menu: nobody is left in the world.
pub(crate) fn clear_world(mut commands: Commands, mut entities: ResMut<PlayerEntities>, mut roster: ResMut<Roster>) {
    for (_, entity) in entities.0.drain() {
        commands.entity(entity).despawn();
    }
    *roster = Roster::default();
}

/// Puts the built-in map called `name` in the client world (if it is not
/// there already); a map this game does not have ends the connection,
/// saying so, and gives false.
fn load_map(name: &str, world: &mut ResMut<ClientWorld>, commands: &mut Commands) -> bool {
    // Read, not written, when it is the same map (case aside): the view
    // rebuilds the arena whenever the world changes.
    if world.map().name.eq_ignore_ascii_case(name) {
        return true;
    }
    match arena_sim::MapDef::built_in(name) {
        Some(map) => {
            **world = ClientWorld(std::sync::Arc::new(arena_sim::ArenaWorld::new(map)));
            true
        }
        None => {
            let reason = format!(
                "The server plays the map \"{}\", which this game does not have (maps: {}).",
                arena_protocol::names::clean_name(name),
                arena_sim::MapDef::built_in_names().join(", ")
            );
            crate::connection::end_connection(commands, reason);
            false
        }
    }
}
