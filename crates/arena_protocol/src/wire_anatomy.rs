//! Where a datagram's bytes go (for `arena lab bandwidth`): netcode's
//! header and MAC, the bundle's length bytes, each renet packet's framing
//! (its type, sequence, channel, count and each message's id and length),
//! renet's acknowledgements, and the messages themselves. Read from the
//! bytes as they travel, so that it counts what is sent, not what was meant.

use serde::Serialize;

use crate::bundle::unbundle;

/// Bytes of each part, summed over datagrams.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Anatomy {
    /// Datagrams that carried a payload.
    pub datagrams: u64,
    /// netcode: the prefix byte, the sequence number and the 16-byte MAC.
    pub netcode: u64,
    /// The bundle's length byte (or two) before each renet packet.
    pub bundle: u64,
    /// renet's framing of the packets that carry messages: packet type,
    /// sequence, channel, message count; each message's id and length; a
    /// slice's header; a raw message's marker byte.
    pub renet_framing: u64,
    /// renet's acknowledgement packets, whole.
    pub acks: u64,
    /// The messages (or slices of one) themselves.
    pub messages: u64,
}

impl Anatomy {
    /// Adds one datagram of `datagram_bytes` whose netcode payload (a
    /// bundle of renet packets) is `payload`.
    pub fn add(&mut self, datagram_bytes: usize, payload: &[u8]) {
        self.datagrams += 1;
        self.netcode += datagram_bytes.saturating_sub(payload.len()) as u64;
        let Ok(packets) = unbundle(payload) else {
            // Not a bundle (it would not get past the payload guard): framing.
            self.renet_framing += payload.len() as u64;
            return;
        };
        let inside: usize = packets.iter().map(|p| p.len()).sum();
        self.bundle += payload.len().saturating_sub(inside) as u64;
        for packet in packets {
            match parts(packet) {
                Some(Part::Ack) => self.acks += packet.len() as u64,
                Some(Part::Messages(messages)) => {
                    self.messages += messages as u64;
                    self.renet_framing += packet.len().saturating_sub(messages) as u64;
                }
                None => self.renet_framing += packet.len() as u64,
            }
        }
    }

    /// All the bytes counted.
    pub fn total(&self) -> u64 {
        self.netcode + self.bundle + self.renet_framing + self.acks + self.messages
    }

    /// What was added since `earlier`.
    pub fn since(&self, earlier: &Anatomy) -> Anatomy {
        Anatomy {
            datagrams: self.datagrams.saturating_sub(earlier.datagrams),
            netcode: self.netcode.saturating_sub(earlier.netcode),
            bundle: self.bundle.saturating_sub(earlier.bundle),
            renet_framing: self.renet_framing.saturating_sub(earlier.renet_framing),
            acks: self.acks.saturating_sub(earlier.acks),
            messages: self.messages.saturating_sub(earlier.messages),
        }
    }
}

enum Part {
    Ack,
    /// Bytes of messages (or of a slice) in the packet.
    Messages(usize),
}

/// What a renet packet (or a raw message: see `bundle`) is made of (renet
/// 2's layout: see `payload_guard`).
fn parts(packet: &[u8]) -> Option<Part> {
    if let Some(message) = crate::bundle::raw_message(packet) {
        return Some(Part::Messages(message.len()));
    }
    let mut b = octets::Octets::with_slice(packet);
    let kind = b.get_u8().ok()?;
    b.get_varint().ok()?;
    match kind {
        0 | 1 => {
            b.get_u8().ok()?;
            let count = b.get_u16().ok()?;
            let mut messages = 0;
            for _ in 0..count {
                if kind == 0 {
                    b.get_varint().ok()?;
                }
                messages += b.get_bytes_with_varint_length().ok()?.len();
            }
            Some(Part::Messages(messages))
        }
        2 | 3 => {
            b.get_u8().ok()?;
            for _ in 0..3 {
                b.get_varint().ok()?;
            }
            Some(Part::Messages(b.get_bytes_with_varint_length().ok()?.len()))
        }
        4 => Some(Part::Ack),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::bundle;

    #[test]
    fn a_datagram_is_split_into_netcode_bundle_framing_acks_and_messages() {
        // A small unreliable packet: type 1, sequence 300 (two bytes), channel
        // 1, two messages of 5 and 3 bytes (a length byte each).
        let mut unreliable = vec![1, 0x41, 0x2C, 1, 0, 2, 5];
        unreliable.extend_from_slice(&[9; 5]);
        unreliable.push(3);
        unreliable.extend_from_slice(&[8; 3]);
        // An acknowledgement: type 4, then anything.
        let ack = vec![4, 7, 0x40, 0x90, 3, 0];
        let payload = bundle(&[unreliable.clone(), ack.clone()]).remove(0);
        let mut anatomy = Anatomy::default();
        anatomy.add(payload.len() + 19, &payload);
        assert_eq!(anatomy.netcode, 19);
        assert_eq!(anatomy.bundle, 2);
        assert_eq!(anatomy.messages, 8);
        assert_eq!(anatomy.renet_framing, unreliable.len() as u64 - 8);
        assert_eq!(anatomy.acks, ack.len() as u64);
        assert_eq!(anatomy.total(), (payload.len() + 19) as u64);
        // Garbage is framing, never a panic.
        anatomy.add(3, &[0xFF, 0xFF]);
        assert_eq!(anatomy.datagrams, 2);
    }
}
