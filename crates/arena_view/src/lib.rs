//! Everything a person sees and hears: the window, the arena's meshes and
//! lights, player models with name tags, the first-person camera, keyboard and
//! mouse, the menus and the HUD. The only crate that needs a window and a GPU.
//!
//! # Modules, bottom up
//!
//! - `view_state`: which panels and aids are open (pause menu, netcode panel,
//!   net graph, ghosts, auto-aim).
//! - `settings`: the player's settings file, bindings and their checks.
//! - `settings_menu`: the settings window.
//! - `input`: keyboard and mouse into the local input, before the fixed loop.
//! - `host`: a listen server in this process.
//! - `server_list`: the main menu's list of games (LAN, favourites, recent).
//! - `menu`: the main menu, the connecting dialog, the pause menu.
//! - `netcode_panel`: the paper's switches, the conditioner, live figures.
//! - `scene`, `players`, `camera`: the arena, the other players, the view.
//! - `effects`, `hitboxes`, `sound`: what shots and steps look and sound like.
//! - `hud`, `scoreboard_ui`, `range_hud`: what is drawn over the view.
//! - `net_graph`, `ghosts`: the netcode made visible (live plots, where the
//!   server last had everyone).
//! - `ragdolls`: bodies that fall (bevy_rapier3d, this client only).
//! - `screenshot`: `--screenshot FILE --seconds S`.
//!
//! # The order of a frame
//!
//! After the client netcode's `PreUpdate`: [`ViewSet::Input`] in
//! `RunFixedMainLoop`, before the fixed loop (so the ticks of this frame
//! carry this frame's input); then in `Update`, after the client has decided
//! where everyone is drawn ([`arena_client::ClientSet::Present`]):
//! [`ViewSet::Menus`], [`ViewSet::Follow`], [`ViewSet::Overlay`].

mod camera;
mod effects;
mod ghosts;
mod hitboxes;
mod host;
mod hud;
mod input;
mod menu;
mod net_graph;
mod netcode_panel;
mod players;
mod ragdolls;
mod range_hud;
mod scene;
mod scoreboard_ui;
mod screenshot;
mod server_list;
mod settings;
mod settings_menu;
mod sound;
pub mod view_state;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use arena_client::ClientPlugin;
use arena_server::ServerConfig;
use bevy::log::LogPlugin;
use bevy::prelude::*;
use bevy::window::{PresentMode, WindowResolution};
use bevy_egui::EguiPlugin;

/// What the window does first.
#[derive(Clone, Debug)]
pub enum StartAction {
    /// Show the main menu.
    Menu,
    /// Host a listen server and join it.
    Host(ServerConfig),
    /// Host with bots and join, on any free port if the usual one is taken.
    QuickPlay(ServerConfig),
    /// Join the server at this address, with this password (open: none).
    Join(SocketAddr, arena_protocol::key::Password),
}

/// Take a screenshot and quit: for scripts, tests and the README.
#[derive(Clone, Debug)]
pub struct Screenshot {
    pub path: PathBuf,
    /// Quit after this long; the screenshot is taken a second earlier.
    pub quit_after: Duration,
}

#[derive(Clone, Debug)]
pub struct ViewConfig {
    pub start: StartAction,
    pub name: Option<String>,
    pub screenshot: Option<Screenshot>,
    /// The netcode switches and link conditioner to start with.
    pub netcode: arena_client::NetcodeSettings,
    /// Window size in pixels.
    pub resolution: (u32, u32),
    /// Start with the auto-aim demonstration on.
    pub auto_aim: bool,
}

/// The ordered stages of a frame on the view side (see the top of this file).
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

/// Keyboard and mouse into the local input, before the fixed loop: the
/// view's part that runs with no window too (tests drive it with input events).
pub struct InputPlugin;

impl Plugin for InputPlugin {
    fn build(&self, app: &mut App) {
        app.configure_sets(RunFixedMainLoop, ViewSet::Input.in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop))
            .add_plugins(input::plugin);
    }
}

/// Bots a quick-play game starts with.
pub const QUICK_PLAY_BOTS: usize = 5;

/// The local player's chosen name.
#[derive(Resource, Clone, Debug)]
pub struct PlayerProfile {
    pub name: String,
}

/// Opens the window and runs the game until the player quits.
pub fn run(config: ViewConfig) -> Result<(), String> {
    // Settings first: a missing or broken file never stops the game.
    let loaded = match settings::settings_path() {
        Some(path) => settings::load(&path),
        None => settings::Loaded {
            settings: settings::Settings::default().repaired().0,
            problem: Some("No configuration directory (HOME is not set): settings will not be saved.".into()),
        },
    };
    if let Some(problem) = &loaded.problem {
        eprintln!("{problem}");
    }
    let mut user_settings = loaded.settings;
    if let Some(name) = &config.name {
        user_settings.name = arena_protocol::names::clean_name(name);
    } else if user_settings.name.is_empty() {
        user_settings.name = default_name();
    }
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "Arena".into(),
                    resolution: WindowResolution::new(config.resolution.0, config.resolution.1),
                    present_mode: PresentMode::AutoVsync,
                    ..default()
                }),
                ..default()
            })
            .set(LogPlugin { filter: format!("{},bevy_render=warn", arena_server::LOG_FILTER), ..default() }),
    )
    .add_plugins(EguiPlugin::default())
    .add_plugins(ClientPlugin)
    .insert_resource(PlayerProfile { name: user_settings.name.clone() })
    .insert_resource(settings::SettingsProblem(loaded.problem))
    .insert_resource(user_settings)
    .insert_resource(config.netcode.clone())
    .insert_resource(view_state::AutoAim(config.auto_aim))
    .configure_sets(
        Update,
        (ViewSet::Menus, ViewSet::Follow, ViewSet::Overlay).chain().after(arena_client::ClientSet::Present),
    )
    .add_plugins((
        scene::plugin,
        players::plugin,
        camera::plugin,
        InputPlugin,
        menu::plugin,
        netcode_panel::plugin,
        hud::plugin,
        effects::plugin,
        hitboxes::plugin,
        host::plugin,
    ))
    .add_plugins((
        settings_menu::plugin,
        sound::plugin,
        scoreboard_ui::plugin,
        server_list::plugin,
        range_hud::plugin,
    ));
    app.add_plugins((net_graph::plugin, ghosts::plugin, ragdolls::plugin));
    app.insert_resource(menu::StartupAction(Some(config.start)));
    if std::env::var_os("ARENA_LOG_FPS").is_some() {
        app.add_plugins((
            bevy::diagnostic::FrameTimeDiagnosticsPlugin::default(),
            bevy::diagnostic::LogDiagnosticsPlugin::default(),
        ));
    }
    if let Some(shot) = config.screenshot {
        app.add_plugins(screenshot::plugin(shot));
    }
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("the game stopped with error code {code}")),
    }
}

/// The login name, cleaned up, or "Player".
pub(crate) fn default_name() -> String {
    let raw = std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_default();
    let mut name = arena_protocol::names::clean_name(&raw);
    if let Some(first) = name.get(..1) {
        name = first.to_uppercase() + name.get(1..).unwrap_or("");
    }
    name
}

/// A distinct colour for each player id: a palette ordered so that
/// neighbouring ids contrast, then golden-ratio hues beyond it.
pub fn player_color(id: arena_sim::PlayerId) -> Color {
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
