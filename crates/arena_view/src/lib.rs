//! Everything a person sees and hears: the window, the arena's meshes and
//! lights, player models with name tags, the first-person camera and arms, keyboard and
//! mouse, the menus and the HUD. The only crate that needs a window and a GPU.
//!
//! # Modules, bottom up
//!
//! - `vocabulary`: the stages of a frame, what the window starts with, the
//!   profile and player colours, which panels and aids are open.
//! - `looks`: the glowing material of effects and rockets, text over the view.
//! - `settings`: the player's settings file, bindings and their checks.
//! - `settings_menu`: the settings window.
//! - `input`: keyboard and mouse into the local input, before the fixed loop.
//! - `host`: a listen server in this process.
//! - `server_list`: the main menu's list of games (LAN, favourites, recent).
//! - `menu`: the main menu, the connecting dialog, the pause menu.
//! - `netcode_panel`: the paper's switches, the conditioner, live figures.
//! - `surfaces`: the arena's textures, made at start.
//! - `scene`, `players`, `camera`: the arena, the other players (their
//!   meshes and materials made once), the view.
//! - `view_model`: first-person arms and weapon (recoil, reload, switch).
//! - `name_tags`: names over other players, laid out so none pile up.
//! - `callouts`: the map's named areas: signs, wall bands, lamps, the HUD line.
//! - `quality`: the graphics quality setting applied (shadows, MSAA, lamps).
//! - `effects`, `hitboxes`, `sound`: what shots and steps look and sound like.
//! - `hud`, `scoreboard_ui`, `range_hud`: what is drawn over the view.
//! - `net_graph`, `ghosts`: the netcode made visible (live plots, where the
//!   server last had everyone).
//! - `ragdolls`: bodies that fall (bevy_rapier3d, this client only).
//! - `kill_cam`: after a death, the killer's view as drawn beside the server's.
//! - `demo_playback`: `arena demo play FILE`: a recorded match, its timeline
//!   and overlays (a window of its own, no network).
//! - `screenshot`: `--screenshot FILE --seconds S [--screenshot-after-kill]`.
//!
//! # The order of a frame
//!
//! After the client netcode's `PreUpdate`: [`ViewSet::Input`] in
//! `RunFixedMainLoop`, before the fixed loop (so the ticks of this frame
//! carry this frame's input); then in `Update`, after the client has decided
//! where everyone is drawn ([`arena_client::ClientSet::Present`]):
//! [`ViewSet::Menus`], [`ViewSet::Follow`], [`ViewSet::Overlay`].

mod callouts;
mod camera;
mod demo_playback;
mod effects;
mod ghosts;
mod hitboxes;
mod host;
mod hud;
mod input;
mod kill_cam;
mod looks;
mod menu;
mod name_tags;
mod net_graph;
mod netcode_panel;
mod players;
mod quality;
mod ragdolls;
mod range_hud;
mod rockets;
mod scene;
mod scoreboard_ui;
mod screenshot;
mod server_list;
mod settings;
mod settings_menu;
mod sound;
mod surfaces;
mod view_model;
mod vocabulary;

use arena_client::ClientPlugin;
use bevy::log::LogPlugin;
use bevy::prelude::*;
use bevy::window::{PresentMode, WindowResolution};
use bevy_egui::EguiPlugin;

pub use demo_playback::{PlaybackStart, SPEEDS};
pub use vocabulary::{PlayerProfile, QUICK_PLAY_BOTS, Screenshot, StartAction, ViewSet, player_color};

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

/// Keyboard and mouse into the local input, before the fixed loop: the
/// view's part that runs with no window too (tests drive it with input events).
pub struct InputPlugin;

impl Plugin for InputPlugin {
    fn build(&self, app: &mut App) {
        app.configure_sets(RunFixedMainLoop, ViewSet::Input.in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop))
            .add_plugins(input::plugin);
    }
}

/// The player's settings file and what it holds, or the defaults (with what
/// was wrong).
fn load_settings() -> (Option<std::path::PathBuf>, settings::Loaded) {
    let path = settings::settings_path();
    let loaded = match &path {
        Some(path) => settings::load(path),
        None => settings::Loaded {
            settings: settings::Settings::default().repaired().0,
            problem: Some("No configuration directory (HOME is not set): settings will not be saved.".into()),
        },
    };
    (path, loaded)
}

/// Plays a demo file in a window until the player closes it (`arena demo
/// play`); a file that cannot be read or replayed is an error naming what.
pub fn run_demo(
    file: &std::path::Path,
    start: PlaybackStart,
    resolution: (u32, u32),
    screenshot: Option<Screenshot>,
) -> Result<(), String> {
    let bytes = arena_protocol::demo::read_file(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let playback = demo_playback::Playback::open(bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    let (_, loaded) = load_settings();
    if let Some(problem) = &loaded.problem {
        eprintln!("{problem}");
    }
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: format!("Arena demo: {}", file.display()),
                    resolution: WindowResolution::new(resolution.0, resolution.1),
                    present_mode: PresentMode::AutoVsync,
                    ..default()
                }),
                ..default()
            })
            .set(LogPlugin { filter: format!("{},bevy_render=warn", arena_server::LOG_FILTER), ..default() }),
    )
    .add_plugins(EguiPlugin::default())
    .insert_resource(arena_client::ClientWorld(playback.world.clone()))
    .insert_resource(loaded.settings)
    .insert_resource(playback)
    .insert_resource(start)
    // What the screenshot plan listens for in a game.
    .add_message::<arena_client::KillNotice>()
    .init_resource::<vocabulary::KillCamShown>()
    .configure_sets(Update, (ViewSet::Menus, ViewSet::Follow, ViewSet::Overlay).chain())
    .add_systems(Startup, camera::spawn_camera)
    .add_systems(Update, camera::apply_fov.run_if(resource_changed::<settings::Settings>))
    .add_plugins((
        scene::plugin,
        players::plugin,
        name_tags::plugin,
        callouts::plugin,
        quality::plugin,
        demo_playback::plugin,
    ));
    if let Some(shot) = screenshot {
        app.add_plugins(screenshot::plugin(shot));
    }
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("the demo player stopped with error code {code}")),
    }
}

/// Opens the window and runs the game until the player quits.
pub fn run(config: ViewConfig) -> Result<(), String> {
    // Settings first: a missing or broken file never stops the game.
    let (path, loaded) = load_settings();
    if let Some(problem) = &loaded.problem {
        eprintln!("{problem}");
    }
    let mut user_settings = loaded.settings;
    if let Some(name) = &config.name {
        user_settings.name = arena_protocol::names::clean_name(name);
    } else if user_settings.name.is_empty() {
        user_settings.name = vocabulary::default_name();
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
    .insert_resource(settings::SettingsFile { path, problem: loaded.problem })
    // The masters set in Settings also introduce the player to a silent
    // server, from the first connection on (`arena join` connects at start).
    .insert_resource(arena_client::Introducers(user_settings.masters.clone()))
    .insert_resource(user_settings)
    .insert_resource(config.netcode.clone())
    .insert_resource(vocabulary::AutoAim(config.auto_aim))
    .configure_sets(
        Update,
        (ViewSet::Menus, ViewSet::Follow, ViewSet::Overlay).chain().after(arena_client::ClientSet::Present),
    )
    .add_plugins((
        scene::plugin,
        players::plugin,
        name_tags::plugin,
        view_model::plugin,
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
        callouts::plugin,
        quality::plugin,
    ));
    app.add_plugins((net_graph::plugin, ghosts::plugin, ragdolls::plugin, rockets::plugin, kill_cam::plugin));
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
    quit_on_signals(&mut app);
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("the game stopped with error code {code}")),
    }
}

/// SIGTERM and SIGINT (Ctrl+C in the terminal that started the game) quit
/// as the Quit button does: a hosted game tells its players and removes its
/// router's port mapping, a joined one says goodbye to its server. A second
/// signal exits at once.
fn quit_on_signals(app: &mut App) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let registered = signal_hook::flag::register_conditional_shutdown(signal, 1, flag.clone())
            .and_then(|_| signal_hook::flag::register(signal, flag.clone()));
        if let Err(e) = registered {
            warn!("cannot handle signal {signal}: {e}; it will end the game without cleaning up");
        }
    }
    app.add_systems(First, move |mut exit: MessageWriter<AppExit>, mut said: Local<bool>| {
        if flag.load(Ordering::Relaxed) && !*said {
            *said = true;
            info!("quitting: a stop signal came (SIGTERM or SIGINT)");
            exit.write(AppExit::Success);
        }
    });
}
