//! The client's UDP transport: netcode.io packets over a socket, feeding
//! renet's transport-agnostic `RenetClient`, with the link conditioner
//! between netcode and the socket in both directions.
//!
//! renet_netcode's own client transport hides the socket; this one keeps the
//! datagrams in view so that they can be delayed and dropped on their way.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arena_protocol::PROTOCOL_ID;
use arena_protocol::names::name_to_user_data;
use bevy::prelude::*;
use renet::RenetClient;
use renetcode::{
    ClientAuthentication, ConnectToken, DisconnectReason, NETCODE_KEY_BYTES, NETCODE_MAX_PACKET_BYTES, NetcodeClient,
};

use crate::conditioner::{LinkConditioner, LinkConditions};

/// Silence after which netcode gives up on a connection, seconds.
pub const CONNECTION_TIMEOUT_S: i32 = 10;

/// The client's socket, netcode state and link conditioner.
#[derive(Resource)]
pub struct UdpTransport {
    socket: UdpSocket,
    netcode: NetcodeClient,
    buffer: Box<[u8; NETCODE_MAX_PACKET_BYTES]>,
    conditioner: LinkConditioner,
    /// The transport's clock: the sum of the frame times it was given.
    clock: Duration,
    /// When (on that clock) the last datagram from the server came through.
    last_heard: Duration,
    /// UDP payload bytes through the socket, both ways, since connecting.
    pub bytes_sent: u64,
    pub bytes_received: u64,
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
    /// Opens a socket and starts connecting to `server` as `name`, through a
    /// link conditioner with these conditions and random seed.
    pub fn connect(
        server: SocketAddr,
        name: &str,
        conditions: LinkConditions,
        seed: u64,
    ) -> Result<Self, TransportError> {
        let any: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(any).map_err(TransportError::Io)?;
        socket.set_nonblocking(true).map_err(TransportError::Io)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        // Unsecure netcode: the client makes its own token with the all-zero key
        // the server expects in that mode, so it can choose the timeout.
        let token = ConnectToken::generate(
            now,
            PROTOCOL_ID,
            300,
            random_u64(),
            CONNECTION_TIMEOUT_S,
            vec![server],
            Some(&name_to_user_data(name)),
            &[0; NETCODE_KEY_BYTES],
        )
        .map_err(|e| TransportError::Netcode(e.to_string()))?;
        let netcode = NetcodeClient::new(now, ClientAuthentication::Secure { connect_token: token })
            .map_err(|e| TransportError::Netcode(e.to_string()))?;
        Ok(Self {
            socket,
            netcode,
            buffer: Box::new([0; NETCODE_MAX_PACKET_BYTES]),
            conditioner: LinkConditioner::new(conditions, seed),
            clock: Duration::ZERO,
            last_heard: Duration::ZERO,
            bytes_sent: 0,
            bytes_received: 0,
        })
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
        self.clock.saturating_sub(self.last_heard)
    }

    pub fn conditions(&self) -> LinkConditions {
        self.conditioner.conditions
    }

    /// Changes the fake latency, jitter and loss from now on.
    pub fn set_conditions(&mut self, conditions: LinkConditions) {
        self.conditioner.conditions = conditions.clamped();
    }

    /// Datagrams the conditioner has dropped: (outgoing, incoming).
    pub fn conditioner_drops(&self) -> (u64, u64) {
        (self.conditioner.outgoing.dropped, self.conditioner.incoming.dropped)
    }

    /// Receives every waiting datagram, lets through those whose (conditioned)
    /// time has come into `client`, and advances netcode's clock (which sends
    /// connection and keep-alive packets as needed).
    pub fn receive(&mut self, dt: Duration, client: &mut RenetClient) -> Result<(), TransportError> {
        self.clock += dt;
        if self.netcode.is_disconnected() {
            client.disconnect_due_to_transport();
            return Ok(());
        }
        if self.netcode.is_connected() {
            client.set_connected();
        } else {
            client.set_connecting();
        }
        let server = self.netcode.server_addr();
        loop {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, from)) if from == server => {
                    self.bytes_received += len as u64;
                    self.conditioner.receive(self.clock, self.buffer[..len].to_vec());
                }
                Ok((_, from)) => debug!("ignored a datagram from {from}, which is not the server"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionReset) => {}
                Err(e) => return Err(TransportError::Io(e)),
            }
        }
        while let Some(mut datagram) = self.conditioner.incoming.pop_due(self.clock) {
            self.last_heard = self.clock;
            // netcode authenticates and decrypts; anything else is dropped.
            if let Some(payload) = self.netcode.process_packet(&mut datagram) {
                client.process_packet(payload);
            }
        }
        if let Some((packet, _)) = self.netcode.update(dt) {
            self.conditioner.send(self.clock, packet.to_vec());
        }
        self.flush()
    }

    /// Queues what renet has to send and sends whatever is due.
    pub fn send(&mut self, client: &mut RenetClient) -> Result<(), TransportError> {
        if self.netcode.is_connected() {
            for payload in client.get_packets_to_send() {
                let (_, packet) = self
                    .netcode
                    .generate_payload_packet(&payload)
                    .map_err(|e| TransportError::Netcode(e.to_string()))?;
                self.conditioner.send(self.clock, packet.to_vec());
            }
        }
        self.flush()
    }

    /// Writes the outgoing datagrams whose time has come to the socket.
    fn flush(&mut self) -> Result<(), TransportError> {
        let server = self.netcode.server_addr();
        while let Some(datagram) = self.conditioner.outgoing.pop_due(self.clock) {
            self.bytes_sent += datagram.len() as u64;
            match self.socket.send_to(&datagram, server) {
                Ok(_) => {}
                // A full socket buffer loses the datagram, as the network would.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(TransportError::Io(e)),
            }
        }
        Ok(())
    }

    /// Tells the server at once that we are leaving (bypassing the conditioner).
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

/// A random number: std's hasher seeds itself from the OS's randomness.
pub fn random_u64() -> u64 {
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}
