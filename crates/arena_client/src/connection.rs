//! Connecting and disconnecting, and turning every way a connection can end
//! into a sentence for the player.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use arena_protocol::DEFAULT_PORT;
use arena_protocol::key::Password;
use bevy::prelude::*;
use bevy_renet::RenetClient;
use renetcode::DisconnectReason;

use crate::hole_punch::Introducers;
use crate::link::IoMode;
use crate::settings::NetcodeSettings;
use crate::transport::{CONNECTION_TIMEOUT_S, UdpTransport};
use crate::vocabulary::Session;

/// How long to wait for a server's welcome before giving up, seconds.
pub(crate) const CONNECT_TIMEOUT_S: f32 = 8.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LastDisconnect>()
        .add_observer(on_connect_to)
        .add_observer(on_disconnect)
        .add_systems(PreUpdate, adopt_introducers.run_if(resource_exists::<IntroducerLookup>))
        .add_systems(Update, rejoin.run_if(resource_exists::<Rejoin>))
        .add_systems(OnEnter(Session::InGame), |mut commands: Commands| commands.remove_resource::<Rejoin>());
}

/// A connection the relay carried and lost, to be made again once (the
/// client allocates afresh; if the relay is down, the new attempt says so).
#[derive(Resource, Debug, Clone)]
pub(crate) struct Rejoin {
    connect: ConnectTo,
    /// Whether the new attempt has begun (then a second loss before it
    /// gets into the game ends for good).
    begun: bool,
}

/// Starts the rejoin once the lost connection is gone.
fn rejoin(mut rejoin: ResMut<Rejoin>, session: Res<State<Session>>, mut commands: Commands) {
    if rejoin.begun || *session.get() != Session::Offline {
        return;
    }
    rejoin.begun = true;
    info!("rejoining {} through a new allocation on the relay", rejoin.connect.addr);
    commands.trigger(rejoin.connect.clone());
}

pub(crate) fn connected(transport: Option<Res<UdpTransport>>) -> bool {
    transport.is_some()
}

/// Ask the client to connect to a server.
#[derive(Event, Debug, Clone)]
pub struct ConnectTo {
    pub addr: SocketAddr,
    pub name: String,
    /// The game's password (open: none).
    pub password: Password,
    /// Join to watch (`arena join --spectate`): never in the world.
    pub spectate: bool,
}

/// Ask the client to leave the server.
#[derive(Event, Debug, Clone, Copy)]
pub struct Disconnect;

/// Why the last connection ended (or failed), for the menu. `None` after
/// leaving on purpose.
#[derive(Resource, Default, Debug, Clone)]
pub struct LastDisconnect(pub Option<String>);

/// The server the client is connected or connecting to.
#[derive(Resource, Debug, Clone)]
pub struct ServerConnection {
    pub addr: SocketAddr,
    pub name: String,
    /// The game's password, for a rejoin.
    pub password: Password,
    /// Joined to watch.
    pub spectate: bool,
    /// Real time at which connecting started.
    pub started: Duration,
}

/// Turns what a player typed ("host", "host:port", "1.2.3.4") into an address,
/// with the default port if none is given.
pub fn resolve_server_addr(text: &str) -> Result<SocketAddr, AddrError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AddrError::Empty);
    }
    if let Some(port) = arena_udp::port_out_of_range(text) {
        return Err(AddrError::Port(text.to_string(), port));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = text.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    }
    let with_port = if text.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        text.to_string()
    } else {
        format!("{text}:{DEFAULT_PORT}")
    };
    match with_port.to_socket_addrs() {
        Ok(mut addrs) => {
            let all: Vec<SocketAddr> = addrs.by_ref().collect();
            all.iter()
                .find(|a| a.is_ipv4())
                .or(all.first())
                .copied()
                .ok_or_else(|| AddrError::NoAddress(text.to_string()))
        }
        Err(e) => Err(AddrError::NotFound(text.to_string(), e.to_string())),
    }
}

/// Why what a player typed is not a server address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrError {
    Empty,
    /// The name does not resolve (the name, and why).
    NotFound(String, String),
    /// The name resolves to no address.
    NoAddress(String),
    /// The port is past 65535 (what was typed, and the port).
    Port(String, u64),
}

impl std::fmt::Display for AddrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddrError::Empty => f.write_str("enter the server's address, such as 192.168.1.20 or example.org:27015"),
            AddrError::NotFound(name, why) => write!(f, "cannot find \"{name}\": {why}"),
            AddrError::NoAddress(name) => write!(f, "\"{name}\" has no address"),
            AddrError::Port(text, port) => {
                write!(f, "\"{text}\": port {port} is out of range (a UDP port is 1-65535)")
            }
        }
    }
}

impl std::error::Error for AddrError {}

fn on_connect_to(
    event: On<ConnectTo>,
    mut commands: Commands,
    settings: Res<NetcodeSettings>,
    time: Res<Time<Real>>,
    introducers: Option<Res<Introducers>>,
    io_mode: Option<Res<IoMode>>,
    strategy: Option<Res<bevy::time::TimeUpdateStrategy>>,
    mut last: ResMut<LastDisconnect>,
    mut next: ResMut<NextState<Session>>,
) {
    let ConnectTo { addr, name, password, spectate } = event.event().clone();
    let for_rejoin = password.clone();
    let seed = settings.conditioner_seed.unwrap_or_else(crate::transport::random_u64);
    let mode = io_mode.map(|m| *m).unwrap_or(match strategy.as_deref() {
        // A page has one thread: its socket (the in-page network's) is read once a frame.
        None | Some(bevy::time::TimeUpdateStrategy::Automatic) if cfg!(target_arch = "wasm32") => IoMode::Frame,
        None | Some(bevy::time::TimeUpdateStrategy::Automatic) => IoMode::Thread,
        Some(_) => IoMode::Frame,
    });
    match UdpTransport::connect(addr, (&name, spectate), &password, settings.conditions, seed, mode) {
        Ok(mut transport) => {
            // A server on this machine or the LAN needs no introduction.
            if let Some(introducers) = introducers.filter(|_| !arena_udp::is_local(addr.ip())) {
                look_up_introducers(&mut commands, &mut transport, addr, &introducers.0);
            }
            info!("connecting to {addr} as {name}");
            commands.insert_resource(transport);
            commands.insert_resource(RenetClient::new(arena_protocol::connection_config()));
            commands.insert_resource(ServerConnection {
                addr,
                name,
                password: for_rejoin,
                spectate,
                started: time.elapsed(),
            });
            last.0 = None;
            next.set(Session::Connecting);
        }
        Err(e) => {
            last.0 = Some(format!("Cannot connect to {addr}: {e}"));
            next.set(Session::Offline);
        }
    }
}

/// The masters' names for a connection's introduction, looked up: literal
/// addresses at once, names on a thread of their own (a DNS lookup must not
/// hold the game's frame), handed over by [`adopt_introducers`].
fn look_up_introducers(commands: &mut Commands, transport: &mut UdpTransport, server: SocketAddr, names: &[String]) {
    let (literal, named): (Vec<&String>, Vec<&String>) = names.iter().partition(|name| {
        let name = name.trim();
        name.parse::<SocketAddr>().is_ok()
            || name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok()
    });
    let resolve = move |names: &[&String]| -> Vec<SocketAddr> {
        names
            .iter()
            .flat_map(|name| arena_udp::resolve(name, arena_master::wire::DEFAULT_PORT, server.is_ipv6()))
            .collect()
    };
    let masters = resolve(&literal);
    transport.introduce_through(&masters);
    if named.is_empty() {
        return;
    }
    let named: Vec<String> = named.into_iter().cloned().collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("arena-introducer-lookup".into()).spawn(move || {
        let refs: Vec<&String> = named.iter().collect();
        let mut all = masters;
        all.extend(resolve(&refs));
        let _ = tx.send(all);
    });
    match spawned {
        Ok(_) => {
            commands.insert_resource(IntroducerLookup { server, found: std::sync::Mutex::new(rx) });
        }
        Err(e) => warn!("cannot look the masters up for introductions: {e}"),
    }
}

/// A lookup of masters' names under way, for the connection to `server`.
#[derive(Resource)]
pub(crate) struct IntroducerLookup {
    server: SocketAddr,
    found: std::sync::Mutex<std::sync::mpsc::Receiver<Vec<SocketAddr>>>,
}

/// Gives the connection the masters its lookup found.
pub(crate) fn adopt_introducers(
    lookup: Res<IntroducerLookup>,
    transport: Option<ResMut<UdpTransport>>,
    mut commands: Commands,
) {
    let received = match lookup.found.lock() {
        Ok(found) => found.try_recv(),
        Err(_) => Err(std::sync::mpsc::TryRecvError::Disconnected),
    };
    match received {
        Ok(masters) => {
            // Only for the connection it was made for (another may have begun).
            if let Some(mut transport) = transport.filter(|t| t.server_addr() == lookup.server) {
                transport.introduce_through(&masters);
            }
            commands.remove_resource::<IntroducerLookup>();
        }
        Err(std::sync::mpsc::TryRecvError::Empty) => {}
        Err(std::sync::mpsc::TryRecvError::Disconnected) => commands.remove_resource::<IntroducerLookup>(),
    }
}

fn on_disconnect(_: On<Disconnect>, mut commands: Commands, transport: Option<ResMut<UdpTransport>>) {
    commands.remove_resource::<Rejoin>();
    if let Some(mut transport) = transport {
        transport.disconnect();
        info!("left the server");
    }
    commands.insert_resource(LastDisconnect(None));
    commands.set_state(Session::Offline);
}

pub(crate) fn watch_connection(
    transport: Res<UdpTransport>,
    client: Res<RenetClient>,
    connection: Res<ServerConnection>,
    session: Res<State<Session>>,
    time: Res<Time<Real>>,
    rejoining: Option<Res<Rejoin>>,
    mut commands: Commands,
) {
    let addr = connection.addr;
    if let Some(refusal) = transport.refusal() {
        end_connection(&mut commands, format!("The server at {addr} refused to let you in: {refusal}."));
    } else if let Some(reason) = transport.disconnect_reason() {
        end_connection(&mut commands, describe_netcode_reason(reason, addr, *session.get()));
    } else if let Some(reason) = client.disconnect_reason() {
        end_connection(&mut commands, format!("The connection to {addr} broke: {reason}"));
    } else if let Some(why) = transport.relay_lost() {
        if rejoining.is_some() {
            end_connection(
                &mut commands,
                format!(
                    "Lost the connection to {addr} again: {why}; the relay carried it because no other way through \
                     the routers worked. Join again once the relay is back, or ask the host to forward a port."
                ),
            );
        } else {
            let connect = ConnectTo {
                addr,
                name: connection.name.clone(),
                password: connection.password.clone(),
                spectate: connection.spectate,
            };
            commands.insert_resource(Rejoin { connect, begun: false });
            end_connection(&mut commands, format!("Lost the connection to {addr}: {why}: rejoining..."));
        }
    } else if let Some(advice) = transport.unreachable() {
        end_connection(&mut commands, advice);
    } else if *session.get() == Session::Connecting
        && (time.elapsed() - connection.started).as_secs_f32() > CONNECT_TIMEOUT_S
    {
        end_connection(
            &mut commands,
            format!(
                "No Arena server answered at {addr} within {CONNECT_TIMEOUT_S:.0} s. Check that the server is \
                 running, that the address and port are right, and that no firewall blocks UDP port {}.",
                addr.port()
            ),
        );
    }
}

fn describe_netcode_reason(reason: DisconnectReason, addr: SocketAddr, session: Session) -> String {
    match reason {
        DisconnectReason::ConnectionDenied => format!("The server at {addr} is full."),
        // A server says the same when it stops, when it lets a player go
        // and when it has not heard from one (a game stalled, a tab hidden).
        DisconnectReason::DisconnectedByServer => {
            format!("The server at {addr} closed the connection (it shut down, or let this game go).")
        }
        DisconnectReason::ConnectionTimedOut if session == Session::InGame => {
            format!("Lost the connection to {addr}: nothing heard from the server for {CONNECTION_TIMEOUT_S} s.")
        }
        DisconnectReason::ConnectionTimedOut
        | DisconnectReason::ConnectionRequestTimedOut
        | DisconnectReason::ConnectionResponseTimedOut
        | DisconnectReason::ConnectTokenExpired => format!(
            "No Arena server answered at {addr}. Check that the server is running, that the address and port are \
             right, and that it runs the same version of Arena."
        ),
        DisconnectReason::DisconnectedByClient => "Left the server.".into(),
    }
}

/// Ends the connection with a reason for the player.
pub(crate) fn end_connection(commands: &mut Commands, reason: String) {
    warn!("{reason}");
    commands.insert_resource(LastDisconnect(Some(reason)));
    commands.set_state(Session::Offline);
}

pub(crate) fn drop_connection(mut commands: Commands, transport: Option<ResMut<UdpTransport>>) {
    // However the connection ended, its allocation on a relay goes with it
    // (it would hold one of the player's few until its lifetime ran out).
    if let Some(mut transport) = transport {
        transport.close_relay();
    }
    commands.remove_resource::<UdpTransport>();
    commands.remove_resource::<RenetClient>();
    commands.remove_resource::<ServerConnection>();
}

pub(crate) fn disconnect_on_exit(exit: MessageReader<AppExit>, mut transport: ResMut<UdpTransport>) {
    if !exit.is_empty() {
        transport.disconnect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_get_the_default_port() {
        assert_eq!(resolve_server_addr("127.0.0.1"), Ok(SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))));
        assert_eq!(resolve_server_addr(" 10.0.0.2:5000 "), Ok(SocketAddr::from(([10, 0, 0, 2], 5000))));
        assert_eq!(resolve_server_addr("localhost:6000").map(|a| a.port()), Ok(6000));
        assert!(resolve_server_addr("").is_err());
        assert!(resolve_server_addr("no such host.invalid").is_err());
    }
}
