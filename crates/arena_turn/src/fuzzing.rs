//! What `arena_fuzz` drives besides the public API: the bare parsers, and
//! a relay's answers made to order (the transaction ID of a real request,
//! attributes from the fuzzer's bytes, signed or not), so that fuzzing
//! reaches past the transaction check. Not for the game.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::channel_data;
use crate::credentials::{Credentials, long_term_key};
use crate::message::{Builder, Class, Message, attr};

/// What the STUN reader made of a datagram.
#[derive(Debug)]
pub struct StunSummary {
    pub method: u16,
    pub is_request: bool,
    pub is_indication: bool,
    pub has_integrity: bool,
    pub data_len: Option<usize>,
    pub peer: Option<SocketAddr>,
    pub channel: Option<u16>,
    pub error_code: Option<u16>,
}

/// The STUN reader on any bytes.
pub fn parse_stun(datagram: &[u8]) -> Option<StunSummary> {
    let m = Message::parse(datagram)?;
    Some(StunSummary {
        method: m.method,
        is_request: m.class == Class::Request,
        is_indication: m.class == Class::Indication,
        has_integrity: m.has_integrity(),
        data_len: m.data.map(<[u8]>::len),
        peer: m.xor_peer,
        channel: m.channel,
        error_code: m.error.map(|e| e.code),
    })
}

/// The ChannelData reader on any bytes: the channel and its data.
pub fn parse_channel_data(datagram: &[u8]) -> Option<(u16, &[u8])> {
    channel_data::parse(datagram)
}

fn address(value: &[u8]) -> SocketAddr {
    let port =
        |at: usize| u16::from_be_bytes([value.get(at).copied().unwrap_or(0), value.get(at + 1).copied().unwrap_or(0)]);
    if value.len() >= 18 {
        let mut ip = [0; 16];
        ip.copy_from_slice(&value[..16]);
        SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port(16))
    } else {
        let mut ip = [0; 4];
        for (i, b) in ip.iter_mut().enumerate() {
            *b = value.get(i).copied().unwrap_or(0);
        }
        SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port(4))
    }
}

/// An answer to `request` (a request this crate wrote) built from
/// `script`: its first byte picks the class (bit 0: error) and whether it
/// is signed (bit 1) with the key of `credentials` in `realm`; then items
/// `[kind][length][value]` add attributes (addresses, LIFETIME, ERROR-CODE,
/// REALM, NONCE, CHANNEL-NUMBER, DATA, or any type). `None` if `request`
/// is not a STUN request.
pub fn answer(request: &[u8], script: &[u8], credentials: &Credentials, realm: &[u8]) -> Option<Vec<u8>> {
    let m = Message::parse(request).filter(|m| m.class == Class::Request)?;
    let (&flags, mut rest) = script.split_first().unwrap_or((&0, &[]));
    let class = if flags & 1 == 1 { Class::Error } else { Class::Success };
    let mut b = Builder::new(m.method, class, &m.transaction);
    let mut room = 1200usize;
    while let [kind, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (value, next) = tail.split_at(len);
        rest = next;
        if room < len + 40 {
            break;
        }
        room -= len + 24;
        match kind % 10 {
            0 => b.xor_address(attr::XOR_RELAYED_ADDRESS, address(value)),
            1 => b.xor_address(attr::XOR_MAPPED_ADDRESS, address(value)),
            2 => b.xor_address(attr::XOR_PEER_ADDRESS, address(value)),
            3 => b.u32(attr::LIFETIME, u32::from_be_bytes(pad4(value))),
            4 => {
                let code = 300 + u16::from_be_bytes([pad4(value)[0], pad4(value)[1]]) % 400;
                let mut v = vec![0, 0, (code / 100) as u8, (code % 100) as u8];
                v.extend_from_slice(value.get(2..).unwrap_or_default());
                b.attribute(attr::ERROR_CODE, &v)
            }
            5 => b.attribute(attr::REALM, value),
            6 => b.attribute(attr::NONCE, value),
            7 => b.u32(attr::CHANNEL_NUMBER, u32::from_be_bytes(pad4(value))),
            8 => b.attribute(attr::DATA, value),
            _ => {
                let kind = u16::from_be_bytes([pad4(value)[0], pad4(value)[1]]);
                b.attribute(kind, value.get(2..).unwrap_or_default())
            }
        };
    }
    if flags & 2 == 2 {
        Some(b.finish_with_integrity(&long_term_key(&credentials.username, realm, &credentials.password)))
    } else {
        Some(b.finish())
    }
}

fn pad4(value: &[u8]) -> [u8; 4] {
    let mut out = [0; 4];
    for (o, v) in out.iter_mut().zip(value) {
        *o = *v;
    }
    out
}
