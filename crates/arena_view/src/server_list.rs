//! The main menu's list of games: servers on the local networks (found by
//! broadcast), on the internet (listed by the masters set in Settings), and
//! the player's favourites and recent servers, all asked the same way
//! (server queries, see `arena_client::browser`), in parallel. The list
//! fills as they answer and is asked again every few seconds while the menu
//! shows; a server that stops answering stays listed, greyed, with what it
//! said last. The Internet tab filters (not full, not empty, no password, a mode,
//! ping under a limit) and sorts by any column.
//!
//! The masters also introduce the player to a listed server that does not
//! answer directly (UDP hole punching).
//!
//! The browser runs on its own thread, reading replies as they come: a ping
//! measured once a frame would count the frame too (hundreds of
//! milliseconds under software rendering).

use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arena_client::browser::{BrowsedServer, MasterQuery, ServerBrowser, Status};
use arena_client::{ServerConnection, Session};
use arena_protocol::modes::Mode;
use arena_protocol::query::ServerKind;
use bevy::prelude::*;
use bevy_egui::egui;

use crate::host::HostedServer;
use crate::settings::{Settings, SettingsFile};

/// How often the browser's thread reads the socket.
const WORKER_POLL: Duration = Duration::from_millis(2);
/// How often it publishes the list to the menu.
const WORKER_PUBLISH: Duration = Duration::from_millis(50);
/// How often the list is asked again while the menu shows.
const REFRESH_EVERY: Duration = Duration::from_secs(10);
/// Height of the list before it scrolls, points (five servers).
const LIST_HEIGHT: f32 = 200.0;
/// Width of the game column, points.
const NAME_WIDTH: f32 = 230.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ServerList>()
        .add_systems(Update, (poll_servers.run_if(in_state(Session::Offline)), introduce_through_masters))
        .add_systems(OnEnter(Session::InGame), remember_joined)
        .add_systems(OnEnter(Session::Offline), refresh_on_return);
}

/// The masters set in Settings also introduce the player to a server that
/// stays silent (hole punching, see `arena_client::hole_punch`).
fn introduce_through_masters(settings: Res<Settings>, mut commands: Commands) {
    if settings.is_changed() {
        commands.insert_resource(arena_client::Introducers(settings.masters.clone()));
    }
}

/// Back in the menu: ask everyone at once (the list may be old).
fn refresh_on_return(mut list: ResMut<ServerList>) {
    list.refresh_now = true;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tab {
    Lan,
    Internet,
    Saved,
}

/// A column the Internet tab sorts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SortBy {
    Name,
    Players,
    Ping,
}

/// The Internet tab's filters and order.
#[derive(Clone, Debug)]
struct InternetView {
    not_full: bool,
    not_empty: bool,
    no_password: bool,
    /// Only servers that answer within this, milliseconds (0: any).
    max_ping_ms: u32,
    /// Only games of this mode (none: any).
    mode: Option<Mode>,
    sort: SortBy,
    descending: bool,
}

impl Default for InternetView {
    fn default() -> Self {
        Self {
            not_full: false,
            not_empty: false,
            no_password: false,
            max_ping_ms: 0,
            mode: None,
            sort: SortBy::Ping,
            descending: false,
        }
    }
}

impl InternetView {
    /// Whether `server` passes the filters (one that has not answered yet
    /// is not shown: there is nothing to show of it).
    fn keeps(&self, server: &BrowsedServer) -> bool {
        let Some(info) = &server.info else { return false };
        !(self.not_full && info.players >= info.max_players
            || self.not_empty && info.players == 0
            || self.no_password && info.password
            || self.max_ping_ms > 0 && server.ping_ms.is_none_or(|p| p > f64::from(self.max_ping_ms))
            || self.mode.is_some_and(|mode| server.mode() != Some(mode)))
    }

    /// Sorts `rows` by the chosen column (unknown pings last).
    fn sort(&self, rows: &mut [&BrowsedServer]) {
        rows.sort_by(|a, b| {
            let order = match self.sort {
                SortBy::Name => {
                    let name = |s: &BrowsedServer| s.info.as_ref().map(|i| i.name.to_lowercase()).unwrap_or_default();
                    name(a).cmp(&name(b))
                }
                SortBy::Players => {
                    let players = |s: &BrowsedServer| s.info.as_ref().map_or(0, |i| i.players);
                    players(a).cmp(&players(b))
                }
                SortBy::Ping => {
                    // Unknown pings last, whichever way.
                    let (pa, pb) = (a.ping_ms, b.ping_ms);
                    return match (pa, pb) {
                        (Some(x), Some(y)) if self.descending => y.total_cmp(&x),
                        (Some(x), Some(y)) => x.total_cmp(&y),
                        (Some(_), None) => std::cmp::Ordering::Less,
                        (None, Some(_)) => std::cmp::Ordering::Greater,
                        (None, None) => std::cmp::Ordering::Equal,
                    };
                }
            };
            if self.descending { order.reverse() } else { order }
        });
    }

    /// A clickable column header: click sorts by it, again reverses.
    fn header(&mut self, ui: &mut egui::Ui, label: &str, column: SortBy) {
        let arrow = match (self.sort == column, self.descending) {
            (false, _) => "",
            (true, false) => " ⏶",
            (true, true) => " ⏷",
        };
        let text = egui::RichText::new(format!("{label}{arrow}")).strong();
        if ui.add(egui::Label::new(text).sense(egui::Sense::click())).on_hover_text("sort by this").clicked() {
            if self.sort == column {
                self.descending = !self.descending;
            } else {
                self.sort = column;
                self.descending = column == SortBy::Players;
            }
        }
    }
}

/// A private server the player chose: its password is asked for.
#[derive(Debug, Clone)]
pub(crate) struct PasswordPrompt {
    pub addr: SocketAddr,
    pub name: String,
    pub password: String,
    /// The field has been given the keyboard once.
    pub focused: bool,
}

/// What the menu asks of the browser's thread.
enum Ask {
    ScanLan,
    Query(SocketAddr),
    /// Look these masters' names up (on a thread of their own: DNS may
    /// take seconds) and ask each for its list.
    Masters(Vec<String>),
    /// A master's addresses, looked up.
    Master(SocketAddr),
}

/// What the browser's thread publishes.
#[derive(Default, Clone)]
struct Published {
    servers: Vec<BrowsedServer>,
    masters: Vec<MasterQuery>,
}

/// The browser on its own thread: asked through a channel, publishing what
/// it knows. It stops when the list (and so the sender) is dropped.
struct Worker {
    asks: Sender<Ask>,
    published: Arc<Mutex<Published>>,
}

impl Worker {
    fn start() -> Result<Self, String> {
        if cfg!(target_arch = "wasm32") {
            return Err(
                "A browser page cannot look for games: it has no UDP. Quick play and the range run inside the page."
                    .into(),
            );
        }
        let browser = ServerBrowser::new().map_err(|e| format!("Cannot look for games: {e}"))?;
        let (asks, inbox) = channel();
        let published = Arc::new(Mutex::new(Published::default()));
        let shared = published.clone();
        let lookups = asks.clone();
        std::thread::Builder::new()
            .name("arena-server-browser".into())
            .spawn(move || run_worker(browser, &inbox, &lookups, &shared))
            .map_err(|e| format!("Cannot look for games: {e}"))?;
        Ok(Self { asks, published })
    }

    fn ask(&self, ask: Ask) {
        // The thread only ends when this side is dropped.
        let _ = self.asks.send(ask);
    }

    fn published(&self) -> Published {
        self.published.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

fn run_worker(mut browser: ServerBrowser, inbox: &Receiver<Ask>, lookups: &Sender<Ask>, shared: &Mutex<Published>) {
    let mut published = bevy::platform::time::Instant::now();
    loop {
        loop {
            match inbox.try_recv() {
                Ok(Ask::ScanLan) => browser.scan_lan(),
                Ok(Ask::Query(addr)) => browser.query(addr),
                Ok(Ask::Masters(names)) => {
                    browser.begin_master_refresh();
                    let (answer, ipv6) = (lookups.clone(), browser.has_ipv6());
                    // Off this thread: replies keep being read (and pings
                    // stay true) while a name takes seconds to look up.
                    let _ = std::thread::Builder::new().name("arena-master-lookup".into()).spawn(move || {
                        for name in names {
                            for addr in arena_udp::resolve(&name, arena_master::wire::DEFAULT_PORT, ipv6) {
                                let _ = answer.send(Ask::Master(addr));
                            }
                        }
                    });
                }
                Ok(Ask::Master(addr)) => browser.ask_master(addr),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        browser.poll();
        if published.elapsed() >= WORKER_PUBLISH {
            published = bevy::platform::time::Instant::now();
            if let Ok(mut shared) = shared.lock() {
                shared.servers = browser.servers().cloned().collect();
                shared.masters = browser.masters().cloned().collect();
            }
        }
        std::thread::sleep(WORKER_POLL);
    }
}

#[derive(Resource)]
pub(crate) struct ServerList {
    worker: Result<Worker, String>,
    /// What the worker knew at the start of this frame.
    servers: Vec<BrowsedServer>,
    masters: Vec<MasterQuery>,
    tab: Tab,
    internet: InternetView,
    refreshed_at: Option<Duration>,
    refresh_now: bool,
    pub prompt: Option<PasswordPrompt>,
}

impl Default for ServerList {
    fn default() -> Self {
        Self {
            worker: Worker::start(),
            servers: Vec::new(),
            masters: Vec::new(),
            tab: Tab::Lan,
            internet: InternetView::default(),
            refreshed_at: None,
            refresh_now: false,
            prompt: None,
        }
    }
}

/// The favourites, then the recent servers, once each.
fn saved_addresses(settings: &Settings) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for text in settings.favourites.iter().chain(&settings.recent) {
        if let Ok(addr) = text.parse::<SocketAddr>()
            && !out.contains(&addr)
        {
            out.push(addr);
        }
    }
    out
}

fn poll_servers(mut list: ResMut<ServerList>, settings: Res<Settings>, time: Res<Time<Real>>) {
    let now = time.elapsed();
    let due = list.refresh_now || list.refreshed_at.is_none_or(|t| now.saturating_sub(t) >= REFRESH_EVERY);
    let list = &mut *list;
    let Ok(worker) = &list.worker else { return };
    if due {
        list.refreshed_at = Some(now);
        list.refresh_now = false;
        worker.ask(Ask::ScanLan);
        for addr in saved_addresses(&settings) {
            worker.ask(Ask::Query(addr));
        }
        // Even with none: the masters dropped in Settings are forgotten.
        worker.ask(Ask::Masters(settings.masters.clone()));
    }
    let published = worker.published();
    list.servers = published.servers;
    list.masters = published.masters;
}

/// Remembers the server just joined (not one's own hosted game).
fn remember_joined(
    connection: Option<Res<ServerConnection>>,
    hosted: Option<Res<HostedServer>>,
    mut settings: ResMut<Settings>,
    mut file: ResMut<SettingsFile>,
) {
    let Some(connection) = connection else { return };
    if hosted.is_some() {
        return;
    }
    settings.joined(connection.addr);
    file.save(&settings);
}

/// What the player picked in the list.
pub(crate) struct Pick {
    pub addr: SocketAddr,
    pub name: String,
    pub password: bool,
}

/// Draws the list; returns the server the player chose to join, if any.
pub(crate) fn show(ui: &mut egui::Ui, list: &mut ServerList, settings: &mut Settings) -> Option<Pick> {
    let mut pick = None;
    ui.horizontal(|ui| {
        ui.selectable_value(&mut list.tab, Tab::Lan, "Local network");
        ui.selectable_value(&mut list.tab, Tab::Internet, "Internet");
        ui.selectable_value(&mut list.tab, Tab::Saved, "Favourites & recent");
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if ui.button("⟳ Refresh").clicked() {
                list.refresh_now = true;
            }
        });
    });
    if let Err(e) = &list.worker {
        ui.colored_label(egui::Color32::from_rgb(255, 110, 90), e);
        return None;
    }
    if list.tab == Tab::Internet {
        internet_bar(ui, list, settings);
    }
    let known = &list.servers;
    let rows: Vec<(SocketAddr, Option<&BrowsedServer>)> = match list.tab {
        Tab::Lan => known.iter().filter(|s| s.on_lan && s.info.is_some()).map(|s| (s.addr, Some(s))).collect(),
        Tab::Internet => {
            let mut listed: Vec<&BrowsedServer> =
                known.iter().filter(|s| s.from_master && list.internet.keeps(s)).collect();
            list.internet.sort(&mut listed);
            listed.into_iter().map(|s| (s.addr, Some(s))).collect()
        }
        Tab::Saved => saved_addresses(settings)
            .into_iter()
            .map(|a| (a, known.iter().find(|s| s.addr == a || s.aliases.contains(&a))))
            .collect(),
    };
    let internet_listed = known.iter().filter(|s| s.from_master && s.info.is_some()).count();
    egui::ScrollArea::vertical().max_height(LIST_HEIGHT).show(ui, |ui| {
        if rows.is_empty() {
            ui.add_space(6.0);
            let empty = match list.tab {
                Tab::Lan => "Looking for games on your network… (none yet)".to_string(),
                Tab::Internet if settings.masters.is_empty() => {
                    "No internet master is set: add one in Settings (Internet masters).".to_string()
                }
                Tab::Internet if internet_listed > 0 => {
                    format!("{internet_listed} games listed, none that passes the filters.")
                }
                Tab::Internet => "Asking the masters for games… (none yet)".to_string(),
                Tab::Saved => "Servers you join or star (☆) show here.".to_string(),
            };
            ui.label(egui::RichText::new(empty).weak().italics());
            ui.add_space(6.0);
            return;
        }
        let tab = list.tab;
        let view = &mut list.internet;
        egui::Grid::new("servers").num_columns(7).striped(true).spacing([10.0, 4.0]).show(ui, |ui| {
            if tab == Tab::Internet {
                ui.label("");
                view.header(ui, "Game", SortBy::Name);
                ui.label(egui::RichText::new("Mode").strong());
                view.header(ui, "Players", SortBy::Players);
                view.header(ui, "Ping", SortBy::Ping);
                ui.label("");
                ui.label("");
            } else {
                for (header, hint) in [
                    ("", ""),
                    ("Game", ""),
                    ("Mode", "free-for-all, team deathmatch or duel"),
                    ("Players", "players/slots, bots included"),
                    ("Ping", ""),
                    ("", ""),
                    ("", ""),
                ] {
                    ui.label(egui::RichText::new(header).strong()).on_hover_text(hint);
                }
            }
            ui.end_row();
            for (addr, server) in rows {
                if let Some(p) = row(ui, addr, server, settings) {
                    pick = Some(p);
                }
                ui.end_row();
            }
        });
    });
    pick
}

/// The Internet tab's filters and what the masters said.
fn internet_bar(ui: &mut egui::Ui, list: &mut ServerList, settings: &Settings) {
    let view = &mut list.internet;
    ui.horizontal(|ui| {
        ui.checkbox(&mut view.not_full, "Not full");
        ui.checkbox(&mut view.not_empty, "Not empty");
        ui.checkbox(&mut view.no_password, "No password");
        ui.label("Ping under");
        // 0 is "no limit": shown as "any", not as a limit nothing passes.
        ui.add(
            egui::DragValue::new(&mut view.max_ping_ms)
                .range(0..=1000)
                .speed(5.0)
                .custom_formatter(|ms, _| if ms <= 0.0 { "any".to_string() } else { format!("{ms:.0} ms") })
                .custom_parser(|text| {
                    let text = text.trim().trim_end_matches("ms").trim();
                    if text.eq_ignore_ascii_case("any") { Some(0.0) } else { text.parse::<f64>().ok() }
                }),
        )
        .on_hover_text("Drag or type a limit in milliseconds; 0 or \"any\": any ping");
        egui::ComboBox::from_id_salt("mode filter").selected_text(view.mode.map_or("any mode", |m| m.label())).show_ui(
            ui,
            |ui| {
                ui.selectable_value(&mut view.mode, None, "any mode");
                for mode in Mode::ALL {
                    ui.selectable_value(&mut view.mode, Some(mode), mode.label());
                }
            },
        );
    });
    let said: Vec<String> = list
        .masters
        .iter()
        .map(|m| {
            let how = if m.complete {
                format!("{} listed", m.listed)
            } else if m.answered {
                format!("{} listed so far", m.listed)
            } else if m.done(bevy::platform::time::Instant::now()) {
                "not answering".to_string()
            } else {
                "asking…".to_string()
            };
            format!("{} ({how})", m.addr)
        })
        .collect();
    let line = if settings.masters.is_empty() {
        "Masters: none set (Settings, Internet masters)".to_string()
    } else if said.is_empty() {
        format!("Masters: {} (looking up…)", settings.masters.join(", "))
    } else {
        format!("Masters: {}", said.join(", "))
    };
    ui.label(egui::RichText::new(line).small().weak());
}

/// One server's row; returns it if the player clicked Join.
fn row(ui: &mut egui::Ui, addr: SocketAddr, server: Option<&BrowsedServer>, settings: &mut Settings) -> Option<Pick> {
    let info = server.and_then(|s| s.info.as_ref());
    let status = server.map_or(Status::Asking, |s| s.status);
    // Asked again but not yet answered: still what it said last.
    let answering = info.is_some() && status != Status::NotAnswering;
    let dim = |text: String| {
        if answering { egui::RichText::new(text) } else { egui::RichText::new(text).color(egui::Color32::GRAY) }
    };
    let locked = info.is_some_and(|i| i.password);
    ui.label(egui::RichText::new(if locked { "🔒" } else { "" }).size(18.0)).on_hover_text(if locked {
        "needs a password"
    } else {
        "open"
    });
    let name = info.map_or_else(|| addr.to_string(), |i| i.name.clone());
    let detail = match (info, status) {
        (_, Status::Asking) if info.is_none() => format!("{addr} · asking…"),
        (None, _) => format!("{addr} · not answering"),
        (Some(i), Status::NotAnswering) => format!("{} · {addr} · not answering", i.map),
        (Some(i), _) => {
            format!("{} · {addr}{}", i.map, if i.kind == ServerKind::Listen { " · hosted by a player" } else { "" })
        }
    };
    ui.vertical(|ui| {
        ui.set_width(NAME_WIDTH);
        ui.add(egui::Label::new(dim(name.clone()).strong()).truncate());
        ui.add(egui::Label::new(dim(detail).small()).truncate());
    });
    let mode = server.and_then(|s| s.mode());
    ui.label(dim(mode.map_or("-".into(), |m| m.short().to_string()))).on_hover_text(mode.map_or("", |m| m.label()));
    ui.label(dim(info.map_or("-".into(), |i| {
        format!("{}/{} ({} bot{})", i.players, i.max_players, i.bots, if i.bots == 1 { "" } else { "s" })
    })));
    let ping = server.and_then(|s| s.ping_ms).filter(|_| answering);
    ui.label(dim(ping.map_or("-".into(), |p| format!("{p:.0} ms"))));
    let compatible = server.is_some_and(|s| s.compatible());
    let full = info.is_some_and(|i| i.players >= i.max_players);
    let joinable = answering && compatible && !full;
    let why_not = if !answering {
        "not answering"
    } else if !compatible {
        "another version of Arena"
    } else if full {
        "full"
    } else {
        "join this game"
    };
    let join =
        ui.add_enabled(joinable, egui::Button::new("Join")).on_hover_text(why_not).on_disabled_hover_text(why_not);
    let starred = settings.is_favourite(addr);
    if ui
        .selectable_label(starred, if starred { "★" } else { "☆" })
        .on_hover_text(if starred { "remove from favourites" } else { "add to favourites" })
        .clicked()
    {
        settings.toggle_favourite(addr);
    }
    join.clicked().then_some(Pick { addr, name, password: locked })
}

/// The password dialog of a private server picked in the list; returns the
/// password when the player confirms.
pub(crate) fn password_prompt(ctx: &egui::Context, list: &mut ServerList) -> Option<(SocketAddr, String)> {
    let prompt = list.prompt.as_mut()?;
    let mut result = None;
    let mut cancel = false;
    egui::Window::new("password")
        .title_bar(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .show(ctx, |ui| {
            ui.label(format!("\"{}\" is private. Its password:", prompt.name));
            let field = ui.add(
                egui::TextEdit::singleline(&mut prompt.password)
                    .password(true)
                    .char_limit(arena_protocol::key::MAX_PASSWORD_BYTES),
            );
            if !prompt.focused {
                field.request_focus();
                prompt.focused = true;
            }
            // Enter joins and Escape cancels while the dialog is open.
            let enter = ui.input(|i| i.key_pressed(egui::Key::Enter));
            cancel = ui.input(|i| i.key_pressed(egui::Key::Escape));
            ui.horizontal(|ui| {
                if ui.button("Join").clicked() || enter {
                    result = Some((prompt.addr, prompt.password.clone()));
                }
                if ui.button("Cancel").clicked() {
                    cancel = true;
                }
            });
        });
    if result.is_some() || cancel {
        list.prompt = None;
    }
    result
}
