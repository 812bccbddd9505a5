//! `arena lab servercost`: what a dedicated server costs a core. `arena
//! server` runs in a process of its own, on the wall clock as it always
//! does (four frames a tick, at most 256 a second), with server bots; `arena bots`, in another
//! process, connects network clients that fight (strafe, aim and fire,
//! every shot lag-compensated). After a warm-up, the server process's CPU
//! time (user + system, from `/proc`) over the wall time is its share of a
//! core. With the clients elsewhere, nothing of theirs is counted.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arena_server::Executor;
use serde::Serialize;

use super::setup::{LabError, LabSettings, build_name};

/// Seconds between starting the clients and measuring: joining, the
/// first full snapshots, the clocks settling.
const SETTLE_S: f64 = 5.0;

/// How the server is loaded.
#[derive(Clone, Copy, Debug)]
pub struct ServerLoad {
    /// Players in all: server bots and network clients.
    pub players: usize,
    /// Of them, network clients (in the other process).
    pub clients: usize,
    /// How the server runs its systems.
    pub executor: Executor,
}

/// What `arena lab servercost` prints.
#[derive(Debug, Serialize)]
pub struct ServerCostReport {
    pub experiment: &'static str,
    /// `dev` or `release`: what this binary (and so the server) was built as.
    pub build: &'static str,
    /// `single` or `multi`: the server's executor.
    pub executor: &'static str,
    pub players: usize,
    pub bots: usize,
    pub clients: usize,
    /// Clients that got into the game (from `arena bots`' report).
    pub clients_in_game: usize,
    pub tick: u32,
    pub snapshot_rate: u32,
    pub seconds: f64,
    /// The server process's CPU time over the wall time, percent of one core.
    pub core_percent: f64,
    pub user_percent: f64,
    pub system_percent: f64,
    /// The server's resident memory at the end, MiB.
    pub rss_mib: f64,
}

/// A child process killed when dropped (an experiment that fails half way
/// leaves nothing running).
struct Running(Child);

impl Running {
    /// Fails if the process has ended (a server that could not bind its
    /// port, say: its `/proc` entry would read as an idle process).
    fn still_running(&mut self, what: &str) -> Result<(), LabError> {
        match self.0.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(LabError::ServerCost(format!("{what} stopped early ({status})"))),
            Err(e) => Err(LabError::ServerCost(format!("{what}: {e}"))),
        }
    }

    /// Waits up to `limit` for the process to end on its own.
    fn wait_for(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU time a process has had, user and system, seconds.
fn cpu_times(pid: u32, ticks_per_s: f64) -> Result<(f64, f64), LabError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| LabError::ServerCost(format!("cannot read /proc/{pid}/stat: {e}")))?;
    // The command name (in parentheses) may hold spaces: count from after it.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    // utime and stime are the 14th and 15th fields; the 3rd is the first after the name.
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    match (field(14), field(15)) {
        (Some(user), Some(system)) => Ok((user / ticks_per_s, system / ticks_per_s)),
        _ => Err(LabError::ServerCost(format!("/proc/{pid}/stat has no CPU times"))),
    }
}

/// Resident memory of a process, MiB (NaN if unknown).
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// The kernel's clock ticks per second for `/proc` CPU times (`getconf
/// CLK_TCK`; 100 on every Linux this runs on when it cannot be asked).
fn clock_ticks_per_s() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|hz| *hz > 0.0)
        .unwrap_or(100.0)
}

/// A free UDP port on 127.0.0.1 (taken and let go: the server binds it next).
fn free_port() -> Result<SocketAddr, LabError> {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| LabError::ServerCost(format!("no loopback port: {e}")))
}

/// Runs `arena lab servercost`: this binary as `arena server` and `arena bots`.
pub fn servercost(settings: LabSettings, load: ServerLoad) -> Result<ServerCostReport, LabError> {
    settings.validate()?;
    if load.players == 0 || load.players > arena_protocol::MAX_PLAYERS || load.clients > load.players {
        return Err(LabError::Players(load.players));
    }
    if !std::path::Path::new("/proc/self/stat").exists() {
        return Err(LabError::ServerCost("needs Linux's /proc to read the server's CPU time".into()));
    }
    let exe = std::env::current_exe().map_err(|e| LabError::ServerCost(format!("where is this binary? {e}")))?;
    let addr = free_port()?;
    let bots = load.players - load.clients;
    let executor = match load.executor {
        Executor::Single => "single",
        Executor::Multi => "multi",
    };
    let arg = |v: &dyn ToString| v.to_string();
    let mut server_args = vec![
        "server".into(),
        "--bind".into(),
        arg(&addr),
        "--tick".into(),
        arg(&settings.tick),
        "--snapshot-rate".into(),
        arg(&settings.snapshot_rate.unwrap_or(settings.tick)),
        "--bots".into(),
        arg(&bots),
        "--max-clients".into(),
        arg(&load.clients.max(1)),
        "--bot-seed".into(),
        arg(&settings.seed),
        "--max-unlag-ms".into(),
        arg(&settings.max_unlag_ms),
        // One long match: no results screen in the middle of a measurement.
        "--frag-limit".into(),
        arg(&u16::MAX),
        "--time-limit-min".into(),
        "600".into(),
        "--executor".into(),
        executor.into(),
    ];
    if !settings.lag_compensation.on() {
        server_args.push("--no-lag-compensation".into());
    }
    let server = Command::new(&exe)
        .args(&server_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| LabError::ServerCost(format!("cannot start {} server: {e}", exe.display())))?;
    let mut server = Running(server);
    let pid = server.0.id();
    // The server binds at once; give it a moment before clients knock.
    std::thread::sleep(Duration::from_millis(500));
    server.still_running("the server")?;
    let report_file = std::env::temp_dir().join(format!("arena-servercost-{pid}.json"));
    let client_seconds = SETTLE_S + settings.seconds + 2.0;
    let clients = if load.clients > 0 {
        let conditions = settings.netcode().conditions;
        let child = Command::new(&exe)
            .args(["bots", "--connect", &addr.to_string(), "--count", &load.clients.to_string()])
            .args(["--seconds", &client_seconds.to_string(), "--name", "Fighter "])
            .args(["--fake-latency-ms", &conditions.latency_ms.to_string()])
            .args(["--fake-jitter-ms", &conditions.jitter_ms.to_string()])
            .args(["--fake-loss", &conditions.loss.to_string()])
            .arg("--report")
            .arg(&report_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LabError::ServerCost(format!("cannot start {} bots: {e}", exe.display())))?;
        Some(Running(child))
    } else {
        None
    };
    std::thread::sleep(Duration::from_secs_f64(SETTLE_S));
    server.still_running("the server")?;
    let ticks_per_s = clock_ticks_per_s();
    let (user0, system0) = cpu_times(pid, ticks_per_s)?;
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(settings.seconds));
    let (user1, system1) = cpu_times(pid, ticks_per_s)?;
    let wall_s = started.elapsed().as_secs_f64();
    let rss = rss_mib(pid);
    server.still_running("the server")?;
    // The bots stop on their own 2 s after the measurement; a few more for
    // their report, then they are stopped (and counted as none in the game).
    let finished = |mut clients: Running| clients.wait_for(Duration::from_secs(10));
    let clients_in_game = clients.map_or(0, |clients| if finished(clients) { in_game(&report_file) } else { 0 });
    let _ = std::fs::remove_file(&report_file);
    drop(server);
    let percent = |cpu: f64| 100.0 * cpu / wall_s;
    Ok(ServerCostReport {
        experiment: "servercost",
        build: build_name(),
        executor,
        players: load.players,
        bots,
        clients: load.clients,
        clients_in_game,
        tick: settings.tick,
        snapshot_rate: settings.snapshot_rate.unwrap_or(settings.tick),
        seconds: wall_s,
        core_percent: percent((user1 - user0) + (system1 - system0)),
        user_percent: percent(user1 - user0),
        system_percent: percent(system1 - system0),
        rss_mib: rss,
    })
}

/// Clients of `arena bots`' report that got into the game and kept their
/// connection to the end.
fn in_game(report: &PathBuf) -> usize {
    let text = std::fs::read_to_string(report).unwrap_or_default();
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else { return 0 };
    let clients = value.get("clients").and_then(|c| c.as_array()).cloned().unwrap_or_default();
    clients
        .iter()
        .filter(|c| c.get("joined_after_s").is_some_and(|j| !j.is_null()))
        .filter(|c| c.get("error").is_none_or(|e| e.is_null()))
        .count()
}
