//! A join link for a browser: the fragment `#join=ADDRESS&cert=HASH` that
//! a server with a WebTransport endpoint prints and its host's menu shows,
//! and that the page reads to join. ADDRESS is the endpoint's (an IP
//! address and port: the page has no name lookup of its own for a
//! stranger's text); HASH the SHA-256 of its certificate in hex, which
//! the browser pins.

use std::net::SocketAddr;

/// The path a WebTransport session asks for (`https://ADDRESS/arena`).
pub const SESSION_PATH: &str = "/arena";

/// A join link's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinLink {
    pub addr: SocketAddr,
    pub cert: [u8; 32],
}

/// The fragment (with its `#`) joining `addr` with the certificate `cert`
/// (64 hex digits).
pub fn join_fragment(addr: SocketAddr, cert_hex: &str) -> String {
    format!("#join={addr}&cert={cert_hex}")
}

/// A certificate hash from 64 hex digits.
pub fn parse_cert(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The hash as the link writes it.
pub fn cert_hex(cert: &[u8; 32]) -> String {
    cert.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a join link's parts were not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinLinkError {
    /// `join=` is not an IP address and port.
    Address,
    /// `cert=` is missing or not 64 hex digits.
    Cert,
}

/// Reads the parts after `join=` and `cert=` (in the link's `&` pieces).
pub fn parse_join(addr: &str, cert: Option<&str>) -> Result<JoinLink, JoinLinkError> {
    let addr: SocketAddr = addr.parse().map_err(|_| JoinLinkError::Address)?;
    if addr.port() == 0 {
        return Err(JoinLinkError::Address);
    }
    let cert = cert.and_then(parse_cert).ok_or(JoinLinkError::Cert)?;
    Ok(JoinLink { addr, cert })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_link_reads_back() {
        let cert = [0xAB; 32];
        for addr in ["127.0.0.1:27961", "[2001:db8::1]:443"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let fragment = join_fragment(addr, &cert_hex(&cert));
            let rest = fragment.strip_prefix("#join=").unwrap();
            let (a, c) = rest.split_once("&cert=").unwrap();
            assert_eq!(parse_join(a, Some(c)), Ok(JoinLink { addr, cert }));
        }
        assert_eq!(parse_join("example.com:1", Some(&"0".repeat(64))), Err(JoinLinkError::Address));
        assert_eq!(parse_join("1.2.3.4:0", Some(&"0".repeat(64))), Err(JoinLinkError::Address));
        assert_eq!(parse_join("1.2.3.4:5", None), Err(JoinLinkError::Cert));
        assert_eq!(parse_join("1.2.3.4:5", Some("+0")), Err(JoinLinkError::Cert));
        assert_eq!(parse_cert(&"é".repeat(32)), None);
    }
}
