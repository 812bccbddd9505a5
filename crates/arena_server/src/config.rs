//! How a server is set up: every option of `arena server` (and of a host's
//! listen server, and of the lab's) in one place, with its defaults and its
//! checks, and the rules of a match.

use std::net::SocketAddr;
use std::time::Duration;

use arena_protocol::key::Password;
use arena_protocol::modes::Mode;
use arena_protocol::query::{ServerKind, clean_server_name};
use arena_sim::{DEFAULT_TICK_HZ, TICK_HZ_RANGE};
use bevy::prelude::*;

use crate::range_lanes::LANES;
use crate::vocabulary::{ServedMap, ServedMaps};

/// How far back lag compensation rewinds at most by default, milliseconds:
/// chosen from `arena lab unlag` (see the README's "The rewind cap").
pub const DEFAULT_MAX_UNLAG_MS: u16 = 400;
/// The largest rewind cap, milliseconds: the hitbox history is a little
/// longer. Reached by a client drawing a frame a second at a 250 ms round
/// trip (the range's default: its targets are bots).
pub const MAX_UNLAG_MS: u16 = 2000;

/// How matches are played.
#[derive(Resource, Debug, Clone, Copy)]
pub struct MatchRules {
    pub frag_limit: u16,
    pub time_limit_s: u32,
    /// How long the results are shown before the next match, seconds.
    pub results_s: u32,
}

impl Default for MatchRules {
    fn default() -> Self {
        Self { frag_limit: 20, time_limit_s: 600, results_s: 10 }
    }
}

/// The map the shooting range's lanes are laid out on.
pub(crate) const RANGE_MAP: &str = "Foundry";

/// How a server is set up; the command line fills it in.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The name browsers show (`--name`); empty: see [`ServerConfig::display_name`].
    pub name: String,
    /// Dedicated, or a player's game (what browsers are told).
    pub kind: ServerKind,
    /// Address and UDP port to listen on; `[::]` (the default) listens on every
    /// interface in both families (IPv4 only on a machine without IPv6),
    /// `0.0.0.0` on every IPv4 one.
    pub bind: SocketAddr,
    /// Extra addresses clients use to reach this server (behind NAT or port
    /// forwarding). The addresses of this machine's interfaces are always added.
    pub public_addrs: Vec<SocketAddr>,
    /// The UDP port players reach this server on, when it is not the bound
    /// one (a mapped container port, a forwarded port): what server queries
    /// (A2S) and the LAN browser are told. Not given: the first public
    /// address's port, else the bound port.
    pub public_port: Option<u16>,
    /// Players connected at once, at most (bots not counted; bots and
    /// clients together never exceed [`arena_protocol::MAX_PLAYERS`]).
    pub max_clients: usize,
    /// A private game's password: without it a client cannot even start to
    /// connect. Open to anyone when not set.
    pub password: Password,
    /// Simulation rate, ticks per second.
    pub tick_hz: u32,
    /// Snapshots per second (at most the tick rate).
    pub snapshot_hz: u32,
    /// Lag compensation for everyone (each client can also turn it off for itself).
    pub lag_compensation: bool,
    /// How far back lag compensation rewinds at most, milliseconds: a shooter
    /// whose round trip and interpolation add up to more must lead.
    pub max_unlag_ms: u16,
    /// Server-side bots to add, and how well they play (0-1).
    pub bots: usize,
    pub bot_skill: f32,
    /// Seeds the bots' choices; `None`: a different game every time.
    pub bot_seed: Option<u64>,
    pub rules: MatchRules,
    /// Stop on its own after this long (for scripts and tests).
    pub stop_after: Option<Duration>,
    /// A shooting range: targets on lanes that cannot die, nobody hurt.
    pub range: bool,
    /// Sub-tick shots: a shot goes from where fire was pressed within the
    /// tick, along the view of that frame (`--no-subtick`: from the tick).
    pub subtick: bool,
    /// Rockets brought up to the time their shooter fired them, at most the
    /// rewind cap (`--no-projectile-compensation`: from the tick the
    /// command ran, the shooter leads).
    pub projectile_compensation: bool,
    /// The map's items in play: health, armour, the mega and the quad on
    /// their timers (`--no-items`: none, every player on its 100 health).
    pub items: bool,
    /// Voice passed on between players (`--voice off`: none, and the
    /// console's `sv_voice 0`).
    pub voice: bool,
    /// Bots take the rocket launcher at middle distances (`--bot-rifle-only`: never).
    pub bot_rockets: bool,
    /// Record every match as a demo file in this directory (`--record DIR`).
    pub record_dir: Option<std::path::PathBuf>,
    /// Demo files kept in it: the oldest of Arena's own are deleted past this.
    pub record_keep: usize,
    /// Internet masters to be listed on (`host` or `host:port`, default
    /// port 27950; `--master`, repeatable).
    pub masters: Vec<String>,
    /// Seconds between heartbeats to the masters when nothing changes.
    pub master_heartbeat_s: u32,
    /// Which ways to ask the home router for the game port (UPnP-IGD,
    /// NAT-PMP, PCP): none for a dedicated server unless `--map-port`,
    /// all for a listen server.
    pub map_port: arena_nat::Methods,
    /// The lease asked for, seconds (renewed at half of what is granted).
    pub map_lease_s: u32,
    /// How the server's systems are run (see [`Executor`]).
    pub executor: Executor,
    /// How matches are played (`--mode`).
    pub mode: Mode,
    /// Teammates hurt each other (`--friendly-fire`; team deathmatch).
    pub friendly_fire: bool,
    /// Clients watching at once, at most (`--max-spectators`), apart from
    /// the players' places.
    pub max_spectators: usize,
    /// The remote console's key (`--rcon-password-file`): none, no remote console.
    pub rcon_key: Option<arena_protocol::rcon::RconKey>,
    /// The map played (`--map`): a built-in one by name, or a map file
    /// (a path ending in `.ron`), sent to clients that lack it.
    pub map: String,
    /// Maps played in turn, a match each (`--maps a,b`); empty: `map` only.
    pub maps: Vec<String>,
    /// What players may call votes on (`--vote-kinds`); empty: no votes.
    pub vote_kinds: Vec<arena_protocol::vote::VoteKind>,
    /// Browsers join (`--web DIR`): a WebTransport endpoint beside the game's
    /// socket, and the page served from this folder (`scripts/web-build.sh`
    /// makes it). Native servers only.
    pub web_dir: Option<std::path::PathBuf>,
    /// The endpoint's port (UDP for sessions, TCP for the page; `--web-port`);
    /// `None`: the game's port + 1, or any free one when the game's is any.
    pub web_port: Option<u16>,
}

/// How a server's systems are run each frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Executor {
    /// One after another on the server's own thread. A server's world is
    /// small: handing its systems to a thread pool costs more in switching
    /// than running them side by side saves (`arena lab servercost`
    /// measures both).
    #[default]
    Single,
    /// Bevy's multithreaded executor: systems that touch different data run
    /// at once on a pool of threads.
    Multi,
}

/// The lease a port mapping asks for by default, seconds.
pub const DEFAULT_MAP_LEASE_S: u32 = 3600;

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            kind: ServerKind::Dedicated,
            bind: SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, arena_protocol::DEFAULT_PORT)),
            public_addrs: Vec::new(),
            public_port: None,
            max_clients: 16,
            password: Password::OPEN,
            tick_hz: DEFAULT_TICK_HZ,
            snapshot_hz: DEFAULT_TICK_HZ,
            lag_compensation: true,
            max_unlag_ms: DEFAULT_MAX_UNLAG_MS,
            bots: 0,
            bot_skill: 0.5,
            bot_seed: None,
            rules: MatchRules::default(),
            stop_after: None,
            range: false,
            subtick: true,
            projectile_compensation: true,
            items: true,
            voice: true,
            bot_rockets: true,
            record_dir: None,
            record_keep: DEFAULT_RECORD_KEEP,
            masters: Vec::new(),
            master_heartbeat_s: DEFAULT_HEARTBEAT_S,
            map_port: arena_nat::Methods::NONE,
            map_lease_s: DEFAULT_MAP_LEASE_S,
            executor: Executor::default(),
            mode: Mode::Ffa,
            friendly_fire: false,
            max_spectators: DEFAULT_MAX_SPECTATORS,
            rcon_key: None,
            map: arena_sim::MapDef::built_in_names()[0].to_string(),
            maps: Vec::new(),
            vote_kinds: arena_protocol::vote::VoteKind::ALL.to_vec(),
            web_dir: None,
            web_port: None,
        }
    }
}

/// Whether a `--map`/`--maps` entry is a map file rather than a built-in
/// map's name.
pub(crate) fn is_map_file(entry: &str) -> bool {
    entry.ends_with(".ron") || entry.contains('/') || entry.contains('\\')
}

impl ServerConfig {
    /// The maps this server plays: the built-in ones and the files named,
    /// each file read (at most the map cap) and checked as `arena map
    /// check` does; and the names of the map played first and of the
    /// rotation.
    pub fn load_maps(&self) -> Result<(ServedMaps, String, Vec<String>), ConfigError> {
        let mut served = ServedMaps::built_in();
        let mut name_of = |entry: &String| -> Result<String, ConfigError> {
            if !is_map_file(entry) {
                return served
                    .find(entry)
                    .map(|m| m.id.name.clone())
                    .ok_or_else(|| ConfigError::UnknownMap(entry.clone()));
            }
            let map = load_map_file(std::path::Path::new(entry))?;
            let name = map.id.name.clone();
            match served.find(&name) {
                Some(known) if known.id == map.id => {}
                Some(_) => {
                    return Err(ConfigError::MapFile {
                        path: entry.clone(),
                        errors: vec![format!("another map is called {name} already: rename it")],
                    });
                }
                None => served.0.push(map),
            }
            Ok(name)
        };
        let rotation = self.maps.iter().map(&mut name_of).collect::<Result<Vec<_>, _>>()?;
        let first = name_of(&self.map)?;
        Ok((served, first, rotation))
    }
}

/// One map file, read and checked as a server loads it (at most the map
/// cap, UTF-8, passing `arena map check`, a name a console can say): its
/// map, or why not. `arena demo verify --map` reads its files so too.
pub fn read_map_file(path: &std::path::Path) -> Result<arena_sim::MapDef, ConfigError> {
    load_map_file(path).map(|served| served.def)
}

/// Reads and checks one map file.
fn load_map_file(path: &std::path::Path) -> Result<ServedMap, ConfigError> {
    use std::io::Read;
    let fail = |errors: Vec<String>| ConfigError::MapFile { path: path.display().to_string(), errors };
    let cap = arena_protocol::map_transfer::MAX_MAP_BYTES;
    let mut text = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(cap as u64 + 1).read_to_end(&mut text))
        .map_err(|e| fail(vec![format!("cannot be read: {e}")]))?;
    if text.len() > cap {
        return Err(fail(vec![format!("is over {cap} bytes")]));
    }
    let Ok(utf8) = std::str::from_utf8(&text) else { return Err(fail(vec!["is not UTF-8 text".into()])) };
    let (def, checked) = arena_sim::map_check::check_text(utf8);
    match def {
        Some(def) if checked.ok() => {
            let id = arena_protocol::map_transfer::MapId::of(&def.name, &text);
            if def.name.chars().any(|c| c == '"' || c == ';' || c.is_control()) {
                return Err(fail(vec!["its name may not hold quotes, semicolons or control characters".into()]));
            }
            if def.name.trim() != def.name {
                return Err(fail(vec!["its name may not start or end with spaces".into()]));
            }
            if id.validate().is_err() || def.name.trim().is_empty() {
                return Err(fail(vec![format!(
                    "its name must be 1 to {} bytes",
                    arena_protocol::map_transfer::MAX_MAP_NAME_BYTES
                )]));
            }
            Ok(ServedMap { def, id, text: text.into(), file: true })
        }
        _ => Err(fail(checked.errors)),
    }
}

/// Spectators a server takes by default.
pub const DEFAULT_MAX_SPECTATORS: usize = 8;
/// The most spectators a server takes.
pub const MAX_SPECTATORS: usize = 32;

/// Demo files a recording server keeps by default (a 10-minute match of 16
/// players is a few megabytes).
pub const DEFAULT_RECORD_KEEP: usize = 100;

impl ServerConfig {
    /// The name the server announces: `name` cleaned, or the machine's name.
    pub fn display_name(&self) -> String {
        let name = clean_server_name(&self.name);
        if !name.is_empty() {
            return name;
        }
        #[cfg(not(target_arch = "wasm32"))]
        let host = clean_server_name(&gethostname::gethostname().to_string_lossy());
        // A page has no host name.
        #[cfg(target_arch = "wasm32")]
        let host = String::new();
        if host.is_empty() { "Arena server".to_string() } else { host }
    }

    /// The port server queries advertise, for a server bound to `bound_port`.
    pub fn advertised_port(&self, bound_port: u16) -> u16 {
        self.public_port.or_else(|| self.public_addrs.first().map(SocketAddr::port)).unwrap_or(bound_port)
    }

    /// Range targets: players with no client, like bots.
    pub fn targets(&self) -> usize {
        if self.range { LANES.len() } else { 0 }
    }

    /// Checks every setting against what the server can run.
    pub fn check(&self) -> Result<(), ConfigError> {
        use ConfigError as E;
        let max = arena_protocol::MAX_PLAYERS;
        let problem = if !TICK_HZ_RANGE.contains(&self.tick_hz) {
            Some(E::TickRate(self.tick_hz))
        } else if self.snapshot_hz == 0 || self.snapshot_hz > self.tick_hz {
            Some(E::SnapshotRate { snapshot_hz: self.snapshot_hz, tick_hz: self.tick_hz })
        } else if self.max_unlag_ms > MAX_UNLAG_MS {
            Some(E::MaxUnlag(self.max_unlag_ms))
        } else if !(0.0..=1.0).contains(&self.bot_skill) {
            Some(E::BotSkill(self.bot_skill))
        } else if self.rules.frag_limit == 0 || self.rules.time_limit_s == 0 {
            Some(E::MatchLimits)
        } else if self.max_clients == 0 || self.max_clients > max {
            Some(E::MaxClients(self.max_clients))
        } else if self.bots + self.targets() + self.max_clients > max {
            Some(E::TooManyPlayers { bots: self.bots, targets: self.targets(), clients: self.max_clients })
        } else if self.masters.len() > MAX_MASTERS || self.masters.iter().any(|m| m.trim().is_empty() || m.len() > 255)
        {
            Some(E::Masters)
        } else if !(1..=MAX_HEARTBEAT_S).contains(&self.master_heartbeat_s) {
            Some(E::HeartbeatInterval(self.master_heartbeat_s))
        } else if self.max_spectators > MAX_SPECTATORS {
            Some(E::MaxSpectators(self.max_spectators))
        } else if self.range && self.mode != Mode::Ffa {
            Some(E::RangeMode(self.mode))
        } else if self.range && (!self.map.eq_ignore_ascii_case(RANGE_MAP) || !self.maps.is_empty()) {
            // The lanes are laid out on Foundry's floor.
            Some(E::RangeMap(self.map.clone()))
        } else {
            // Files are read and checked when the server starts (`load_maps`).
            std::iter::once(&self.map)
                .chain(&self.maps)
                .find(|m| !is_map_file(m) && arena_sim::MapDef::built_in(m).is_none())
                .map(|unknown| E::UnknownMap(unknown.clone()))
        };
        problem.map_or(Ok(()), Err)
    }
}

/// A setting the server cannot run with.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    TickRate(u32),
    SnapshotRate {
        snapshot_hz: u32,
        tick_hz: u32,
    },
    BotSkill(f32),
    MaxUnlag(u16),
    MatchLimits,
    MaxClients(usize),
    TooManyPlayers {
        bots: usize,
        targets: usize,
        clients: usize,
    },
    Masters,
    HeartbeatInterval(u32),
    MaxSpectators(usize),
    RangeMode(Mode),
    /// No built-in map has this name.
    UnknownMap(String),
    /// A shooting range on another map than its lanes are laid on.
    RangeMap(String),
    /// A map file that cannot be played: what is wrong with it.
    MapFile {
        path: String,
        errors: Vec<String>,
    },
}

/// The default time between heartbeats when nothing changes, seconds
/// (dpmaster drops a server 15 minutes after its last valid answer).
pub const DEFAULT_HEARTBEAT_S: u32 = 300;
/// Most masters a server is listed on.
pub const MAX_MASTERS: usize = 8;
/// The longest time between heartbeats, seconds: a master forgets a server
/// 15 minutes after the last one.
pub(crate) const MAX_HEARTBEAT_S: u32 = 600;

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let max = arena_protocol::MAX_PLAYERS;
        let (lo, hi) = (arena_sim::TICK_HZ_RANGE.start(), arena_sim::TICK_HZ_RANGE.end());
        match self {
            ConfigError::TickRate(hz) => write!(f, "tick rate {hz} Hz is outside {lo}..={hi} Hz"),
            ConfigError::SnapshotRate { snapshot_hz, tick_hz } => {
                write!(f, "snapshot rate {snapshot_hz} Hz must be 1..={tick_hz} Hz (the tick rate)")
            }
            ConfigError::MaxUnlag(ms) => write!(f, "the rewind cap must be 0..={MAX_UNLAG_MS} ms, not {ms}"),
            ConfigError::BotSkill(skill) => write!(f, "bot skill must be 0..=1, not {skill}"),
            ConfigError::MatchLimits => f.write_str("the frag limit and the time limit must be above 0"),
            ConfigError::MaxClients(n) => write!(f, "max clients must be 1..={max}, not {n}"),
            ConfigError::Masters => {
                write!(f, "give at most {MAX_MASTERS} masters, each a host name or address (with a port or not)")
            }
            ConfigError::HeartbeatInterval(s) => {
                write!(f, "the heartbeat interval must be 1..={MAX_HEARTBEAT_S} s, not {s}")
            }
            ConfigError::MaxSpectators(n) => write!(f, "max spectators must be 0..={MAX_SPECTATORS}, not {n}"),
            ConfigError::RangeMap(name) => write!(
                f,
                "the shooting range's lanes are laid out on {RANGE_MAP}, not {name}: leave out --map and --maps with --range"
            ),
            ConfigError::UnknownMap(name) => {
                write!(f, "there is no map \"{name}\" (maps: {})", arena_sim::MapDef::built_in_names().join(", "))
            }
            ConfigError::MapFile { path, errors } => {
                write!(f, "the map file {path} cannot be played: {}", errors.join("; "))
            }
            ConfigError::RangeMode(mode) => {
                write!(f, "a shooting range is practice, not a {}: leave out --mode or --range", mode.label())
            }
            ConfigError::TooManyPlayers { bots, targets: 0, clients } => write!(
                f,
                "{bots} bots and {clients} clients make more than the {max} players a server can hold; \
                 lower --bots or --max-clients"
            ),
            ConfigError::TooManyPlayers { bots, targets, clients } => write!(
                f,
                "{bots} bots, {targets} range targets and {clients} clients make more than the {max} players \
                 a server can hold; lower --bots or --max-clients"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advertised_port_is_the_public_one_when_given() {
        let bound = 27015;
        let plain = ServerConfig::default();
        assert_eq!(plain.advertised_port(bound), bound);
        let forwarded =
            ServerConfig { public_addrs: vec![SocketAddr::from(([203, 0, 113, 7], 30001))], ..ServerConfig::default() };
        assert_eq!(forwarded.advertised_port(bound), 30001);
        let mapped = ServerConfig { public_port: Some(31000), ..forwarded };
        assert_eq!(mapped.advertised_port(bound), 31000, "--public-port wins over the address's port");
    }

    #[test]
    fn too_many_players_counts_range_targets_apart_from_bots() {
        let full = ServerConfig { bots: 10, max_clients: 60, ..ServerConfig::default() };
        let error = full.check().expect_err("74 players");
        assert_eq!(
            error.to_string(),
            "10 bots and 60 clients make more than the 64 players a server can hold; lower --bots or --max-clients"
        );
        let range = ServerConfig { bots: 2, max_clients: 60, range: true, ..ServerConfig::default() };
        let error = range.check().expect_err("66 players");
        assert_eq!(error, ConfigError::TooManyPlayers { bots: 2, targets: LANES.len(), clients: 60 });
        assert!(
            error.to_string().starts_with(&format!("2 bots, {} range targets and 60 clients", LANES.len())),
            "{error}"
        );
        assert!(ServerConfig { bots: 2, max_clients: 50, range: true, ..ServerConfig::default() }.check().is_ok());
    }
}
