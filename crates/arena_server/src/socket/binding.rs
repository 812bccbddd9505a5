//! Opening the game's socket: bound, the guarded transport and renet's
//! server inserted, and the addresses clients can use worked out.

use std::net::{IpAddr, SocketAddr};

use arena_protocol::connection_config;
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::transport::{ServerError, ServerInfo, ServerTransport};
use crate::config::ServerConfig;

/// Binds the socket and inserts renet's server and the guarded transport.
pub(crate) fn open(app: &mut App, config: &ServerConfig) -> Result<ServerInfo, ServerError> {
    let key = config.password.key().map_err(ServerError::Password)?;
    let socket = arena_udp::bind_udp(config.bind).map_err(|error| ServerError::Bind { addr: config.bind, error })?;
    let local_addr = socket.local_addr().map_err(|error| ServerError::Bind { addr: config.bind, error })?;
    let share_addrs = share_addresses(local_addr, &config.public_addrs);
    // Players' places and watchers' places: the roster tells them apart.
    let transport = ServerTransport::new(socket, key, config.max_clients + config.max_spectators)
        .map_err(|error| ServerError::Bind { addr: config.bind, error })?;
    let mut transport = transport;
    transport.set_rcon_key(config.rcon_key.clone());
    app.insert_resource(RenetServer::new(connection_config())).insert_resource(transport);
    Ok(ServerInfo {
        name: config.display_name(),
        local_addr,
        share_addrs,
        tick_hz: config.tick_hz,
        max_clients: config.max_clients,
        private: config.password.is_set(),
        reach: crate::reach_report::ReachHandle::new(crate::reach_report::ReachReport::new(
            local_addr.port(),
            Vec::new(),
            false,
            crate::reach_report::MapState::Off,
        )),
    })
}

/// The addresses clients can use: the `--public-addr`s, then for an
/// unspecified bind address every interface's address with the bound port
/// (both families on an IPv6 socket, which takes IPv4 too); otherwise the
/// bound address. Loopback goes last: it only helps on this machine.
fn share_addresses(local: SocketAddr, public: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut addrs: Vec<SocketAddr> = Vec::new();
    addrs.extend_from_slice(public);
    if local.ip().is_unspecified() {
        match arena_udp::interfaces() {
            Ok(interfaces) => {
                for interface in interfaces {
                    let ip = interface.ip;
                    // A socket bound to 0.0.0.0 only takes IPv4; link-local v6 needs a scope.
                    if (local.is_ipv6() || ip.is_ipv4()) && !interface.link_local {
                        addrs.push(SocketAddr::new(ip, local.port()));
                    }
                }
            }
            // A browser has none to list (the in-page server is reached on loopback).
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {}
            Err(e) => warn!("cannot list this machine's network interfaces: {e}"),
        }
        let mut loopbacks: Vec<IpAddr> = vec![[127, 0, 0, 1].into()];
        if local.is_ipv6() {
            loopbacks.push(std::net::Ipv6Addr::LOCALHOST.into());
        }
        for loopback in loopbacks {
            if !addrs.iter().any(|a| a.ip() == loopback) {
                addrs.push(SocketAddr::new(loopback, local.port()));
            }
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
    unique.truncate(32);
    unique
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
    fn a_dual_stack_server_shares_both_families() {
        let addrs = share_addresses("[::]:5000".parse().unwrap(), &[]);
        assert!(addrs.contains(&"127.0.0.1:5000".parse().unwrap()), "{addrs:?}");
        assert!(addrs.contains(&"[::1]:5000".parse().unwrap()), "{addrs:?}");
        assert!(addrs.iter().all(|a| !matches!(a.ip(), IpAddr::V6(v6) if v6.segments()[0] & 0xFFC0 == 0xFE80)));
    }

    #[test]
    fn a_specific_bind_address_is_shared_as_is() {
        let addrs = share_addresses("192.0.2.1:5000".parse().unwrap(), &[]);
        assert_eq!(addrs, vec!["192.0.2.1:5000".parse().unwrap()]);
    }
}
