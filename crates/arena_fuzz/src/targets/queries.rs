//! Fuzz targets of server queries (Valve's A2S): requests as the server's
//! guard judges them, replies as the browsers read them.

use crate::target::Target;

/// Server queries (A2S) as the server's guard judges them, before netcode
/// sees a byte: whatever comes in, a reply never outgrows the request.
pub struct QueryRequests {
    guard: arena_server::Guard,
    now_ms: u64,
}

impl Default for QueryRequests {
    fn default() -> Self {
        Self { guard: arena_server::Guard::new(arena_protocol::key::OPEN_KEY, arena_protocol::PROTOCOL_ID), now_ms: 0 }
    }
}

impl Target for QueryRequests {
    fn name(&self) -> &'static str {
        "query_requests"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::query::{QueryKind, Request};
        [QueryKind::Info, QueryKind::Players, QueryKind::Rules]
            .into_iter()
            .flat_map(|kind| [None, Some(-1), Some(0x1234_5678)].map(|challenge| Request { kind, challenge }.encode()))
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::query::Request;
        if let Ok(request) = Request::parse(input) {
            let again = Request::parse(&request.encode()).expect("an encoded request parses");
            assert_eq!(again, request);
        }
        // Time moves on so that the rate limits and challenge periods turn.
        self.now_ms += 7;
        let from = std::net::SocketAddr::from(([192, 0, 2, (self.now_ms % 7) as u8], 27_000));
        let mut datagram = input.to_vec();
        let now = std::time::Duration::from_millis(self.now_ms);
        if let arena_server::Verdict::Reply(reply) = self.guard.judge(from, &mut datagram, now, 0) {
            assert!(reply.len() <= input.len(), "{} bytes answered {} bytes", reply.len(), input.len());
        }
    }
}

/// Server query replies as the LAN browser and `arena servers` read them:
/// whole, or in parts to reassemble.
pub struct QueryReplies;

impl Target for QueryReplies {
    fn name(&self) -> &'static str {
        "query_replies"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::query::{PlayerEntry, Reply};
        let players = Reply::Players(
            (0..40)
                .map(|i| PlayerEntry { name: format!("Player {i}"), score: i, duration_s: 1.5 * i as f32 })
                .collect(),
        );
        let mut seeds = players.datagrams(7);
        seeds.extend(Reply::Challenge(99).datagrams(0));
        seeds.extend(Reply::Rules(vec![("tick_hz".into(), "64".into())]).datagrams(0));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::query::{Reassembly, Reply};
        if let Ok(reply) = Reply::parse(input) {
            // What parses can be said again, and reads back the same.
            let mut joined = Reassembly::default();
            let parts = reply.datagrams(3);
            let back = parts.iter().filter_map(|d| joined.accept(d)).next_back();
            assert!(matches!(back, Some(Ok(_))), "{reply:?} came back as {back:?}");
        }
        // The input cut in pieces as parts of one reply (or not).
        let mut joined = Reassembly::default();
        for piece in input.chunks(37) {
            let _ = joined.accept(piece);
        }
    }
}
