//! An internet master and the servers it lists, as real processes: `arena
//! master`, three `arena server`s heartbeating to it (one bound only to
//! IPv6's `::1`, one private, one full of bots), and `arena servers
//! --master --json` reading the list the way a player's browser does.
//! A server stopped with SIGTERM leaves the list at once; one that stops
//! heartbeating leaves it when its listing times out.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

const ARENA: &str = env!("CARGO_BIN_EXE_arena");
/// The master's listing timeout in this test, seconds (15 minutes in use).
const LISTING_TIMEOUT_S: u64 = 3;

/// A process killed when the test ends, however it ends.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port(ip: &str) -> u16 {
    UdpSocket::bind((ip, 0)).unwrap().local_addr().unwrap().port()
}

/// Starts `arena ARGS...` and waits (up to 20 s) for its stdout to say it listens.
fn start(args: &[&str]) -> Process {
    let mut child = Command::new(ARENA)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("arena {args:?}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("listening on UDP") {
                let _ = tx.send(());
            }
        }
    });
    let process = Process(child);
    rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("arena {args:?} did not start listening"));
    process
}

fn signal(process: &Process, name: &str) {
    let status = Command::new("kill").args([name, &process.0.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// What `arena servers --master ... --json` lists: every server the master
/// listed, answering its query or not (a stopped server stops answering
/// at once; what is tested here is the master's list).
fn listed(master: SocketAddr) -> Vec<Value> {
    let out = Command::new(ARENA)
        .args(["servers", "--master", &master.to_string(), "--json", "--wait-ms", "1500"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|server| server["from_master"] == true)
        .collect()
}

fn find(servers: &[Value], addr: SocketAddr) -> Option<&Value> {
    servers.iter().find(|s| s["address"].as_str() == Some(addr.to_string().as_str()))
}

/// Asks until `done` holds of the list, up to `limit`; the time it took.
fn until(master: SocketAddr, limit: Duration, mut done: impl FnMut(&[Value]) -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done(&listed(master)) {
            return Some(start.elapsed());
        }
    }
    None
}

#[test]
fn a_master_lists_three_servers_and_forgets_the_stopped_and_the_silent() {
    let ipv6 = UdpSocket::bind("[::1]:0").is_ok();
    let master_port = free_port("127.0.0.1");
    let master = SocketAddr::from(([127, 0, 0, 1], master_port));
    let master_v6: SocketAddr = format!("[::1]:{master_port}").parse().unwrap();
    let _master = start(&[
        "master",
        "--bind",
        &format!("[::]:{master_port}"),
        "--listing-timeout-s",
        &LISTING_TIMEOUT_S.to_string(),
    ]);
    // Heartbeats every second here (every 5 minutes in use), so that the
    // living servers stay listed under the shortened timeout.
    let common = ["--master-heartbeat-s", "1", "--seconds", "120", "--tick", "32"];
    let six: SocketAddr = if ipv6 {
        format!("[::1]:{}", free_port("::1")).parse().unwrap()
    } else {
        SocketAddr::from(([127, 0, 0, 1], free_port("127.0.0.1")))
    };
    let private = SocketAddr::from(([127, 0, 0, 1], free_port("127.0.0.1")));
    let bots = SocketAddr::from(([127, 0, 0, 1], free_port("127.0.0.1")));
    let six_master = if ipv6 { master_v6 } else { master };
    let mut servers = Vec::new();
    for (addr, master, extra) in [
        (six, six_master, vec!["--name", "Only Six"]),
        (private, master, vec!["--name", "Secret Base", "--password", "swordfish"]),
        (bots, master, vec!["--name", "Bot Yard", "--bots", "3", "--max-clients", "1"]),
    ] {
        let (addr, master) = (addr.to_string(), master.to_string());
        let mut args = vec!["server", "--bind", addr.as_str(), "--master", master.as_str()];
        args.extend(&common);
        args.extend(extra);
        servers.push(start(&args));
    }
    let ready = Instant::now();
    // A player fills the bot yard's one client slot: 4 of 4, full.
    let _filler = Process(
        Command::new(ARENA)
            .args(["bots", "--connect", &bots.to_string(), "--count", "1", "--seconds", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let all_three =
        |list: &[Value]| [six, private, bots].iter().all(|a| find(list, *a).is_some_and(|s| s["answered"] == true));
    let took = until(master, Duration::from_secs(10), all_three).expect("all three listed");
    eprintln!("all three listed {:.2} s after the last server started", ready.elapsed().as_secs_f64());
    assert!(took <= Duration::from_secs(2), "listed after {took:?}");
    let full = |list: &[Value]| find(list, bots).is_some_and(|s| s["players"] == 4 && s["max_players"] == 4);
    assert!(until(master, Duration::from_secs(10), full).is_some(), "the bot yard fills up");
    let list = listed(master);
    let (s6, sp, sb) = (find(&list, six).unwrap(), find(&list, private).unwrap(), find(&list, bots).unwrap());
    eprintln!("{s6}\n{sp}\n{sb}");
    assert_eq!(s6["name"], "Only Six");
    assert_eq!(
        (s6["password"].as_bool(), s6["players"].as_u64(), s6["bots"].as_u64()),
        (Some(false), Some(0), Some(0))
    );
    assert_eq!(sp["name"], "Secret Base");
    assert_eq!(sp["password"], true);
    assert_eq!(sb["name"], "Bot Yard");
    assert_eq!((sb["players"].as_u64(), sb["max_players"].as_u64(), sb["bots"].as_u64()), (Some(4), Some(4), Some(3)));
    for server in [s6, sp, sb] {
        assert_eq!(server["from_master"], true);
        assert_eq!(server["compatible"], true);
        assert!(server["ping_ms"].as_f64().is_some_and(|p| p < 1000.0), "{server}");
        assert_eq!(server["map"], "Foundry");
    }

    // SIGTERM: the server says goodbye and the master drops it at once.
    signal(&servers[1], "-TERM");
    let sent = Instant::now();
    let gone = until(master, Duration::from_secs(5), |list| find(list, private).is_none());
    let gone_after = sent.elapsed();
    eprintln!("the stopped server left the list {:.2} s after SIGTERM", gone_after.as_secs_f64());
    assert!(gone.is_some() && gone_after <= Duration::from_secs(2), "gone after {gone_after:?}");

    // SIGKILL: no goodbye; listed until the timeout, then gone.
    signal(&servers[0], "-KILL");
    let killed = Instant::now();
    let still = listed(master);
    assert!(
        find(&still, six).is_some() || killed.elapsed() >= Duration::from_secs(LISTING_TIMEOUT_S),
        "a silent server stays listed until its listing times out"
    );
    let gone = until(master, Duration::from_secs(LISTING_TIMEOUT_S + 5), |list| find(list, six).is_none());
    let gone_after = killed.elapsed();
    eprintln!("the silent server left the list {:.2} s after it stopped", gone_after.as_secs_f64());
    assert!(gone.is_some(), "gone after the timeout");
    assert!(gone_after >= Duration::from_secs(LISTING_TIMEOUT_S - 1), "not before the timeout: {gone_after:?}");
    // The bot yard is still there.
    assert!(find(&listed(master), bots).is_some());
}

#[test]
fn a_server_whose_master_comes_late_is_listed_within_seconds_not_minutes() {
    let master_port = free_port("127.0.0.1");
    let master = SocketAddr::from(([127, 0, 0, 1], master_port));
    let server = SocketAddr::from(([127, 0, 0, 1], free_port("127.0.0.1")));
    // The server's heartbeats go nowhere at first (every 5 minutes
    // otherwise): it tries again after 5 s, 10 s, ... while unanswered.
    let _server = start(&[
        "server",
        "--bind",
        &server.to_string(),
        "--master",
        &master.to_string(),
        "--name",
        "Early Bird",
        "--seconds",
        "60",
        "--tick",
        "32",
    ]);
    std::thread::sleep(Duration::from_secs(2));
    let _master = start(&["master", "--bind", &master.to_string()]);
    let up = Instant::now();
    let listed = until(master, Duration::from_secs(15), |list| find(list, server).is_some());
    eprintln!("listed {:.1} s after the master came up", up.elapsed().as_secs_f64());
    assert!(listed.is_some(), "listed within 15 s");
}

#[test]
fn the_qstat_game_type_asks_for_this_protocol() {
    let cfg = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/qstat.cfg")).unwrap();
    let protocol: u64 = cfg
        .lines()
        .find_map(|l| l.trim().strip_prefix("master protocol = "))
        .expect("a master protocol line")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(protocol, arena_protocol::PROTOCOL_VERSION, "qstat.cfg's master protocol");
    assert!(cfg.contains("getservers Arena %s %s"), "the game name");
}
