//! Server queries: what the server tells browsers, trackers and
//! `arena servers` through A2S (see `arena_protocol::query`): its name, map,
//! players and bots, whether it wants a password, its rules; and what it
//! tells masters and Quake tools in an `infoResponse` (the dpmaster
//! protocol, see `arena_master::wire`). The answers are encoded once a
//! second (and when someone joins or leaves) and handed to the transport,
//! which sends them to queries with a good challenge, and to masters (see
//! `socket/guard.rs`).

use std::time::Duration;

use arena_master::wire::{InfoString, sanitize_value};
use arena_protocol::modes::{Mode, Side};
use arena_protocol::query::{PlayerEntry, ServerListing};
use bevy::prelude::*;

use crate::config::MatchRules;
use crate::socket::transport::ServerTransport;
use crate::vocabulary::{
    GameMode, Items, Joined, LagCompensation, Roster, Score, ServerIdentity, ServerPlayer, SnapshotRate, TickRate,
    VoiceControl,
};

/// How often the answers are brought up to date (time connected, scores).
pub(crate) const ANSWERS_REFRESH: Duration = Duration::from_secs(1);

/// The game's folder and name, as A2S clients show them.
pub(crate) const GAME_FOLDER: &str = "arena";
pub(crate) const GAME_NAME: &str = "Arena";

/// Puts the server's current answers in the transport: once a second, and
/// at once when the roster changed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn publish_answers(
    mut transport: ResMut<ServerTransport>,
    time: Res<Time<Real>>,
    identity: Res<ServerIdentity>,
    roster: Res<Roster>,
    players: Query<(&ServerPlayer, &Score, &Joined)>,
    (tick_rate, snapshot_rate, lag_compensation, rules): (
        Res<TickRate>,
        Res<SnapshotRate>,
        Res<LagCompensation>,
        Res<MatchRules>,
    ),
    (mode, items, voice): (Res<GameMode>, Res<Items>, Res<VoiceControl>),
    mut last: Local<Option<(Duration, Vec<Side>)>>,
) {
    let now = time.elapsed();
    let sides: Vec<Side> = roster.players.values().map(|e| e.side).collect();
    if last.as_ref().is_some_and(|(at, seen)| *seen == sides && now.saturating_sub(*at) < ANSWERS_REFRESH) {
        return;
    }
    // Those in the world, as the player list (watchers and the duel's queue
    // count apart, in a rule).
    let count = roster.playing();
    *last = Some((now, sides));
    let bots = roster.players.values().filter(|e| e.is_bot()).count();
    let info = ServerListing {
        protocol: arena_protocol::PROTOCOL_VERSION as u8,
        name: identity.name.clone(),
        map: identity.map.clone(),
        folder: GAME_FOLDER.into(),
        game: GAME_NAME.into(),
        players: count.min(255) as u8,
        max_players: identity.max_players.min(255) as u8,
        bots: bots.min(255) as u8,
        kind: identity.kind,
        environment: ServerListing::this_environment(),
        password: transport.has_password(),
        version: env!("CARGO_PKG_VERSION").into(),
        port: Some(identity.port),
        keywords: Some(format!("arena,{},tick{},snap{}", mode.mode.short(), tick_rate.hz(), snapshot_rate.hz())),
    };
    let mut entries: Vec<((bool, std::cmp::Reverse<i16>), PlayerEntry)> = players
        .iter()
        .filter_map(|(player, score, joined)| {
            let entry = roster.players.get(&player.id)?;
            let duration_s = now.saturating_sub(joined.0).as_secs_f32();
            let order = (entry.is_bot(), std::cmp::Reverse(score.frags));
            Some((order, PlayerEntry { name: entry.name.clone(), score: i32::from(score.frags), duration_s }))
        })
        .collect();
    // People first, then the server's bots, each best first: A2S has no bot
    // flag, so a tool that wants the people (the arena-agones sidecar's
    // player tracking) takes the first `players - bots` entries.
    entries.sort_by_key(|(order, _)| *order);
    let yes_no = |b: bool| if b { "1" } else { "0" }.to_string();
    let game_rules = vec![
        ("protocol".to_string(), arena_protocol::PROTOCOL_VERSION.to_string()),
        ("mode".to_string(), mode.mode.short().to_string()),
        ("friendly_fire".to_string(), yes_no(mode.friendly_fire)),
        ("spectators".to_string(), (roster.players.len() - roster.playing()).to_string()),
        ("max_spectators".to_string(), mode.max_spectators.to_string()),
        ("tick_hz".to_string(), tick_rate.hz().to_string()),
        ("snapshot_hz".to_string(), snapshot_rate.hz().to_string()),
        ("lag_compensation".to_string(), yes_no(lag_compensation.on)),
        ("items".to_string(), yes_no(items.on)),
        ("voice".to_string(), yes_no(voice.on)),
        ("max_unlag_ms".to_string(), format!("{:.0}", lag_compensation.max_unlag_s * 1000.0)),
        ("frag_limit".to_string(), rules.frag_limit.to_string()),
        ("time_limit_s".to_string(), rules.time_limit_s.to_string()),
        ("max_clients".to_string(), identity.max_clients.to_string()),
    ];
    let info_string = info_string(&info, identity.max_players);
    transport.set_answers(info, entries.into_iter().map(|(_, e)| e).collect(), game_rules, info_string);
}

/// What an `infoResponse` says (the challenge is added per answer): the
/// keys dpmaster needs (`gamename`, `protocol`, `clients`, `sv_maxclients`)
/// and those Quake tools show (`hostname`, `mapname`, `g_needpass`).
/// Bots count as clients, as in A2S.
pub fn info_string(info: &ServerListing, max_players: usize) -> InfoString {
    let pairs = vec![
        ("gamename".to_string(), arena_master::wire::GAME.to_string()),
        ("protocol".to_string(), arena_protocol::PROTOCOL_VERSION.to_string()),
        ("clients".to_string(), info.players.to_string()),
        // Never 0 (dpmaster refuses it; a 0 is how a leaving server says goodbye).
        ("sv_maxclients".to_string(), max_players.clamp(1, 255).to_string()),
        ("bots".to_string(), info.bots.to_string()),
        ("hostname".to_string(), sanitize_value(&info.name)),
        ("mapname".to_string(), sanitize_value(&info.map)),
        ("g_needpass".to_string(), if info.password { "1" } else { "0" }.to_string()),
        // Quake 3's numbers (0 free-for-all, 1 duel, 3 team deathmatch), which
        // dpmaster's `ffa`/`tourney`/`team` filters and qstat know.
        ("gametype".to_string(), Mode::from_keywords(info.keywords.as_deref().unwrap_or("")).gametype().to_string()),
    ];
    // Every value is cleaned and short: this cannot fail; an empty one is harmless.
    InfoString::new(pairs).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_protocol::query::ServerKind;

    #[test]
    fn the_info_string_says_the_mode_as_quake_3_numbers_it() {
        let listing = |keywords: Option<&str>| ServerListing {
            protocol: arena_protocol::PROTOCOL_VERSION as u8,
            name: "Team night".into(),
            map: "Foundry".into(),
            folder: GAME_FOLDER.into(),
            game: GAME_NAME.into(),
            players: 6,
            max_players: 22,
            bots: 6,
            kind: ServerKind::Dedicated,
            environment: 'l',
            password: false,
            version: "0".into(),
            port: Some(27015),
            keywords: keywords.map(str::to_string),
        };
        let gametype = |keywords| info_string(&listing(keywords), 22).get("gametype").map(str::to_string);
        assert_eq!(gametype(Some("arena,tdm,tick64,snap64")).as_deref(), Some("3"));
        assert_eq!(gametype(Some("arena,duel,tick64,snap64")).as_deref(), Some("1"));
        assert_eq!(gametype(Some("arena,ffa,tick64,snap64")).as_deref(), Some("0"));
        assert_eq!(gametype(None).as_deref(), Some("0"));
    }
}
