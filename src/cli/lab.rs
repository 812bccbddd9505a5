//! `arena lab`: the headless experiments' subcommands and the flags every
//! experiment takes, made into the lab's settings.

use std::path::PathBuf;

use arena_lab::experiments::{LabSettings, MasterLab, Switch};
use clap::{Args, Subcommand};

use super::game::ExecutorArg;
use super::netcode::{LinkArgs, NetcodeArgs};

/// `arena lab`'s experiments.
#[derive(Subcommand, Debug)]
pub(crate) enum Experiment {
    /// Prediction and reconciliation: a scripted player over a conditioned link;
    /// counts mispredictions, corrections, missing and late commands, and
    /// measures input-to-motion latency.
    Prediction(PredictionArgs),
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
        /// The built-in map to record on (its items, jump pads and teleporters in play).
        #[arg(long, default_value = "foundry")]
        map: String,
        /// Server bots besides the clients (they take items, use pads and teleporters).
        #[arg(long, default_value_t = 0)]
        bots: usize,
        /// Record into DIR (default: a new directory in the system's temporary one).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Pickups: clients run to the map's items, alone or two at once a tick
    /// or two apart; how many predicted pickups the server granted, whether
    /// contested ones end with everyone naming the same winner, how the
    /// losers' predictions were undone, and pickup sounds played twice.
    Pickups {
        #[command(flatten)]
        lab: LabArgs,
        /// The built-in map whose items are run at.
        #[arg(long, default_value = "foundry")]
        map: String,
    },
    /// Jump pads and teleporters: a player uses each in turn while another
    /// watches and fires; the jumper's mispredictions, frames drawn between a
    /// teleporter's ends, shots tested against a hitbox between them.
    Teleport {
        #[command(flatten)]
        lab: LabArgs,
        /// The built-in map (default: the first with pads and teleporters).
        #[arg(long)]
        map: Option<String>,
    },
    /// Voice: one talker holds its push-to-talk key through --seconds of a
    /// synthetic voice while two listeners hear it, every link through the
    /// conditioner; mouth to ear (p50, p95), the voice's upstream, frames
    /// lost, recovered and concealed, the jitter buffer's delay, and how
    /// close what was heard is to what was said.
    Voice(LabArgs),
    /// An internet master under attack: real servers registering while
    /// heartbeats pour in from forged addresses and clients ask for the
    /// list; what got listed, how fast the list came, the master's memory,
    /// and the bytes it sent an address per byte received from it.
    Master(MasterLabArgs),
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
    /// a second (flick, sub-tick shots on and off), and with --parts cost the
    /// server's cost against 8-64 players at 64 and 128 Hz (processes on the
    /// wall clock: an idle machine); writes every report to DIR/sweep.json
    /// (DIR/sweep-PARTS.json for some parts) and the charts (SVG) beside it.
    Sweep {
        #[command(flatten)]
        lab: LabArgs,
        /// Where the JSON and the charts go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The parts to run (default: all but cost), comma-separated.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = arena_lab::experiments::SweepPart::DEFAULT)]
        parts: Vec<arena_lab::experiments::SweepPart>,
        /// Simulated seconds of each of the sweep's runs (replaces --seconds).
        #[arg(long, default_value_t = 8.0, value_name = "S")]
        run_seconds: f64,
    },
}

/// The flags every experiment takes.
#[derive(Args, Debug, Clone)]
pub(crate) struct LabArgs {
    #[command(flatten)]
    pub netcode: NetcodeArgs,
    #[command(flatten)]
    pub link: LinkArgs,
    /// Simulation rate, ticks per second.
    #[arg(long, default_value_t = arena_sim::DEFAULT_TICK_HZ)]
    pub tick: u32,
    /// Snapshots per second (default: the tick rate).
    #[arg(long)]
    pub snapshot_rate: Option<u32>,
    /// Simulated seconds to measure (after a short warm-up).
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Seed of the link conditioner's randomness.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Shots from the tick, as before sub-tick shots (server and client).
    #[arg(long)]
    pub no_subtick: bool,
    /// The server's rewind cap, milliseconds (0-2000).
    #[arg(long, value_name = "MS", default_value_t = arena_server::DEFAULT_MAX_UNLAG_MS)]
    pub max_unlag_ms: u16,
    /// Rockets from the tick their command ran (no catch-up).
    #[arg(long)]
    pub no_projectile_compensation: bool,
    /// The server's bots keep to the rifle.
    #[arg(long)]
    pub bot_rifle_only: bool,
}

impl LabArgs {
    /// The experiment's settings, checked.
    pub(crate) fn settings(&self) -> Result<LabSettings, String> {
        let conditions = self.link.conditions()?;
        let settings = LabSettings {
            prediction: self.netcode.prediction(),
            reconciliation: self.netcode.reconciliation(),
            interpolation: self.netcode.interpolation(),
            lag_compensation: self.netcode.lag_compensation(),
            subtick: if self.no_subtick { Switch::Off } else { Switch::On },
            projectile_compensation: if self.no_projectile_compensation { Switch::Off } else { Switch::On },
            bot_rockets: if self.bot_rifle_only { Switch::Off } else { Switch::On },
            interp_ms: self.netcode.interp_ms,
            update_rate: self.netcode.update_rate.unwrap_or(0),
            cmd_rate: self.netcode.cmd_rate.unwrap_or(0),
            rate: self.netcode.rate.unwrap_or(0),
            snapshot_rate: self.snapshot_rate,
            max_unlag_ms: self.max_unlag_ms,
            fake_latency_ms: conditions.latency_ms,
            fake_jitter_ms: conditions.jitter_ms,
            fake_loss: conditions.loss,
            tick: self.tick,
            seconds: self.seconds,
            seed: self.seed,
        };
        settings.validate().map_err(|e| e.to_string())?;
        Ok(settings)
    }
}

/// `arena lab prediction`'s flags.
#[derive(Args, Debug, Clone)]
pub(crate) struct PredictionArgs {
    #[command(flatten)]
    pub lab: LabArgs,
    /// Half-Life's `pushlatency`: predict at most |MS| milliseconds ahead of
    /// the state the server acknowledged (-1000: all of it, as today; the
    /// paper's footnote tells of the "ice skates" less gives).
    #[arg(long, value_name = "MS", allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-10_000..=10_000))]
    pub pushlatency: Option<i32>,
}

/// `arena lab master`'s flags: the attack on the master.
#[derive(Args, Debug, Clone)]
pub(crate) struct MasterLabArgs {
    /// Real servers.
    #[arg(long, default_value_t = 10)]
    pub servers: usize,
    /// Forged source addresses (loopback).
    #[arg(long, default_value_t = 10_000)]
    pub forged_addresses: usize,
    /// Forged heartbeats in all.
    #[arg(long, default_value_t = 100_000)]
    pub heartbeats: usize,
    /// List requests a second.
    #[arg(long, default_value_t = 1000)]
    pub getservers_per_s: u32,
    /// How long the attack lasts, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Run the master on a thread of this process instead of as `arena master`.
    #[arg(long)]
    pub in_process: bool,
}

impl MasterLabArgs {
    /// The experiment's config: the master runs as `arena master` (this
    /// binary) unless `--in-process` says otherwise.
    pub(crate) fn config(self) -> MasterLab {
        MasterLab {
            servers: self.servers,
            forged_addresses: self.forged_addresses,
            heartbeats: self.heartbeats,
            getservers_per_s: self.getservers_per_s,
            seconds: self.seconds,
            master_exe: if self.in_process { None } else { std::env::current_exe().ok() },
        }
    }
}
