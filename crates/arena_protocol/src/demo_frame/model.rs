//! What a demo frame holds, the limits of its lists, and [`FrameError`].
//!
//! One tick's players (command and changed states), shots, frags, rockets,
//! blasts, chat, joins and leaves, and the keyframe; the vocabulary every other
//! file of the frame coding speaks.

use arena_sim::{HitZone, ItemSlot, PlayerId, PlayerState, UserCmd};
use glam::Vec3;

/// Most players a frame may list (ids are a byte).
pub const MAX_FRAME_PLAYERS: usize = 256;
/// Most shots, frags, rockets or blasts of one tick a frame may list.
pub const MAX_FRAME_EVENTS: usize = 1024;
/// Longest name kept, bytes.
pub const MAX_DEMO_NAME_BYTES: usize = 64;
/// Most chat lines of one tick a frame may list.
pub const MAX_FRAME_CHAT: usize = 64;
/// Most items a frame lists (the map check's cap).
pub(super) const MAX_FRAME_ITEMS: usize = arena_sim::map_check::MAX_ITEMS;
/// Longest ago a listed item may have been taken, ticks.
pub(super) const MAX_ITEM_AGE_TICKS: u32 = 1 << 16;

/// A player as a keyframe or a join names it.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoPlayerInfo {
    pub id: PlayerId,
    pub name: String,
    pub bot: bool,
}

/// Everyone's whole state at the end of a keyframe's tick.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPlayer {
    pub info: DemoPlayerInfo,
    pub state: PlayerState,
    pub frags: i16,
    pub deaths: u16,
    /// How far behind the server's present this player's client drew the
    /// others (round trip plus interpolation delay), milliseconds; 0 for a
    /// bot, which sees the present.
    pub view_delay_ms: u16,
}

/// One player's tick: the command the server ran, and its state where the
/// shared rules alone would not give it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerTick {
    pub id: PlayerId,
    pub cmd: UserCmd,
    /// The state the command ran from, when it is not the state this
    /// player ended the previous tick with (a join, a teleport between ticks).
    pub from: Option<PlayerState>,
    /// The state at the end of the tick, when the server changed it after
    /// the command ran (damage, a death, a respawn, a kick).
    pub after: Option<PlayerState>,
}

/// A hitscan shot and what it hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoShot {
    pub shooter: PlayerId,
    /// When the others were tested, ticks (on a 1/256 tick grid).
    pub tested_tick: f64,
    pub lag_compensated: bool,
    pub hit: Option<DemoHit>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoHit {
    pub victim: PlayerId,
    pub zone: HitZone,
    pub damage: u8,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoFrag {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
    /// How the server scored it (format 3; in older files every frag
    /// reads as [`FragScore::Counted`]).
    pub score: FragScore,
}

/// How the server scored a frag: what a replay must count to agree with the
/// scores it recorded. Sides and the match's phase are not in the demo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FragScore {
    /// Counted: a death to the victim, one to the killer (one off for a
    /// fall).
    #[default]
    Counted,
    /// Counted, the killer and the victim on one team (friendly fire): one
    /// off the killer's score, as a fall.
    TeamKill,
    /// Not counted: the match was over and its results stood (a rocket
    /// that landed, a fall or a life forfeited to watch while they showed).
    AfterTheEnd,
}

/// A rocket leaving (exact: origin and direction as the server had them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoRocket {
    pub owner: PlayerId,
    pub origin: Vec3,
    pub dir: Vec3,
    /// The command tick that fired it.
    pub cmd_tick: u32,
}

/// A rocket's blast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoBlast {
    pub owner: PlayerId,
    pub point: Vec3,
}

/// A chat line the server passed on (cleaned: `crate::chat`), to everyone
/// or (`team`) to a team or the watchers.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoChat {
    pub from: PlayerId,
    /// The speaker's name then (a spectator is in no frame's player list).
    pub name: String,
    pub team: bool,
    pub text: String,
}

/// One tick of a demo.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DemoFrame {
    pub tick: u32,
    pub joined: Vec<DemoPlayerInfo>,
    pub left: Vec<PlayerId>,
    pub players: Vec<PlayerTick>,
    pub shots: Vec<DemoShot>,
    pub frags: Vec<DemoFrag>,
    pub rockets: Vec<DemoRocket>,
    pub blasts: Vec<DemoBlast>,
    /// Chat lines passed on in the tick.
    pub chat: Vec<DemoChat>,
    /// The map's items at the end of the tick, when they changed in it (a
    /// pickup, one back) and at every keyframe: what playback draws and a
    /// seek starts from.
    pub items: Option<Vec<ItemSlot>>,
    /// At the end of the tick, after everything above.
    pub keyframe: Option<Vec<KeyPlayer>>,
}

/// What is wrong with a frame's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The bytes end inside `what`.
    Truncated { what: &'static str },
    /// `what` holds a value no encoder writes.
    Invalid { what: &'static str },
    /// Bytes are left after the frame.
    Trailing { bytes: usize },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { what } => write!(f, "the frame ends inside {what}"),
            Self::Invalid { what } => write!(f, "the frame's {what} is invalid"),
            Self::Trailing { bytes } => write!(f, "{bytes} bytes follow the frame"),
        }
    }
}

impl std::error::Error for FrameError {}
