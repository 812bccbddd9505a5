//! Hosting: a listen server on its own thread in this process, which the local
//! player then joins over UDP like everyone else. In a browser the server's
//! app runs beside the game's, a frame of it at the end of each of the
//! game's, and the two talk over the in-page network (`arena_udp::memory`).

use std::net::SocketAddr;

use arena_client::{ConnectTo, LastDisconnect, Session};
use arena_server::{ListenServer, MapState, ReachReport, Reachable, ServerConfig};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::vocabulary::PlayerProfile;

pub(crate) fn plugin(app: &mut App) {
    app.add_observer(on_host_game)
        .add_systems(OnEnter(Session::Offline), stop_hosting)
        .add_systems(Last, stop_hosting_on_exit.run_if(resource_exists::<HostedServer>))
        .add_systems(
            EguiPrimaryContextPass,
            internet_hud.run_if(in_state(Session::InGame)).run_if(resource_exists::<HostedServer>),
        );
    // At the end of the game's frame, after the client sent this frame's
    // commands (PostUpdate): the server's ticks up to the frame's time then
    // have every command the client made for them, however long the frame
    // took (a slow page's frame can be longer than the client's head
    // start); its snapshots are read at the next frame's start.
    #[cfg(target_arch = "wasm32")]
    app.add_systems(Last, step_in_page_server.run_if(resource_exists::<HostedServer>));
}

/// A frame of the in-page server (a browser's listen server), at the
/// game's instant: one clock for both ends of the page's game.
#[cfg(target_arch = "wasm32")]
fn step_in_page_server(hosted: Res<HostedServer>, time: Res<Time<Real>>) {
    if let Some(now) = time.last_update() {
        hosted.0.step(now);
    }
}

/// The host's standing on the internet, for the pause menu: the external
/// address and how it was learnt, reachable, listed, and advice.
pub(crate) fn internet_status(ui: &mut egui::Ui, report: &ReachReport) {
    if report.mapping == MapState::Off && !report.has_masters && report.manual.is_empty() {
        ui.label("Not open to the internet (LAN only): tick \"Open to the internet\" before hosting.");
        return;
    }
    let (external, how) = report.external();
    egui::Grid::new("internet status").num_columns(2).spacing([10.0, 2.0]).show(ui, |ui| {
        ui.label("External address");
        ui.monospace(external.map_or("unknown".to_string(), |a| a.to_string()));
        ui.end_row();
        ui.label("Obtained by");
        match &report.mapping {
            MapState::Asking => {
                ui.label("asking the router...");
            }
            // The router's reasons are long: on hover.
            MapState::Failed(why) if how == "master" || how == "none" => {
                ui.label(format!("{how} (the router mapped no port)")).on_hover_text(why);
            }
            _ => {
                ui.label(how);
            }
        }
        ui.end_row();
        ui.label("Reachable");
        let reachable = report.reachable.label();
        ui.colored_label(
            match report.reachable {
                Reachable::Yes => egui::Color32::LIGHT_GREEN,
                Reachable::No => egui::Color32::from_rgb(255, 140, 100),
                Reachable::Unknown => egui::Color32::GRAY,
            },
            reachable,
        );
        ui.end_row();
        ui.label("Listed on the master");
        ui.label(if report.listed { "yes" } else { "no" });
        ui.end_row();
        ui.label("Players introduced");
        ui.label(format!("{} ({} through the master's relay)", report.introductions, report.relayed));
        ui.end_row();
    });
    if let Some(advice) = report.advice() {
        ui.add(egui::Label::new(egui::RichText::new(advice).color(egui::Color32::from_rgb(255, 200, 120))).wrap());
    }
}

/// One line at the top of a host's screen: how strangers reach the game.
fn internet_hud(mut contexts: EguiContexts, hosted: Res<HostedServer>) -> Result {
    let report = hosted.0.info.reach.get();
    if report.mapping == MapState::Off && !report.has_masters {
        return Ok(());
    }
    let (external, how) = report.external();
    let mut line = format!(
        "Internet: {} ({how}) · reachable {} · listed {}",
        external.map_or("unknown".to_string(), |a| a.to_string()),
        report.reachable.label(),
        if report.listed { "yes" } else { "no" }
    );
    if let Some(advice) = report.advice() {
        line.push('\n');
        line.push_str(&advice);
    }
    let ctx = contexts.ctx_mut()?;
    // Top left: the match clock has the top centre.
    egui::Area::new(egui::Id::new("host internet"))
        .anchor(egui::Align2::LEFT_TOP, [8.0, 8.0])
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::new().fill(egui::Color32::from_black_alpha(140)).inner_margin(6.0).corner_radius(4.0).show(
                ui,
                |ui| {
                    ui.set_max_width(420.0);
                    ui.add(
                        egui::Label::new(
                            egui::RichText::new(line).size(12.0).color(egui::Color32::from_rgb(225, 230, 240)),
                        )
                        .wrap(),
                    );
                },
            );
        });
    Ok(())
}

/// Ask to host a game with this configuration and join it.
#[derive(Event, Debug, Clone)]
pub(crate) struct HostGame {
    pub config: ServerConfig,
    /// If the port is taken, take any free one instead (quick play).
    pub any_port_if_taken: bool,
}

/// The listen server this process runs, while hosting.
#[derive(Resource, Debug)]
pub(crate) struct HostedServer(pub ListenServer);

fn on_host_game(
    event: On<HostGame>,
    mut commands: Commands,
    profile: Res<PlayerProfile>,
    mut last: ResMut<LastDisconnect>,
) {
    let HostGame { mut config, any_port_if_taken } = event.event().clone();
    // A player's game: browsers say so, and call it after the player.
    config.kind = arena_protocol::query::ServerKind::Listen;
    if arena_protocol::query::clean_server_name(&config.name).is_empty() {
        config.name = format!("{}'s game", profile.name);
    }
    let password = config.password.clone();
    // Quick play: if the port is taken, the next of those the LAN browser
    // scans (so the game is still found), else any.
    let fallbacks: Vec<u16> = if any_port_if_taken {
        arena_client::browser::LAN_PORTS.filter(|p| *p != config.bind.port()).chain([0]).collect()
    } else {
        Vec::new()
    };
    let mut started = ListenServer::start(config.clone());
    for port in fallbacks {
        match &started {
            Err(arena_server::ServerError::Bind { error, .. }) if error.kind() == std::io::ErrorKind::AddrInUse => {
                info!("port is taken; trying {}", if port == 0 { "any".to_string() } else { port.to_string() });
                started = ListenServer::start(ServerConfig {
                    bind: SocketAddr::new(config.bind.ip(), port),
                    ..config.clone()
                });
            }
            _ => break,
        }
    }
    match started {
        Ok(server) => {
            server.info.print_banner();
            let port = server.info.local_addr.port();
            // Over IPv4 loopback unless the server is on one IPv6 address
            // only: `[::]` takes IPv4 too, and ::1 may not exist (IPv6
            // switched off by sysctl still lets `[::]` bind).
            let local = server.info.local_addr;
            let addr = if local.is_ipv4() || local.ip().is_unspecified() {
                SocketAddr::from(([127, 0, 0, 1], port))
            } else {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port))
            };
            commands.insert_resource(HostedServer(server));
            // The host's own player joins like everyone else, password and all.
            commands.trigger(ConnectTo { addr, name: profile.name.clone(), password, spectate: false });
        }
        Err(e) => {
            warn!("cannot host: {e}");
            last.0 = Some(format!("Cannot host: {e}"));
        }
    }
}

fn stop_hosting(mut commands: Commands, hosted: Option<Res<HostedServer>>) {
    if hosted.is_some() {
        info!("stopping the listen server");
        // Dropping the ListenServer stops its thread, which tells its clients.
        commands.remove_resource::<HostedServer>();
    }
}

/// Quitting the game stops the listen server before the process ends, so its
/// other players are told at once instead of timing out.
fn stop_hosting_on_exit(exit: MessageReader<AppExit>, mut commands: Commands) {
    if !exit.is_empty() {
        commands.remove_resource::<HostedServer>();
    }
}
