//! The console (the key left of 1, `` ` `` / `~`): a line editor with
//! history (Up/Down) and Tab completion of names and values, over a
//! scrollback of the game's log lines. It speaks `arena_protocol::console`
//! over the game's own variables: the paper's netcode variables
//! (`arena_client::console`: the same settings the netcode panel and the
//! flags set, saved in the settings file), `net_graph`, `fps_max`,
//! `sensitivity`, `name`, `rcon_password`; and commands: `bind`, `unbind`,
//! `connect`, `disconnect`, `reconnect`, `status`, `quit`, `say`, `rcon`.
//! `autoexec.cfg` in the configuration directory runs at start; `exec`
//! reads scripts from there only.
//!
//! Written on bevy_egui rather than taken from `bevy_console`: its release
//! for Bevy 0.19 (0.18) needs bevy_egui 0.41 beside our 0.42 (two egui
//! stacks in one window), and its clap commands are typed per command,
//! where the server's standard input and the remote console need the same
//! language without Bevy: one engine for all three.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use arena_client::{ConnectTo, Disconnect, NetStats, NetcodeSettings, Roster, SayChat, ServerConnection, VoteAction};
use arena_protocol::console::{self, Command, Host, Outcome, Value, Var};
use arena_protocol::key::Password;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::console_vars::{SAVED, VARS};
use crate::game_log::GameLog;
use crate::settings::{Bind, FPS_MAX_RANGE, Input, MAX_BINDS, SENSITIVITY_RANGE, Settings, SettingsFile, check_bind};
use crate::vocabulary::{AutoAim, ConsoleWindow, Ghosts, NetGraph};

/// Lines of scrollback kept.
const SCROLLBACK_LINES: usize = 1000;
/// Lines typed kept for Up/Down.
pub(crate) const HISTORY_LINES: usize = 64;
/// Lines waiting to run (binds pressed, `autoexec`) at most.
const PENDING_LINES: usize = 64;
/// Largest script `exec` reads, bytes.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024;
/// Remote console commands in flight at most.
const RCON_IN_FLIGHT: usize = 2;
/// How long an `rcon` command waits for its answer.
const RCON_TIMEOUT: Duration = Duration::from_secs(3);
/// How long after the last change the saved variables are written, so that
/// dragging a slider does not write the file each frame.
const SAVE_AFTER_S: f64 = 0.5;

const COMMANDS: [Command; 15] = [
    Command {
        name: "bind",
        usage: "bind KEY [\"LINE\"]",
        help: "runs a console line when KEY is pressed; alone, says it",
    },
    Command { name: "unbind", usage: "unbind KEY", help: "takes a key's console line away" },
    Command { name: "binds", usage: "binds", help: "every key bound to a console line" },
    Command { name: "connect", usage: "connect ADDRESS [PASSWORD]", help: "joins a server (host, host:port)" },
    Command { name: "disconnect", usage: "disconnect", help: "leaves the server" },
    Command { name: "reconnect", usage: "reconnect", help: "leaves and joins the same server again" },
    Command { name: "status", usage: "status", help: "the server, your round trip, who plays" },
    Command { name: "quit", usage: "quit", help: "leaves the game" },
    Command { name: "say", usage: "say TEXT", help: "a chat line to everyone" },
    Command { name: "say_team", usage: "say_team TEXT", help: "a chat line to your team" },
    Command {
        name: "callvote",
        usage: "callvote map NAME | mode ffa|tdm|duel | kick NAME | restart",
        help: "asks the players to vote (a majority of those playing within 20 s)",
    },
    Command { name: "vote", usage: "vote yes|no", help: "answers the vote open (the keys F7 and F8 too)" },
    Command {
        name: "+voiprecord",
        usage: "+voiprecord",
        help: "talks (as the push-to-talk key held) until -voiprecord; bound to a key, until it comes up",
    },
    Command { name: "-voiprecord", usage: "-voiprecord", help: "stops talking" },
    Command {
        name: "rcon",
        usage: "rcon COMMAND",
        help: "runs COMMAND on the server's console (set rcon_password first)",
    },
];

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Console>()
        .init_resource::<ConsoleWindow>()
        .init_resource::<GameLog>()
        .add_systems(Startup, run_autoexec)
        .add_systems(Update, (toggle, press_binds, run_pending, collect, keep_saved).chain());
}

/// What the console holds: the line being typed, history, scrollback,
/// completion candidates, lines waiting to run, the rcon password (never
/// saved), and answers on their way.
#[derive(Resource, Default)]
pub(crate) struct Console {
    pub(crate) input: String,
    pub(crate) history: VecDeque<String>,
    /// Where Up/Down is in the history.
    pub(crate) browsing: Option<usize>,
    pub(crate) lines: VecDeque<String>,
    /// What Tab offered last (shown under the line until it changes).
    pub(crate) candidates: Vec<String>,
    pending: VecDeque<String>,
    pub(crate) focused: bool,
    rcon_password: String,
    rcon_address: String,
    /// The netcode variables the command line set: not saved over.
    flags: Vec<&'static str>,
    rcon: Vec<Mutex<std::sync::mpsc::Receiver<String>>>,
    /// Seconds (real) of the last change of a saved variable not yet written.
    dirty_since: Option<f64>,
}

impl Console {
    /// Runs `line` at the next frame (a bind, `autoexec`, a test).
    pub(crate) fn submit(&mut self, line: impl Into<String>) {
        if self.pending.len() < PENDING_LINES {
            self.pending.push_back(line.into());
        } else {
            self.say("console: too many lines waiting; one dropped");
        }
    }

    pub(crate) fn say(&mut self, line: impl Into<String>) {
        for line in line.into().lines() {
            if self.lines.len() >= SCROLLBACK_LINES {
                self.lines.pop_front();
            }
            self.lines.push_back(line.to_string());
        }
    }

    /// The netcode variables the command line set, which the saved ones do not replace.
    pub(crate) fn with_flags(flags: Vec<&'static str>) -> Self {
        Self { flags, ..Self::default() }
    }
}

/// The saved netcode variables onto `netcode`, but those the command line
/// set (`flags`): the file holds what the player last chose.
pub(crate) fn apply_saved(settings: &Settings, netcode: &mut NetcodeSettings, flags: &[&'static str]) {
    for (name, value) in &settings.cvars {
        if flags.contains(&name.as_str()) {
            continue;
        }
        if let Some(var) = VARS.iter().find(|v| v.name == name)
            && let Ok(value) = var.parse(value)
        {
            let _ = arena_client::console::set(netcode, var, &value);
        }
    }
}

/// What the console's lines reach in the game.
#[derive(SystemParam)]
pub(crate) struct Game<'w> {
    netcode: ResMut<'w, NetcodeSettings>,
    settings: ResMut<'w, Settings>,
    pub(crate) file: ResMut<'w, SettingsFile>,
    net_graph: ResMut<'w, NetGraph>,
    ghosts: ResMut<'w, Ghosts>,
    auto_aim: ResMut<'w, AutoAim>,
    connection: Option<Res<'w, ServerConnection>>,
    roster: Option<Res<'w, Roster>>,
    stats: Option<Res<'w, NetStats>>,
}

/// What a line asks of the game beyond its resources.
pub(crate) enum Action {
    Connect { addr: std::net::SocketAddr, password: Password, spectate: bool },
    Disconnect,
    Quit,
    Say { text: String, team: bool },
    Vote(VoteAction),
    Talk(bool),
    Rcon { addr: std::net::SocketAddr, password: String, command: String },
}

/// The console's host: the game's resources, the console's own state, and
/// the actions the line asked for.
pub(crate) struct ViewHost<'a, 'w> {
    pub(crate) game: &'a mut Game<'w>,
    pub(crate) rcon_password: &'a mut String,
    pub(crate) rcon_address: &'a mut String,
    pub(crate) actions: Vec<Action>,
    pub(crate) dir: Option<PathBuf>,
}

impl Host for ViewHost<'_, '_> {
    fn vars(&self) -> &[Var] {
        &VARS
    }

    fn commands(&self) -> &[Command] {
        &COMMANDS
    }

    fn get(&self, name: &str) -> Option<String> {
        if let Some(value) = arena_client::console::get(&self.game.netcode, name) {
            return Some(value);
        }
        Some(match name {
            "net_graph" => match *self.game.net_graph {
                NetGraph::Off => "0".into(),
                NetGraph::Compact => "1".into(),
                NetGraph::Full if self.game.ghosts.0 => "3".into(),
                NetGraph::Full => "2".into(),
            },
            "cl_autoaim" => u8::from(self.game.auto_aim.0).to_string(),
            "fps_max" => self.game.settings.fps_max.to_string(),
            "sensitivity" => format!("{}", self.game.settings.mouse_sensitivity),
            "name" => self.game.settings.name.clone(),
            "rcon_password" => if self.rcon_password.is_empty() { "" } else { "(set)" }.into(),
            "rcon_address" => self.rcon_address.clone(),
            _ => return None,
        })
    }

    fn set(&mut self, var: &Var, value: Value) -> Result<(), String> {
        if arena_client::console::set(&mut self.game.netcode, var, &value)? {
            return Ok(());
        }
        let v = value.number();
        match var.name {
            "net_graph" => {
                *self.game.net_graph = [NetGraph::Off, NetGraph::Compact, NetGraph::Full, NetGraph::Full][v as usize];
                self.game.ghosts.0 = v >= 3.0;
            }
            "cl_autoaim" => self.game.auto_aim.0 = v != 0.0,
            "fps_max" => {
                let fps = v as u32;
                if fps != 0 && !FPS_MAX_RANGE.contains(&fps) {
                    return Err(format!("fps_max must be 0 or {FPS_MAX_RANGE:?}, not {fps}"));
                }
                self.game.settings.fps_max = fps;
                self.game.file.save(&self.game.settings);
            }
            "sensitivity" => {
                self.game.settings.mouse_sensitivity =
                    (v as f32).clamp(*SENSITIVITY_RANGE.start(), *SENSITIVITY_RANGE.end());
                self.game.file.save(&self.game.settings);
            }
            "name" => {
                let name = arena_protocol::names::clean_name(value.text());
                if name.is_empty() {
                    return Err("a name needs a letter or a digit".into());
                }
                self.game.settings.name = name;
                self.game.file.save(&self.game.settings);
            }
            "rcon_password" => *self.rcon_password = value.text().trim().to_string(),
            "rcon_address" => *self.rcon_address = value.text().trim().to_string(),
            _ => return Err(format!("{} cannot be set", var.name)),
        }
        Ok(())
    }

    fn command(&mut self, name: &str, args: &[String]) -> Outcome {
        match name {
            "bind" => self.bind(args),
            "unbind" => {
                let Some(key) = args.first() else { return Outcome::Refused("unbind KEY".into()) };
                let Some(input) = Input::parse(key) else {
                    return Outcome::Refused(format!("\"{key}\" is not a key this game knows"));
                };
                let before = self.game.settings.binds.len();
                self.game.settings.binds.retain(|b| Input::parse(&b.key) != Some(input));
                if self.game.settings.binds.len() == before {
                    return Outcome::Said(vec![format!("{} runs no console line", input.name())]);
                }
                self.game.file.save(&self.game.settings);
                Outcome::Said(Vec::new())
            }
            "binds" => Outcome::Said(if self.game.settings.binds.is_empty() {
                vec!["no keys are bound to console lines".into()]
            } else {
                self.game.settings.binds.iter().map(|b| format!("{} \"{}\"", b.key, b.line)).collect()
            }),
            "connect" => {
                let Some(text) = args.first() else { return Outcome::Refused("connect ADDRESS [PASSWORD]".into()) };
                // In a page, the address is a server's WebTransport endpoint
                // (its `web:` link's ADDRESS:PORT): the join opens a session to it.
                let addr = match arena_client::resolve_server_addr(text) {
                    Ok(addr) => addr,
                    Err(e) => return Outcome::Refused(format!("connect: {e}")),
                };
                let password = match Password::new(args.get(1).map_or("", String::as_str)) {
                    Ok(password) => password,
                    Err(e) => return Outcome::Refused(format!("connect: {e}")),
                };
                self.actions.push(Action::Connect { addr, password, spectate: false });
                Outcome::Said(vec![format!("connecting to {addr}")])
            }
            "disconnect" => {
                if self.game.connection.is_none() {
                    return Outcome::Said(vec!["not connected".into()]);
                }
                self.actions.push(Action::Disconnect);
                Outcome::Said(Vec::new())
            }
            "reconnect" => match &self.game.connection {
                Some(c) => {
                    let (addr, password, spectate) = (c.addr, c.password.clone(), c.spectate);
                    self.actions.push(Action::Connect { addr, password, spectate });
                    Outcome::Said(vec![format!("reconnecting to {addr}")])
                }
                None => Outcome::Refused("reconnect: not connected to a server".into()),
            },
            "status" => Outcome::Said(self.status()),
            "quit" => {
                self.actions.push(Action::Quit);
                Outcome::Said(Vec::new())
            }
            "say" | "say_team" => {
                if self.game.connection.is_none() {
                    return Outcome::Refused(format!("{name}: not connected to a server"));
                }
                self.actions.push(Action::Say { text: args.join(" "), team: name == "say_team" });
                Outcome::Said(Vec::new())
            }
            "rcon" => self.rcon(args),
            "+voiprecord" | "-voiprecord" => {
                self.actions.push(Action::Talk(name.starts_with('+')));
                Outcome::Said(Vec::new())
            }
            "callvote" | "vote" if self.game.connection.is_none() => {
                Outcome::Refused(format!("{name}: not connected to a server"))
            }
            "callvote" => match self.game.roster.as_deref().map(|r| arena_client::parse_vote_call(args, r)) {
                Some(Ok(call)) => {
                    self.actions.push(Action::Vote(VoteAction::Call(call)));
                    Outcome::Said(Vec::new())
                }
                Some(Err(usage)) => Outcome::Refused(usage),
                None => Outcome::Refused("callvote: not in a game".into()),
            },
            "vote" => match args.first().map(|a| a.to_ascii_lowercase()).as_deref() {
                Some("yes" | "y" | "1") => {
                    self.actions.push(Action::Vote(VoteAction::Ballot(true)));
                    Outcome::Said(Vec::new())
                }
                Some("no" | "n" | "0") => {
                    self.actions.push(Action::Vote(VoteAction::Ballot(false)));
                    Outcome::Said(Vec::new())
                }
                _ => Outcome::Refused("vote yes|no".into()),
            },
            _ => Outcome::Refused(format!("unknown: {name}")),
        }
    }

    fn script(&self, name: &str) -> Result<String, String> {
        read_script(self.dir.as_deref(), name)
    }

    fn values(&self, command: &str) -> Vec<String> {
        match command {
            "bind" | "unbind" => crate::settings::KEY_NAMES.iter().map(|(n, _)| (*n).to_string()).collect(),
            "connect" => self.game.settings.recent.clone(),
            "exec" => scripts_in(self.dir.as_deref()),
            "rcon" => {
                ["status", "kick", "ban", "say", "map", "changelevel", "mode", "restart"].map(String::from).to_vec()
            }
            "callvote" => ["map", "mode", "kick", "restart"].map(String::from).to_vec(),
            "vote" => ["yes", "no"].map(String::from).to_vec(),
            _ => Vec::new(),
        }
    }
}

impl ViewHost<'_, '_> {
    fn bind(&mut self, args: &[String]) -> Outcome {
        let Some(key) = args.first() else { return Outcome::Refused("bind KEY [\"LINE\"]".into()) };
        let Some(input) = Input::parse(key) else {
            return Outcome::Refused(format!("\"{key}\" is not a key this game knows"));
        };
        let binds = &mut self.game.settings.binds;
        if args.len() == 1 {
            return Outcome::Said(vec![match binds.iter().find(|b| Input::parse(&b.key) == Some(input)) {
                Some(b) => format!("{} \"{}\"", b.key, b.line),
                None => format!("{} runs no console line", input.name()),
            }]);
        }
        let line = args[1..].join(" ");
        if let Err(why) = check_bind(key, &line) {
            return Outcome::Refused(format!("bind: {why}"));
        }
        binds.retain(|b| Input::parse(&b.key) != Some(input));
        if binds.len() >= MAX_BINDS {
            return Outcome::Refused(format!("bind: at most {MAX_BINDS} keys run console lines"));
        }
        binds.push(Bind { key: input.name(), line });
        self.game.file.save(&self.game.settings);
        Outcome::Said(Vec::new())
    }

    fn status(&self) -> Vec<String> {
        let Some(connection) = &self.game.connection else { return vec!["not connected".into()] };
        let mut lines = vec![format!("server: {} ({})", connection.addr, connection.name)];
        if let Some(stats) = &self.game.stats {
            lines.push(format!(
                "round trip {:.0} ms, loss {:.1}%, down {:.1} kbit/s, up {:.1} kbit/s",
                stats.rtt_ms,
                stats.packet_loss * 100.0,
                stats.bytes_in_per_s * 8.0 / 1000.0,
                stats.bytes_out_per_s * 8.0 / 1000.0
            ));
        }
        if let Some(roster) = &self.game.roster {
            lines.push(format!(
                "map {}, {} ticks and {} snapshots a second, mode {}",
                roster.map_name,
                roster.tick_hz,
                roster.snapshot_hz,
                roster.mode.short()
            ));
            for (id, name) in &roster.names {
                let you = if roster.local_id == Some(*id) { " (you)" } else { "" };
                let bot = if roster.bots.contains(id) { " (bot)" } else { "" };
                lines.push(format!("  #{} {name}{bot}{you} {}", id.0, roster.side(*id).label()));
            }
        }
        lines
    }

    fn rcon(&mut self, args: &[String]) -> Outcome {
        if args.is_empty() {
            return Outcome::Refused("rcon COMMAND".into());
        }
        if self.rcon_password.is_empty() {
            return Outcome::Refused("rcon: set rcon_password first".into());
        }
        let addr = if self.rcon_address.is_empty() {
            match &self.game.connection {
                Some(c) => c.addr,
                None => return Outcome::Refused("rcon: not connected; set rcon_address to reach a server".into()),
            }
        } else {
            match arena_client::resolve_server_addr(self.rcon_address) {
                Ok(addr) => addr,
                Err(e) => return Outcome::Refused(format!("rcon_address: {e}")),
            }
        };
        // The line was split here already: each word goes quoted as it
        // needs, so a name with `;` in it stays one word on the server.
        let command = match arena_protocol::console::join_words(args) {
            Ok(command) => command,
            Err(e) => return Outcome::Refused(format!("rcon: {e}")),
        };
        self.actions.push(Action::Rcon { addr, password: self.rcon_password.clone(), command });
        Outcome::Said(Vec::new())
    }
}

/// A script's text from the configuration directory: a plain file name
/// (".cfg" added when it has no extension), at most [`MAX_SCRIPT_BYTES`].
fn read_script(dir: Option<&std::path::Path>, name: &str) -> Result<String, String> {
    let Some(dir) = dir else { return Err("no configuration directory".into()) };
    let plain = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.');
    if !plain {
        return Err("a script is a plain file name in the configuration directory".into());
    }
    let file = if name.contains('.') { name.to_string() } else { format!("{name}.cfg") };
    let path = dir.join(file);
    let size = crate::storage::len(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if size > MAX_SCRIPT_BYTES {
        return Err(format!("{} is {size} bytes (at most {MAX_SCRIPT_BYTES})", path.display()));
    }
    crate::storage::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The scripts in the configuration directory, for completion.
fn scripts_in(dir: Option<&std::path::Path>) -> Vec<String> {
    let Some(Ok(names)) = dir.map(crate::storage::file_names) else { return Vec::new() };
    names.into_iter().filter(|n| n.ends_with(".cfg")).take(console::MAX_CANDIDATES).collect()
}

pub(crate) fn config_dir(file: &SettingsFile) -> Option<PathBuf> {
    file.path.as_ref().and_then(|p| p.parent()).map(std::path::Path::to_path_buf)
}

/// `autoexec.cfg` in the configuration directory, at start, if there is one.
fn run_autoexec(mut console: ResMut<Console>, file: Res<SettingsFile>) {
    if config_dir(&file).is_some_and(|d| crate::storage::is_file(&d.join("autoexec.cfg"))) {
        console.submit("exec autoexec.cfg");
    }
}

/// The console key opens and closes the console; Esc closes it.
fn toggle(keys: Res<ButtonInput<KeyCode>>, mut window: ResMut<ConsoleWindow>, mut console: ResMut<Console>) {
    if keys.just_pressed(KeyCode::Backquote) || (window.open && keys.just_pressed(KeyCode::Escape)) {
        window.open = !window.open && !keys.just_pressed(KeyCode::Escape);
        console.focused = false;
        // The key typed itself into the line on its way out.
        console.input.retain(|c| c != '`' && c != '~');
    }
}

/// A bound key runs its line, unless something is being typed.
fn press_binds(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    window: Res<ConsoleWindow>,
    chat: Res<crate::vocabulary::ChatInput>,
    settings: Res<Settings>,
    mut console: ResMut<Console>,
    mut plus_held: Local<Vec<String>>,
) {
    // Quake's `+` lines: the `-` line runs when the key comes up, even with
    // a chat line or the console open since (a `+voiprecord` must end),
    // and only for a key whose `+` line ran.
    let released: Vec<(String, String)> = settings
        .binds
        .iter()
        .filter(|b| b.line.starts_with('+') && plus_held.contains(&b.key))
        .filter(|b| Input::parse(&b.key).is_some_and(|i| i.just_released(&keys, &mouse)))
        .map(|b| (b.key.clone(), format!("-{}", &b.line[1..])))
        .collect();
    for (key, line) in released {
        plus_held.retain(|k| *k != key);
        console.submit(line);
    }
    if window.open || chat.open {
        return;
    }
    let pressed: Vec<(String, String)> = settings
        .binds
        .iter()
        .filter(|b| Input::parse(&b.key).is_some_and(|i| i.just_pressed(&keys, &mouse)))
        .map(|b| (b.key.clone(), b.line.clone()))
        .collect();
    for (key, line) in pressed {
        if line.starts_with('+') && !plus_held.contains(&key) && plus_held.len() < MAX_BINDS {
            plus_held.push(key);
        }
        console.submit(line);
    }
}

/// Runs the lines waiting, then does what they asked.
fn run_pending(
    mut console: ResMut<Console>,
    mut game: Game,
    mut commands: Commands,
    mut say: MessageWriter<SayChat>,
    mut votes: MessageWriter<VoteAction>,
    mut exit: MessageWriter<AppExit>,
    profile: Option<Res<crate::vocabulary::PlayerProfile>>,
) {
    if console.pending.is_empty() {
        return;
    }
    let console = &mut *console;
    let dir = config_dir(&game.file);
    let mut host = ViewHost {
        game: &mut game,
        rcon_password: &mut console.rcon_password,
        rcon_address: &mut console.rcon_address,
        actions: Vec::new(),
        dir,
    };
    let mut said = Vec::new();
    while let Some(line) = console.pending.pop_front() {
        said.extend(console::run(&line, &mut host).lines());
    }
    let actions = std::mem::take(&mut host.actions);
    let name = profile.map_or_else(|| game.settings.name.clone(), |p| p.name.clone());
    for line in said {
        console.say(line);
    }
    for action in actions {
        match action {
            Action::Connect { addr, password, spectate } => {
                if game.connection.is_some() {
                    commands.trigger(Disconnect);
                }
                commands.trigger(ConnectTo { addr, name: name.clone(), password, spectate });
            }
            Action::Disconnect => {
                commands.trigger(Disconnect);
            }
            Action::Quit => {
                exit.write(AppExit::Success);
            }
            Action::Say { text, team } => {
                say.write(SayChat { text, team });
            }
            Action::Talk(held) => {
                commands.insert_resource(crate::vocabulary::ConsoleTalk(held));
            }
            Action::Vote(action) => {
                votes.write(action);
            }
            Action::Rcon { addr, password, command } => {
                if cfg!(target_arch = "wasm32") {
                    console.say("rcon: a browser page has no UDP to reach a server's remote console");
                    continue;
                }
                if console.rcon.len() >= RCON_IN_FLIGHT {
                    console.say("rcon: wait for the answers to the last commands");
                    continue;
                }
                let (tx, rx) = std::sync::mpsc::channel();
                let spawned = std::thread::Builder::new().name("rcon".into()).spawn(move || {
                    let answer = match arena_client::remote_console::run(addr, &password, &command, RCON_TIMEOUT) {
                        Ok(text) => text,
                        Err(e) => format!("rcon: {e}"),
                    };
                    let _ = tx.send(answer);
                });
                match spawned {
                    Ok(_) => console.rcon.push(Mutex::new(rx)),
                    Err(e) => console.say(format!("rcon: cannot start: {e}")),
                }
            }
        }
    }
}

/// The log's new lines and rcon's answers into the scrollback.
fn collect(mut console: ResMut<Console>, log: Res<GameLog>) {
    for line in log.take_lines() {
        console.say(line);
    }
    let mut answers = Vec::new();
    console.rcon.retain(|rx| {
        let Ok(rx) = rx.lock() else { return false };
        match rx.try_recv() {
            Ok(answer) => {
                answers.push(answer);
                false
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => true,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => false,
        }
    });
    for answer in answers {
        console.say(answer);
    }
}

/// The saved netcode variables into the settings file, a moment after the
/// console or the netcode panel last changed one (those the command line
/// set keep the file's value).
fn keep_saved(
    mut console: ResMut<Console>,
    netcode: Res<NetcodeSettings>,
    mut settings: ResMut<Settings>,
    mut file: ResMut<SettingsFile>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed_secs_f64();
    if netcode.is_changed() && !netcode.is_added() {
        let mut saved = settings.cvars.clone();
        for name in SAVED {
            if console.flags.contains(&name) {
                continue;
            }
            if let Some(value) = arena_client::console::get(&netcode, name) {
                saved.insert(name.to_string(), value);
            }
        }
        if saved != settings.cvars {
            settings.cvars = saved;
            console.dirty_since = Some(now);
        }
    }
    if console.dirty_since.is_some_and(|at| now - at >= SAVE_AFTER_S) {
        console.dirty_since = None;
        file.save(&settings);
    }
}
