//! Everything a person sees and hears: the window, the arena's meshes and
//! lights, player models with name tags, the first-person camera and arms, keyboard and
//! mouse, the menus and the HUD. The only crate that needs a window and a GPU.
//!
//! # Modules, bottom up
//!
//! - `vocabulary`: the stages of a frame, what the window starts with, the
//!   profile and player colours, which panels and aids are open.
//! - `looks`: the glowing material of effects and rockets, text over the view,
//!   the items' colours.
//! - `console_vars`: the console's variables (the paper's netcode ones and
//!   the view's), which the settings file keeps.
//! - `storage`: where the settings and scripts live (files; in a browser,
//!   the page's storage).
//! - `settings`: the player's settings file, bindings and their checks.
//! - `settings_menu`: the settings window.
//! - `input`: keyboard and mouse into the local input, before the fixed loop.
//! - `host`: a listen server in this process.
//! - `server_list`: the main menu's list of games (LAN, favourites, recent).
//! - `sound`: what shots, steps, pickups, pads, teleporters and the menus
//!   sound like (synthesised at start).
//! - `votes`: the vote open at the left of the view, the keys that answer
//!   it, the pause menu's calls.
//! - `menu`: the main menu, the connecting dialog, the pause menu.
//! - `netcode_panel`: the paper's switches, the conditioner, live figures.
//! - `surfaces`: the arena's textures, made at start.
//! - `scene`, `players`, `camera`: the arena, the other players (their
//!   meshes and materials made once), the view.
//! - `triggers`: the map's jump pads and teleporters (plates, chevrons,
//!   frames, where a teleporter puts the player).
//! - `spectating`: a watcher's keys, camera (first person, chase, flight)
//!   and the line saying whom it watches.
//! - `view_model`: first-person arms and weapon (recoil, reload, switch).
//! - `name_tags`: names over other players, laid out so none pile up.
//! - `callouts`: the map's named areas: signs, wall bands, lamps, the HUD line.
//! - `items`: the map's items hovering over their spots; a taken one's ring
//!   and the seconds until it is back.
//! - `quality`: the graphics quality setting applied (shadows, MSAA, lamps).
//! - `effects`, `hitboxes`: what shots and hits look like.
//! - `rockets`: rockets in flight, their trails and lights, and blasts.
//! - `hud`, `scoreboard_ui`, `range_hud`: what is drawn over the view.
//! - `chat`: chat lines over the view, fading; the line being typed.
//! - `voice` (not in the browser's build): the push-to-talk key, the
//!   microphone while it is held, the talkers played, the line naming who talks.
//! - `map_progress`: the server's map being downloaded, over the view.
//! - `game_log`: the game's log lines, kept for the console.
//! - `console`: the console (the key left of 1): the paper's variables and
//!   the game's commands, binds, `autoexec.cfg`, rcon, the log's lines.
//! - `console_window`: the console's window (scrollback, the line, Tab's list).
//! - `frame_limit`: `fps_max`.
//! - `net_graph`, `ghosts`: the netcode made visible (live plots, where the
//!   server last had everyone).
//! - `ragdolls`: bodies that fall (bevy_rapier3d, this client only).
//! - `kill_cam`: after a death, the killer's view as drawn beside the server's.
//! - `demo_playback`: `arena demo play FILE`: a recorded match, its timeline
//!   and overlays (a window of its own, no network).
//! - `screenshot`: `--screenshot FILE --seconds S [--screenshot-after-kill]`.
//! - `page_link`: a browser link's fragment (`#play`, `#range`,
//!   `#join=`) into the game's start (or the menu, saying what was wrong).
//! - `page_status`: the figures scripts read (`window.arena_status` in a
//!   browser), gathered each frame.
//! - `page` (wasm32 only): the page around the game: its clock, pointer
//!   lock, the status published, scripts' console lines.
//! - `web_transport` (wasm32 only): joining a server from the page: the
//!   WebTransport session as a gateway of the in-page network.
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
mod chat;
mod console;
mod console_vars;
mod console_window;
mod demo_playback;
mod effects;
mod frame_limit;
mod game_log;
mod ghosts;
mod hitboxes;
mod host;
mod hud;
mod input;
mod items;
mod kill_cam;
mod looks;
mod map_progress;
mod menu;
mod name_tags;
mod net_graph;
mod netcode_panel;
#[cfg(target_arch = "wasm32")]
mod page;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod page_link;
mod page_status;
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
mod spectating;
mod storage;
mod surfaces;
mod triggers;
mod view_model;
mod vocabulary;
#[cfg(not(target_arch = "wasm32"))]
mod voice;
mod votes;
#[cfg(target_arch = "wasm32")]
mod web_transport;

use arena_client::ClientPlugin;
use bevy::log::LogPlugin;
use bevy::prelude::*;
use bevy::window::{PresentMode, WindowResolution};
use bevy_egui::EguiPlugin;

pub use demo_playback::{PlaybackStart, SPEEDS};
pub use vocabulary::{PlayerProfile, QUICK_PLAY_BOTS, Screenshot, StartAction, ViewSet};

#[derive(Clone, Debug)]
pub struct ViewConfig {
    pub start: StartAction,
    pub name: Option<String>,
    pub screenshot: Option<Screenshot>,
    /// The netcode switches and link conditioner to start with.
    pub netcode: arena_client::NetcodeSettings,
    /// The console names of the netcode variables the command line set:
    /// these win over the ones saved in the settings file.
    pub netcode_flags: Vec<&'static str>,
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
            .set(LogPlugin {
                filter: format!("{},bevy_render=warn", arena_server::LOG_FILTER),
                fmt_layer: arena_server::log_layer,
                ..default()
            }),
    )
    .add_plugins(EguiPlugin::default())
    .insert_resource(arena_client::ClientWorld(playback.world.clone()))
    .insert_resource(loaded.settings)
    .insert_resource(playback)
    .insert_resource(start)
    .add_plugins(demo_player);
    if let Some(shot) = screenshot {
        app.add_plugins(screenshot::plugin(shot));
    }
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("the demo player stopped with error code {code}")),
    }
}

/// The demo player's own part: every view plugin that [`run_demo`] adds to
/// Bevy's window, renderer and egui, given the playback, its start and the
/// settings as resources. The start test builds the same with no window.
fn demo_player(app: &mut App) {
    // What the screenshot plan listens for in a game.
    app.add_message::<arena_client::KillNotice>()
        .init_resource::<vocabulary::KillCamShown>()
        .configure_sets(Update, (ViewSet::Menus, ViewSet::Follow, ViewSet::Overlay).chain())
        .add_systems(Startup, camera::spawn_camera)
        .add_systems(Update, camera::apply_fov.run_if(resource_changed::<settings::Settings>))
        .add_plugins((
            scene::plugin,
            triggers::plugin,
            players::plugin,
            name_tags::plugin,
            callouts::plugin,
            items::plugin,
            quality::plugin,
            demo_playback::plugin,
        ));
}

/// The game in `window`: the settings (a missing or broken file never stops
/// the game), Bevy's window, renderer and egui, and [`GamePlugin`].
fn game_app(config: ViewConfig, window: Window, problem: Option<String>) -> App {
    let (path, loaded) = load_settings();
    if let Some(problem) = &loaded.problem {
        eprintln!("{problem}");
    }
    let mut user_settings = loaded.settings;
    let mut netcode = config.netcode.clone();
    console::apply_saved(&user_settings, &mut netcode, &config.netcode_flags);
    if let Some(name) = &config.name {
        user_settings.name = arena_protocol::names::clean_name(name);
    } else if user_settings.name.is_empty() {
        user_settings.name = vocabulary::default_name();
    }
    let plugins = DefaultPlugins.set(WindowPlugin { primary_window: Some(window), ..default() });
    // In a browser the page's own panic hook (arena_web) stays: it says on
    // the page that the game stopped; Bevy's would only log it.
    #[cfg(target_arch = "wasm32")]
    let plugins = plugins.disable::<bevy::app::PanicHandlerPlugin>();
    let mut app = App::new();
    app.add_plugins(
        plugins
            .set(LogPlugin {
                filter: format!("{},bevy_render=warn", arena_server::LOG_FILTER),
                fmt_layer: arena_server::log_layer,
                custom_layer: game_log::log_layer,
                ..default()
            })
            // Arena's assets are made at start; none is fetched, and no
            // `.meta` file is asked for (a page would ask its server).
            .set(bevy::asset::AssetPlugin { meta_check: bevy::asset::AssetMetaCheck::Never, ..default() }),
    )
    .add_plugins(EguiPlugin::default())
    .add_plugins(GamePlugin {
        settings: user_settings,
        file: settings::SettingsFile { path, problem: loaded.problem },
        netcode,
        netcode_flags: config.netcode_flags,
        auto_aim: config.auto_aim,
        start: config.start,
        start_problem: problem,
        screenshot: config.screenshot,
    });
    app
}

/// Opens the window and runs the game until the player quits.
pub fn run(config: ViewConfig) -> Result<(), String> {
    let window = Window {
        title: "Arena".into(),
        resolution: WindowResolution::new(config.resolution.0, config.resolution.1),
        present_mode: PresentMode::AutoVsync,
        ..default()
    };
    let mut app = game_app(config, window, None);
    if std::env::var_os("ARENA_LOG_FPS").is_some() {
        app.add_plugins((
            bevy::diagnostic::FrameTimeDiagnosticsPlugin::default(),
            bevy::diagnostic::LogDiagnosticsPlugin::default(),
        ));
    }
    quit_on_signals(&mut app);
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("the game stopped with error code {code}")),
    }
}

/// Runs the game in the page's canvas (`web/index.html`), its listen server
/// inside the page: what the link's fragment asks for (`#play`, `#range`;
/// the main menu otherwise, saying what was wrong with a fragment it could
/// not read). Returns at once: the browser's animation frames run it.
#[cfg(target_arch = "wasm32")]
pub fn run_web() {
    let fragment = web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default();
    let (start, problem, join_link) = page_link::start(&fragment);
    let config = ViewConfig {
        start,
        name: None,
        screenshot: None,
        netcode: arena_client::NetcodeSettings::default(),
        netcode_flags: Vec::new(),
        resolution: (1280, 720),
        auto_aim: false,
    };
    let window = Window {
        title: "Arena".into(),
        canvas: Some(page::CANVAS.into()),
        // The canvas fills the page, and the page's keys (Tab, F1, the
        // wheel) are the game's rather than the browser's.
        fit_canvas_to_parent: true,
        prevent_default_event_handling: true,
        ..default()
    };
    let mut app = game_app(config, window, problem);
    app.add_plugins((page::plugin, web_transport::plugin));
    app.insert_resource(vocabulary::KnownJoinLink(join_link));
    app.run();
}

/// The game's own part: the client's netcode, every view plugin and what
/// they start with; all that [`run`] adds to Bevy's window, renderer and
/// egui. The start test builds this same plugin with no window, so a view
/// plugin added here is start-tested with the rest.
struct GamePlugin {
    settings: settings::Settings,
    file: settings::SettingsFile,
    netcode: arena_client::NetcodeSettings,
    netcode_flags: Vec<&'static str>,
    auto_aim: bool,
    start: StartAction,
    /// What the main menu says first (a link the page could not read).
    start_problem: Option<String>,
    screenshot: Option<Screenshot>,
}

impl Plugin for GamePlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(ClientPlugin)
            .insert_resource(PlayerProfile { name: self.settings.name.clone() })
            .insert_resource(self.file.clone())
            // The masters set in Settings also introduce the player to a silent
            // server, from the first connection on (`arena join` connects at start).
            .insert_resource(arena_client::Introducers(self.settings.masters.clone()))
            .insert_resource(self.settings.clone())
            .insert_resource(self.netcode.clone())
            // Maps received from servers, kept beside the settings.
            .insert_resource(arena_client::MapCache {
                dir: self.file.path.as_ref().and_then(|p| p.parent()).map(|d| d.join("maps")),
            })
            .insert_resource(console::Console::with_flags(self.netcode_flags.clone()))
            .insert_resource(vocabulary::AutoAim(self.auto_aim))
            .insert_resource(menu::StartupAction(Some(self.start.clone())))
            .insert_resource(vocabulary::StartProblem(self.start_problem.clone()))
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
                chat::plugin,
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
                triggers::plugin,
                items::plugin,
            ))
            .add_plugins((
                net_graph::plugin,
                ghosts::plugin,
                ragdolls::plugin,
                rockets::plugin,
                kill_cam::plugin,
                spectating::plugin,
                console::plugin,
                console_window::plugin,
                frame_limit::plugin,
                votes::plugin,
                map_progress::plugin,
                page_status::plugin,
            ));
        #[cfg(not(target_arch = "wasm32"))]
        app.add_plugins(voice::plugin);
        if let Some(shot) = &self.screenshot {
            app.add_plugins(screenshot::plugin(shot.clone()));
        }
        // The status a page publishes (`page.rs`), gathered natively too:
        // the app's first update stands for the page's start.
        #[cfg(not(target_arch = "wasm32"))]
        app.add_systems(Last, (|time: Res<Time<Real>>| time.elapsed_secs_f64() * 1000.0).pipe(page_status::gather));
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
    if let Err(e) = arena_udp::stop_on_signals(&flag) {
        warn!("cannot handle SIGTERM or SIGINT: {e}; it will end the game without cleaning up");
    }
    app.add_systems(First, move |mut exit: MessageWriter<AppExit>, mut said: Local<bool>| {
        if flag.load(Ordering::Relaxed) && !*said {
            *said = true;
            info!("quitting: a stop signal came (SIGTERM or SIGINT)");
            exit.write(AppExit::Success);
        }
    });
}

#[cfg(test)]
mod view_start {
    //! The game's and the demo player's every view system started with no
    //! window: a query conflict (B0001) or a missing resource panics at a
    //! system's first run, here rather than at a player's first launch.

    use std::time::Duration;

    use arena_client::{Disconnect, Session};
    use arena_lab::harness::{loopback_config, server_app_with_frame, session, step, step_until, tick};
    use arena_protocol::key::Password;
    use bevy::app::ScheduleRunnerPlugin;
    use bevy::asset::AssetPlugin;
    use bevy::state::app::StatesPlugin;
    use bevy::time::TimeUpdateStrategy;
    use bevy::window::ExitCondition;
    use bevy_egui::PrimaryEguiContext;

    use super::*;

    const HZ: u32 = 64;

    /// What DefaultPlugins and egui give the view, with the window, the
    /// renderer and the audio output stood in for by the resources and asset
    /// stores they register (as Bevy's and bevy_egui's own tests do). Every
    /// update advances time by one tick.
    fn headless_window() -> App {
        let mut app = App::new();
        app.add_plugins((
            MinimalPlugins.set(ScheduleRunnerPlugin::run_once()),
            bevy::transform::TransformPlugin,
            StatesPlugin,
            AssetPlugin::default(),
            bevy::input::InputPlugin,
            // The window's messages and components, with no window.
            WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() },
        ))
        .init_asset::<Image>()
        .init_asset::<bevy::shader::Shader>()
        .init_asset::<Mesh>()
        .init_asset::<StandardMaterial>()
        .init_asset::<bevy::audio::AudioSource>()
        .init_resource::<bevy::audio::GlobalVolume>()
        // The gizmos' store and storage, without their render side.
        .init_asset::<bevy::gizmos::GizmoAsset>()
        .init_gizmo_group::<DefaultGizmoConfigGroup>()
        // egui's contexts and passes run; only its render pipeline is absent.
        .add_plugins(EguiPlugin::default())
        .insert_resource(TimeUpdateStrategy::ManualDuration(tick(HZ)));
        app
    }

    /// A screenshot plan that runs every frame and is never due.
    fn never_taken(dir: &std::path::Path) -> Screenshot {
        Screenshot {
            path: dir.join("never.png"),
            quit_after: Duration::from_secs(3600),
            after_kill: false,
            in_kill_cam: false,
        }
    }

    fn egui_contexts(app: &mut App) -> usize {
        app.world_mut().query_filtered::<(), With<PrimaryEguiContext>>().iter(app.world()).count()
    }

    /// The game as `run` builds it, starting with `start`, as player "Ada"
    /// whose settings are saved in `dir` (joining saves the server among the
    /// recent ones: there, not in the player's own settings).
    fn game(start: StartAction, dir: &std::path::Path) -> App {
        let mut settings = settings::Settings::default().repaired().0;
        settings.name = "Ada".into();
        let mut app = headless_window();
        app.add_plugins(GamePlugin {
            settings,
            file: settings::SettingsFile { path: Some(dir.join("settings.ron")), problem: None },
            netcode: arena_client::NetcodeSettings::default(),
            netcode_flags: Vec::new(),
            auto_aim: false,
            start,
            start_problem: None,
            screenshot: Some(never_taken(dir)),
        });
        app
    }

    #[test]
    fn every_game_system_starts_with_a_client_in_game_and_leaving() {
        // Bots, so that others are drawn, tagged, shot at and heard.
        let config = arena_server::ServerConfig { bots: 3, ..loopback_config(HZ) };
        let (mut server, info) = server_app_with_frame(&config, tick(HZ));
        let dir = std::env::temp_dir().join(format!("arena-view-start-{}", std::process::id()));
        let settings_file = dir.join("settings.ron");
        // `arena join`: the menu's start action connects.
        let mut view = game(StartAction::Join(info.local_addr, Password::OPEN, false), &dir);

        assert!(
            step_until(&mut [&mut server, &mut view], 5 * HZ as usize, |apps| session(apps[1]) == Session::InGame),
            "the view's client never got into the game"
        );
        step(&mut [&mut server, &mut view], 2 * HZ as usize);
        // Every panel and aid open, so that their drawing runs too.
        {
            let world = view.world_mut();
            world.resource_mut::<vocabulary::NetcodePanel>().open = true;
            *world.resource_mut::<vocabulary::NetGraph>() = vocabulary::NetGraph::Full;
            world.resource_mut::<vocabulary::Ghosts>().0 = true;
            world.resource_mut::<vocabulary::PauseMenu>().open = true;
            world.resource_mut::<settings_menu::SettingsWindow>().open = true;
            world.resource_mut::<ButtonInput<KeyCode>>().press(KeyCode::Tab);
            world.resource_mut::<vocabulary::ConsoleWindow>().open = true;
            world.resource_mut::<console::Console>().submit("status");
        }
        step(&mut [&mut server, &mut view], HZ as usize);
        assert!(settings_file.exists(), "joining saved no recent server: OnEnter(InGame) did not run");
        assert_eq!(egui_contexts(&mut view), 1, "no egui context: the panels' systems never ran");

        // Leaving runs the systems of leaving a game and of the main menu.
        view.world_mut().trigger(Disconnect);
        assert!(
            step_until(&mut [&mut server, &mut view], HZ as usize, |apps| session(apps[1]) == Session::Offline),
            "the view's client did not leave"
        );
        step(&mut [&mut server, &mut view], HZ as usize / 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// What a page's scripts read (`window.arena_status`): the state, the
    /// round trip, snapshots, and the delay from a movement key to the own
    /// player drawn moving, which with prediction is at most a tick or two.
    #[test]
    fn the_page_status_says_what_a_player_sees() {
        let config = arena_server::ServerConfig { bots: 1, ..loopback_config(HZ) };
        let (mut server, info) = server_app_with_frame(&config, tick(HZ));
        let dir = std::env::temp_dir().join(format!("arena-view-status-{}", std::process::id()));
        let mut view = game(StartAction::Join(info.local_addr, Password::OPEN, false), &dir);
        step(&mut [&mut server, &mut view], 2);
        assert_eq!(view.world().resource::<page_status::PageStatus>().state, "connecting");
        assert!(
            step_until(&mut [&mut server, &mut view], 5 * HZ as usize, |apps| session(apps[1]) == Session::InGame),
            "never in game"
        );
        // Standing still a second, then W held half a second.
        step(&mut [&mut server, &mut view], HZ as usize);
        view.world_mut().resource_mut::<ButtonInput<KeyCode>>().press(KeyCode::KeyW);
        step(&mut [&mut server, &mut view], HZ as usize / 2);
        view.world_mut().resource_mut::<ButtonInput<KeyCode>>().release(KeyCode::KeyW);
        step(&mut [&mut server, &mut view], 2);

        let status = view.world().resource::<page_status::PageStatus>().clone();
        assert_eq!(status.state, "in_game");
        assert!(status.load_to_playing_ms.is_some_and(|ms| ms > 0.0), "{status:?}");
        assert!(status.snapshots_received > HZ as u64 / 2, "{status:?}");
        assert!(status.rtt_ms.is_some() && status.fps > 0.0 && status.command_packets > 0, "{status:?}");
        assert!(status.moved_m > 1.0, "W held for half a second: {status:?}");
        assert_eq!(status.own_motion_onsets, 1, "one start: {status:?}");
        let delay = status.own_motion_delay_ms.expect("a delay");
        assert!(delay <= 2.0 * 1000.0 / f64::from(HZ) + 1e-6, "predicted, yet {delay} ms from key to motion");
        assert_eq!(status.mispredictions, 0);
        assert!(status.netcode.cl_predict && status.netcode.net_fakelag == 0.0);

        // A script reads these keys (scripts/web-check.py, the words).
        let json = serde_json::to_value(&status).expect("JSON");
        for key in [
            "state",
            "rtt_ms",
            "fps",
            "snapshots_received",
            "shots",
            "hits",
            "mispredictions",
            "own_motion_delay_ms",
            "netcode",
        ] {
            assert!(json.get(key).is_some(), "no {key} in {json}");
        }
        // A change of the settings starts the delay's measure afresh.
        view.world_mut().resource_mut::<arena_client::NetcodeSettings>().prediction = false;
        step(&mut [&mut server, &mut view], 2);
        let status = view.world().resource::<page_status::PageStatus>();
        assert_eq!((status.own_motion_onsets, status.netcode.cl_predict), (0, false));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Updates `app` a tick apart on the wall clock until `done` holds, at
    /// most `frames` times; whether it held.
    fn on_the_clock(app: &mut App, frames: u32, done: impl Fn(&App) -> bool) -> bool {
        for _ in 0..frames {
            app.update();
            if done(app) {
                return true;
            }
            std::thread::sleep(tick(HZ));
        }
        false
    }

    /// `arena host`: the listen server on its own thread, on the wall clock,
    /// so this game runs on it too, a frame a tick.
    #[test]
    fn every_host_system_starts_hosting_a_game_and_stopping() {
        let dir = std::env::temp_dir().join(format!("arena-view-host-{}", std::process::id()));
        let mut view = game(StartAction::Host(arena_server::ServerConfig { bots: 1, ..loopback_config(HZ) }), &dir);
        view.insert_resource(TimeUpdateStrategy::Automatic);
        assert!(
            on_the_clock(&mut view, 5 * HZ, |app| session(app) == Session::InGame),
            "the host never got into its game"
        );
        assert!(view.world().contains_resource::<host::HostedServer>(), "not hosting");
        on_the_clock(&mut view, HZ / 2, |_| false);
        view.world_mut().trigger(Disconnect);
        assert!(on_the_clock(&mut view, HZ, |app| session(app) == Session::Offline), "the host did not leave");
        on_the_clock(&mut view, 2, |_| false);
        assert!(!view.world().contains_resource::<host::HostedServer>(), "leaving did not stop the listen server");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_console_sets_cl_interp_for_the_panel_and_the_settings_file_and_a_looping_script_stops() {
        let dir = std::env::temp_dir().join(format!("arena-view-console-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        std::fs::write(dir.join("a.cfg"), "cl_interp 40\nexec b.cfg\n").expect("a script");
        std::fs::write(dir.join("b.cfg"), "exec a.cfg\n").expect("a script");
        std::fs::write(dir.join("autoexec.cfg"), "// run at start\npushlatency -60\n").expect("a script");
        let mut view = game(StartAction::Menu, &dir);
        view.world_mut().resource_mut::<vocabulary::ConsoleWindow>().open = true;
        on_the_clock(&mut view, 2, |_| false);
        let netcode = view.world().resource::<arena_client::NetcodeSettings>();
        assert_eq!(netcode.predict_ahead_ms, Some(60), "autoexec.cfg did not run");

        view.world_mut().resource_mut::<console::Console>().submit("cl_interp 50");
        // The file is written half a second after the last change.
        on_the_clock(&mut view, HZ, |_| false);
        let netcode = view.world().resource::<arena_client::NetcodeSettings>();
        assert_eq!(netcode.interp_ms, Some(50));
        assert_eq!(netcode_panel::slider_delay_ms(netcode, 0), 50, "the netcode panel's delay");
        let text = std::fs::read_to_string(dir.join("settings.ron")).expect("the settings file");
        assert!(text.contains("\"cl_interp\": \"50\""), "the settings file has no cl_interp 50:\n{text}");
        // And the next start reads it back.
        let loaded = settings::load(&dir.join("settings.ron"));
        let mut next = arena_client::NetcodeSettings::default();
        console::apply_saved(&loaded.settings, &mut next, &[]);
        assert_eq!((next.interp_ms, next.predict_ahead_ms), (Some(50), Some(60)));
        let mut flagged = arena_client::NetcodeSettings::default();
        console::apply_saved(&loaded.settings, &mut flagged, &["cl_interp"]);
        assert_eq!(flagged.interp_ms, None, "a flag on the command line wins");

        view.world_mut().resource_mut::<console::Console>().submit("exec a.cfg");
        on_the_clock(&mut view, 2, |_| false);
        let lines: Vec<String> = view.world().resource::<console::Console>().lines.iter().cloned().collect();
        assert!(
            lines.iter().any(|l| l == "exec a.cfg: stopped, it runs itself (through a.cfg → b.cfg → a.cfg)"),
            "{lines:?}"
        );
        assert_eq!(view.world().resource::<arena_client::NetcodeSettings>().interp_ms, Some(40));
        view.world_mut().resource_mut::<console::Console>().submit("bind F6 \"bind F7 quit\"");
        view.world_mut().resource_mut::<console::Console>().submit("cl_intrep 20");
        on_the_clock(&mut view, 2, |_| false);
        let lines: Vec<String> = view.world().resource::<console::Console>().lines.iter().cloned().collect();
        assert!(lines.iter().any(|l| l == "bind: a key's line cannot bind or unbind keys"), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("unknown: cl_intrep (closest: cl_interp")), "{lines:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_demo_player_system_starts_on_a_recording() {
        let bytes = arena_replay::example_demo(400, true, |_, _| {}).expect("a demo");
        let playback = demo_playback::Playback::open(bytes).expect("the demo opens");
        let mut app = headless_window();
        app.insert_resource(arena_client::ClientWorld(playback.world.clone()))
            .insert_resource(settings::Settings::default())
            .insert_resource(playback)
            .insert_resource(PlaybackStart { speed: 1.0, show_hitboxes: true, ..default() })
            .add_plugins((demo_player, screenshot::plugin(never_taken(&std::env::temp_dir()))));
        for _ in 0..HZ {
            app.update();
        }
        // Its two players drawn by the game's own player models.
        let drawn =
            app.world_mut().query::<(&arena_client::NetPlayer, &arena_client::Drawn)>().iter(app.world()).count();
        assert_eq!(drawn, 2, "the demo's players are not drawn");
        assert_eq!(egui_contexts(&mut app), 1, "no egui context: the timeline never ran");
    }
}
