//! Browsers into the same netcode (issue 57). A WebTransport endpoint
//! beside the game server's UDP socket: each browser session is a peer
//! with an address of its own (`arena_udp::web_peer_addr`, which no UDP
//! datagram can claim), whose netcode.io datagrams go into the same guard,
//! netcode and renet as a UDP player's, so bans, rate limits, passwords,
//! the roster, queries, demos, votes, chat and rcon treat a browser player
//! as any other. The datagrams cross as WebTransport datagrams when they
//! fit, otherwise as frames on a stream (`arena_protocol::web_frame`).
//! The same port serves the page (HTTP and HTTPS, TCP) and the endpoint's
//! hash; the certificate is made at start, renewed before it ends, and its
//! key never leaves memory.
//!
//! Native only: quinn and tokio, on a thread of their own.
//!
//! # Modules, bottom up
//!
//! - `limits`: the caps on sessions, buffers, frames and page requests,
//!   and the counters summed up in the log.
//! - `certificate`: the self-signed certificate a browser pins by its hash.
//! - `error`: why the endpoint did not open, or a link did not connect.
//! - `sessions`: who may open a session, its peer address, its real one.
//! - `shared`: what the endpoint's thread and the game's share.
//! - `page_server`: the page and `/web-endpoint`, over HTTP and HTTPS.
//! - `endpoint`: the sessions' tasks, renewal and the summary line.
//! - `client`: a native client link pinned to the hash (tests, tools).

mod certificate;
pub mod client;
mod endpoint;
mod error;
mod limits;
mod page_server;
mod sessions;
mod shared;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

pub use certificate::{BACKDATED, Certificate, CertificateError, RENEW_AFTER, VALID_AHEAD};
pub use error::WebError;
pub use limits::{
    ADMIT_TIMEOUT, Counters, MAX_SESSIONS_PER_IP, SESSION_PATH, SILENT_SESSION_TIMEOUT, SUMMARY_INTERVAL, Tally,
};
pub use page_server::{ENDPOINT_INFO_PATH, Refused, Request, file_in_folder, parse_request};

/// What the endpoint is opened with.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// The address and port (UDP for sessions, TCP for the page; 0: any
    /// free port that is free for both).
    pub bind: SocketAddr,
    /// The folder `scripts/web-build.sh` made, served as the page (`None`:
    /// sessions only).
    pub folder: Option<PathBuf>,
    /// Sessions open or in their handshake at once, at most.
    pub max_sessions: usize,
    /// Names the certificate carries (host names, IP addresses).
    pub names: Vec<String>,
    /// How long a session may stay silent before it is closed
    /// ([`SILENT_SESSION_TIMEOUT`]; shorter in tests).
    pub silent_timeout: std::time::Duration,
    /// How long a session may wait for its peer to become a netcode client
    /// ([`ADMIT_TIMEOUT`]; shorter in tests).
    pub admit_timeout: std::time::Duration,
    /// How often the certificate is renewed ([`RENEW_AFTER`]; shorter in
    /// tests; never more than [`RENEW_AFTER`]).
    pub renew_after: std::time::Duration,
}

/// An open endpoint: the game's [`arena_udp::WebLink`] to its sessions.
/// When the last handle goes (the server stops), the endpoint closes its
/// sessions and ports, and its thread ends.
#[derive(Clone)]
pub struct WebEndpoint {
    shared: Arc<shared::Shared>,
    /// The port it listens on (UDP and TCP).
    pub port: u16,
    _stop: Arc<StopOnDrop>,
}

/// Tells the endpoint's thread to stop when dropped, and waits (a little)
/// until it has: its ports are then free for a server started next.
struct StopOnDrop {
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// Disconnected when the thread ends (it holds the sender).
    ended: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

/// Longest a stopping server waits for the endpoint's thread.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.lock().ok().and_then(|mut s| s.take()) {
            let _ = stop.send(());
        }
        if let Ok(ended) = self.ended.lock() {
            let _ = ended.recv_timeout(STOP_WAIT);
        }
    }
}

impl std::fmt::Debug for WebEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebEndpoint").field("port", &self.port).finish()
    }
}

/// The folder must hold the page: a clear sentence before anything binds.
fn check_folder(folder: &std::path::Path) -> Result<(), WebError> {
    for file in ["index.html", "arena.js", "arena_bg.wasm"] {
        if !folder.join(file).is_file() {
            return Err(WebError::Folder(format!(
                "--web {}: no {file} there; scripts/web-build.sh {} makes the folder",
                folder.display(),
                folder.display()
            )));
        }
    }
    Ok(())
}

impl WebEndpoint {
    /// Opens the endpoint (and the page, with a folder) on its own thread;
    /// `on_renew` is called with each new certificate's hash.
    pub fn start(config: WebConfig, on_renew: Box<dyn Fn(&str) + Send>) -> Result<Self, WebError> {
        if let Some(folder) = &config.folder {
            check_folder(folder)?;
        }
        let certificate = Certificate::make(&config.names).map_err(WebError::Certificate)?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (ended_tx, ended_rx) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("webtransport".into())
            .spawn(move || {
                // Dropped when the thread ends: the stopping server's signal.
                let _ended = ended_tx;
                let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(WebError::Runtime(e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let opened = bind(&config, &certificate).await;
                    let (endpoint, listener, bound) = match opened {
                        Ok(opened) => opened,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let shared = match shared::Shared::new(
                        config.max_sessions,
                        &certificate,
                        bound.port(),
                        (config.silent_timeout, config.admit_timeout),
                    ) {
                        Ok(shared) => Arc::new(shared),
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(shared.clone()));
                    let page = listener.zip(config.folder.clone());
                    let renew_after = config.renew_after.clamp(std::time::Duration::from_millis(100), RENEW_AFTER);
                    endpoint::run(
                        endpoint,
                        page,
                        bound,
                        (config.names.clone(), renew_after),
                        (shared, stop_rx),
                        on_renew,
                    )
                    .await;
                });
            })
            .map_err(WebError::Runtime)?;
        let shared = ready_rx.recv().map_err(|_| WebError::Closed)??;
        let stop = StopOnDrop { stop: std::sync::Mutex::new(Some(stop_tx)), ended: std::sync::Mutex::new(ended_rx) };
        Ok(Self { port: shared.port, shared, _stop: Arc::new(stop) })
    }

    /// The current certificate's hash, hex.
    pub fn hash_hex(&self) -> String {
        self.shared.hash_hex()
    }

    /// What the endpoint counted so far.
    pub fn tally(&self) -> Tally {
        self.shared.counters.tally()
    }

    /// Sessions open now.
    pub fn open_sessions(&self) -> usize {
        self.shared.table().open_count()
    }
}

/// The endpoint's UDP socket and the page's TCP listener on one port.
async fn bind(
    config: &WebConfig,
    certificate: &Certificate,
) -> Result<
    (wtransport::Endpoint<wtransport::endpoint::endpoint_side::Server>, Option<tokio::net::TcpListener>, SocketAddr),
    WebError,
> {
    // Port 0: the UDP port the system picks, then TCP on the same; a few
    // tries in case another program holds that TCP port.
    let tries = if config.bind.port() == 0 { 8 } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let endpoint =
            wtransport::Endpoint::server(endpoint::server_config(config.bind, certificate)).map_err(WebError::Bind)?;
        let bound = endpoint.local_addr().map_err(WebError::Bind)?;
        if config.folder.is_none() {
            return Ok((endpoint, None, bound));
        }
        match tokio::net::TcpListener::bind(SocketAddr::new(config.bind.ip(), bound.port())).await {
            Ok(listener) => return Ok((endpoint, Some(listener), bound)),
            Err(error) => last = Some(WebError::PagePort { port: bound.port(), error }),
        }
    }
    Err(last.unwrap_or(WebError::Closed))
}

impl arena_udp::WebLink for WebEndpoint {
    fn send(&self, to: SocketAddr, datagram: &[u8]) -> bool {
        self.shared.send(to, datagram)
    }

    fn receive(&self, out: &mut Vec<(SocketAddr, Vec<u8>)>) {
        self.shared.receive(out);
    }

    fn origin(&self, peer: SocketAddr) -> Option<SocketAddr> {
        self.shared.origin(peer)
    }

    fn ban(&self, ip: IpAddr) -> bool {
        self.shared.ban(ip)
    }

    fn admitted(&self, peer: SocketAddr) {
        self.shared.admitted(peer);
    }

    fn close(&self, peer: SocketAddr) {
        self.shared.close(peer);
    }

    fn counts(&self) -> arena_udp::WebCounts {
        let tally = self.tally();
        arena_udp::WebCounts {
            sessions_open: self.open_sessions(),
            datagrams_in: tally.datagrams_in,
            datagrams_out: tally.datagrams_out,
            frames_in: tally.frames_in,
            frames_out: tally.frames_out,
            dropped_for_size: tally.dropped_for_size,
            refused: tally.refused_per_ip + tally.refused_full + tally.refused_banned + tally.refused_path,
        }
    }
}
