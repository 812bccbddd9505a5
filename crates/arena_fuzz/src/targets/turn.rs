//! Fuzz targets of the TURN client (`arena_turn`): its parsers on any
//! bytes, and a relay in each of its states fed datagrams from the relay's
//! address, forged ones and answers to its own requests alike.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use arena_turn::fuzzing::{answer, parse_channel_data, parse_stun};
use arena_turn::{Credentials, Event, MAX_CHANNELS, MAX_DATAGRAM, MAX_PERMISSIONS, Relay, TurnDatagram, classify};

use crate::target::Target;

const SERVER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(11, 0, 0, 5), 3478));
const PEER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(11, 0, 0, 6), 9000));
const STRANGER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(11, 0, 0, 7), 9000));
const REALM: &[u8] = b"arena.test";

fn credentials() -> Credentials {
    Credentials { username: "1700000000:player".into(), password: "pw".into() }
}

/// Any bytes into the STUN and ChannelData readers.
pub struct TurnMessages;

impl Target for TurnMessages {
    fn name(&self) -> &'static str {
        "turn_messages"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut relay = Relay::new(SERVER, credentials(), Duration::ZERO);
        let allocate = relay.poll(Duration::ZERO).pop().unwrap_or_default();
        vec![
            allocate.clone(),
            answer(&allocate, &[2, 0, 6, 11, 0, 0, 5, 0xC3, 0x51, 3, 4, 0, 0, 2, 0x58], &credentials(), REALM)
                .unwrap_or_default(),
            answer(&allocate, b"\x01\x04\x02\x00\x65\x05\x0aarena.test\x06\x05nonce", &credentials(), REALM)
                .unwrap_or_default(),
            vec![0x40, 0x00, 0x00, 0x05, b'h', b'e', b'l', b'l', b'o'],
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let class = classify(input);
        if let Some(m) = parse_stun(input) {
            assert_eq!(class, Some(TurnDatagram::Stun));
            assert!(input.len() <= MAX_DATAGRAM && input.len().is_multiple_of(4));
            assert!(m.data_len.is_none_or(|n| n + 20 <= input.len()));
            assert!(m.error_code.is_none_or(|c| (300..700).contains(&c)));
        }
        if let Some((channel, data)) = parse_channel_data(input) {
            assert_eq!(class, Some(TurnDatagram::ChannelData));
            assert!((0x4000..=0x4FFF).contains(&channel));
            assert!(data.len() + 4 <= input.len() && input.len() - 4 - data.len() < 4, "padding beyond 3 bytes");
        }
        if input.len() > MAX_DATAGRAM {
            assert_eq!(class, None);
        }
    }
}

/// The state a relay is put in before the fuzzer's datagrams.
#[derive(Clone, Copy, Debug)]
enum State {
    /// The unsigned Allocate in flight.
    Fresh,
    /// The signed Allocate in flight after a 401.
    Challenged,
    /// Allocated; PEER permitted, a channel bound to it, the ChannelBind's
    /// refresh and the permission's in flight later.
    Bound,
    /// Allocated, its Refresh in flight.
    Refreshing,
    /// Closing (Refresh with lifetime 0 in flight).
    Closing,
}

/// A relay taken to `state` by a well-behaved relay played here; the
/// request in flight then.
fn relay_in(state: State) -> (Relay, Vec<u8>) {
    let c = credentials();
    let mut relay = Relay::new(SERVER, c.clone(), Duration::ZERO);
    let mut request = relay.poll(Duration::ZERO).pop().unwrap_or_default();
    if matches!(state, State::Fresh) {
        return (relay, request);
    }
    let challenge = b"\x01\x04\x02\x00\x65\x05\x0aarena.test\x06\x05nonce";
    let _ = relay.receive(&answer(&request, challenge, &c, REALM).unwrap_or_default(), Duration::ZERO);
    request = relay.poll(Duration::ZERO).pop().unwrap_or_default();
    if matches!(state, State::Challenged) {
        return (relay, request);
    }
    let allocated = [2, 0, 6, 11, 0, 0, 5, 0xC3, 0x51, 3, 4, 0, 0, 2, 0x58];
    let _ = relay.receive(&answer(&request, &allocated, &c, REALM).unwrap_or_default(), Duration::ZERO);
    assert!(relay.relayed().is_some(), "the scripted allocation failed");
    let now = Duration::from_secs(1);
    match state {
        State::Bound => {
            relay.permit(PEER.ip());
            let _ = relay.wrap(PEER, b"first", now);
            for request in relay.poll(now) {
                let _ = relay.receive(&answer(&request, &[2], &c, REALM).unwrap_or_default(), now);
            }
            assert!(relay.is_permitted(PEER.ip()), "the scripted permission failed");
            request = relay.poll(Duration::from_secs(541)).pop().unwrap_or_default();
        }
        State::Refreshing => request = relay.poll(Duration::from_secs(540)).pop().unwrap_or_default(),
        _ => request = relay.close(now).pop().unwrap_or_default(),
    }
    (relay, request)
}

/// A relay in one of its states (the first byte) fed datagrams: each item
/// `[how][time step][length][bytes]` is either the bytes as they are, or
/// an answer to the request in flight made from them (its transaction ID,
/// signed or not), then a poll and a wrap. What must hold: data only from
/// PEER, once permitted; ChannelData exactly 4 bytes more than its payload;
/// every datagram sent a STUN request or indication within 1500 bytes; a
/// bounded number of them; nothing after failing.
pub struct TurnRelay;

impl Target for TurnRelay {
    fn name(&self) -> &'static str {
        "turn_relay"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            vec![0, 1, 0, 15, 2, 0, 6, 11, 0, 0, 5, 0xC3, 0x51, 3, 4, 0, 0, 2, 0x58],
            vec![1, 1, 0, 15, 2, 0, 6, 11, 0, 0, 5, 0xC3, 0x51, 3, 4, 0, 0, 2, 0x58],
            vec![2, 0, 10, 9, 0x40, 0x00, 0x00, 0x05, b'h', b'e', b'l', b'l', b'o'],
            vec![2, 1, 0, 2, 3, 4],
            [&[3, 1, 0, 24, 3, 4, 2, 0x00, 0x8a, 6, 5][..], b"nonce", &[5, 10], b"arena.test"].concat(),
            vec![4, 1, 0, 2, 3, 0],
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let Some((&which, mut rest)) = input.split_first() else { return };
        let state =
            [State::Fresh, State::Challenged, State::Bound, State::Refreshing, State::Closing][usize::from(which % 5)];
        let (mut relay, mut in_flight) = relay_in(state);
        let c = credentials();
        let mut now = Duration::from_secs(2);
        while let [how, step, len, tail @ ..] = rest {
            let len = usize::from(*len).min(tail.len());
            let (bytes, next) = tail.split_at(len);
            rest = next;
            now += Duration::from_millis(u64::from(*step) * 40);
            let datagram =
                if how & 1 == 1 { answer(&in_flight, bytes, &c, REALM).unwrap_or_default() } else { bytes.to_vec() };
            let was_failed = relay.is_failed();
            let events = relay.receive(&datagram, now);
            if was_failed {
                assert!(events.is_empty(), "events after failing: {events:?}");
            }
            for event in &events {
                match event {
                    Event::Data { peer, payload } => {
                        assert_eq!(peer.ip(), PEER.ip(), "data from a peer never permitted");
                        assert!(relay.is_permitted(peer.ip()));
                        assert!(payload.len() <= datagram.len());
                    }
                    Event::Allocated { .. } => assert!(relay.relayed().is_some()),
                    Event::Failed(_) => assert!(relay.is_failed()),
                    Event::PermissionRefused { .. } => {}
                }
            }
            let sent = relay.poll(now);
            assert!(sent.len() <= 1 + MAX_PERMISSIONS + MAX_CHANNELS);
            if relay.is_failed() {
                assert!(sent.is_empty());
                assert!(relay.relayed().is_none());
            }
            for d in &sent {
                let m = parse_stun(d).expect("a request the reader reads back");
                assert!(m.is_request && d.len() <= MAX_DATAGRAM);
                in_flight.clone_from(d);
            }
            if how & 2 == 2 {
                relay.permit(if how & 4 == 4 { STRANGER.ip() } else { PEER.ip() });
            }
            let to = if how & 8 == 8 { SocketAddr::new(IpAddr::V4(Ipv4Addr::new(11, 0, 0, 6)), 9001) } else { PEER };
            if let Some(wrapped) = relay.wrap(to, bytes, now) {
                assert!(wrapped.len() <= MAX_DATAGRAM);
                match classify(&wrapped) {
                    Some(TurnDatagram::ChannelData) => assert_eq!(wrapped.len(), bytes.len() + 4),
                    _ => {
                        let m = parse_stun(&wrapped).expect("a Send indication");
                        assert!(m.is_indication && m.peer == Some(to) && m.data_len == Some(bytes.len()));
                    }
                }
            }
        }
    }
}
