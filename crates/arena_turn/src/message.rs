//! The STUN codec (RFC 8489) with TURN's methods and attributes (RFC 8656):
//! a bounded, panic-free reader of one message per datagram, the checks of
//! MESSAGE-INTEGRITY and FINGERPRINT, and a writer for the requests and
//! indications a TURN client sends.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::credentials::{hmac_sha1, hmac_sha1_matches};

/// The fixed second word of every STUN message.
pub(crate) const MAGIC_COOKIE: u32 = 0x2112_A442;
/// A STUN header: type, length, cookie, transaction ID.
pub(crate) const HEADER_LEN: usize = 20;
/// The largest datagram read or written: anything longer is refused.
pub const MAX_DATAGRAM: usize = 1500;
/// FINGERPRINT's CRC-32 is XORed with this ("STUN").
const FINGERPRINT_XOR: u32 = 0x5354_554E;
/// Longest USERNAME (RFC 8489 §14.3) and REALM or NONCE (§14.9, §14.10) read.
const MAX_USERNAME: usize = 513;
const MAX_REALM_OR_NONCE: usize = 763;
/// Longest ERROR-CODE reason phrase kept (characters).
const MAX_REASON_CHARS: usize = 128;

/// A 96-bit transaction ID.
pub(crate) type TransactionId = [u8; 12];

/// The methods a TURN client uses.
pub(crate) mod method {
    pub(crate) const ALLOCATE: u16 = 0x003;
    pub(crate) const REFRESH: u16 = 0x004;
    pub(crate) const SEND: u16 = 0x006;
    pub(crate) const DATA: u16 = 0x007;
    pub(crate) const CREATE_PERMISSION: u16 = 0x008;
    pub(crate) const CHANNEL_BIND: u16 = 0x009;
}

/// Attribute types.
pub(crate) mod attr {
    pub(crate) const MAPPED_ADDRESS: u16 = 0x0001;
    pub(crate) const USERNAME: u16 = 0x0006;
    pub(crate) const MESSAGE_INTEGRITY: u16 = 0x0008;
    pub(crate) const ERROR_CODE: u16 = 0x0009;
    pub(crate) const UNKNOWN_ATTRIBUTES: u16 = 0x000A;
    pub(crate) const CHANNEL_NUMBER: u16 = 0x000C;
    pub(crate) const LIFETIME: u16 = 0x000D;
    pub(crate) const XOR_PEER_ADDRESS: u16 = 0x0012;
    pub(crate) const DATA: u16 = 0x0013;
    pub(crate) const REALM: u16 = 0x0014;
    pub(crate) const NONCE: u16 = 0x0015;
    pub(crate) const XOR_RELAYED_ADDRESS: u16 = 0x0016;
    pub(crate) const REQUESTED_ADDRESS_FAMILY: u16 = 0x0017;
    pub(crate) const EVEN_PORT: u16 = 0x0018;
    pub(crate) const REQUESTED_TRANSPORT: u16 = 0x0019;
    pub(crate) const DONT_FRAGMENT: u16 = 0x001A;
    pub(crate) const MESSAGE_INTEGRITY_SHA256: u16 = 0x001C;
    pub(crate) const PASSWORD_ALGORITHM: u16 = 0x001D;
    pub(crate) const USERHASH: u16 = 0x001E;
    pub(crate) const XOR_MAPPED_ADDRESS: u16 = 0x0020;
    pub(crate) const RESERVATION_TOKEN: u16 = 0x0022;
    pub(crate) const FINGERPRINT: u16 = 0x8028;
}

/// REQUESTED-TRANSPORT's protocol number for UDP.
pub(crate) const TRANSPORT_UDP: u8 = 17;

/// A message's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Request,
    Indication,
    Success,
    Error,
}

/// The 16-bit message type of `method` in `class` (RFC 8489 §5: the class
/// bits C0 and C1 sit between the method's bits).
pub(crate) fn message_type(method: u16, class: Class) -> u16 {
    let class_bits = match class {
        Class::Request => 0x0000,
        Class::Indication => 0x0010,
        Class::Success => 0x0100,
        Class::Error => 0x0110,
    };
    (method & 0x000F) | ((method & 0x0070) << 1) | ((method & 0x0F80) << 2) | class_bits
}

fn split_type(t: u16) -> (u16, Class) {
    let method = (t & 0x000F) | ((t & 0x00E0) >> 1) | ((t & 0x3E00) >> 2);
    let class = match t & 0x0110 {
        0x0000 => Class::Request,
        0x0010 => Class::Indication,
        0x0100 => Class::Success,
        _ => Class::Error,
    };
    (method, class)
}

/// Whether `datagram` starts like a STUN message: the two top bits clear,
/// the magic cookie, a length that is a multiple of 4 (its attributes are
/// not checked).
pub(crate) fn looks_like_stun(datagram: &[u8]) -> bool {
    datagram.len() >= HEADER_LEN
        && datagram[0] & 0xC0 == 0
        && datagram[4..8] == MAGIC_COOKIE.to_be_bytes()
        && u16::from_be_bytes([datagram[2], datagram[3]]).is_multiple_of(4)
}

/// An ERROR-CODE: the number (300..=699) and the server's reason, cleaned
/// of control characters and cut to a bounded length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ErrorCode {
    pub(crate) code: u16,
    pub(crate) reason: String,
}

/// One parsed STUN message. Only the first of repeated attributes counts;
/// attributes after MESSAGE-INTEGRITY other than FINGERPRINT are ignored.
#[derive(Debug)]
pub(crate) struct Message<'a> {
    pub(crate) method: u16,
    pub(crate) class: Class,
    pub(crate) transaction: TransactionId,
    pub(crate) xor_mapped: Option<SocketAddr>,
    pub(crate) xor_relayed: Option<SocketAddr>,
    pub(crate) xor_peer: Option<SocketAddr>,
    pub(crate) lifetime: Option<u32>,
    pub(crate) channel: Option<u16>,
    pub(crate) data: Option<&'a [u8]>,
    pub(crate) error: Option<ErrorCode>,
    pub(crate) realm: Option<&'a [u8]>,
    pub(crate) nonce: Option<&'a [u8]>,
    pub(crate) username: Option<&'a [u8]>,
    /// A comprehension-required attribute (type below 0x8000) this reader
    /// does not know: a response carrying one is discarded.
    pub(crate) unknown_required: bool,
    /// Offset of the MESSAGE-INTEGRITY attribute's header and its value.
    integrity: Option<(usize, &'a [u8])>,
    raw: &'a [u8],
}

/// Whether a comprehension-required attribute type is one this reader
/// knows (read or deliberately ignored).
fn known_required(kind: u16) -> bool {
    matches!(
        kind,
        attr::MAPPED_ADDRESS
            | attr::USERNAME
            | attr::MESSAGE_INTEGRITY
            | attr::ERROR_CODE
            | attr::UNKNOWN_ATTRIBUTES
            | attr::CHANNEL_NUMBER
            | attr::LIFETIME
            | attr::XOR_PEER_ADDRESS
            | attr::DATA
            | attr::REALM
            | attr::NONCE
            | attr::XOR_RELAYED_ADDRESS
            | attr::REQUESTED_ADDRESS_FAMILY
            | attr::EVEN_PORT
            | attr::REQUESTED_TRANSPORT
            | attr::DONT_FRAGMENT
            | attr::MESSAGE_INTEGRITY_SHA256
            | attr::PASSWORD_ALGORITHM
            | attr::USERHASH
            | attr::XOR_MAPPED_ADDRESS
            | attr::RESERVATION_TOKEN
    )
}

impl<'a> Message<'a> {
    /// Reads one STUN message filling the whole datagram, or `None`: a
    /// datagram over [`MAX_DATAGRAM`], a bad header, a length that does not
    /// match, an attribute running past the end, a known attribute of the
    /// wrong size, a wrong FINGERPRINT or anything after it.
    pub(crate) fn parse(raw: &'a [u8]) -> Option<Self> {
        if raw.len() > MAX_DATAGRAM || !looks_like_stun(raw) {
            return None;
        }
        let length = usize::from(u16::from_be_bytes([raw[2], raw[3]]));
        if HEADER_LEN + length != raw.len() {
            return None;
        }
        let (method, class) = split_type(u16::from_be_bytes([raw[0], raw[1]]));
        let mut transaction = [0; 12];
        transaction.copy_from_slice(&raw[8..HEADER_LEN]);
        let mut message = Message {
            method,
            class,
            transaction,
            xor_mapped: None,
            xor_relayed: None,
            xor_peer: None,
            lifetime: None,
            channel: None,
            data: None,
            error: None,
            realm: None,
            nonce: None,
            username: None,
            unknown_required: false,
            integrity: None,
            raw,
        };
        let mut at = HEADER_LEN;
        while at < raw.len() {
            let header = raw.get(at..at + 4)?;
            let kind = u16::from_be_bytes([header[0], header[1]]);
            let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
            let padded = len.div_ceil(4) * 4;
            let value = raw.get(at + 4..at + 4 + len)?;
            if at + 4 + padded > raw.len() {
                return None;
            }
            if kind == attr::FINGERPRINT {
                // The last attribute, over everything before it.
                if len != 4 || at + 8 != raw.len() {
                    return None;
                }
                let sent = u32::from_be_bytes([value[0], value[1], value[2], value[3]]);
                if crc32fast::hash(&raw[..at]) ^ FINGERPRINT_XOR != sent {
                    return None;
                }
            } else if message.integrity.is_none() {
                message.read_attribute(kind, value, at)?;
            }
            at += 4 + padded;
        }
        Some(message)
    }

    fn read_attribute(&mut self, kind: u16, value: &'a [u8], at: usize) -> Option<()> {
        let tid = self.transaction;
        match kind {
            attr::XOR_MAPPED_ADDRESS => first(&mut self.xor_mapped, xor_address(value, &tid)?),
            attr::XOR_RELAYED_ADDRESS => first(&mut self.xor_relayed, xor_address(value, &tid)?),
            attr::XOR_PEER_ADDRESS => first(&mut self.xor_peer, xor_address(value, &tid)?),
            attr::LIFETIME => first(&mut self.lifetime, u32::from_be_bytes(value.try_into().ok()?)),
            attr::CHANNEL_NUMBER => {
                let bytes: [u8; 4] = value.try_into().ok()?;
                first(&mut self.channel, u16::from_be_bytes([bytes[0], bytes[1]]));
            }
            attr::DATA => first(&mut self.data, value),
            attr::ERROR_CODE => first(&mut self.error, error_code(value)?),
            attr::REALM if value.len() <= MAX_REALM_OR_NONCE => first(&mut self.realm, value),
            attr::NONCE if value.len() <= MAX_REALM_OR_NONCE => first(&mut self.nonce, value),
            attr::USERNAME if value.len() <= MAX_USERNAME => first(&mut self.username, value),
            attr::REALM | attr::NONCE | attr::USERNAME => return None,
            attr::MESSAGE_INTEGRITY => {
                if value.len() != 20 {
                    return None;
                }
                self.integrity = Some((at, value));
            }
            _ if kind < 0x8000 && !known_required(kind) => self.unknown_required = true,
            _ => {}
        }
        Some(())
    }

    /// Whether the message carries MESSAGE-INTEGRITY.
    pub(crate) fn has_integrity(&self) -> bool {
        self.integrity.is_some()
    }

    /// Whether MESSAGE-INTEGRITY is present and is the HMAC-SHA1 under
    /// `key` of the message up to it, with the header's length counting
    /// to its end (RFC 8489 §14.5).
    pub(crate) fn integrity_ok(&self, key: &[u8]) -> bool {
        let Some((at, tag)) = self.integrity else { return false };
        let Ok(length) = u16::try_from(at + 24 - HEADER_LEN) else { return false };
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&self.raw[..HEADER_LEN]);
        header[2..4].copy_from_slice(&length.to_be_bytes());
        hmac_sha1_matches(key, &[&header, &self.raw[HEADER_LEN..at]], tag)
    }
}

fn first<T>(slot: &mut Option<T>, value: T) {
    if slot.is_none() {
        *slot = Some(value);
    }
}

/// An XOR-…-ADDRESS value: family, port XOR the cookie's top half, address
/// XOR the cookie (and, for IPv6, the transaction ID).
fn xor_address(value: &[u8], transaction: &TransactionId) -> Option<SocketAddr> {
    let cookie = MAGIC_COOKIE.to_be_bytes();
    let port = u16::from_be_bytes([*value.get(2)?, *value.get(3)?]) ^ (MAGIC_COOKIE >> 16) as u16;
    match (*value.get(1)?, value.len()) {
        (0x01, 8) => {
            let mut ip = [0; 4];
            for (i, byte) in ip.iter_mut().enumerate() {
                *byte = value[4 + i] ^ cookie[i];
            }
            Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port))
        }
        (0x02, 20) => {
            let mut ip = [0; 16];
            for (i, byte) in ip.iter_mut().enumerate() {
                let mask = if i < 4 { cookie[i] } else { transaction[i - 4] };
                *byte = value[4 + i] ^ mask;
            }
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port))
        }
        _ => None,
    }
}

fn error_code(value: &[u8]) -> Option<ErrorCode> {
    let class = u16::from(*value.get(2)? & 0x07);
    let number = u16::from(*value.get(3)?);
    if !(3..=6).contains(&class) || number > 99 {
        return None;
    }
    let reason =
        String::from_utf8_lossy(value.get(4..)?).chars().filter(|c| !c.is_control()).take(MAX_REASON_CHARS).collect();
    Some(ErrorCode { code: class * 100 + number, reason })
}

/// Writes one message: attributes in the order added, each padded to 4
/// bytes with zeros; the header's length set when finished.
pub(crate) struct Builder {
    buf: Vec<u8>,
}

impl Builder {
    pub(crate) fn new(method: u16, class: Class, transaction: &TransactionId) -> Self {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&message_type(method, class).to_be_bytes());
        buf.extend_from_slice(&[0, 0]);
        buf.extend_from_slice(&MAGIC_COOKIE.to_be_bytes());
        buf.extend_from_slice(transaction);
        Self { buf }
    }

    /// An attribute; values longer than a datagram are the caller's bug and
    /// are cut (the callers check sizes first).
    pub(crate) fn attribute(&mut self, kind: u16, value: &[u8]) -> &mut Self {
        let value = &value[..value.len().min(MAX_DATAGRAM)];
        self.buf.extend_from_slice(&kind.to_be_bytes());
        self.buf.extend_from_slice(&(value.len() as u16).to_be_bytes());
        self.buf.extend_from_slice(value);
        self.buf.resize(self.buf.len().div_ceil(4) * 4, 0);
        self
    }

    pub(crate) fn u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.attribute(kind, &value.to_be_bytes())
    }

    pub(crate) fn xor_address(&mut self, kind: u16, addr: SocketAddr) -> &mut Self {
        let cookie = MAGIC_COOKIE.to_be_bytes();
        let mut value = Vec::with_capacity(20);
        let port = addr.port() ^ (MAGIC_COOKIE >> 16) as u16;
        match addr.ip() {
            IpAddr::V4(ip) => {
                value.extend_from_slice(&[0, 0x01]);
                value.extend_from_slice(&port.to_be_bytes());
                value.extend(ip.octets().iter().zip(cookie).map(|(a, b)| a ^ b));
            }
            IpAddr::V6(ip) => {
                let mut mask = [0; 16];
                mask[..4].copy_from_slice(&cookie);
                mask[4..].copy_from_slice(&self.buf[8..HEADER_LEN]);
                value.extend_from_slice(&[0, 0x02]);
                value.extend_from_slice(&port.to_be_bytes());
                value.extend(ip.octets().iter().zip(mask).map(|(a, b)| a ^ b));
            }
        }
        self.attribute(kind, &value)
    }

    fn set_length(&mut self, extra: usize) {
        let length = (self.buf.len() + extra - HEADER_LEN) as u16;
        self.buf[2..4].copy_from_slice(&length.to_be_bytes());
    }

    /// The message as it stands.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.set_length(0);
        self.buf
    }

    /// The message with MESSAGE-INTEGRITY under `key` appended.
    pub(crate) fn finish_with_integrity(mut self, key: &[u8]) -> Vec<u8> {
        self.set_length(24);
        let tag = hmac_sha1(key, &[&self.buf]);
        self.attribute(attr::MESSAGE_INTEGRITY, &tag);
        self.buf
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::credentials::long_term_key;

    /// RFC 5769 §2.2: sample IPv4 response (short-term password below).
    pub(crate) const RFC_5769_IPV4_RESPONSE: [u8; 80] = [
        0x01, 0x01, 0x00, 0x3c, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87,
        0xdf, 0xae, 0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x20,
        0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43, 0x00, 0x08, 0x00, 0x14, 0x2b, 0x91,
        0xf5, 0x99, 0xfd, 0x9e, 0x90, 0xc3, 0x8c, 0x74, 0x89, 0xf9, 0x2a, 0xf9, 0xba, 0x53, 0xf0, 0x6b, 0xe7, 0xd7,
        0x80, 0x28, 0x00, 0x04, 0xc0, 0x7d, 0x4c, 0x96,
    ];
    /// RFC 5769 §2.3: sample IPv6 response.
    const RFC_5769_IPV6_RESPONSE: [u8; 92] = [
        0x01, 0x01, 0x00, 0x48, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87,
        0xdf, 0xae, 0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x20,
        0x00, 0x20, 0x00, 0x14, 0x00, 0x02, 0xa1, 0x47, 0x01, 0x13, 0xa9, 0xfa, 0xa5, 0xd3, 0xf1, 0x79, 0xbc, 0x25,
        0xf4, 0xb5, 0xbe, 0xd2, 0xb9, 0xd9, 0x00, 0x08, 0x00, 0x14, 0xa3, 0x82, 0x95, 0x4e, 0x4b, 0xe6, 0x7b, 0xf1,
        0x17, 0x84, 0xc9, 0x7c, 0x82, 0x92, 0xc2, 0x75, 0xbf, 0xe3, 0xed, 0x41, 0x80, 0x28, 0x00, 0x04, 0xc8, 0xfb,
        0x0b, 0x4c,
    ];
    const RFC_5769_SHORT_TERM_PASSWORD: &[u8] = b"VOkJxbRl1RmTxUk/WvJxBt";
    /// RFC 5769 §2.4: sample request with long-term authentication.
    pub(crate) const RFC_5769_LONG_TERM_REQUEST: [u8; 116] = [
        0x00, 0x01, 0x00, 0x60, 0x21, 0x12, 0xa4, 0x42, 0x78, 0xad, 0x34, 0x33, 0xc6, 0xad, 0x72, 0xc0, 0x29, 0xda,
        0x41, 0x2e, 0x00, 0x06, 0x00, 0x12, 0xe3, 0x83, 0x9e, 0xe3, 0x83, 0x88, 0xe3, 0x83, 0xaa, 0xe3, 0x83, 0x83,
        0xe3, 0x82, 0xaf, 0xe3, 0x82, 0xb9, 0x00, 0x00, 0x00, 0x15, 0x00, 0x1c, 0x66, 0x2f, 0x2f, 0x34, 0x39, 0x39,
        0x6b, 0x39, 0x35, 0x34, 0x64, 0x36, 0x4f, 0x4c, 0x33, 0x34, 0x6f, 0x4c, 0x39, 0x46, 0x53, 0x54, 0x76, 0x79,
        0x36, 0x34, 0x73, 0x41, 0x00, 0x14, 0x00, 0x0b, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x6f, 0x72,
        0x67, 0x00, 0x00, 0x08, 0x00, 0x14, 0xf6, 0x70, 0x24, 0x65, 0x6d, 0xd6, 0x4a, 0x3e, 0x02, 0xb8, 0xe0, 0x71,
        0x2e, 0x85, 0xc9, 0xa2, 0x8c, 0xa8, 0x96, 0x66,
    ];
    /// "マトリックス"; the RFC's password after SASLprep is "TheMatrIX".
    const RFC_5769_USERNAME: &str = "\u{30de}\u{30c8}\u{30ea}\u{30c3}\u{30af}\u{30b9}";
    const RFC_5769_NONCE: &[u8] = b"f//499k954d6OL34oL9FSTvy64sA";

    #[test]
    fn rfc_5769_ipv4_response_reads_and_checks_out() {
        let m = Message::parse(&RFC_5769_IPV4_RESPONSE).expect("parses, fingerprint matches");
        assert_eq!((m.method, m.class), (0x001, Class::Success));
        assert_eq!(m.xor_mapped, Some("192.0.2.1:32853".parse().expect("addr")));
        assert!(m.integrity_ok(RFC_5769_SHORT_TERM_PASSWORD));
        assert!(!m.integrity_ok(b"VOkJxbRl1RmTxUk/WvJxBT"));
        assert!(!m.unknown_required, "SOFTWARE is comprehension-optional");
    }

    #[test]
    fn rfc_5769_ipv6_response_reads_and_checks_out() {
        let m = Message::parse(&RFC_5769_IPV6_RESPONSE).expect("parses");
        assert_eq!(m.xor_mapped, Some("[2001:db8:1234:5678:11:2233:4455:6677]:32853".parse().expect("addr")));
        assert!(m.integrity_ok(RFC_5769_SHORT_TERM_PASSWORD));
    }

    #[test]
    fn a_flipped_bit_fails_the_fingerprint() {
        // Every byte but the FINGERPRINT's own type (which would make it
        // another attribute after MESSAGE-INTEGRITY, ignored).
        for i in (HEADER_LEN..72).chain(74..RFC_5769_IPV4_RESPONSE.len()) {
            let mut bad = RFC_5769_IPV4_RESPONSE;
            bad[i] ^= 0x01;
            if let Some(m) = Message::parse(&bad) {
                panic!("byte {i} flipped still parses: {m:?}");
            }
        }
    }

    #[test]
    fn rfc_5769_long_term_request_is_rebuilt_byte_for_byte() {
        let m = Message::parse(&RFC_5769_LONG_TERM_REQUEST).expect("parses");
        assert_eq!((m.method, m.class), (0x001, Class::Request));
        assert_eq!(m.username, Some(RFC_5769_USERNAME.as_bytes()));
        assert_eq!(m.nonce, Some(RFC_5769_NONCE));
        assert_eq!(m.realm, Some(&b"example.org"[..]));
        let key = long_term_key(RFC_5769_USERNAME, b"example.org", "TheMatrIX");
        assert!(m.integrity_ok(&key));

        let mut tid = [0; 12];
        tid.copy_from_slice(&RFC_5769_LONG_TERM_REQUEST[8..20]);
        let mut b = Builder::new(0x001, Class::Request, &tid);
        b.attribute(attr::USERNAME, RFC_5769_USERNAME.as_bytes())
            .attribute(attr::NONCE, RFC_5769_NONCE)
            .attribute(attr::REALM, b"example.org");
        assert_eq!(b.finish_with_integrity(&key), RFC_5769_LONG_TERM_REQUEST);
    }

    #[test]
    fn types_round_trip_for_every_method_and_class() {
        for method in 0..0x1000 {
            for class in [Class::Request, Class::Indication, Class::Success, Class::Error] {
                let t = message_type(method, class);
                assert_eq!(t & 0xC000, 0);
                assert_eq!(split_type(t), (method, class));
            }
        }
        assert_eq!(message_type(method::ALLOCATE, Class::Error), 0x0113);
        assert_eq!(message_type(method::DATA, Class::Indication), 0x0017);
    }

    #[test]
    fn addresses_round_trip_both_families() {
        let tid = [9; 12];
        for addr in ["11.0.0.5:50123", "[2001:db8::7]:3478"] {
            let addr: SocketAddr = addr.parse().expect("addr");
            let mut b = Builder::new(method::SEND, Class::Indication, &tid);
            b.xor_address(attr::XOR_PEER_ADDRESS, addr).attribute(attr::DATA, b"abc");
            let bytes = b.finish();
            let m = Message::parse(&bytes).expect("parses");
            assert_eq!(m.xor_peer, Some(addr));
            assert_eq!(m.data, Some(&b"abc"[..]));
            assert!(!m.has_integrity());
        }
    }

    #[test]
    fn malformed_messages_are_refused() {
        let good = RFC_5769_LONG_TERM_REQUEST;
        let mut short = good.to_vec();
        short.pop();
        assert!(Message::parse(&short).is_none(), "length mismatch");
        let mut cookie = good;
        cookie[4] ^= 1;
        assert!(Message::parse(&cookie).is_none(), "cookie");
        let mut top = good;
        top[0] |= 0x40;
        assert!(Message::parse(&top).is_none(), "top bits");
        let mut attr_len = good;
        attr_len[23] = 0xff;
        assert!(Message::parse(&attr_len).is_none(), "attribute past the end");
        let big = vec![0; MAX_DATAGRAM + 4];
        assert!(Message::parse(&big).is_none());
        assert!(Message::parse(&[]).is_none());
    }

    #[test]
    fn error_codes_and_unknown_attributes() {
        let tid = [1; 12];
        let mut b = Builder::new(method::ALLOCATE, Class::Error, &tid);
        b.attribute(attr::ERROR_CODE, b"\0\0\x04\x56Allocation Quota Reached\n")
            .attribute(0x7F00, b"x")
            .attribute(0xC001, b"optional");
        let bytes = b.finish();
        let m = Message::parse(&bytes).expect("parses");
        assert_eq!(m.error, Some(ErrorCode { code: 486, reason: "Allocation Quota Reached".into() }));
        assert!(m.unknown_required);
        let mut b = Builder::new(method::ALLOCATE, Class::Error, &tid);
        b.attribute(attr::ERROR_CODE, b"\0\0\x07\x01");
        assert!(Message::parse(&b.finish()).is_none(), "class 7");
    }
}
