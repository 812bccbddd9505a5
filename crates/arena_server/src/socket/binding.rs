//! Opening the game's socket: bound, the guarded transport and renet's
//! server inserted, and the addresses clients can use worked out.

use std::net::{IpAddr, SocketAddr};

use arena_protocol::connection_config;
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::server_info::{ServerError, ServerInfo};
use super::transport::ServerTransport;
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
    let web = open_web(config, local_addr, &share_addrs, &mut transport)?;
    app.insert_resource(RenetServer::new(connection_config())).insert_resource(transport);
    Ok(ServerInfo {
        web,
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

/// The browsers' endpoint when `--web` asks for one: opened beside the
/// game's socket and attached to its transport.
#[cfg(not(target_arch = "wasm32"))]
fn open_web(
    config: &ServerConfig,
    local: SocketAddr,
    share_addrs: &[SocketAddr],
    transport: &mut ServerTransport,
) -> Result<Option<super::server_info::WebInfo>, ServerError> {
    let Some(folder) = &config.web_dir else { return Ok(None) };
    let port = config.web_port.unwrap_or(if local.port() == 0 { 0 } else { local.port().wrapping_add(1).max(1) });
    let mut hosts: Vec<IpAddr> = Vec::new();
    for addr in share_addrs {
        if !hosts.contains(&addr.ip()) {
            hosts.push(addr.ip());
        }
    }
    let mut names: Vec<String> = vec!["localhost".into()];
    names.extend(hosts.iter().map(|ip| ip.to_string()));
    let cert = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let renewed = cert.clone();
    let (links_hosts, links_port) = (hosts.clone(), std::sync::Arc::new(std::sync::atomic::AtomicU16::new(0)));
    let renew_port = links_port.clone();
    let on_renew = Box::new(move |hash: &str| {
        if let Ok(mut cert) = renewed.lock() {
            *cert = hash.to_string();
        }
        let info = super::server_info::WebInfo {
            port: renew_port.load(std::sync::atomic::Ordering::Relaxed),
            cert: renewed.clone(),
            hosts: links_hosts.clone(),
        };
        if let Some(link) = info.local_link() {
            info!("web: the certificate was renewed; links carry the new hash from now on");
            println!("web: {link}");
        }
    });
    let endpoint = arena_webtransport::WebEndpoint::start(
        arena_webtransport::WebConfig {
            bind: SocketAddr::new(config.bind.ip(), port),
            folder: Some(folder.clone()),
            max_sessions: config.max_clients + config.max_spectators + arena_webtransport::MAX_SESSIONS_PER_IP,
            names,
            silent_timeout: arena_webtransport::SILENT_SESSION_TIMEOUT,
            admit_timeout: arena_webtransport::ADMIT_TIMEOUT,
            renew_after: arena_webtransport::RENEW_AFTER,
        },
        on_renew,
    )
    .map_err(|e| ServerError::Web(e.to_string()))?;
    links_port.store(endpoint.port, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut current) = cert.lock() {
        *current = endpoint.hash_hex();
    }
    let port = endpoint.port;
    transport.attach_web(Box::new(endpoint));
    Ok(Some(super::server_info::WebInfo { port, cert, hosts }))
}

/// A browser has no endpoint of its own to open (the page is the browser).
#[cfg(target_arch = "wasm32")]
fn open_web(
    _config: &ServerConfig,
    _local: SocketAddr,
    _share_addrs: &[SocketAddr],
    _transport: &mut ServerTransport,
) -> Result<Option<super::server_info::WebInfo>, ServerError> {
    Ok(None)
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
