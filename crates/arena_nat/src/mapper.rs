//! One port mapping's life: ask the router with each allowed method in
//! turn (PCP, then NAT-PMP, then UPnP-IGD) within a time budget, learn the
//! external address, renew before the lease runs out, remove on a clean
//! stop. Blocking: run it on a worker thread.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use crate::{gateway, natpmp, pcp, upnp};

/// How a mapping was made (or how the external address was learnt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Upnp,
    NatPmp,
    Pcp,
}

impl Method {
    pub fn label(self) -> &'static str {
        match self {
            Method::Upnp => "UPnP",
            Method::NatPmp => "NAT-PMP",
            Method::Pcp => "PCP",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Which methods may be tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Methods {
    pub pcp: bool,
    pub natpmp: bool,
    pub upnp: bool,
}

impl Methods {
    pub const ALL: Methods = Methods { pcp: true, natpmp: true, upnp: true };
    pub const NONE: Methods = Methods { pcp: false, natpmp: false, upnp: false };

    pub fn any(self) -> bool {
        self.pcp || self.natpmp || self.upnp
    }

    /// Reads `auto` (all), `off` (none) or a comma-separated list of
    /// `upnp`, `natpmp`, `pcp`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" | "all" | "on" => return Ok(Methods::ALL),
            "off" | "none" => return Ok(Methods::NONE),
            _ => {}
        }
        let mut methods = Methods::NONE;
        for word in text.split(',') {
            match word.trim().to_ascii_lowercase().as_str() {
                "upnp" => methods.upnp = true,
                "natpmp" | "nat-pmp" => methods.natpmp = true,
                "pcp" => methods.pcp = true,
                other => return Err(format!("unknown port-mapping method {other:?} (auto, off, upnp, natpmp, pcp)")),
            }
        }
        Ok(methods)
    }
}

/// Why no mapping was made.
#[derive(Debug)]
pub enum MapError {
    /// No IPv4 default gateway (no router to ask).
    NoGateway,
    /// Every method tried failed: each one's reason.
    Failed(Vec<(Method, String)>),
}

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapError::NoGateway => f.write_str("no IPv4 router to ask"),
            MapError::Failed(reasons) if reasons.is_empty() => f.write_str("no method allowed"),
            MapError::Failed(reasons) => {
                for (i, (method, why)) in reasons.iter().enumerate() {
                    write!(f, "{}{method}: {why}", if i > 0 { "; " } else { "" })?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for MapError {}

/// What a method needs to renew or remove its mapping.
#[derive(Clone, Debug)]
enum Handle {
    Upnp(upnp::Gateway),
    NatPmp,
    Pcp { nonce: [u8; 12] },
}

/// A mapping the router granted.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub method: Method,
    /// The address strangers reach the game at.
    pub external: SocketAddr,
    pub internal: SocketAddrV4,
    /// How long the router keeps it unless renewed.
    pub lifetime: Duration,
    handle: Handle,
}

/// Asks one router for mappings of one port.
#[derive(Clone, Debug)]
pub struct Mapper {
    pub gateway: Ipv4Addr,
    pub local: Ipv4Addr,
    pub internal_port: u16,
    pub lease: Duration,
    pub description: String,
}

/// Waits for a PCP or NAT-PMP answer this long, then twice as long (RFC
/// 6886 starts at 250 ms).
const FIRST_WAIT: Duration = Duration::from_millis(250);
/// The share of the budget one binary method may use.
const BINARY_METHOD_BUDGET: Duration = Duration::from_millis(750);
/// Other external ports UPnP tries when the game's is taken.
const UPNP_PORT_TRIES: u16 = 4;
/// How long removing a mapping granted but not usable may take.
const CLEANUP_BUDGET: Duration = Duration::from_millis(500);

/// A NAT-PMP answer to another request (a late answer to an earlier one):
/// `Some("")`, "keep waiting"; `None` for an answer with opcode `op`.
fn not_ours_if_other_op(answer: &[u8], op: u8) -> Option<String> {
    (answer.len() >= 2 && answer[0] == 0 && answer[1] >= 128 && answer[1] != op).then(String::new)
}

impl Mapper {
    /// The mapper for the default gateway, or `NoGateway`.
    pub fn for_default_gateway(internal_port: u16, lease: Duration, description: &str) -> Result<Self, MapError> {
        let gateway = gateway::default_gateway().ok_or(MapError::NoGateway)?;
        let local = gateway::local_ipv4_toward(gateway).map_err(|_| MapError::NoGateway)?;
        Ok(Self { gateway, local, internal_port, lease, description: description.to_owned() })
    }

    fn lease_s(&self) -> u32 {
        self.lease.as_secs().clamp(1, u32::MAX as u64) as u32
    }

    /// Tries each allowed method within `budget`.
    pub fn map(&self, methods: Methods, budget: Duration) -> Result<Mapping, MapError> {
        let deadline = Instant::now() + budget;
        let mut reasons = Vec::new();
        let mut router_silent = false;
        if methods.pcp {
            match self.pcp(None, self.lease_s(), deadline) {
                Ok(mapping) => return Ok(mapping),
                Err(e) => {
                    router_silent = is_silence(&e);
                    reasons.push((Method::Pcp, e.to_string()));
                }
            }
        }
        if methods.natpmp {
            // A router silent to PCP may still drop only PCP's version: one
            // short try (a port nobody listens on fails at once anyway).
            let natpmp_deadline = if router_silent { deadline.min(Instant::now() + FIRST_WAIT) } else { deadline };
            match self.natpmp(self.lease_s(), natpmp_deadline) {
                Ok(mapping) => return Ok(mapping),
                Err(e) => reasons.push((Method::NatPmp, e.to_string())),
            }
        }
        if methods.upnp {
            match self.upnp(deadline) {
                Ok(mapping) => return Ok(mapping),
                Err(e) => reasons.push((Method::Upnp, e.to_string())),
            }
        }
        Err(MapError::Failed(reasons))
    }

    /// Asks again for the same mapping (a new lease).
    pub fn renew(&self, mapping: &mut Mapping, budget: Duration) -> Result<(), String> {
        let deadline = Instant::now() + budget;
        let renewed = match &mapping.handle {
            Handle::Pcp { nonce } => {
                self.pcp(Some((*nonce, mapping.external.port())), self.lease_s(), deadline).map_err(|e| e.to_string())
            }
            Handle::NatPmp => self.natpmp(self.lease_s(), deadline).map_err(|e| e.to_string()),
            Handle::Upnp(gateway) => gateway
                .add_port(mapping.external.port(), mapping.internal, self.lease_s(), &self.description, deadline)
                .map(|()| Mapping { lifetime: self.lease, ..mapping.clone() })
                .map_err(|e| e.to_string()),
        }?;
        *mapping = renewed;
        Ok(())
    }

    /// Removes the mapping.
    pub fn remove(&self, mapping: &Mapping, budget: Duration) -> Result<(), String> {
        let deadline = Instant::now() + budget;
        match &mapping.handle {
            Handle::Pcp { nonce } => match self.pcp(Some((*nonce, mapping.external.port())), 0, deadline) {
                Ok(_) => Ok(()),
                Err(e) => Err(e.to_string()),
            },
            Handle::NatPmp => {
                let socket = self.binary_socket().map_err(|e| e.to_string())?;
                let request = natpmp::map_request(self.internal_port, 0, 0);
                exchange(&socket, &request, deadline, |answer| {
                    natpmp::parse_map(answer, self.internal_port).map_err(|e| e.to_string())
                })
                .map(|_| ())
                .map_err(|e| e.to_string())
            }
            Handle::Upnp(gateway) => gateway.delete_port(mapping.external.port(), deadline).map_err(|e| e.to_string()),
        }
    }

    fn binary_socket(&self) -> io::Result<UdpSocket> {
        let socket = UdpSocket::bind(SocketAddr::from((self.local, 0)))?;
        socket.connect(SocketAddr::from((self.gateway, natpmp::SERVER_PORT)))?;
        Ok(socket)
    }

    fn internal(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.local, self.internal_port)
    }

    fn pcp(
        &self,
        renew: Option<([u8; 12], u16)>,
        lifetime_s: u32,
        deadline: Instant,
    ) -> Result<Mapping, ExchangeError> {
        let (nonce, external_port) = renew.unwrap_or_else(|| (random_nonce(), self.internal_port));
        let socket = self.binary_socket()?;
        let request = pcp::map_request(IpAddr::V4(self.local), nonce, self.internal_port, external_port, lifetime_s);
        let deadline = deadline.min(Instant::now() + BINARY_METHOD_BUDGET);
        let granted =
            exchange(&socket, &request, deadline, |answer| match pcp::parse_map(answer, nonce, self.internal_port) {
                Err(pcp::PcpError::NotOurs) => Err(String::new()),
                other => other.map_err(|e| e.to_string()),
            })?;
        Ok(Mapping {
            method: Method::Pcp,
            external: SocketAddr::new(granted.external, granted.external_port),
            internal: self.internal(),
            lifetime: Duration::from_secs(granted.lifetime_s.into()),
            handle: Handle::Pcp { nonce },
        })
    }

    fn natpmp(&self, lifetime_s: u32, deadline: Instant) -> Result<Mapping, ExchangeError> {
        let socket = self.binary_socket()?;
        let deadline = deadline.min(Instant::now() + BINARY_METHOD_BUDGET);
        let request = natpmp::map_request(self.internal_port, self.internal_port, lifetime_s);
        // A late answer to an earlier request (another opcode) is waited past.
        let granted = exchange(&socket, &request, deadline, |answer| match not_ours_if_other_op(answer, 129) {
            Some(keep_waiting) => Err(keep_waiting),
            None => natpmp::parse_map(answer, self.internal_port).map_err(|e| e.to_string()),
        })?;
        let address = exchange(&socket, &natpmp::external_address_request(), deadline, |answer| {
            match not_ours_if_other_op(answer, 128) {
                Some(keep_waiting) => Err(keep_waiting),
                None => natpmp::parse_external_address(answer).map_err(|e| e.to_string()),
            }
        });
        let address = match address {
            Ok(address) => address,
            Err(e) => {
                // Granted but unusable: not left on the router.
                let release = natpmp::map_request(self.internal_port, 0, 0);
                let _ = exchange(&socket, &release, Instant::now() + CLEANUP_BUDGET, |answer| {
                    not_ours_if_other_op(answer, 129).map_or(Ok(()), Err)
                });
                return Err(e);
            }
        };
        Ok(Mapping {
            method: Method::NatPmp,
            external: SocketAddr::from((address, granted.external_port)),
            internal: self.internal(),
            lifetime: Duration::from_secs(granted.lifetime_s.into()),
            handle: Handle::NatPmp,
        })
    }

    fn upnp(&self, deadline: Instant) -> Result<Mapping, upnp::UpnpError> {
        let gateway = upnp::discover(self.local, self.gateway, deadline)?;
        let mut last = None;
        for offset in 0..UPNP_PORT_TRIES {
            let external_port = self.internal_port.wrapping_add(offset).max(1024);
            match gateway.add_port(external_port, self.internal(), self.lease_s(), &self.description, deadline) {
                Ok(()) => {
                    let ip = match gateway.external_ip(deadline) {
                        Ok(ip) => ip,
                        Err(e) => {
                            // Its own budget: the one given may be spent.
                            let _ = gateway.delete_port(external_port, Instant::now() + CLEANUP_BUDGET);
                            return Err(e);
                        }
                    };
                    return Ok(Mapping {
                        method: Method::Upnp,
                        external: SocketAddr::from((ip, external_port)),
                        internal: self.internal(),
                        lifetime: self.lease,
                        handle: Handle::Upnp(gateway),
                    });
                }
                // 718: that external port is someone else's; try the next.
                Err(upnp::UpnpError::Action { code: Some(718), .. }) => {
                    last = Some(upnp::UpnpError::Action { status: 500, code: Some(718) })
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(upnp::UpnpError::NoGateway))
    }
}

/// Why a binary exchange failed.
#[derive(Debug)]
enum ExchangeError {
    Io(io::Error),
    /// Nothing came back before the deadline.
    Silent,
    Refused(String),
}

impl From<io::Error> for ExchangeError {
    fn from(e: io::Error) -> Self {
        ExchangeError::Io(e)
    }
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::Io(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                f.write_str("the router does not listen on port 5351")
            }
            ExchangeError::Io(e) => write!(f, "{e}"),
            ExchangeError::Silent => f.write_str("no answer"),
            ExchangeError::Refused(why) => f.write_str(why),
        }
    }
}

fn is_silence(e: &ExchangeError) -> bool {
    match e {
        ExchangeError::Silent => true,
        ExchangeError::Io(e) => e.kind() == io::ErrorKind::ConnectionRefused,
        ExchangeError::Refused(_) => false,
    }
}

/// Sends `request` and waits for an answer `read` accepts (an empty error
/// means "not ours, keep waiting"), resending after 250 ms, then 500 ms...
fn exchange<T>(
    socket: &UdpSocket,
    request: &[u8],
    deadline: Instant,
    read: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<T, ExchangeError> {
    let mut wait = FIRST_WAIT;
    let mut buffer = [0u8; pcp::MAX_ANSWER_BYTES];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(ExchangeError::Silent);
        }
        socket.send(request)?;
        let resend_at = (now + wait).min(deadline);
        wait *= 2;
        loop {
            let left = resend_at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            socket.set_read_timeout(Some(left))?;
            match socket.recv(&mut buffer) {
                Ok(len) => match read(&buffer[..len]) {
                    Ok(value) => return Ok(value),
                    Err(why) if why.is_empty() => {}
                    Err(why) => return Err(ExchangeError::Refused(why)),
                },
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// A nonce for PCP: not secret, only unlikely to repeat.
fn random_nonce() -> [u8; 12] {
    use std::hash::{BuildHasher, Hasher, RandomState};
    let mut nonce = [0u8; 12];
    for (i, chunk) in nonce.chunks_mut(8).enumerate() {
        let mut h = RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
        chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
    }
    nonce
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse() {
        assert_eq!(Methods::parse("auto"), Ok(Methods::ALL));
        assert_eq!(Methods::parse("off"), Ok(Methods::NONE));
        assert_eq!(Methods::parse("pcp"), Ok(Methods { pcp: true, natpmp: false, upnp: false }));
        assert_eq!(Methods::parse("upnp, natpmp"), Ok(Methods { pcp: false, natpmp: true, upnp: true }));
        assert!(Methods::parse("stun").is_err());
    }

    /// A router that never answers costs the budget and no more, and is an
    /// error naming each method.
    #[test]
    fn a_silent_router_costs_the_budget() {
        // A local socket that reads and never answers, standing in for
        // port 5351; UPnP finds nothing on loopback.
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mapper = Mapper {
            gateway: Ipv4Addr::LOCALHOST,
            local: Ipv4Addr::LOCALHOST,
            internal_port: 27015,
            lease: Duration::from_secs(60),
            description: "test".to_owned(),
        };
        let _ = silent;
        let started = Instant::now();
        let result = mapper.map(Methods::ALL, Duration::from_secs(2));
        assert!(started.elapsed() <= Duration::from_millis(2300), "{:?}", started.elapsed());
        let Err(MapError::Failed(reasons)) = result else { panic!("{result:?}") };
        assert_eq!(reasons.len(), 3, "{reasons:?}");
    }
}
