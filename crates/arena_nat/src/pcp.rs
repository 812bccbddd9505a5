//! PCP (RFC 6887) MAP datagrams, pure: a request for a UDP mapping (a
//! lifetime of 0 removes it) and its answer. PCP shares NAT-PMP's port; a
//! router that speaks only NAT-PMP answers with version 0 and result 1.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const VERSION: u8 = 2;
const OP_MAP: u8 = 1;
const ANSWER_BIT: u8 = 0x80;
const PROTOCOL_UDP: u8 = 17;
/// Bytes of a MAP request and of its answer.
pub const MAP_BYTES: usize = 60;
/// Longest datagram a PCP server sends (RFC 6887 §7).
pub const MAX_ANSWER_BYTES: usize = 1100;

/// Why an answer is not one this side accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcpError {
    Malformed,
    /// The answer belongs to another request (its nonce or port differs).
    NotOurs,
    /// A NAT-PMP router (it answered PCP with its own version).
    NatPmpOnly,
    /// The router's result code (2 not authorized, 8 no resources,
    /// 11 cannot provide external, 12 address mismatch, ...).
    Refused(u8),
}

impl std::fmt::Display for PcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PcpError::Malformed => f.write_str("a malformed PCP answer"),
            PcpError::NotOurs => f.write_str("a PCP answer to another request"),
            PcpError::NatPmpOnly => f.write_str("the router speaks NAT-PMP, not PCP"),
            PcpError::Refused(code) => write!(f, "the router refused (PCP result {code}: {})", result_text(*code)),
        }
    }
}

fn result_text(code: u8) -> &'static str {
    match code {
        1 => "unsupported version",
        2 => "not authorized",
        3 => "malformed request",
        4 => "unsupported opcode",
        5 => "unsupported option",
        6 => "malformed option",
        7 => "network failure",
        8 => "no resources",
        9 => "unsupported protocol",
        10 => "user exceeded quota",
        11 => "cannot provide external",
        12 => "address mismatch",
        13 => "excessive remote peers",
        _ => "unknown",
    }
}

/// An IP address as PCP writes it: IPv4 as IPv4-mapped IPv6.
fn mapped(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// A MAP request from `client` (the address the datagram leaves from: the
/// router checks it) for UDP `internal_port`, suggesting `external_port`,
/// for `lifetime_s` seconds, identified by `nonce` (the same nonce renews
/// or removes the mapping).
pub fn map_request(
    client: IpAddr,
    nonce: [u8; 12],
    internal_port: u16,
    external_port: u16,
    lifetime_s: u32,
) -> [u8; MAP_BYTES] {
    let mut d = [0u8; MAP_BYTES];
    d[0] = VERSION;
    d[1] = OP_MAP;
    d[4..8].copy_from_slice(&lifetime_s.to_be_bytes());
    d[8..24].copy_from_slice(&mapped(client));
    d[24..36].copy_from_slice(&nonce);
    d[36] = PROTOCOL_UDP;
    d[40..42].copy_from_slice(&internal_port.to_be_bytes());
    d[42..44].copy_from_slice(&external_port.to_be_bytes());
    // Any external address of the client's family.
    let any = if client.is_ipv4() { Ipv4Addr::UNSPECIFIED.to_ipv6_mapped().octets() } else { [0; 16] };
    d[44..60].copy_from_slice(&any);
    d
}

/// A mapping the router granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    pub external: IpAddr,
    pub external_port: u16,
    pub lifetime_s: u32,
}

/// Reads the answer to a [`map_request`] with this nonce and port.
pub fn parse_map(answer: &[u8], nonce: [u8; 12], internal_port: u16) -> Result<Granted, PcpError> {
    if answer.len() >= 4 && answer[0] == 0 {
        return Err(PcpError::NatPmpOnly);
    }
    if answer.len() < MAP_BYTES
        || answer.len() > MAX_ANSWER_BYTES
        || answer[0] != VERSION
        || answer[1] != ANSWER_BIT | OP_MAP
    {
        return Err(PcpError::Malformed);
    }
    if answer[24..36] != nonce
        || answer[36] != PROTOCOL_UDP
        || u16::from_be_bytes([answer[40], answer[41]]) != internal_port
    {
        return Err(PcpError::NotOurs);
    }
    if answer[3] != 0 {
        return Err(PcpError::Refused(answer[3]));
    }
    let mut ip = [0u8; 16];
    ip.copy_from_slice(&answer[44..60]);
    let v6 = Ipv6Addr::from(ip);
    let external = v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6));
    Ok(Granted {
        external,
        external_port: u16::from_be_bytes([answer[42], answer[43]]),
        lifetime_s: u32::from_be_bytes([answer[4], answer[5], answer[6], answer[7]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_to(request: &[u8; MAP_BYTES], result: u8) -> [u8; MAP_BYTES] {
        let mut a = *request;
        a[1] |= ANSWER_BIT;
        a[2] = 0;
        a[3] = result;
        a[8..24].fill(0);
        a[44..60].copy_from_slice(&Ipv4Addr::new(11, 0, 0, 2).to_ipv6_mapped().octets());
        a
    }

    #[test]
    fn request_and_answer() {
        let nonce = [7; 12];
        let request = map_request(IpAddr::V4(Ipv4Addr::new(192, 168, 1, 10)), nonce, 27015, 27015, 120);
        assert_eq!(&request[..4], &[2, 1, 0, 0]);
        assert_eq!(&request[8..24], &Ipv4Addr::new(192, 168, 1, 10).to_ipv6_mapped().octets());
        let granted = parse_map(&answer_to(&request, 0), nonce, 27015).unwrap();
        assert_eq!(granted.external, IpAddr::V4(Ipv4Addr::new(11, 0, 0, 2)));
        assert_eq!((granted.external_port, granted.lifetime_s), (27015, 120));
        assert_eq!(parse_map(&answer_to(&request, 2), nonce, 27015), Err(PcpError::Refused(2)));
        assert_eq!(parse_map(&answer_to(&request, 0), [8; 12], 27015), Err(PcpError::NotOurs));
        assert_eq!(parse_map(&[0, 129, 0, 1], nonce, 27015), Err(PcpError::NatPmpOnly));
        assert_eq!(parse_map(&request[..59], nonce, 27015), Err(PcpError::Malformed));
    }
}
