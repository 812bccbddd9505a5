//! Game modes and sides, the rules both ends share: free-for-all, team
//! deathmatch and duel; which side each player is on (free, a team, watching,
//! waiting for a duel); who may hurt whom; and how a mode is named on the
//! command line, in server queries (an A2S keyword) and to masters (Quake
//! 3's `gametype` numbers, which dpmaster's and qstat's filters know).

use arena_sim::PlayerId;
use serde::{Deserialize, Serialize};

/// How a match is played.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Everyone against everyone.
    #[default]
    Ffa,
    /// Two teams; each team's frags count together.
    Tdm,
    /// Two players; everyone else watches and queues for the next match.
    Duel,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Ffa, Mode::Tdm, Mode::Duel];

    /// The short name: the command line's, the config file's, the A2S keyword.
    pub fn short(self) -> &'static str {
        match self {
            Mode::Ffa => "ffa",
            Mode::Tdm => "tdm",
            Mode::Duel => "duel",
        }
    }

    /// In words, for menus and the HUD.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Ffa => "free-for-all",
            Mode::Tdm => "team deathmatch",
            Mode::Duel => "duel",
        }
    }

    /// Quake 3's `gametype` number (0 free-for-all, 1 tournament, 3 team
    /// deathmatch): what an `infoResponse` says, and what dpmaster's
    /// `ffa`/`tourney`/`team` filters ask for.
    pub fn gametype(self) -> &'static str {
        match self {
            Mode::Ffa => "0",
            Mode::Tdm => "3",
            Mode::Duel => "1",
        }
    }

    /// A mode by its short name (or its Quake 3 `gametype` number).
    pub fn parse(text: &str) -> Option<Mode> {
        let text = text.trim();
        Mode::ALL.into_iter().find(|m| text.eq_ignore_ascii_case(m.short()) || text == m.gametype())
    }

    /// The mode among a server's A2S keywords (comma-separated); none named:
    /// an older server, free-for-all.
    pub fn from_keywords(keywords: &str) -> Mode {
        keywords
            .split(',')
            .find_map(|word| Mode::ALL.into_iter().find(|m| word.trim() == m.short()))
            .unwrap_or_default()
    }

    /// Whether players are on teams.
    pub fn has_teams(self) -> bool {
        self == Mode::Tdm
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short())
    }
}

/// A team of team deathmatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Team {
    Red,
    Blue,
}

impl Team {
    pub const BOTH: [Team; 2] = [Team::Red, Team::Blue];

    pub fn other(self) -> Team {
        match self {
            Team::Red => Team::Blue,
            Team::Blue => Team::Red,
        }
    }

    pub fn index(self) -> usize {
        match self {
            Team::Red => 0,
            Team::Blue => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Team::Red => "red",
            Team::Blue => "blue",
        }
    }

    pub fn parse(text: &str) -> Option<Team> {
        Team::BOTH.into_iter().find(|t| text.trim().eq_ignore_ascii_case(t.name()))
    }

    /// The team's colour (linear sRGB, 0-1): bodies, name tags, chat names.
    pub fn rgb(self) -> [f32; 3] {
        match self {
            Team::Red => [0.95, 0.25, 0.2],
            Team::Blue => [0.25, 0.5, 1.0],
        }
    }
}

/// Which side of the game a player is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// Playing for oneself (free-for-all, duel).
    #[default]
    Free,
    /// Playing for a team (team deathmatch).
    Team(Team),
    /// Watching, by choice.
    Spectating,
    /// Watching until a duel has room: the queue, in the order it joined.
    Waiting,
}

impl Side {
    /// In the world: simulated, shot at, scored.
    pub fn plays(self) -> bool {
        matches!(self, Side::Free | Side::Team(_))
    }

    pub fn watches(self) -> bool {
        !self.plays()
    }

    pub fn team(self) -> Option<Team> {
        match self {
            Side::Team(team) => Some(team),
            _ => None,
        }
    }

    /// In words, for the scoreboard and reports.
    pub fn label(self) -> &'static str {
        match self {
            Side::Free => "playing",
            Side::Team(team) => team.name(),
            Side::Spectating => "spectating",
            Side::Waiting => "waiting",
        }
    }
}

/// What a player asks to be (`ToServer::ChooseSide`); the server decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SideChoice {
    /// Play: on the team that needs one (team deathmatch), in the queue (a
    /// full duel), or just play.
    Play,
    /// Play for this team (team deathmatch; elsewhere as `Play`).
    Team(Team),
    /// Watch.
    Spectate,
}

/// Whether damage from `attacker` reaches `victim`: one's own always does
/// (a rocket jump costs health), a teammate's only with friendly fire on,
/// and nobody watching hurts or is hurt.
pub fn harms(attacker: Side, victim: Side, same_player: bool, friendly_fire: bool) -> bool {
    if same_player {
        return true;
    }
    if !(attacker.plays() && victim.plays()) {
        return false;
    }
    match (attacker.team(), victim.team()) {
        (Some(a), Some(b)) if a == b => friendly_fire,
        _ => true,
    }
}

/// What a frag is worth to its killer: one, or one off for killing
/// oneself or a teammate. The server scores by it and a client counts the
/// kills it hears of by it between the server's tables.
pub fn frag_worth(killer: PlayerId, victim: PlayerId, killer_side: Side, victim_side: Side) -> i16 {
    let mate = killer_side.team().is_some_and(|t| victim_side.team() == Some(t));
    if killer == victim || mate { -1 } else { 1 }
}

/// The team a player joining (or moved by the balance) goes to: the one
/// with fewer players; with as many, the one behind in frags; then red.
pub fn team_for_newcomer(players: [usize; 2], frags: [i32; 2]) -> Team {
    if players[0] != players[1] {
        return if players[0] < players[1] { Team::Red } else { Team::Blue };
    }
    if frags[1] < frags[0] { Team::Blue } else { Team::Red }
}

/// The team that must give a player to the other, when one is at least two
/// players short.
pub fn team_to_thin(players: [usize; 2]) -> Option<Team> {
    if players[0] >= players[1] + 2 {
        Some(Team::Red)
    } else if players[1] >= players[0] + 2 {
        Some(Team::Blue)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frag_is_worth_one_and_one_off_for_oneself_or_a_teammate() {
        let (a, b) = (PlayerId(1), PlayerId(2));
        let (red, blue) = (Side::Team(Team::Red), Side::Team(Team::Blue));
        assert_eq!(frag_worth(a, b, Side::Free, Side::Free), 1);
        assert_eq!(frag_worth(a, a, Side::Free, Side::Free), -1);
        assert_eq!(frag_worth(a, b, red, blue), 1);
        assert_eq!(frag_worth(a, b, red, red), -1);
        assert_eq!(frag_worth(a, a, red, red), -1);
    }

    #[test]
    fn modes_by_name_keyword_and_gametype() {
        for mode in Mode::ALL {
            assert_eq!(Mode::parse(mode.short()), Some(mode));
            assert_eq!(Mode::parse(mode.gametype()), Some(mode));
            assert_eq!(Mode::from_keywords(&format!("arena,{},tick64", mode.short())), mode);
        }
        assert_eq!(Mode::parse("TDM"), Some(Mode::Tdm));
        assert_eq!(Mode::parse("ctf"), None);
        assert_eq!(Mode::from_keywords("arena,tick64,snap64"), Mode::Ffa, "an older server");
    }

    #[test]
    fn teammates_are_spared_unless_friendly_fire_and_watchers_never_count() {
        let (red, blue) = (Side::Team(Team::Red), Side::Team(Team::Blue));
        assert!(harms(red, blue, false, false));
        assert!(!harms(red, red, false, false));
        assert!(harms(red, red, false, true));
        assert!(harms(red, red, true, false), "one's own rocket");
        assert!(harms(Side::Free, Side::Free, false, false));
        assert!(!harms(Side::Spectating, Side::Free, false, true));
        assert!(!harms(Side::Free, Side::Waiting, false, true));
    }

    #[test]
    fn newcomers_even_the_teams_and_a_team_two_short_gets_one() {
        assert_eq!(team_for_newcomer([0, 0], [0, 0]), Team::Red);
        assert_eq!(team_for_newcomer([3, 2], [0, 0]), Team::Blue);
        assert_eq!(team_for_newcomer([2, 2], [10, 3]), Team::Blue, "as many: the one behind");
        assert_eq!(team_to_thin([3, 2]), None);
        assert_eq!(team_to_thin([4, 2]), Some(Team::Red));
        assert_eq!(team_to_thin([0, 2]), Some(Team::Blue));
    }
}
