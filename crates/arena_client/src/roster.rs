//! The roster: who is on the server and who we are, from the welcome and the
//! joins and leaves after it. The welcome puts us in the game; its map (and
//! each map after it) is found or fetched by `map_download`.

use bevy::prelude::*;

use crate::vocabulary::{MapNeeded, PlayerEntities, Roster, RosterNews, Session, Welcomed};

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
    mut maps: MessageWriter<MapNeeded>,
    mut commands: Commands,
) {
    for news in news.read() {
        match news {
            RosterNews::Welcome(welcome) => {
                // The server's map: the world predicted and drawn in.
                maps.write(MapNeeded(welcome.map.clone()));
                info!(
                    "joined {} as player {} ({} Hz, {} players)",
                    arena_protocol::names::clean_name(&welcome.map.name),
                    welcome.your_id.0,
                    welcome.tick_hz,
                    welcome.players.len()
                );
                *roster = Roster {
                    local_id: Some(welcome.your_id),
                    tick_hz: welcome.tick_hz,
                    snapshot_hz: welcome.snapshot_hz,
                    map_name: arena_protocol::names::clean_name(&welcome.map.name),
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
                info!("{} joined", arena_protocol::names::clean_name(&info.name));
                roster.add(info);
            }
            RosterNews::Side(id, side) => {
                if roster.names.contains_key(id) {
                    info!("{} is now {}", roster.name(*id), side.label());
                    roster.sides.insert(*id, *side);
                }
            }
            RosterNews::Map(id) => {
                info!("the next match is on {}", arena_protocol::names::clean_name(&id.name));
                maps.write(MapNeeded(id.clone()));
            }
            RosterNews::Mode(mode) => {
                info!("the next match is {}", mode.label());
                roster.mode = *mode;
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
