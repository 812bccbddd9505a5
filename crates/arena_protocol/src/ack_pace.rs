//! Acknowledgement pacing: when renet's packets ride a datagram. renet
//! acknowledges every packet it receives, its own acknowledgements too, so
//! asked for its packets at every datagram it puts an acknowledgement (7
//! bytes and a bundle length) in every one, both ways, for as long as
//! anything of renet's flows. Since protocol 18 the unreliable messages go
//! outside renet (see [`crate::bundle`]) and renet carries only the reliable
//! channel, so its packets are asked for only when they matter: something
//! of ours waits in a channel (a reliable message not yet acknowledged is
//! sent again at renet's resend time), the other side sent a packet that
//! is more than an acknowledgement (its reliable messages are acknowledged
//! at our next datagram, as before), or [`AckPace::INTERVAL`] has passed
//! (the acknowledgements of acknowledgements, which only let the other side
//! forget what it acknowledged). Renet's packets are never made and then
//! dropped: a sequence number taken and not sent leaves a hole the other
//! side must describe in every acknowledgement after.
//!
//! renet's round trip times its packets to their acknowledgements, which
//! now wait: the server measures its own from the snapshots' (see the
//! server's `RoundTrips`), the client already did (its `round_trip.rs`).

use std::time::Duration;

use renet::{ChannelConfig, ConnectionConfig};

/// renet's packet type for an acknowledgement (its `packet.rs`: 0 and 2
/// reliable, 1 and 3 unreliable, 4 acknowledgement).
pub const RENET_ACK_PACKET: u8 = 4;

/// One side's pacing of renet's packets toward the other.
#[derive(Debug, Default, Clone)]
pub struct AckPace {
    /// When renet's packets last went.
    last_sent: Option<Duration>,
    /// The other side sent something renet must acknowledge.
    owed: bool,
}

impl AckPace {
    /// Longest renet's packets wait when nothing asks for them. Shorter
    /// than the 0.9 s renet's loss figure leaves for acknowledgements to
    /// come back (its `connection_stats.rs`), with room for a round trip.
    pub const INTERVAL: Duration = Duration::from_millis(250);

    /// A renet packet came in (the first byte is its type).
    pub fn received(&mut self, packet: &[u8]) {
        if packet.first().is_some_and(|&kind| kind != RENET_ACK_PACKET) {
            self.owed = true;
        }
    }

    /// Whether renet's packets go in a datagram leaving at `now`, with
    /// `waiting` (something of ours is in renet's channels: see
    /// [`waiting`]).
    pub fn due(&self, now: Duration, waiting: bool) -> bool {
        waiting || self.owed || self.last_sent.is_none_or(|t| now.saturating_sub(t) >= Self::INTERVAL)
    }

    /// renet's packets went at `now`.
    pub fn sent(&mut self, now: Duration) {
        self.last_sent = Some(self.last_sent.map_or(now, |t| t.max(now)));
        self.owed = false;
    }
}

/// Whether anything of ours is in renet's send channels (`available` is
/// renet's `channel_available_memory`): a message queued, or a reliable one
/// not yet acknowledged.
pub fn waiting(config: &ConnectionConfig, side_is_server: bool, available: impl Fn(u8) -> usize) -> bool {
    let channels: &[ChannelConfig] =
        if side_is_server { &config.server_channels_config } else { &config.client_channels_config };
    channels.iter().any(|c| available(c.channel_id) < c.max_memory_usage_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn renets_packets_go_when_something_waits_when_owed_and_every_interval() {
        let mut pace = AckPace::default();
        assert!(pace.due(MS(0), false), "the first datagram carries renet's packets");
        pace.sent(MS(0));
        assert!(!pace.due(MS(16), false), "nothing asks: they wait");
        assert!(pace.due(MS(16), true), "a message of ours waits");
        pace.received(&[RENET_ACK_PACKET, 1, 2]);
        assert!(!pace.due(MS(32), false), "an acknowledgement is not acknowledged at once");
        pace.received(&[0, 1, 2]);
        assert!(pace.due(MS(32), false), "a reliable packet is");
        pace.sent(MS(32));
        assert!(!pace.due(MS(48), false));
        assert!(!pace.due(MS(32 + 249), false));
        assert!(pace.due(MS(32 + 250), false), "the interval");
        pace.received(&[]);
        pace.sent(MS(300));
        assert!(!pace.due(MS(310), false), "an empty packet owes nothing");
        pace.sent(MS(100));
        assert!(!pace.due(MS(310), false), "an earlier departure does not move the clock back");
    }

    #[test]
    fn a_queued_or_unacknowledged_message_is_waiting() {
        let config = crate::connection_config();
        assert!(!waiting(&config, true, |_| crate::CHANNEL_MEMORY_BYTES));
        assert!(waiting(&config, true, |c| crate::CHANNEL_MEMORY_BYTES - usize::from(c == crate::channel::RELIABLE)));
        assert!(waiting(&config, false, |c| crate::CHANNEL_MEMORY_BYTES - usize::from(c == crate::channel::UNRELIABLE)));
    }
}
