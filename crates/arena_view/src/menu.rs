//! Menus: the main menu (quick play, name, host with bots, join, the list of
//! games, settings, quit, and why the last connection ended), the
//! "connecting" dialog, and the in-game pause menu (resume, netcode,
//! settings, disconnect, quit).

use std::net::SocketAddr;

use arena_client::{ConnectTo, Disconnect, LastDisconnect, ServerConnection, Session, resolve_server_addr};
use arena_protocol::DEFAULT_PORT;
use arena_protocol::key::{MAX_PASSWORD_BYTES, Password};
use arena_protocol::names::clean_name;
use arena_server::ServerConfig;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::host::{HostGame, HostedServer};
use crate::server_list::{self, PasswordPrompt, ServerList};
use crate::settings::{Settings, SettingsFile};
use crate::settings_menu::SettingsWindow;
use crate::sound::SoundStatus;
use crate::vocabulary::{NetcodePanel, PauseMenu, PlayerProfile, QUICK_PLAY_BOTS, StartAction, StartProblem};

/// Most bots the host menu offers.
pub(crate) const MAX_MENU_BOTS: usize = 12;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<MenuForm>()
        .add_systems(Startup, take_startup_action)
        // A link's problem is the page's first word, not news once a game starts.
        .add_systems(OnEnter(Session::Connecting), |mut problem: ResMut<StartProblem>| problem.0 = None)
        .add_systems(EguiPrimaryContextPass, (main_menu, connecting_dialog, pause_menu));
}

/// What the command line (or a page's link) asked the window to do first.
#[derive(Resource)]
pub(crate) struct StartupAction(pub Option<StartAction>);

/// The main menu's text fields.
#[derive(Resource)]
struct MenuForm {
    name: String,
    port: String,
    /// The password of a game we host (empty: open to anyone).
    host_password: String,
    address: String,
    /// The password of the game we join (empty: none).
    join_password: String,
    /// Bots to add when hosting, and their skill (0-1).
    bots: usize,
    bot_skill: f32,
    /// The hosted game's rewind cap, milliseconds.
    max_unlag_ms: u16,
    /// How the hosted game's matches are played.
    mode: arena_protocol::modes::Mode,
    /// Join to watch (a spectator), not to play.
    spectate: bool,
    /// A problem with what was typed (not a connection error).
    problem: Option<String>,
}

impl Default for MenuForm {
    fn default() -> Self {
        Self {
            name: String::new(),
            port: DEFAULT_PORT.to_string(),
            host_password: String::new(),
            address: "127.0.0.1".into(),
            join_password: String::new(),
            bots: QUICK_PLAY_BOTS,
            bot_skill: 0.5,
            max_unlag_ms: arena_server::DEFAULT_MAX_UNLAG_MS,
            mode: arena_protocol::modes::Mode::Ffa,
            spectate: false,
            problem: None,
        }
    }
}

/// "Open to the internet" (the settings' choice, for quick play, the range
/// and hosting): the router asked for the port, and the game listed on the
/// masters. Never in a browser: a page has no router to ask and no UDP to
/// the masters.
fn open_to_internet(settings: &Settings, config: &mut ServerConfig) {
    if settings.list_on_internet && cfg!(not(target_arch = "wasm32")) {
        config.masters = settings.masters.clone();
        config.map_port = arena_nat::Methods::ALL;
    }
}

/// Quick play's game: bots, the default map.
pub(crate) fn quick_play_config() -> ServerConfig {
    ServerConfig { bots: QUICK_PLAY_BOTS, ..ServerConfig::default() }
}

/// The shooting range, as `arena play --range`: the targets are bots, so
/// the rewind cap reaches as far as a slow window's view.
pub(crate) fn range_config() -> ServerConfig {
    ServerConfig { range: true, max_unlag_ms: arena_server::MAX_UNLAG_MS, ..ServerConfig::default() }
}

fn take_startup_action(
    mut commands: Commands,
    mut action: ResMut<StartupAction>,
    profile: Res<PlayerProfile>,
    mut form: ResMut<MenuForm>,
    start_problem: Res<StartProblem>,
) {
    form.name.clone_from(&profile.name);
    form.problem.clone_from(&start_problem.0);
    match action.0.take() {
        Some(StartAction::Host(config)) => {
            form.port = config.bind.port().to_string();
            commands.trigger(HostGame { config, any_port_if_taken: false });
        }
        Some(StartAction::QuickPlay(config)) => {
            commands.trigger(HostGame { config, any_port_if_taken: true });
        }
        Some(StartAction::Join(addr, password, spectate)) => {
            form.address = addr.to_string();
            commands.trigger(ConnectTo { addr, name: profile.name.clone(), password, spectate });
        }
        Some(StartAction::Menu) | None => {}
    }
}

/// The address the Join field names: natively a server's game address (a
/// name looked up); in a browser a server's WebTransport endpoint, as an IP
/// address and port, or a whole join link (`...#join=ADDRESS&cert=HASH`),
/// whose certificate the session then pins.
fn join_address(text: &str, commands: &mut Commands) -> Result<std::net::SocketAddr, String> {
    #[cfg(target_arch = "wasm32")]
    if let Some((_, fragment)) = text.trim().split_once('#') {
        return match arena_client::page_link::parse(fragment, MAX_MENU_BOTS) {
            Ok(arena_client::page_link::PageLink::Join(link)) => {
                commands.insert_resource(crate::vocabulary::KnownJoinLink(Some(link)));
                Ok(link.addr)
            }
            Ok(_) => Err("That link starts a game in the page; paste a server's join link (#join=...).".into()),
            Err(e) => Err(e.to_string()),
        };
    }
    let _ = commands;
    resolve_server_addr(text).map_err(|e| e.to_string())
}

fn title(ui: &mut egui::Ui) {
    ui.vertical_centered(|ui| {
        ui.label(egui::RichText::new("ARENA").size(44.0).strong().color(egui::Color32::from_rgb(255, 196, 64)));
        ui.label(egui::RichText::new("an FPS netcode demonstration").size(15.0).italics());
    });
    ui.add_space(10.0);
}

#[allow(clippy::too_many_arguments)]
fn main_menu(
    mut contexts: EguiContexts,
    session: Res<State<Session>>,
    mut form: ResMut<MenuForm>,
    mut profile: ResMut<PlayerProfile>,
    mut settings: ResMut<Settings>,
    mut settings_window: ResMut<SettingsWindow>,
    problems: (Res<LastDisconnect>, ResMut<SettingsFile>, Res<SoundStatus>),
    mut list: ResMut<ServerList>,
    mut commands: Commands,
    mut exit: MessageWriter<AppExit>,
) -> Result {
    if *session.get() != Session::Offline {
        return Ok(());
    }
    let (last, mut settings_file, sound) = problems;
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("main menu")
        .title_bar(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .default_width(520.0)
        // A small window (a browser's, say) scrolls the menu rather than
        // cutting it.
        .vscroll(true)
        .show(ctx, |ui| {
            title(ui);
            ui.vertical_centered(|ui| {
                let quick = egui::Button::new(egui::RichText::new("▶  Quick play").size(22.0).strong())
                    .min_size(egui::vec2(220.0, 40.0));
                let range = egui::Button::new(egui::RichText::new("◎  Shooting range").size(15.0))
                    .min_size(egui::vec2(160.0, 40.0));
                // Both buttons centred as one row.
                let row_width = 220.0 + 160.0 + ui.spacing().item_spacing.x;
                let inset = ((ui.available_width() - row_width) / 2.0).max(0.0);
                ui.horizontal(|ui| {
                    ui.add_space(inset);
                    let mut config = None;
                    if ui
                        .add(quick)
                        .on_hover_text(format!("Host a game with {QUICK_PLAY_BOTS} bots and jump in"))
                        .clicked()
                    {
                        config = Some(quick_play_config());
                    }
                    if ui
                        .add(range)
                        .on_hover_text(
                            "Targets strafing across lanes at known speeds that cannot die: try hitting them with \
                             lag compensation on and off (F1) under fake latency",
                        )
                        .clicked()
                    {
                        config = Some(range_config());
                    }
                    if let Some(mut config) = config {
                        open_to_internet(&settings, &mut config);
                        take_name(&form, &mut profile, &mut settings, &mut settings_file);
                        form.problem = None;
                        commands.trigger(HostGame { config, any_port_if_taken: true });
                    }
                });
            });
            ui.add_space(10.0);
            egui::Grid::new("menu fields").num_columns(2).spacing([10.0, 8.0]).show(ui, |ui| {
                ui.label("Your name");
                ui.add(egui::TextEdit::singleline(&mut form.name).char_limit(arena_protocol::MAX_NAME_CHARS));
                ui.end_row();
                ui.label("Bots");
                ui.horizontal(|ui| {
                    ui.add(egui::Slider::new(&mut form.bots, 0..=MAX_MENU_BOTS));
                    ui.label("skill");
                    ui.add(egui::Slider::new(&mut form.bot_skill, 0.0..=1.0).show_value(false))
                        .on_hover_text("How quickly and accurately bots aim");
                });
                ui.end_row();
                ui.label("Mode");
                ui.horizontal(|ui| {
                    for mode in arena_protocol::modes::Mode::ALL {
                        ui.radio_value(&mut form.mode, mode, mode.label());
                    }
                })
                .response
                .on_hover_text(
                    "How the game you host is played: everyone against everyone, two teams (balanced as \
                     players come and go; no friendly fire), or a duel (two play, the rest watch and take \
                     the loser's place)",
                );
                ui.end_row();
                ui.label("Rewind cap");
                ui.add(egui::Slider::new(&mut form.max_unlag_ms, 0..=arena_server::MAX_UNLAG_MS).suffix(" ms"))
                    .on_hover_text(
                        "How far back lag compensation rewinds at most when you host. Players whose round trip \
                         and interpolation delay add up to more must lead their targets, and nobody is hit \
                         further behind cover than this.",
                    );
                ui.end_row();
                ui.label("Host on port");
                ui.horizontal(|ui| {
                    ui.add(egui::TextEdit::singleline(&mut form.port).desired_width(70.0));
                    let host = ui.button("Host game").clicked();
                    ui.add(password_field(&mut form.host_password, "password (none: open)"));
                    let mut listed = settings.list_on_internet;
                    let hint = if settings.masters.is_empty() {
                        "Ask your router to forward the port (UPnP, NAT-PMP, PCP), and list the game on the internet \
                         masters set in Settings (none is set yet); for Quick play too"
                            .to_string()
                    } else {
                        format!(
                            "Ask your router to forward the port (UPnP, NAT-PMP, PCP), and list the game on {} so \
                             that anyone can find and join it; for Quick play too",
                            settings.masters.join(", ")
                        )
                    };
                    // A page has no router to ask and no UDP to the masters.
                    if cfg!(not(target_arch = "wasm32"))
                        && ui.checkbox(&mut listed, "Open to the internet").on_hover_text(hint).changed()
                    {
                        settings.list_on_internet = listed;
                        settings_file.save(&settings);
                    }
                    if host {
                        match (form.port.trim().parse::<u16>(), Password::new(&form.host_password)) {
                            (Ok(port), Ok(password)) => {
                                take_name(&form, &mut profile, &mut settings, &mut settings_file);
                                form.problem = None;
                                let mut config = ServerConfig {
                                    bind: SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
                                    bots: form.bots,
                                    bot_skill: form.bot_skill,
                                    max_unlag_ms: form.max_unlag_ms,
                                    mode: form.mode,
                                    password,
                                    ..ServerConfig::default()
                                };
                                open_to_internet(&settings, &mut config);
                                commands.trigger(HostGame { config, any_port_if_taken: false });
                            }
                            (Err(_), _) => {
                                form.problem = Some(format!("\"{}\" is not a port number (1-65535).", form.port));
                            }
                            (_, Err(e)) => form.problem = Some(format!("Cannot host with that password: {e}.")),
                        }
                    }
                });
                ui.end_row();
                ui.label("Join address");
                ui.horizontal(|ui| {
                    let field = ui.add(egui::TextEdit::singleline(&mut form.address).desired_width(150.0));
                    let mut enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                    let join = ui.button("Join").clicked();
                    let password = ui.add(password_field(&mut form.join_password, "password (if any)"));
                    enter |= password.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                    ui.checkbox(&mut form.spectate, "Watch")
                        .on_hover_text("Join as a spectator: follow the players, or fly freely (also from the list)");
                    if join || enter {
                        match (join_address(&form.address, &mut commands), Password::new(&form.join_password)) {
                            (Ok(addr), Ok(password)) => {
                                take_name(&form, &mut profile, &mut settings, &mut settings_file);
                                form.problem = None;
                                commands.trigger(ConnectTo {
                                    addr,
                                    name: profile.name.clone(),
                                    password,
                                    spectate: form.spectate,
                                });
                            }
                            (Err(e), _) => form.problem = Some(e.to_string()),
                            (_, Err(e)) => form.problem = Some(format!("Cannot use that password: {e}.")),
                        }
                    }
                });
                ui.end_row();
            });
            ui.add_space(8.0);
            ui.separator();
            // Stars change the settings without touching the name field's
            // change detection (see the end of this function).
            let favourites = settings.favourites.clone();
            let picked = server_list::show(ui, &mut list, settings.bypass_change_detection());
            if settings.favourites != favourites {
                settings_file.save(&settings);
            }
            if let Some(pick) = picked {
                take_name(&form, &mut profile, &mut settings, &mut settings_file);
                form.problem = None;
                if pick.password && form.join_password.is_empty() {
                    list.prompt = Some(PasswordPrompt {
                        addr: pick.addr,
                        name: pick.name,
                        password: String::new(),
                        focused: false,
                    });
                } else {
                    let text = if pick.password { form.join_password.as_str() } else { "" };
                    match Password::new(text) {
                        Ok(password) => commands.trigger(ConnectTo {
                            addr: pick.addr,
                            name: profile.name.clone(),
                            password,
                            spectate: form.spectate,
                        }),
                        Err(e) => form.problem = Some(format!("Cannot use that password: {e}.")),
                    }
                }
            }
            let warning = egui::Color32::from_rgb(255, 110, 90);
            if let Some(problem) = form.problem.as_ref().or(last.0.as_ref()) {
                ui.add_space(8.0);
                ui.colored_label(warning, problem);
            }
            if let Some(problem) = &settings_file.problem {
                ui.add_space(4.0);
                ui.colored_label(egui::Color32::from_rgb(255, 190, 90), problem);
            }
            if sound.silent == Some(true) {
                ui.add_space(4.0);
                ui.label(egui::RichText::new("No sound device found: the game runs silently.").weak());
            }
            ui.add_space(10.0);
            ui.vertical_centered(|ui| {
                ui.horizontal(|ui| {
                    if ui.button("Settings").clicked() {
                        settings_window.open = true;
                    }
                    // A page is left by closing its tab.
                    if cfg!(not(target_arch = "wasm32")) && ui.button("Quit").clicked() {
                        exit.write(AppExit::Success);
                    }
                });
            });
        });
    if let Some((addr, text)) = server_list::password_prompt(ctx, &mut list) {
        match Password::new(&text) {
            Ok(password) => {
                commands.trigger(ConnectTo { addr, name: profile.name.clone(), password, spectate: form.spectate })
            }
            Err(e) => form.problem = Some(format!("Cannot use that password: {e}.")),
        }
    }
    // Names typed in the settings window show here too.
    if settings.is_changed() && !ctx.egui_wants_keyboard_input() && form.name != settings.name {
        form.name.clone_from(&settings.name);
    }
    Ok(())
}

/// A masked field for a game's password.
fn password_field<'a>(text: &'a mut String, hint: &'a str) -> egui::TextEdit<'a> {
    egui::TextEdit::singleline(text).password(true).hint_text(hint).desired_width(150.0).char_limit(MAX_PASSWORD_BYTES)
}

/// The name typed in the menu is the player's, and is saved with the settings.
fn take_name(form: &MenuForm, profile: &mut PlayerProfile, settings: &mut Settings, file: &mut SettingsFile) {
    let name = clean_name(&form.name);
    profile.name.clone_from(&name);
    if settings.name != name {
        settings.name = name;
        file.save(settings);
    }
}

fn connecting_dialog(
    mut contexts: EguiContexts,
    session: Res<State<Session>>,
    connection: Option<Res<ServerConnection>>,
    time: Res<Time<Real>>,
    mut commands: Commands,
) -> Result {
    if *session.get() != Session::Connecting {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("connecting")
        .title_bar(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .show(ctx, |ui| {
            title(ui);
            if let Some(connection) = connection {
                let waited = (time.elapsed() - connection.started).as_secs_f32();
                ui.label(format!("Connecting to {} as {} … {waited:.0} s", connection.addr, connection.name));
            }
            ui.vertical_centered(|ui| {
                if ui.button("Cancel").clicked() {
                    commands.trigger(Disconnect);
                }
            });
        });
    Ok(())
}

/// Where the player stands, and the sides it may ask for: a team (a switch
/// waits for its death), to play, or to watch.
fn side_buttons(
    ui: &mut egui::Ui,
    roster: &arena_client::Roster,
    sides: &mut MessageWriter<arena_client::ChooseSide>,
    pause: &mut PauseMenu,
) {
    use arena_protocol::modes::{Mode, Side, SideChoice, Team};
    if roster.range {
        return;
    }
    let side = roster.local_side();
    ui.label(format!("{} · you are {}", roster.mode.label(), side.label()));
    let mut choices: Vec<(&str, SideChoice)> = Vec::new();
    if roster.mode == Mode::Tdm {
        for team in Team::BOTH {
            if side.team() != Some(team) {
                let label = if team == Team::Red { "Join red" } else { "Join blue" };
                choices.push((label, SideChoice::Team(team)));
            }
        }
    } else if side.watches() && side != Side::Waiting {
        choices.push(("Play", SideChoice::Play));
    }
    if side != Side::Spectating {
        choices.push(("Spectate", SideChoice::Spectate));
    }
    ui.horizontal(|ui| {
        for (label, choice) in choices {
            if ui.button(label).clicked() {
                sides.write(arena_client::ChooseSide(choice));
                pause.open = false;
            }
        }
    });
    if roster.mode == Mode::Tdm && side.plays() {
        ui.label(egui::RichText::new("A switch of team waits for your next death.").weak());
    }
}

fn pause_menu(
    mut contexts: EguiContexts,
    session: Res<State<Session>>,
    mut pause: ResMut<PauseMenu>,
    mut panel: ResMut<NetcodePanel>,
    mut settings_window: ResMut<SettingsWindow>,
    hosted: Option<Res<HostedServer>>,
    connection: Option<Res<ServerConnection>>,
    (roster, mut chat): (Res<arena_client::Roster>, ResMut<arena_client::ChatLog>),
    #[cfg(not(target_arch = "wasm32"))] mut volumes: Option<ResMut<arena_client::voice::VoiceVolumes>>,
    (mut sides, mut votes): (MessageWriter<arena_client::ChooseSide>, MessageWriter<arena_client::VoteAction>),
    mut commands: Commands,
    mut exit: MessageWriter<AppExit>,
) -> Result {
    if *session.get() != Session::InGame || !pause.open {
        return Ok(());
    }
    let hosting = hosted.is_some();
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("paused").title_bar(false).resizable(false).anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0]).show(
        ctx,
        |ui| {
            title(ui);
            if hosted.is_some() && cfg!(target_arch = "wasm32") {
                ui.label("This game runs inside the page: its bots are your opponents.");
                ui.add_space(6.0);
            } else if let Some(hosted) = hosted {
                ui.label("You are hosting. Friends on your network join at:");
                for addr in hosted.0.info.share_addrs.iter().filter(|a| !a.ip().is_loopback()) {
                    ui.monospace(addr.to_string());
                }
                // `--web`: the links to send to friends in a browser.
                // (Loopback's link is the host's own, not one to send.)
                let links: Vec<String> = hosted.0.info.web.as_ref().map(|w| w.links()).unwrap_or_default();
                let links: Vec<String> = links.into_iter().filter(|l| l.starts_with("https://")).collect();
                if !links.is_empty() {
                    ui.add_space(4.0);
                    ui.label("Friends in a browser (Chromium) open, and accept the certificate once:");
                    for link in links {
                        ui.horizontal(|ui| {
                            if ui.small_button("Copy").clicked() {
                                ui.ctx().copy_text(link.clone());
                            }
                            ui.add(egui::Label::new(egui::RichText::new(&link).monospace().small()).truncate());
                        });
                    }
                }
                ui.add_space(6.0);
                crate::host::internet_status(ui, &hosted.0.info.reach.get());
                ui.add_space(6.0);
            } else if let Some(connection) = connection {
                ui.label(format!("Playing on {}", connection.addr));
            }
            side_buttons(ui, &roster, &mut sides, &mut pause);
            if crate::votes::vote_menu(ui, &roster, &mut votes) {
                pause.open = false;
            }
            // Everyone else, each with a mute (chat and voice) and, in the
            // native game, its voice's volume.
            let header = if cfg!(target_arch = "wasm32") {
                "Players (mute in chat)"
            } else {
                "Players (mute in chat and voice)"
            };
            egui::CollapsingHeader::new(header).show(ui, |ui| {
                let others: Vec<_> = roster.names.iter().filter(|(id, _)| Some(**id) != roster.local_id).collect();
                if others.is_empty() {
                    ui.label("Nobody else yet.");
                }
                for (id, name) in others {
                    ui.horizontal(|ui| {
                        let mut muted = chat.is_muted(*id, name);
                        if ui.checkbox(&mut muted, name.as_str()).changed() {
                            chat.set_muted(*id, name, muted);
                        }
                        #[cfg(not(target_arch = "wasm32"))]
                        if let Some(volumes) = volumes.as_mut() {
                            let mut volume = volumes.get(*id, name);
                            let slider = egui::Slider::new(&mut volume, 0.0..=arena_client::voice::MAX_TALKER_VOLUME)
                                .text("voice");
                            if ui.add(slider).changed() {
                                volumes.set(*id, name, volume);
                            }
                        }
                    });
                }
            });
            ui.vertical_centered(|ui| {
                if ui.button("Resume").clicked() {
                    pause.open = false;
                }
                if ui.button("Netcode").clicked() {
                    panel.open = true;
                    pause.open = false;
                }
                if ui.button("Settings").clicked() {
                    settings_window.open = true;
                    pause.open = false;
                }
                let leave = if hosting { "Stop hosting" } else { "Disconnect" };
                if ui.button(leave).clicked() {
                    commands.trigger(Disconnect);
                }
                if cfg!(not(target_arch = "wasm32")) && ui.button("Quit").clicked() {
                    exit.write(AppExit::Success);
                }
            });
        },
    );
    Ok(())
}
