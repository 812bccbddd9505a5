//! The server's UDP socket and netcode layer: binding, the addresses clients
//! can use, and logging transport errors.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arena_protocol::{PROTOCOL_ID, connection_config};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::netcode::{
    NetcodeErrorEvent, NetcodeServerTransport, ServerAuthentication, ServerConfig as NetcodeConfig,
};

use crate::ServerConfig;

pub(crate) fn plugin(app: &mut App) {
    app.add_observer(log_transport_error);
}

/// Why a server could not start.
#[derive(Debug)]
pub enum ServerError {
    Bind { addr: SocketAddr, error: std::io::Error },
    Config(String),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::Bind { addr, error } => {
                let hint = match error.kind() {
                    std::io::ErrorKind::AddrInUse => {
                        " — the port is already in use (another Arena server? pick another with --port/--bind)"
                    }
                    std::io::ErrorKind::AddrNotAvailable => " — this machine has no such address",
                    std::io::ErrorKind::PermissionDenied => " — ports below 1024 need special rights",
                    _ => "",
                };
                write!(f, "cannot listen on UDP {addr}: {error}{hint}")
            }
            ServerError::Config(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ServerError {}

/// Where a started server listens and how players can reach it.
#[derive(Clone, Debug)]
pub struct ServerInfo {
    /// The bound socket address (with the real port if port 0 was asked for).
    pub local_addr: SocketAddr,
    /// Addresses to give to players: this machine's interfaces and any
    /// `--public-addr`, LAN and public first, loopback last.
    pub share_addrs: Vec<SocketAddr>,
    pub tick_hz: u32,
    pub max_clients: usize,
}

impl ServerInfo {
    /// Prints where to connect, on stdout, for the person who started the server.
    pub fn print_banner(&self) {
        println!(
            "Arena server listening on UDP {} ({} Hz, up to {} players).",
            self.local_addr, self.tick_hz, self.max_clients
        );
        println!("Players can join with `arena join ADDRESS` at:");
        for addr in &self.share_addrs {
            let what = match addr.ip() {
                ip if ip.is_loopback() => "this machine",
                IpAddr::V4(v4) if v4.is_private() || v4.is_link_local() => "local network",
                _ => "internet / other networks",
            };
            println!("  {addr}  ({what})");
        }
    }
}

/// Binds the socket and inserts renet's server and netcode transport.
pub(crate) fn open(app: &mut App, config: &ServerConfig) -> Result<ServerInfo, ServerError> {
    let socket = UdpSocket::bind(config.bind).map_err(|error| ServerError::Bind { addr: config.bind, error })?;
    let local_addr = socket.local_addr().map_err(|error| ServerError::Bind { addr: config.bind, error })?;
    let share_addrs = share_addresses(local_addr, &config.public_addrs);

    // Clients authenticate with unsecure netcode tokens they make themselves
    // (there is no matchmaking service to sign them). In that mode netcode does
    // not check the token's server address against `public_addresses`, so a
    // server bound to 0.0.0.0 accepts whichever of its addresses the client
    // dialled. We still list every reachable address, so that the list is
    // right if signed tokens are ever used.
    let netcode = NetcodeConfig {
        current_time: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO),
        max_clients: config.max_clients,
        protocol_id: PROTOCOL_ID,
        public_addresses: share_addrs.clone(),
        authentication: ServerAuthentication::Unsecure,
    };
    let transport =
        NetcodeServerTransport::new(netcode, socket).map_err(|error| ServerError::Bind { addr: config.bind, error })?;
    app.insert_resource(RenetServer::new(connection_config())).insert_resource(transport);
    Ok(ServerInfo { local_addr, share_addrs, tick_hz: config.tick_hz, max_clients: config.max_clients })
}

/// The addresses clients can use: for an unspecified bind address, every
/// interface's address with the bound port; otherwise the bound address. Then
/// the `--public-addr`s. Loopback goes last: it only helps on this machine.
fn share_addresses(local: SocketAddr, public: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut addrs: Vec<SocketAddr> = Vec::new();
    addrs.extend_from_slice(public);
    if local.ip().is_unspecified() {
        match if_addrs::get_if_addrs() {
            Ok(interfaces) => {
                for interface in interfaces {
                    let ip = interface.ip();
                    // A socket bound to 0.0.0.0 only takes IPv4; link-local v6 needs a scope.
                    if ip.is_ipv4() == local.is_ipv4() && !interface.is_link_local() {
                        addrs.push(SocketAddr::new(ip, local.port()));
                    }
                }
            }
            Err(e) => warn!("cannot list this machine's network interfaces: {e}"),
        }
        if !addrs.iter().any(|a| a.ip().is_loopback()) {
            let loopback: IpAddr =
                if local.is_ipv4() { [127, 0, 0, 1].into() } else { std::net::Ipv6Addr::LOCALHOST.into() };
            addrs.push(SocketAddr::new(loopback, local.port()));
        }
    } else {
        addrs.push(local);
    }
    let mut unique = Vec::new();
    for addr in addrs {
        if !unique.contains(&addr) {
            unique.push(addr);
        }
    }
    unique.sort_by_key(|a| a.ip().is_loopback());
    // A netcode token holds at most 32 server addresses.
    unique.truncate(32);
    unique
}

fn log_transport_error(event: On<NetcodeErrorEvent>) {
    // A single bad datagram never gets here (netcode drops it); these are
    // socket errors, which the next frame usually gets past.
    warn!("network error: {}", event.event().0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_addresses_for_any_interface_include_loopback_last() {
        let addrs = share_addresses("0.0.0.0:5000".parse().unwrap(), &["203.0.113.7:6000".parse().unwrap()]);
        assert_eq!(addrs.first(), Some(&"203.0.113.7:6000".parse().unwrap()));
        assert!(addrs.last().is_some_and(|a| a.ip().is_loopback() && a.port() == 5000));
        assert!(addrs.iter().all(|a| a.is_ipv4()));
    }

    #[test]
    fn a_specific_bind_address_is_shared_as_is() {
        let addrs = share_addresses("192.0.2.1:5000".parse().unwrap(), &[]);
        assert_eq!(addrs, vec!["192.0.2.1:5000".parse().unwrap()]);
    }
}
