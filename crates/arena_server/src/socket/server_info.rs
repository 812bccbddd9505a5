//! What a started server says about itself (where it listens, the
//! addresses and links to share, the browsers' endpoint) and why a server
//! could not start or stopped.

use std::io;
use std::net::{IpAddr, SocketAddr};

use arena_protocol::key::PasswordError;

use crate::config::ConfigError;

/// Why a server could not start, or stopped.
#[derive(Debug)]
pub enum ServerError {
    Bind {
        addr: SocketAddr,
        error: io::Error,
    },
    Password(PasswordError),
    Config(ConfigError),
    /// The listen server's thread could not be started.
    Thread(io::Error),
    /// The listen server's thread ended before it listened.
    ThreadEnded,
    /// The server's loop ended with this error code.
    Stopped(u8),
    /// The browsers' endpoint (`--web`) did not open.
    Web(String),
    /// The stop signals' handlers could not be installed.
    Signals(io::Error),
    /// `--record`'s folder cannot be made, or a file cannot be written in
    /// it: refused at start, not found out at the first match's end.
    Record {
        dir: std::path::PathBuf,
        error: io::Error,
    },
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::Bind { addr, error } => {
                let hint = match error.kind() {
                    io::ErrorKind::AddrInUse => {
                        " — the port is already in use (another Arena server?): choose another, with --bind ADDRESS:PORT on \
                         `arena server` or --port on `arena host` and `arena play`"
                    }
                    io::ErrorKind::AddrNotAvailable => " — this machine has no such address",
                    io::ErrorKind::PermissionDenied => " — ports below 1024 need special rights",
                    _ => "",
                };
                write!(f, "cannot listen on UDP {addr}: {error}{hint}")
            }
            ServerError::Password(e) => write!(f, "{e}"),
            ServerError::Signals(e) => write!(f, "cannot handle SIGTERM and SIGINT: {e}"),
            ServerError::Config(e) => write!(f, "{e}"),
            ServerError::Thread(e) => write!(f, "cannot start the server thread: {e}"),
            ServerError::ThreadEnded => f.write_str("the server thread ended before it started listening"),
            ServerError::Stopped(code) => write!(f, "the server stopped with error code {code}"),
            ServerError::Web(e) => write!(f, "--web: {e}"),
            ServerError::Record { dir, error } => write!(
                f,
                "cannot record demos into {}: {error} (give --record a folder this user can write, or leave it out)",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for ServerError {}

/// Where a started server listens and how players can reach it.
#[derive(Clone, Debug)]
pub struct ServerInfo {
    /// The name the server announces to browsers.
    pub name: String,
    /// The bound socket address (with the real port if port 0 was asked for).
    pub local_addr: SocketAddr,
    /// Addresses to give to players: this machine's interfaces and any
    /// `--public-addr`, LAN and public first, loopback last.
    pub share_addrs: Vec<SocketAddr>,
    pub tick_hz: u32,
    pub max_clients: usize,
    /// Whether joining needs a password.
    pub private: bool,
    /// How strangers reach it (the port mapping, the reachability check,
    /// the listing): shared with the host's menu and HUD.
    pub reach: crate::reach_report::ReachHandle,
    /// The browsers' endpoint (`--web`), if it was asked for.
    pub web: Option<WebInfo>,
}

/// Where browsers join a server (`--web`): the endpoint's port and its
/// certificate's current hash (renewed while the server runs).
#[derive(Clone, Debug)]
pub struct WebInfo {
    pub port: u16,
    /// The certificate's hash in hex, as the newest renewal left it.
    pub cert: std::sync::Arc<std::sync::Mutex<String>>,
    /// The addresses the links name (the game's shared addresses' IPs).
    pub hosts: Vec<IpAddr>,
}

impl WebInfo {
    /// The links to open: loopback's over plain HTTP (a secure context
    /// there), every other address's over HTTPS (the friend accepts the
    /// certificate once), each joining the endpoint at that address.
    pub fn links(&self) -> Vec<String> {
        let cert = self.cert.lock().map(|c| c.clone()).unwrap_or_else(|e| e.into_inner().clone());
        self.hosts
            .iter()
            .map(|&ip| {
                let addr = SocketAddr::new(ip, self.port);
                let scheme = if ip.is_loopback() { "http" } else { "https" };
                format!("{scheme}://{addr}/{}", arena_protocol::web_link::join_fragment(addr, &cert))
            })
            .collect()
    }

    /// The link this machine opens (loopback's), else the first.
    pub fn local_link(&self) -> Option<String> {
        let links = self.links();
        links.iter().find(|l| l.starts_with("http://")).or(links.first()).cloned()
    }
}

impl ServerInfo {
    /// Prints where to connect, on stdout, for the person who started the server.
    pub fn print_banner(&self) {
        println!(
            "Arena server \"{}\" listening on UDP {} ({} Hz, up to {} players, {}).",
            self.name,
            self.local_addr,
            self.tick_hz,
            self.max_clients,
            if self.private { "private: joining needs the password" } else { "open to anyone" }
        );
        println!("Players can join with `arena join ADDRESS{}` at:", if self.private { " --password ..." } else { "" });
        for addr in &self.share_addrs {
            let what = match addr.ip() {
                ip if ip.is_loopback() => "this machine",
                IpAddr::V4(v4) if v4.is_private() || v4.is_link_local() => "local network",
                // Unique local addresses (fc00::/7), IPv6's private ones.
                IpAddr::V6(v6) if v6.segments()[0] & 0xFE00 == 0xFC00 => "local network",
                _ => "internet / other networks",
            };
            println!("  {addr}  ({what})");
        }
        if let Some(web) = &self.web {
            if let Some(link) = web.local_link() {
                println!("web: {link}");
            }
            let others: Vec<String> = web.links().into_iter().filter(|l| l.starts_with("https://")).collect();
            if !others.is_empty() {
                println!("Friends open in Chromium (and accept the certificate once; docs/hosting.md):");
                for link in others {
                    println!("  {link}");
                }
            }
        }
    }
}
