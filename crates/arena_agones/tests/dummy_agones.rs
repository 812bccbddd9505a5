//! The sidecar against dummy-agones (an independent implementation of the
//! Agones SDK's gRPC service, from crates.io) with a real Arena server and
//! real bot clients over UDP on 127.0.0.1: Ready once the server answers,
//! health pings while it answers, the bot clients' joins and leaves counted
//! (Allocated while they play, Ready again when they have gone),
//! and Shutdown when the server stops (SIGTERM, its clean stop).
//!
//! The `arena` binary comes from `ARENA_BIN`, else the game's debug build in
//! `CARGO_TARGET_DIR` (`scripts/agones-check.sh` builds it first).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// Health pings dummy-agones received (it logs each one; nothing else of it
/// keeps them).
static HEALTH_PINGS: AtomicUsize = AtomicUsize::new(0);

struct CountHealthPings;

impl<S: tracing::Subscriber> Layer<S> for CountHealthPings {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        struct IsPing(bool);
        impl Visit for IsPing {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" && format!("{value:?}") == "Got health message" {
                    self.0 = true;
                }
            }
        }
        let mut ping = IsPing(false);
        event.record(&mut ping);
        if ping.0 {
            HEALTH_PINGS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A child process killed when the test ends, however it ends.
struct Process(Child, &'static str);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    /// Waits up to `limit` for the process to exit; its exit code.
    async fn exit_code(&mut self, limit: Duration) -> Option<i32> {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return status.code();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} still running after {limit:?}", self.1);
    }
}

fn arena_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("ARENA_BIN") {
        return bin.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let bin = target.join("debug/arena");
    assert!(bin.exists(), "no arena binary at {} (build the game first, or set ARENA_BIN)", bin.display());
    bin
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn log_file(name: &str) -> (Stdio, PathBuf) {
    let path = std::env::temp_dir().join(format!("arena-agones-test-{}-{name}.log", std::process::id()));
    (Stdio::from(std::fs::File::create(&path).unwrap()), path)
}

fn label(gs: &agones::GameServer, key: &str) -> Option<String> {
    gs.object_meta.as_ref()?.labels.get(key).cloned()
}

fn annotation(gs: &agones::GameServer, key: &str) -> Option<String> {
    gs.object_meta.as_ref()?.annotations.get(key).cloned()
}

fn state(gs: &agones::GameServer) -> String {
    gs.status.as_ref().map(|s| s.state.clone()).unwrap_or_default()
}

/// Asks dummy-agones for the GameServer until `done` holds, up to `limit`.
async fn wait_for(
    sdk: &mut agones::Sdk,
    limit: Duration,
    what: &str,
    done: impl Fn(&agones::GameServer) -> bool,
) -> agones::GameServer {
    let until = Instant::now() + limit;
    loop {
        let gs = sdk.get_gameserver().await.expect("dummy-agones answers");
        if done(&gs) {
            return gs;
        }
        assert!(Instant::now() < until, "{what}: not within {limit:?}; the GameServer is {gs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidecar_reports_a_real_server_and_its_bot_clients_to_dummy_agones() {
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(CountHealthPings)).unwrap();
    let agones_port = dummy_agones::Server::default().spawn_on_random_port().await.unwrap();
    let mut sdk = agones::Sdk::new(Some(agones_port), None).await.unwrap();
    assert_eq!(state(&sdk.get_gameserver().await.unwrap()), "", "a fresh GameServer has no state");

    let arena = arena_bin();
    let addr = format!("127.0.0.1:{}", free_udp_port());
    let started = Instant::now();
    let (server_log, server_log_path) = log_file("server");
    let mut server = Process(
        Command::new(&arena)
            .args(["server", "--name", "Agones check", "--bind", &addr, "--bots", "2", "--max-clients", "6"])
            .args(["--seconds", "120"])
            .stdout(Stdio::null())
            .stderr(server_log)
            .spawn()
            .unwrap(),
        "arena server",
    );
    let mut sidecar = Process(
        Command::new(env!("CARGO_BIN_EXE_arena-agones"))
            .args(["--server", &addr, "--poll-ms", "250", "--down-after-ms", "1500"])
            .args(["--agones-port", &agones_port.to_string()])
            .spawn()
            .unwrap(),
        "arena-agones",
    );

    // Ready, with the map and nobody playing (the server's two bots are not people).
    let gs = wait_for(&mut sdk, Duration::from_secs(30), "Ready", |gs| state(gs) == "Ready").await;
    let ready_after = started.elapsed();
    assert_eq!(label(&gs, "map").as_deref(), Some("Foundry"), "{gs:?}");
    let gs = wait_for(&mut sdk, Duration::from_secs(5), "players label", |gs| label(gs, "players").is_some()).await;
    assert_eq!(label(&gs, "players").as_deref(), Some("0"), "the server's own bots are not people: {gs:?}");

    // Health pings while it answers (one a look, four looks a second).
    let pings_at_ready = HEALTH_PINGS.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pings_in_2_s = HEALTH_PINGS.load(Ordering::Relaxed) - pings_at_ready;
    assert!(pings_in_2_s >= 5, "{pings_in_2_s} health pings in 2 s of looks every 250 ms");

    // Three bot clients join for 6 s, then leave.
    let (bots_log, bots_log_path) = log_file("bots");
    let mut bots = Process(
        Command::new(&arena)
            .args(["bots", "--connect", &addr, "--count", "3", "--name", "Probe ", "--seconds", "6"])
            .args(["--behavior", "roam"])
            .stdout(Stdio::null())
            .stderr(bots_log)
            .spawn()
            .unwrap(),
        "arena bots",
    );
    let joined = Instant::now();
    // The sidecar sets the label, then each annotation, one call each: the
    // three are looked at once the last of them has come.
    let gs = wait_for(&mut sdk, Duration::from_secs(15), "three people", |gs| {
        label(gs, "players").as_deref() == Some("3") && annotation(gs, "arena-disconnects").is_some()
    })
    .await;
    let seen_after = joined.elapsed();
    assert_eq!(annotation(&gs, "arena-connects").as_deref(), Some("3"), "{gs:?}");
    assert_eq!(annotation(&gs, "arena-disconnects").as_deref(), Some("0"), "{gs:?}");
    let gs = wait_for(&mut sdk, Duration::from_secs(2), "Allocated", |gs| state(gs) == "Allocated").await;
    assert_eq!(label(&gs, "players").as_deref(), Some("3"));
    assert_eq!(bots.exit_code(Duration::from_secs(30)).await, Some(0), "bot clients' log: {}", bots_log_path.display());
    let gs = wait_for(&mut sdk, Duration::from_secs(15), "everyone left", |gs| {
        label(gs, "players").as_deref() == Some("0") && annotation(gs, "arena-disconnects").as_deref() == Some("3")
    })
    .await;
    let (connects, disconnects) = (annotation(&gs, "arena-connects"), annotation(&gs, "arena-disconnects"));
    assert_eq!((connects.as_deref(), disconnects.as_deref()), (Some("3"), Some("3")), "{gs:?}");
    let gs = wait_for(&mut sdk, Duration::from_secs(2), "Ready again", |gs| state(gs) == "Ready").await;
    assert_eq!(label(&gs, "players").as_deref(), Some("0"), "empty and Ready again: {gs:?}");

    // The server stops (SIGTERM: its clean stop): Shutdown, and the sidecar ends.
    let pings_before_stop = HEALTH_PINGS.load(Ordering::Relaxed);
    let term = Command::new("kill").args(["-TERM", &server.0.id().to_string()]).status().unwrap();
    assert!(term.success());
    let stopped = Instant::now();
    assert_eq!(server.exit_code(Duration::from_secs(10)).await, Some(0), "server log: {}", server_log_path.display());
    let gs = wait_for(&mut sdk, Duration::from_secs(10), "Shutdown", |gs| state(gs) == "Shutdown").await;
    let shutdown_after = stopped.elapsed();
    assert_eq!(sidecar.exit_code(Duration::from_secs(5)).await, Some(0), "the sidecar exits 0 after Shutdown");
    let pings_after_stop = HEALTH_PINGS.load(Ordering::Relaxed) - pings_before_stop;
    assert!(pings_after_stop <= 2, "{pings_after_stop} health pings after the server stopped");

    println!(
        "dummy-agones saw: Ready {:.1} s after the server started (map label {:?}); {} health pings in all \
         ({pings_in_2_s} in 2 s); the 3 bot clients seen {:.1} s after they started (Allocated), players label 3 then 0 (Ready); \
         connects {} and disconnects {}; {pings_after_stop} pings after SIGTERM; Shutdown {:.1} s after SIGTERM; \
         final GameServer: state {}, labels {:?}, annotations {:?}",
        ready_after.as_secs_f32(),
        label(&gs, "map").unwrap_or_default(),
        HEALTH_PINGS.load(Ordering::Relaxed),
        seen_after.as_secs_f32(),
        connects.unwrap_or_default(),
        disconnects.unwrap_or_default(),
        shutdown_after.as_secs_f32(),
        state(&gs),
        gs.object_meta.as_ref().map(|m| &m.labels),
        gs.object_meta.as_ref().map(|m| &m.annotations),
    );
}
