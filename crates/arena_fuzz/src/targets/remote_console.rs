//! The fuzz target of the remote console (rcon, issue 40): its datagrams
//! parsed and said again, the server's gate fed them from a few addresses
//! with time moving (no reply to an unproved address larger than what it
//! sent; nothing ever runs without the password), the round trip with the
//! password for any command text, and answers joined as the client joins them.

use std::net::SocketAddr;
use std::time::Duration;

use arena_protocol::rcon::{self, Challenge, Packet, RconKey, RefusalReason};
use arena_server::{RconGate, RconVerdict};

use crate::target::Target;

/// The password of the seeds' MACs (and of the gate that lets commands run).
const KNOWN_PASSWORD: &str = "fuzz knows this one";
/// The salt of the gate the fuzzer talks to (the server makes its own at random).
const SEED_SALT: rcon::Salt = [11; rcon::SALT_BYTES];
/// The password of the gate the inputs attack: no seed and no input carries
/// a MAC under it, so nothing may ever run there.
const SECRET_PASSWORD: &str = "the fuzzer never learns this one";
/// The challenge of the seeds' commands and answers.
const SEED_CHALLENGE: Challenge = [0x5A; rcon::CHALLENGE_BYTES];
/// Addresses the inputs come from.
const SENDERS: u8 = 8;

/// Remote console datagrams through the parser, the server's gate (with a
/// password, and without one) and the client's join of an answer.
pub struct RconMessages {
    known: RconKey,
    secret: RconKey,
    /// Keyed by the secret password: attacked by every input.
    guarded: RconGate,
    /// No rcon password: everything refused, within the same limits.
    closed: RconGate,
    /// Keyed by the known password: each input's text runs as a command.
    open: RconGate,
    now_ms: u64,
}

impl Default for RconMessages {
    fn default() -> Self {
        // A failed derivation is a harness setup failure: it panics at once.
        let known = RconKey::derive(KNOWN_PASSWORD, &SEED_SALT).expect("the known rcon key");
        let secret = RconKey::derive(SECRET_PASSWORD, &SEED_SALT).expect("the secret rcon key");
        Self {
            guarded: RconGate::new(Some(secret.clone())),
            closed: RconGate::new(None),
            open: RconGate::new(Some(known.clone())),
            known,
            secret,
            now_ms: 0,
        }
    }
}

/// Datagrams bundled into one input for the answer join: each a 2-byte
/// little-endian length and its bytes.
fn bundle(datagrams: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for d in datagrams {
        out.extend_from_slice(&(d.len() as u16).to_le_bytes());
        out.extend_from_slice(d);
    }
    out
}

fn unbundle(mut input: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some((len, rest)) = input.split_first_chunk::<2>() {
        let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
        out.push(&rest[..len]);
        input = &rest[len..];
    }
    out
}

impl Target for RconMessages {
    fn name(&self) -> &'static str {
        "rcon_messages"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let key = &self.known;
        let c = SEED_CHALLENGE;
        let mut seeds = vec![
            Packet::ChallengeRequest.encode(),
            Packet::Challenge { challenge: c, salt: SEED_SALT }.encode(),
            Packet::command(key, c, "status").expect("a command").encode(),
            Packet::command(key, c, &"kick ".repeat(100)).expect("a command").encode(),
        ];
        for reason in
            [RefusalReason::BadMac, RefusalReason::UnknownChallenge, RefusalReason::NoRcon, RefusalReason::Limited]
        {
            seeds.push(Packet::Refused { reason }.encode());
        }
        let one = rcon::answer_packets(key, &c, "map dm1, 3 players");
        let many = rcon::answer_packets(key, &c, &"a long answer line\n".repeat(300));
        seeds.extend(one.iter().chain(&many).map(Packet::encode));
        seeds.push(bundle(&one.iter().map(Packet::encode).collect::<Vec<_>>()));
        seeds.push(bundle(&many.iter().map(Packet::encode).collect::<Vec<_>>()));
        seeds.push(bundle(&many.iter().rev().map(Packet::encode).collect::<Vec<_>>()));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        // What parses is said again byte for byte.
        if let Ok(packet) = Packet::parse(input) {
            assert_eq!(packet.encode(), input, "{packet:?}");
            assert!(input.len() <= rcon::MAX_DATAGRAM_BYTES);
        }

        // The gates, from one of a few addresses, time moving on (at this
        // pace each address stays under its limit, but a run of inputs
        // from one of them meets it).
        self.now_ms += 40;
        let now = Duration::from_millis(self.now_ms);
        let sender = input.iter().fold(0u8, |a, b| a.wrapping_add(*b)) % SENDERS;
        let from = SocketAddr::from(([192, 0, 2, sender], 27_000 + u16::from(sender)));
        for (gate, name) in [(&mut self.guarded, "guarded"), (&mut self.closed, "closed")] {
            match gate.judge(from, input, now) {
                RconVerdict::Reply(reply) => {
                    assert!(reply.len() <= input.len(), "{name}: {} bytes answered {} bytes", reply.len(), input.len())
                }
                RconVerdict::Run { command, .. } => panic!("{name}: {command:?} ran without the password"),
                RconVerdict::Drop => {}
            }
        }
        if self.now_ms.is_multiple_of(10_000) {
            self.guarded.expire(now);
            self.closed.expire(now);
        }

        // With the password, any command text runs, and any output comes
        // back whole (or cut, marked) in checked datagrams.
        let text = String::from_utf8_lossy(input);
        self.command_round_trip(&text, now);

        // The input as the datagrams of an answer, joined as the client
        // joins them: under the seeds' key (mutated seeds) and under the
        // secret one (which nothing may pass).
        let parts: Vec<Packet> = unbundle(input).into_iter().filter_map(|d| Packet::parse(d).ok()).collect();
        if let Ok(joined) = rcon::join_answer(&self.known, &SEED_CHALLENGE, &parts) {
            assert!(joined.len() <= rcon::MAX_ANSWER_TEXT_BYTES * usize::from(rcon::MAX_ANSWER_PARTS));
        }
        assert!(
            rcon::join_answer(&self.secret, &SEED_CHALLENGE, &parts).is_err(),
            "an answer under the secret key from the fuzzer"
        );
    }

    fn reset(&mut self) {
        self.guarded = RconGate::new(Some(self.secret.clone()));
        self.closed = RconGate::new(None);
        self.open = RconGate::new(Some(self.known.clone()));
    }
}

impl RconMessages {
    fn command_round_trip(&mut self, text: &str, now: Duration) {
        // One administrator, a second apart each time: never limited.
        let admin = SocketAddr::from(([198, 51, 100, 1], 40_000));
        let now = now * 25;
        let challenge = match self.open.judge(admin, &Packet::ChallengeRequest.encode(), now) {
            RconVerdict::Reply(reply) => match Packet::parse(&reply) {
                Ok(Packet::Challenge { challenge, .. }) => challenge,
                other => panic!("no challenge but {other:?}"),
            },
            other => panic!("no challenge but {other:?}"),
        };
        let command: String = text.chars().filter(|c| !c.is_control()).collect();
        let command = rcon::check_command(&command).map(|()| command);
        if let Ok(command) = command {
            let datagram = Packet::command(&self.known, challenge, &command).expect("a checked command").encode();
            assert_eq!(
                self.open.judge(admin, &datagram, now + Duration::from_millis(1)),
                RconVerdict::Run { command: command.clone(), challenge }
            );
            // Said again: a replay, refused.
            let again = self.open.judge(admin, &datagram, now + Duration::from_millis(2));
            assert_eq!(again, RconVerdict::Reply(Packet::Refused { reason: RefusalReason::UnknownChallenge }.encode()));
        }
        let datagrams = self.open.answer(&challenge, text);
        assert!((1..=usize::from(rcon::MAX_ANSWER_PARTS)).contains(&datagrams.len()));
        let parts: Vec<Packet> = datagrams
            .iter()
            .map(|d| {
                assert!(d.len() <= rcon::MAX_DATAGRAM_BYTES, "an answer datagram of {} bytes", d.len());
                Packet::parse(d).expect("an answer datagram parses")
            })
            .collect();
        let joined = rcon::join_answer(&self.known, &challenge, &parts).expect("an answer joins");
        if text.chars().all(|c| !c.is_control()) && text.len() <= rcon::MAX_ANSWER_TEXT_BYTES {
            assert_eq!(joined, text);
        }
    }
}
