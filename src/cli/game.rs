//! How a hosted or dedicated server runs its games: the options `play`,
//! `host` and `server` share, and the server's config made from them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use arena_protocol::key::Password;
use arena_server::ServerConfig;
use clap::Args;

/// Longest match the time limit allows, seconds (a day).
const MAX_TIME_LIMIT_S: f64 = 86_400.0;

/// How a hosted or dedicated server runs its games.
///
/// The `env` names are the dedicated server's alone: [`super::command`]
/// takes them off `host` and `play`, so that a player's game on a machine
/// whose environment configures a server is not changed by it.
#[derive(Args, Debug, Clone)]
pub(crate) struct GameArgs {
    /// Simulation rate, ticks per second.
    #[arg(long, env = "ARENA_TICK", default_value_t = arena_sim::DEFAULT_TICK_HZ)]
    pub tick: u32,
    /// Snapshots per second (default: the tick rate).
    #[arg(long, env = "ARENA_SNAPSHOT_RATE")]
    pub snapshot_rate: Option<u32>,
    /// Turn lag compensation off for everyone.
    #[arg(long, env = "ARENA_NO_LAG_COMPENSATION")]
    pub no_lag_compensation: bool,
    /// The UDP port players reach this server on when it is not the bound
    /// one (a mapped container port, a forwarded port): what server queries
    /// and the LAN browser are told (default: the first --public-addr's
    /// port, else the bound port).
    #[arg(long, env = "ARENA_PUBLIC_PORT", value_name = "PORT")]
    pub public_port: Option<u16>,
    /// How far back lag compensation rewinds at most, milliseconds (0-2000;
    /// default 400, on the range 2000: its targets are bots): a shooter
    /// whose round trip, frame time and interpolation delay add up to more
    /// must lead, and nobody is hit further behind cover than this.
    #[arg(long, env = "ARENA_MAX_UNLAG_MS", value_name = "MS")]
    pub max_unlag_ms: Option<u16>,
    /// Resolve shots from the tick, as before sub-tick shots (not from the
    /// frame fire was pressed in).
    #[arg(long, env = "ARENA_NO_SUBTICK")]
    pub no_subtick: bool,
    /// Fly rockets from the tick their command ran, not brought up to the
    /// time their shooter fired them (the shooter leads moving targets).
    #[arg(long, env = "ARENA_NO_PROJECTILE_COMPENSATION")]
    pub no_projectile_compensation: bool,
    /// Play without the map's items (health, armour, the mega health, the
    /// quad damage): every player on its 100 health.
    #[arg(long, env = "ARENA_NO_ITEMS")]
    pub no_items: bool,
    /// Bots keep to the rifle (no rocket launcher).
    #[arg(long, env = "ARENA_BOT_RIFLE_ONLY")]
    pub bot_rifle_only: bool,
    /// Let browsers join: serve the page from DIR (the folder
    /// scripts/web-build.sh makes) and open a WebTransport endpoint beside
    /// the game's UDP port; the server prints a line beginning `web: ` with
    /// the link to open.
    #[arg(long, env = "ARENA_WEB", value_name = "DIR")]
    pub web: Option<PathBuf>,
    /// The web endpoint's port: UDP for WebTransport, TCP for the page
    /// (default: the game's port + 1).
    #[arg(long, env = "ARENA_WEB_PORT", value_name = "PORT")]
    pub web_port: Option<u16>,
    /// Most players connected at once (bots not counted).
    #[arg(long, env = "ARENA_MAX_CLIENTS", default_value_t = 16)]
    pub max_clients: usize,
    /// Server-side bots (default: 5 for play, 0 otherwise).
    #[arg(long, env = "ARENA_BOTS")]
    pub bots: Option<usize>,
    /// How well the bots play, 0-1.
    #[arg(long, env = "ARENA_BOT_SKILL", default_value_t = 0.5)]
    pub bot_skill: f32,
    /// Seed the bots' choices, to replay the same game (default: different every time).
    #[arg(long, env = "ARENA_BOT_SEED", value_name = "N")]
    pub bot_seed: Option<u64>,
    /// A match ends when someone reaches this many frags.
    #[arg(long, env = "ARENA_FRAG_LIMIT", default_value_t = 20)]
    pub frag_limit: u16,
    /// A match ends after this many minutes.
    #[arg(long, env = "ARENA_TIME_LIMIT_MIN", default_value_t = 10.0)]
    pub time_limit_min: f64,
    /// Make the game private: players need this password to join.
    #[arg(long, env = "ARENA_PASSWORD", value_name = "TEXT")]
    pub password: Option<String>,
    /// Read the password from the first line of FILE (so that `ps` does not
    /// show it, as with --password).
    // Parsed by hand so that an empty one reaches the check that says
    // where it came from (clap's own would only say a value is missing).
    #[arg(long, env = "ARENA_PASSWORD_FILE", value_name = "FILE", conflicts_with = "password",
          value_parser = any_path)]
    pub password_file: Option<PathBuf>,
    /// Open the server's remote console (`arena rcon`, the game console's
    /// `rcon`) to whoever knows the password on the first line of FILE.
    #[arg(long, env = "ARENA_RCON_PASSWORD_FILE", value_name = "FILE")]
    pub rcon_password_file: Option<PathBuf>,
    /// The name server browsers show (default: "NAME's game" when hosting,
    /// where `--name` is your player's; the machine's name for a dedicated
    /// server, whose `--name` is this).
    #[arg(long, env = "ARENA_SERVER_NAME", value_name = "TEXT")]
    pub server_name: Option<String>,
    /// A shooting range: targets strafing across lanes at known speeds and
    /// distances that cannot die, nobody hurt, hits and misses counted
    /// (no bots unless --bots says so).
    #[arg(long, env = "ARENA_RANGE")]
    pub range: bool,
    /// Record every match as a demo file in DIR (`arena demo play FILE` plays one back).
    #[arg(long, env = "ARENA_RECORD", value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// With --record: keep the newest N of Arena's demo files in DIR, deleting older ones.
    #[arg(long, env = "ARENA_RECORD_KEEP", value_name = "N", default_value_t = arena_server::DEFAULT_RECORD_KEEP as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub record_keep: u64,
    /// List the game on an internet master (`arena master`, or any dpmaster):
    /// HOST or HOST:PORT (default port 27950); repeatable (comma-separated in
    /// the environment).
    #[arg(long = "master", env = "ARENA_MASTERS", value_name = "HOST[:PORT]", value_delimiter = ',')]
    pub masters: Vec<String>,
    /// Seconds between heartbeats to the masters when nothing changes (a
    /// heartbeat also goes at start, when players come or go, and on a clean stop).
    #[arg(long, env = "ARENA_MASTER_HEARTBEAT_S", value_name = "S", default_value_t = arena_server::DEFAULT_HEARTBEAT_S)]
    pub master_heartbeat_s: u32,
    /// Ask the home router to forward the game port: `auto` (PCP, NAT-PMP,
    /// then UPnP-IGD), `off`, or some of `upnp,natpmp,pcp`. Default: auto
    /// for `arena host`, and for `arena play` listed on a master (`--master`),
    /// else off (a game nobody was invited to opens no port); off for
    /// `arena server` (given without a value: auto). Removed again on a
    /// clean stop.
    #[arg(long, env = "ARENA_MAP_PORT", value_name = "METHODS", num_args = 0..=1, default_missing_value = "auto")]
    pub map_port: Option<String>,
    /// The port mapping's lease asked for, seconds (renewed at half of it).
    #[arg(long, env = "ARENA_MAP_LEASE_S", value_name = "S", default_value_t = arena_server::DEFAULT_MAP_LEASE_S,
          value_parser = clap::value_parser!(u32).range(2..=604_800))]
    pub map_lease_s: u32,
    /// How matches are played: `ffa` (everyone against everyone), `tdm`
    /// (team deathmatch: two teams, balanced) or `duel` (two players, the
    /// rest watch and queue for the next match).
    #[arg(long, env = "ARENA_MODE", default_value = "ffa", value_parser = mode)]
    pub mode: arena_protocol::modes::Mode,
    /// Voice between players: `on` (push-to-talk, routed as chat is) or
    /// `off` (nobody's voice is passed on).
    #[arg(long, env = "ARENA_VOICE", value_name = "on|off", default_value = "on", value_parser = on_off)]
    pub voice: bool,
    /// Teammates hurt each other (team deathmatch; off by default).
    #[arg(long, env = "ARENA_FRIENDLY_FIRE")]
    pub friendly_fire: bool,
    /// The map: a built-in one by name (Foundry, Spire, Yard; any case), or a map
    /// file (a path ending in .ron: checked as `arena map check` does, and
    /// sent to players who lack it) [default: Foundry, or the first of --maps].
    #[arg(long, env = "ARENA_MAP", value_name = "NAME|FILE")]
    pub map: Option<String>,
    /// Maps played in turn, a match each: comma-separated built-in names or
    /// map files (`--maps foundry,spire`); the game starts on --map if it is
    /// among them, else on the first.
    #[arg(long, env = "ARENA_MAPS", value_name = "NAME,NAME", value_delimiter = ',')]
    pub maps: Vec<String>,
    /// What players may call votes on: some of `map,mode,kick,restart`, or
    /// `none` [default: all four].
    #[arg(long, env = "ARENA_VOTE_KINDS", value_name = "KINDS", value_parser = vote_kinds)]
    pub vote_kinds: Option<VoteKinds>,
    /// Most clients watching at once, apart from the players (0-32).
    #[arg(long, env = "ARENA_MAX_SPECTATORS", value_name = "N", default_value_t = arena_server::DEFAULT_MAX_SPECTATORS)]
    pub max_spectators: usize,
    /// How the server's systems run: `single` (one after another on the
    /// server's thread: cheapest for a server's small world) or `multi`
    /// (Bevy's thread pool), for comparing with `arena lab servercost`.
    #[arg(long, value_enum, default_value = "single")]
    pub executor: ExecutorArg,
}

/// `--mode`: a mode by its short name.
/// `on` or `off` (any case).
fn on_off(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{text:?}: on or off")),
    }
}

fn mode(text: &str) -> Result<arena_protocol::modes::Mode, String> {
    arena_protocol::modes::Mode::parse(text).ok_or_else(|| format!("{text:?} is no mode: ffa, tdm or duel"))
}

/// `--vote-kinds`: kinds by name, comma-separated, or `none` (one value:
/// a list, not a flag given several times).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VoteKinds(pub Vec<arena_protocol::vote::VoteKind>);

fn vote_kinds(text: &str) -> Result<VoteKinds, String> {
    arena_protocol::vote::VoteKind::parse_list(text).map(VoteKinds)
}

/// `--executor`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ExecutorArg {
    Single,
    Multi,
}

impl From<ExecutorArg> for arena_server::Executor {
    fn from(arg: ExecutorArg) -> Self {
        match arg {
            ExecutorArg::Single => arena_server::Executor::Single,
            ExecutorArg::Multi => arena_server::Executor::Multi,
        }
    }
}

impl GameArgs {
    /// The server's config: listening on `bind`, reached at `public_addrs`,
    /// with `default_bots` and `default_map_port` where no flag says otherwise.
    pub(crate) fn config(
        &self,
        bind: SocketAddr,
        public_addrs: Vec<SocketAddr>,
        default_bots: usize,
        default_map_port: arena_nat::Methods,
    ) -> Result<ServerConfig, String> {
        if let Some((master, port)) =
            self.masters.iter().find_map(|m| arena_udp::port_out_of_range(m).map(|port| (m, port)))
        {
            return Err(format!("--master {master}: port {port} is out of range (a UDP port is 1-65535)"));
        }
        let map_port = match &self.map_port {
            Some(text) => arena_nat::Methods::parse(text).map_err(|e| format!("--map-port: {e}"))?,
            None => default_map_port,
        };
        Ok(ServerConfig {
            name: self.server_name.clone().unwrap_or_default(),
            kind: arena_protocol::query::ServerKind::Dedicated,
            bind,
            public_addrs,
            public_port: self.public_port,
            max_clients: self.max_clients,
            tick_hz: self.tick,
            snapshot_hz: self.snapshot_rate.unwrap_or(self.tick),
            lag_compensation: !self.no_lag_compensation,
            max_unlag_ms: self.max_unlag_ms.unwrap_or(if self.range {
                arena_server::MAX_UNLAG_MS
            } else {
                arena_server::DEFAULT_MAX_UNLAG_MS
            }),
            bots: self.bots.unwrap_or(if self.range { 0 } else { default_bots }),
            bot_skill: self.bot_skill,
            bot_seed: self.bot_seed,
            rules: arena_server::MatchRules {
                frag_limit: self.frag_limit,
                time_limit_s: (self.time_limit_min * 60.0).round().clamp(0.0, MAX_TIME_LIMIT_S) as u32,
                ..arena_server::MatchRules::default()
            },
            password: match &self.password_file {
                Some(path) => password_from_file(path)?,
                None => password(self.password.as_deref())?,
            },
            stop_after: None,
            range: self.range,
            subtick: !self.no_subtick,
            projectile_compensation: !self.no_projectile_compensation,
            items: !self.no_items,
            voice: self.voice,
            bot_rockets: !self.bot_rifle_only,
            record_dir: self.record.clone(),
            record_keep: usize::try_from(self.record_keep).unwrap_or(usize::MAX),
            masters: self.masters.clone(),
            master_heartbeat_s: self.master_heartbeat_s,
            map_port,
            map_lease_s: self.map_lease_s,
            executor: self.executor.into(),
            mode: self.mode,
            friendly_fire: self.friendly_fire,
            max_spectators: self.max_spectators,
            map: match (&self.map, self.maps.first()) {
                (Some(map), _) if self.maps.is_empty() || self.maps.iter().any(|m| m.eq_ignore_ascii_case(map)) => {
                    map.clone()
                }
                (_, Some(first)) => first.clone(),
                (Some(map), None) => map.clone(),
                (None, None) => arena_sim::MapDef::built_in_names()[0].to_string(),
            },
            maps: self.maps.clone(),
            vote_kinds: self.vote_kinds.clone().map_or_else(|| arena_protocol::vote::VoteKind::ALL.to_vec(), |k| k.0),
            rcon_key: match &self.rcon_password_file {
                Some(path) => Some(rcon_key_from_file(path)?),
                None => None,
            },
            web_dir: self.web.clone(),
            web_port: self.web_port,
        })
    }
}

/// A path as given, empty included (see [`super::refuse_empty_password`]).
fn any_path(text: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(text))
}

/// The password in the first line of `path` (its line end not counted). A
/// file whose first line is empty or only white space is refused: an empty
/// secret mounted by mistake must not open a private game to anyone.
pub(super) fn password_from_file(path: &Path) -> Result<Password, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--password-file {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    if line.trim().is_empty() {
        return Err(format!(
            "--password-file {}: its first line is empty (nothing but white space), which would open the game to \
             anyone: write the password on its first line, or leave --password-file out for an open game",
            path.display()
        ));
    }
    Password::new(line).map_err(|e| format!("--password-file {}: {e}", path.display()))
}

/// The remote console's key from the first line of `path`: an empty one is
/// refused (it would open the console to anyone).
fn rcon_key_from_file(path: &Path) -> Result<arena_protocol::rcon::RconKey, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--rcon-password-file {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    arena_protocol::rcon::RconKey::with_new_salt(line)
        .map_err(|e| format!("--rcon-password-file {}: {e}", path.display()))
}

/// A `--password` flag's value (none: an open game).
pub(super) fn password(text: Option<&str>) -> Result<Password, String> {
    Password::new(text.unwrap_or_default()).map_err(|e| format!("--password: {e}"))
}
