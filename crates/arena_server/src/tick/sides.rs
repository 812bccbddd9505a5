//! Sides: who plays (and for which team) and who watches. A joining
//! player's side; a player brought into the world (a spawn point away from
//! the enemy) or taken out of it (a watcher has no `Sim`: nothing moves,
//! fires, is shot or scores for it); players' choices, at most
//! [`CHOICES_PER_S`] a second, a team switch waiting for the player's
//! death; the balance of teams (a team two players short gets one, at its
//! next death); and the duel's queue (the loser of a match steps out, the
//! first in the queue steps in). Every change goes to everyone.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use arena_protocol::ToClient;
use arena_protocol::modes::{Mode, Side, SideChoice, Team, team_for_newcomer, team_to_thin};
use arena_sim::{PlayerId, PlayerState};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use super::intake::CommandBuffer;
use super::life::{SpawnRotation, choose_spawn, kill, positions};
use super::match_flow::MatchState;
use crate::net::broadcast;
use crate::socket::rate_limits::Bucket;
use crate::vocabulary::{
    AwaitingMap, Dead, Frag, GameMode, Joined, PlayersChanged, Range, Roster, Score, ServerIdentity, ServerPlayer,
    ServerStats, ServerTick, SideAsked, SideSwitch, Sim, SimBefore, SimWorld, TickRate,
};

/// Side choices a player may make: this many a second, in bursts of
/// [`CHOICES_BURST`]; the rest are refused (counted, summed up in the log).
pub(crate) const CHOICES_PER_S: f32 = 0.5;
pub(crate) const CHOICES_BURST: f32 = 2.0;
/// How often refusals are summed up in the log.
const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<SideAsked>().init_resource::<SideStats>().init_resource::<DuelQueue>().add_observer(change_mode);
}

/// From now on, this mode is played (a vote, the console's `mode`): every
/// player who does not watch gets a side of it (teams dealt in turn, people
/// before bots; in a duel, the first two play and the rest queue), and
/// everyone is told. The match restarts separately.
#[derive(Event, Debug, Clone, Copy)]
pub(crate) struct ChangeMode(pub Mode);

fn change_mode(event: On<ChangeMode>, mut mode: ResMut<GameMode>, mut changes: SideChanges) {
    let new = event.event().0;
    if mode.mode == new {
        return;
    }
    info!("mode: {} (was {})", new.label(), mode.mode.label());
    mode.mode = new;
    if let Some(server) = changes.server.as_deref_mut() {
        broadcast(server, &ToClient::ModeChanged { mode: new }, None);
    }
    let mut players: Vec<(bool, PlayerId, Entity)> = changes
        .roster
        .players
        .iter()
        .filter(|(_, e)| e.side != Side::Spectating)
        .map(|(id, e)| (e.is_bot(), *id, e.entity))
        .collect();
    players.sort();
    for (i, (_, id, entity)) in players.into_iter().enumerate() {
        // A wish to watch at the next death is given up with the old mode.
        changes.commands.entity(entity).remove::<Forfeit>();
        let side = match new {
            Mode::Ffa => Side::Free,
            Mode::Tdm => Side::Team(if i % 2 == 0 { Team::Red } else { Team::Blue }),
            Mode::Duel if i < 2 => Side::Free,
            Mode::Duel => Side::Waiting,
        };
        changes.change(id, entity, side);
    }
}

/// Players waiting for a duel, first in line first, by entity: a player's
/// id may go to a newcomer in the frame it left, and the newcomer must not
/// inherit its place (issue 60).
#[derive(Resource, Debug, Default)]
pub(crate) struct DuelQueue(pub VecDeque<Entity>);

/// Side choices taken and refused, each player's budget, and the log's
/// summary of refusals and of watchers' commands.
#[derive(Resource, Debug, Default)]
pub struct SideStats {
    budgets: HashMap<ClientId, Bucket>,
    /// Choices taken (applied at once or waiting for a death).
    pub taken: u64,
    /// Choices refused, by reason.
    pub refused: BTreeMap<&'static str, u64>,
    /// Switches made by the balance of teams.
    pub balanced: u64,
    summarised: (u64, u64),
    last_summary: Duration,
}

/// The side a player arriving now takes: watching if it asked to (or if
/// every player's place is taken); else a team (the one that needs it), the
/// duel's queue (two already play), or free.
pub(crate) fn side_for_arrival(mode: Mode, roster: &Roster, team_frags: [i16; 2], spectate: bool) -> Side {
    if spectate {
        return Side::Spectating;
    }
    match mode {
        Mode::Ffa => Side::Free,
        Mode::Tdm => Side::Team(team_for_newcomer(roster.team_counts(), team_frags.map(i32::from))),
        Mode::Duel if roster.playing() >= 2 => Side::Waiting,
        Mode::Duel => Side::Free,
    }
}

/// Puts `side` in the roster, and tells everyone.
fn announce(roster: &mut Roster, server: Option<&mut RenetServer>, id: PlayerId, side: Side) {
    if let Some(entry) = roster.players.get_mut(&id) {
        entry.side = side;
    }
    if let Some(server) = server {
        broadcast(server, &ToClient::SideChanged { id, side }, None);
    }
}

/// A fresh player at `pos`, briefly protected: on joining, nobody is shot
/// while still loading in.
pub(crate) fn arriving_state(pos: Vec3, yaw: f32) -> Sim {
    Sim(PlayerState { protected_s: arena_sim::player::SPAWN_PROTECTION_S, ..PlayerState::spawned_at(pos, yaw) })
}

/// What changing sides needs.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct SideChanges<'w, 's> {
    commands: Commands<'w, 's>,
    roster: ResMut<'w, Roster>,
    world: Res<'w, SimWorld>,
    rotation: ResMut<'w, SpawnRotation>,
    queue: ResMut<'w, DuelQueue>,
    server: Option<ResMut<'w, RenetServer>>,
    players: Query<'w, 's, (&'static ServerPlayer, &'static Sim)>,
    awaiting: Query<'w, 's, (), With<AwaitingMap>>,
    tick: Res<'w, ServerTick>,
    dead: Query<'w, 's, &'static Dead>,
    owed: Query<'w, 's, &'static OwedRespawn>,
}

/// A death's respawn tick, kept while its player watches: coming back to
/// play before it, the player comes back dead and respawns at it, so
/// watching for a moment is no way to skip the respawn delay (issue 60).
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct OwedRespawn(u32);

impl SideChanges<'_, '_> {
    /// Moves player `id` (of `entity`) to `side`: into the world at a spawn
    /// point, out of it, or to the other team (a new life at its side).
    pub(crate) fn change(&mut self, id: PlayerId, entity: Entity, side: Side) {
        let before = self.roster.side(id);
        if before == side {
            return;
        }
        announce(&mut self.roster, self.server.as_deref_mut(), id, side);
        self.queue.0.retain(|q| *q != entity);
        if side == Side::Waiting {
            self.queue.0.push_back(entity);
        }
        let mut entity_commands = self.commands.entity(entity);
        entity_commands.remove::<SideSwitch>();
        if side.watches() {
            // Out of the world: nothing of its life is left to simulate or
            // score; a death's respawn is owed still.
            if let Ok(dead) = self.dead.get(entity) {
                entity_commands.insert(OwedRespawn(dead.respawn_tick));
            }
            entity_commands.remove::<(Sim, Score, Dead)>();
        } else if before.watches() {
            let owed = self.owed.get(entity).ok().map(|o| o.0).filter(|at| arena_sim::tick_after(*at, self.tick.0));
            entity_commands.remove::<OwedRespawn>();
            // Into the world, at a spawn point away from its enemies.
            let others: Vec<(PlayerId, Vec3)> =
                positions(self.players.iter()).into_iter().filter(|(other, _)| *other != id).collect();
            let (pos, yaw) = choose_spawn(&self.world, &self.roster, side, &others, &mut self.rotation);
            let mut arriving = arriving_state(pos, yaw);
            if self.awaiting.contains(entity) {
                // Its client has no map yet: in the world, not alive, until it has.
                arriving.0.alive = false;
            } else if let Some(respawn_tick) = owed {
                // Back before its death's respawn: dead until then.
                arriving.0.alive = false;
                entity_commands.insert(Dead { respawn_tick });
            }
            // Its tick before is this one too: a first shot blends from nowhere else.
            let before_state = SimBefore(arriving.0);
            entity_commands.insert((arriving, before_state, CommandBuffer::default(), Score::default()));
        }
        // From one team to the other: the switch waited for a death, and the
        // respawn (after the usual delay: a switch is no way to skip it)
        // puts it at its new side's spawn.
        self.commands.trigger(PlayersChanged);
    }
}

/// Why a choice is not taken (told to nobody but the log's summary: the
/// player sees its side stay as it was).
/// Whether a place to play and one to watch are free.
#[derive(Debug, Clone, Copy)]
struct Room {
    play: bool,
    watch: bool,
}

fn judge(
    choice: SideChoice,
    current: Side,
    (mode, team_frags): (Mode, [i16; 2]),
    roster: &Roster,
    room: Room,
) -> Result<Side, &'static str> {
    let wanted = match (choice, mode) {
        (SideChoice::Spectate, _) => Side::Spectating,
        (SideChoice::Team(team), Mode::Tdm) => Side::Team(team),
        (SideChoice::Play, Mode::Tdm) if current.team().is_some() => current,
        (SideChoice::Play, Mode::Tdm) => Side::Team(team_for_newcomer(roster.team_counts(), team_frags.map(i32::from))),
        (SideChoice::Play | SideChoice::Team(_), Mode::Duel) if current.plays() => current,
        (SideChoice::Play | SideChoice::Team(_), Mode::Duel) => {
            if roster.playing() >= 2 {
                Side::Waiting
            } else {
                Side::Free
            }
        }
        (SideChoice::Play | SideChoice::Team(_), Mode::Ffa) => Side::Free,
    };
    if wanted == current {
        return Err("already there");
    }
    if current == Side::Spectating && wanted != Side::Spectating && !room.play {
        return Err("no room to play");
    }
    if wanted == Side::Spectating && !room.watch {
        return Err("no room to watch");
    }
    if let (Some(team), true) = (wanted.team(), mode == Mode::Tdm) {
        // Joining a team may not leave it two ahead of the other.
        let mut counts = roster.team_counts();
        if let Some(from) = current.team() {
            counts[from.index()] = counts[from.index()].saturating_sub(1);
        }
        if counts[team.index()] + 1 >= counts[team.other().index()] + 2 {
            return Err("team too big");
        }
    }
    Ok(wanted)
}

/// The choices intake read this frame: within the budget, judged; a team
/// switch of a living player waits for its death, and so does leaving the
/// world to watch (the life is forfeited at once: a death and a frag lost,
/// as a fall; watching is no way out of a lost fight); the rest happen now.
pub(crate) fn take_choices(
    mut asked: MessageReader<SideAsked>,
    mut changes: SideChanges,
    (mode, identity, state): (Res<GameMode>, Res<ServerIdentity>, Res<MatchState>),
    range: Option<Res<Range>>,
    mut stats: ResMut<SideStats>,
    alive: Query<(), (With<Sim>, Without<Dead>, Without<AwaitingMap>)>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    if asked.is_empty() {
        return;
    }
    for SideAsked { client, choice } in asked.read() {
        let Some((id, entry)) = changes.roster.by_client(*client).map(|(id, e)| (id, e.clone())) else { continue };
        let bucket = stats.budgets.entry(*client).or_insert_with(|| Bucket::full(CHOICES_BURST, now));
        let roster = &changes.roster;
        let room = Room {
            play: roster.clients_playing() < identity.max_clients,
            watch: roster.spectators() < mode.max_spectators,
        };
        let verdict = if range.is_some() {
            Err("on a range")
        } else if bucket.take(now, CHOICES_PER_S, CHOICES_BURST) {
            judge(*choice, entry.side, (mode.mode, state.team_frags), roster, room)
        } else {
            Err("too fast")
        };
        match verdict {
            Err(why) => *stats.refused.entry(why).or_default() += 1,
            Ok(side) => {
                stats.taken += 1;
                if entry.side.plays() && alive.contains(entry.entity) {
                    info!("{} goes {} at the next death", entry.name, side.label());
                    let mut entity = changes.commands.entity(entry.entity);
                    entity.insert(SideSwitch(side));
                    if side.watches() {
                        entity.insert(Forfeit);
                    }
                } else {
                    info!("{} is now {}", entry.name, side.label());
                    changes.change(id, entry.entity, side);
                }
            }
        }
    }
    stats.budgets.retain(|client, _| changes.roster.by_client(*client).is_some());
}

/// A living player who chose to watch: its life ends now, as a fall's.
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct Forfeit;

/// The lives forfeited to watch end (before the frags are counted, so that
/// the death counts, and before the switches are made).
pub(crate) fn forfeit_lives(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    mut forfeits: Query<(Entity, &ServerPlayer, &mut Sim), With<Forfeit>>,
    mut frags: MessageWriter<Frag>,
    mut commands: Commands,
) {
    for (entity, player, mut sim) in &mut forfeits {
        commands.entity(entity).remove::<Forfeit>();
        if sim.alive {
            let frag = Frag { killer: player.id, victim: player.id, zone: arena_sim::HitZone::Body };
            kill(&mut commands, entity, &mut sim.0, frag, *tick, *rate, &mut frags);
        }
    }
}

/// Switches waiting for a death, made once it came (before the dead respawn).
pub(crate) fn switch_the_dead(
    mut changes: SideChanges,
    waiting: Query<(Entity, &ServerPlayer, &SideSwitch, Has<Dead>)>,
) {
    for (entity, player, switch, dead) in &waiting {
        if dead {
            changes.change(player.id, entity, switch.0);
        }
    }
}

/// Team deathmatch: when one team is two players short, a player of the
/// other is moved at its next death (a bot rather than a person; among
/// those, the newest).
pub(crate) fn balance_teams(
    mode: Res<GameMode>,
    roster: Res<Roster>,
    switching: Query<(&ServerPlayer, &SideSwitch)>,
    joined: Query<&Joined>,
    mut stats: ResMut<SideStats>,
    mut commands: Commands,
) {
    if mode.mode != Mode::Tdm {
        return;
    }
    // As the teams will be once the switches asked for are made.
    let mut counts = roster.team_counts();
    for (player, switch) in &switching {
        if let (Some(from), Some(to)) = (roster.side(player.id).team(), switch.0.team()) {
            counts[from.index()] = counts[from.index()].saturating_sub(1);
            counts[to.index()] += 1;
        }
    }
    let Some(big) = team_to_thin(counts) else { return };
    let pending: Vec<PlayerId> = switching.iter().map(|(p, _)| p.id).collect();
    let moved = roster
        .players
        .iter()
        .filter(|(id, e)| e.side == Side::Team(big) && !pending.contains(id))
        .max_by_key(|(_, e)| (e.is_bot(), joined.get(e.entity).map(|j| j.0).ok()));
    if let Some((id, entry)) = moved {
        info!("balance: {} moves to the {} team at the next death", roster.label(*id), big.other().name());
        stats.balanced += 1;
        commands.entity(entry.entity).insert(SideSwitch(Side::Team(big.other())));
    }
}

/// The duel: at a new match the last one's loser steps out to the end of
/// the queue; whenever fewer than two play, the first in the queue steps in.
pub(crate) fn rotate_duel(
    mode: Res<GameMode>,
    mut state: ResMut<MatchState>,
    mut changes: SideChanges,
    mut seen_match: Local<u32>,
) {
    if mode.mode != Mode::Duel {
        return;
    }
    // The queue in its order; those who arrived waiting join its end.
    let waiting: Vec<Entity> =
        changes.roster.players.values().filter(|e| e.side == Side::Waiting).map(|e| e.entity).collect();
    changes.queue.0.retain(|e| waiting.contains(e));
    let arrived: Vec<Entity> = waiting.into_iter().filter(|e| !changes.queue.0.contains(e)).collect();
    changes.queue.0.extend(arrived);
    let new_match = std::mem::replace(&mut *seen_match, state.number) != state.number;
    if new_match && let Some((loser, loser_entity)) = state.duel_loser.take() {
        let waiting = !changes.queue.0.is_empty();
        let playing_loser =
            changes.roster.players.get(&loser).filter(|e| e.side.plays() && e.entity == loser_entity).map(|e| e.entity);
        if let (true, Some(entity)) = (waiting, playing_loser) {
            info!("duel: {} steps out and waits", changes.roster.label(loser));
            changes.change(loser, entity, Side::Waiting);
        }
    }
    let mut playing = changes.roster.playing();
    while playing < 2 {
        let Some(next) = changes.queue.0.front().copied() else { break };
        let Some(id) = changes.roster.players.iter().find(|(_, e)| e.entity == next).map(|(id, _)| *id) else {
            changes.queue.0.pop_front();
            continue;
        };
        info!("duel: {} steps in", changes.roster.label(id));
        changes.change(id, next, Side::Free);
        playing += 1;
    }
}

/// Refused choices and watchers' commands, summed up in the log at most
/// every [`SUMMARY_PERIOD`].
pub(crate) fn sum_up(mut stats: ResMut<SideStats>, server_stats: Res<ServerStats>, time: Res<Time<Real>>) {
    let now = time.elapsed();
    let refused: u64 = stats.refused.values().sum();
    let ignored = server_stats.watcher_commands;
    let (refused_before, ignored_before) = stats.summarised;
    if (refused, ignored) == stats.summarised || now.saturating_sub(stats.last_summary) < SUMMARY_PERIOD {
        return;
    }
    let reasons: Vec<String> = stats.refused.iter().map(|(why, n)| format!("{n} {why}")).collect();
    info!(
        "sides: {} choices refused lately ({} since the start: {}); {} commands of watchers ignored lately",
        refused - refused_before,
        refused,
        reasons.join(", "),
        ignored - ignored_before
    );
    stats.summarised = (refused, ignored);
    stats.last_summary = now;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::RosterEntry;
    use arena_protocol::modes::Team;

    fn roster(sides: &[Side]) -> Roster {
        let mut roster = Roster::default();
        for (i, side) in sides.iter().enumerate() {
            let entry = RosterEntry {
                client_id: Some(i as u64),
                name: format!("p{i}"),
                entity: Entity::PLACEHOLDER,
                side: *side,
            };
            roster.players.insert(PlayerId(i as u8), entry);
        }
        roster
    }

    /// A player waiting for the duel leaves and a newcomer is given its id
    /// in the same frame: the newcomer joins the end of the queue, and the
    /// one who waited longer steps in first.
    #[test]
    fn a_newcomer_with_a_departed_players_id_waits_at_the_end_of_the_duel_queue() {
        use bevy::ecs::system::RunSystemOnce;
        let mut world = World::new();
        let map = arena_sim::MapDef::built_in(arena_sim::MapDef::built_in_names()[0]).unwrap();
        world.insert_resource(SimWorld(std::sync::Arc::new(arena_sim::ArenaWorld::new(map))));
        world.insert_resource(GameMode { mode: Mode::Duel, ..Default::default() });
        world.insert_resource(MatchState::default());
        world.insert_resource(ServerTick(100));
        world.init_resource::<SpawnRotation>();
        world.init_resource::<DuelQueue>();
        let mut roster = Roster::default();
        let join = |world: &mut World, roster: &mut Roster, id: u8, side: Side| {
            let entity = world.spawn(ServerPlayer { id: PlayerId(id), client_id: Some(u64::from(id)) }).id();
            let entry = RosterEntry { client_id: Some(u64::from(id)), name: format!("p{id}"), entity, side };
            roster.players.insert(PlayerId(id), entry);
            entity
        };
        join(&mut world, &mut roster, 0, Side::Free);
        join(&mut world, &mut roster, 1, Side::Free);
        let first = join(&mut world, &mut roster, 2, Side::Waiting);
        let second = join(&mut world, &mut roster, 3, Side::Waiting);
        world.insert_resource(roster);
        world.run_system_once(rotate_duel).unwrap();
        assert_eq!(world.resource::<DuelQueue>().0, [first, second]);
        // Player 0 (playing) and player 2 (first in line) leave; a newcomer
        // takes id 2 in the same frame.
        world.despawn(first);
        let mut roster = world.remove_resource::<Roster>().unwrap();
        roster.players.remove(&PlayerId(0));
        let newcomer = join(&mut world, &mut roster, 2, Side::Waiting);
        world.insert_resource(roster);
        world.run_system_once(rotate_duel).unwrap();
        let roster = world.resource::<Roster>();
        assert_eq!(roster.side(PlayerId(3)), Side::Free, "the one who waited steps in");
        assert_eq!(roster.side(PlayerId(2)), Side::Waiting, "the newcomer waits");
        assert_eq!(world.resource::<DuelQueue>().0, [newcomer]);
    }

    #[test]
    fn arrivals_go_where_they_are_needed() {
        let (red, blue) = (Side::Team(Team::Red), Side::Team(Team::Blue));
        let two_reds = roster(&[red, red, blue]);
        assert_eq!(side_for_arrival(Mode::Tdm, &two_reds, [0, 0], false), blue);
        assert_eq!(side_for_arrival(Mode::Tdm, &two_reds, [0, 0], true), Side::Spectating);
        let duel = roster(&[Side::Free, Side::Free]);
        assert_eq!(side_for_arrival(Mode::Duel, &duel, [0, 0], false), Side::Waiting);
        assert_eq!(side_for_arrival(Mode::Duel, &roster(&[Side::Free]), [0, 0], false), Side::Free);
        assert_eq!(side_for_arrival(Mode::Ffa, &duel, [0, 0], false), Side::Free);
    }

    const ROOM: Room = Room { play: true, watch: true };

    #[test]
    fn a_choice_may_not_leave_a_team_two_ahead() {
        let (red, blue) = (Side::Team(Team::Red), Side::Team(Team::Blue));
        let even = roster(&[red, blue]);
        assert_eq!(judge(SideChoice::Team(Team::Red), blue, (Mode::Tdm, [0, 0]), &even, ROOM), Err("team too big"));
        assert_eq!(judge(SideChoice::Team(Team::Red), red, (Mode::Tdm, [0, 0]), &even, ROOM), Err("already there"));
        let uneven = roster(&[red, blue, blue]);
        assert_eq!(judge(SideChoice::Team(Team::Red), blue, (Mode::Tdm, [0, 0]), &uneven, ROOM), Ok(red));
        assert_eq!(judge(SideChoice::Spectate, red, (Mode::Tdm, [0, 0]), &even, ROOM), Ok(Side::Spectating));
        assert_eq!(judge(SideChoice::Play, Side::Spectating, (Mode::Tdm, [0, 0]), &even, ROOM), Ok(red));
        assert_eq!(
            judge(SideChoice::Play, Side::Spectating, (Mode::Tdm, [0, 0]), &even, Room { play: false, watch: true }),
            Err("no room to play")
        );
        let duel = roster(&[Side::Free, Side::Free]);
        assert_eq!(judge(SideChoice::Play, Side::Spectating, (Mode::Duel, [0, 0]), &duel, ROOM), Ok(Side::Waiting));
        assert_eq!(
            judge(SideChoice::Team(Team::Blue), Side::Free, (Mode::Ffa, [0, 0]), &duel, ROOM),
            Err("already there")
        );
        let full = Room { play: true, watch: false };
        assert_eq!(judge(SideChoice::Spectate, Side::Free, (Mode::Ffa, [0, 0]), &duel, full), Err("no room to watch"));
        // From watching, as a newcomer: the team behind in frags when the teams are even.
        assert_eq!(judge(SideChoice::Play, Side::Spectating, (Mode::Tdm, [9, 3]), &even, ROOM), Ok(blue));
    }
}
