//! The client's UDP transport: netcode.io packets over a socket, feeding
//! renet's transport-agnostic `RenetClient`.
//!
//! renet_netcode's own client transport hides the socket; this one keeps the
//! datagrams in view so that the link conditioner can delay and drop them on
//! their way in and out.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arena_protocol::PROTOCOL_ID;
use arena_protocol::names::name_to_user_data;
use bevy::prelude::*;
use renet::RenetClient;
use renetcode::{
    ClientAuthentication, ConnectToken, DisconnectReason, NETCODE_KEY_BYTES, NETCODE_MAX_PACKET_BYTES, NetcodeClient,
};

/// Silence after which netcode gives up on a connection, seconds.
pub const CONNECTION_TIMEOUT_S: i32 = 10;

/// The client's socket and netcode state.
#[derive(Resource)]
pub struct UdpTransport {
    socket: UdpSocket,
    netcode: NetcodeClient,
    buffer: Box<[u8; NETCODE_MAX_PACKET_BYTES]>,
    /// When the last datagram from the server was read (wall clock, so a slow
    /// frame on our side does not look like silence from the server).
    last_heard: Instant,
}

impl std::fmt::Debug for UdpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpTransport").field("server", &self.netcode.server_addr()).finish()
    }
}

#[derive(Debug)]
pub enum TransportError {
    Io(io::Error),
    Netcode(String),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::Io(e) => write!(f, "network error: {e}"),
            TransportError::Netcode(e) => write!(f, "connection error: {e}"),
        }
    }
}

impl UdpTransport {
    /// Opens a socket and starts connecting to `server` as `name`.
    pub fn connect(server: SocketAddr, name: &str) -> Result<Self, TransportError> {
        let any: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(any).map_err(TransportError::Io)?;
        socket.set_nonblocking(true).map_err(TransportError::Io)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        // A random id: std's hasher seeds itself from the OS's randomness.
        let client_id = std::collections::hash_map::RandomState::new().build_hasher().finish();
        // Unsecure netcode: the client makes its own token with the all-zero key
        // the server expects in that mode, so it can choose the timeout.
        let token = ConnectToken::generate(
            now,
            PROTOCOL_ID,
            300,
            client_id,
            CONNECTION_TIMEOUT_S,
            vec![server],
            Some(&name_to_user_data(name)),
            &[0; NETCODE_KEY_BYTES],
        )
        .map_err(|e| TransportError::Netcode(e.to_string()))?;
        let netcode = NetcodeClient::new(now, ClientAuthentication::Secure { connect_token: token })
            .map_err(|e| TransportError::Netcode(e.to_string()))?;
        Ok(Self { socket, netcode, buffer: Box::new([0; NETCODE_MAX_PACKET_BYTES]), last_heard: Instant::now() })
    }

    pub fn server_addr(&self) -> SocketAddr {
        self.netcode.server_addr()
    }

    pub fn is_connected(&self) -> bool {
        self.netcode.is_connected()
    }

    pub fn disconnect_reason(&self) -> Option<DisconnectReason> {
        self.netcode.disconnect_reason()
    }

    /// How long the server has been silent, as of the last receive.
    pub fn server_silence(&self) -> Duration {
        self.last_heard.elapsed()
    }

    /// Receives every waiting datagram into `client` and advances netcode's
    /// clock (which sends connection and keep-alive packets as needed).
    pub fn receive(&mut self, dt: Duration, client: &mut RenetClient) -> Result<(), TransportError> {
        if self.netcode.is_disconnected() {
            client.disconnect_due_to_transport();
            return Ok(());
        }
        if self.netcode.is_connected() {
            client.set_connected();
        } else {
            client.set_connecting();
        }
        loop {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, from)) => {
                    if from != self.netcode.server_addr() {
                        debug!("ignored a datagram from {from}, which is not the server");
                        continue;
                    }
                    self.last_heard = Instant::now();
                    // netcode authenticates and decrypts; anything else is dropped.
                    if let Some(payload) = self.netcode.process_packet(&mut self.buffer[..len]) {
                        client.process_packet(payload);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionReset) => {
                    continue;
                }
                Err(e) => return Err(TransportError::Io(e)),
            }
        }
        if let Some((packet, to)) = self.netcode.update(dt) {
            self.socket.send_to(packet, to).map_err(TransportError::Io)?;
        }
        Ok(())
    }

    /// Sends what renet has queued.
    pub fn send(&mut self, client: &mut RenetClient) -> Result<(), TransportError> {
        if !self.netcode.is_connected() {
            return Ok(());
        }
        for payload in client.get_packets_to_send() {
            let (to, packet) =
                self.netcode.generate_payload_packet(&payload).map_err(|e| TransportError::Netcode(e.to_string()))?;
            self.socket.send_to(packet, to).map_err(TransportError::Io)?;
        }
        Ok(())
    }

    /// Tells the server at once that we are leaving.
    pub fn disconnect(&mut self) {
        if self.netcode.is_disconnected() {
            return;
        }
        // One packet, as renet_netcode does: the server drops (and logs) any
        // copy after the first. If it is lost, the server times us out.
        if let Ok((to, packet)) = self.netcode.disconnect() {
            let _ = self.socket.send_to(packet, to);
        }
    }
}
