//! The remote console's gate (issue 40): what the server does with an rcon
//! datagram (`arena_protocol::rcon`) before anything runs. It owns the rcon
//! key, the challenges it issued (each tied to one address, valid
//! [`CHALLENGE_LIFETIME`], used once, a few held per address), a ring of the
//! challenges lately used (so a replay is told from a stranger's guess),
//! per-address and global rate limits, and the counters of what it refused.
//!
//! The limits are charged only for what parses and what proves nothing yet
//! (issue 60): a datagram that does not parse costs a counter and gets no
//! reply; a command with a challenge held for its address goes straight to
//! its seal, before any bucket (its challenge was charged when issued); a
//! challenge request is charged to its own address's bucket only (the
//! answer is no larger than the request, so a stranger's flood of them
//! spends nothing of anyone else's); only what earns a refusal (a command
//! with no challenge held, any request to a server with no password) spends
//! the shared bucket. Garbage from an administrator's own address and
//! requests from a crowd of others therefore cannot lock the administrator
//! out. Pure: no socket, no
//! Bevy, no clock of its own; the caller hands it each datagram with the
//! time, sends what it says, runs what it lets through, logs each command
//! with its address and sends the answer it seals.
//!
//! What an address that has proved nothing gets back is never larger than
//! what it sent: a challenge (as large as its padded request) or a refusal
//! (10 bytes). Only an answer to a command whose seal opened may be larger,
//! and only the server that has the password, to the address its challenge
//! went to, sends one.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arena_protocol::rcon::{self, Challenge, Packet, RconKey, RefusalReason};
use arena_udp::{canonical, limit_key};

use super::rate_limits::{Bucket, IpLimits};

/// How long an issued challenge may be used: a round trip and a human's
/// patience are far shorter; a replay of an older command meets no challenge.
pub const CHALLENGE_LIFETIME: Duration = Duration::from_secs(10);
/// Challenges held for one address (an IPv4 address or an IPv6 /64) at
/// once; a new one evicts that address's own oldest, never another's.
pub(crate) const MAX_CHALLENGES_PER_ADDRESS: usize = 4;
/// Addresses holding challenges at once. When full, expired challenges are
/// swept; if it is still full, the address served longest ago loses its
/// challenges: a flood from thousands of new addresses a second would
/// still leave an administrator's challenge the better part of a second,
/// far more than the round trip its command comes in.
pub(crate) const MAX_CHALLENGE_ADDRESSES: usize = 4096;
/// Challenges remembered after use, so that a command sent again is counted
/// as a replay (it is refused either way).
pub(crate) const RECENTLY_USED_CHALLENGES: usize = 256;
/// Challenge requests answered per second from one address (an IPv4
/// address or an IPv6 /64), and at once: a command needs one, so an
/// administrator gets four commands a second, and a password guesser as
/// many guesses (each challenge is spent by one try at its seal).
pub(crate) const PER_ADDRESS_PER_S: f32 = 4.0;
pub(crate) const PER_ADDRESS_BURST: f32 = 8.0;
/// Refusals (a command with no challenge held, any request to a server
/// without a password) per second from one address, and at once; a
/// separate bucket, so unproven commands from an address do not spend its
/// challenge requests.
const REFUSALS_PER_ADDRESS_PER_S: f32 = 4.0;
const REFUSALS_PER_ADDRESS_BURST: f32 = 8.0;
/// Refusals per second to everyone, and at once.
pub(crate) const GLOBAL_PER_S: f32 = 100.0;
pub(crate) const GLOBAL_BURST: f32 = 200.0;
/// Wrong passwords (seals that do not open) an address may try: this many
/// a second, and at once; over it, the address gets no challenge until its
/// budget refills. An administrator who types the password right never
/// spends it.
const BAD_SEALS_PER_ADDRESS_PER_S: f32 = 0.2;
const BAD_SEALS_PER_ADDRESS_BURST: f32 = 4.0;
/// Wrong passwords from everyone, a second and at once: past it, addresses
/// that have tried a wrong one lately get no challenge either, so guesses
/// from many addresses are capped in all; an address that has not (the
/// administrator's) is served still.
const BAD_SEALS_PER_S: f32 = 20.0;
const BAD_SEALS_BURST: f32 = 100.0;
/// Addresses whose wrong passwords are remembered, at most.
const MAX_BAD_SEAL_ADDRESSES: usize = 4096;
/// `Limited` refusals per second to one address, and in all: a limited
/// sender learns why once in a while, and a flood earns next to nothing.
const NOTICES_PER_ADDRESS_PER_S: f32 = 0.5;
const NOTICES_PER_ADDRESS_BURST: f32 = 1.0;
const NOTICES_PER_S: f32 = 10.0;
const NOTICES_BURST: f32 = 10.0;

/// What the gate did, counted since the server started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RconCounters {
    pub challenges_issued: u64,
    /// Commands whose seal opened (AEAD under the key): handed to the caller to run.
    pub commands_accepted: u64,
    /// Commands with a challenge of theirs whose seal did not open (a wrong password).
    pub bad_mac: u64,
    /// Commands whose challenge was used already.
    pub replays: u64,
    /// Commands whose challenge the gate does not hold for their address
    /// (expired, evicted, another address's, or made up).
    pub unknown_challenge: u64,
    /// Well-formed rcon datagrams that proved nothing (challenge requests,
    /// commands with no challenge held) over the rate limits: not judged.
    pub limited: u64,
    /// rcon datagrams that do not parse, or travel the wrong way.
    pub malformed: u64,
    /// Requests and commands refused because the server has no rcon password.
    pub no_rcon: u64,
}

impl RconCounters {
    /// What was refused in `self` and not yet in `before`, in words, or
    /// `None` if nothing was.
    fn refused_since(&self, before: &RconCounters) -> Option<String> {
        let parts: Vec<String> = [
            (self.bad_mac - before.bad_mac, "bad MAC"),
            (self.replays - before.replays, "replayed"),
            (self.unknown_challenge - before.unknown_challenge, "unknown challenge"),
            (self.limited - before.limited, "over the rate limit"),
            (self.malformed - before.malformed, "malformed"),
            (self.no_rcon - before.no_rcon, "no rcon password set"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "rcon: refused {} ({}); {} commands run",
                parts.len(),
                parts.join(", "),
                self.commands_accepted - before.commands_accepted
            )
        })
    }
}

/// What to do with an rcon datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RconVerdict {
    /// Send this back (a challenge or a refusal): never larger than the
    /// datagram it answers.
    Reply(Vec<u8>),
    /// The seal opened: run `command` (log it with the sender's address),
    /// then send [`RconGate::answer`] of its output under `challenge`.
    Run { command: String, challenge: Challenge },
    /// Send nothing.
    Drop,
}

/// A challenge handed out.
#[derive(Clone, Copy, Debug)]
struct Issued {
    challenge: Challenge,
    to: SocketAddr,
    at: Duration,
}

/// The remote console's gate: every rcon datagram is judged here.
#[derive(Debug)]
pub struct RconGate {
    /// `None`: the server has no rcon password, and refuses every request.
    key: Option<RconKey>,
    /// The secret behind the challenges (SipHash keyed from the OS's
    /// randomness through std's hasher seeding): unguessable, so a forged
    /// source address cannot answer a challenge it never saw.
    mint: RandomState,
    minted: u64,
    /// The challenges held for each address ([`limit_key`]), oldest first.
    issued: HashMap<IpAddr, VecDeque<Issued>>,
    /// When the full table of addresses was last swept.
    swept: Option<Duration>,
    /// Oldest first.
    used: VecDeque<Challenge>,
    per_address: IpLimits,
    refusals: IpLimits,
    everyone: Bucket,
    /// Wrong passwords lately, per address ([`limit_key`]) and in all.
    bad_seals: HashMap<IpAddr, Bucket>,
    everyone_bad: Bucket,
    notices: IpLimits,
    everyone_notices: Bucket,
    counters: RconCounters,
    summarised: RconCounters,
}

impl RconGate {
    /// A gate with the key of the server's rcon password, or none (no
    /// remote console: every request is refused `NoRcon`, within the same limits).
    pub fn new(key: Option<RconKey>) -> Self {
        Self {
            key,
            mint: RandomState::new(),
            minted: 0,
            issued: HashMap::new(),
            swept: None,
            used: VecDeque::new(),
            per_address: IpLimits::default(),
            refusals: IpLimits::default(),
            bad_seals: HashMap::new(),
            everyone_bad: Bucket::full(BAD_SEALS_BURST, Duration::ZERO),
            everyone: Bucket::full(GLOBAL_BURST, Duration::ZERO),
            notices: IpLimits::default(),
            everyone_notices: Bucket::full(NOTICES_BURST, Duration::ZERO),
            counters: RconCounters::default(),
            summarised: RconCounters::default(),
        }
    }

    /// Whether the server runs a remote console (has an rcon password).
    pub fn has_console(&self) -> bool {
        self.key.is_some()
    }

    pub fn counters(&self) -> RconCounters {
        self.counters
    }

    /// Judges one datagram that [`rcon::is_rcon`] claimed, from `from`, at
    /// `now` (the server's monotonic time).
    pub fn judge(&mut self, from: SocketAddr, datagram: &[u8], now: Duration) -> RconVerdict {
        let from = canonical(from);
        // Parsing first: bounded (the transport cuts a datagram at its
        // largest size) and cheaper than the bucket lookups a flood would
        // otherwise spend someone's budget on. What does not parse is
        // counted, never answered, and charged to nobody.
        let packet = match Packet::parse(datagram) {
            Ok(packet) => packet,
            Err(_) => {
                self.counters.malformed += 1;
                return RconVerdict::Drop;
            }
        };
        match packet {
            // What only a server sends.
            Packet::Challenge { .. } | Packet::Answer { .. } | Packet::Refused { .. } => {
                self.counters.malformed += 1;
                RconVerdict::Drop
            }
            // A challenge of ours for this address: the seal decides, before
            // any bucket (the challenge was charged when it was issued).
            Packet::Command { challenge, sealed } if self.holds(from, &challenge, now) => {
                self.command(from, challenge, &sealed, datagram, now)
            }
            Packet::ChallengeRequest if let Some(salt) = self.key.as_ref().map(|k| *k.salt()) => {
                // Charged to this address alone: the challenge is no larger
                // than the request, so a crowd's requests cost nobody else.
                if !self.per_address.take(from.ip(), now, PER_ADDRESS_PER_S, PER_ADDRESS_BURST)
                    || self.guessing(from.ip(), now)
                {
                    return self.limited(from, datagram.len(), now);
                }
                let challenge = self.issue(from, now);
                reply(&Packet::Challenge { challenge, salt }, datagram.len())
            }
            // Whatever is left earns a refusal: charged to the address's
            // refusals and to everyone's.
            _ if !self.refusals.take(from.ip(), now, REFUSALS_PER_ADDRESS_PER_S, REFUSALS_PER_ADDRESS_BURST)
                || !self.everyone.take(now, GLOBAL_PER_S, GLOBAL_BURST) =>
            {
                self.limited(from, datagram.len(), now)
            }
            Packet::ChallengeRequest => {
                self.counters.no_rcon += 1;
                refuse(RefusalReason::NoRcon, datagram.len())
            }
            Packet::Command { challenge, .. } => {
                if self.key.is_none() {
                    self.counters.no_rcon += 1;
                    return refuse(RefusalReason::NoRcon, datagram.len());
                }
                if self.used.contains(&challenge) {
                    self.counters.replays += 1;
                } else {
                    self.counters.unknown_challenge += 1;
                }
                refuse(RefusalReason::UnknownChallenge, datagram.len())
            }
        }
    }

    /// Over a limit: counted, and once in a while told (when the notice
    /// fits in the datagram it answers).
    fn limited(&mut self, from: SocketAddr, request_bytes: usize, now: Duration) -> RconVerdict {
        self.counters.limited += 1;
        let fits = Packet::Refused { reason: RefusalReason::Limited }.encode().len() <= request_bytes;
        let notice = fits
            && self.notices.take(from.ip(), now, NOTICES_PER_ADDRESS_PER_S, NOTICES_PER_ADDRESS_BURST)
            && self.everyone_notices.take(now, NOTICES_PER_S, NOTICES_BURST);
        if notice { refuse(RefusalReason::Limited, request_bytes) } else { RconVerdict::Drop }
    }

    /// Whether `ip` has tried wrong passwords over its budget, or has tried
    /// one lately while everyone's are over theirs: no challenge for it.
    fn guessing(&self, ip: IpAddr, now: Duration) -> bool {
        let Some(own) = self.bad_seals.get(&limit_key(ip)) else { return false };
        !own.has_token_at(now, BAD_SEALS_PER_ADDRESS_PER_S, BAD_SEALS_PER_ADDRESS_BURST)
            || !self.everyone_bad.has_token_at(now, BAD_SEALS_PER_S, BAD_SEALS_BURST)
    }

    /// A wrong password from `ip`, spent from its budget and everyone's.
    fn spend_bad_seal(&mut self, ip: IpAddr, now: Duration) {
        let key = limit_key(ip);
        if !self.bad_seals.contains_key(&key) && self.bad_seals.len() >= MAX_BAD_SEAL_ADDRESSES {
            self.bad_seals.retain(|_, b| !b.is_full_at(now, BAD_SEALS_PER_ADDRESS_PER_S, BAD_SEALS_PER_ADDRESS_BURST));
        }
        if self.bad_seals.len() < MAX_BAD_SEAL_ADDRESSES || self.bad_seals.contains_key(&key) {
            let own = self.bad_seals.entry(key).or_insert_with(|| Bucket::full(BAD_SEALS_PER_ADDRESS_BURST, now));
            own.take(now, BAD_SEALS_PER_ADDRESS_PER_S, BAD_SEALS_PER_ADDRESS_BURST);
        }
        self.everyone_bad.take(now, BAD_SEALS_PER_S, BAD_SEALS_BURST);
    }

    /// Whether `challenge` is held for `from` and still valid (with a key:
    /// without one, nothing is ever issued).
    fn holds(&self, from: SocketAddr, challenge: &Challenge, now: Duration) -> bool {
        self.key.is_some()
            && self.issued.get(&limit_key(from.ip())).is_some_and(|held| {
                held.iter()
                    .any(|i| i.challenge == *challenge && i.to == from && now.saturating_sub(i.at) < CHALLENGE_LIFETIME)
            })
    }

    /// The datagrams answering the command run with `challenge`: its output
    /// `text`, split, cut if too long, each part MACed. None without a key.
    pub fn answer(&self, challenge: &Challenge, text: &str) -> Vec<Vec<u8>> {
        let Some(key) = &self.key else { return Vec::new() };
        rcon::answer_packets(key, challenge, text).iter().map(Packet::encode).collect()
    }

    /// One line of what was refused since the last call, or `None` if
    /// nothing was (the caller logs it with the guard's summary).
    pub fn summary(&mut self) -> Option<String> {
        let line = self.counters.refused_since(&self.summarised);
        self.summarised = self.counters;
        line
    }

    /// Forgets expired challenges and idle rate limits. Called now and then
    /// (once a frame is fine): the tables are bounded without it.
    pub fn expire(&mut self, now: Duration) {
        self.drop_expired(now);
        self.per_address.forget_idle(now, PER_ADDRESS_PER_S, PER_ADDRESS_BURST);
        self.refusals.forget_idle(now, REFUSALS_PER_ADDRESS_PER_S, REFUSALS_PER_ADDRESS_BURST);
        self.bad_seals.retain(|_, b| !b.is_full_at(now, BAD_SEALS_PER_ADDRESS_PER_S, BAD_SEALS_PER_ADDRESS_BURST));
        self.notices.forget_idle(now, NOTICES_PER_ADDRESS_PER_S, NOTICES_PER_ADDRESS_BURST);
    }

    fn drop_expired(&mut self, now: Duration) {
        self.issued.retain(|_, held| {
            held.retain(|i| now.saturating_sub(i.at) < CHALLENGE_LIFETIME);
            !held.is_empty()
        });
    }

    /// Challenges held now, over every address.
    #[cfg(test)]
    fn outstanding(&self) -> usize {
        self.issued.values().map(VecDeque::len).sum()
    }

    fn issue(&mut self, to: SocketAddr, now: Duration) -> Challenge {
        let key = limit_key(to.ip());
        if !self.issued.contains_key(&key) && self.issued.len() >= MAX_CHALLENGE_ADDRESSES {
            // A sweep is a pass over the table: at most one a second, or a
            // flood from new addresses would pay one each.
            if self.swept.is_none_or(|t| now.saturating_sub(t) >= Duration::from_secs(1)) {
                self.swept = Some(now);
                self.drop_expired(now);
            }
            if self.issued.len() >= MAX_CHALLENGE_ADDRESSES {
                let stalest = self
                    .issued
                    .iter()
                    .min_by_key(|(_, held)| held.back().map_or(Duration::ZERO, |i| i.at))
                    .map(|(ip, _)| *ip);
                if let Some(ip) = stalest {
                    self.issued.remove(&ip);
                }
            }
        }
        // Two 64-bit outputs of a keyed PRF over a counter: fresh every time.
        self.minted += 1;
        let mut challenge = [0u8; rcon::CHALLENGE_BYTES];
        challenge[..8].copy_from_slice(&self.mint.hash_one((self.minted, 0u8)).to_le_bytes());
        challenge[8..].copy_from_slice(&self.mint.hash_one((self.minted, 1u8)).to_le_bytes());
        let held = self.issued.entry(key).or_default();
        held.retain(|i| now.saturating_sub(i.at) < CHALLENGE_LIFETIME);
        if held.len() >= MAX_CHALLENGES_PER_ADDRESS {
            held.pop_front();
        }
        held.push_back(Issued { challenge, to, at: now });
        self.counters.challenges_issued += 1;
        challenge
    }

    /// A command whose challenge [`Self::holds`]: the challenge is spent
    /// whatever comes of it (one guess per challenge), then the seal decides.
    fn command(
        &mut self,
        from: SocketAddr,
        challenge: Challenge,
        sealed: &rcon::Sealed,
        datagram: &[u8],
        now: Duration,
    ) -> RconVerdict {
        let Some(key) = &self.key else {
            self.counters.no_rcon += 1;
            return refuse(RefusalReason::NoRcon, datagram.len());
        };
        let ip = limit_key(from.ip());
        if let Some(held) = self.issued.get_mut(&ip) {
            held.retain(|i| i.challenge != challenge);
            if held.is_empty() {
                self.issued.remove(&ip);
            }
        }
        if self.used.len() >= RECENTLY_USED_CHALLENGES {
            self.used.pop_front();
        }
        self.used.push_back(challenge);
        match rcon::open_command(key, &challenge, sealed) {
            Ok(command) => {
                self.counters.commands_accepted += 1;
                RconVerdict::Run { command, challenge }
            }
            Err(rcon::OpenError::BadMac) => {
                self.counters.bad_mac += 1;
                self.spend_bad_seal(from.ip(), now);
                refuse(RefusalReason::BadMac, datagram.len())
            }
            // Sealed under the key, so from someone who has it, and still
            // not a command: nothing runs.
            Err(_) => {
                self.counters.malformed += 1;
                RconVerdict::Drop
            }
        }
    }
}

/// `packet` as a reply to a request of `request_bytes`, or nothing if it
/// would be larger (it never is, by the packets' sizes; this is the rule
/// itself, not a hope).
fn reply(packet: &Packet, request_bytes: usize) -> RconVerdict {
    let bytes = packet.encode();
    if bytes.len() <= request_bytes { RconVerdict::Reply(bytes) } else { RconVerdict::Drop }
}

fn refuse(reason: RefusalReason, request_bytes: usize) -> RconVerdict {
    reply(&Packet::Refused { reason }, request_bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;

    /// The server's salt in these tests.
    const SALT: rcon::Salt = [3; rcon::SALT_BYTES];

    /// Argon2id once for the whole module.
    fn key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::derive("let me in", &SALT).unwrap())
    }

    fn wrong_key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::derive("let me in!", &SALT).unwrap())
    }

    fn addr(last: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([198, 51, 100, last], port))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn challenge(gate: &mut RconGate, from: SocketAddr, now: Duration) -> Challenge {
        match gate.judge(from, &Packet::ChallengeRequest.encode(), now) {
            RconVerdict::Reply(bytes) => match Packet::parse(&bytes) {
                Ok(Packet::Challenge { challenge, .. }) => challenge,
                other => panic!("not a challenge: {other:?}"),
            },
            other => panic!("no challenge: {other:?}"),
        }
    }

    fn refused(verdict: &RconVerdict) -> Option<RefusalReason> {
        match verdict {
            RconVerdict::Reply(bytes) => match Packet::parse(bytes) {
                Ok(Packet::Refused { reason }) => Some(reason),
                _ => None,
            },
            _ => None,
        }
    }

    #[test]
    fn remote_console_right_password_runs_and_answers_under_the_key() {
        let mut gate = RconGate::new(Some(key().clone()));
        let from = addr(1, 40_000);
        let c = challenge(&mut gate, from, ms(0));
        let command = Packet::command(key(), c, "status").unwrap().encode();
        assert_eq!(gate.judge(from, &command, ms(30)), RconVerdict::Run { command: "status".into(), challenge: c });
        // The answer may be larger than the command: the seal opened.
        let text = "map dm1\n".repeat(500);
        let datagrams = gate.answer(&c, &text);
        assert!(datagrams.len() > 1);
        let packets: Vec<Packet> = datagrams.iter().map(|d| Packet::parse(d).unwrap()).collect();
        assert_eq!(rcon::join_answer(key(), &c, &packets), Ok(text));
        assert_eq!(gate.counters().commands_accepted, 1);
        assert_eq!(gate.counters().challenges_issued, 1);
        assert_eq!(gate.summary(), None, "nothing was refused");
    }

    #[test]
    fn remote_console_wrong_password_is_refused_and_counted() {
        let mut gate = RconGate::new(Some(key().clone()));
        let from = addr(2, 40_000);
        let c = challenge(&mut gate, from, ms(0));
        let forged = Packet::command(wrong_key(), c, "quit").unwrap().encode();
        let verdict = gate.judge(from, &forged, ms(10));
        assert_eq!(refused(&verdict), Some(RefusalReason::BadMac));
        assert_eq!(gate.counters().bad_mac, 1);
        // The challenge is spent: one guess each, even for the right key.
        let right = Packet::command(key(), c, "quit").unwrap().encode();
        assert_eq!(refused(&gate.judge(from, &right, ms(20))), Some(RefusalReason::UnknownChallenge));
        assert_eq!(gate.counters().commands_accepted, 0);
        let line = gate.summary().unwrap();
        assert!(line.contains("1 bad MAC"), "{line}");
        assert_eq!(gate.summary(), None, "counted once");
    }

    #[test]
    fn remote_console_replays_are_refused_and_counted_as_replays() {
        let mut gate = RconGate::new(Some(key().clone()));
        let from = addr(3, 40_000);
        let c = challenge(&mut gate, from, ms(0));
        let command = Packet::command(key(), c, "kick 3").unwrap().encode();
        assert!(matches!(gate.judge(from, &command, ms(10)), RconVerdict::Run { .. }));
        // The same datagram again, from the same address and from another.
        for (who, at) in [(from, 20), (addr(4, 1234), 30), (from, 9_000)] {
            let verdict = gate.judge(who, &command, ms(at));
            assert_eq!(refused(&verdict), Some(RefusalReason::UnknownChallenge));
        }
        assert_eq!(gate.counters().replays, 3);
        assert_eq!(gate.counters().commands_accepted, 1);
        // A challenge nobody issued is unknown, not a replay.
        let made_up = Packet::command(key(), [9; rcon::CHALLENGE_BYTES], "kick 3").unwrap().encode();
        assert_eq!(refused(&gate.judge(from, &made_up, ms(10_000))), Some(RefusalReason::UnknownChallenge));
        assert_eq!(gate.counters().unknown_challenge, 1);
    }

    #[test]
    fn remote_console_a_challenge_works_only_for_its_address_and_its_time() {
        let mut gate = RconGate::new(Some(key().clone()));
        let (a, b) = (addr(5, 40_000), addr(6, 40_000));
        let c = challenge(&mut gate, a, ms(0));
        let command = Packet::command(key(), c, "status").unwrap().encode();
        // Another address (another port of the same host too) cannot use it...
        assert_eq!(refused(&gate.judge(b, &command, ms(10))), Some(RefusalReason::UnknownChallenge));
        assert_eq!(refused(&gate.judge(addr(5, 40_001), &command, ms(20))), Some(RefusalReason::UnknownChallenge));
        // ...nor spend it: its owner still can.
        assert!(matches!(gate.judge(a, &command, ms(30)), RconVerdict::Run { .. }));
        // An IPv4-mapped IPv6 address is the same address.
        let mapped = SocketAddr::from((std::net::Ipv4Addr::new(198, 51, 100, 5).to_ipv6_mapped(), 40_000));
        let c = challenge(&mut gate, mapped, ms(40));
        let command = Packet::command(key(), c, "status").unwrap().encode();
        assert!(matches!(gate.judge(a, &command, ms(50)), RconVerdict::Run { .. }));
        // Expired after CHALLENGE_LIFETIME.
        let c = challenge(&mut gate, a, ms(2_000));
        let late = Packet::command(key(), c, "status").unwrap().encode();
        let at = ms(2_000) + CHALLENGE_LIFETIME;
        assert_eq!(refused(&gate.judge(a, &late, at)), Some(RefusalReason::UnknownChallenge));
        assert_eq!(gate.counters().unknown_challenge, 3);
    }

    #[test]
    fn remote_console_other_addresses_never_evict_a_challenge_and_an_address_holds_a_few() {
        let mut gate = RconGate::new(Some(key().clone()));
        let first = addr(7, 1);
        let c = challenge(&mut gate, first, ms(0));
        // More addresses than the table holds, each asking twice, a
        // thousand a second (slowly enough for the rate limits' own table).
        for i in 0..(MAX_CHALLENGE_ADDRESSES as u64 + 100) {
            let from = SocketAddr::from(([203, 0, (i / 200) as u8, (i % 200) as u8], 2));
            challenge(&mut gate, from, ms(1 + i));
            challenge(&mut gate, from, ms(1 + i));
        }
        assert!(gate.issued.len() <= MAX_CHALLENGE_ADDRESSES);
        assert!(gate.outstanding() <= MAX_CHALLENGE_ADDRESSES * MAX_CHALLENGES_PER_ADDRESS);
        // The table overflowed: the address served longest ago went (this
        // one, asked for first); asked for again now, it is held through
        // the same flood.
        let command = Packet::command(key(), c, "status").unwrap().encode();
        assert_eq!(refused(&gate.judge(first, &command, ms(4_300))), Some(RefusalReason::UnknownChallenge));
        let c = challenge(&mut gate, first, ms(4_400));
        for i in 0..2000u64 {
            let from = SocketAddr::from(([192, 0, (i / 200) as u8, (i % 200) as u8], 2));
            challenge(&mut gate, from, ms(4_400 + i));
        }
        let command = Packet::command(key(), c, "status").unwrap().encode();
        assert!(matches!(gate.judge(first, &command, ms(6_500)), RconVerdict::Run { .. }));
        // One address holds a few; its own oldest goes first.
        let own: Vec<Challenge> =
            (0..=MAX_CHALLENGES_PER_ADDRESS as u64).map(|i| challenge(&mut gate, first, ms(6_600 + i))).collect();
        let oldest = Packet::command(key(), own[0], "status").unwrap().encode();
        assert_eq!(refused(&gate.judge(first, &oldest, ms(6_700))), Some(RefusalReason::UnknownChallenge));
        for c in &own[1..] {
            let command = Packet::command(key(), *c, "status").unwrap().encode();
            assert!(matches!(gate.judge(first, &command, ms(6_800)), RconVerdict::Run { .. }));
        }
    }

    /// Issue 60's finding 1: garbage from the administrator's own address
    /// (8 a second) and well-formed challenge requests from 200 other
    /// addresses (400 a second) took the administrator's budget, since
    /// the buckets were charged before a datagram was parsed. Each second
    /// of a 10-second flood, the administrator asks for a challenge and
    /// runs a command: all ten run.
    #[test]
    fn remote_console_floods_of_garbage_and_strangers_never_lock_the_administrator_out() {
        let mut gate = RconGate::new(Some(key().clone()));
        let admin = addr(9, 40_000);
        let garbage = [0xFF, 0xFF, 0xFF, 0xFF, b'r', b'c', b'o', b'n', 7];
        let request = Packet::ChallengeRequest.encode();
        let mut ran = 0;
        for step in 0..4000u64 {
            let now = Duration::from_micros(step * 2500);
            let stranger = SocketAddr::from(([203, 0, 113, (step % 200) as u8], 30_000));
            gate.judge(stranger, &request, now);
            if step % 50 == 0 {
                // Another port of the administrator's own address.
                assert_eq!(gate.judge(addr(9, 50_000), &garbage, now), RconVerdict::Drop);
            }
            if step % 400 == 7 {
                let c = challenge(&mut gate, admin, now);
                let command = Packet::command(key(), c, "status").unwrap().encode();
                let verdict = gate.judge(admin, &command, now + ms(1));
                assert!(matches!(verdict, RconVerdict::Run { .. }), "step {step}: {verdict:?}");
                ran += 1;
            }
        }
        assert_eq!(ran, 10);
        assert_eq!(gate.counters().malformed, 80, "the garbage is counted as such");
        assert_eq!(gate.counters().commands_accepted, 10);
        // The strangers asked twice a second each (within their own
        // address's rate): all answered, nobody else's budget spent.
        assert_eq!(gate.counters().challenges_issued, 4000 + 10);
    }

    /// Issue 60's review: with challenges charged to each address alone,
    /// wrong passwords from many addresses were capped nowhere. An address
    /// that spends its wrong passwords gets no challenge until they refill;
    /// past everyone's budget, no address that tried one lately does; the
    /// administrator, who tried none, is served throughout.
    #[test]
    fn remote_console_wrong_passwords_are_capped_per_address_and_in_all() {
        let is_challenge = |v: &RconVerdict| matches!(v, RconVerdict::Reply(r) if matches!(Packet::parse(r), Ok(Packet::Challenge { .. })));
        let mut gate = RconGate::new(Some(key().clone()));
        let guesser = addr(20, 40_000);
        let mut t = 0;
        for _ in 0..BAD_SEALS_PER_ADDRESS_BURST as u64 {
            t += 300;
            let c = challenge(&mut gate, guesser, ms(t));
            let wrong = Packet::command(wrong_key(), c, "status").unwrap().encode();
            assert_eq!(refused(&gate.judge(guesser, &wrong, ms(t + 1))), Some(RefusalReason::BadMac));
        }
        assert!(!is_challenge(&gate.judge(guesser, &Packet::ChallengeRequest.encode(), ms(t + 300))));
        // Refilled (one every 5 s): a challenge again.
        challenge(&mut gate, guesser, ms(t + 6_000));
        // Many addresses, a wrong password each: everyone's budget spent.
        let mut gate = RconGate::new(Some(key().clone()));
        for i in 0..(BAD_SEALS_BURST as u64 + 10) {
            let from = SocketAddr::from(([203, 0, (i / 200) as u8, (i % 200) as u8], 1000));
            let c = challenge(&mut gate, from, ms(i));
            gate.judge(from, &Packet::command(wrong_key(), c, "status").unwrap().encode(), ms(i));
        }
        let last = BAD_SEALS_BURST as u64 + 9;
        let tried = SocketAddr::from(([203, 0, 0, 1], 1000));
        assert!(!is_challenge(&gate.judge(tried, &Packet::ChallengeRequest.encode(), ms(last))));
        let admin = addr(9, 40_000);
        let c = challenge(&mut gate, admin, ms(last));
        let command = Packet::command(key(), c, "status").unwrap().encode();
        assert!(matches!(gate.judge(admin, &command, ms(last + 1)), RconVerdict::Run { .. }));
    }

    #[test]
    fn remote_console_a_flood_from_one_address_is_limited() {
        let mut gate = RconGate::new(Some(key().clone()));
        let flooder = addr(8, 40_000);
        let mut judged = 0;
        let mut notices = 0;
        for i in 0..1000u64 {
            let before = gate.counters().limited;
            let verdict = gate.judge(flooder, &Packet::ChallengeRequest.encode(), ms(i));
            if gate.counters().limited == before {
                judged += 1;
            } else if refused(&verdict) == Some(RefusalReason::Limited) {
                notices += 1;
            }
        }
        // The burst, and the rate over one second.
        assert!(judged <= (PER_ADDRESS_BURST + PER_ADDRESS_PER_S) as u64 + 1, "{judged} judged");
        assert!(judged >= PER_ADDRESS_BURST as u64);
        assert_eq!(gate.counters().limited, 1000 - judged);
        assert!((1..=2).contains(&notices), "{notices} Limited refusals sent");
        assert!(gate.summary().unwrap().contains("over the rate limit"));
        // Someone else still gets in.
        let admin = addr(9, 40_000);
        let c = challenge(&mut gate, admin, ms(1_000));
        let command = Packet::command(key(), c, "kick 8").unwrap().encode();
        assert!(matches!(gate.judge(admin, &command, ms(1_010)), RconVerdict::Run { .. }));
    }

    #[test]
    fn remote_console_a_flood_from_everywhere_meets_the_global_cap() {
        let mut gate = RconGate::new(Some(key().clone()));
        let unknown = Packet::command(key(), [9; rcon::CHALLENGE_BYTES], "status").unwrap().encode();
        let mut judged = 0;
        for i in 0..5000u32 {
            let from = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 9));
            // Garbage is counted and charged to nobody.
            assert_eq!(gate.judge(from, &[0xFF; 30], Duration::from_micros(u64::from(i) * 200)), RconVerdict::Drop);
            let before = gate.counters().limited;
            gate.judge(from, &unknown, Duration::from_micros(u64::from(i) * 200));
            if gate.counters().limited == before {
                judged += 1;
            }
        }
        assert_eq!(gate.counters().malformed, 5000);
        // One second of commands that earn a refusal: the burst and a
        // second's rate.
        assert!(judged <= (GLOBAL_BURST + GLOBAL_PER_S) as u64 + 1, "{judged} judged");
        assert!(judged >= GLOBAL_BURST as u64, "{judged} judged");
    }

    #[test]
    fn remote_console_without_a_password_nothing_runs() {
        let mut gate = RconGate::new(None);
        assert!(!gate.has_console());
        let from = addr(10, 40_000);
        let request = Packet::ChallengeRequest.encode();
        assert_eq!(refused(&gate.judge(from, &request, ms(0))), Some(RefusalReason::NoRcon));
        let command = Packet::command(key(), [0; rcon::CHALLENGE_BYTES], "quit").unwrap().encode();
        assert_eq!(refused(&gate.judge(from, &command, ms(10))), Some(RefusalReason::NoRcon));
        assert_eq!(gate.counters().no_rcon, 2);
        assert!(gate.answer(&[0; rcon::CHALLENGE_BYTES], "x").is_empty());
        // The same limits.
        for i in 0..100 {
            gate.judge(from, &request, ms(20 + i));
        }
        assert!(gate.counters().limited > 80);
    }

    #[test]
    fn remote_console_server_bound_only_and_malformed_datagrams_are_dropped() {
        let mut gate = RconGate::new(Some(key().clone()));
        let from = addr(11, 40_000);
        let c = [1; rcon::CHALLENGE_BYTES];
        for (i, datagram) in [
            Packet::Challenge { challenge: c, salt: [0; rcon::SALT_BYTES] }.encode(),
            Packet::Refused { reason: RefusalReason::BadMac }.encode(),
            rcon::answer_packets(key(), &c, "hi")[0].encode(),
            vec![0xFF, 0xFF, 0xFF, 0xFF, b'r', b'c', b'o', b'n', 7],
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(gate.judge(from, datagram, ms(300 * i as u64)), RconVerdict::Drop);
        }
        assert_eq!(gate.counters().malformed, 4);
    }

    /// A small deterministic generator (xorshift64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn remote_console_no_reply_to_an_unverified_datagram_outgrows_it() {
        let mut gate = RconGate::new(Some(key().clone()));
        let mut rng = Rng(0x0123_4567_89AB_CDEF);
        let seeds: Vec<Vec<u8>> = vec![
            Packet::ChallengeRequest.encode(),
            Packet::command(wrong_key(), [3; rcon::CHALLENGE_BYTES], "status").unwrap().encode(),
            Packet::Refused { reason: RefusalReason::Limited }.encode(),
        ];
        let mut replies = 0;
        let mut now = Duration::ZERO;
        for _ in 0..50_000 {
            now += Duration::from_micros(rng.next() % 50_000);
            let from = addr((rng.next() % 4) as u8, 5000 + (rng.next() % 2) as u16);
            let mut datagram = match rng.next() % 3 {
                0 => seeds[(rng.next() % seeds.len() as u64) as usize].clone(),
                1 => {
                    let len = (rng.next() % 80) as usize;
                    let mut d: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    if len >= rcon::HEADER_BYTES {
                        d[..8].copy_from_slice(&rcon::MAGIC);
                        d[8] = (rng.next() % 6) as u8;
                    }
                    d
                }
                _ => rcon::MAGIC[..(rng.next() % 9) as usize].to_vec(),
            };
            if !datagram.is_empty() && rng.next().is_multiple_of(2) {
                let at = (rng.next() % datagram.len() as u64) as usize;
                datagram[at] ^= 1 << (rng.next() % 8);
            }
            match gate.judge(from, &datagram, now) {
                RconVerdict::Reply(reply) => {
                    replies += 1;
                    assert!(reply.len() <= datagram.len(), "{} bytes answered {datagram:?}", reply.len());
                }
                RconVerdict::Run { command, .. } => panic!("{command:?} ran without the password"),
                RconVerdict::Drop => {}
            }
        }
        assert!(replies > 1000, "only {replies} replies: the property was hardly tried");
        gate.expire(now + CHALLENGE_LIFETIME);
        assert!(gate.issued.is_empty());
    }

    #[test]
    fn remote_console_datagrams_and_the_other_connectionless_ones_never_mix() {
        use arena_master::reach::Reach;
        use arena_master::wire;
        use arena_protocol::datagram::{self, Direction, Refusal};
        use arena_protocol::query::Request;

        let c = [5; rcon::CHALLENGE_BYTES];
        let mut ours = vec![
            Packet::ChallengeRequest.encode(),
            Packet::Challenge { challenge: c, salt: [0; rcon::SALT_BYTES] }.encode(),
            Packet::command(key(), c, "getinfo abc").unwrap().encode(),
            Packet::command(key(), c, "reachCheck abcdefgh").unwrap().encode(),
        ];
        ours.extend(gate_answers(&c));
        for reason in
            [RefusalReason::BadMac, RefusalReason::UnknownChallenge, RefusalReason::NoRcon, RefusalReason::Limited]
        {
            ours.push(Packet::Refused { reason }.encode());
        }
        for d in &ours {
            assert!(rcon::is_rcon(d));
            assert!(Request::parse(d).is_err(), "{d:?}");
            assert_eq!(Reach::parse(d), None, "{d:?}");
            assert!(wire::parse_getinfo(d).is_err(), "{d:?}");
            assert!(wire::parse_to_master(d).is_err(), "{d:?}");
            assert_eq!(Refusal::decode(d), None);
            assert!(datagram::check(d, Direction::ToServer, arena_protocol::PROTOCOL_ID).is_err());
        }
        let nonce = arena_master::reach::new_token();
        let server = addr(1, 27015);
        let theirs: Vec<Vec<u8>> = vec![
            wire::heartbeat(),
            wire::heartbeat_with_nonce(&nonce),
            wire::getinfo("abc"),
            wire::getinfo_with_nonce("abc", &nonce),
            wire::get_servers(&wire::ServerQuery::everything(wire::GAME, 15), 0),
            Reach::Check { nonce: nonce.clone() }.encode(),
            Reach::PunchProbe.encode(),
            Reach::PunchRequest { server, cookie: None }.padded(600),
            Reach::RelayRequest { server, cookie: Some(nonce) }.encode(),
            Refusal::WrongVersion.encode().to_vec(),
            Request { kind: arena_protocol::query::QueryKind::Info, challenge: Some(-1) }.encode(),
        ];
        for d in &theirs {
            assert!(!rcon::is_rcon(d), "{d:?}");
            assert!(Packet::parse(d).is_err(), "{d:?}");
        }
    }

    fn gate_answers(c: &Challenge) -> Vec<Vec<u8>> {
        RconGate::new(Some(key().clone())).answer(c, &"y".repeat(3000))
    }
}
