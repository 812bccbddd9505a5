//! A slow frame rate must not slow the link: a client drawing 10 frames a
//! second, on the wall clock as a game is, has its socket on its own thread.
//! Its commands leave one by one at the tick's pace, not in a bunch each
//! frame, and the round trip it shows is the link's (a few milliseconds on
//! loopback), not its frame time. A real server on its own thread, real UDP.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use arena_client::transport::UdpTransport;
use arena_client::{IoMode, NetStats, NetcodeSettings, RoundTrip, Session};
use arena_lab::harness::{client_app_real, loopback_config, session};
use arena_server::ListenServer;

const FPS: f64 = 10.0;
const TICK_HZ: u32 = 64;

#[test]
fn a_client_at_ten_frames_a_second_sends_at_the_ticks_pace_and_measures_the_links_round_trip() {
    let server = ListenServer::start(loopback_config(TICK_HZ)).expect("a server");
    let mut client = client_app_real(server.info.local_addr, "Slow", NetcodeSettings::default());
    let frame = Duration::from_secs_f64(1.0 / FPS);
    let start = Instant::now();
    let mut frames = 0u32;
    // Join, then three seconds of play, ten frames a second.
    let mut joined_at = None;
    while start.elapsed() < Duration::from_secs(15) {
        client.update();
        frames += 1;
        if joined_at.is_none() && session(&client) == Session::InGame {
            joined_at = Some(Instant::now());
        }
        if joined_at.is_some_and(|at| at.elapsed() > Duration::from_secs(3)) {
            break;
        }
        let next = start + frame * frames;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    assert_eq!(session(&client), Session::InGame, "joined within 15 s");
    let transport = client.world().resource::<UdpTransport>();
    assert_eq!(transport.io_mode(), IoMode::Thread, "a client on the wall clock has an I/O thread");

    // The last second's command datagrams: about one a tick, each carrying
    // the next command, not ten-tick bunches a frame apart.
    let departures = transport.departures();
    let last = departures.last().expect("commands left").released;
    let recent: Vec<_> = departures.iter().filter(|d| last - d.released < Duration::from_secs(1)).collect();
    assert!(recent.len() > 40, "{} command datagrams in the last second at {TICK_HZ} Hz", recent.len());
    let mut gaps_ms: Vec<f64> =
        recent.windows(2).map(|w| w[1].released.saturating_sub(w[0].released).as_secs_f64() * 1000.0).collect();
    gaps_ms.sort_by(f64::total_cmp);
    let tick_ms = 1000.0 / f64::from(TICK_HZ);
    let median = gaps_ms[gaps_ms.len() / 2];
    assert!(
        (median - tick_ms).abs() < tick_ms / 2.0,
        "commands leave a tick apart ({tick_ms:.1} ms), not a frame: median gap {median:.1} ms"
    );

    // The round trip shown: the link's, with no frame (100 ms) in it.
    let rtt_s = client.world().resource::<RoundTrip>().rtt_s.expect("a measured round trip");
    let shown_ms = client.world().resource::<NetStats>().rtt_ms;
    assert!(rtt_s < 0.030, "loopback round trip {:.1} ms at {FPS} frames a second", rtt_s * 1000.0);
    assert!((shown_ms - rtt_s * 1000.0).abs() < 1e-6, "the HUD shows it");
}
