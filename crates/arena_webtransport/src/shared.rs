//! What the endpoint's thread and the game's share: the datagrams received
//! (bounded), the sessions' table with each one's connection, the counters,
//! and the current certificate's hash and page TLS. The game's side of it
//! is [`arena_udp::WebLink`].

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use arena_protocol::datagram::MAX_DATAGRAM_BYTES;
use arena_protocol::web_frame::{fits_datagram, frame};
use tokio::sync::mpsc;
use wtransport::Connection;
use wtransport::error::SendDatagramError;

use crate::certificate::Certificate;
use crate::limits::{Counters, MAX_INBOX, bump};
use crate::sessions::Table;

/// An open session as the game reaches it.
#[derive(Debug)]
pub(crate) struct SessionHandle {
    pub(crate) connection: Connection,
    /// Frames for the session's stream (bounded; the session's task writes them).
    pub(crate) frames: mpsc::Sender<Vec<u8>>,
    /// Set when the game says its peer became a netcode client.
    pub(crate) admitted: Arc<std::sync::atomic::AtomicBool>,
}

/// The certificate of the moment, as the page and links need it.
pub(crate) struct Current {
    pub(crate) hash_hex: String,
    pub(crate) page_tls: Arc<rustls::ServerConfig>,
}

pub(crate) struct Shared {
    inbox: Mutex<VecDeque<(SocketAddr, Vec<u8>)>>,
    pub(crate) table: Mutex<Table<SessionHandle>>,
    pub(crate) counters: Counters,
    current: Mutex<Current>,
    /// The endpoint's port (UDP for sessions, TCP for the page).
    pub(crate) port: u16,
    /// How long a session may stay silent.
    pub(crate) silent_timeout: std::time::Duration,
    /// How long a session may wait for its peer to become a netcode client.
    pub(crate) admit_timeout: std::time::Duration,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every step under these locks leaves them consistent.
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(
        max_sessions: usize,
        certificate: &Certificate,
        port: u16,
        (silent_timeout, admit_timeout): (std::time::Duration, std::time::Duration),
    ) -> Result<Self, crate::error::WebError> {
        Ok(Self {
            inbox: Mutex::new(VecDeque::new()),
            table: Mutex::new(Table::new(max_sessions)),
            counters: Counters::default(),
            current: Mutex::new(Current {
                hash_hex: certificate.hash_hex.clone(),
                page_tls: certificate.page_tls().map_err(crate::error::WebError::Certificate)?,
            }),
            port,
            silent_timeout,
            admit_timeout,
        })
    }

    pub(crate) fn table(&self) -> MutexGuard<'_, Table<SessionHandle>> {
        lock(&self.table)
    }

    pub(crate) fn hash_hex(&self) -> String {
        lock(&self.current).hash_hex.clone()
    }

    pub(crate) fn page_tls(&self) -> Arc<rustls::ServerConfig> {
        lock(&self.current).page_tls.clone()
    }

    pub(crate) fn set_current(&self, current: Current) {
        *lock(&self.current) = current;
    }

    /// `/web-endpoint`'s answer: the port and path sessions open on, and
    /// the hash of the certificate they meet.
    pub(crate) fn endpoint_info(&self) -> String {
        format!(
            "{{\"port\":{},\"path\":\"{}\",\"cert\":\"{}\"}}",
            self.port,
            crate::limits::SESSION_PATH,
            self.hash_hex()
        )
    }

    /// A datagram (or frame) from a session, for the game to read; dropped
    /// and counted when it is too long or the game is far behind.
    pub(crate) fn take_in(&self, peer: SocketAddr, datagram: &[u8]) {
        if datagram.len() > MAX_DATAGRAM_BYTES || datagram.is_empty() {
            bump(&self.counters.dropped_too_long);
            return;
        }
        let mut inbox = lock(&self.inbox);
        if inbox.len() >= MAX_INBOX {
            bump(&self.counters.dropped_inbox_full);
            return;
        }
        inbox.push_back((peer, datagram.to_vec()));
    }

    pub(crate) fn send(&self, to: SocketAddr, datagram: &[u8]) -> bool {
        let table = self.table();
        let Some(session) = table.get(to) else { return false };
        let connection = &session.handle.connection;
        if fits_datagram(datagram.len(), connection.max_datagram_size()) {
            match connection.send_datagram(datagram) {
                Ok(()) => {
                    bump(&self.counters.datagrams_out);
                    return true;
                }
                // The path's limit shrank since it was read: the stream then.
                Err(SendDatagramError::TooLarge) => {}
                // The session is ending; its task closes it.
                Err(_) => return true,
            }
        }
        match frame(datagram).map(|f| session.handle.frames.try_send(f)) {
            Some(Ok(())) => bump(&self.counters.frames_out),
            _ => bump(&self.counters.dropped_for_size),
        }
        true
    }

    pub(crate) fn receive(&self, out: &mut Vec<(SocketAddr, Vec<u8>)>) {
        out.extend(lock(&self.inbox).drain(..));
    }

    pub(crate) fn origin(&self, peer: SocketAddr) -> Option<SocketAddr> {
        self.table().get(peer).map(|s| s.real)
    }

    pub(crate) fn ban(&self, ip: IpAddr) -> bool {
        let mut table = self.table();
        let Some(handles) = table.ban(ip) else { return false };
        for handle in handles {
            handle.connection.close(wtransport::VarInt::from_u32(1), b"banned");
        }
        true
    }

    pub(crate) fn admitted(&self, peer: SocketAddr) {
        if let Some(session) = self.table().get(peer) {
            session.handle.admitted.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub(crate) fn close(&self, peer: SocketAddr) {
        if let Some(session) = self.table().get(peer) {
            session.handle.connection.close(wtransport::VarInt::from_u32(0), b"disconnected");
        }
    }
}
