//! Asking the home router for the game's UDP port (UPnP-IGD, NAT-PMP,
//! PCP; see the `arena_nat` crate), on a worker thread of its own: mapped
//! within [`MAP_BUDGET`] or reported as failed (never fatal), renewed at
//! half its lease, removed on a clean stop (the menu, Ctrl+C, SIGTERM).

use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arena_nat::{Mapper, Methods};
use bevy::prelude::*;

use crate::reach_report::{MapState, ReachHandle};

/// How long asking the router may take, in all methods together.
pub(crate) const MAP_BUDGET: Duration = Duration::from_secs(2);
/// How long removing the mapping may hold up a stop.
pub(crate) const REMOVE_BUDGET: Duration = Duration::from_millis(1000);
/// A renewal that failed is tried again after this.
const RETRY_RENEW: Duration = Duration::from_secs(10);
/// A mapping that could not be made is asked for again after this, then
/// twice as long each time, up to [`MAX_RETRY_MAP`].
const RETRY_MAP: Duration = Duration::from_secs(60);
const MAX_RETRY_MAP: Duration = Duration::from_secs(600);
/// The shortest wait between renewals, whatever lease the router grants.
const MIN_RENEW_GAP: Duration = Duration::from_secs(1);

/// What the worker tells the game.
#[derive(Debug)]
enum Event {
    State(MapState),
    Note(String),
}

/// The worker and its channels.
#[derive(Resource)]
pub(crate) struct PortMapping {
    events: Mutex<Receiver<Event>>,
    stop: Option<Sender<()>>,
    worker: Option<JoinHandle<()>>,
}

/// What to ask for.
#[derive(Clone, Debug)]
pub(crate) struct MapRequest {
    pub methods: Methods,
    pub internal_port: u16,
    pub lease: Duration,
    pub description: String,
}

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, read_worker)
        .add_systems(Last, remove_on_exit.after(crate::socket::transport::disconnect_on_exit));
}

impl PortMapping {
    pub(crate) fn start(request: MapRequest) -> Self {
        let (events_tx, events) = mpsc::channel();
        let (stop, stop_rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("arena-port-mapping".into())
            .spawn(move || work(&request, &events_tx, &stop_rx))
            .ok();
        Self { events: Mutex::new(events), stop: Some(stop), worker }
    }
}

fn work(request: &MapRequest, events: &Sender<Event>, stop: &Receiver<()>) {
    let _ = events.send(Event::State(MapState::Asking));
    let mapper = match Mapper::for_default_gateway(request.internal_port, request.lease, &request.description) {
        Ok(mapper) => mapper,
        Err(e) => {
            let _ = events.send(Event::State(MapState::Failed(e.to_string())));
            return;
        }
    };
    let mapped =
        |m: &arena_nat::Mapping| MapState::Mapped { method: m.method, external: m.external, lease: m.lifetime };
    // Asked again after a failure, less and less often (a router rebooting,
    // UPnP switched on by the player meanwhile).
    let mut retry = RETRY_MAP;
    let mut mapping = loop {
        match mapper.map(request.methods, MAP_BUDGET) {
            Ok(mapping) => break mapping,
            Err(e) => {
                let _ = events.send(Event::State(MapState::Failed(format!("router at {}: {e}", mapper.gateway))));
                match stop.recv_timeout(retry) {
                    Err(RecvTimeoutError::Timeout) => retry = (retry * 2).min(MAX_RETRY_MAP),
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    };
    let _ = events.send(Event::State(mapped(&mapping)));
    let mut granted_at = Instant::now();
    let mut wait = (mapping.lifetime / 2).max(MIN_RENEW_GAP);
    loop {
        match stop.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => match mapper.renew(&mut mapping, MAP_BUDGET) {
                Ok(()) => {
                    let _ = events.send(Event::Note(format!(
                        "port mapping renewed with {} ({} for {} s)",
                        mapping.method,
                        mapping.external,
                        mapping.lifetime.as_secs()
                    )));
                    let _ = events.send(Event::State(mapped(&mapping)));
                    granted_at = Instant::now();
                    wait = (mapping.lifetime / 2).max(MIN_RENEW_GAP);
                }
                Err(e) => {
                    let _ = events.send(Event::Note(format!(
                        "renewing the port mapping failed: {e}; retrying in {} s",
                        RETRY_RENEW.as_secs()
                    )));
                    // Past its lease the mapping is gone: say so (the
                    // reachability check runs again), and keep trying.
                    if granted_at.elapsed() >= mapping.lifetime {
                        let _ = events.send(Event::State(MapState::Failed(format!("the lease ran out: {e}"))));
                    }
                    wait = RETRY_RENEW.min((mapping.lifetime / 2).max(MIN_RENEW_GAP));
                }
            },
            // A stop, or the game gone: remove the mapping.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                let note = match mapper.remove(&mapping, REMOVE_BUDGET) {
                    Ok(()) => format!("port mapping {} ({}) removed", mapping.external, mapping.method),
                    Err(e) => format!(
                        "removing the port mapping {} failed: {e} (the router drops it when its lease ends)",
                        mapping.external
                    ),
                };
                let _ = events.send(Event::Note(note));
                let _ = events.send(Event::State(MapState::Removed));
                return;
            }
        }
    }
}

fn read_worker(mapping: Res<PortMapping>, report: Res<ReachHandle>) {
    let Ok(events) = mapping.events.lock() else { return };
    loop {
        match events.try_recv() {
            Ok(Event::State(state)) => {
                let before = report.get().mapping;
                match &state {
                    // A renewal of the same mapping was logged by the worker.
                    MapState::Mapped { external, .. } if matches!(&before, MapState::Mapped { external: e, .. } if e == external) =>
                        {}
                    MapState::Mapped { method, external, lease } => {
                        info!("port mapping: {method} mapped {external} to this server for {} s", lease.as_secs())
                    }
                    MapState::Failed(why) => warn!("port mapping failed ({why}); strangers may not reach this server"),
                    _ => {}
                }
                report.update(|r| r.mapping = state);
            }
            Ok(Event::Note(line)) => info!("{line}"),
            Err(TryRecvError::Empty) => break,
            // The worker is gone (it ended, or never started): a state still
            // "asking" would hold the reachability check back for good.
            Err(TryRecvError::Disconnected) => {
                if report.get().mapping == MapState::Asking {
                    report.update(|r| r.mapping = MapState::Failed("the port-mapping worker ended".into()));
                }
                break;
            }
        }
    }
}

/// On a clean stop: the mapping removed (at most [`REMOVE_BUDGET`]).
fn remove_on_exit(exit: MessageReader<AppExit>, mut mapping: ResMut<PortMapping>) {
    if exit.is_empty() {
        return;
    }
    stop_worker(&mut mapping);
}

fn stop_worker(mapping: &mut PortMapping) {
    if let Some(stop) = mapping.stop.take() {
        let _ = stop.send(());
    }
    if let Some(worker) = mapping.worker.take() {
        // The worker may still be asking (at most MAP_BUDGET) before it
        // reads the stop; then it removes what it got.
        let _ = worker.join();
    }
    if let Ok(events) = mapping.events.lock() {
        while let Ok(event) = events.try_recv() {
            if let Event::Note(line) = event {
                info!("{line}");
            }
        }
    }
}

impl Drop for PortMapping {
    fn drop(&mut self) {
        stop_worker(self);
    }
}
