//! Which panels and aids are open: the pause menu, the netcode panel and
//! auto-aim. Several parts of the view read these, so they live in a leaf
//! module of their own.

use bevy::prelude::*;

/// Whether the in-game pause menu is open (the game goes on; your player stands still).
#[derive(Resource, Default, Debug)]
pub struct PauseMenu {
    pub open: bool,
}

/// Whether the netcode panel is open.
#[derive(Resource, Default, Debug)]
pub struct NetcodePanel {
    pub open: bool,
}

/// The net graph: off, a compact overlay (like Source's `net_graph 1`), or
/// the full panel of plots.
#[derive(Resource, Default, Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetGraph {
    #[default]
    Off,
    Compact,
    Full,
}

impl NetGraph {
    pub fn next(self) -> Self {
        match self {
            NetGraph::Off => NetGraph::Compact,
            NetGraph::Compact => NetGraph::Full,
            NetGraph::Full => NetGraph::Off,
        }
    }
}

/// Whether server ghosts are drawn: each other player where the newest
/// snapshot put them, and our own player where the server last had us.
#[derive(Resource, Default, Debug)]
pub struct Ghosts(pub bool);

/// A demonstration aid (netcode panel, `--auto-aim`): the view follows the
/// nearest player in sight, exactly as this client draws it. With lag
/// compensation every shot then hits; without it, they trail the target by
/// its speed times the latency.
#[derive(Resource, Default, Debug)]
pub struct AutoAim(pub bool);
