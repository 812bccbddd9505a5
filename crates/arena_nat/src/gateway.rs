//! The router to ask: the IPv4 default gateway (from the kernel's routing
//! table on Linux, else the usual `.1` of the local network), and the local
//! address that faces it (the address a mapping forwards to).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};

/// The IPv4 default gateway, if one is known.
pub fn default_gateway() -> Option<Ipv4Addr> {
    if let Ok(table) = std::fs::read_to_string("/proc/net/route") {
        return parse_proc_route(&table);
    }
    // Elsewhere, guess the common home layout: the router is `.1` of the
    // local /24 (a wrong guess only means no router answers).
    let local = local_ipv4_toward(Ipv4Addr::new(192, 0, 2, 1)).ok()?;
    let [a, b, c, _] = local.octets();
    Some(Ipv4Addr::new(a, b, c, 1))
}

/// Reads Linux's `/proc/net/route`: the gateway of the first default route.
pub fn parse_proc_route(table: &str) -> Option<Ipv4Addr> {
    for line in table.lines().skip(1).take(1024) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        let (destination, gateway, flags) = (fields[1], fields[2], fields[3]);
        let flags = u32::from_str_radix(flags, 16).unwrap_or(0);
        // RTF_UP | RTF_GATEWAY, destination 0.0.0.0
        if destination == "00000000" && flags & 0x3 == 0x3 {
            let raw = u32::from_str_radix(gateway, 16).ok()?;
            // The kernel prints the address in host byte order (little endian here).
            return Some(Ipv4Addr::from(raw.to_le_bytes()));
        }
    }
    None
}

/// The local address the kernel would send from toward `peer` (no packet
/// is sent: connecting a UDP socket only picks a route).
pub fn local_ipv4_toward(peer: Ipv4Addr) -> io::Result<Ipv4Addr> {
    let socket = UdpSocket::bind(SocketAddr::from(([0, 0, 0, 0], 0)))?;
    socket.connect(SocketAddr::from((peer, 9)))?;
    match socket.local_addr()? {
        SocketAddr::V4(v4) => Ok(*v4.ip()),
        SocketAddr::V6(_) => Err(io::Error::other("not an IPv4 route")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_default_route() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                     eth0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        assert_eq!(parse_proc_route(table), Some(Ipv4Addr::new(192, 168, 1, 1)));
        assert_eq!(parse_proc_route("Iface\n"), None);
        assert_eq!(parse_proc_route("junk\neth0 zz yy xx\n"), None);
    }
}
