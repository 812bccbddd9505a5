//! ChannelData framing (RFC 8656 §12.4): `[channel u16][length u16][data]`,
//! and telling the relay's datagrams apart (STUN or ChannelData).

use crate::message::{MAX_DATAGRAM, looks_like_stun};

/// Channel numbers a client may bind (RFC 8656 §12).
pub(crate) const CHANNELS: std::ops::RangeInclusive<u16> = 0x4000..=0x4FFF;
/// The ChannelData header.
pub(crate) const HEADER_LEN: usize = 4;

/// What a datagram from the relay is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnDatagram {
    /// A STUN message (first two bits clear, the magic cookie).
    Stun,
    /// ChannelData (first byte 0x40..=0x4F).
    ChannelData,
}

/// What `datagram` looks like from its first bytes, if it is TURN at all.
/// Only a shape: a game packet can look like ChannelData, so demultiplex
/// by the source address (the relay's) first.
pub fn classify(datagram: &[u8]) -> Option<TurnDatagram> {
    if datagram.len() > MAX_DATAGRAM {
        None
    } else if looks_like_stun(datagram) {
        Some(TurnDatagram::Stun)
    } else if datagram.len() >= HEADER_LEN && (0x40..=0x4F).contains(&datagram[0]) {
        Some(TurnDatagram::ChannelData)
    } else {
        None
    }
}

/// Whether `datagram` looks like STUN or ChannelData (see [`classify`]).
pub fn is_turn_datagram(datagram: &[u8]) -> bool {
    classify(datagram).is_some()
}

/// A ChannelData message, unpadded (RFC 8656 §12.5: over UDP padding is
/// optional): 4 bytes more than `data`. `data` must fit a datagram with
/// its header (the caller checks).
pub fn encode(channel: u16, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + data.len());
    out.extend_from_slice(&channel.to_be_bytes());
    out.extend_from_slice(&(data.len().min(usize::from(u16::MAX)) as u16).to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// Reads a ChannelData message: the channel (in 0x4000..=0x4FFF) and its
/// data, or `None` for a datagram too short for its length, longer than
/// its length plus padding to 4 bytes, or over [`MAX_DATAGRAM`].
pub fn parse(datagram: &[u8]) -> Option<(u16, &[u8])> {
    if datagram.len() > MAX_DATAGRAM {
        return None;
    }
    let header = datagram.get(..HEADER_LEN)?;
    let channel = u16::from_be_bytes([header[0], header[1]]);
    let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    if !CHANNELS.contains(&channel) {
        return None;
    }
    let data = datagram.get(HEADER_LEN..HEADER_LEN + len)?;
    if datagram.len() > HEADER_LEN + len.div_ceil(4) * 4 {
        return None;
    }
    Some((channel, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_padded_or_not() {
        let bytes = encode(0x4001, b"hello");
        assert_eq!(bytes.len(), 9);
        assert_eq!(parse(&bytes), Some((0x4001, &b"hello"[..])));
        let padded = [&bytes[..], &[0, 0, 0]].concat();
        assert_eq!(parse(&padded), Some((0x4001, &b"hello"[..])));
        let too_long = [&padded[..], &[0, 0, 0, 0]].concat();
        assert_eq!(parse(&too_long), None);
        assert_eq!(parse(&bytes[..8]), None);
        assert_eq!(parse(&encode(0x5000, b"x")), None, "channel out of range");
        assert_eq!(parse(&encode(0x4FFF, b"")), Some((0x4FFF, &b""[..])));
    }

    #[test]
    fn tells_stun_from_channel_data_from_neither() {
        assert_eq!(classify(&crate::message::tests::RFC_5769_IPV4_RESPONSE), Some(TurnDatagram::Stun));
        assert_eq!(classify(&encode(0x4000, b"x")), Some(TurnDatagram::ChannelData));
        assert_eq!(classify(b"\xff\xff\xff\xffTSource Engine Query\0"), None);
        assert_eq!(classify(&[0x40, 0]), None);
        assert!(!is_turn_datagram(&[]));
    }
}
