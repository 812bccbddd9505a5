//! Addresses and sockets for both address families: one UDP socket bound to
//! `[::]` with `IPV6_V6ONLY` off takes IPv4 peers too (they arrive as
//! `::ffff:a.b.c.d`); everything above the socket sees every address in its
//! canonical form (IPv4 as IPv4), and each send maps it back to the socket's
//! family. Rate limits key IPv6 peers by their /64, the smallest block a
//! home or a host is given, so that rotating addresses inside it buys no
//! extra budget.
//!
//! The errors a UDP socket reports that say nothing about the socket
//! itself, a loop shrugs off instead of stopping ([`is_transient`]): each
//! loses one datagram at most. What a caller does with `WouldBlock` (stop
//! reading for now, or carry on) stays the caller's.

use std::io;
#[cfg(not(target_arch = "wasm32"))]
use std::net::Ipv4Addr;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

#[cfg(not(target_arch = "wasm32"))]
use socket2::{Domain, Protocol, Socket, Type};

/// A UDP socket: the operating system's natively; in a browser, which has
/// none, a socket of the in-page network (`memory.rs`) with the same calls.
#[cfg(not(target_arch = "wasm32"))]
pub type UdpSocket = std::net::UdpSocket;
#[cfg(target_arch = "wasm32")]
pub type UdpSocket = crate::memory::MemorySocket;

/// Binds a UDP socket at `addr`. An unspecified IPv6 address (`[::]`) gives
/// one socket for both families; if this machine has no IPv6 at all, or its
/// IPv6 sockets cannot take IPv4 too (OpenBSD's never do), the same port on
/// `0.0.0.0` instead (IPv4 only). Any other address binds as it is (in a
/// browser, every socket of the in-page network takes both families).
pub fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    match addr {
        #[cfg(not(target_arch = "wasm32"))]
        SocketAddr::V6(v6) if v6.ip().is_unspecified() => match bind_dual_stack(addr)? {
            Some(socket) => Ok(socket),
            None => UdpSocket::bind(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), v6.port())),
        },
        _ => UdpSocket::bind(addr),
    }
}

/// A dual-stack socket at `addr`; `None` where there is no such thing.
#[cfg(not(target_arch = "wasm32"))]
fn bind_dual_stack(addr: SocketAddr) -> io::Result<Option<UdpSocket>> {
    let socket = match Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP)) {
        Ok(socket) => socket,
        Err(e) if no_ipv6(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    if socket.set_only_v6(false).is_err() {
        return Ok(None);
    }
    match socket.bind(&addr.into()) {
        Ok(()) => Ok(Some(socket.into())),
        Err(e) if no_ipv6(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Errors that mean "this machine has no IPv6", not "the port is taken".
#[cfg(not(target_arch = "wasm32"))]
fn no_ipv6(e: &io::Error) -> bool {
    // EAFNOSUPPORT (97 on Linux, 47 on BSDs and macOS, WSAEAFNOSUPPORT 10047).
    matches!(e.kind(), io::ErrorKind::AddrNotAvailable | io::ErrorKind::Unsupported)
        || matches!(e.raw_os_error(), Some(97 | 47 | 10047))
}

/// Whether `socket` takes IPv6 peers (then IPv4 ones are mapped).
pub fn is_v6(socket: &UdpSocket) -> bool {
    socket.local_addr().is_ok_and(|a| a.is_ipv6())
}

/// `addr` in its canonical form: an IPv4-mapped IPv6 address as IPv4.
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => addr,
        },
        SocketAddr::V4(_) => addr,
    }
}

/// `addr` as a socket of this family sends to it: IPv4 mapped into IPv6 on
/// an IPv6 socket; a mapped address unmapped on an IPv4 socket.
pub(crate) fn for_socket(addr: SocketAddr, socket_is_v6: bool) -> SocketAddr {
    match (canonical(addr), socket_is_v6) {
        (SocketAddr::V4(v4), true) => SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port()),
        (canonical, _) => canonical,
    }
}

/// Receives one datagram, its sender in canonical form.
pub fn recv_from(socket: &UdpSocket, buffer: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
    let (len, from) = socket.recv_from(buffer)?;
    Ok((len, canonical(from)))
}

/// Sends one datagram to `to` (any form), mapped to the socket's family.
pub fn send_to(socket: &UdpSocket, datagram: &[u8], to: SocketAddr, socket_is_v6: bool) -> io::Result<usize> {
    socket.send_to(datagram, for_socket(to, socket_is_v6))
}

/// The key rate limits count an address under: an IPv4 address as it is,
/// an IPv6 address by its /64.
pub fn limit_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (!0u128 << 64))),
        },
        IpAddr::V4(_) => ip,
    }
}

/// Whether `ip` is reachable only from this machine or its own networks:
/// loopback, private, link-local and shared (100.64/10) IPv4, unique local
/// and link-local IPv6, and such IPv4 addresses carried in IPv6 (NAT64's
/// 64:ff9b::/96, 6to4's 2002::/16).
/// An internet master listing such an address would aim its clients at
/// their own machine or LAN.
pub fn is_local(ip: IpAddr) -> bool {
    match canonical(SocketAddr::new(ip, 0)).ip() {
        // 100.64/10 is shared address space: a carrier-grade NAT's inside.
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.octets()[0] == 100 && v4.octets()[1] & 0xC0 == 64
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            // An IPv4 address carried in IPv6 reaches that IPv4 host: NAT64's
            // well-known prefix 64:ff9b::/96 (its last 32 bits) and 6to4's
            // 2002::/16 (the 32 bits after the prefix).
            let embedded = |v4: u32| is_local(IpAddr::V4(std::net::Ipv4Addr::from(v4)));
            if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
                return embedded(bits as u32);
            }
            if bits >> 112 == 0x2002 {
                return embedded((bits >> 80) as u32);
            }
            v6.is_loopback() || v6.segments()[0] & 0xFE00 == 0xFC00 || v6.segments()[0] & 0xFFC0 == 0xFE80
        }
    }
}

/// Whether `addr` could be a server someone can join: not port 0, not an
/// unspecified, multicast or broadcast address. (Loopback and private
/// addresses pass: a master on a LAN or on one machine lists them.)
pub fn is_joinable(addr: SocketAddr) -> bool {
    if addr.port() == 0 {
        return false;
    }
    match canonical(addr).ip() {
        // 0.0.0.0/8 is "this network": never a server's address.
        IpAddr::V4(v4) => !(v4.octets()[0] == 0 || v4.is_multicast() || v4.is_broadcast()),
        IpAddr::V6(v6) => !(v6.is_unspecified() || v6.is_multicast()),
    }
}

/// The addresses of a master given as `host`, `host:port`, an IP address or
/// a socket address (`[2001:db8::1]:27950`), with `default_port` when none
/// is given: at most one per family, IPv6 ones only if `ipv6` (the socket
/// takes them). A name looks up DNS: call it off any thread that must not
/// wait. A name that does not resolve gives none.
pub fn resolve(name: &str, default_port: u16, ipv6: bool) -> Vec<SocketAddr> {
    if port_out_of_range(name).is_some() {
        return Vec::new();
    }
    use std::net::ToSocketAddrs;
    let name = name.trim();
    let family_ok = |a: &SocketAddr| ipv6 || a.is_ipv4();
    if let Ok(addr) = name.parse::<SocketAddr>() {
        return vec![canonical(addr)].into_iter().filter(family_ok).collect();
    }
    if let Ok(ip) = name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return vec![canonical(SocketAddr::new(ip, default_port))].into_iter().filter(family_ok).collect();
    }
    let with_port = if name.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        name.to_string()
    } else {
        format!("{name}:{default_port}")
    };
    let found: Vec<SocketAddr> =
        with_port.to_socket_addrs().map(|found| found.map(canonical).filter(family_ok).collect()).unwrap_or_default();
    let mut one_each = Vec::new();
    for family_v4 in [true, false] {
        if let Some(addr) = found.iter().find(|a| a.is_ipv4() == family_v4) {
            one_each.push(*addr);
        }
    }
    one_each
}

/// WSAEMSGSIZE: Windows' way of saying a datagram was longer than the
/// buffer (other systems cut it silently). Anyone can send one: it must
/// not end a loop.
const WSAEMSGSIZE: i32 = 10040;

/// Whether `e` is one to shrug off: nothing to read yet or a read timeout,
/// a signal, an ICMP error of an earlier send (Windows reports those on
/// later reads, and a full socket buffer on sends), a datagram too long
/// for the buffer.
pub fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) || e.raw_os_error() == Some(WSAEMSGSIZE)
}

/// `ADDRESS:PORT` as a flag gives it (`--bind`): a socket address, with a
/// port past 65535 said to be one (the standard parser calls it only
/// "invalid socket address syntax").
pub fn parse_socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| match port_out_of_range(text) {
        Some(port) => format!("port {port} is out of range (a UDP port is 0-65535)"),
        None => "expected ADDRESS:PORT, such as [::]:27015 or 0.0.0.0:27015".to_string(),
    })
}

/// The port of `text` ("host:port", "1.2.3.4:port", "[v6]:port") when it
/// is a number past 65535: a typing slip to point out as such, not to
/// send to a name lookup (which would call it an unknown name).
pub fn port_out_of_range(text: &str) -> Option<u64> {
    let (host, port) = text.trim().rsplit_once(':')?;
    // A bare IPv6 address ends in a group of up to 4 hex digits, not a port.
    if host.contains(':') && !host.ends_with(']') {
        return None;
    }
    let port: u64 = port.parse().ok()?;
    (port > u64::from(u16::MAX)).then_some(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn mapped_addresses_are_ipv4_above_the_socket_and_mapped_again_below() {
        assert_eq!(canonical(addr("[::ffff:192.0.2.7]:27015")), addr("192.0.2.7:27015"));
        assert_eq!(canonical(addr("[2001:db8::1]:27015")), addr("[2001:db8::1]:27015"));
        assert_eq!(for_socket(addr("192.0.2.7:27015"), true), addr("[::ffff:192.0.2.7]:27015"));
        assert_eq!(for_socket(addr("[::ffff:192.0.2.7]:27015"), false), addr("192.0.2.7:27015"));
        assert_eq!(for_socket(addr("[2001:db8::1]:5"), true), addr("[2001:db8::1]:5"));
    }

    #[test]
    fn ipv6_peers_are_limited_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().expect("ip");
        let c: IpAddr = "2001:db8:1:3::1".parse().expect("ip");
        assert_eq!(limit_key(a), limit_key(b));
        assert_ne!(limit_key(a), limit_key(c));
        assert_eq!(limit_key("::ffff:10.0.0.1".parse().expect("ip")), "10.0.0.1".parse::<IpAddr>().expect("ip"));
    }

    #[test]
    fn nonsense_addresses_are_not_joinable() {
        assert!(is_local("10.1.2.3".parse().expect("ip")) && is_local("::1".parse().expect("ip")));
        assert!(is_local("fd00::2".parse().expect("ip")) && is_local("fe80::1".parse().expect("ip")));
        assert!(is_local("::ffff:192.168.1.2".parse().expect("ip")));
        assert!(!is_local("192.0.2.1".parse().expect("ip")) && !is_local("2001:db8::1".parse().expect("ip")));
        for bad in [
            "0.0.0.0:27015",
            "0.1.2.3:27015",
            "192.0.2.1:0",
            "224.0.0.1:27015",
            "255.255.255.255:27015",
            "[::]:27015",
            "[ff02::1]:27015",
        ] {
            assert!(!is_joinable(addr(bad)), "{bad}");
        }
        for good in ["127.0.0.1:27015", "192.168.1.2:27015", "[::1]:27015", "[2001:db8::1]:27015"] {
            assert!(is_joinable(addr(good)), "{good}");
        }
    }

    #[test]
    fn names_take_the_default_port_and_the_sockets_families() {
        assert_eq!(resolve("192.0.2.1", 27950, true), vec![addr("192.0.2.1:27950")]);
        assert_eq!(resolve("192.0.2.1:30000", 27950, false), vec![addr("192.0.2.1:30000")]);
        assert_eq!(resolve("[2001:db8::1]:30000", 27950, true), vec![addr("[2001:db8::1]:30000")]);
        assert_eq!(resolve("2001:db8::1", 27950, true), vec![addr("[2001:db8::1]:27950")]);
        assert_eq!(resolve("[::ffff:192.0.2.1]:5", 27950, false), vec![addr("192.0.2.1:5")], "mapped: IPv4");
        assert!(resolve("[2001:db8::1]:30000", 27950, false).is_empty(), "an IPv4 socket cannot reach it");
        assert!(resolve("localhost", 27950, true).iter().all(|a| a.port() == 27950 && a.ip().is_loopback()));
        assert!(resolve("no-such-host.invalid", 27950, true).is_empty());
    }

    #[test]
    fn one_socket_on_any_address_takes_both_families() {
        let socket = bind_udp(addr("[::]:0")).expect("a socket");
        let port = socket.local_addr().expect("bound").port();
        socket.set_read_timeout(Some(std::time::Duration::from_secs(2))).expect("timeout");
        let v4 = UdpSocket::bind("127.0.0.1:0").expect("an IPv4 socket");
        v4.send_to(b"four", ("127.0.0.1", port)).expect("sent");
        let mut buffer = [0u8; 16];
        let (len, from) = recv_from(&socket, &mut buffer).expect("received over IPv4");
        assert_eq!(&buffer[..len], b"four");
        assert_eq!(from, v4.local_addr().expect("bound"), "the sender in IPv4 form");
        send_to(&socket, b"back", from, is_v6(&socket)).expect("answered over IPv4");
        v4.set_read_timeout(Some(std::time::Duration::from_secs(2))).expect("timeout");
        let (len, _) = v4.recv_from(&mut buffer).expect("the answer");
        assert_eq!(&buffer[..len], b"back");
        if is_v6(&socket)
            && let Ok(v6) = UdpSocket::bind("[::1]:0")
        {
            v6.send_to(b"six", ("::1", port)).expect("sent");
            let (len, from) = recv_from(&socket, &mut buffer).expect("received over IPv6");
            assert_eq!(&buffer[..len], b"six");
            assert!(from.is_ipv6());
        }
    }

    #[test]
    fn a_port_past_65535_is_told_apart_from_an_unknown_name() {
        assert_eq!(port_out_of_range("example.org:70000"), Some(70000));
        assert_eq!(port_out_of_range("127.0.0.1:65536"), Some(65536));
        assert_eq!(port_out_of_range("[2001:db8::1]:99999"), Some(99999));
        assert_eq!(port_out_of_range("127.0.0.1:65535"), None);
        assert_eq!(port_out_of_range("2001:db8::1"), None);
        assert_eq!(port_out_of_range("example.org"), None);
        assert!(resolve("127.0.0.1:70000", 27015, true).is_empty());
    }

    #[test]
    fn lost_datagrams_are_shrugged_off_and_broken_sockets_are_not() {
        for kind in [io::ErrorKind::WouldBlock, io::ErrorKind::ConnectionReset, io::ErrorKind::Interrupted] {
            assert!(is_transient(&io::Error::from(kind)), "{kind:?}");
        }
        assert!(is_transient(&io::Error::from_raw_os_error(WSAEMSGSIZE)));
        assert!(!is_transient(&io::Error::from(io::ErrorKind::PermissionDenied)));
        assert!(!is_transient(&io::Error::from(io::ErrorKind::AddrNotAvailable)));
    }

    #[test]
    fn local_addresses_include_translated_and_shared_ones() {
        let local = |text: &str| is_local(text.parse().unwrap_or_else(|e| panic!("{text}: {e}")));
        for text in [
            "64:ff9b::c0a8:101", // NAT64 of 192.168.1.1
            "64:ff9b::7f00:1",   // NAT64 of 127.0.0.1
            "2002:c0a8:101::1",  // 6to4 of 192.168.1.1
            "2002:a00:1::1",     // 6to4 of 10.0.0.1
            "100.64.0.1",        // shared address space (carrier-grade NAT)
            "100.127.255.254",
        ] {
            assert!(local(text), "{text} is not public");
        }
        for text in ["64:ff9b::808:808", "2002:808:808::1", "100.128.0.1", "8.8.8.8", "2001:db8::1"] {
            assert!(!local(text), "{text} is public");
        }
    }
}
