//! The view's shared vocabulary: the ordered stages of a frame, what the
//! window starts with, the player's profile and colours, and which panels
//! and aids are open (the pause menu, the netcode panel, the net graph,
//! ghosts, auto-aim). It imports no other module of the crate; every other
//! module may import it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use arena_server::ServerConfig;
use bevy::prelude::*;

/// The ordered stages of a frame on the view side (ordered in `lib.rs`).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewSet {
    /// Keyboard and mouse into the local input (RunFixedMainLoop, before the fixed loop).
    Input,
    /// Menus and what they start or stop.
    Menus,
    /// Models and the camera follow the replicated world.
    Follow,
    /// HUD and name tags, which need the camera's final transform.
    Overlay,
}

/// What the window does first.
#[derive(Clone, Debug)]
pub enum StartAction {
    /// Show the main menu.
    Menu,
    /// Host a listen server and join it.
    Host(ServerConfig),
    /// Host with bots and join, on any free port if the usual one is taken.
    QuickPlay(ServerConfig),
    /// Join the server at this address, with this password (open: none),
    /// to play or to watch (`true`).
    Join(SocketAddr, arena_protocol::key::Password, bool),
}

/// What the main menu says first, and a page's status too: a link the page
/// could not read.
#[derive(Resource, Clone, Debug, Default)]
pub(crate) struct StartProblem(pub Option<String>);

/// A server's join link the page was given (its address and certificate
/// hash): the session to that address pins this certificate. In a browser
/// only; a native game joins by UDP.
#[cfg(target_arch = "wasm32")]
#[derive(Resource, Clone, Copy, Debug, Default)]
pub(crate) struct KnownJoinLink(pub Option<arena_protocol::web_link::JoinLink>);

/// Take a screenshot and quit: for scripts, tests and the README.
#[derive(Clone, Debug)]
pub struct Screenshot {
    pub path: PathBuf,
    /// Quit after this long; the screenshot is taken a second earlier.
    pub quit_after: Duration,
    /// Take it just after the first kill in view instead, if any.
    pub after_kill: bool,
    /// Take it on a kill-cam's frozen shot instead: the first with the
    /// server's ghost behind cover, or any after 90% of the time.
    pub in_kill_cam: bool,
}

/// Bots a quick-play game starts with.
pub const QUICK_PLAY_BOTS: usize = 5;

/// The local player's chosen name.
#[derive(Resource, Clone, Debug)]
pub struct PlayerProfile {
    pub name: String,
}

/// The login name, cleaned up (empty if there is none; in a browser,
/// which has none, "Player").
pub(crate) fn default_name() -> String {
    if cfg!(target_arch = "wasm32") {
        return "Player".into();
    }
    let raw = std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_default();
    let mut name = arena_protocol::names::clean_name(&raw);
    if let Some(first) = name.get(..1) {
        name = first.to_uppercase() + name.get(1..).unwrap_or("");
    }
    name
}

/// A distinct colour for each player id: a palette ordered so that
/// neighbouring ids contrast, then golden-ratio hues beyond it.
pub(crate) fn player_color(id: arena_sim::PlayerId) -> Color {
    const PALETTE: [(u8, u8, u8); 12] = [
        (230, 57, 70),   // red
        (29, 120, 230),  // blue
        (250, 200, 40),  // yellow
        (60, 180, 75),   // green
        (160, 70, 220),  // purple
        (255, 130, 30),  // orange
        (40, 200, 210),  // cyan
        (240, 80, 170),  // pink
        (150, 210, 40),  // lime
        (120, 90, 60),   // brown
        (250, 250, 250), // white
        (30, 60, 140),   // navy
    ];
    match PALETTE.get(usize::from(id.0)) {
        Some(&(r, g, b)) => Color::srgb_u8(r, g, b),
        None => Color::hsl((f32::from(id.0) * 137.508) % 360.0, 0.75, 0.5),
    }
}

/// A player's colour: its team's in team deathmatch (a shade of it per
/// player, so that teammates still tell apart), else its own.
pub(crate) fn body_color(id: arena_sim::PlayerId, team: Option<arena_protocol::modes::Team>) -> Color {
    match team {
        Some(team) => {
            let [r, g, b] = team.rgb();
            let shade = f32::from(id.0 % 4) * 0.08;
            Color::srgb(r, g, b).mix(&Color::WHITE, shade)
        }
        None => player_color(id),
    }
}

/// The colour a player is drawn and named in, by its side in the roster.
pub(crate) fn roster_color(roster: &arena_client::Roster, id: arena_sim::PlayerId) -> Color {
    body_color(id, roster.side(id).team())
}

/// The map's items in a demo's playback: as the recording listed them at
/// the playhead, the playhead's tick and the demo's tick rate (what the
/// items' models, rings and timers follow there, in place of a live game's
/// snapshots).
#[derive(Resource, Default, Debug, Clone)]
pub(crate) struct PlaybackItems {
    pub slots: Vec<arena_sim::ItemSlot>,
    pub now_tick: f64,
    pub rate: arena_sim::TickRate,
}

/// Whether the in-game pause menu is open (the game goes on; your player stands still).
#[derive(Resource, Default, Debug)]
pub(crate) struct PauseMenu {
    pub open: bool,
}

/// The chat line being typed: open (Y to everyone, U to the team), what is
/// typed so far. While it is open the player stands still and keys type.
#[derive(Resource, Default, Debug)]
pub(crate) struct ChatInput {
    pub open: bool,
    pub team: bool,
    pub text: String,
    /// The field has been given the keyboard (once, the frame after opening).
    pub focused: bool,
}

/// The console's `+voiprecord` held (Quake's: a bind's `+` line runs its
/// `-` line when the key comes up): talk as with the push-to-talk key.
#[derive(Resource, Default, Debug)]
// Read by `voice.rs`, which the page's build leaves out (no voice there yet).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) struct ConsoleTalk(pub bool);

/// Whether the console is open (the key left of 1): the player stands
/// still and keys type into it.
#[derive(Resource, Default, Debug)]
pub(crate) struct ConsoleWindow {
    pub open: bool,
}

/// Whether the netcode panel is open.
#[derive(Resource, Default, Debug)]
pub(crate) struct NetcodePanel {
    pub open: bool,
}

/// The net graph: off, a compact overlay (like Source's `net_graph 1`), or
/// the full panel of plots.
#[derive(Resource, Default, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetGraph {
    #[default]
    Off,
    Compact,
    Full,
}

impl NetGraph {
    pub(crate) fn next(self) -> Self {
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
pub(crate) struct Ghosts(pub bool);

/// A demonstration aid (netcode panel, `--auto-aim`): the view follows the
/// nearest player in sight, exactly as this client draws it. With lag
/// compensation every shot then hits; without it, they trail the target by
/// its speed times the latency.
#[derive(Resource, Default, Debug)]
pub(crate) struct AutoAim(pub bool);

/// Where a body part's mesh goes: a capsule mesh (Bevy's stand along Y)
/// centred on the part and turned onto its axis, relative to `origin`.
/// What the kill-cam shows this frame (for the caption and screenshots).
#[derive(Resource, Debug, Default, Clone)]
pub(crate) struct KillCamShown {
    /// Playing (or frozen): the kill-cam and how far into it, seconds.
    pub playing: Option<(arena_protocol::kill_cam::KillCam, f32)>,
    /// On the fatal shot, frozen.
    pub frozen: bool,
}

impl KillCamShown {
    /// Whether the server had the victim behind cover at the fatal instant.
    pub(crate) fn in_cover(&self) -> bool {
        self.playing.as_ref().and_then(|(cam, _)| cam.shot).is_some_and(|s| s.server_in_cover)
    }

    /// How long the frozen shot has been shown, seconds (none before it).
    pub(crate) fn frozen_for_s(&self) -> Option<f32> {
        let (cam, elapsed) = self.playing.as_ref()?;
        Some(elapsed - kill_cam_track_s(cam)).filter(|s| *s >= 0.0)
    }

    /// Whether the death shown was a rocket's (its frozen shot is the flight).
    pub(crate) fn rocket(&self) -> bool {
        self.playing.as_ref().and_then(|(cam, _)| cam.shot).is_some_and(|s| s.blast.is_some())
    }
}

/// The render layer of what happens now and only now (tracers, debris,
/// ragdolls): the camera draws it in a game and leaves it out while the
/// kill-cam shows the past.
pub(crate) const LIVE_LAYER: usize = 1;

/// [`LIVE_LAYER`], for a spawned bundle.
pub(crate) fn live_layer() -> bevy::camera::visibility::RenderLayers {
    bevy::camera::visibility::RenderLayers::layer(LIVE_LAYER)
}

/// What the main camera draws: the world, and what happens now.
pub(crate) fn camera_layers(live: bool) -> bevy::camera::visibility::RenderLayers {
    if live {
        bevy::camera::visibility::RenderLayers::from_layers(&[0, LIVE_LAYER])
    } else {
        bevy::camera::visibility::RenderLayers::layer(0)
    }
}

pub(crate) fn capsule_transform(capsule: &arena_sim::hitbox::Capsule, origin: Vec3) -> Transform {
    let axis = capsule.b - capsule.a;
    let rotation = axis.try_normalize().map_or(Quat::IDENTITY, |dir| Quat::from_rotation_arc(Vec3::Y, dir));
    Transform::from_translation(capsule.center() - origin).with_rotation(rotation)
}

/// How long a kill-cam's track plays before its frozen shot, seconds.
pub(crate) fn kill_cam_track_s(cam: &arena_protocol::kill_cam::KillCam) -> f32 {
    cam.frames.len().saturating_sub(1) as f32 * f32::from(cam.step_ticks) / f32::from(cam.tick_hz.max(1))
}
