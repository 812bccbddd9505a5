//! Maps in turn: at a match's end the next match is on the next map of the
//! rotation (`--maps a,b`), or on the map the console asked for (`map`,
//! `changelevel`). The world, the bots' navigation graph and the name the
//! server answers queries with change together, in the tick the new match
//! starts (before its respawns, which put everyone on the new map's spawn
//! points); rockets in flight, the rewind history and the kill-cam tracks
//! go; every client is told to load the map (a client player on a map
//! from a file is held out of the world until its client has it).

use std::sync::Arc;

use arena_protocol::ToClient;
use arena_protocol::messages::MatchPhase;
use arena_sim::ArenaWorld;
use arena_sim::nav::NavGraph;
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::bots::{BotBrain, Navigation};
use super::kill_cam::Track;
use super::lag_compensation::LagHistory;
use super::match_flow::MatchState;
use super::rockets::Rockets;
use crate::net::broadcast;
use crate::vocabulary::{AwaitingMap, Range, ServedMaps, ServerIdentity, ServerPlayer, ServerTick, SimWorld};

/// The maps played in turn, and which comes next; a map the console asked
/// for goes first.
#[derive(Resource, Debug, Clone, Default)]
pub struct MapRotation {
    pub maps: Vec<String>,
    /// Index in `maps` of the map now played.
    pub now: usize,
    /// The map the next match is on, whatever the rotation says.
    pub asked: Option<String>,
}

impl MapRotation {
    /// The rotation `maps` (built-in names), starting on `current`.
    pub fn new(maps: Vec<String>, current: &str) -> Self {
        let now = maps.iter().position(|m| m.eq_ignore_ascii_case(current)).unwrap_or(0);
        Self { maps, now, asked: None }
    }

    /// The map the next match is on, if it is another than `current`; steps
    /// the rotation on.
    fn next(&mut self, current: &str) -> Option<String> {
        if let Some(asked) = self.asked.take() {
            if let Some(i) = self.maps.iter().position(|m| m.eq_ignore_ascii_case(&asked)) {
                self.now = i;
            }
            return (!asked.eq_ignore_ascii_case(current)).then_some(asked);
        }
        if self.maps.len() < 2 {
            return None;
        }
        self.now = (self.now + 1) % self.maps.len();
        let next = self.maps[self.now].clone();
        (!next.eq_ignore_ascii_case(current)).then_some(next)
    }
}

/// At the tick a match's results end (the next starts), the next map in.
pub(crate) fn rotate_maps(
    tick: Res<ServerTick>,
    state: Res<MatchState>,
    range: Option<Res<Range>>,
    mut rotation: ResMut<MapRotation>,
    (mut world, mut identity, served): (ResMut<SimWorld>, ResMut<ServerIdentity>, Res<ServedMaps>),
    clients: Query<(Entity, &ServerPlayer)>,
    mut bots: Query<&mut BotBrain>,
    (mut rockets, mut history, mut tracks): (ResMut<Rockets>, ResMut<LagHistory>, Query<&mut Track>),
    mut server: ResMut<RenetServer>,
    mut commands: Commands,
) {
    let starts = matches!(state.phase, MatchPhase::Over { .. })
        && state.phase_ends_tick != 0
        && !arena_sim::tick_after(state.phase_ends_tick, tick.0);
    if !starts || range.is_some() {
        return;
    }
    let current = world.map().name.clone();
    let Some(name) = rotation.next(&current) else { return };
    let Some(map) = served.find(&name) else {
        warn!("no map \"{name}\": the next match stays on {current}");
        return;
    };
    info!("the next match is on {} (after {current})", map.id.name);
    identity.map = map.id.name.clone();
    if map.file {
        // Every client must first have it (and may have to download it).
        for (entity, _) in clients.iter().filter(|(_, p)| !p.is_bot()) {
            commands.entity(entity).insert(AwaitingMap);
        }
    }
    let id = map.id.clone();
    let built = Arc::new(ArenaWorld::new(map.def.clone()));
    commands.insert_resource(Navigation(NavGraph::build(&built)));
    *world = SimWorld(built);
    // What was recorded on the old map: no shot rewinds into it, no
    // kill-cam replays it.
    rockets.0.clear();
    history.clear();
    for mut track in &mut tracks {
        track.clear();
    }
    for mut brain in &mut bots {
        brain.forget_path();
    }
    broadcast(&mut server, &ToClient::ChangeMap(id), None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rotation_goes_round_and_a_map_asked_for_goes_first() {
        let mut r = MapRotation::new(vec!["Foundry".into(), "Spire".into()], "Foundry");
        assert_eq!(r.next("Foundry").as_deref(), Some("Spire"));
        assert_eq!(r.next("Spire").as_deref(), Some("Foundry"));
        r.asked = Some("Foundry".into());
        assert_eq!(r.next("Foundry"), None, "asked for the map it is on: stays");
        assert_eq!(r.next("Foundry").as_deref(), Some("Spire"), "then on round");
        let mut single = MapRotation::new(vec![], "Foundry");
        assert_eq!(single.next("Foundry"), None);
        single.asked = Some("Spire".into());
        assert_eq!(single.next("Foundry").as_deref(), Some("Spire"));
    }
}
