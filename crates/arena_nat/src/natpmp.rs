//! NAT-PMP (RFC 6886) datagrams, pure: the external-address request, the
//! UDP mapping request (a lifetime of 0 removes a mapping) and their
//! answers. The router listens on UDP port 5351 of the gateway.

use std::net::Ipv4Addr;

/// The port NAT-PMP and PCP servers listen on.
pub const SERVER_PORT: u16 = 5351;
const VERSION: u8 = 0;
const OP_EXTERNAL_ADDRESS: u8 = 0;
const OP_MAP_UDP: u8 = 1;
/// Answers carry the request's opcode plus this.
const OP_ANSWER: u8 = 128;

/// Why an answer is not one this side accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NatPmpError {
    /// Too short, another version, or another opcode than asked.
    Malformed,
    /// The router's result code (2 not authorized, 3 network failure,
    /// 4 out of resources, 5 unsupported opcode, 1 unsupported version).
    Refused(u16),
}

impl std::fmt::Display for NatPmpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NatPmpError::Malformed => f.write_str("a malformed NAT-PMP answer"),
            NatPmpError::Refused(code) => {
                write!(f, "the router refused (NAT-PMP result {code}: {})", result_text(*code))
            }
        }
    }
}

fn result_text(code: u16) -> &'static str {
    match code {
        1 => "unsupported version",
        2 => "not authorized",
        3 => "network failure",
        4 => "out of resources",
        5 => "unsupported opcode",
        _ => "unknown",
    }
}

/// The request for the router's external address.
pub fn external_address_request() -> [u8; 2] {
    [VERSION, OP_EXTERNAL_ADDRESS]
}

/// The request to map UDP `internal_port` (to `external_port` if free) for
/// `lifetime_s` seconds; 0 seconds (and external port 0) removes it.
pub fn map_request(internal_port: u16, external_port: u16, lifetime_s: u32) -> [u8; 12] {
    let mut d = [0u8; 12];
    d[0] = VERSION;
    d[1] = OP_MAP_UDP;
    d[4..6].copy_from_slice(&internal_port.to_be_bytes());
    d[6..8].copy_from_slice(&external_port.to_be_bytes());
    d[8..12].copy_from_slice(&lifetime_s.to_be_bytes());
    d
}

fn header(answer: &[u8], op: u8, len: usize) -> Result<(), NatPmpError> {
    if answer.len() < len || answer[0] != VERSION || answer[1] != OP_ANSWER + op {
        // A NAT-PMP router answers a request of another version with its
        // own version and result 1 in a short answer: read the code if there.
        if answer.len() >= 4 && answer[1] >= OP_ANSWER {
            let code = u16::from_be_bytes([answer[2], answer[3]]);
            if code != 0 {
                return Err(NatPmpError::Refused(code));
            }
        }
        return Err(NatPmpError::Malformed);
    }
    match u16::from_be_bytes([answer[2], answer[3]]) {
        0 => Ok(()),
        code => Err(NatPmpError::Refused(code)),
    }
}

/// Reads the answer to [`external_address_request`].
pub fn parse_external_address(answer: &[u8]) -> Result<Ipv4Addr, NatPmpError> {
    header(answer, OP_EXTERNAL_ADDRESS, 12)?;
    Ok(Ipv4Addr::new(answer[8], answer[9], answer[10], answer[11]))
}

/// A mapping the router granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    pub internal_port: u16,
    pub external_port: u16,
    pub lifetime_s: u32,
}

/// Reads the answer to [`map_request`] for `internal_port`.
pub fn parse_map(answer: &[u8], internal_port: u16) -> Result<Granted, NatPmpError> {
    header(answer, OP_MAP_UDP, 16)?;
    let granted = Granted {
        internal_port: u16::from_be_bytes([answer[8], answer[9]]),
        external_port: u16::from_be_bytes([answer[10], answer[11]]),
        lifetime_s: u32::from_be_bytes([answer[12], answer[13], answer[14], answer[15]]),
    };
    if granted.internal_port != internal_port {
        return Err(NatPmpError::Malformed);
    }
    Ok(granted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_request_layout() {
        assert_eq!(map_request(27015, 27016, 7200), [0, 1, 0, 0, 0x69, 0x87, 0x69, 0x88, 0, 0, 0x1c, 0x20]);
    }

    #[test]
    fn reads_answers_and_refusals() {
        let ok = [0, 129, 0, 0, 0, 0, 0, 9, 0x69, 0x87, 0x69, 0x88, 0, 0, 0x1c, 0x20];
        assert_eq!(parse_map(&ok, 27015), Ok(Granted { internal_port: 27015, external_port: 27016, lifetime_s: 7200 }));
        assert_eq!(parse_map(&ok, 1), Err(NatPmpError::Malformed));
        let mut refused = ok;
        refused[3] = 2;
        assert_eq!(parse_map(&refused, 27015), Err(NatPmpError::Refused(2)));
        assert_eq!(parse_map(&ok[..15], 27015), Err(NatPmpError::Malformed));
        let address = [0, 128, 0, 0, 0, 0, 0, 1, 11, 1, 2, 3];
        assert_eq!(parse_external_address(&address), Ok(Ipv4Addr::new(11, 1, 2, 3)));
        assert_eq!(parse_external_address(&[]), Err(NatPmpError::Malformed));
        // A PCP answer to a NAT-PMP request is not taken for one.
        assert!(parse_map(&[2, 129, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 27015).is_err());
    }
}
