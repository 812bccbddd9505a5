//! A native WebTransport client link, pinned to the server's certificate
//! hash as a browser is: a UDP socket on loopback whose datagrams it
//! carries to the endpoint by the browser's rules (a datagram up to
//! [`BROWSER_DATAGRAM_LIMIT`] bytes, a stream frame above), and whose
//! answers it hands back. Any UDP client (Arena's own, `arena bots`) joins
//! a server through it as a browser would: for tests and tools.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arena_protocol::web_frame::{BROWSER_DATAGRAM_LIMIT, FrameReader, fits_datagram, frame};
use tokio::net::UdpSocket;
use wtransport::tls::Sha256Digest;
use wtransport::{ClientConfig, Endpoint, RecvStream, SendStream};

use crate::error::WebError;
use crate::limits::SESSION_PATH;

/// What the link carried, each way.
#[derive(Debug, Default)]
pub struct LinkCounters {
    pub datagrams_up: AtomicU64,
    pub frames_up: AtomicU64,
    pub datagrams_down: AtomicU64,
    pub frames_down: AtomicU64,
    /// The largest datagram carried each way, bytes.
    pub largest_up: AtomicU64,
    pub largest_down: AtomicU64,
}

/// An open link: send to [`ClientLink::local`] to reach the server.
#[derive(Debug)]
pub struct ClientLink {
    pub local: SocketAddr,
    pub counters: Arc<LinkCounters>,
}

/// Opens a session to the endpoint at `server` whose certificate hashes to
/// `hash`, and a loopback UDP socket in front of it.
pub fn connect(server: SocketAddr, hash: [u8; 32]) -> Result<ClientLink, WebError> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let counters = Arc::new(LinkCounters::default());
    let thread_counters = counters.clone();
    std::thread::Builder::new()
        .name("web-client-link".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready_tx.send(Err(WebError::Runtime(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                let opened = open(server, hash).await;
                let (connection, udp) = match opened {
                    Ok(opened) => opened,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let local = udp.local_addr().map_err(WebError::Bind);
                let _ = ready_tx.send(local);
                relay(connection, udp, &thread_counters).await;
            });
        })
        .map_err(WebError::Runtime)?;
    let local = ready_rx.recv().map_err(|_| WebError::Closed)??;
    Ok(ClientLink { local, counters })
}

async fn open(server: SocketAddr, hash: [u8; 32]) -> Result<(wtransport::Connection, UdpSocket), WebError> {
    let config =
        ClientConfig::builder().with_bind_default().with_server_certificate_hashes([Sha256Digest::new(hash)]).build();
    let endpoint = Endpoint::client(config).map_err(WebError::Bind)?;
    let url = format!("https://{server}{SESSION_PATH}");
    let connection = endpoint.connect(url).await.map_err(|e| WebError::Connect(e.to_string()))?;
    let udp = UdpSocket::bind("127.0.0.1:0").await.map_err(WebError::Bind)?;
    Ok((connection, udp))
}

fn note_largest(counter: &AtomicU64, len: usize) {
    counter.fetch_max(len as u64, Ordering::Relaxed);
}

async fn relay(connection: wtransport::Connection, udp: UdpSocket, counters: &LinkCounters) {
    let mut peer: Option<SocketAddr> = None;
    let mut up: Option<SendStream> = None;
    let mut down: Option<RecvStream> = None;
    let mut down_frames = FrameReader::default();
    let mut buf = vec![0u8; 65_536];
    loop {
        tokio::select! {
            received = udp.recv_from(&mut buf) => {
                let Ok((len, from)) = received else { continue };
                peer = Some(from);
                let datagram = &buf[..len];
                note_largest(&counters.largest_up, len);
                if fits_datagram(len, Some(BROWSER_DATAGRAM_LIMIT)) {
                    if connection.send_datagram(datagram).is_ok() {
                        counters.datagrams_up.fetch_add(1, Ordering::Relaxed);
                    }
                } else if let Some(framed) = frame(datagram) {
                    if up.is_none() {
                        let Ok(opening) = connection.open_uni().await else { return };
                        let Ok(stream) = opening.await else { return };
                        up = Some(stream);
                    }
                    if let Some(stream) = up.as_mut() {
                        if stream.write_all(&framed).await.is_err() {
                            return;
                        }
                        counters.frames_up.fetch_add(1, Ordering::Relaxed);
                    }
                }
            },
            datagram = connection.receive_datagram() => {
                let Ok(datagram) = datagram else { return };
                let payload = datagram.payload();
                note_largest(&counters.largest_down, payload.len());
                counters.datagrams_down.fetch_add(1, Ordering::Relaxed);
                if let Some(peer) = peer {
                    let _ = udp.send_to(payload.as_ref(), peer).await;
                }
            },
            stream = connection.accept_uni(), if down.is_none() => {
                let Ok(stream) = stream else { return };
                down = Some(stream);
            },
            chunk = read_some(&mut down) => {
                let Some(bytes) = chunk else { return };
                let mut frames = Vec::new();
                if down_frames.push(&bytes, |f| frames.push(f.to_vec())).is_err() {
                    return;
                }
                for f in frames {
                    note_largest(&counters.largest_down, f.len());
                    counters.frames_down.fetch_add(1, Ordering::Relaxed);
                    if let Some(peer) = peer {
                        let _ = udp.send_to(&f, peer).await;
                    }
                }
            },
        }
    }
}

async fn read_some(stream: &mut Option<RecvStream>) -> Option<Vec<u8>> {
    let Some(stream) = stream.as_mut() else { return std::future::pending().await };
    let mut buf = vec![0u8; 4096];
    match stream.read(&mut buf).await {
        Ok(Some(n)) => {
            buf.truncate(n);
            Some(buf)
        }
        _ => None,
    }
}
