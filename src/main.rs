//! `arena`: the game's one binary. With no arguments it opens the main menu;
//! subcommands host, join, or run a dedicated server.

use std::net::{Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use arena_client::{LinkConditions, NetcodeSettings};
use arena_lab::experiments::{LabSettings, Switch};
use arena_protocol::DEFAULT_PORT;
use arena_protocol::key::Password;
use arena_server::ServerConfig;
use arena_view::{Screenshot, StartAction, ViewConfig};
use clap::{Args, Parser, Subcommand};

mod master;
mod servers;

#[derive(Parser, Debug)]
#[command(
    name = "arena",
    version,
    about = "Arena: a 3D arena shooter that demonstrates FPS netcode.",
    long_about = "Arena: a 3D arena shooter that demonstrates FPS netcode (user commands, prediction, \
                  interpolation, lag compensation).\n\nWith no subcommand it opens the main menu."
)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    window: WindowArgs,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// Quick play: host a game with bots and jump straight in.
    Play {
        /// UDP port to listen on (all interfaces); another is taken if it is busy.
        #[arg(long, default_value_t = DEFAULT_PORT)]
        port: u16,
        #[command(flatten)]
        game: GameArgs,
        #[command(flatten)]
        window: WindowArgs,
    },
    /// Host a game: a listen server on this machine, joined by your own player.
    Host {
        /// UDP port to listen on (all interfaces).
        #[arg(long, default_value_t = DEFAULT_PORT)]
        port: u16,
        /// An address players use to reach you from outside (NAT, port forwarding); repeatable.
        #[arg(long = "public-addr", value_name = "ADDR")]
        public_addrs: Vec<SocketAddr>,
        #[command(flatten)]
        game: GameArgs,
        #[command(flatten)]
        window: WindowArgs,
    },
    /// Join a game at ADDR (host or host:port; the default port is 27015).
    Join {
        /// Server address, such as 192.168.1.20, 192.168.1.20:27015 or example.org.
        addr: String,
        /// The game's password, if it is private.
        #[arg(long, value_name = "TEXT")]
        password: Option<String>,
        #[command(flatten)]
        window: WindowArgs,
    },
    /// Run a dedicated server: no window, no GPU, no player of its own.
    /// Every option can also come from the environment (ARENA_ and the
    /// flag's name: ARENA_TICK, ARENA_MAX_UNLAG_MS, ...) and from a RON
    /// config file (--config); the command line wins, then the environment.
    Server {
        /// Options from a RON file, keyed like the flags (`(bots: 4, tick: 128)`);
        /// an unknown key is refused.
        #[arg(long, value_name = "FILE", env = "ARENA_CONFIG")]
        config: Option<PathBuf>,
        /// The name server browsers show (default: this machine's name).
        #[arg(long, value_name = "TEXT", env = "ARENA_NAME")]
        name: Option<String>,
        /// Address and UDP port to listen on: [::] takes every interface, IPv4 and
        /// IPv6 (IPv4 only where the machine has no IPv6); 0.0.0.0 every IPv4 one.
        #[arg(long, env = "ARENA_BIND", default_value_t = SocketAddr::from((Ipv6Addr::UNSPECIFIED, DEFAULT_PORT)))]
        bind: SocketAddr,
        /// An address players use to reach this server from outside (NAT, port forwarding); repeatable
        /// (comma-separated in the environment).
        #[arg(long = "public-addr", value_name = "ADDR", env = "ARENA_PUBLIC_ADDR", value_delimiter = ',')]
        public_addrs: Vec<SocketAddr>,
        #[command(flatten)]
        game: GameArgs,
        /// Stop after this many seconds (for scripts and tests).
        #[arg(long, env = "ARENA_SECONDS")]
        seconds: Option<f64>,
    },
    /// List servers: the LAN's (by broadcast), an internet master's, and
    /// those at ADDR..., with their players and rules (Valve's A2S server
    /// queries; the dpmaster protocol with masters).
    Servers {
        /// Servers to ask (host or host:port); none and no --master: the LAN.
        addrs: Vec<String>,
        /// Also look for servers on the local networks.
        #[arg(long)]
        lan: bool,
        /// Ask this internet master for its list (HOST or HOST:PORT, default
        /// port 27950); repeatable.
        #[arg(long = "master", value_name = "HOST[:PORT]")]
        masters: Vec<String>,
        /// One JSON object per server and line.
        #[arg(long)]
        json: bool,
        /// How long to wait for answers, milliseconds.
        #[arg(long, default_value_t = 2000, value_name = "MS")]
        wait_ms: u64,
    },
    /// An internet master server (the dpmaster protocol): game servers
    /// register with `--master`, players' browsers and `arena servers
    /// --master` (and qstat) get the list. No window; stops cleanly on
    /// SIGTERM or Ctrl+C.
    Master(master::MasterArgs),
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
    Bots {
        /// Server address (host or host:port).
        #[arg(long)]
        connect: String,
        /// Number of bots.
        #[arg(long, default_value_t = 1)]
        count: usize,
        /// Stop after this many seconds.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Bot names are this prefix and a number.
        #[arg(long, default_value = "Bot ")]
        name: String,
        /// The game's password, if it is private.
        #[arg(long, value_name = "TEXT")]
        password: Option<String>,
        /// Write a JSON report of what each bot saw to FILE.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// How the bots play.
        #[arg(long, value_enum, default_value = "aim")]
        behavior: arena_lab::bot_clients::Behavior,
        /// Leave and rejoin at random (5-40 s in, 1-5 s out), for soak tests.
        #[arg(long)]
        churn: bool,
        /// Frames a second of the bot loop: a low rate plays like a slow
        /// machine's window (1-1000).
        #[arg(long, default_value_t = arena_lab::bot_clients::FRAMES_PER_S, value_parser = bot_fps)]
        fps: f64,
        /// Each bot's link (fake latency, jitter, loss): lagged shooters,
        /// compensated by the server.
        #[command(flatten)]
        link: LinkArgs,
        /// Ask this master for an introduction (UDP hole punching) when the
        /// server stays silent (HOST or HOST:PORT); repeatable.
        #[arg(long = "master", value_name = "HOST[:PORT]")]
        masters: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
enum DemoAction {
    /// Print a JSON summary of FILE (header, chunks, frames, ticks), reading
    /// every chunk; a damaged file is an error that says what and where.
    Info { file: PathBuf },
    /// Replay FILE's recorded commands through the shared rules and check
    /// that every recorded state, shot, rocket and score comes out the same;
    /// time a seek to every minute. Prints one JSON object; exits 1 on a mismatch.
    Verify { file: PathBuf },
    /// Play FILE back in a window: a timeline (Space pause, arrows step and
    /// speed, drag to seek), any player's eyes as their client drew the world
    /// or a free camera, hitboxes, ghosts and the kill feed.
    Play {
        file: PathBuf,
        /// Follow this player's eyes (default: the first player).
        #[arg(long, value_name = "NAME")]
        follow: Option<String>,
        /// Start the free camera instead.
        #[arg(long, conflicts_with = "follow")]
        free_camera: bool,
        /// Start this many seconds in.
        #[arg(long, value_name = "S", default_value_t = 0.0)]
        at: f64,
        /// Playback speed: 0.25, 0.5, 1, 2 or 4.
        #[arg(long, default_value_t = 1.0)]
        speed: f32,
        /// Start with every shot's hitboxes shown.
        #[arg(long)]
        show_hitboxes: bool,
        /// Save a screenshot to FILE one second before --seconds runs out.
        #[arg(long, value_name = "FILE", requires = "seconds")]
        screenshot: Option<PathBuf>,
        /// With --screenshot: quit after this many seconds.
        #[arg(long, value_name = "S")]
        seconds: Option<f64>,
        /// Window size in pixels, WIDTHxHEIGHT.
        #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = parse_resolution)]
        resolution: (u32, u32),
    },
}

#[derive(Subcommand, Debug)]
enum Experiment {
    /// Prediction and reconciliation: a scripted player over a conditioned link;
    /// counts mispredictions, corrections, missing and late commands, and
    /// measures input-to-motion latency.
    Prediction(LabArgs),
    /// Hit registration: a shooter aims at a strafing target as its client
    /// draws it and fires; reports hit ratio, the lead that would be needed,
    /// and how far the server's rewind was from what the shooter saw.
    Hitreg(LabArgs),
    /// Interpolation: a target on a known path, drawn by an observer; reports
    /// the drawn position's error against the truth at the render time.
    Interpolation(LabArgs),
    /// Flick: a shooter drawing at --fps sweeps its view at --turn-deg-s
    /// across a strafing target and clicks in the frames its crosshair is on
    /// it; reports hits, the angle and time between each shot and its click
    /// frame, and how often the foreseen hit was the verdict.
    Flick {
        #[command(flatten)]
        lab: LabArgs,
        /// The shooter's frames per second.
        #[arg(long, default_value_t = 144.0)]
        fps: f64,
        /// How fast the view sweeps, degrees per second.
        #[arg(long, default_value_t = 1000.0)]
        turn_deg_s: f64,
        /// How wide each sweep is, degrees.
        #[arg(long, default_value_t = 12.0)]
        sweep_deg: f64,
    },
    /// Rockets: a shooter fires at a target 20 m away, still then
    /// strafing; frames from click to drawn rocket, predicted-vs-server
    /// blast error, rockets never on the server or drawn twice, splash
    /// agreement, bytes per shot; with and without projectile compensation.
    Rockets {
        #[command(flatten)]
        lab: LabArgs,
    },
    /// Peeker's advantage: a holder watches the edge of the centre slab, a
    /// peeker strafes out into view and back, again and again; reports how
    /// much sooner the peeker's screen shows the holder than the holder's
    /// shows the peeker (mean, p50, p95), and each term of Riot's sum.
    Peek {
        #[command(flatten)]
        lab: LabArgs,
        /// Both clients' frames per second.
        #[arg(long, default_value_t = 144.0)]
        fps: f64,
    },
    /// The rewind cap: a target runs between the open and cover, a shooter
    /// fires whenever it draws it in sight; for each cap (a fresh server
    /// each), the hit ratio and how long victims had been behind cover on
    /// the server when hit (mean, p95, max).
    Unlag {
        #[command(flatten)]
        lab: LabArgs,
        /// The caps to try, milliseconds, comma-separated.
        #[arg(long, value_delimiter = ',', value_name = "MS,MS,...", default_values_t = arena_lab::experiments::DEFAULT_CAPS_MS)]
        caps: Vec<u16>,
    },
    /// Server cost: `arena server` in its own process with --players in
    /// all, --clients of them network clients fighting from an `arena bots`
    /// process (strafing, aiming, firing; every shot lag-compensated) and
    /// the rest server bots; the server's CPU time (user + system, from
    /// /proc) over the wall time: `core_percent`.
    Servercost {
        #[command(flatten)]
        lab: LabArgs,
        /// Players in all: server bots and network clients.
        #[arg(long, default_value_t = 64)]
        players: usize,
        /// Of them, network clients in another process.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// The server's executor (see `arena server --executor`).
        #[arg(long, value_enum, default_value = "single")]
        executor: ExecutorArg,
    },
    /// Timing against the frame rate: `peek`'s server and two clients on
    /// the wall clock, the clients drawing at --fps with their sockets on
    /// I/O threads; the round trip, the server-clock estimate's error, the
    /// interpolation delay, the gaps between command datagrams, late
    /// commands and the peeker's advantage.
    Timing {
        #[command(flatten)]
        lab: LabArgs,
        /// Both clients' frames per second.
        #[arg(long, default_value_t = 60.0)]
        fps: f64,
    },
    /// The two-view kill-cam: a shooter kills a running target N times over
    /// conditioned links; each kill-cam's size, how soon it came after the
    /// death, its frozen hitbox against what was drawn and tested, the gap.
    Killcam {
        #[command(flatten)]
        lab: LabArgs,
        /// Deaths to measure.
        #[arg(long, default_value_t = 10)]
        kills: usize,
    },
    /// A recorded match: a server recording (--record) N network clients that
    /// fight through conditioned links; then the demo's size, `demo verify`
    /// on it, the slowest seek to a minute, and what recording cost a tick.
    Demo {
        #[command(flatten)]
        lab: LabArgs,
        /// Players in all, each a network client.
        #[arg(long, default_value_t = 16)]
        players: usize,
        /// Record into DIR (default: a new directory in the system's temporary one).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// An internet master under attack: real servers registering while
    /// heartbeats pour in from forged addresses and clients ask for the
    /// list; what got listed, how fast the list came, the master's memory,
    /// and the bytes it sent an address per byte received from it.
    Master {
        /// Real servers.
        #[arg(long, default_value_t = 10)]
        servers: usize,
        /// Forged source addresses (loopback).
        #[arg(long, default_value_t = 10_000)]
        forged_addresses: usize,
        /// Forged heartbeats in all.
        #[arg(long, default_value_t = 100_000)]
        heartbeats: usize,
        /// List requests a second.
        #[arg(long, default_value_t = 1000)]
        getservers_per_s: u32,
        /// How long the attack lasts, seconds.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Run the master on a thread of this process instead of as `arena master`.
        #[arg(long)]
        in_process: bool,
    },
    /// Bandwidth: a server with N moving players (server bots and one measured
    /// client); bytes and datagrams per second each way at the UDP level, and
    /// a breakdown by message kind.
    Bandwidth {
        #[command(flatten)]
        lab: LabArgs,
        /// Players in all (the measured client and server bots).
        #[arg(long, default_value_t = 16)]
        players: usize,
    },
    /// The experiments over round trips of 0-300 ms (hitreg and prediction,
    /// each on and off; peek at 32, 64 and 128 Hz; unlag with six rewind
    /// caps), loss of 0-30% (interpolation) and turn rates of 0-4000 degrees
    /// a second (flick, sub-tick shots on and off); writes every report to
    /// DIR/sweep.json (DIR/sweep-PARTS.json for some parts) and eight
    /// charts (SVG) beside it.
    Sweep {
        #[command(flatten)]
        lab: LabArgs,
        /// Where the JSON and the charts go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The parts to run (default: all), comma-separated.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = arena_lab::experiments::SweepPart::ALL)]
        parts: Vec<arena_lab::experiments::SweepPart>,
        /// Simulated seconds of each of the sweep's runs (replaces --seconds).
        #[arg(long, default_value_t = 8.0, value_name = "S")]
        run_seconds: f64,
    },
}

/// The flags every experiment takes.
#[derive(Args, Debug, Clone)]
struct LabArgs {
    #[command(flatten)]
    netcode: NetcodeArgs,
    #[command(flatten)]
    link: LinkArgs,
    /// Simulation rate, ticks per second.
    #[arg(long, default_value_t = arena_sim::DEFAULT_TICK_HZ)]
    tick: u32,
    /// Snapshots per second (default: the tick rate).
    #[arg(long)]
    snapshot_rate: Option<u32>,
    /// Simulated seconds to measure (after a short warm-up).
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Seed of the link conditioner's randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Shots from the tick, as before sub-tick shots (server and client).
    #[arg(long)]
    no_subtick: bool,
    /// The server's rewind cap, milliseconds (0-1000).
    #[arg(long, value_name = "MS", default_value_t = arena_server::DEFAULT_MAX_UNLAG_MS)]
    max_unlag_ms: u16,
    /// Rockets from the tick their command ran (no catch-up).
    #[arg(long)]
    no_projectile_compensation: bool,
    /// The server's bots keep to the rifle.
    #[arg(long)]
    bot_rifle_only: bool,
}

/// The paper's techniques, each switchable.
#[derive(Args, Debug, Clone, Copy)]
struct NetcodeArgs {
    /// Client-side prediction of your own movement and shots.
    #[arg(long, value_enum, default_value = "on")]
    prediction: Switch,
    /// Reconciliation (replaying unacknowledged commands on each snapshot).
    #[arg(long, value_enum, default_value = "on")]
    reconciliation: Switch,
    /// Interpolation of other players between snapshots.
    #[arg(long, value_enum, default_value = "on")]
    interpolation: Switch,
    /// Interpolation delay, milliseconds (0-250; default two snapshot intervals).
    #[arg(long, value_name = "MS")]
    interp_ms: Option<u16>,
    /// Ask the server to compensate your lag when you shoot.
    #[arg(long, value_enum, default_value = "on")]
    lag_compensation: Switch,
}

/// The link conditioner's flags.
#[derive(Args, Debug, Clone, Copy)]
struct LinkArgs {
    /// Round trip the link conditioner adds, milliseconds (half each way).
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    fake_latency_ms: f32,
    /// ± variation of each packet's one-way delay, milliseconds.
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    fake_jitter_ms: f32,
    /// Probability (0-1) that a packet is dropped, each way.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    fake_loss: f32,
}

impl NetcodeArgs {
    fn check(self) -> Result<(), String> {
        match self.interp_ms {
            Some(ms) if ms > arena_protocol::MAX_INTERP_MS => {
                Err(format!("--interp-ms must be 0..={}", arena_protocol::MAX_INTERP_MS))
            }
            _ => Ok(()),
        }
    }
}

impl LinkArgs {
    fn conditions(self) -> Result<LinkConditions, String> {
        let conditions =
            LinkConditions { latency_ms: self.fake_latency_ms, jitter_ms: self.fake_jitter_ms, loss: self.fake_loss };
        if conditions.clamped() != conditions {
            return Err(format!(
                "--fake-latency-ms and --fake-jitter-ms must be within 0..={}, --fake-loss within 0..=1",
                LinkConditions::MAX_MS
            ));
        }
        Ok(conditions)
    }
}

/// How a hosted or dedicated server runs its games.
#[derive(Args, Debug, Clone)]
struct GameArgs {
    /// Simulation rate, ticks per second.
    #[arg(long, env = "ARENA_TICK", default_value_t = arena_sim::DEFAULT_TICK_HZ)]
    tick: u32,
    /// Snapshots per second (default: the tick rate).
    #[arg(long, env = "ARENA_SNAPSHOT_RATE")]
    snapshot_rate: Option<u32>,
    /// Turn lag compensation off for everyone.
    #[arg(long, env = "ARENA_NO_LAG_COMPENSATION")]
    no_lag_compensation: bool,
    /// The UDP port players reach this server on when it is not the bound
    /// one (a mapped container port, a forwarded port): what server queries
    /// and the LAN browser are told (default: the first --public-addr's
    /// port, else the bound port).
    #[arg(long, env = "ARENA_PUBLIC_PORT", value_name = "PORT")]
    public_port: Option<u16>,
    /// How far back lag compensation rewinds at most, milliseconds (0-1000;
    /// default 400, on the range 1000: its targets are bots): a shooter
    /// whose round trip, frame time and interpolation delay add up to more
    /// must lead, and nobody is hit further behind cover than this.
    #[arg(long, env = "ARENA_MAX_UNLAG_MS", value_name = "MS")]
    max_unlag_ms: Option<u16>,
    /// Resolve shots from the tick, as before sub-tick shots (not from the
    /// frame fire was pressed in).
    #[arg(long, env = "ARENA_NO_SUBTICK")]
    no_subtick: bool,
    /// Fly rockets from the tick their command ran, not brought up to the
    /// time their shooter fired them (the shooter leads moving targets).
    #[arg(long, env = "ARENA_NO_PROJECTILE_COMPENSATION")]
    no_projectile_compensation: bool,
    /// Bots keep to the rifle (no rocket launcher).
    #[arg(long, env = "ARENA_BOT_RIFLE_ONLY")]
    bot_rifle_only: bool,
    /// Most players connected at once (bots not counted).
    #[arg(long, env = "ARENA_MAX_CLIENTS", default_value_t = 16)]
    max_clients: usize,
    /// Server-side bots (default: 5 for play, 0 otherwise).
    #[arg(long, env = "ARENA_BOTS")]
    bots: Option<usize>,
    /// How well the bots play, 0-1.
    #[arg(long, env = "ARENA_BOT_SKILL", default_value_t = 0.5)]
    bot_skill: f32,
    /// Seed the bots' choices, to replay the same game (default: different every time).
    #[arg(long, env = "ARENA_BOT_SEED", value_name = "N")]
    bot_seed: Option<u64>,
    /// A match ends when someone reaches this many frags.
    #[arg(long, env = "ARENA_FRAG_LIMIT", default_value_t = 20)]
    frag_limit: u16,
    /// A match ends after this many minutes.
    #[arg(long, env = "ARENA_TIME_LIMIT_MIN", default_value_t = 10.0)]
    time_limit_min: f64,
    /// Make the game private: players need this password to join.
    #[arg(long, env = "ARENA_PASSWORD", value_name = "TEXT")]
    password: Option<String>,
    /// Read the password from the first line of FILE (so that `ps` does not
    /// show it, as with --password).
    #[arg(long, env = "ARENA_PASSWORD_FILE", value_name = "FILE", conflicts_with = "password")]
    password_file: Option<PathBuf>,
    /// The name server browsers show (default: "NAME's game" when hosting,
    /// where `--name` is your player's; the machine's name for a dedicated
    /// server, whose `--name` is this).
    #[arg(long, env = "ARENA_SERVER_NAME", value_name = "TEXT")]
    server_name: Option<String>,
    /// A shooting range: targets strafing across lanes at known speeds and
    /// distances that cannot die, nobody hurt, hits and misses counted
    /// (no bots unless --bots says so).
    #[arg(long, env = "ARENA_RANGE")]
    range: bool,
    /// Record every match as a demo file in DIR (`arena demo play FILE` plays one back).
    #[arg(long, env = "ARENA_RECORD", value_name = "DIR")]
    record: Option<PathBuf>,
    /// With --record: keep the newest N of Arena's demo files in DIR, deleting older ones.
    #[arg(long, env = "ARENA_RECORD_KEEP", value_name = "N", default_value_t = arena_server::DEFAULT_RECORD_KEEP as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    record_keep: u64,
    /// List the game on an internet master (`arena master`, or any dpmaster):
    /// HOST or HOST:PORT (default port 27950); repeatable (comma-separated in
    /// the environment).
    #[arg(long = "master", env = "ARENA_MASTERS", value_name = "HOST[:PORT]", value_delimiter = ',')]
    masters: Vec<String>,
    /// Seconds between heartbeats to the masters when nothing changes (a
    /// heartbeat also goes at start, when players come or go, and on a clean stop).
    #[arg(long, env = "ARENA_MASTER_HEARTBEAT_S", value_name = "S", default_value_t = arena_server::DEFAULT_HEARTBEAT_S)]
    master_heartbeat_s: u32,
    /// Ask the home router to forward the game port: `auto` (PCP, NAT-PMP,
    /// then UPnP-IGD), `off`, or some of `upnp,natpmp,pcp`. Default: auto
    /// for a listen server (play, host), off for `arena server` (given
    /// without a value: auto). Removed again on a clean stop.
    #[arg(long, env = "ARENA_MAP_PORT", value_name = "METHODS", num_args = 0..=1, default_missing_value = "auto")]
    map_port: Option<String>,
    /// The port mapping's lease asked for, seconds (renewed at half of it).
    #[arg(long, env = "ARENA_MAP_LEASE_S", value_name = "S", default_value_t = arena_server::DEFAULT_MAP_LEASE_S,
          value_parser = clap::value_parser!(u32).range(2..=604_800))]
    map_lease_s: u32,
    /// How the server's systems run: `single` (one after another on the
    /// server's thread: cheapest for a server's small world) or `multi`
    /// (Bevy's thread pool), for comparing with `arena lab servercost`.
    #[arg(long, value_enum, default_value = "single")]
    executor: ExecutorArg,
}

/// `--executor`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ExecutorArg {
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
    fn config(
        &self,
        bind: SocketAddr,
        public_addrs: Vec<SocketAddr>,
        default_bots: usize,
        default_map_port: arena_nat::Methods,
    ) -> Result<ServerConfig, String> {
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
                time_limit_s: (self.time_limit_min * 60.0).round().clamp(0.0, 86_400.0) as u32,
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
            bot_rockets: !self.bot_rifle_only,
            record_dir: self.record.clone(),
            record_keep: usize::try_from(self.record_keep).unwrap_or(usize::MAX),
            masters: self.masters.clone(),
            master_heartbeat_s: self.master_heartbeat_s,
            map_port,
            map_lease_s: self.map_lease_s,
            executor: self.executor.into(),
        })
    }
}

/// The password in the first line of `path` (its line end not counted).
fn password_from_file(path: &std::path::Path) -> Result<Password, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--password-file {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    Password::new(line).map_err(|e| format!("--password-file {}: {e}", path.display()))
}

/// A `--password` flag's value (none: an open game).
fn password(text: Option<&str>) -> Result<Password, String> {
    Password::new(text.unwrap_or_default()).map_err(|e| format!("--password: {e}"))
}

/// Options of the windowed modes.
#[derive(Args, Debug, Clone)]
struct WindowArgs {
    /// Your player name.
    #[arg(long)]
    name: Option<String>,
    /// Save a screenshot to FILE one second before --seconds runs out.
    #[arg(long, value_name = "FILE", requires = "seconds")]
    screenshot: Option<PathBuf>,
    /// With --screenshot: quit after this many seconds.
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
    /// With --screenshot: take it just after the first kill in view instead
    /// (a body falling), or one second before --seconds if there is none.
    #[arg(long, requires = "screenshot")]
    screenshot_after_kill: bool,
    /// With --screenshot: take it on a kill-cam's frozen shot instead (the
    /// first with the server's ghost behind cover, or any in the last tenth of the run).
    #[arg(long, requires = "screenshot")]
    screenshot_in_kill_cam: bool,
    #[command(flatten)]
    netcode: NetcodeArgs,
    /// Draw your shots' targets where you saw them (red) and where the server tested them (blue).
    #[arg(long)]
    show_hitboxes: bool,
    /// Demonstration aid: your view follows the nearest player in sight, as your client draws them.
    #[arg(long)]
    auto_aim: bool,
    /// Window size in pixels, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = parse_resolution)]
    resolution: (u32, u32),
    #[command(flatten)]
    link: LinkArgs,
}

fn main() -> ExitCode {
    let args = match arena_server::with_config_file(std::env::args().collect(), |key| std::env::var(key).ok()) {
        Ok(args) => args,
        Err(e) => return fail(&e.to_string()),
    };
    let cli = Cli::parse_from(args);
    match cli.mode {
        Some(Mode::Server { config: _, name, bind, public_addrs, game, seconds }) => {
            let stop_after = match seconds.map(positive_duration).transpose() {
                Ok(d) => d,
                Err(e) => return fail(&e),
            };
            let config = match game.config(bind, public_addrs, 0, arena_nat::Methods::NONE) {
                Ok(config) => ServerConfig { stop_after, name: name.unwrap_or(config.name.clone()), ..config },
                Err(e) => return fail(&e),
            };
            match arena_server::run_dedicated(&config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e.to_string()),
            }
        }
        Some(Mode::Servers { addrs, lan, masters, json, wait_ms }) => {
            let wait = Duration::from_millis(wait_ms.clamp(100, 60_000));
            match servers::run(&servers::Ask { addrs, lan, masters }, json, wait) {
                Ok(code) => code,
                Err(e) => fail(&e),
            }
        }
        Some(Mode::Master(args)) => {
            init_logging();
            match master::run(&args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            }
        }
        Some(Mode::Demo { action: DemoAction::Info { file } }) => {
            print_report(arena_protocol::demo::summarize_file(&file).map_err(|e| format!("{}: {e}", file.display())))
        }
        Some(Mode::Demo {
            action:
                DemoAction::Play { file, follow, free_camera, at, speed, show_hitboxes, screenshot, seconds, resolution },
        }) => {
            if !arena_view::SPEEDS.contains(&speed) {
                return fail(&format!("--speed {speed}: one of {:?}", arena_view::SPEEDS));
            }
            if !(at.is_finite() && at >= 0.0) {
                return fail("--at must be a number of seconds, 0 or more");
            }
            let screenshot = match (screenshot, seconds) {
                (Some(path), Some(seconds)) => match positive_duration(seconds) {
                    Ok(quit_after) if seconds >= 1.0 => {
                        Some(Screenshot { path, quit_after, after_kill: false, in_kill_cam: false })
                    }
                    Ok(_) => return fail("--seconds must be at least 1 with --screenshot"),
                    Err(e) => return fail(&e),
                },
                (None, Some(_)) => return fail("--seconds goes with --screenshot FILE"),
                _ => None,
            };
            let start = arena_view::PlaybackStart { follow, at_s: at, speed, show_hitboxes, free_camera };
            match arena_view::run_demo(&file, start, resolution, screenshot) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            }
        }
        Some(Mode::Demo { action: DemoAction::Verify { file } }) => match arena_protocol::replay::verify_file(&file) {
            Ok(report) => {
                let ok = report.ok;
                let code = print_report(Ok::<_, String>(report));
                if ok { code } else { ExitCode::FAILURE }
            }
            Err(e) => fail(&format!("{}: {e}", file.display())),
        },
        Some(Mode::Lab {
            experiment:
                Experiment::Master { servers, forged_addresses, heartbeats, getservers_per_s, seconds, in_process },
        }) => {
            init_logging();
            let lab = arena_lab::experiments::MasterLab {
                servers,
                forged_addresses,
                heartbeats,
                getservers_per_s,
                seconds,
                master_exe: if in_process { None } else { std::env::current_exe().ok() },
            };
            print_report(arena_lab::experiments::master(&lab))
        }
        Some(Mode::Lab { experiment }) => {
            let (Experiment::Prediction(args)
            | Experiment::Hitreg(args)
            | Experiment::Interpolation(args)
            | Experiment::Flick { lab: args, .. }
            | Experiment::Peek { lab: args, .. }
            | Experiment::Rockets { lab: args }
            | Experiment::Unlag { lab: args, .. }
            | Experiment::Servercost { lab: args, .. }
            | Experiment::Timing { lab: args, .. }
            | Experiment::Demo { lab: args, .. }
            | Experiment::Killcam { lab: args, .. }
            | Experiment::Bandwidth { lab: args, .. }
            | Experiment::Sweep { lab: args, .. }) = &experiment
            else {
                // `master` takes no game flags and is run above.
                return fail("this experiment takes no game flags");
            };
            let settings = match lab_settings(args) {
                Ok(settings) => settings,
                Err(e) => return fail(&e),
            };
            init_logging();
            match experiment {
                Experiment::Master { .. } => fail("run above"),
                Experiment::Prediction(_) => print_report(arena_lab::experiments::prediction(settings)),
                Experiment::Hitreg(_) => print_report(arena_lab::experiments::hitreg(settings)),
                Experiment::Interpolation(_) => print_report(arena_lab::experiments::interpolation(settings)),
                Experiment::Flick { fps, turn_deg_s, sweep_deg, .. } => {
                    let flick = arena_lab::experiments::Flick { fps, turn_deg_s, sweep_deg };
                    print_report(arena_lab::experiments::flick(settings, flick))
                }
                Experiment::Rockets { .. } => print_report(arena_lab::experiments::rockets(settings)),
                Experiment::Peek { fps, .. } => {
                    print_report(arena_lab::experiments::peek(settings, arena_lab::experiments::Peek { fps }))
                }
                Experiment::Unlag { caps, .. } => print_report(arena_lab::experiments::unlag(settings, &caps)),
                Experiment::Servercost { players, clients, executor, .. } => {
                    let load = arena_lab::experiments::ServerLoad { players, clients, executor: executor.into() };
                    print_report(arena_lab::experiments::servercost(settings, load))
                }
                Experiment::Timing { fps, .. } => print_report(arena_lab::experiments::timing(settings, fps)),
                Experiment::Killcam { kills, .. } => print_report(arena_lab::experiments::kill_cam(settings, kills)),
                Experiment::Demo { players, out, .. } => {
                    print_report(arena_lab::experiments::demo(settings, players, out.as_deref()))
                }
                Experiment::Bandwidth { players, .. } => {
                    print_report(arena_lab::experiments::bandwidth(settings, players))
                }
                Experiment::Sweep { out, run_seconds, parts, .. } => {
                    let settings = arena_lab::experiments::LabSettings { seconds: run_seconds, ..settings };
                    let progress = |step: &str| eprintln!("sweep: {step}");
                    match arena_lab::experiments::sweep(settings, &parts, &out, progress) {
                        Ok(report) => {
                            for file in &report.files {
                                eprintln!("wrote {}", file.display());
                            }
                            ExitCode::SUCCESS
                        }
                        Err(e) => fail(&e.to_string()),
                    }
                }
            }
        }
        Some(Mode::Bots {
            connect,
            count,
            seconds,
            name,
            password: text,
            report,
            behavior,
            churn,
            fps,
            link,
            masters,
        }) => match (password(text.as_deref()), link.conditions()) {
            (Ok(password), Ok(conditions)) => {
                let how = (behavior, churn, conditions, masters, fps);
                run_bots(&connect, count, seconds, name, password, report, how)
            }
            (Err(e), _) | (_, Err(e)) => fail(&e),
        },
        Some(Mode::Play { port, game, window }) => {
            match game.config(
                SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)),
                Vec::new(),
                arena_view::QUICK_PLAY_BOTS,
                arena_nat::Methods::ALL,
            ) {
                Ok(server) => run_window(StartAction::QuickPlay(server), window),
                Err(e) => fail(&e),
            }
        }
        Some(Mode::Host { port, public_addrs, game, window }) => {
            match game.config(SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)), public_addrs, 0, arena_nat::Methods::ALL)
            {
                Ok(server) => run_window(StartAction::Host(server), window),
                Err(e) => fail(&e),
            }
        }
        Some(Mode::Join { addr, password: text, window }) => {
            match (arena_client::resolve_server_addr(&addr), password(text.as_deref())) {
                (Ok(addr), Ok(password)) => run_window(StartAction::Join(addr, password), window),
                (Err(e), _) => fail(&e.to_string()),
                (_, Err(e)) => fail(&e),
            }
        }
        None => run_window(StartAction::Menu, cli.window),
    }
}

fn run_window(start: StartAction, args: WindowArgs) -> ExitCode {
    let screenshot = match (args.screenshot, args.seconds) {
        (Some(path), Some(seconds)) => match positive_duration(seconds) {
            Ok(quit_after) if seconds >= 1.0 => Some(Screenshot {
                path,
                quit_after,
                after_kill: args.screenshot_after_kill,
                in_kill_cam: args.screenshot_in_kill_cam,
            }),
            Ok(_) => return fail("--seconds must be at least 1 with --screenshot"),
            Err(e) => return fail(&e),
        },
        (None, Some(_)) => return fail("--seconds goes with --screenshot FILE"),
        _ => None,
    };
    let conditions = match args.link.conditions() {
        Ok(conditions) => conditions,
        Err(e) => return fail(&e),
    };
    if let Err(e) = args.netcode.check() {
        return fail(&e);
    }
    let netcode = NetcodeSettings {
        prediction: args.netcode.prediction.on(),
        reconciliation: args.netcode.reconciliation.on(),
        interpolation: args.netcode.interpolation.on(),
        interp_ms: args.netcode.interp_ms,
        lag_compensation: args.netcode.lag_compensation.on(),
        projectile_compensation: true,
        subtick: true,
        hit_prediction: true,
        show_hitboxes: args.show_hitboxes,
        // The player's setting (on unless turned off) replaces this once loaded.
        kill_cam: true,
        conditions,
        conditioner_seed: None,
    };
    let config = ViewConfig {
        start,
        name: args.name,
        screenshot,
        netcode,
        resolution: args.resolution,
        auto_aim: args.auto_aim,
    };
    match arena_view::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn lab_settings(args: &LabArgs) -> Result<LabSettings, String> {
    let conditions = args.link.conditions()?;
    let settings = LabSettings {
        prediction: args.netcode.prediction,
        reconciliation: args.netcode.reconciliation,
        interpolation: args.netcode.interpolation,
        lag_compensation: args.netcode.lag_compensation,
        subtick: if args.no_subtick { Switch::Off } else { Switch::On },
        projectile_compensation: if args.no_projectile_compensation { Switch::Off } else { Switch::On },
        bot_rockets: if args.bot_rifle_only { Switch::Off } else { Switch::On },
        interp_ms: args.netcode.interp_ms,
        snapshot_rate: args.snapshot_rate,
        max_unlag_ms: args.max_unlag_ms,
        fake_latency_ms: conditions.latency_ms,
        fake_jitter_ms: conditions.jitter_ms,
        fake_loss: conditions.loss,
        tick: args.tick,
        seconds: args.seconds,
        seed: args.seed,
    };
    settings.validate().map_err(|e| e.to_string())?;
    Ok(settings)
}

/// Prints an experiment's report as one JSON object on stdout.
fn print_report<T: serde::Serialize, E: std::fmt::Display>(report: Result<T, E>) -> ExitCode {
    match report.map_err(|e| e.to_string()).and_then(|r| serde_json::to_string(&r).map_err(|e| e.to_string())) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// `--fps` of `arena bots`: 1 to 1000 frames a second.
fn bot_fps(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(fps) if (1.0..=1000.0).contains(&fps) => Ok(fps),
        _ => Err(format!("{text} is not a frame rate from 1 to 1000")),
    }
}

fn run_bots(
    connect: &str,
    count: usize,
    seconds: f64,
    name: String,
    password: Password,
    report: Option<PathBuf>,
    (behavior, churn, conditions, introducers, frames_per_s): (
        arena_lab::bot_clients::Behavior,
        bool,
        LinkConditions,
        Vec<String>,
        f64,
    ),
) -> ExitCode {
    let server = match arena_client::resolve_server_addr(connect) {
        Ok(addr) => addr,
        Err(e) => return fail(&e.to_string()),
    };
    if let Err(e) = positive_duration(seconds) {
        return fail(&e);
    }
    if count == 0 || count > arena_protocol::MAX_PLAYERS {
        return fail(&format!("--count must be 1..={}", arena_protocol::MAX_PLAYERS));
    }
    init_logging();
    let config = arena_lab::bot_clients::BotsConfig {
        server,
        count,
        seconds,
        name_prefix: name,
        password,
        behavior,
        churn,
        conditions,
        introducers,
        frames_per_s,
    };
    let result = arena_lab::bot_clients::run(&config);
    let json = match serde_json::to_string_pretty(&result) {
        Ok(json) => json,
        Err(e) => return fail(&format!("cannot write the report: {e}")),
    };
    match report {
        Some(path) => {
            if let Err(e) = std::fs::write(&path, json + "\n") {
                return fail(&format!("cannot write {}: {e}", path.display()));
            }
        }
        None => println!("{json}"),
    }
    let failed: Vec<&str> = result.clients.iter().filter(|c| c.error.is_some()).map(|c| c.name.as_str()).collect();
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        fail(&format!("not connected the whole time: {}", failed.join(", ")))
    }
}

/// Logging to stderr for the headless modes that have no Bevy LogPlugin of their own.
fn init_logging() {
    use bevy::log::tracing_subscriber::{EnvFilter, fmt};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(arena_server::LOG_FILTER));
    let _ = fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

fn parse_resolution(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(|| format!("\"{text}\" is not WIDTHxHEIGHT"))?;
    let parse = |v: &str| v.trim().parse::<u32>().ok().filter(|v| (160..=8192).contains(v));
    match (parse(w), parse(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!("\"{text}\" is not WIDTHxHEIGHT with each 160-8192")),
    }
}

fn positive_duration(seconds: f64) -> Result<Duration, String> {
    if seconds.is_finite() && seconds > 0.0 && seconds < 1e9 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!("--seconds must be a positive number, not {seconds}"))
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("arena: {message}");
    ExitCode::FAILURE
}
