//! The joining side of the relay: a connection's allocation on the master's
//! TURN server (sans-IO, `arena_turn`, in the client's own socket loop),
//! the server's address as the relay sees it (learnt from the server's
//! first probe, which the relay hands on as a Data indication), a channel
//! bound to it, and then the link's route through the relay, on which
//! every datagram to and from the server goes as ChannelData (4 bytes
//! more). The server needs no TURN code: it probes and answers the relayed
//! address like any other player's.
//!
//! TURN permissions are per IP address, any port: so a host whose router
//! gives every destination a new port still gets through (its probes
//! come from some port of its address), and only the player relays even
//! when both routers change ports.

use std::net::SocketAddr;
use std::time::Duration;

use arena_master::reach::Reach;
use arena_turn::{Credentials, Event, Relay};

use crate::hole_punch::RelayGrant;
use crate::link::RelayRoute;

/// An address's IP in its canonical form (IPv4-mapped IPv6 as IPv4).
fn canonical_ip(addr: SocketAddr) -> std::net::IpAddr {
    arena_udp::canonical(addr).ip()
}

/// Silence from the server this long while the relay carries the
/// connection: the relay is taken for lost (the player is told within
/// 3 s, with a second to spare for the frame and the message).
pub(crate) const RELAY_SILENCE: Duration = Duration::from_millis(2000);
/// A relay that has not allocated this long after the first request is
/// taken for down (a live one answers within a round trip or two; TURN's
/// own retransmissions would wait 39.5 s).
pub(crate) const ALLOCATE_WITHIN: Duration = Duration::from_millis(3000);
/// A gap this long between two frames is a stall, not the relay's silence.
const STALL: Duration = Duration::from_millis(500);
/// Silence from the server this long makes the relay suspect: it is asked
/// for a sign of life (a Refresh), and only a relay that does not give one
/// within [`RELAY_SILENCE`] is lost (a host that stalls is the host's
/// trouble, which netcode's own timeout meets, not the relay's).
const SUSPECT_AFTER: Duration = Duration::from_millis(1000);

/// What the relay had to say, for the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RelayNews {
    /// The relay gave us this address: the master is to introduce it.
    Relayed(SocketAddr),
    /// The server's probe came through the relay.
    Probe,
    /// A datagram of the server's, relayed before the channel was bound.
    FromServer(Vec<u8>),
    /// The channel to the server is bound: the link's route from now on.
    Route(RelayRoute),
    /// The relay failed, in words.
    Failed(String),
}

/// One connection's relay.
#[derive(Debug)]
pub(crate) struct RelayedPath {
    relay: Relay,
    /// The game server, as the player dialled it.
    server: SocketAddr,
    /// The game server's address as the relay sees it (its first probe's).
    peer: Option<SocketAddr>,
    /// The master that granted the relay (it introduces our relayed address).
    pub(crate) master: SocketAddr,
    route: Option<RelayRoute>,
    failed: bool,
    /// When the allocation must exist by.
    allocate_by: Duration,
    /// When the route began, when the last frame looked, and when the
    /// last stall ended (see [`RelayedPath::lost`]).
    routed_at: Option<Duration>,
    watched_at: Option<Duration>,
    quiet_from: Duration,
    /// When the relay was asked for a sign of life, if it is suspect.
    suspect_since: Option<Duration>,
}

impl RelayedPath {
    /// Allocates on the relay `grant` names, for the game server `server`.
    pub(crate) fn new(grant: RelayGrant, server: SocketAddr, now: Duration) -> Self {
        let credentials = Credentials { username: grant.username, password: grant.password };
        let mut relay = Relay::new(grant.turn, credentials, now);
        // Per IP: whichever port the host's router picks for its probes.
        relay.permit(server.ip());
        Self {
            relay,
            server,
            peer: None,
            master: grant.master,
            route: None,
            failed: false,
            allocate_by: now + ALLOCATE_WITHIN,
            routed_at: None,
            watched_at: None,
            quiet_from: Duration::ZERO,
            suspect_since: None,
        }
    }

    /// The TURN server's address.
    pub(crate) fn turn(&self) -> SocketAddr {
        self.relay.server()
    }

    /// The round trip to the relay, from its transactions: what the relay
    /// adds to the way to the server, about.
    pub(crate) fn round_trip(&self) -> Option<Duration> {
        self.relay.round_trip()
    }

    /// The route through the relay, once the channel is bound.
    pub(crate) fn route(&self) -> Option<RelayRoute> {
        self.route
    }

    /// What to send the TURN server now.
    pub(crate) fn poll(&mut self, now: Duration) -> Vec<Vec<u8>> {
        if self.failed {
            return Vec::new();
        }
        self.relay.poll(now)
    }

    /// A datagram from the TURN server's address.
    pub(crate) fn receive(&mut self, bytes: &[u8], now: Duration) -> Vec<RelayNews> {
        if self.failed {
            return Vec::new();
        }
        let mut news = Vec::new();
        for event in self.relay.receive(bytes, now) {
            match event {
                Event::Allocated { relayed, .. } => news.push(RelayNews::Relayed(relayed)),
                Event::Data { peer, payload } if canonical_ip(peer) == canonical_ip(self.server) => {
                    let probe = Reach::parse(&payload) == Some(Reach::PunchProbe);
                    // Only a probe names the server's port as the relay sees
                    // it: a datagram forged from another port of its address
                    // before the first probe cannot take the channel.
                    if probe && self.peer.is_none() {
                        self.peer = Some(peer);
                        // The first use of the peer binds a channel to it
                        // (the Send indication it returns is not needed).
                        let _ = self.relay.wrap(peer, &[], now);
                    }
                    if probe {
                        news.push(RelayNews::Probe);
                    } else if Some(peer) == self.peer {
                        news.push(RelayNews::FromServer(payload));
                    }
                }
                Event::Data { .. } => {}
                Event::PermissionRefused { peer_ip, code } => {
                    self.failed = true;
                    news.push(RelayNews::Failed(format!(
                        "the relay at {} refused to carry datagrams to {peer_ip} ({code} {})",
                        self.relay.server(),
                        arena_turn::code_in_words(code)
                    )));
                }
                Event::Failed(e) => {
                    self.failed = true;
                    news.push(RelayNews::Failed(format!("{e} (the relay at {})", self.relay.server())));
                }
            }
        }
        if self.route.is_none()
            && let Some(peer) = self.peer
            && let Some(channel) = self.relay.bound_channel(peer)
        {
            let route = RelayRoute { turn: self.relay.server(), channel };
            self.route = Some(route);
            self.routed_at = Some(now);
            news.push(RelayNews::Route(route));
        }
        news
    }

    /// Whether the relay has not allocated by [`ALLOCATE_WITHIN`]: why, once.
    pub(crate) fn stalled(&mut self, now: Duration) -> Option<String> {
        if self.failed || self.relay.relayed().is_some() || now < self.allocate_by {
            return None;
        }
        self.failed = true;
        Some(format!(
            "the relay at {} did not answer within {:.0} s",
            self.relay.server(),
            ALLOCATE_WITHIN.as_secs_f64()
        ))
    }

    /// Deletes the allocation: what to send the TURN server.
    pub(crate) fn close(&mut self, now: Duration) -> Vec<Vec<u8>> {
        self.failed = true;
        self.relay.close(now)
    }

    /// Whether the relay carried the connection and then went silent at
    /// `now` (`last_heard`: when the server's newest datagram came): the
    /// server silent for [`SUSPECT_AFTER`], then the relay asked for a sign
    /// of life and silent too, [`RELAY_SILENCE`] in all. Silence counts from
    /// the route's start at the earliest, and a frame that came long after
    /// the last one (a window stalled loading, a machine asleep) starts it
    /// again: the game sent nothing then either, so nothing was due back.
    pub(crate) fn lost(&mut self, last_heard: Option<Duration>, now: Duration) -> Option<String> {
        let stalled = self.watched_at.is_some_and(|t| now.saturating_sub(t) >= STALL);
        self.watched_at = Some(now);
        let routed_at = self.routed_at?;
        if stalled {
            self.quiet_from = now;
            self.suspect_since = None;
        }
        if self.failed {
            return None;
        }
        let since = routed_at.max(last_heard.unwrap_or(routed_at)).max(self.quiet_from);
        let silence = now.saturating_sub(since);
        match self.suspect_since {
            _ if silence < SUSPECT_AFTER => {
                self.suspect_since = None;
                None
            }
            None => {
                self.suspect_since = Some(now);
                self.relay.refresh_now(now);
                None
            }
            // The relay answered: the server is the silent one.
            Some(asked) if self.relay.last_heard().is_some_and(|t| t >= asked) => {
                self.quiet_from = now;
                self.suspect_since = None;
                None
            }
            Some(_) if silence < RELAY_SILENCE => None,
            Some(_) => {
                self.failed = true;
                Some(format!(
                    "nothing came through the relay at {} for {:.0} s, and it did not answer itself",
                    self.relay.server(),
                    silence.as_secs_f64()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(now: Duration) -> RelayedPath {
        let grant = RelayGrant {
            turn: "11.0.0.3:3478".parse().unwrap(),
            username: "1800000600:11.0.9.1".into(),
            password: "q7uTmiJ3tbEVq2aD3Ri9hDEHaSs=".into(),
            master: "11.0.0.1:27950".parse().unwrap(),
        };
        RelayedPath::new(grant, "11.0.3.1:27015".parse().unwrap(), now)
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn silence_counts_only_while_frames_come_and_only_once_routed() {
        let mut p = path(ms(0));
        assert_eq!(p.lost(None, ms(5000)), None, "not routed: nothing to lose");
        p.routed_at = Some(ms(5000));
        // Frames every 100 ms, the server heard until 6 s, then nothing.
        let mut told = None;
        for t in (5100..=9000).step_by(100) {
            let heard = Some(ms(t.min(6000)));
            if let Some(why) = p.lost(heard, ms(t)) {
                told = Some((t, why));
                break;
            }
        }
        let (at, why) = told.expect("told");
        assert_eq!(at, 8000, "2 s after the last datagram");
        assert!(why.contains("11.0.0.3:3478"), "{why}");
        assert_eq!(p.lost(None, ms(9000)), None, "told once");

        // A window that stalls 3 s (loading) is not the relay's silence.
        let mut p = path(ms(0));
        p.routed_at = Some(ms(1000));
        assert_eq!(p.lost(Some(ms(1000)), ms(1100)), None);
        assert_eq!(p.lost(Some(ms(1100)), ms(4100)), None, "the frame after a stall");
        assert_eq!(p.lost(Some(ms(1100)), ms(4200)), None);
        assert!(p.lost(Some(ms(1100)), ms(6100)).is_none(), "a gap of 1.9 s is a stall again");
    }

    #[test]
    fn a_relay_that_never_allocates_is_called_down_once() {
        let mut p = path(ms(0));
        assert_eq!(p.stalled(ms(2900)), None);
        let why = p.stalled(ms(3000)).expect("down");
        assert!(why.contains("did not answer within 3 s"), "{why}");
        assert_eq!(p.stalled(ms(4000)), None);
        assert!(p.poll(ms(4000)).is_empty(), "nothing more sent to it");
    }
}
