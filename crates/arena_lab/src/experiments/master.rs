//! `arena lab master`: an internet master under attack. A master (the real
//! `arena master` process when the lab knows where its binary is, else one
//! on a thread of this process) with real servers, each on a socket of its
//! own answering the master's challenges as `arena server` does, while
//! heartbeats pour in from thousands of forged loopback addresses (no one
//! there answers a challenge) and clients ask for the list a thousand
//! times a second. Reports what got listed, how fast the list came, what
//! the master weighed, and how many bytes it sent an address per byte it
//! got from it.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arena_master::wire::{self, InfoString, ServerQuery};
use arena_master::{Master, MasterConfig};
use arena_protocol::query::{ServerKind, ServerListing};
use serde::Serialize;

use super::setup::LabError;

/// What to throw at the master.
#[derive(Debug, Clone)]
pub struct MasterLab {
    /// Real servers that register (and answer challenges).
    pub servers: usize,
    /// Forged addresses heartbeats claim to come from (127.1.0.0/16 and up).
    pub forged_addresses: usize,
    /// Forged heartbeats in all.
    pub heartbeats: usize,
    /// List requests a second, from clients on this machine.
    pub getservers_per_s: u32,
    /// How long the attack lasts, seconds.
    pub seconds: f64,
    /// The `arena` binary, to run the master as its own process (its memory
    /// measured alone); `None`: on a thread here.
    pub master_exe: Option<PathBuf>,
}

impl Default for MasterLab {
    fn default() -> Self {
        Self {
            servers: 10,
            forged_addresses: 10_000,
            heartbeats: 100_000,
            getservers_per_s: 1000,
            seconds: 10.0,
            master_exe: None,
        }
    }
}

/// What `arena lab master` prints.
#[derive(Debug, Serialize)]
pub struct MasterReport {
    pub experiment: &'static str,
    /// `process` (the `arena master` binary) or `thread`.
    pub master: &'static str,
    pub servers: usize,
    pub forged_addresses: usize,
    pub heartbeats_sent: u64,
    pub seconds: f64,
    /// Forged addresses in the master's list at the end (must be 0).
    pub forged_listed: usize,
    /// Real servers in the master's list at the end (must be all).
    pub real_listed: usize,
    /// List requests sent, and answered in full (ended by EOT).
    pub getservers_sent: u64,
    pub getservers_answered: u64,
    /// From a list request to the datagram that ended its answer, ms.
    pub getservers_ms_p50: f64,
    pub getservers_ms_p99: f64,
    pub getservers_ms_max: f64,
    /// The master's resident memory at the end, MB (of the whole process
    /// when it runs on a thread here).
    pub master_rss_mb: f64,
    /// The same before the attack, once it answered: the binary itself.
    pub master_idle_rss_mb: f64,
    /// Bytes the master sent one address per byte it got from it, for an
    /// address asking with bare (unpadded) requests: the most a forged
    /// source address gets out of it (never above 1).
    pub reply_bytes_per_request_byte: f64,
    /// The same for the clients asking with padded requests, as Arena's
    /// browser does (their whole list in one datagram).
    pub padded_reply_bytes_per_request_byte: f64,
}

/// The real servers: each on its own loopback address and socket, answering
/// `getinfo` with the infoResponse an `arena server` gives (its own
/// function builds it), as a server's transport does; no game runs behind
/// them (ten games would take the cores the master is measured on).
struct RealServers {
    sockets: Vec<UdpSocket>,
}

impl RealServers {
    fn bind(count: usize) -> Result<Self, LabError> {
        let sockets = (0..count)
            .map(|i| {
                let socket = UdpSocket::bind((Ipv4Addr::new(127, 0, 2, (i % 250 + 1) as u8), 0))?;
                socket.set_nonblocking(true)?;
                Ok(socket)
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| LabError::Master(format!("cannot bind the servers' sockets: {e}")))?;
        Ok(Self { sockets })
    }

    fn addrs(&self) -> Vec<SocketAddr> {
        self.sockets.iter().filter_map(|s| s.local_addr().ok()).collect()
    }

    fn heartbeat(&self, master: SocketAddr) {
        for socket in &self.sockets {
            let _ = socket.send_to(&wire::heartbeat(), master);
        }
    }

    /// Answers every `getinfo` waiting.
    fn answer(&self, master: SocketAddr) {
        let mut buffer = [0u8; 2048];
        for (i, socket) in self.sockets.iter().enumerate() {
            while let Ok((len, from)) = socket.recv_from(&mut buffer) {
                if from != master {
                    continue;
                }
                let Ok(getinfo) = wire::parse_getinfo(&buffer[..len]) else { continue };
                // What an `arena server` answers (its own function).
                let listing = ServerListing {
                    protocol: arena_protocol::PROTOCOL_VERSION as u8,
                    name: format!("Lab server {i}"),
                    map: "Foundry".into(),
                    folder: "arena".into(),
                    game: wire::GAME.into(),
                    players: (i % 4) as u8,
                    max_players: 16,
                    bots: 0,
                    kind: ServerKind::Dedicated,
                    environment: ServerListing::this_environment(),
                    password: false,
                    version: env!("CARGO_PKG_VERSION").into(),
                    port: None,
                    keywords: None,
                };
                let mut pairs = arena_server::info_string(&listing, 16).pairs().to_vec();
                if let Some(challenge) = getinfo.challenge {
                    pairs.insert(0, ("challenge".to_string(), challenge));
                }
                if let Ok(info) = InfoString::new(pairs)
                    && let Ok(response) = wire::info_response(&info)
                {
                    let _ = socket.send_to(&response, master);
                }
            }
        }
    }
}

/// The master under test: a child process, or a thread.
enum Running {
    Process(Child),
    Thread(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>),
}

impl Running {
    fn start(exe: Option<&PathBuf>, bind: SocketAddr) -> Result<Self, LabError> {
        if let Some(exe) = exe {
            let child = Command::new(exe)
                .args(["master", "--bind", &bind.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| LabError::Master(format!("cannot start {} master: {e}", exe.display())))?;
            return Ok(Running::Process(child));
        }
        let socket = arena_udp::bind_udp(bind).map_err(|e| LabError::Master(format!("cannot bind the master: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut master = Master::new(MasterConfig::default());
            let _ = arena_master::serve(&socket, None, &mut master, &flag, &mut |_| {});
        });
        Ok(Running::Thread(stop, Some(thread)))
    }

    fn rss_mb(&self) -> f64 {
        let pid = match self {
            Running::Process(child) => child.id().to_string(),
            Running::Thread(..) => "self".to_string(),
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        kb / 1024.0
    }

    fn name(&self) -> &'static str {
        match self {
            Running::Process(_) => "process",
            Running::Thread(..) => "thread",
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        match self {
            Running::Process(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Running::Thread(stop, thread) => {
                stop.store(true, Ordering::Relaxed);
                if let Some(thread) = thread.take() {
                    let _ = thread.join();
                }
            }
        }
    }
}

fn query(padded: bool) -> Vec<u8> {
    let query = ServerQuery::everything(wire::GAME, arena_protocol::PROTOCOL_VERSION as i64);
    wire::get_servers(&query, if padded { wire::MAX_DATAGRAM_BYTES } else { 0 })
}

/// A client asking for the list over and over, one request at a time.
struct Asker {
    socket: UdpSocket,
    asked_at: Option<Instant>,
    bytes_out: u64,
    bytes_in: u64,
}

impl Asker {
    fn new(ip: Ipv4Addr) -> Result<Self, LabError> {
        let socket = UdpSocket::bind((ip, 0)).map_err(|e| LabError::Master(format!("cannot bind a client: {e}")))?;
        socket.set_nonblocking(true).map_err(|e| LabError::Master(e.to_string()))?;
        Ok(Self { socket, asked_at: None, bytes_out: 0, bytes_in: 0 })
    }

    fn ask(&mut self, master: SocketAddr, request: &[u8], now: Instant) -> bool {
        if self.socket.send_to(request, master).is_ok() {
            self.bytes_out += request.len() as u64;
            self.asked_at = Some(now);
            true
        } else {
            false
        }
    }

    /// Reads what came; the latency of a request whose answer ended.
    fn read(&mut self, buffer: &mut [u8]) -> Option<Duration> {
        let mut done = None;
        while let Ok((len, _)) = self.socket.recv_from(buffer) {
            self.bytes_in += len as u64;
            if let Ok(part) = wire::parse_servers_response(&buffer[..len])
                && part.end
                && let Some(at) = self.asked_at.take()
            {
                done = Some(at.elapsed());
            }
        }
        done
    }
}

/// The whole list as a padded request sees it.
fn final_list(master: SocketAddr) -> Result<Vec<SocketAddr>, LabError> {
    let mut asker = Asker::new(Ipv4Addr::new(127, 0, 3, 1))?;
    let mut buffer = [0u8; 2048];
    let mut servers = Vec::new();
    for _ in 0..8 {
        asker.ask(master, &query(true), Instant::now());
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(500) {
            while let Ok((len, _)) = asker.socket.recv_from(&mut buffer) {
                if let Ok(part) = wire::parse_servers_response(&buffer[..len]) {
                    servers.extend(part.servers);
                    if part.end {
                        return Ok(servers);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Err(LabError::Master("the master never finished its list".into()))
}

/// Runs the attack and measures.
pub fn master(lab: &MasterLab) -> Result<MasterReport, LabError> {
    if lab.servers == 0 || lab.servers > 250 || lab.forged_addresses == 0 || lab.forged_addresses > 60_000 {
        return Err(LabError::Master("1-250 servers and 1-60000 forged addresses".into()));
    }
    if !(lab.seconds.is_finite() && lab.seconds > 0.0 && lab.seconds <= 3600.0) {
        return Err(LabError::Seconds(lab.seconds));
    }
    let port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| LabError::Master(e.to_string()))?
        .port();
    let master = SocketAddr::from(([127, 0, 0, 1], port));
    let running = Running::start(lab.master_exe.as_ref(), master)?;
    // Wait for it to answer.
    let mut probe = Asker::new(Ipv4Addr::LOCALHOST)?;
    let mut buffer = vec![0u8; 2048];
    let up = Instant::now();
    loop {
        probe.ask(master, &query(true), Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        if probe.read(&mut buffer).is_some() {
            break;
        }
        if up.elapsed() > Duration::from_secs(10) {
            return Err(LabError::Master("the master did not answer within 10 s".into()));
        }
    }
    let idle_rss_mb = running.rss_mb();
    let servers = RealServers::bind(lab.servers)?;
    // The clients: padded ones in a closed loop (20 of them), and one on
    // its own address asking with bare requests at a tenth of the rate.
    let mut askers: Vec<Asker> = (0..20).map(|_| Asker::new(Ipv4Addr::new(127, 0, 4, 1))).collect::<Result<_, _>>()?;
    let mut bare = Asker::new(Ipv4Addr::new(127, 0, 5, 1))?;
    let forged = |i: usize| {
        let i = i % lab.forged_addresses;
        SocketAddr::from(([127, 1 + (i / 62_500) as u8, (i / 250 % 250) as u8, (i % 250 + 1) as u8], 40_000))
    };
    let heartbeat = wire::heartbeat();
    let (padded, bare_request) = (query(true), query(false));
    let start = Instant::now();
    let duration = Duration::from_secs_f64(lab.seconds);
    let (mut forged_sent, mut asked, mut bare_asked) = (0u64, 0u64, 0u64);
    let mut latencies: Vec<f64> = Vec::new();
    let mut next_server_beat = start + Duration::from_millis(500);
    while start.elapsed() < duration {
        let now = Instant::now();
        let elapsed = now.duration_since(start).as_secs_f64();
        // Forged heartbeats, spread over the run.
        let due = ((elapsed / lab.seconds) * lab.heartbeats as f64) as u64;
        while forged_sent < due.min(lab.heartbeats as u64) {
            // A socket bound to the forged address for one datagram: the
            // master sees that address; no one there answers its challenge.
            if let Ok(socket) = UdpSocket::bind(forged(forged_sent as usize)) {
                let _ = socket.send_to(&heartbeat, master);
            }
            forged_sent += 1;
        }
        // The real servers heartbeat into the flood (at start, and every
        // 2 s as changes would make them), and answer challenges.
        if now >= next_server_beat {
            servers.heartbeat(master);
            next_server_beat = now + Duration::from_secs(2);
        }
        servers.answer(master);
        // List requests at the rate asked.
        let due = (elapsed * f64::from(lab.getservers_per_s)) as u64;
        for asker in &mut askers {
            if let Some(latency) = asker.read(&mut buffer) {
                latencies.push(latency.as_secs_f64() * 1000.0);
            }
            let stale = asker.asked_at.is_some_and(|t| now.duration_since(t) > Duration::from_millis(500));
            if asked < due && (asker.asked_at.is_none() || stale) && asker.ask(master, &padded, now) {
                asked += 1;
            }
        }
        bare.read(&mut buffer);
        if bare_asked < due / 10 && bare.ask(master, &bare_request, now) {
            bare_asked += 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // Whatever the last pass left of the forged heartbeats.
    while forged_sent < lab.heartbeats as u64 {
        if let Ok(socket) = UdpSocket::bind(forged(forged_sent as usize)) {
            let _ = socket.send_to(&heartbeat, master);
        }
        forged_sent += 1;
    }
    // Let the last answers in, then read the list.
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_millis(300) {
        servers.answer(master);
        for asker in &mut askers {
            if let Some(latency) = asker.read(&mut buffer) {
                latencies.push(latency.as_secs_f64() * 1000.0);
            }
        }
        bare.read(&mut buffer);
        std::thread::sleep(Duration::from_millis(1));
    }
    let list = final_list(master)?;
    let real = servers.addrs();
    let real_listed = real.iter().filter(|a| list.contains(a)).count();
    let forged_listed = list.iter().filter(|a| !real.contains(a)).count();
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        if latencies.is_empty() { f64::NAN } else { latencies[((latencies.len() - 1) as f64 * p).round() as usize] }
    };
    let ratio = |a: &Asker| if a.bytes_out == 0 { 0.0 } else { a.bytes_in as f64 / a.bytes_out as f64 };
    let (padded_in, padded_out) = askers.iter().fold((0u64, 0u64), |(i, o), a| (i + a.bytes_in, o + a.bytes_out));
    Ok(MasterReport {
        experiment: "master",
        master: running.name(),
        servers: lab.servers,
        forged_addresses: lab.forged_addresses,
        heartbeats_sent: forged_sent,
        seconds: lab.seconds,
        forged_listed,
        real_listed,
        getservers_sent: asked,
        getservers_answered: latencies.len() as u64,
        getservers_ms_p50: pct(0.5),
        getservers_ms_p99: pct(0.99),
        getservers_ms_max: latencies.last().copied().unwrap_or(f64::NAN),
        master_rss_mb: running.rss_mb(),
        master_idle_rss_mb: idle_rss_mb,
        reply_bytes_per_request_byte: ratio(&bare),
        padded_reply_bytes_per_request_byte: if padded_out == 0 { 0.0 } else { padded_in as f64 / padded_out as f64 },
    })
}
