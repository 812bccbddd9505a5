//! The in-page network: datagram sockets inside one process, for the web
//! build, where a page has no UDP and the listen server runs beside the
//! game in the same (single) thread. The same netcode.io datagrams go over
//! it as over UDP, to the same guards, netcode and renet; only the wire is
//! a queue.
//!
//! Every socket lives on one host, loopback: a datagram sent to any address
//! goes to the socket bound to its port, and comes from the sender's port on
//! loopback in the family it was sent to (`127.0.0.1` to an IPv4 or mapped
//! address, `::1` to an IPv6 one), so that a reply to it comes back.
//! Sending never blocks and receiving never waits: with nothing queued, a
//! read says `WouldBlock`, blocking or not (as a read timeout says it on
//! Linux: the only thread there is cannot wait). Each socket holds at most
//! [`MAX_QUEUED`] datagrams and [`MAX_QUEUED_BYTES`]; beyond them a
//! datagram is lost, as a full socket buffer loses it, and nothing grows
//! without bound.
//!
//! A gateway leads out of the page (a browser joining a server): datagrams
//! sent to its address wait for the page's WebTransport link to take them,
//! and what the link receives is delivered from that address to the socket
//! that last sent through it. Bounded as a socket's queue is.
//!
//! Natively this module is built and tested too; native sockets stay the
//! operating system's ([`crate::UdpSocket`] is std's there).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

/// Most datagrams waiting in one socket (about 16 s of snapshots at 128 Hz
/// from one peer): what a socket buffer would hold, about.
pub const MAX_QUEUED: usize = 2048;
/// Most bytes waiting in one socket: generous beside Linux's default
/// receive buffer (about 200 KiB), since a socket here is read only once a
/// page frame and a datagram dropped here is the page's own loss, not a
/// network's; bounded all the same.
pub const MAX_QUEUED_BYTES: usize = 4 << 20;
/// Largest datagram carried (UDP's own limit over IPv4).
pub const MAX_DATAGRAM: usize = 65_507;
/// Where ephemeral ports (binding port 0) are taken from: the IANA
/// dynamic range, as operating systems do.
const EPHEMERAL: std::ops::RangeInclusive<u16> = 49_152..=65_535;

/// A socket's datagrams and their bytes in all.
#[derive(Debug, Default)]
struct Waiting {
    datagrams: VecDeque<(SocketAddr, Vec<u8>)>,
    bytes: usize,
}

type Queue = Mutex<Waiting>;

/// Every bound port and its socket's queue (weak: a dropped socket frees
/// its port), and the gateways out of the page.
#[derive(Default)]
struct Network {
    ports: HashMap<u16, Weak<Queue>>,
    next_ephemeral: u16,
    gateways: HashMap<SocketAddr, Gateway>,
}

/// A way out of the page to one address (a WebTransport session to a
/// server): what was sent to it waits here until the page's link takes it,
/// and what the link received is delivered from it to the socket that
/// last sent to it.
#[derive(Default)]
struct Gateway {
    outbox: Waiting,
    /// The port that last sent through it (where answers go).
    last_sender: Option<u16>,
}

/// Whether a socket of the page holds `port` (the page's own server).
pub fn is_bound(port: u16) -> bool {
    network().ports.get(&port).is_some_and(|q| q.strong_count() > 0)
}

/// Opens a gateway to `addr`: from now on datagrams sent to it wait for
/// [`take_outgoing`] instead of going to a port of the page.
pub fn open_gateway(addr: SocketAddr) {
    network().gateways.entry(addr).or_default();
}

/// Closes the gateway to `addr` (what waited in it is dropped).
pub fn close_gateway(addr: SocketAddr) {
    network().gateways.remove(&addr);
}

/// The datagrams sent to the gateway `addr` since the last call, oldest first.
pub fn take_outgoing(addr: SocketAddr) -> Vec<Vec<u8>> {
    let mut net = network();
    let Some(gateway) = net.gateways.get_mut(&addr) else { return Vec::new() };
    gateway.outbox.bytes = 0;
    gateway.outbox.datagrams.drain(..).map(|(_, d)| d).collect()
}

/// Hands `datagram`, received from outside the page, to the socket that
/// last sent through the gateway `from`, as if `from` had sent it; false
/// when there is no such gateway or socket, or its queue is full.
pub fn deliver(from: SocketAddr, datagram: &[u8]) -> bool {
    let net = network();
    let Some(port) = net.gateways.get(&from).and_then(|g| g.last_sender) else { return false };
    let Some(queue) = net.ports.get(&port).and_then(Weak::upgrade) else { return false };
    drop(net);
    let mut queue = lock(&queue);
    if queue.datagrams.len() >= MAX_QUEUED || queue.bytes + datagram.len() > MAX_QUEUED_BYTES {
        return false;
    }
    queue.bytes += datagram.len();
    queue.datagrams.push_back((from, datagram.to_vec()));
    true
}

fn network() -> MutexGuard<'static, Network> {
    static NETWORK: OnceLock<Mutex<Network>> = OnceLock::new();
    let lock = NETWORK.get_or_init(|| {
        Mutex::new(Network { ports: HashMap::new(), next_ephemeral: *EPHEMERAL.start(), gateways: HashMap::new() })
    });
    // A panic while holding it leaves the map consistent (each step is one insert or remove).
    lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lock(queue: &Queue) -> MutexGuard<'_, Waiting> {
    queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A datagram socket on the in-page network, with the part of
/// `std::net::UdpSocket`'s interface Arena uses.
#[derive(Debug)]
pub struct MemorySocket {
    /// The address it was bound at, with its port decided.
    local: SocketAddr,
    queue: Arc<Queue>,
    /// Where `send` and `recv` go and come from, after `connect`.
    peer: Mutex<Option<SocketAddr>>,
}

impl MemorySocket {
    /// Binds `addr`'s port (0: a free ephemeral one); a port in use is
    /// `AddrInUse`, as UDP says it.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind"))?;
        let mut net = network();
        let port = match addr.port() {
            0 => free_port(&mut net)?,
            port if net.ports.get(&port).is_some_and(|q| q.strong_count() > 0) => {
                return Err(io::Error::new(io::ErrorKind::AddrInUse, format!("port {port} is in use")));
            }
            port => port,
        };
        let queue = Arc::new(Mutex::new(Waiting::default()));
        net.ports.insert(port, Arc::downgrade(&queue));
        Ok(Self { local: SocketAddr::new(addr.ip(), port), queue, peer: Mutex::new(None) })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    /// Sends `datagram` to the socket bound at `to`'s port. A datagram to a
    /// port nobody holds, or to a full queue, is lost without an error (UDP
    /// reports neither); one over [`MAX_DATAGRAM`] is refused, as UDP
    /// refuses it.
    pub fn send_to(&self, datagram: &[u8], to: impl ToSocketAddrs) -> io::Result<usize> {
        if datagram.len() > MAX_DATAGRAM {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "datagram too long"));
        }
        let to =
            to.to_socket_addrs()?.next().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))?;
        let mut net = network();
        if let Some(gateway) = net.gateways.get_mut(&to) {
            // Out of the page: bounded as a socket's queue is.
            gateway.last_sender = Some(self.local.port());
            let outbox = &mut gateway.outbox;
            if outbox.datagrams.len() < MAX_QUEUED && outbox.bytes + datagram.len() <= MAX_QUEUED_BYTES {
                outbox.bytes += datagram.len();
                outbox.datagrams.push_back((to, datagram.to_vec()));
            }
            return Ok(datagram.len());
        }
        let queue = net.ports.get(&to.port()).and_then(Weak::upgrade);
        drop(net);
        if let Some(queue) = queue {
            let mut queue = lock(&queue);
            if queue.datagrams.len() < MAX_QUEUED && queue.bytes + datagram.len() <= MAX_QUEUED_BYTES {
                queue.bytes += datagram.len();
                queue.datagrams.push_back((self.apparent_source(to), datagram.to_vec()));
            }
        }
        Ok(datagram.len())
    }

    /// What the receiver sees as the sender: loopback in the family the
    /// datagram was sent to.
    fn apparent_source(&self, to: SocketAddr) -> SocketAddr {
        let ip: IpAddr = match to.ip() {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => Ipv6Addr::LOCALHOST.into(),
            _ => Ipv4Addr::LOCALHOST.into(),
        };
        SocketAddr::new(ip, self.local.port())
    }

    /// The oldest datagram and its sender, cut to `buffer` as UDP cuts it.
    pub fn recv_from(&self, buffer: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let mut queue = lock(&self.queue);
        let Some((from, bytes)) = queue.datagrams.pop_front() else {
            // Blocking or not: a read that waited would wait for ever on
            // the only thread there is, so it is as if its timeout passed.
            return Err(io::ErrorKind::WouldBlock.into());
        };
        queue.bytes -= bytes.len();
        drop(queue);
        let len = bytes.len().min(buffer.len());
        buffer[..len].copy_from_slice(&bytes[..len]);
        Ok((len, from))
    }

    /// Accepted and ignored: nothing here waits.
    pub fn set_nonblocking(&self, _: bool) -> io::Result<()> {
        Ok(())
    }

    /// Accepted and ignored: nothing here waits.
    pub fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }

    /// Accepted and ignored: a send never waits.
    pub fn set_write_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }

    /// Accepted and ignored: one host has nobody to broadcast to but itself.
    pub fn set_broadcast(&self, _: bool) -> io::Result<()> {
        Ok(())
    }

    /// Another handle on the same socket (its queue shared).
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            local: self.local,
            queue: self.queue.clone(),
            peer: Mutex::new(*self.peer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)),
        })
    }

    /// Where `send` goes and the only sender `recv` takes.
    pub fn connect(&self, to: impl ToSocketAddrs) -> io::Result<()> {
        let to =
            to.to_socket_addrs()?.next().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address"))?;
        *self.peer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(to);
        Ok(())
    }

    fn peer(&self) -> io::Result<SocketAddr> {
        self.peer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "not connected"))
    }

    pub fn send(&self, datagram: &[u8]) -> io::Result<usize> {
        self.send_to(datagram, self.peer()?)
    }

    /// The next datagram from the connected peer (others are dropped, as a
    /// connected UDP socket filters them).
    pub fn recv(&self, buffer: &mut [u8]) -> io::Result<usize> {
        let peer = self.peer()?;
        loop {
            let (len, from) = self.recv_from(buffer)?;
            if from.port() == peer.port() {
                return Ok(len);
            }
        }
    }
}

/// The next ephemeral port nobody holds.
fn free_port(net: &mut Network) -> io::Result<u16> {
    let span = usize::from(EPHEMERAL.end() - EPHEMERAL.start()) + 1;
    for _ in 0..span {
        let port = net.next_ephemeral;
        net.next_ephemeral = if port == *EPHEMERAL.end() { *EPHEMERAL.start() } else { port + 1 };
        if net.ports.get(&port).is_none_or(|q| q.strong_count() == 0) {
            return Ok(port);
        }
    }
    Err(io::Error::new(io::ErrorKind::AddrInUse, "no free port"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_takes_what_is_sent_to_its_address_and_answers_the_sender() {
        let server: SocketAddr = "192.0.2.10:27961".parse().unwrap();
        open_gateway(server);
        let client = MemorySocket::bind("127.0.0.1:0").unwrap();
        client.send_to(b"request", server).unwrap();
        assert_eq!(take_outgoing(server), vec![b"request".to_vec()]);
        assert!(take_outgoing(server).is_empty());
        assert!(deliver(server, b"challenge"));
        let mut buffer = [0u8; 64];
        assert_eq!(client.recv_from(&mut buffer).unwrap(), (9, server));
        close_gateway(server);
        assert!(!deliver(server, b"late"));
        client.send_to(b"after", server).unwrap();
        assert!(take_outgoing(server).is_empty(), "a closed gateway takes nothing");
    }

    #[test]
    fn a_datagram_goes_to_the_port_and_comes_from_the_sender() {
        let server = MemorySocket::bind("[::]:40001").expect("bound");
        let client = MemorySocket::bind("0.0.0.0:0").expect("bound");
        server.set_nonblocking(true).expect("set");
        client.send_to(b"hello", "127.0.0.1:40001").expect("sent");
        let mut buffer = [0u8; 3];
        let (len, from) = server.recv_from(&mut buffer).expect("came");
        // Cut to the buffer, as UDP cuts it.
        assert_eq!((len, &buffer), (3, b"hel"));
        assert_eq!(from, SocketAddr::new(Ipv4Addr::LOCALHOST.into(), client.local_addr().expect("bound").port()));
        assert_eq!(server.recv_from(&mut buffer).expect_err("empty").kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn a_port_is_held_while_its_socket_lives() {
        let first = MemorySocket::bind("0.0.0.0:40002").expect("bound");
        assert_eq!(MemorySocket::bind("[::]:40002").expect_err("taken").kind(), io::ErrorKind::AddrInUse);
        drop(first);
        MemorySocket::bind("0.0.0.0:40002").expect("free again");
    }

    #[test]
    fn a_full_queue_loses_datagrams_instead_of_growing() {
        let receiver = MemorySocket::bind("0.0.0.0:40003").expect("bound");
        let sender = MemorySocket::bind("0.0.0.0:0").expect("bound");
        for _ in 0..MAX_QUEUED + 10 {
            sender.send_to(b"x", "127.0.0.1:40003").expect("sent");
        }
        assert_eq!(lock(&receiver.queue).datagrams.len(), MAX_QUEUED);
        // To nobody: lost, no error.
        sender.send_to(b"x", "127.0.0.1:40004").expect("sent");
        assert!(sender.send_to(&vec![0; MAX_DATAGRAM + 1], "127.0.0.1:40003").is_err());
        // And in bytes: big datagrams fill it sooner.
        let big = MemorySocket::bind("0.0.0.0:40005").expect("bound");
        for _ in 0..MAX_QUEUED {
            sender.send_to(&vec![0; MAX_DATAGRAM], "127.0.0.1:40005").expect("sent");
        }
        let waiting = lock(&big.queue);
        assert!(waiting.bytes <= MAX_QUEUED_BYTES && waiting.datagrams.len() == MAX_QUEUED_BYTES / MAX_DATAGRAM);
    }

    #[test]
    fn a_connected_socket_hears_only_its_peer() {
        let a = MemorySocket::bind("0.0.0.0:0").expect("bound");
        let b = MemorySocket::bind("0.0.0.0:0").expect("bound");
        let stranger = MemorySocket::bind("0.0.0.0:0").expect("bound");
        a.set_nonblocking(true).expect("set");
        a.connect(b.local_addr().expect("bound")).expect("connected");
        stranger.send_to(b"no", a.local_addr().expect("bound")).expect("sent");
        b.send_to(b"yes", a.local_addr().expect("bound")).expect("sent");
        let mut buffer = [0u8; 8];
        assert_eq!(a.recv(&mut buffer).expect("came"), 3);
        assert_eq!(&buffer[..3], b"yes");
    }
}
