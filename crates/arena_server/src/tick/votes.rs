//! Votes (Quake 3's `callvote`): a player calls one on a map, a mode, a
//! kick or a restart (the kinds `--vote-kinds` allows); every player who
//! does not watch (bots do not vote) answers yes or no; it passes once a
//! majority of them said yes, fails once that can no longer come or after
//! [`VOTE_SECONDS`]. One vote at a time, one call a minute per player and
//! [`CALLS_PER_ADDRESS`] a minute per address (a player who reconnects to
//! call again is still counted; friends behind one router still each get
//! theirs); call and ballot messages beyond [`VOTE_MESSAGES_PER_S`] are dropped
//! unanswered (a flood gets nothing back). A vote that passes runs as a
//! line of the server's console (`map`, `mode`, `kick`, `restart`), so
//! that it does exactly what the operator's command does. Everyone sees
//! the vote open, each ballot and the end.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use arena_protocol::ToClient;
use arena_protocol::modes::Side;
use arena_protocol::vote::{
    CALL_INTERVAL_S, VOTE_SECONDS, VoteCall, VoteKind, VoteOutcome, VoteRefusal, VoteStatus, decide,
};
use arena_sim::PlayerId;
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use crate::net::{broadcast, send};
use crate::socket::rate_limits::Bucket;
use crate::socket::transport::ServerTransport;
use crate::vocabulary::{
    ConsoleLines, ConsoleSource, GameMode, Range, Roster, ServedMaps, ServerIdentity, VoteSaid, VoteSaying,
};

/// Vote messages (calls and ballots) a player may send: this many a
/// second, in bursts of [`VOTE_MESSAGES_BURST`].
pub(crate) const VOTE_MESSAGES_PER_S: f32 = 1.0;
pub(crate) const VOTE_MESSAGES_BURST: f32 = 4.0;
/// Votes called from one address in a minute, at most.
pub(crate) const CALLS_PER_ADDRESS: usize = 3;
/// Addresses whose calls are remembered, at most (the calls themselves
/// are one a minute each: the table stays small unless flooded).
const MAX_ADDRESSES: usize = 1024;
/// How often the log sums up what was dropped.
const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<VoteSaid>().init_resource::<Votes>();
}

/// The vote open, who called when, and counts.
#[derive(Resource, Debug)]
pub struct Votes {
    /// What votes may be called on (`--vote-kinds`).
    pub kinds: Vec<VoteKind>,
    open: Option<OpenVote>,
    number: u16,
    last_call: HashMap<ClientId, Duration>,
    /// Calls from each address in the last minute.
    address_calls: HashMap<std::net::IpAddr, Vec<Duration>>,
    budgets: HashMap<ClientId, Bucket>,
    pub stats: VoteStats,
}

impl Default for Votes {
    fn default() -> Self {
        Self::new(VoteKind::ALL.to_vec())
    }
}

impl Votes {
    pub fn new(kinds: Vec<VoteKind>) -> Self {
        Self {
            kinds,
            open: None,
            number: 0,
            last_call: HashMap::new(),
            address_calls: HashMap::new(),
            budgets: HashMap::new(),
            stats: VoteStats::default(),
        }
    }
}

/// Votes called, passed and failed; calls and ballots refused by reason;
/// messages dropped as a flood.
#[derive(Debug, Default, Clone)]
pub struct VoteStats {
    pub called: u64,
    pub passed: u64,
    pub failed: u64,
    pub refused: BTreeMap<&'static str, u64>,
    pub flooded: u64,
    summarised: u64,
    last_summary: Duration,
}

#[derive(Debug, Clone)]
struct OpenVote {
    number: u16,
    caller: PlayerId,
    call: VoteCall,
    /// Whom a kick is for (its player id may go to a newcomer if it leaves).
    target: Option<Entity>,
    ends: Duration,
    /// Keyed by the voter's entity (an id may go to a newcomer in the
    /// frame its player left; an entity is never the same twice), with its
    /// address ([`arena_udp::limit_key`]): one ballot an address.
    ballots: BTreeMap<Entity, (Option<std::net::IpAddr>, bool)>,
}

/// The address a voter counts as ([`arena_udp::limit_key`]), or none for
/// one on the server's own machine (loopback: a listen server's host, the
/// operator's tools), who is a voter of its own: no datagram from
/// elsewhere carries a loopback address.
fn voting_address(addr: std::net::SocketAddr) -> Option<std::net::IpAddr> {
    let ip = arena_udp::canonical(addr).ip();
    (!ip.is_loopback()).then(|| arena_udp::limit_key(ip))
}

/// Voters counted once an address: the addresses among them, and each
/// voter with none of its own.
fn voter_count(voters: &[(Entity, Option<std::net::IpAddr>)]) -> usize {
    let addresses: std::collections::BTreeSet<std::net::IpAddr> = voters.iter().filter_map(|(_, at)| *at).collect();
    addresses.len() + voters.iter().filter(|(_, at)| at.is_none()).count()
}

fn label(why: &VoteRefusal) -> &'static str {
    match why {
        VoteRefusal::Disabled(_) => "kind disabled",
        VoteRefusal::TooSoon(_) => "too soon",
        VoteRefusal::Busy => "another open",
        VoteRefusal::Spectator => "spectator",
        VoteRefusal::NoMap => "no such map",
        VoteRefusal::NoPlayer => "no such player",
        VoteRefusal::AlreadySo => "already so",
        VoteRefusal::Range => "range",
        VoteRefusal::NoVote => "no vote open",
        VoteRefusal::Voted => "voted twice",
        VoteRefusal::Host => "the host",
        VoteRefusal::AddressVoted => "address voted",
    }
}

/// Who may vote now: the players with a client who do not watch, each
/// with its address ([`arena_udp::limit_key`]: players behind one router
/// are one voter).
fn voters(roster: &Roster, transport: &ServerTransport) -> Vec<(Entity, Option<std::net::IpAddr>)> {
    roster
        .players
        .values()
        .filter(|e| e.side != Side::Spectating)
        .filter_map(|e| Some((e.entity, voting_address(transport.client_addr(e.client_id?)?))))
        .collect()
}

/// The console line a vote that passed runs.
fn console_line(call: &VoteCall) -> String {
    match call {
        VoteCall::Map(name) => format!("map \"{name}\""),
        VoteCall::Mode(mode) => format!("mode {}", mode.short()),
        VoteCall::Kick(id) => format!("kick #{}", id.0),
        VoteCall::Restart => "restart".into(),
    }
}

/// What the game must hold for a call to make sense (a call checked here
/// gets its map's name as the server spells it).
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct VoteWorld<'w> {
    roster: Res<'w, Roster>,
    mode: Res<'w, GameMode>,
    served: Res<'w, ServedMaps>,
    identity: Res<'w, ServerIdentity>,
    range: Option<Res<'w, Range>>,
    transport: Res<'w, ServerTransport>,
}

impl VoteWorld<'_> {
    /// The call as it will run, or why not.
    fn judge(&self, caller: PlayerId, call: VoteCall) -> Result<VoteCall, VoteRefusal> {
        if self.range.is_some() {
            return Err(VoteRefusal::Range);
        }
        match call {
            VoteCall::Map(name) => match self.served.find(&name) {
                None => Err(VoteRefusal::NoMap),
                Some(map) if map.id.name == self.identity.map => Err(VoteRefusal::AlreadySo),
                Some(map) => Ok(VoteCall::Map(map.id.name.clone())),
            },
            VoteCall::Mode(mode) if mode == self.mode.mode => Err(VoteRefusal::AlreadySo),
            VoteCall::Kick(id) if id == caller || !self.roster.players.contains_key(&id) => Err(VoteRefusal::NoPlayer),
            // The host of a listen server plays from its own machine: a
            // loopback address, which no datagram from elsewhere can carry.
            VoteCall::Kick(id)
                if self.identity.kind == arena_protocol::query::ServerKind::Listen
                    && self.roster.players.get(&id).and_then(|e| e.client_id).is_some_and(|c| {
                        self.transport.client_addr(c).is_some_and(|a| arena_udp::canonical(a).ip().is_loopback())
                    }) =>
            {
                Err(VoteRefusal::Host)
            }
            call => Ok(call),
        }
    }
}

/// Calls and ballots that came this frame.
pub(crate) fn take_votes(
    mut said: MessageReader<VoteSaid>,
    world: VoteWorld,
    mut votes: ResMut<Votes>,
    server: Option<ResMut<RenetServer>>,
    time: Res<Time<Real>>,
) {
    let Some(mut server) = server else {
        said.clear();
        return;
    };
    let now = time.elapsed();
    let mut any = false;
    for VoteSaid { client, said } in said.read() {
        any = true;
        let Some((id, entry)) = world.roster.by_client(*client) else { continue };
        let bucket = votes.budgets.entry(*client).or_insert_with(|| Bucket::full(VOTE_MESSAGES_BURST, now));
        if !bucket.take(now, VOTE_MESSAGES_PER_S, VOTE_MESSAGES_BURST) {
            votes.stats.flooded += 1;
            continue;
        }
        let Some(socket_addr) = world.transport.client_addr(*client) else { continue };
        let refusal = if entry.side == Side::Spectating {
            Err(VoteRefusal::Spectator)
        } else {
            match said.clone() {
                VoteSaying::Call(call) => call_vote(&mut votes, &world, (*client, socket_addr, id), call, now),
                VoteSaying::Ballot(yes) => {
                    let key = voting_address(socket_addr);
                    match votes.open.as_mut() {
                        None => Err(VoteRefusal::NoVote),
                        Some(open) if open.ballots.contains_key(&entry.entity) => Err(VoteRefusal::Voted),
                        Some(open) if key.is_some() && open.ballots.values().any(|(at, _)| *at == key) => {
                            Err(VoteRefusal::AddressVoted)
                        }
                        Some(open) => {
                            open.ballots.insert(entry.entity, (key, yes));
                            Ok(())
                        }
                    }
                }
            }
        };
        // A vote's state goes out (once a frame at most) from `count_votes`.
        match refusal {
            Ok(()) => {}
            Err(why) => {
                *votes.stats.refused.entry(label(&why)).or_default() += 1;
                send(&mut server, *client, &ToClient::VoteRefused(why));
            }
        }
    }
    if any {
        // What is kept of clients that left goes.
        let roster = &world.roster;
        votes.budgets.retain(|client, _| roster.by_client(*client).is_some());
    }
    let stats = &mut votes.stats;
    let total = stats.flooded + stats.refused.values().sum::<u64>();
    if total > stats.summarised && now.saturating_sub(stats.last_summary) >= SUMMARY_PERIOD {
        info!(
            "votes: {} calls and ballots refused or dropped lately ({} dropped as a flood since the start)",
            total - stats.summarised,
            stats.flooded
        );
        stats.summarised = total;
        stats.last_summary = now;
    }
}

/// Opens a vote on `call` by `caller`, or says why not.
fn call_vote(
    votes: &mut Votes,
    world: &VoteWorld,
    (client, socket_addr, caller): (ClientId, std::net::SocketAddr, PlayerId),
    call: VoteCall,
    now: Duration,
) -> Result<(), VoteRefusal> {
    if !votes.kinds.contains(&call.kind()) {
        return Err(VoteRefusal::Disabled(call.kind()));
    }
    if votes.open.is_some() {
        return Err(VoteRefusal::Busy);
    }
    let interval = Duration::from_secs(u64::from(CALL_INTERVAL_S));
    if let Some(last) = votes.last_call.get(&client).filter(|last| now.saturating_sub(**last) < interval) {
        let wait = interval.saturating_sub(now.saturating_sub(*last));
        return Err(VoteRefusal::TooSoon(wait.as_secs_f32().ceil() as u16));
    }
    votes.address_calls.retain(|_, calls| {
        calls.retain(|at| now.saturating_sub(*at) < interval);
        !calls.is_empty()
    });
    let from_here = votes.address_calls.get(&arena_udp::limit_key(socket_addr.ip())).map_or(&[][..], Vec::as_slice);
    if from_here.len() >= CALLS_PER_ADDRESS {
        let wait = interval.saturating_sub(now.saturating_sub(from_here[0]));
        return Err(VoteRefusal::TooSoon(wait.as_secs_f32().ceil() as u16));
    }
    if votes.address_calls.len() >= MAX_ADDRESSES
        && !votes.address_calls.contains_key(&arena_udp::limit_key(socket_addr.ip()))
    {
        return Err(VoteRefusal::Busy);
    }
    let call = world.judge(caller, call)?;
    let caller_entity = world.roster.players.get(&caller).map(|e| e.entity).ok_or(VoteRefusal::NoPlayer)?;
    votes.last_call.insert(client, now);
    votes.last_call.retain(|_, at| now.saturating_sub(*at) < interval);
    votes.address_calls.entry(arena_udp::limit_key(socket_addr.ip())).or_default().push(now);
    let target = match &call {
        VoteCall::Kick(id) => world.roster.players.get(id).map(|e| e.entity),
        _ => None,
    };
    votes.number = votes.number.wrapping_add(1);
    votes.stats.called += 1;
    let roster = &world.roster;
    info!("vote {}: {} calls to {}", votes.number, roster.label(caller), call.describe(|id| roster.label(id)));
    votes.open = Some(OpenVote {
        number: votes.number,
        caller,
        ends: now + Duration::from_secs(u64::from(VOTE_SECONDS)),
        ballots: BTreeMap::from([(caller_entity, (voting_address(socket_addr), true))]),
        call,
        target,
    });
    Ok(())
}

/// The vote open, counted: its state out to everyone when it changed, and
/// when it ends, its outcome (a vote that passed runs as a console line).
pub(crate) fn count_votes(
    roster: Res<Roster>,
    transport: Res<ServerTransport>,
    mut votes: ResMut<Votes>,
    mut lines: ResMut<ConsoleLines>,
    server: Option<ResMut<RenetServer>>,
    time: Res<Time<Real>>,
    mut last_sent: Local<Option<(u16, u8, u8, u8, usize)>>,
) {
    let Some(mut server) = server else { return };
    let now = time.elapsed();
    let Some(open) = votes.open.as_mut() else { return };
    let voters = voters(&roster, &transport);
    // Ballots of players who left or went to watch do not count.
    open.ballots.retain(|entity, _| voters.iter().any(|(e, _)| e == entity));
    let yes = open.ballots.values().filter(|(_, y)| *y).count().min(255) as u8;
    let no = open.ballots.values().filter(|(_, y)| !*y).count().min(255) as u8;
    // One voter an address.
    let voters = voter_count(&voters).min(255) as u8;
    // A kick whose player left fails (its id may be someone else's now).
    let target_left = open.target.is_some_and(|entity| !roster.players.values().any(|e| e.entity == entity));
    let outcome = if target_left { VoteOutcome::Failed } else { decide(yes, no, voters, now >= open.ends) };
    // Sent again whenever it changed, and when someone joins or leaves (a
    // newcomer sees the vote open).
    let counted = (open.number, yes, no, voters, roster.players.len());
    if outcome == VoteOutcome::Open && *last_sent == Some(counted) {
        return;
    }
    *last_sent = Some(counted);
    let left = open.ends.saturating_sub(now);
    let status = VoteStatus {
        number: open.number,
        caller: open.caller,
        call: open.call.clone(),
        yes,
        no,
        voters,
        left_ds: (left.as_millis() / 100).min(u128::from(u16::MAX)) as u16,
        outcome,
    };
    broadcast(&mut server, &ToClient::Vote(status), None);
    if outcome == VoteOutcome::Open {
        return;
    }
    let described = open.call.describe(|id| roster.label(id));
    let number = open.number;
    let call = open.call.clone();
    votes.open = None;
    if outcome == VoteOutcome::Passed {
        votes.stats.passed += 1;
        info!("vote {number} passed ({yes} yes, {no} no of {voters}): {described}");
        if !lines.push(ConsoleSource::Vote, console_line(&call)) {
            warn!("vote {number} passed but the console is busy: not run");
        }
    } else {
        votes.stats.failed += 1;
        info!("vote {number} failed ({yes} yes, {no} no of {voters}): {described}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 60: ballots counted per client let one address (many clients
    /// behind it) outvote everyone; an address is one voter now, and each
    /// voter on the server's own machine is its own.
    #[test]
    fn an_address_is_one_voter() {
        let at = |s: &str| s.parse::<std::net::SocketAddr>().unwrap();
        let entity = Entity::from_raw_u32;
        let voters = [
            (entity(1).unwrap(), voting_address(at("198.51.100.7:1000"))),
            (entity(2).unwrap(), voting_address(at("198.51.100.7:1001"))),
            (entity(3).unwrap(), voting_address(at("[2001:db8::1]:5"))),
            (entity(4).unwrap(), voting_address(at("[2001:db8::2]:5"))),
            (entity(5).unwrap(), voting_address(at("[::ffff:198.51.100.7]:1002"))),
            (entity(6).unwrap(), voting_address(at("127.0.0.1:9"))),
            (entity(7).unwrap(), voting_address(at("127.0.0.1:10"))),
        ];
        // 198.51.100.7 (three ports, one mapped), 2001:db8::/64, and the two
        // on the server's own machine.
        assert_eq!(voter_count(&voters), 4);
        assert_eq!(voters[0].1, voters[4].1);
        assert_eq!(voters[2].1, voters[3].1);
    }

    #[test]
    fn a_passed_vote_runs_the_operators_command() {
        assert_eq!(console_line(&VoteCall::Map("Spire".into())), "map \"Spire\"");
        assert_eq!(console_line(&VoteCall::Mode(arena_protocol::modes::Mode::Tdm)), "mode tdm");
        assert_eq!(console_line(&VoteCall::Kick(PlayerId(7))), "kick #7");
        assert_eq!(console_line(&VoteCall::Restart), "restart");
    }
}
