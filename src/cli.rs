//! The `arena` command line: its subcommands and their options, parsed with
//! a `--config` file's options added, and made into the configs each mode
//! runs with. The families of options live below: `window` (the windowed
//! modes), `game` (a server's games), `lab` (the experiments), `netcode`
//! (the techniques and the link conditioner), `config_file` and `values`.
//! The windowed modes' options parse in every build; only a build with the
//! `window` feature makes the view's configs of them.

use std::ffi::OsString;
use std::net::{Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use arena_lab::bot_clients::{Behavior, BotsConfig};
use arena_protocol::DEFAULT_PORT;
use arena_server::ServerConfig;
#[cfg(feature = "window")]
use arena_view::{PlaybackStart, Screenshot, StartAction};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::master::MasterArgs;
use crate::servers;

mod config_file;
mod game;
mod lab;
mod netcode;
mod values;
mod window;

use config_file::ConfigFileArgsError;
use game::GameArgs;
pub(crate) use lab::Experiment;
use netcode::LinkArgs;
use values::positive_duration;
pub(crate) use window::WindowArgs;

/// Shortest and longest wait for server answers (`arena servers
/// --wait-ms`), milliseconds.
const SERVERS_WAIT_MS: (u64, u64) = (100, 60_000);

#[derive(Parser, Debug)]
#[command(
    name = "arena",
    version,
    about = "Arena: a 3D arena shooter that demonstrates FPS netcode.",
    long_about = "Arena: a 3D arena shooter that demonstrates FPS netcode (user commands, prediction, \
                  interpolation, lag compensation).\n\nWith no subcommand it opens the main menu."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub mode: Option<Mode>,
    #[command(flatten)]
    pub window: WindowArgs,
}

/// What `arena` runs; with none, the main menu.
#[derive(Subcommand, Debug)]
pub(crate) enum Mode {
    /// Quick play: host a game with bots and jump straight in.
    Play(PlayArgs),
    /// Host a game: a listen server on this machine, joined by your own player.
    Host(HostArgs),
    /// Join a game at ADDR (host or host:port; the default port is 27015).
    Join(JoinArgs),
    /// Run a dedicated server: no window, no GPU, no player of its own.
    /// Every option can also come from the environment (ARENA_ and the
    /// flag's name: ARENA_TICK, ARENA_MAX_UNLAG_MS, ...) and from a RON
    /// config file (--config); the command line wins, then the environment.
    Server(ServerArgs),
    /// List servers: the LAN's (by broadcast), an internet master's, and
    /// those at ADDR..., with their players and rules (Valve's A2S server
    /// queries; the dpmaster protocol with masters).
    Servers(ServersArgs),
    /// An internet master server (the dpmaster protocol): game servers
    /// register with `--master`, players' browsers and `arena servers
    /// --master` (and qstat) get the list. No window; stops cleanly on
    /// SIGTERM or Ctrl+C.
    Master(MasterArgs),
    /// Maps: `arena map check FILE...` says whether each is playable.
    Map {
        #[command(subcommand)]
        action: MapAction,
    },
    /// Recorded matches (demo files).
    Demo {
        #[command(subcommand)]
        action: DemoAction,
    },
    /// Headless experiments; each prints one JSON object on stdout.
    Lab {
        #[command(subcommand)]
        experiment: Experiment,
    },
    /// Run headless bot clients against a server (no window).
    Bots(BotsArgs),
    /// Run a command on a server's console (one started with
    /// --rcon-password-file), over its game port: a challenge, then the
    /// command with a keyed MAC (the password never travels).
    Rcon(RconArgs),
}

/// `arena rcon`.
#[derive(Args, Debug)]
pub(crate) struct RconArgs {
    /// The server: host or host:port (default port 27015).
    pub addr: String,
    /// The console line to run (`status`, `kick NAME`, `mp_fraglimit 30`, ...).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
    /// Read the rcon password from the first line of FILE (else from
    /// ARENA_RCON_PASSWORD). Not ARENA_RCON_PASSWORD_FILE: that one opens a
    /// server's remote console, and a player exporting it for this command
    /// would open one on every game they host.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<std::path::PathBuf>,
    /// How long to wait for the answer, milliseconds.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub wait_ms: u64,
}

impl RconArgs {
    /// The password: from --password-file, else ARENA_RCON_PASSWORD (never a
    /// flag of its own, which `ps` would show).
    pub(crate) fn password(&self) -> Result<String, String> {
        let password = match &self.password_file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("--password-file {}: {e}", path.display()))?
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
            None => std::env::var("ARENA_RCON_PASSWORD")
                .map_err(|_| "the rcon password: give --password-file FILE, or set ARENA_RCON_PASSWORD".to_string())?,
        };
        if password.trim().is_empty() {
            return Err("the rcon password is empty".into());
        }
        Ok(password)
    }
}

/// `arena play`.
#[derive(Args, Debug)]
pub(crate) struct PlayArgs {
    /// UDP port to listen on (all interfaces); another is taken if it is busy.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The game's options from a RON file, keyed like `arena server`'s
    /// (its `name` is the game's, --server-name here); the command line wins.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub game: GameArgs,
    #[command(flatten)]
    pub window: WindowArgs,
}

/// `arena host`.
#[derive(Args, Debug)]
pub(crate) struct HostArgs {
    /// UDP port to listen on (all interfaces).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// An address players use to reach you from outside (NAT, port forwarding); repeatable.
    #[arg(long = "public-addr", value_name = "ADDR")]
    pub public_addrs: Vec<SocketAddr>,
    /// The game's options from a RON file, keyed like `arena server`'s
    /// (its `name` is the game's, --server-name here); the command line wins.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub game: GameArgs,
    #[command(flatten)]
    pub window: WindowArgs,
}

/// `arena join`.
#[derive(Args, Debug)]
pub(crate) struct JoinArgs {
    /// Server address, such as 192.168.1.20, 192.168.1.20:27015 or example.org.
    pub addr: String,
    /// The game's password, if it is private.
    #[arg(long, value_name = "TEXT")]
    pub password: Option<String>,
    /// Join to watch: follow the players (mouse buttons), first person or
    /// chase view (Space), or fly freely.
    #[arg(long)]
    pub spectate: bool,
    #[command(flatten)]
    pub window: WindowArgs,
}

/// `arena server`.
#[derive(Args, Debug)]
pub(crate) struct ServerArgs {
    /// Options from a RON file, keyed like the flags (`(bots: 4, tick: 128)`);
    /// an unknown key is refused.
    #[arg(long, value_name = "FILE", env = "ARENA_CONFIG")]
    pub config: Option<PathBuf>,
    /// The name server browsers show (default: this machine's name).
    /// `--server-name` says the same on this command; give one of the two.
    #[arg(long, value_name = "TEXT", env = "ARENA_NAME")]
    pub name: Option<String>,
    /// Address and UDP port to listen on: [::] takes every interface, IPv4 and
    /// IPv6 (IPv4 only where the machine has no IPv6); 0.0.0.0 every IPv4 one.
    #[arg(long, env = "ARENA_BIND", default_value_t = SocketAddr::from((Ipv6Addr::UNSPECIFIED, DEFAULT_PORT)),
          value_parser = arena_udp::parse_socket_addr)]
    pub bind: SocketAddr,
    /// An address players use to reach this server from outside (NAT, port forwarding); repeatable
    /// (comma-separated in the environment).
    #[arg(long = "public-addr", value_name = "ADDR", env = "ARENA_PUBLIC_ADDR", value_delimiter = ',')]
    pub public_addrs: Vec<SocketAddr>,
    #[command(flatten)]
    pub game: GameArgs,
    /// Stop after this many seconds (for scripts and tests).
    #[arg(long, env = "ARENA_SECONDS")]
    pub seconds: Option<f64>,
}

/// `arena servers`.
#[derive(Args, Debug)]
pub(crate) struct ServersArgs {
    /// Servers to ask (host or host:port); none and no --master: the LAN.
    pub addrs: Vec<String>,
    /// Also look for servers on the local networks.
    #[arg(long)]
    pub lan: bool,
    /// Ask this internet master for its list (HOST or HOST:PORT, default
    /// port 27950); repeatable.
    #[arg(long = "master", value_name = "HOST[:PORT]")]
    pub masters: Vec<String>,
    /// One JSON object per server and line.
    #[arg(long)]
    pub json: bool,
    /// How long to wait for answers, milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub wait_ms: u64,
}

/// `arena bots`.
#[derive(Args, Debug)]
pub(crate) struct BotsArgs {
    /// Server address (host or host:port).
    #[arg(long)]
    pub connect: String,
    /// Number of bots.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Bot names are this prefix and a number.
    #[arg(long, default_value = "Bot ")]
    pub name: String,
    /// The game's password, if it is private.
    #[arg(long, value_name = "TEXT")]
    pub password: Option<String>,
    /// Write a JSON report of what each bot saw to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// How the bots play.
    #[arg(long, value_enum, default_value = "aim")]
    pub behavior: Behavior,
    /// Leave and rejoin at random (5-40 s in, 1-5 s out), for soak tests.
    #[arg(long)]
    pub churn: bool,
    /// Say TEXT in the chat once in the game (each bot): the report counts
    /// the lines received and refused.
    #[arg(long, value_name = "TEXT")]
    pub say: Option<String>,
    /// Say the `--say` line again every S seconds (under 1 s is over the
    /// server's chat limit), for soak tests.
    #[arg(long, value_name = "S", requires = "say", value_parser = values::say_interval)]
    pub say_every_s: Option<f64>,
    /// Call a vote every 20-40 s (a map or a restart) and vote yes on every
    /// vote shown, for soak tests.
    #[arg(long)]
    pub vote: bool,
    /// Join to watch (the report says `spectator`).
    #[arg(long)]
    pub spectate: bool,
    /// Play for this team (`red` or `blue`; team deathmatch), asked for once in the game.
    #[arg(long, value_name = "TEAM", value_parser = team, conflicts_with = "spectate")]
    pub team: Option<arena_protocol::modes::Team>,
    /// Talk: a second after getting into the game, each bot holds its
    /// push-to-talk key while this WAV file plays (any rate and channels;
    /// at most 10 minutes), then lets go.
    #[arg(long, value_name = "IN.wav")]
    pub voice_file: Option<PathBuf>,
    /// Write what each bot heard (the talkers mixed, 16 kHz mono) to this
    /// WAV file at the end (the second bot's and later ones' with their
    /// names added).
    #[arg(long, value_name = "OUT.wav")]
    pub voice_out: Option<PathBuf>,
    /// Frames a second of the bot loop: a low rate plays like a slow
    /// machine's window (1-1000).
    #[arg(long, default_value_t = arena_lab::bot_clients::FRAMES_PER_S, value_parser = values::frame_rate)]
    pub fps: f64,
    /// Each bot's link (fake latency, jitter, loss): lagged shooters,
    /// compensated by the server.
    #[command(flatten)]
    pub link: LinkArgs,
    /// Ask this master for an introduction (UDP hole punching) when the
    /// server stays silent (HOST or HOST:PORT); repeatable.
    #[arg(long = "master", value_name = "HOST[:PORT]")]
    pub masters: Vec<String>,
}

/// `arena map`'s actions.
#[derive(Subcommand, Debug)]
pub(crate) enum MapAction {
    /// Check map files (RON): bounds and counts, steps, names, spawns inside
    /// geometry or in the air, navigation islands and spawns that cannot
    /// reach each other. Says what is wrong in words; exits 1 if any file
    /// is not playable.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// `arena demo`'s actions on a demo file.
#[derive(Subcommand, Debug)]
pub(crate) enum DemoAction {
    /// Print a JSON summary of FILE (header, chunks, frames, ticks), reading
    /// every chunk; a damaged file is an error that says what and where.
    Info { file: PathBuf },
    /// Replay FILE's recorded commands through the shared rules and check
    /// that every recorded state, shot, rocket and score comes out the same;
    /// time a seek to every minute. Prints one JSON object; exits 1 on a mismatch.
    Verify {
        file: PathBuf,
        /// A map file the demo may be on (a server's `--map FILE`), besides
        /// the built-in maps; repeatable. It must pass `arena map check`.
        #[arg(long = "map", value_name = "FILE")]
        maps: Vec<PathBuf>,
    },
    /// Play FILE back in a window: a timeline (Space pause, arrows step and
    /// speed, drag to seek), any player's eyes as their client drew the world
    /// or a free camera, hitboxes, ghosts and the kill feed.
    Play(DemoPlayArgs),
}

/// `arena demo play`.
#[derive(Args, Debug)]
pub(crate) struct DemoPlayArgs {
    pub file: PathBuf,
    /// Follow this player's eyes (default: the first player).
    #[arg(long, value_name = "NAME")]
    pub follow: Option<String>,
    /// Start the free camera instead.
    #[arg(long, conflicts_with = "follow")]
    pub free_camera: bool,
    /// Start this many seconds in.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub at: f64,
    /// Playback speed: 0.25, 0.5, 1, 2 or 4.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f32,
    /// Start with every shot's hitboxes shown.
    #[arg(long)]
    pub show_hitboxes: bool,
    /// Save a screenshot to FILE one second before --seconds runs out.
    #[arg(long, value_name = "FILE", requires = "seconds")]
    pub screenshot: Option<PathBuf>,
    /// With --screenshot: quit after this many seconds.
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// Window size in pixels, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = values::parse_resolution)]
    pub resolution: (u32, u32),
}

/// What `arena demo play` opens: a file, where and how it starts, the
/// window's size, and the screenshot to take.
#[cfg(feature = "window")]
#[derive(Debug)]
pub(crate) struct DemoPlayback {
    pub file: PathBuf,
    pub start: PlaybackStart,
    pub resolution: (u32, u32),
    pub screenshot: Option<Screenshot>,
}

/// Why the command line cannot be used.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Refused by the grammar, or `--help` or `--version` asked for: clap
    /// prints it and exits (see [`clap::Error::exit`]).
    Clap(clap::Error),
    /// A `--config` file that cannot be read or does not fit the subcommand.
    ConfigFile(ConfigFileArgsError),
    /// `arena server` given both `--name` and `--server-name` (or their
    /// variables), which say the same thing.
    TwoNames,
    /// A password given empty or only white space, by `source` (a flag, a
    /// variable of the environment, or a config file's key): it would open
    /// the game to anyone, so it is refused rather than taken for none.
    EmptyPassword { source: String },
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Clap(e) => write!(f, "{e}"),
            CliError::ConfigFile(e) => write!(f, "{e}"),
            CliError::TwoNames => f.write_str(
                "`arena server` was given two names: --name (ARENA_NAME) and --server-name (ARENA_SERVER_NAME) \
                 both name the server; give one of them",
            ),
            CliError::EmptyPassword { source } => write!(
                f,
                "{source} is empty (nothing but white space), which would open the game to anyone: give the \
                 password, or leave it out for an open game"
            ),
        }
    }
}

impl From<clap::Error> for CliError {
    fn from(e: clap::Error) -> Self {
        CliError::Clap(e)
    }
}

impl From<ConfigFileArgsError> for CliError {
    fn from(e: ConfigFileArgsError) -> Self {
        CliError::ConfigFile(e)
    }
}

/// The grammar of the command line: [`Cli`]'s, with the environment taken
/// off `host` and `play`. The `ARENA_` variables of [`GameArgs`] configure
/// a dedicated server (a container's, a unit file's); a player's own game
/// on the same machine must not change by them.
pub(crate) fn command() -> clap::Command {
    let without_environment = |mode: clap::Command| mode.mut_args(|arg| arg.env(None));
    Cli::command().mut_subcommand("host", without_environment).mut_subcommand("play", without_environment)
}

/// Parses the command line (the program's name first), with the options of
/// a `--config` file added where `server`, `host` or `play` has one: each
/// option given neither on the command line nor (`server`) in the
/// environment, so that those win over the file.
pub(crate) fn parse<I, T>(args: I) -> Result<Cli, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut grammar = command();
    let mut matches = grammar.try_get_matches_from_mut(&args)?;
    let added = config_file::file_flags(&grammar, &matches)?;
    if !added.is_empty() {
        // The file's flags go last: `server`, `host` and `play` take no
        // positional arguments, so they are the subcommand's.
        args.extend(added.iter().cloned());
        matches = command().try_get_matches_from(&args)?;
    }
    refuse_empty_password(&matches, &added)?;
    refuse_two_names(&matches, &added)?;
    Cli::from_arg_matches(&matches).map_err(|e| CliError::Clap(e.format(&mut command())))
}

/// Whether a `--config` file's options gave `flag` (as `flag=VALUE`, the
/// form `config_file::file_flags` adds them in).
fn added_by_file(added: &[OsString], flag: &str) -> bool {
    added.iter().any(|added| added.to_string_lossy().strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')))
}

/// Refuses `arena server --name A --server-name B` (or the same through
/// the environment): a server has one name, and taking one of two silently
/// hides a mistake. A config file's `name` never counts here: the command
/// line and the environment win over the file (see `config_file`).
fn refuse_two_names(matches: &clap::ArgMatches, added: &[OsString]) -> Result<(), CliError> {
    let Some(("server", given)) = matches.subcommand() else { return Ok(()) };
    let from_file = added_by_file(added, "--name");
    let named = |id: &str| given.value_source(id).is_some_and(|s| s != clap::parser::ValueSource::DefaultValue);
    if named("name") && named("server_name") && !from_file {
        return Err(CliError::TwoNames);
    }
    Ok(())
}

/// Refuses a password, or a password file's name, given empty or only
/// white space, naming where it came from: the flag, the environment
/// (`arena server`) or a config file's key. An unset password is an open
/// game; one set to nothing is a mistake (a variable left blank, an empty
/// secret mounted) that must not open a private game to anyone. A password
/// file's contents are checked when it is read
/// ([`game::password_from_file`]).
fn refuse_empty_password(matches: &clap::ArgMatches, added: &[OsString]) -> Result<(), CliError> {
    // Only where a password makes a game private: a player's empty one
    // (`join`, `bots`) only means an open game is joined.
    let Some(("server" | "host" | "play", given)) = matches.subcommand() else { return Ok(()) };
    let blank = |text: &str| text.trim().is_empty();
    let value = |id: &str| match given.try_get_one::<String>(id) {
        Ok(Some(text)) => Some(text.clone()),
        _ => given.try_get_one::<std::path::PathBuf>(id).ok().flatten().map(|p| p.to_string_lossy().into_owned()),
    };
    // Where `id`'s value came from, in the words a user would look for.
    let source = |id: &str, flag: &str, variable: &str, key: &str| {
        let from_file = added_by_file(added, flag);
        match given.value_source(id) {
            Some(clap::parser::ValueSource::EnvVariable) => format!("{variable} (the environment)"),
            _ if from_file => {
                let file = given.try_get_one::<std::path::PathBuf>("config").ok().flatten();
                format!("`{key}` in the config file {}", file.map(|f| f.display().to_string()).unwrap_or_default())
            }
            _ => flag.to_string(),
        }
    };
    if value("password").is_some_and(|text| blank(&text)) {
        return Err(CliError::EmptyPassword { source: source("password", "--password", "ARENA_PASSWORD", "password") });
    }
    let Some(path) = value("password_file") else { return Ok(()) };
    let named_by = source("password_file", "--password-file", "ARENA_PASSWORD_FILE", "password_file");
    if blank(&path) {
        return Err(CliError::EmptyPassword { source: named_by });
    }
    // The file's first line, read here so that the message can say which
    // source named the file; a file that cannot be read is reported when
    // the game reads it (`game::password_from_file`).
    if let Ok(file) = std::fs::File::open(&path) {
        use std::io::{BufRead, Read};
        let mut first = String::new();
        let read = std::io::BufReader::new(file.take(MAX_PASSWORD_LINE_BYTES)).read_line(&mut first);
        if read.is_ok() && blank(&first) {
            return Err(CliError::EmptyPassword {
                source: format!("the first line of the password file {path} (named by {named_by})"),
            });
        }
    }
    Ok(())
}

/// `--team`: red or blue.
fn team(text: &str) -> Result<arena_protocol::modes::Team, String> {
    arena_protocol::modes::Team::parse(text).ok_or_else(|| format!("{text:?} is no team: red or blue"))
}

/// How much of a password file's first line is read to see whether it is
/// blank (a password is at most a few hundred bytes).
const MAX_PASSWORD_LINE_BYTES: u64 = 4096;

#[cfg(feature = "window")]
impl PlayArgs {
    /// The quick-play server: every interface, bots unless `--bots` says
    /// otherwise. As the menu's Quick play, a game nobody was invited to
    /// opens no port: the home router is asked only when the game is to be
    /// found on the internet (`--master`) or `--map-port` says so.
    pub(crate) fn server_config(&self) -> Result<ServerConfig, String> {
        let bind = SocketAddr::from((Ipv6Addr::UNSPECIFIED, self.port));
        let map_port = if self.game.masters.is_empty() { arena_nat::Methods::NONE } else { arena_nat::Methods::ALL };
        self.game.config(bind, Vec::new(), arena_view::QUICK_PLAY_BOTS, map_port)
    }
}

#[cfg(feature = "window")]
impl HostArgs {
    /// The listen server: every interface, no bots unless `--bots` says
    /// otherwise, the home router asked for the port.
    pub(crate) fn server_config(&self) -> Result<ServerConfig, String> {
        let bind = SocketAddr::from((Ipv6Addr::UNSPECIFIED, self.port));
        self.game.config(bind, self.public_addrs.clone(), 0, arena_nat::Methods::ALL)
    }
}

#[cfg(feature = "window")]
impl JoinArgs {
    /// Joining the server at `addr`, resolved, with the password given.
    pub(crate) fn start(&self) -> Result<StartAction, String> {
        let addr = arena_client::resolve_server_addr(&self.addr).map_err(|e| e.to_string())?;
        Ok(StartAction::Join(addr, game::password(self.password.as_deref())?, self.spectate))
    }
}

impl ServerArgs {
    /// The dedicated server: named `--name` (else `--server-name`), no bots
    /// and no port mapping unless asked, stopping after `--seconds`.
    pub(crate) fn config(&self) -> Result<ServerConfig, String> {
        let stop_after = self.seconds.map(positive_duration).transpose()?;
        let config = self.game.config(self.bind, self.public_addrs.clone(), 0, arena_nat::Methods::NONE)?;
        Ok(ServerConfig { stop_after, name: self.name.clone().unwrap_or(config.name.clone()), ..config })
    }
}

impl ServersArgs {
    /// How long to wait for answers, within [`SERVERS_WAIT_MS`].
    pub(crate) fn wait(&self) -> Duration {
        Duration::from_millis(self.wait_ms.clamp(SERVERS_WAIT_MS.0, SERVERS_WAIT_MS.1))
    }

    /// Whom to ask.
    pub(crate) fn ask(self) -> servers::Ask {
        servers::Ask { addrs: self.addrs, lan: self.lan, masters: self.masters }
    }
}

impl BotsArgs {
    /// The bots' config, checked: a password and link the game takes, a
    /// server found, a positive run time and 1 to a full server's players.
    pub(crate) fn config(&self) -> Result<BotsConfig, String> {
        let password = game::password(self.password.as_deref())?;
        let conditions = self.link.conditions()?;
        let server = arena_client::resolve_server_addr(&self.connect).map_err(|e| e.to_string())?;
        positive_duration(self.seconds)?;
        if self.count == 0 || self.count > arena_protocol::MAX_PLAYERS {
            return Err(format!("--count must be 1..={}", arena_protocol::MAX_PLAYERS));
        }
        Ok(BotsConfig {
            server,
            count: self.count,
            seconds: self.seconds,
            name_prefix: self.name.clone(),
            password,
            behavior: self.behavior,
            churn: self.churn,
            conditions,
            introducers: self.masters.clone(),
            frames_per_s: self.fps,
            say: self.say.clone(),
            say_every_s: self.say_every_s,
            vote: self.vote,
            spectate: self.spectate,
            team: self.team,
            voice: match &self.voice_file {
                Some(path) => {
                    Some(std::sync::Arc::new(arena_client::voice::read_wav(path).map_err(|e| e.to_string())?))
                }
                None => None,
            },
            voice_out: self.voice_out.clone(),
        })
    }
}

#[cfg(feature = "window")]
impl DemoPlayArgs {
    /// The playback asked for, checked: a speed the timeline has, a start
    /// time of 0 or more, a screenshot with its run time.
    pub(crate) fn playback(self) -> Result<DemoPlayback, String> {
        if !arena_view::SPEEDS.contains(&self.speed) {
            return Err(format!("--speed {}: one of {:?}", self.speed, arena_view::SPEEDS));
        }
        if !(self.at.is_finite() && self.at >= 0.0) {
            return Err("--at must be a number of seconds, 0 or more".into());
        }
        let screenshot = window::screenshot(self.screenshot, self.seconds, false, false)?;
        let start = PlaybackStart {
            follow: self.follow,
            at_s: self.at,
            speed: self.speed,
            show_hitboxes: self.show_hitboxes,
            free_camera: self.free_camera,
        };
        Ok(DemoPlayback { file: self.file, start, resolution: self.resolution, screenshot })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Cli, String> {
        parse(line.split_whitespace()).map_err(|e| e.to_string())
    }

    fn mode(line: &str) -> Mode {
        match parse_line(line) {
            Ok(Cli { mode: Some(mode), .. }) => mode,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[cfg(feature = "window")]
    #[test]
    fn quick_play_opens_no_port_unless_asked_and_a_host_does() {
        let map_port = |line: &str| match mode(line) {
            Mode::Play(play) => play.server_config().expect("a config").map_port,
            Mode::Host(host) => host.server_config().expect("a config").map_port,
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(map_port("arena play"), arena_nat::Methods::NONE, "nobody invited: no port opened");
        assert_eq!(map_port("arena play --master 192.0.2.1"), arena_nat::Methods::ALL, "listed: reachable");
        assert_eq!(map_port("arena play --map-port"), arena_nat::Methods::ALL);
        assert_eq!(map_port("arena play --master 192.0.2.1 --map-port off"), arena_nat::Methods::NONE);
        assert_eq!(map_port("arena host"), arena_nat::Methods::ALL);
    }

    /// A config file in the temporary directory, removed when dropped.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str, text: &str) -> Self {
            let path = std::env::temp_dir().join(format!("arena-cli-{}-{name}.ron", std::process::id()));
            std::fs::write(&path, text).expect("the temporary directory takes a file");
            Self(path)
        }

        fn path(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn common_commands_reach_their_modes() {
        assert!(matches!(parse_line("arena"), Ok(Cli { mode: None, .. })));
        let Mode::Server(server) = mode("arena server --bots 2 --bind 127.0.0.1:27016 --seconds 5") else { panic!() };
        assert_eq!((server.game.bots, server.bind.port(), server.seconds), (Some(2), 27016, Some(5.0)));
        let Mode::Host(host) = mode("arena host --port 27020 --public-addr 192.0.2.1:27020 --name Ada") else {
            panic!()
        };
        assert_eq!((host.port, host.public_addrs.len(), host.window.name.as_deref()), (27020, 1, Some("Ada")));
        let Mode::Play(play) = mode("arena play --bots 3 --fake-latency-ms 80") else { panic!() };
        assert_eq!((play.game.bots, play.window.link.fake_latency_ms), (Some(3), 80.0));
        let Mode::Join(join) = mode("arena join example.org --password sesame") else { panic!() };
        assert_eq!((join.addr.as_str(), join.password.as_deref()), ("example.org", Some("sesame")));
        let Mode::Bots(bots) = mode("arena bots --connect 127.0.0.1 --count 4 --behavior strafe --churn") else {
            panic!()
        };
        assert_eq!((bots.count, bots.behavior, bots.churn), (4, Behavior::Strafe, true));
        let Mode::Servers(servers) = mode("arena servers 192.0.2.1 --json --wait-ms 5") else { panic!() };
        assert_eq!((servers.addrs.len(), servers.json, servers.wait()), (1, true, Duration::from_millis(100)));
        assert!(matches!(mode("arena master --seconds 1"), Mode::Master(_)));
        assert!(matches!(mode("arena demo verify match.dem"), Mode::Demo { action: DemoAction::Verify { .. } }));
        assert!(matches!(mode("arena demo play match.dem --speed 2"), Mode::Demo { action: DemoAction::Play(_) }));
        let Mode::Lab { experiment: Experiment::Peek { lab, fps } } = mode("arena lab peek --fps 60 --seconds 5")
        else {
            panic!()
        };
        assert_eq!((fps, lab.seconds), (60.0, 5.0));
        let Mode::Lab { experiment: Experiment::Master(master) } = mode("arena lab master --servers 3") else {
            panic!()
        };
        assert_eq!(master.servers, 3);
        assert!(parse_line("arena server --tick many").is_err());
        assert!(parse_line("arena lab nothing").is_err());
    }

    #[test]
    fn a_servers_config_comes_from_its_flags() {
        assert!(
            matches!(parse_line("arena server --name Friday --server-name Other"), Err(e) if e.contains("two names")),
            "two names for one server are refused"
        );
        let Mode::Server(server) = mode("arena server --name Friday --bots 2 --seconds 3") else { panic!() };
        let config = server.config();
        assert_eq!(config.as_ref().map(|c| (c.name.as_str(), c.bots)), Ok(("Friday", 2)));
        assert_eq!(config.map(|c| c.stop_after), Ok(Some(Duration::from_secs(3))));
        #[cfg(feature = "window")]
        {
            let Mode::Play(play) = mode("arena play") else { panic!() };
            assert_eq!(play.server_config().map(|c| c.bots), Ok(arena_view::QUICK_PLAY_BOTS));
        }
    }

    #[test]
    fn a_config_file_counts_wherever_its_flag_stands_and_the_command_line_wins() {
        let file =
            TempFile::new("anywhere", "(name: \"From file\", bots: 4, tick: 32, frag_limit: 9, no_subtick: true)");
        let path = file.path();
        for line in [
            format!("arena server --config {path} --tick 128"),
            format!("arena server --tick 128 --config {path}"),
            format!("arena server --tick=128 --config={path}"),
            format!("arena --resolution 800x600 server --tick 128 --config {path}"),
        ] {
            let Mode::Server(server) = mode(&line) else { panic!("{line}") };
            let got = (server.name.as_deref(), server.game.bots, server.game.tick, server.game.frag_limit);
            assert_eq!(got, (Some("From file"), Some(4), 128, 9), "{line}");
            assert!(server.game.no_subtick, "{line}");
        }
        // On a listen server the file's `name` is the game's; `--name` stays the player's.
        let Mode::Host(host) = mode(&format!("arena host --name Ada --config {path} --bots 1")) else { panic!() };
        let got = (host.game.server_name.as_deref(), host.window.name.as_deref(), host.game.bots, host.game.tick);
        assert_eq!(got, (Some("From file"), Some("Ada"), Some(1), 32));
        let Mode::Play(play) = mode(&format!("arena play --config {path} --port 27030")) else { panic!() };
        assert_eq!((play.game.bots, play.game.frag_limit, play.port), (Some(4), 9, 27030));
        assert!(
            matches!(parse_line(&format!("arena join example.org --config {path}")), Err(e) if e.contains("--config"))
        );
    }

    #[test]
    fn a_dedicated_servers_own_options_are_refused_by_host_and_play() {
        let bind = TempFile::new("bind", "(bind: \"0.0.0.0:27015\", bots: 2)");
        let refused = parse_line(&format!("arena host --config {}", bind.path())).err().unwrap_or_default();
        assert!(refused.contains("`bind`") && refused.contains("arena host"), "{refused}");
        let Mode::Server(server) = mode(&format!("arena server --config {}", bind.path())) else { panic!() };
        assert_eq!(server.bind, SocketAddr::from(([0, 0, 0, 0], 27015)));
        let public = TempFile::new("public", "(public_addr: [\"192.0.2.7:27015\"], password: \"-dash\")");
        let refused = parse_line(&format!("arena play --config {}", public.path())).err().unwrap_or_default();
        assert!(refused.contains("`public_addr`") && refused.contains("arena play"), "{refused}");
        let Mode::Host(host) = mode(&format!("arena host --config {}", public.path())) else { panic!() };
        assert_eq!((host.public_addrs.len(), host.game.password.as_deref()), (1, Some("-dash")));
    }

    #[test]
    fn host_and_play_read_no_environment_and_server_reads_it_by_the_flags_names() {
        let grammar = command();
        let env_of = |mode: &str, long: &str| {
            let mode = grammar.find_subcommand(mode).expect("a subcommand");
            let arg = mode.get_arguments().find(|a| a.get_long() == Some(long)).expect("an option");
            arg.get_env().map(|name| name.to_string_lossy().into_owned())
        };
        for mode in ["host", "play"] {
            let subcommand = grammar.find_subcommand(mode).expect("a subcommand");
            let read = subcommand.get_arguments().filter_map(|a| a.get_env()).collect::<Vec<_>>();
            assert!(read.is_empty(), "arena {mode} reads {read:?}");
        }
        // `ARENA_` and the flag's name, as the README says; `--master` is a list.
        let server = grammar.find_subcommand("server").expect("a subcommand");
        for long in server.get_arguments().filter_map(|a| a.get_long()) {
            let want = match long {
                "help" | "executor" => None,
                "master" => Some("ARENA_MASTERS".to_string()),
                long => Some(format!("ARENA_{}", long.replace('-', "_").to_uppercase())),
            };
            assert_eq!(env_of("server", long), want, "--{long}");
        }
    }

    /// Runs in a copy of this test binary whose environment has ARENA_
    /// variables set (a test cannot set its own: the environment is the
    /// whole process's, shared by the tests running beside it).
    #[test]
    fn the_environment_changes_server_and_not_host_or_play() {
        const CHILD: &str = "ARENA_CLI_TEST_CHILD";
        let name = "cli::tests::the_environment_changes_server_and_not_host_or_play";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
                .args([name, "--exact", "--test-threads=1"])
                .env(CHILD, "1")
                .env("ARENA_BOTS", "3")
                .env("ARENA_TICK", "32")
                .env("ARENA_SERVER_NAME", "From env")
                .output()
                .expect("the test binary runs");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}");
            return;
        }
        let file = TempFile::new("env", "(bots: 4, frag_limit: 9)");
        let path = file.path();
        let Mode::Server(server) = mode(&format!("arena server --config {path}")) else { panic!() };
        let got = (server.game.bots, server.game.tick, server.game.frag_limit, server.game.server_name.as_deref());
        assert_eq!(got, (Some(3), 32, 9, Some("From env")), "the environment wins over the file");
        let Mode::Server(server) = mode("arena server --bots 1") else { panic!() };
        assert_eq!(server.game.bots, Some(1), "the command line wins over the environment");
        let Mode::Host(host) = mode("arena host") else { panic!() };
        let got = (host.game.bots, host.game.tick, host.game.server_name);
        assert_eq!(got, (None, arena_sim::DEFAULT_TICK_HZ, None));
        let Mode::Play(play) = mode(&format!("arena play --config {path}")) else { panic!() };
        assert_eq!((play.game.bots, play.game.tick, play.game.frag_limit), (Some(4), arena_sim::DEFAULT_TICK_HZ, 9));
    }
}
