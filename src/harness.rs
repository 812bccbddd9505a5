//! Headless server and client Apps over real UDP on 127.0.0.1, stepped by hand
//! with a fixed amount of time per update, for integration tests and
//! experiments. No window and no GPU anywhere.

use std::net::SocketAddr;
use std::time::Duration;

use arena_client::{ClientPlugin, ConnectTo, NetcodeSettings, Session};
use arena_server::{ServerConfig, ServerInfo};
use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy::state::app::StatesPlugin;
use bevy::time::TimeUpdateStrategy;

/// Builds a server on 127.0.0.1 with an OS-chosen port whose every update
/// advances time by exactly one tick.
pub fn server_app(tick_hz: u32) -> (App, ServerInfo) {
    server_app_with_frame(&loopback_config(tick_hz), tick(tick_hz))
}

/// A server configuration on 127.0.0.1 with an OS-chosen port, sending a
/// snapshot every tick.
pub fn loopback_config(tick_hz: u32) -> ServerConfig {
    ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        tick_hz,
        snapshot_hz: tick_hz,
        ..ServerConfig::default()
    }
}

/// Builds a server with this configuration whose every update advances time by `frame`.
pub fn server_app_with_frame(config: &ServerConfig, frame: Duration) -> (App, ServerInfo) {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins.set(ScheduleRunnerPlugin::run_once()));
    let info = match arena_server::add_server(&mut app, config) {
        Ok(info) => info,
        Err(e) => panic!("test server failed to start: {e}"),
    };
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame));
    (app, info)
}

/// Builds a headless client App whose every update advances time by one tick
/// at `tick_hz`, and asks it to connect to `server` as `name`.
pub fn client_app(tick_hz: u32, server: SocketAddr, name: &str) -> App {
    client_app_with(tick(tick_hz), server, name, NetcodeSettings::default())
}

/// Builds a headless client App whose every update advances time by `frame`,
/// with these netcode settings (conditioner included), and asks it to
/// connect to `server` as `name`.
pub fn client_app_with(frame: Duration, server: SocketAddr, name: &str, settings: NetcodeSettings) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins.set(ScheduleRunnerPlugin::run_once()), StatesPlugin, ClientPlugin));
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame));
    app.insert_resource(settings);
    app.world_mut().trigger(ConnectTo { addr: server, name: name.to_string() });
    app
}

/// One tick at `tick_hz`.
pub fn tick(tick_hz: u32) -> Duration {
    Duration::from_secs_f64(1.0 / f64::from(tick_hz))
}

/// Updates every app once, in order, `frames` times. Loopback UDP delivers at
/// once, so a message sent in one app's update is readable in the next app's.
pub fn step(apps: &mut [&mut App], frames: usize) {
    for _ in 0..frames {
        for app in apps.iter_mut() {
            app.update();
        }
    }
}

/// Steps until `done` holds for the apps (checked after every round), at most
/// `max_frames` rounds; returns whether it held.
pub fn step_until(apps: &mut [&mut App], max_frames: usize, mut done: impl FnMut(&mut [&mut App]) -> bool) -> bool {
    for _ in 0..max_frames {
        step(apps, 1);
        if done(apps) {
            return true;
        }
    }
    false
}

/// The client's session state.
pub fn session(app: &App) -> Session {
    *app.world().resource::<State<Session>>().get()
}
