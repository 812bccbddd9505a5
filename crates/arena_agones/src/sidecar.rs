//! The sidecar's loop: look at the server every poll, report what changed
//! (Allocated while people play, Ready when it is empty),
//! and end with Shutdown when the server has been silent too long (it
//! stopped, or hangs) or when the sidecar itself is told to stop. Logs say
//! what changed, never a line per look.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use crate::a2s::{LookError, Looker};
use crate::report::Reporter;
use crate::tracking::Tracker;

/// How the sidecar looks at the server.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub server: SocketAddr,
    /// Time between looks.
    pub poll: Duration,
    /// Silence after which a server that had answered counts as stopped.
    pub down_after: Duration,
}

/// Most time one request of a look may wait for its answer.
const MAX_REQUEST_WAIT: Duration = Duration::from_secs(1);
/// How often the log repeats that the server has not answered yet.
const WAITING_LOG_EVERY: Duration = Duration::from_secs(10);

/// Why the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The server stopped answering after it had answered.
    ServerStopped,
    /// The sidecar was told to stop (SIGTERM or SIGINT).
    Stopped,
}

/// Runs until the server stops or `stop` resolves; Shutdown has been sent
/// either way when it returns.
pub async fn run(options: Options, mut reporter: Reporter, stop: impl Future<Output = ()>) -> Ending {
    let started = Instant::now();
    let wait = options.poll.min(MAX_REQUEST_WAIT);
    let mut tracker = Tracker::default();
    let mut last_answer: Option<Instant> = None;
    let mut misses = 0u64;
    let mut allocated = false;
    let mut last_waiting_log: Option<Instant> = None;
    // The map last labelled: a server with `--maps` changes it at a match's end.
    let mut labelled_map: Option<String> = None;
    let mut looker: Option<Looker> = None;
    let mut polls = tokio::time::interval(options.poll);
    polls.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => {
                eprintln!("arena-agones: told to stop: Shutdown");
                reporter.shutdown().await;
                return Ending::Stopped;
            }
            _ = polls.tick() => {}
        }
        let looked = match looker.as_mut() {
            Some(looker) => looker.look().await,
            None => match Looker::new(options.server, wait).await {
                Ok(new) => looker.insert(new).look().await,
                Err(e) => Err(e),
            },
        };
        match looked {
            Ok(view) => {
                if last_answer.is_none() {
                    eprintln!(
                        "arena-agones: {} answered after {:.1} s: \"{}\" on {}, {} of {} people, {} bots: Ready",
                        options.server,
                        started.elapsed().as_secs_f32(),
                        view.name,
                        view.map,
                        view.people.len(),
                        view.capacity,
                        view.bots
                    );
                    reporter.ready(&view.map, view.capacity).await;
                    labelled_map = Some(view.map.clone());
                } else if labelled_map.as_deref() != Some(view.map.as_str()) {
                    eprintln!("arena-agones: the server plays {} now: map label changed", view.map);
                    reporter.map_changed(&view.map).await;
                    labelled_map = Some(view.map.clone());
                }
                if last_answer.is_some() && misses > 0 {
                    eprintln!("arena-agones: the server answers again after {misses} missed looks");
                }
                last_answer = Some(Instant::now());
                misses = 0;
                reporter.healthy();
                let changes = tracker.update(view.people.iter().map(String::as_str));
                if !changes.is_empty() {
                    eprintln!(
                        "arena-agones: {} joined, {} left: {} people now ({} joins, {} leaves in all)",
                        changes.joined.len(),
                        changes.left.len(),
                        tracker.count(),
                        tracker.connects,
                        tracker.disconnects
                    );
                    reporter.players(&changes, &tracker).await;
                    match (allocated, tracker.count() > 0) {
                        (false, true) => reporter.allocate().await,
                        (true, false) => reporter.ready_again().await,
                        _ => {}
                    }
                    allocated = tracker.count() > 0;
                }
            }
            Err(e) => {
                misses += 1;
                match last_answer {
                    None => {
                        if last_waiting_log.is_none_or(|at| at.elapsed() >= WAITING_LOG_EVERY) {
                            last_waiting_log = Some(Instant::now());
                            eprintln!("arena-agones: waiting for the server at {}: {e}", options.server);
                        }
                    }
                    Some(at) if at.elapsed() >= options.down_after => {
                        stopped(&e, at.elapsed(), &mut tracker, &mut reporter).await;
                        return Ending::ServerStopped;
                    }
                    Some(_) if misses == 1 => eprintln!(
                        "arena-agones: no answer from the server ({e}); Shutdown after {:.1} s of silence",
                        options.down_after.as_secs_f32()
                    ),
                    Some(_) => {}
                }
            }
        }
    }
}

/// The server is gone: everyone left with it, then Shutdown.
async fn stopped(e: &LookError, silent: Duration, tracker: &mut Tracker, reporter: &mut Reporter) {
    eprintln!(
        "arena-agones: the server has not answered for {:.1} s ({e}): it stopped; {} people left with it; Shutdown",
        silent.as_secs_f32(),
        tracker.count()
    );
    let changes = tracker.clear();
    reporter.players(&changes, tracker).await;
    reporter.shutdown().await;
}
