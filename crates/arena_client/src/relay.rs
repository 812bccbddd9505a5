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

/// Silence from the server this long while the relay carries the
/// connection: the relay is taken for lost (the player is told within
/// 3 s, with a second to spare for the frame and the message).
pub(crate) const RELAY_SILENCE: Duration = Duration::from_millis(2000);
/// A relay that has not allocated this long after the first request is
/// taken for down (a live one answers within a round trip or two; TURN's
/// own retransmissions would wait 39.5 s).
pub(crate) const ALLOCATE_WITHIN: Duration = Duration::from_millis(3000);

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
                Event::Data { peer, payload } if peer.ip() == self.server.ip() => {
                    if self.peer.is_none() {
                        self.peer = Some(peer);
                        // The first use of the peer binds a channel to it
                        // (the Send indication it returns is not needed).
                        let _ = self.relay.wrap(peer, &[], now);
                    }
                    if Reach::parse(&payload) == Some(Reach::PunchProbe) {
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

    /// Whether the relay carried the connection and then went silent for
    /// [`RELAY_SILENCE`] (`server_silence`: since the server was last heard).
    pub(crate) fn lost(&mut self, server_silence: Duration) -> Option<String> {
        if self.failed || self.route.is_none() || server_silence < RELAY_SILENCE {
            return None;
        }
        self.failed = true;
        Some(format!(
            "nothing came through the relay at {} for {:.0} s",
            self.relay.server(),
            server_silence.as_secs_f64()
        ))
    }
}
