//! Acknowledgement pacing: when renet's packets ride a datagram. renet
//! acknowledges every packet it receives, its own acknowledgements too, so
//! asked for its packets at every datagram it puts an acknowledgement (7
//! bytes and a bundle length) in every one, both ways, for as long as
//! anything of renet's flows. Since protocol 18 the unreliable messages go
//! outside renet (see [`crate::bundle`]) and renet carries only the reliable
//! channel, so its packets are asked for only when they matter: a message
//! of ours was queued since they last went, the other side sent a packet
//! that is more than an acknowledgement (its reliable messages are
//! acknowledged at our next datagram, as before), a message of ours is
//! still unacknowledged and [`AckPace::RESEND_CHECK`] has passed (renet
//! sends it again once its resend time is up: since protocol 20 that is
//! looked at every [`AckPace::RESEND_CHECK`] rather than at every datagram,
//! whose acknowledgement cost more than the resends), or
//! [`AckPace::INTERVAL`] has passed (the acknowledgements of
//! acknowledgements, which only let the other side forget what it
//! acknowledged). Renet's packets are never made and then dropped: a
//! sequence number taken and not sent leaves a hole the other side must
//! describe in every acknowledgement after.
//!
//! renet's round trip times its packets to their acknowledgements, which
//! now wait: the server measures its own from the snapshots' (see the
//! server's `RoundTrips`), the client already did (its `round_trip.rs`).

use std::time::Duration;

use std::sync::LazyLock;

use renet::{ChannelConfig, ClientId, RenetClient, RenetServer};

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
    /// Bytes in our send channels (see [`held`]) when renet's packets last
    /// went, less what the other side's acknowledgements freed since: more
    /// now is a message queued since.
    held: usize,
}

impl AckPace {
    /// Longest renet's packets wait when nothing asks for them. Shorter
    /// than the 0.9 s renet's loss figure leaves for acknowledgements to
    /// come back (its `connection_stats.rs`), with room for a round trip.
    pub const INTERVAL: Duration = Duration::from_millis(250);

    /// How often renet's packets go while a message of ours is
    /// unacknowledged: half renet's resend time, so a lost message goes
    /// again at most this much later than renet would send it.
    pub const RESEND_CHECK: Duration = Duration::from_millis(crate::RELIABLE_RESEND.as_millis() as u64 / 2);

    /// A renet packet came in (the first byte is its type).
    pub fn received(&mut self, packet: &[u8]) {
        if packet.first().is_some_and(|&kind| kind != RENET_ACK_PACKET) {
            self.owed = true;
        }
    }

    /// renet took in a packet of the other side's, which left `after` bytes
    /// of ours in its send channels where there were `before`: what its
    /// acknowledgements freed is no longer held (a message queued since the
    /// last flush still counts as queued).
    pub fn taken_in(&mut self, before: usize, after: usize) {
        self.held = self.held.saturating_sub(before.saturating_sub(after));
    }

    /// Whether renet's packets go in a datagram leaving at `now`, with
    /// `held` bytes of ours in renet's send channels (see [`held`]).
    pub fn due(&self, now: Duration, held: usize) -> bool {
        let since = |wait: Duration| self.last_sent.is_none_or(|t| now.saturating_sub(t) >= wait);
        self.owed || held > self.held || (held > 0 && since(Self::RESEND_CHECK)) || since(Self::INTERVAL)
    }

    /// renet's packets went at `now`, leaving `held` bytes of ours in its
    /// send channels (counted after they went: renet's unreliable channel,
    /// unused by us, would let go of what it sent).
    pub fn sent(&mut self, now: Duration, held: usize) {
        self.last_sent = Some(self.last_sent.map_or(now, |t| t.max(now)));
        self.owed = false;
        self.held = held;
    }
}

/// Each side's send channels, (id, most bytes it holds), from the
/// configuration both ends share: built once, not per packet.
static SEND_CHANNELS: LazyLock<[Vec<(u8, usize)>; 2]> = LazyLock::new(|| {
    let config = crate::connection_config();
    let of = |channels: &[ChannelConfig]| channels.iter().map(|c| (c.channel_id, c.max_memory_usage_bytes)).collect();
    [of(&config.client_channels_config), of(&config.server_channels_config)]
});

/// Bytes of ours in renet's send channels (`available` is renet's
/// `channel_available_memory`): messages queued, and reliable ones not yet
/// acknowledged. Only queuing a message makes it grow; the other side's
/// acknowledgements make it shrink (and sending, for renet's unreliable
/// channel, which our messages do not use: see [`crate::bundle`]).
pub fn held(side_is_server: bool, available: impl Fn(u8) -> usize) -> usize {
    SEND_CHANNELS[usize::from(side_is_server)].iter().map(|&(id, most)| most.saturating_sub(available(id))).sum()
}

/// [`held`] by the server for `client`.
pub fn held_for(server: &RenetServer, client: ClientId) -> usize {
    held(true, |channel| server.channel_available_memory(client, channel))
}

/// [`held`] by a client.
pub fn held_by(client: &RenetClient) -> usize {
    held(false, |channel| client.channel_available_memory(channel))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn renets_packets_go_when_a_message_is_queued_when_owed_and_every_interval() {
        let mut pace = AckPace::default();
        assert!(pace.due(MS(0), 0), "the first datagram carries renet's packets");
        pace.sent(MS(0), 0);
        assert!(!pace.due(MS(16), 0), "nothing asks: they wait");
        assert!(pace.due(MS(16), 40), "a message of ours was queued");
        pace.sent(MS(16), 40);
        assert!(!pace.due(MS(32), 40), "sent, not yet acknowledged: no need at every datagram");
        assert!(pace.due(MS(48), 70), "another message was queued");
        pace.sent(MS(48), 70);
        pace.taken_in(70, 30);
        assert!(!pace.due(MS(64), 30), "an acknowledgement freed some: nothing new");
        assert!(pace.due(MS(64), 31), "a message queued after the acknowledgement");
        // Queued (30 more), then an acknowledgement of the first 40 taken in
        // before the next datagram: the message still counts as queued.
        pace.taken_in(60, 20);
        assert!(pace.due(MS(70), 50), "queued before the acknowledgement came");
        assert!(pace.due(MS(48 + 125), 30), "unacknowledged: renet may resend it by now");
        pace.sent(MS(48 + 125), 30);
        pace.taken_in(30, 0);
        pace.received(&[RENET_ACK_PACKET, 1, 2]);
        assert!(!pace.due(MS(200), 0), "an acknowledgement is not acknowledged at once");
        pace.received(&[0, 1, 2]);
        assert!(pace.due(MS(200), 0), "a reliable packet is");
        pace.sent(MS(200), 0);
        assert!(!pace.due(MS(216), 0));
        assert!(!pace.due(MS(200 + 249), 0));
        assert!(pace.due(MS(200 + 250), 0), "the interval");
        pace.received(&[]);
        pace.sent(MS(500), 0);
        assert!(!pace.due(MS(510), 0), "an empty packet owes nothing");
        pace.sent(MS(300), 0);
        assert!(!pace.due(MS(510), 0), "an earlier departure does not move the clock back");
    }

    #[test]
    fn what_is_held_is_what_the_channels_hold() {
        let full = crate::CHANNEL_MEMORY_BYTES;
        assert_eq!(held(true, |_| full), 0);
        assert_eq!(held(true, |c| full - 5 * usize::from(c == crate::channel::RELIABLE)), 5);
        assert_eq!(held(false, |c| full - 3 * usize::from(c == crate::channel::UNRELIABLE)), 3);
        assert_eq!(held(false, |_| full + 10), 0, "more than the most never underflows");
    }

    #[test]
    fn a_queued_message_is_held_until_acknowledged() {
        let mut client = RenetClient::new(crate::connection_config());
        assert_eq!(held_by(&client), 0);
        client.send_message(crate::channel::RELIABLE, vec![7u8; 40]);
        assert!(held_by(&client) >= 40, "queued: {}", held_by(&client));
    }
}
