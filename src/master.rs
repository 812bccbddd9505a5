//! `arena master`: an internet master server (see the `arena_master`
//! crate) from the command line: its socket, its limits, its stop signals.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arena_master::{Master, MasterConfig, RelayConfig};
use bevy::log::{info, warn};
use clap::Args;

#[derive(Args, Debug, Clone)]
pub(crate) struct MasterArgs {
    /// Address and UDP port to listen on: [::] takes IPv4 and IPv6 (IPv4
    /// only where the machine has no IPv6).
    #[arg(long, env = "ARENA_MASTER_BIND", default_value_t = SocketAddr::from((Ipv6Addr::UNSPECIFIED, arena_master::wire::DEFAULT_PORT)),
          value_parser = arena_udp::parse_socket_addr)]
    bind: SocketAddr,
    /// A server is dropped this long after its last valid answer to a
    /// challenge, seconds (servers heartbeat every 5 minutes).
    #[arg(long, env = "ARENA_MASTER_LISTING_TIMEOUT_S", value_name = "S", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    listing_timeout_s: u64,
    /// Most servers listed in all.
    #[arg(long, env = "ARENA_MASTER_MAX_SERVERS", value_name = "N", default_value_t = 4096,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    max_servers: u64,
    /// Most servers (listed or asked to prove themselves) per address (an
    /// IPv4 address, or an IPv6 /64).
    #[arg(long, env = "ARENA_MASTER_MAX_PER_ADDRESS", value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_per_address: u64,
    /// UDP port of the second socket, from which reachability probes go
    /// (so that a server learns whether strangers reach it, not only this
    /// master): default the listening port + 1, or any free port if that one
    /// is taken; 0 for none (checks go unanswered: reachability stays unknown).
    #[arg(long, env = "ARENA_MASTER_PROBE_PORT", value_name = "PORT", conflicts_with = "probe_bind")]
    probe_port: Option<u16>,
    /// Address and UDP port of the second socket instead, on a second IP
    /// address of this machine (of the family servers use): the probe then
    /// comes from an address a server never sent to, so a router that
    /// admits any port of an address it has talked to is found out
    /// ("reachable no"); without it a server's check is only as good as
    /// one address, and its report says so.
    #[arg(long, env = "ARENA_MASTER_PROBE_BIND", value_name = "ADDR:PORT",
          value_parser = arena_udp::parse_socket_addr)]
    probe_bind: Option<SocketAddr>,
    /// Game names listed (default: Arena); repeatable.
    #[arg(long = "game", value_name = "NAME")]
    games: Vec<String>,
    /// A TURN relay (coturn) for players whose way to a listed server no
    /// punching can open: its address as players reach it (HOST:PORT or
    /// IP:PORT). Needs --turn-secret-file and --turn-userdb.
    #[arg(long, env = "ARENA_MASTER_TURN_SERVER", value_name = "ADDR", value_parser = arena_udp::parse_socket_addr)]
    turn_server: Option<SocketAddr>,
    /// A file whose first line is coturn's static-auth-secret (its
    /// --use-auth-secret credentials are made from it).
    #[arg(long, env = "ARENA_MASTER_TURN_SECRET_FILE", value_name = "FILE", requires = "turn_server")]
    turn_secret_file: Option<PathBuf>,
    /// coturn's SQLite user database (turnserver --userdb): its table
    /// allowed_peer_ip is kept to the listed servers' addresses, the only
    /// peers a relay that denies all others admits.
    #[arg(long, env = "ARENA_MASTER_TURN_USERDB", value_name = "FILE", requires = "turn_server")]
    turn_userdb: Option<PathBuf>,
    /// The realm of the rows written into allowed_peer_ip (coturn's realm).
    #[arg(
        long,
        env = "ARENA_MASTER_TURN_REALM",
        value_name = "REALM",
        default_value = "arena",
        requires = "turn_server"
    )]
    turn_realm: String,
    /// Addresses the relay's relayed addresses are on, if not the TURN
    /// server's own (coturn's relay-ip or external-ip); repeatable.
    #[arg(long = "turn-relay-ip", value_name = "IP", requires = "turn_server")]
    turn_relay_ips: Vec<IpAddr>,
    /// The relay's relayed ports (coturn's min-port-max-port): only an
    /// address there is introduced to a server as a player's.
    #[arg(long, value_name = "MIN-MAX", default_value = "49152-65535", value_parser = parse_port_range,
          requires = "turn_server")]
    turn_relay_ports: std::ops::RangeInclusive<u16>,
    /// How long relay credentials may start an allocation, seconds.
    #[arg(long, value_name = "S", default_value_t = 600, value_parser = clap::value_parser!(u64).range(60..=86_400))]
    turn_credential_lifetime_s: u64,
    /// Stop after this many seconds (for scripts and tests).
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
}

/// `MIN-MAX`, two ports, the first not above the second.
fn parse_port_range(text: &str) -> Result<std::ops::RangeInclusive<u16>, String> {
    let bad = || format!("\"{text}\": give the relayed ports as MIN-MAX, such as 50000-50999 (1-65535)");
    let (min, max) = text.split_once('-').ok_or_else(bad)?;
    let min: u16 = min.trim().parse().map_err(|_| bad())?;
    let max: u16 = max.trim().parse().map_err(|_| bad())?;
    if min == 0 || min > max {
        return Err(bad());
    }
    Ok(min..=max)
}

/// The relay's settings from the flags (none without --turn-server), and
/// where the listed servers' addresses go for it.
fn relay_config(args: &MasterArgs) -> Result<Option<(RelayConfig, PathBuf)>, String> {
    let Some(turn) = args.turn_server else { return Ok(None) };
    let secret_file = args
        .turn_secret_file
        .as_ref()
        .ok_or("--turn-server needs --turn-secret-file (a file whose first line is coturn's static-auth-secret)")?;
    let userdb = args.turn_userdb.clone().ok_or(
        "--turn-server needs --turn-userdb (coturn's SQLite database, whose allowed_peer_ip table the master keeps \
         to the listed servers: without it the relay would carry players' datagrams to anyone)",
    )?;
    let secret = read_secret(secret_file)?;
    let relay_ips = if args.turn_relay_ips.is_empty() { vec![turn.ip()] } else { args.turn_relay_ips.clone() };
    let started_unix = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| format!("the clock: {e}"))?;
    Ok(Some((
        RelayConfig {
            turn,
            relay_ips: relay_ips.into_iter().map(|ip| arena_udp::canonical(SocketAddr::new(ip, 0)).ip()).collect(),
            relay_ports: args.turn_relay_ports.clone(),
            secret,
            // The master's own addresses, where known (a bind to every
            // address names none): never the relay's peers.
            own_ips: [Some(args.bind.ip()), args.probe_bind.map(|p| p.ip())]
                .into_iter()
                .flatten()
                .filter(|ip| !ip.is_unspecified())
                .map(|ip| arena_udp::canonical(SocketAddr::new(ip, 0)).ip())
                .collect(),
            credential_lifetime: Duration::from_secs(args.turn_credential_lifetime_s),
            started_unix,
        },
        userdb,
    )))
}

/// The first line of the secret file; never empty.
fn read_secret(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read --turn-secret-file {}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(4096)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read --turn-secret-file {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        return Err(format!(
            "--turn-secret-file {}: its first line is empty; it must hold coturn's static-auth-secret",
            path.display()
        ));
    }
    Ok(line.as_bytes().to_vec())
}

/// Runs the master until SIGTERM, SIGINT or `--seconds`.
pub(crate) fn run(args: &MasterArgs) -> Result<(), String> {
    let defaults = MasterConfig::default();
    let games = if args.games.is_empty() { defaults.games.clone() } else { args.games.clone() };
    if let Some(bad) = games.iter().find(|g| g.is_empty() || g.len() > 63 || g.contains(char::is_whitespace)) {
        return Err(format!("--game \"{bad}\": a game name is 1-63 characters with no spaces"));
    }
    let seconds = match args.seconds {
        Some(s) if !(s.is_finite() && s > 0.0 && s < 1e9) => {
            return Err(format!("--seconds must be a positive number, not {s}"));
        }
        s => s.map(Duration::from_secs_f64),
    };
    let relay = relay_config(args)?;
    let config = MasterConfig {
        relay: relay.as_ref().map(|(config, _)| config.clone()),
        games,
        max_servers: args.max_servers as usize,
        max_servers_per_address: args.max_per_address as usize,
        listing_timeout: Duration::from_secs(args.listing_timeout_s),
        ..defaults
    };
    let socket = arena_udp::bind_udp(args.bind).map_err(|e| {
        let hint =
            if e.kind() == std::io::ErrorKind::AddrInUse { " (another master? pick another --bind)" } else { "" };
        format!("cannot listen on UDP {}: {e}{hint}", args.bind)
    })?;
    let local = socket.local_addr().map_err(|e| e.to_string())?;
    // The second socket: the port asked for, else the listening port + 1,
    // else any free one (its number goes out in every answer, so any will
    // do; a game server on the next port must not stop the master).
    let probe = match (args.probe_bind, args.probe_port) {
        (Some(addr), _) => Some(arena_udp::bind_udp(addr).map_err(|e| {
            format!(
                "cannot listen on UDP {addr} for reachability probes: {e} (is {} an address of this machine?)",
                addr.ip()
            )
        })?),
        (None, Some(0)) => None,
        (None, Some(port)) => {
            let addr = SocketAddr::new(args.bind.ip(), port);
            Some(arena_udp::bind_udp(addr).map_err(|e| {
                format!("cannot listen on UDP {addr} for reachability probes: {e} (pick another --probe-port, or 0 for none)")
            })?)
        }
        (None, None) => {
            let next =
                SocketAddr::new(args.bind.ip(), if local.port() == 0 { 0 } else { local.port().wrapping_add(1) });
            let any = SocketAddr::new(args.bind.ip(), 0);
            let bound = arena_udp::bind_udp(next).or_else(|_| arena_udp::bind_udp(any));
            Some(bound.map_err(|e| {
                format!("cannot listen on UDP {any} for reachability probes: {e} (--probe-port 0 for none)")
            })?)
        }
    };
    println!(
        "Arena master listening on UDP {local} ({}): servers register with `arena server --master HOST:{}`, \
         players list them with `arena servers --master HOST:{}`.",
        if local.is_ipv6() && local.ip().is_unspecified() { "IPv4 and IPv6" } else { "one address" },
        local.port(),
        local.port()
    );
    let stop = Arc::new(AtomicBool::new(false));
    // A second signal while stopping exits at once.
    arena_udp::stop_on_signals(&stop).map_err(|e| format!("cannot handle SIGTERM and SIGINT: {e}"))?;
    if let Some(after) = seconds {
        let stop = stop.clone();
        let started = Instant::now();
        std::thread::spawn(move || {
            while started.elapsed() < after && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
    if let Some(probe) = &probe {
        let addr = probe.local_addr().map_err(|e| e.to_string())?;
        if addr.ip().is_unspecified() || addr.ip() == local.ip() {
            println!(
                "Reachability probes go from UDP port {} of this address (a check only as good as one address: \
                 --probe-bind on a second address makes it exact).",
                addr.port()
            );
        } else {
            println!("Reachability probes go from {addr}, a second address.");
        }
    }
    let mut master = Master::new(config);
    if let Some((relay, userdb)) = &relay {
        let peers = crate::relay_peers::start(userdb, args.turn_realm.clone()).map_err(|e| e.to_string())?;
        master.set_relay_peers_sink(Box::new(move |listed| {
            let _ = peers.send(listed.clone());
        }));
        println!(
            "Relay: TURN server {} for players no punching gets through; its admitted peers kept in {}.",
            relay.turn,
            userdb.display()
        );
    }
    let result = arena_master::serve(&socket, probe.as_ref(), &mut master, &stop, &mut |line: &str| info!("{line}"));
    let listed = master.listed().count();
    match result {
        Ok(()) => {
            info!("master stopping ({listed} servers listed)");
            Ok(())
        }
        Err(e) => {
            warn!("master stopped: {e}");
            Err(format!("the master's socket failed: {e}"))
        }
    }
}
