//! Spectating: the side we ask the server for (play, a team, watch), and,
//! while we watch, whom we follow and how (first person, chase, or free
//! flight). A followed player is drawn like any other, from snapshots by
//! interpolation: the view only puts its camera where that player is drawn.

use arena_protocol::ToServer;
use arena_protocol::modes::SideChoice;
use arena_sim::PlayerId;
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::vocabulary::{MessageTally, NetPlayer, PlayerEntities, Roster, SessionState, send_to_server};

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<Spectating>().add_message::<ChooseSide>().add_message::<SpectatorInput>();
}

/// The player asks to play, to play for a team, or to watch (the view's
/// menu and `arena bots --team/--spectate` write it).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChooseSide(pub SideChoice);

/// How a watcher sees the game.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum WatchView {
    /// Through the followed player's eyes.
    #[default]
    FirstPerson,
    /// From behind and above the followed player.
    Chase,
    /// Flying freely (nobody followed).
    FreeFly,
}

/// A watcher's choices (the view maps the mouse buttons and Space to them).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpectatorInput {
    /// Follow the next player in the world (by id), or the one before.
    Next,
    Previous,
    /// First person and chase in turn; from free flight, follow again.
    SwitchView,
    /// Fly freely.
    FreeFly,
}

/// Whom a watcher follows, and how.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Spectating {
    /// The player followed (none: nobody is in the world, or free flight).
    pub target: Option<PlayerId>,
    pub view: WatchView,
}

/// Sends the side the player asked for.
pub(crate) fn send_side_choices(
    mut asked: MessageReader<ChooseSide>,
    client: Option<ResMut<RenetClient>>,
    mut tally: ResMut<MessageTally>,
) {
    let Some(mut client) = client else {
        asked.clear();
        return;
    };
    for ChooseSide(choice) in asked.read() {
        send_to_server(&mut client, &mut tally, &ToServer::ChooseSide(*choice));
    }
}

/// The player `step` places from `current` among those `in_world` (sorted),
/// wrapping around; from nobody, the first (or last).
fn step_target(in_world: &[PlayerId], current: Option<PlayerId>, forward: bool) -> Option<PlayerId> {
    let at = current.and_then(|c| in_world.iter().position(|id| *id == c));
    let n = in_world.len();
    if n == 0 {
        return None;
    }
    let index = match (at, forward) {
        (Some(i), true) => (i + 1) % n,
        (Some(i), false) => (i + n - 1) % n,
        (None, true) => 0,
        (None, false) => n - 1,
    };
    in_world.get(index).copied()
}

/// While we watch: follows someone in the world (the one we followed while
/// still there, else the first), and takes the watcher's choices.
pub(crate) fn follow(
    roster: Res<Roster>,
    entities: Res<PlayerEntities>,
    players: Query<&NetPlayer>,
    mut input: MessageReader<SpectatorInput>,
    mut spectating: ResMut<Spectating>,
) {
    if !roster.watching() {
        input.clear();
        if spectating.target.is_some() {
            spectating.target = None;
        }
        return;
    }
    let mut in_world: Vec<PlayerId> =
        entities.0.iter().filter(|(_, e)| players.contains(**e)).map(|(id, _)| *id).collect();
    in_world.sort();
    let mut next = *spectating;
    for choice in input.read() {
        match choice {
            SpectatorInput::Next => next.target = step_target(&in_world, next.target, true),
            SpectatorInput::Previous => next.target = step_target(&in_world, next.target, false),
            SpectatorInput::SwitchView => {
                next.view = match next.view {
                    WatchView::FirstPerson => WatchView::Chase,
                    WatchView::Chase | WatchView::FreeFly => WatchView::FirstPerson,
                }
            }
            SpectatorInput::FreeFly => next.view = WatchView::FreeFly,
        }
        if matches!(choice, SpectatorInput::Next | SpectatorInput::Previous) && next.view == WatchView::FreeFly {
            next.view = WatchView::FirstPerson;
        }
    }
    if next.view == WatchView::FreeFly {
        next.target = None;
    } else if next.target.is_none_or(|t| !in_world.contains(&t)) {
        next.target = step_target(&in_world, None, true);
    }
    if next != *spectating {
        *spectating = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn following_steps_through_the_players_and_wraps() {
        let ids = [PlayerId(1), PlayerId(4), PlayerId(7)];
        assert_eq!(step_target(&ids, None, true), Some(PlayerId(1)));
        assert_eq!(step_target(&ids, None, false), Some(PlayerId(7)));
        assert_eq!(step_target(&ids, Some(PlayerId(4)), true), Some(PlayerId(7)));
        assert_eq!(step_target(&ids, Some(PlayerId(7)), true), Some(PlayerId(1)));
        assert_eq!(step_target(&ids, Some(PlayerId(1)), false), Some(PlayerId(7)));
        assert_eq!(step_target(&ids, Some(PlayerId(9)), true), Some(PlayerId(1)), "one who left");
        assert_eq!(step_target(&[], Some(PlayerId(1)), true), None);
    }
}
