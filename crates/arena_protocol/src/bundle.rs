//! Bundles: every renet packet one side has for the other in a frame, in one
//! netcode payload (one datagram), so that acks and reliable messages ride
//! with the snapshot or the commands instead of each costing a datagram and
//! its headers. Each packet is preceded by its length (one byte below 128,
//! two above, as in LEB128).
//!
//! An entry may also be a message of the unreliable channel outside renet
//! (a snapshot, a tracer, the commands): [`RAW_MESSAGE`] and the message.
//! It costs one byte where renet's packet costs seven (type, sequence,
//! channel, count, length), takes no renet sequence number, and needs no
//! acknowledgement; netcode still authenticates, encrypts and numbers the
//! datagram that carries it (its replay window drops copies).

use crate::datagram::MAX_PAYLOAD_BYTES;

/// Why a bundle did not split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleError;

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a bundle's lengths do not add up")
    }
}

impl std::error::Error for BundleError {}

/// The first byte of an entry that is a raw unreliable message (renet's
/// packet types are 0 to 4).
pub const RAW_MESSAGE: u8 = 0xF0;

/// A raw unreliable message as a bundle entry.
pub fn raw_entry(message: &[u8]) -> Vec<u8> {
    let mut entry = Vec::with_capacity(message.len() + 1);
    entry.push(RAW_MESSAGE);
    entry.extend_from_slice(message);
    entry
}

/// Whether a message of `len` bytes fits a payload as a raw entry (with its
/// marker and length). A longer one (a whole snapshot of a full server) goes
/// on renet's reliable channel, which slices it (renet's unreliable slices
/// are refused: see [`crate::payload_guard`]).
pub fn fits_raw(len: usize) -> bool {
    length_bytes(len + 1) + len < MAX_PAYLOAD_BYTES
}

/// The message of a raw entry (`None`: a renet packet).
pub fn raw_message(entry: &[u8]) -> Option<&[u8]> {
    match entry.split_first() {
        Some((&RAW_MESSAGE, message)) => Some(message),
        _ => None,
    }
}

/// Longest packet a bundle carries (two length bytes hold up to 16383).
const MAX_PACKET_BYTES: usize = MAX_PAYLOAD_BYTES;

fn length_bytes(len: usize) -> usize {
    if len < 128 { 1 } else { 2 }
}

/// Packs `packets` into as few payloads as fit netcode's payload limit, in
/// order. A packet too long for a payload of its own is dropped (renet never
/// makes one: its packets are below 1300 bytes).
pub fn bundle<P: AsRef<[u8]>>(packets: &[P]) -> Vec<Vec<u8>> {
    let mut payloads: Vec<Vec<u8>> = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    for packet in packets {
        let packet = packet.as_ref();
        let need = length_bytes(packet.len()) + packet.len();
        if packet.is_empty() || need > MAX_PAYLOAD_BYTES {
            continue;
        }
        if current.len() + need > MAX_PAYLOAD_BYTES {
            payloads.push(std::mem::take(&mut current));
        }
        if packet.len() < 128 {
            current.push(packet.len() as u8);
        } else {
            current.push(0x80 | (packet.len() & 0x7F) as u8);
            current.push((packet.len() >> 7) as u8);
        }
        current.extend_from_slice(packet);
    }
    if !current.is_empty() {
        payloads.push(current);
    }
    payloads
}

/// Splits a payload from the network into its packets. Every byte must
/// belong to a packet, and no packet is empty.
pub fn unbundle(payload: &[u8]) -> Result<Vec<&[u8]>, BundleError> {
    let mut packets = Vec::new();
    let mut rest = payload;
    while let Some((&first, after)) = rest.split_first() {
        let (len, after) = if first < 0x80 {
            (usize::from(first), after)
        } else {
            let (&second, after) = after.split_first().ok_or(BundleError)?;
            if second == 0 || second >= 0x80 {
                return Err(BundleError);
            }
            (usize::from(first & 0x7F) | (usize::from(second) << 7), after)
        };
        if len == 0 || len > MAX_PACKET_BYTES || len > after.len() {
            return Err(BundleError);
        }
        let (packet, after) = after.split_at(len);
        packets.push(packet);
        rest = after;
    }
    if packets.is_empty() { Err(BundleError) } else { Ok(packets) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_entry_fits_a_payload_exactly_when_fits_raw_says() {
        for len in [1, 126, 127, 1296, 1297, 1298, 5000] {
            let payloads = bundle(&[raw_entry(&vec![7u8; len])]);
            assert_eq!(fits_raw(len), payloads.len() == 1, "{len}");
        }
    }

    #[test]
    fn packets_go_in_one_payload_when_they_fit_and_come_out_whole() {
        let packets = vec![vec![1u8; 5], vec![2u8; 300], vec![3u8; 127], vec![4u8; 128]];
        let payloads = bundle(&packets);
        assert_eq!(payloads.len(), 1);
        let out: Vec<Vec<u8>> = unbundle(&payloads[0]).expect("splits").into_iter().map(|p| p.to_vec()).collect();
        assert_eq!(out, packets);
        let big = vec![vec![7u8; 1000], vec![8u8; 1000]];
        let payloads = bundle(&big);
        assert_eq!(payloads.len(), 2, "over the limit: two datagrams");
        assert!(payloads.iter().all(|p| p.len() <= MAX_PAYLOAD_BYTES));
    }

    #[test]
    fn raw_messages_ride_beside_renet_packets() {
        let entries = vec![raw_entry(&[9, 9, 9]), vec![4u8, 1, 2], raw_entry(&[])];
        let payload = bundle(&entries).remove(0);
        let out = unbundle(&payload).expect("splits");
        assert_eq!(raw_message(out[0]), Some(&[9u8, 9, 9][..]));
        assert_eq!(raw_message(out[1]), None, "a renet packet");
        assert_eq!(raw_message(out[2]), Some(&[][..]), "an empty message: the receiver's to refuse");
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert_eq!(unbundle(&[]), Err(BundleError));
        assert_eq!(unbundle(&[0]), Err(BundleError), "an empty packet");
        assert_eq!(unbundle(&[5, 1, 2]), Err(BundleError), "shorter than it says");
        assert_eq!(unbundle(&[0x80, 0x00]), Err(BundleError), "a long form for a short length");
        assert_eq!(unbundle(&[0xFF, 0x7F]), Err(BundleError), "longer than a payload");
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            let _ = unbundle(&bytes);
        }
    }
}
