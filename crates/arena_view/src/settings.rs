//! Player settings: name, mouse, field of view, volume, graphics quality, key bindings,
//! the console's saved variables and binds,
//! saved in the user's configuration directory and loaded at start. A file
//! that does not parse is reported, kept aside as `settings.ron.bad`, and
//! replaced with the defaults; the game never fails to start because of it.

use std::path::{Path, PathBuf};

use arena_protocol::console;

use crate::console_vars::check_saved;
use crate::storage;

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// Where the settings live: `$ARENA_CONFIG_DIR`, else the platform's
/// configuration directory (`$XDG_CONFIG_HOME` or `~/.config` on Linux,
/// `%APPDATA%` on Windows, `~/Library/Application Support` on macOS), in `arena/`;
/// in a browser, the page's storage (`storage.rs`).
pub(crate) fn config_dir() -> Option<PathBuf> {
    crate::storage::web_or(native_config_dir)
}

fn native_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ARENA_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        home.map(|h| h.join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.map(|h| h.join(".config")))
    };
    base.map(|b| b.join("arena"))
}

pub(crate) fn settings_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("settings.ron"))
}

/// Something a player can press.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Input {
    Key(KeyCode),
    Mouse(MouseButton),
}

impl Input {
    pub(crate) fn pressed(self, keys: &ButtonInput<KeyCode>, mouse: &ButtonInput<MouseButton>) -> bool {
        match self {
            Input::Key(k) => keys.pressed(k),
            Input::Mouse(b) => mouse.pressed(b),
        }
    }

    pub(crate) fn just_pressed(self, keys: &ButtonInput<KeyCode>, mouse: &ButtonInput<MouseButton>) -> bool {
        match self {
            Input::Key(k) => keys.just_pressed(k),
            Input::Mouse(b) => mouse.just_pressed(b),
        }
    }

    pub(crate) fn just_released(self, keys: &ButtonInput<KeyCode>, mouse: &ButtonInput<MouseButton>) -> bool {
        match self {
            Input::Key(k) => keys.just_released(k),
            Input::Mouse(b) => mouse.just_released(b),
        }
    }

    /// The name used in the settings file and the menus.
    pub(crate) fn name(self) -> String {
        match self {
            Input::Mouse(MouseButton::Left) => "Mouse Left".into(),
            Input::Mouse(MouseButton::Right) => "Mouse Right".into(),
            Input::Mouse(MouseButton::Middle) => "Mouse Middle".into(),
            Input::Mouse(MouseButton::Back) => "Mouse Back".into(),
            Input::Mouse(MouseButton::Forward) => "Mouse Forward".into(),
            Input::Mouse(MouseButton::Other(n)) => format!("Mouse {n}"),
            Input::Key(key) => KEY_NAMES
                .iter()
                .find(|(_, k)| *k == key)
                .map(|(n, _)| (*n).to_string())
                .unwrap_or_else(|| format!("{key:?}")),
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Input> {
        let name = name.trim();
        match name {
            "Mouse Left" => return Some(Input::Mouse(MouseButton::Left)),
            "Mouse Right" => return Some(Input::Mouse(MouseButton::Right)),
            "Mouse Middle" => return Some(Input::Mouse(MouseButton::Middle)),
            "Mouse Back" => return Some(Input::Mouse(MouseButton::Back)),
            "Mouse Forward" => return Some(Input::Mouse(MouseButton::Forward)),
            _ => {}
        }
        KEY_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, k)| Input::Key(*k))
    }
}

/// Keys that can be bound, by name.
pub(crate) const KEY_NAMES: &[(&str, KeyCode)] = &[
    ("A", KeyCode::KeyA),
    ("B", KeyCode::KeyB),
    ("C", KeyCode::KeyC),
    ("D", KeyCode::KeyD),
    ("E", KeyCode::KeyE),
    ("F", KeyCode::KeyF),
    ("G", KeyCode::KeyG),
    ("H", KeyCode::KeyH),
    ("I", KeyCode::KeyI),
    ("J", KeyCode::KeyJ),
    ("K", KeyCode::KeyK),
    ("L", KeyCode::KeyL),
    ("M", KeyCode::KeyM),
    ("N", KeyCode::KeyN),
    ("O", KeyCode::KeyO),
    ("P", KeyCode::KeyP),
    ("Q", KeyCode::KeyQ),
    ("R", KeyCode::KeyR),
    ("S", KeyCode::KeyS),
    ("T", KeyCode::KeyT),
    ("U", KeyCode::KeyU),
    ("V", KeyCode::KeyV),
    ("W", KeyCode::KeyW),
    ("X", KeyCode::KeyX),
    ("Y", KeyCode::KeyY),
    ("Z", KeyCode::KeyZ),
    ("0", KeyCode::Digit0),
    ("1", KeyCode::Digit1),
    ("2", KeyCode::Digit2),
    ("3", KeyCode::Digit3),
    ("4", KeyCode::Digit4),
    ("5", KeyCode::Digit5),
    ("6", KeyCode::Digit6),
    ("7", KeyCode::Digit7),
    ("8", KeyCode::Digit8),
    ("9", KeyCode::Digit9),
    ("F1", KeyCode::F1),
    ("F2", KeyCode::F2),
    ("F3", KeyCode::F3),
    ("F4", KeyCode::F4),
    ("F5", KeyCode::F5),
    ("F6", KeyCode::F6),
    ("F7", KeyCode::F7),
    ("F8", KeyCode::F8),
    ("F9", KeyCode::F9),
    ("F10", KeyCode::F10),
    ("F11", KeyCode::F11),
    ("F12", KeyCode::F12),
    ("Space", KeyCode::Space),
    ("Tab", KeyCode::Tab),
    ("Enter", KeyCode::Enter),
    ("Backspace", KeyCode::Backspace),
    ("Left Shift", KeyCode::ShiftLeft),
    ("Right Shift", KeyCode::ShiftRight),
    ("Left Ctrl", KeyCode::ControlLeft),
    ("Right Ctrl", KeyCode::ControlRight),
    ("Left Alt", KeyCode::AltLeft),
    ("Right Alt", KeyCode::AltRight),
    ("Up", KeyCode::ArrowUp),
    ("Down", KeyCode::ArrowDown),
    ("Left", KeyCode::ArrowLeft),
    ("Right", KeyCode::ArrowRight),
    ("Caps Lock", KeyCode::CapsLock),
    ("Backquote", KeyCode::Backquote),
    ("Minus", KeyCode::Minus),
    ("Equal", KeyCode::Equal),
    ("Comma", KeyCode::Comma),
    ("Period", KeyCode::Period),
    ("Slash", KeyCode::Slash),
    ("Semicolon", KeyCode::Semicolon),
    ("Quote", KeyCode::Quote),
    ("Backslash", KeyCode::Backslash),
    ("Left Bracket", KeyCode::BracketLeft),
    ("Right Bracket", KeyCode::BracketRight),
];

/// What the player can do, each bound to an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    Forward,
    Back,
    Left,
    Right,
    Jump,
    Crouch,
    Fire,
    Reload,
    Rifle,
    Launcher,
    LastWeapon,
    Scoreboard,
    NetcodePanel,
    NetGraph,
    Ghosts,
    PushToTalk,
}

impl Action {
    pub(crate) const ALL: [Action; 16] = [
        Action::Forward,
        Action::Back,
        Action::Left,
        Action::Right,
        Action::Jump,
        Action::Crouch,
        Action::Fire,
        Action::Reload,
        Action::Rifle,
        Action::Launcher,
        Action::LastWeapon,
        Action::Scoreboard,
        Action::NetcodePanel,
        Action::NetGraph,
        Action::Ghosts,
        Action::PushToTalk,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Action::Forward => "Move forward",
            Action::Back => "Move back",
            Action::Left => "Move left",
            Action::Right => "Move right",
            Action::Jump => "Jump",
            Action::Crouch => "Crouch",
            Action::Fire => "Fire",
            Action::Reload => "Reload",
            Action::Rifle => "Rifle",
            Action::Launcher => "Rocket launcher",
            Action::LastWeapon => "Last weapon",
            Action::Scoreboard => "Scoreboard",
            Action::NetcodePanel => "Netcode panel",
            Action::NetGraph => "Net graph (off, compact, full)",
            Action::Ghosts => "Server ghosts",
            Action::PushToTalk => "Push to talk",
        }
    }
}

/// The settings file's contents. Bindings are stored by name ("W", "Space",
/// "Mouse Left") so that the file stays readable and editable.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Settings {
    pub name: String,
    /// Multiplies the base mouse sensitivity.
    pub mouse_sensitivity: f32,
    pub invert_y: bool,
    /// Horizontal field of view at 16:9, degrees.
    pub fov_deg: f32,
    /// 0 (silent) to 1.
    pub volume: f32,
    /// How good the picture is against how fast it comes.
    pub quality: Quality,
    /// After a death, show it from the killer's eyes beside where the server
    /// had us (the jump key skips it).
    pub kill_cam: bool,
    pub forward: String,
    pub back: String,
    pub left: String,
    pub right: String,
    pub jump: String,
    pub crouch: String,
    pub fire: String,
    pub reload: String,
    pub rifle: String,
    pub launcher: String,
    pub last_weapon: String,
    pub scoreboard: String,
    pub netcode_panel: String,
    pub net_graph: String,
    pub ghosts: String,
    /// Held to talk (the microphone is open only then).
    pub push_to_talk: String,
    /// Voice on: talk with the key, hear the others (off: neither, and the
    /// server sends none); how loud the others are played, 0 to 2.
    pub voice: bool,
    pub voice_volume: f32,
    /// Servers the player starred in the browser ("address:port").
    pub favourites: Vec<String>,
    /// Servers joined lately, newest first.
    pub recent: Vec<String>,
    /// Internet masters the browser's Internet tab asks, and a hosted game
    /// is listed on: `host` or `host:port` (default port 27950).
    pub masters: Vec<String>,
    /// List games this player hosts on the masters.
    pub list_on_internet: bool,
    /// The console's saved variables (the netcode choices, by their console
    /// names: `cl_interp`, `pushlatency`, ...), as the console or the
    /// netcode panel last set them; flags on the command line win over them.
    pub cvars: std::collections::BTreeMap<String, String>,
    /// The console's `bind`s: a key and the console line it runs.
    pub binds: Vec<Bind>,
    /// Most frames a second (the console's `fps_max`); 0: no limit but the display's.
    pub fps_max: u32,
}

/// A key bound to a console line (`bind F5 "cl_predict 0"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Bind {
    pub key: String,
    pub line: String,
}

/// Most keys bound to console lines.
pub(crate) const MAX_BINDS: usize = 64;
/// Most saved console variables.
pub(crate) const MAX_CVARS: usize = 64;
/// `fps_max`'s range besides 0 (no limit).
pub(crate) const FPS_MAX_RANGE: std::ops::RangeInclusive<u32> = 10..=1000;

impl Default for Settings {
    fn default() -> Self {
        Self {
            name: String::new(),
            mouse_sensitivity: 1.0,
            invert_y: false,
            fov_deg: 100.0,
            volume: 0.7,
            quality: Quality::Auto,
            kill_cam: true,
            forward: "W".into(),
            back: "S".into(),
            left: "A".into(),
            right: "D".into(),
            jump: "Space".into(),
            crouch: "Left Ctrl".into(),
            fire: "Mouse Left".into(),
            reload: "R".into(),
            rifle: "1".into(),
            launcher: "2".into(),
            last_weapon: "Q".into(),
            scoreboard: "Tab".into(),
            netcode_panel: "F1".into(),
            net_graph: "F2".into(),
            ghosts: "F3".into(),
            push_to_talk: "V".into(),
            // The page has no voice yet.
            voice: cfg!(not(target_arch = "wasm32")),
            voice_volume: 1.0,
            favourites: Vec::new(),
            recent: Vec::new(),
            masters: Vec::new(),
            list_on_internet: false,
            cvars: std::collections::BTreeMap::new(),
            binds: Vec::new(),
            fps_max: 0,
        }
    }
}

/// Graphics quality.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Quality {
    /// Medium on a software renderer (no GPU), high otherwise.
    #[default]
    Auto,
    /// No shadows, no multisampling: for slow machines.
    Low,
    /// Sun shadows near the player, no multisampling.
    Medium,
    /// Sun shadows far out in four cascades, 4x multisampling, the
    /// call-out signs' coloured lamps.
    High,
}

impl Quality {
    pub(crate) const ALL: [Quality; 4] = [Quality::Auto, Quality::Low, Quality::Medium, Quality::High];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Quality::Auto => "Auto",
            Quality::Low => "Low",
            Quality::Medium => "Medium",
            Quality::High => "High",
        }
    }

    /// The level meant: Auto chooses by the renderer.
    pub(crate) fn resolved(self, software_rendering: bool) -> Quality {
        match self {
            Quality::Auto if software_rendering => Quality::Medium,
            Quality::Auto => Quality::High,
            level => level,
        }
    }
}

/// Most favourite servers kept, and most recent ones.
pub(crate) const MAX_FAVOURITES: usize = 32;
pub(crate) const MAX_RECENT: usize = 10;
/// Most internet masters kept (a server is listed on at most this many).
pub(crate) const MAX_MASTERS: usize = arena_server::MAX_MASTERS;

/// Whether `text` could name a master: a host name or an address, with a
/// port or not, no spaces.
pub(crate) fn is_master_name(text: &str) -> bool {
    !text.is_empty() && text.len() <= 255 && !text.contains(char::is_whitespace) && !text.contains(',')
}

/// The masters in a comma- or space-separated line, cleaned: each once, at
/// most [`MAX_MASTERS`]; the words that cannot be a master's name.
pub(crate) fn parse_masters(line: &str) -> (Vec<String>, Vec<String>) {
    let mut masters: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    for word in line.split([',', ' ', '\t']).map(str::trim).filter(|w| !w.is_empty()) {
        if !is_master_name(word) {
            bad.push(word.to_string());
        } else if !masters.iter().any(|m| m == word) && masters.len() < MAX_MASTERS {
            masters.push(word.to_string());
        }
    }
    (masters, bad)
}

/// Keeps the addresses that parse (as "ip:port"), once each, at most `max`.
fn repair_addresses(list: &mut Vec<String>, max: usize, what: &str, problems: &mut Vec<String>) {
    let mut kept: Vec<String> = Vec::new();
    for entry in list.iter() {
        match entry.trim().parse::<std::net::SocketAddr>() {
            Ok(addr) if !kept.contains(&addr.to_string()) => kept.push(addr.to_string()),
            Ok(_) => {}
            Err(_) => problems.push(format!("\"{entry}\" in the {what} is not an address:port")),
        }
    }
    kept.truncate(max);
    *list = kept;
}

impl Settings {
    /// Remembers a server just joined, newest first.
    pub(crate) fn joined(&mut self, addr: std::net::SocketAddr) {
        let addr = addr.to_string();
        self.recent.retain(|a| *a != addr);
        self.recent.insert(0, addr);
        self.recent.truncate(MAX_RECENT);
    }

    /// Stars or unstars a server.
    pub(crate) fn toggle_favourite(&mut self, addr: std::net::SocketAddr) {
        let addr = addr.to_string();
        if self.favourites.contains(&addr) {
            self.favourites.retain(|a| *a != addr);
        } else if self.favourites.len() < MAX_FAVOURITES {
            self.favourites.push(addr);
        }
    }

    pub(crate) fn is_favourite(&self, addr: std::net::SocketAddr) -> bool {
        self.favourites.contains(&addr.to_string())
    }
}

/// Sensible ranges of the numbers.
pub(crate) const SENSITIVITY_RANGE: std::ops::RangeInclusive<f32> = 0.1..=5.0;
pub(crate) const FOV_RANGE: std::ops::RangeInclusive<f32> = 70.0..=130.0;
pub(crate) const VOICE_VOLUME_RANGE: std::ops::RangeInclusive<f32> = 0.0..=2.0;

impl Settings {
    fn binding(&self, action: Action) -> &str {
        match action {
            Action::Forward => &self.forward,
            Action::Back => &self.back,
            Action::Left => &self.left,
            Action::Right => &self.right,
            Action::Jump => &self.jump,
            Action::Crouch => &self.crouch,
            Action::Fire => &self.fire,
            Action::Reload => &self.reload,
            Action::Rifle => &self.rifle,
            Action::Launcher => &self.launcher,
            Action::LastWeapon => &self.last_weapon,
            Action::Scoreboard => &self.scoreboard,
            Action::NetcodePanel => &self.netcode_panel,
            Action::NetGraph => &self.net_graph,
            Action::Ghosts => &self.ghosts,
            Action::PushToTalk => &self.push_to_talk,
        }
    }

    fn binding_mut(&mut self, action: Action) -> &mut String {
        match action {
            Action::Forward => &mut self.forward,
            Action::Back => &mut self.back,
            Action::Left => &mut self.left,
            Action::Right => &mut self.right,
            Action::Jump => &mut self.jump,
            Action::Crouch => &mut self.crouch,
            Action::Fire => &mut self.fire,
            Action::Reload => &mut self.reload,
            Action::Rifle => &mut self.rifle,
            Action::Launcher => &mut self.launcher,
            Action::LastWeapon => &mut self.last_weapon,
            Action::Scoreboard => &mut self.scoreboard,
            Action::NetcodePanel => &mut self.netcode_panel,
            Action::NetGraph => &mut self.net_graph,
            Action::Ghosts => &mut self.ghosts,
            Action::PushToTalk => &mut self.push_to_talk,
        }
    }

    /// The input bound to `action` (the default's if the name is unknown).
    pub(crate) fn input(&self, action: Action) -> Input {
        Input::parse(self.binding(action))
            .or_else(|| Input::parse(Settings::default().binding(action)))
            .unwrap_or(Input::Key(KeyCode::F12))
    }

    pub(crate) fn bind(&mut self, action: Action, input: Input) {
        *self.binding_mut(action) = input.name();
    }

    /// Every field in range; problems found, in words.
    pub(crate) fn repaired(mut self) -> (Self, Vec<String>) {
        let mut problems = Vec::new();
        let defaults = Settings::default();
        if !self.mouse_sensitivity.is_finite() || !SENSITIVITY_RANGE.contains(&self.mouse_sensitivity) {
            problems.push(format!("mouse sensitivity {} is outside {SENSITIVITY_RANGE:?}", self.mouse_sensitivity));
            self.mouse_sensitivity = defaults.mouse_sensitivity;
        }
        if !self.fov_deg.is_finite() || !FOV_RANGE.contains(&self.fov_deg) {
            problems.push(format!("field of view {} is outside {FOV_RANGE:?}", self.fov_deg));
            self.fov_deg = defaults.fov_deg;
        }
        if !self.volume.is_finite() || !(0.0..=1.0).contains(&self.volume) {
            problems.push(format!("volume {} is outside 0..=1", self.volume));
            self.volume = defaults.volume;
        }
        if !self.voice_volume.is_finite() || !VOICE_VOLUME_RANGE.contains(&self.voice_volume) {
            problems.push(format!("voice volume {} is outside {VOICE_VOLUME_RANGE:?}", self.voice_volume));
            self.voice_volume = defaults.voice_volume;
        }
        for action in Action::ALL {
            let name = self.binding(action).to_string();
            if Input::parse(&name).is_none() {
                problems.push(format!("\"{name}\" is not a key this game knows ({})", action.label()));
                *self.binding_mut(action) = defaults.binding(action).to_string();
            }
        }
        repair_addresses(&mut self.favourites, MAX_FAVOURITES, "favourites", &mut problems);
        repair_addresses(&mut self.recent, MAX_RECENT, "recent servers", &mut problems);
        let (masters, bad) = parse_masters(&self.masters.join(","));
        for word in bad {
            problems.push(format!("\"{word}\" in the masters is not a host name or address"));
        }
        self.masters = masters;
        if self.fps_max != 0 && !FPS_MAX_RANGE.contains(&self.fps_max) {
            problems.push(format!("fps_max {} is outside {FPS_MAX_RANGE:?} (or 0)", self.fps_max));
            self.fps_max = 0;
        }
        let binds = std::mem::take(&mut self.binds);
        for bind in binds {
            match check_bind(&bind.key, &bind.line) {
                Ok(()) if self.binds.len() < MAX_BINDS && !self.binds.iter().any(|b| b.key == bind.key) => {
                    self.binds.push(bind)
                }
                Ok(()) => problems.push(format!("bind {} dropped (one per key, at most {MAX_BINDS})", bind.key)),
                Err(why) => problems.push(format!("bind {} dropped: {why}", bind.key)),
            }
        }
        let cvars = std::mem::take(&mut self.cvars);
        for (name, value) in cvars {
            match check_saved(&name, &value) {
                Ok(()) if self.cvars.len() < MAX_CVARS => {
                    self.cvars.insert(name, value);
                }
                Ok(()) => problems.push(format!("{name} dropped (at most {MAX_CVARS} saved variables)")),
                Err(why) => problems.push(why),
            }
        }
        // An empty name means "not chosen": the game then uses the login name.
        self.name =
            if self.name.trim().is_empty() { String::new() } else { arena_protocol::names::clean_name(&self.name) };
        (self, problems)
    }

    pub(crate) fn to_ron(&self) -> String {
        let pretty = ron::ser::PrettyConfig::new().depth_limit(2);
        ron::ser::to_string_pretty(self, pretty).unwrap_or_default()
    }

    pub(crate) fn from_ron(text: &str) -> Result<Self, String> {
        ron::from_str::<Settings>(text).map_err(|e| e.to_string())
    }
}

/// What loading found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Loaded {
    pub settings: Settings,
    /// Something to tell the player, if the file was not right.
    pub problem: Option<String>,
}

/// Reads the settings at `path`. Missing: the defaults. Unparsable: the
/// defaults, with the bad file kept next to it as `.bad` and a message.
pub(crate) fn load(path: &Path) -> Loaded {
    let text = match storage::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Loaded { settings: Settings::default().repaired().0, problem: None };
        }
        Err(e) => {
            return Loaded {
                settings: Settings::default().repaired().0,
                problem: Some(format!("Could not read {}: {e}. Using the default settings.", path.display())),
            };
        }
    };
    match Settings::from_ron(&text) {
        Ok(settings) => {
            let (settings, problems) = settings.repaired();
            let problem = (!problems.is_empty())
                .then(|| format!("Some settings in {} were fixed: {}.", path.display(), problems.join("; ")));
            Loaded { settings, problem }
        }
        Err(e) => {
            let kept = path.with_extension("ron.bad");
            let kept_note = match storage::rename(path, &kept) {
                Ok(()) => format!("it was kept as {}", kept.display()),
                Err(err) => format!("it could not be moved aside ({err})"),
            };
            Loaded {
                settings: Settings::default().repaired().0,
                problem: Some(format!(
                    "The settings file {} did not parse ({e}); {kept_note}, and the defaults are in use.",
                    path.display()
                )),
            }
        }
    }
}

/// Writes the settings to `path`, creating its directory.
pub(crate) fn save(path: &Path, settings: &Settings) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        storage::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Write then rename, so a crash never leaves half a file.
    let temporary = path.with_extension("ron.tmp");
    storage::write(&temporary, &settings.to_ron()).map_err(|e| format!("cannot write {}: {e}", temporary.display()))?;
    storage::rename(&temporary, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
}

/// Where the settings are saved (none: no configuration directory), and the
/// last problem with them, shown in the main menu. A resource rather than a
/// lookup at each save so that a test's game saves into its own folder.
#[derive(Resource, Debug, Default, Clone)]
pub(crate) struct SettingsFile {
    pub path: Option<PathBuf>,
    pub problem: Option<String>,
}

impl SettingsFile {
    /// Saves the settings; a failure becomes the problem the menu shows.
    pub(crate) fn save(&mut self, settings: &Settings) {
        let Some(path) = &self.path else {
            self.problem = Some("Settings not saved: no configuration directory (HOME is not set).".into());
            return;
        };
        match save(path, settings) {
            Ok(()) => info!("settings saved to {}", path.display()),
            Err(e) => {
                warn!("{e}");
                self.problem = Some(format!("Settings not saved: {e}"));
            }
        }
    }
}

/// Whether `line` may be bound to `key`: a key the game knows, a line of
/// the console's length, and no `bind` or `unbind` in it (a key that
/// rewrites keys could loop).
pub(crate) fn check_bind(key: &str, line: &str) -> Result<(), String> {
    if Input::parse(key).is_none() {
        return Err(format!("\"{key}\" is not a key this game knows"));
    }
    if line.len() > console::MAX_LINE_BYTES || line.chars().any(char::is_control) {
        return Err(format!("a bound line is at most {} bytes of text", console::MAX_LINE_BYTES));
    }
    let rebinds = console::split_commands(line)
        .iter()
        .any(|c| console::split_words(c).first().is_some_and(|w| w == "bind" || w == "unbind"));
    if rebinds {
        return Err("a key's line cannot bind or unbind keys".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("arena-settings-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir.join("settings.ron")
    }

    #[test]
    fn settings_round_trip_through_the_file() {
        let path = scratch("round-trip");
        let mut settings = Settings {
            name: "Ada".into(),
            mouse_sensitivity: 1.7,
            invert_y: true,
            fov_deg: 95.0,
            volume: 0.25,
            ..Settings::default()
        };
        settings.bind(Action::Jump, Input::Mouse(MouseButton::Right));
        settings.bind(Action::Crouch, Input::Key(KeyCode::KeyC));
        settings.toggle_favourite("192.168.1.20:27015".parse().expect("address"));
        for port in 27000..27020 {
            settings.joined(std::net::SocketAddr::from(([10, 0, 0, 1], port)));
        }
        settings.joined("10.0.0.1:27005".parse().expect("address"));
        assert_eq!(settings.recent.len(), MAX_RECENT);
        assert_eq!(settings.recent[0], "10.0.0.1:27005", "newest first, once");
        save(&path, &settings).expect("saves");
        let loaded = load(&path);
        assert_eq!(loaded.problem, None);
        assert_eq!(loaded.settings, settings);
        assert_eq!(loaded.settings.input(Action::Jump), Input::Mouse(MouseButton::Right));
        assert_eq!(loaded.settings.input(Action::Crouch), Input::Key(KeyCode::KeyC));
    }

    #[test]
    fn bad_server_addresses_are_dropped_and_reported() {
        let settings = Settings {
            favourites: vec!["10.0.0.1:27015".into(), "not an address".into(), "10.0.0.1:27015".into()],
            recent: vec!["example.org".into()],
            ..Settings::default()
        };
        let (repaired, problems) = settings.repaired();
        assert_eq!(repaired.favourites, vec!["10.0.0.1:27015".to_string()]);
        assert!(repaired.recent.is_empty());
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn a_missing_file_gives_the_defaults_quietly() {
        let loaded = load(&scratch("missing"));
        assert_eq!(loaded.problem, None);
        assert_eq!(loaded.settings.fov_deg, Settings::default().fov_deg);
        assert_eq!(loaded.settings.name, "", "no name chosen yet");
    }

    #[test]
    fn a_corrupt_file_is_kept_aside_and_reported() {
        let path = scratch("corrupt");
        std::fs::write(&path, "(name: \"Ada\", fov_deg: ").expect("writes");
        let loaded = load(&path);
        assert_eq!(loaded.settings, Settings::default().repaired().0);
        let problem = loaded.problem.expect("reported");
        assert!(problem.contains("did not parse"), "{problem}");
        assert!(!path.exists(), "moved aside");
        let kept = path.with_extension("ron.bad");
        assert_eq!(std::fs::read_to_string(kept).expect("kept"), "(name: \"Ada\", fov_deg: ");
    }

    #[test]
    fn out_of_range_values_and_unknown_keys_are_repaired() {
        let path = scratch("repair");
        std::fs::write(
            &path,
            "(mouse_sensitivity: 90.0, fov_deg: 10.0, volume: -1.0, jump: \"Hyperspace\", name: \"  Bob  \")",
        )
        .expect("writes");
        let loaded = load(&path);
        let s = loaded.settings;
        assert_eq!((s.mouse_sensitivity, s.fov_deg, s.volume), (1.0, 100.0, 0.7));
        assert_eq!(s.input(Action::Jump), Input::Key(KeyCode::Space));
        assert_eq!(s.name, "Bob");
        assert!(loaded.problem.is_some_and(|p| p.contains("Hyperspace")));
    }

    #[test]
    fn every_bindable_name_parses_back() {
        for (name, key) in KEY_NAMES {
            assert_eq!(Input::parse(name), Some(Input::Key(*key)));
            assert_eq!(Input::Key(*key).name(), *name);
        }
        assert_eq!(Input::parse("mouse left"), None, "mouse names are exact");
        assert_eq!(Input::parse("Mouse Left"), Some(Input::Mouse(MouseButton::Left)));
    }
}
