//! The WebTransport endpoint's tasks, on a thread of their own with a
//! one-thread tokio runtime: sessions let in or refused, each session's
//! datagrams and stream frames into the shared inbox and its frames out,
//! silent sessions closed, the certificate renewed, the page served, and
//! the counters summed up in the log.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arena_protocol::web_frame::FrameReader;
use tokio::sync::mpsc;
use tokio::time::timeout;
use wtransport::endpoint::IncomingSession;
use wtransport::endpoint::endpoint_side::Server;
use wtransport::{Endpoint, RecvStream, SendStream, ServerConfig};

use crate::certificate::Certificate;
use crate::limits::{
    CONNECTION_RECEIVE_WINDOW, DATAGRAM_RECEIVE_BUFFER, HANDSHAKE_TIMEOUT, MAX_BIDI_STREAMS, MAX_QUEUED_FRAMES,
    MAX_UNI_STREAMS, QUIC_IDLE_TIMEOUT, QUIC_PACKET_BYTES, RETRY_ABOVE_HANDSHAKES, SESSION_PATH, STREAM_RECEIVE_WINDOW,
    SUMMARY_INTERVAL, WRITE_TIMEOUT, bump,
};
use crate::sessions::{Refusal, Ticket};
use crate::shared::{Current, SessionHandle, Shared};

/// The QUIC configuration for a certificate: bounded windows and streams.
pub(crate) fn server_config(bind: SocketAddr, certificate: &Certificate) -> ServerConfig {
    let mut transport = wtransport::quinn::TransportConfig::default();
    transport
        .stream_receive_window(wtransport::quinn::VarInt::from_u32(STREAM_RECEIVE_WINDOW))
        .receive_window(wtransport::quinn::VarInt::from_u32(CONNECTION_RECEIVE_WINDOW))
        .datagram_receive_buffer_size(Some(DATAGRAM_RECEIVE_BUFFER))
        .max_concurrent_uni_streams(wtransport::quinn::VarInt::from_u32(MAX_UNI_STREAMS))
        .max_concurrent_bidi_streams(wtransport::quinn::VarInt::from_u32(MAX_BIDI_STREAMS))
        // QUIC's own minimum packet, which every path carries, and no path
        // MTU discovery: a datagram's limit is then fixed for the session
        // (about 1150 bytes), and what is over it (rare: renet's slices of
        // a reliable message) always goes by the stream.
        .initial_mtu(QUIC_PACKET_BYTES)
        .mtu_discovery_config(None);
    if let Ok(idle) = wtransport::quinn::IdleTimeout::try_from(QUIC_IDLE_TIMEOUT) {
        transport.max_idle_timeout(Some(idle));
    }
    ServerConfig::builder()
        .with_bind_address(bind)
        .with_custom_transport(certificate.identity.clone_identity(), transport)
        .build()
}

/// Everything the thread runs, until the process ends.
pub(crate) async fn run(
    endpoint: Endpoint<Server>,
    page: Option<(tokio::net::TcpListener, PathBuf)>,
    bind: SocketAddr,
    (names, renew_after): (Vec<String>, Duration),
    (shared, mut stop): (Arc<Shared>, tokio::sync::oneshot::Receiver<()>),
    on_renew: Box<dyn Fn(&str) + Send>,
) {
    if let Some((listener, folder)) = page {
        tokio::spawn(crate::page_server::serve(listener, folder, shared.clone()));
    }
    tokio::spawn(summarise(shared.clone()));
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + renew_after, renew_after);
    loop {
        tokio::select! {
            // The server stopped: its sessions told, the thread (and with
            // its runtime every task, the page's listener among them) ends.
            _ = &mut stop => {
                endpoint.close(wtransport::VarInt::from_u32(0), b"server stopped");
                let _ = timeout(Duration::from_millis(300), endpoint.wait_idle()).await;
                return;
            },
            incoming = endpoint.accept() => admit(incoming, &shared),
            _ = renew.tick() => match Certificate::make(&names) {
                Ok(certificate) => {
                    let tls = match certificate.page_tls() {
                        Ok(tls) => tls,
                        Err(e) => { tracing::warn!("web: {e}; keeping the current certificate"); continue }
                    };
                    match endpoint.reload_config(server_config(bind, &certificate), false) {
                        Ok(()) => {
                            shared.set_current(Current { hash_hex: certificate.hash_hex.clone(), page_tls: tls });
                            on_renew(&certificate.hash_hex);
                        }
                        Err(e) => tracing::warn!("web: cannot renew the certificate: {e}"),
                    }
                }
                Err(e) => tracing::warn!("web: {e}; keeping the current certificate"),
            },
        }
    }
}

fn admit(incoming: IncomingSession, shared: &Arc<Shared>) {
    let real = incoming.remote_address();
    let ticket = {
        let mut table = shared.table();
        // Under load, an address must first show it receives there.
        if !incoming.remote_address_validated() && table.handshaking() >= RETRY_ABOVE_HANDSHAKES {
            drop(table);
            bump(&shared.counters.retries);
            incoming.retry();
            return;
        }
        table.admit(real)
    };
    match ticket {
        Ok(ticket) => {
            tokio::spawn(session(incoming, ticket, shared.clone()));
        }
        Err(refusal) => {
            bump(match refusal {
                Refusal::Banned => &shared.counters.refused_banned,
                Refusal::PerAddress => &shared.counters.refused_per_ip,
                Refusal::Full => &shared.counters.refused_full,
            });
            incoming.refuse();
        }
    }
}

/// One session from handshake to close.
async fn session(incoming: IncomingSession, ticket: Ticket, shared: Arc<Shared>) {
    let request = match timeout(HANDSHAKE_TIMEOUT, incoming).await {
        Ok(Ok(request)) => request,
        _ => {
            bump(&shared.counters.handshakes_failed);
            shared.table().abandon(ticket);
            return;
        }
    };
    if request.path() != SESSION_PATH {
        bump(&shared.counters.refused_path);
        shared.table().abandon(ticket);
        let _ = timeout(HANDSHAKE_TIMEOUT, request.not_found()).await;
        return;
    }
    let connection = match timeout(HANDSHAKE_TIMEOUT, request.accept()).await {
        Ok(Ok(connection)) => connection,
        _ => {
            bump(&shared.counters.handshakes_failed);
            shared.table().abandon(ticket);
            return;
        }
    };
    let (frames_tx, frames_rx) = mpsc::channel(MAX_QUEUED_FRAMES);
    let admitted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handle = SessionHandle { connection: connection.clone(), frames: frames_tx, admitted: admitted.clone() };
    let opened = shared.table().open(ticket, handle);
    let Some(peer) = opened else {
        bump(&shared.counters.refused_banned);
        connection.close(wtransport::VarInt::from_u32(1), b"banned");
        return;
    };
    bump(&shared.counters.sessions_opened);
    tracing::debug!("web: session {peer} from {} open", connection.remote_address());
    carry(&connection, (peer, &admitted), frames_rx, &shared).await;
    connection.close(wtransport::VarInt::from_u32(0), b"closed");
    shared.table().close(peer);
    bump(&shared.counters.sessions_closed);
}

/// A session's traffic until it ends, breaks or falls silent.
async fn carry(
    connection: &wtransport::Connection,
    (peer, admitted): (SocketAddr, &std::sync::atomic::AtomicBool),
    mut frames_out: mpsc::Receiver<Vec<u8>>,
    shared: &Shared,
) {
    let opened = Instant::now();
    // The peer's one stream: a second, or another after it finished, is
    // refused unread.
    let mut stream_seen = false;
    let mut reader: Option<RecvStream> = None;
    let mut frames_in = FrameReader::default();
    let mut writer: Option<SendStream> = None;
    let mut heard = Instant::now();
    let mut check =
        tokio::time::interval((shared.silent_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1)));
    loop {
        tokio::select! {
            datagram = connection.receive_datagram() => match datagram {
                Ok(datagram) => {
                    heard = Instant::now();
                    bump(&shared.counters.datagrams_in);
                    shared.take_in(peer, datagram.payload().as_ref());
                }
                Err(_) => return,
            },
            stream = connection.accept_uni() => match stream {
                // One stream each way: another is refused, not read.
                Ok(stream) if stream_seen => {
                    bump(&shared.counters.extra_streams);
                    stream.stop(wtransport::VarInt::from_u32(0));
                }
                Ok(stream) => {
                    stream_seen = true;
                    reader = Some(stream);
                }
                Err(_) => return,
            },
            chunk = read_chunk(&mut reader) => match chunk {
                Ok(Some(bytes)) => {
                    heard = Instant::now();
                    let pushed = frames_in.push(&bytes, |frame| {
                        bump(&shared.counters.frames_in);
                        shared.take_in(peer, frame);
                    });
                    if let Err(e) = pushed {
                        tracing::debug!("web: session {peer} sent {e}; closing it");
                        bump(&shared.counters.broken_streams);
                        return;
                    }
                }
                // The peer finished its stream: datagrams still come; a
                // frame cut short by the end is a broken stream.
                Ok(None) if frames_in.pending_bytes() > 0 => {
                    bump(&shared.counters.broken_streams);
                    return;
                }
                Ok(None) => reader = None,
                Err(()) => {
                    bump(&shared.counters.broken_streams);
                    return;
                }
            },
            frame = frames_out.recv() => {
                let Some(frame) = frame else { return };
                if write_frame(connection, &mut writer, &frame).await.is_err() {
                    return;
                }
            },
            _ = check.tick() => {
                if heard.elapsed() > shared.silent_timeout {
                    bump(&shared.counters.timed_out);
                    return;
                }
                if !admitted.load(std::sync::atomic::Ordering::Relaxed) && opened.elapsed() > shared.admit_timeout {
                    bump(&shared.counters.not_admitted);
                    return;
                }
            },
        }
    }
}

/// The next bytes of the peer's stream (`Ok(None)`: it finished); never
/// ready while there is no stream.
async fn read_chunk(reader: &mut Option<RecvStream>) -> Result<Option<Vec<u8>>, ()> {
    let Some(stream) = reader.as_mut() else { return std::future::pending().await };
    let mut buf = vec![0u8; 2048];
    match stream.read(&mut buf).await {
        Ok(Some(n)) => {
            buf.truncate(n);
            Ok(Some(buf))
        }
        Ok(None) => Ok(None),
        Err(_) => Err(()),
    }
}

/// Writes a frame on the session's stream (opened on the first), within
/// [`WRITE_TIMEOUT`].
async fn write_frame(
    connection: &wtransport::Connection,
    writer: &mut Option<SendStream>,
    frame: &[u8],
) -> Result<(), ()> {
    timeout(WRITE_TIMEOUT, async {
        if writer.is_none() {
            let opening = connection.open_uni().await.map_err(|_| ())?;
            *writer = Some(opening.await.map_err(|_| ())?);
        }
        match writer.as_mut() {
            Some(stream) => stream.write_all(frame).await.map_err(|_| ()),
            None => Err(()),
        }
    })
    .await
    .map_err(|_| ())?
}

/// The summary line every [`SUMMARY_INTERVAL`] when anything moved.
async fn summarise(shared: Arc<Shared>) {
    let mut before = shared.counters.tally();
    let mut every = tokio::time::interval(SUMMARY_INTERVAL);
    every.tick().await;
    loop {
        every.tick().await;
        let now = shared.counters.tally();
        let open = shared.table().open_count();
        if let Some(line) = now.summary(&before, open) {
            tracing::info!("{line}");
        }
        before = now;
    }
}
