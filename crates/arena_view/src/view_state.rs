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

/// A demonstration aid (netcode panel, `--auto-aim`): the view follows the
/// nearest player in sight, exactly as this client draws it. With lag
/// compensation every shot then hits; without it, they trail the target by
/// its speed times the latency.
#[derive(Resource, Default, Debug)]
pub struct AutoAim(pub bool);
