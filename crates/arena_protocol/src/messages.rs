//! The messages. Client to server: [`ToServer`]. Server to client: [`ToClient`].

use arena_sim::{HitZone, Hitbox, PlayerId};

pub use crate::bounds::{MAX_COORDINATE_M, MAX_SPEED_MPS, check_hitbox, state_is_sane};
use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::channel;
pub use crate::names::MAX_NAME_CHARS;
use crate::names::NameRefusal;

/// Most commands one packet may carry (the newest and the unacknowledged ones
/// before it). More is a malformed packet.
pub const MAX_CMDS_PER_PACKET: usize = 16;

/// Largest packed command packet, bytes (16 whole commands fit in far less).
pub const MAX_COMMAND_PACKET_BYTES: usize = 256;
/// Largest packed snapshot, bytes (a full one of 64 players is about 1 KiB).
pub const MAX_SNAPSHOT_BYTES: usize = 4096;

/// Players within this distance of a shot's line have their tested hitbox
/// in the shot's result, metres.
pub const SHOT_RESULT_NEAR_M: f32 = 3.0;
/// Most hitboxes in a shot's result.
pub const MAX_SHOT_RESULT_HITBOXES: usize = 4;

/// Most players one server takes.
pub const MAX_PLAYERS: usize = 64;

/// Longest interpolation delay a client may ask for, milliseconds.
pub const MAX_INTERP_MS: u16 = 250;

/// Client to server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToServer {
    /// This tick's commands and the newest snapshot decoded: a
    /// [`crate::command_packet::CommandPacket`], packed.
    Commands(Vec<u8>),
    /// The client's netcode choices the server needs to know.
    Settings(ClientSettings),
    /// The player skipped the kill-cam: respawn as soon as the rules allow.
    SkipKillCam,
    /// A chat line, to everyone or (`team`) to the player's team.
    Chat { text: String, team: bool },
    /// Play, play for a team, or watch (a switch waits for the player's death).
    ChooseSide(crate::modes::SideChoice),
    /// Calls a vote (Quake 3's `callvote`).
    CallVote(crate::vote::VoteCall),
    /// A ballot in the vote now open.
    Vote { yes: bool },
    /// This client has no map of the hash the server named: send it.
    WantMap,
    /// This client has loaded the map of this hash: it may play.
    MapLoaded { hash: [u8; 32] },
    /// A frame of the player's voice, while its push-to-talk key is held.
    Voice(crate::voice::VoiceFrame),
}

/// What the server must know of a client's netcode settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSettings {
    /// Rewind the other players to what this client saw when it fired.
    pub lag_compensation: bool,
    /// This client's interpolation delay, milliseconds (0 with interpolation off).
    pub interp_ms: u16,
    /// Bring this client's rockets up to the time it fired them (catch-up
    /// against the others as it saw them).
    pub projectile_compensation: bool,
    /// Show this player the kill-cam after a death (the server sends it
    /// and holds the respawn until it has played or is skipped).
    pub kill_cam: bool,
    /// Half-Life's `cl_updaterate`: snapshots a second this client asks
    /// for (0: as many as the server sends; see [`snapshot_stride`]).
    pub update_rate: u8,
    /// Half-Life's `rate`: bytes a second of snapshots this client can take
    /// (0: no limit); the server leaves out snapshots that would go over.
    pub rate: u32,
    /// This client plays voice: the server sends it the talkers it may
    /// hear (off: none, and its own voice is not passed on either).
    pub voice: bool,
}

pub use crate::map_transfer::MAX_MAP_NAME_BYTES;

/// `rate`'s range besides 0 (no limit), bytes a second: below the low end
/// a snapshot of a full server would never fit.
pub const RATE_RANGE: std::ops::RangeInclusive<u32> = 2_000..=1_000_000;

/// Every how many of the server's snapshots a client that asked for
/// `asked_hz` (`cl_updaterate`; 0: all) gets one: the server sends by it,
/// the client draws by the rate it gives ([`snapshot_hz_for`]). One rule for both.
pub fn snapshot_stride(server_snapshot_hz: u32, asked_hz: u8) -> u32 {
    let asked = u32::from(asked_hz);
    if asked == 0 || asked >= server_snapshot_hz { 1 } else { server_snapshot_hz.div_ceil(asked) }
}

/// The snapshots a second a client that asked for `asked_hz` receives (at
/// least 1).
pub fn snapshot_hz_for(server_snapshot_hz: u32, asked_hz: u8) -> u32 {
    (server_snapshot_hz / snapshot_stride(server_snapshot_hz, asked_hz)).max(1)
}

/// The interpolation delay a client uses unless its player chooses one, in
/// snapshot intervals: two, so that a lost snapshot still leaves two around
/// the render time to draw between.
pub const DEFAULT_INTERP_SNAPSHOTS: f64 = 2.0;

/// The default interpolation delay at `snapshot_rate`, milliseconds. The
/// client draws by it and the server assumes it of a client that has not
/// said otherwise: one rule for both.
pub fn default_interp_ms(snapshot_rate: arena_sim::TickRate) -> f64 {
    DEFAULT_INTERP_SNAPSHOTS * 1000.0 / f64::from(snapshot_rate.hz())
}

impl ClientSettings {
    /// An interpolation delay as it travels: whole milliseconds within
    /// `0..=MAX_INTERP_MS`.
    pub fn interp_ms_of(delay_ms: f64) -> u16 {
        if delay_ms.is_finite() { delay_ms.round().clamp(0.0, f64::from(MAX_INTERP_MS)) as u16 } else { 0 }
    }
}

impl ToServer {
    /// The message's kind, for tallies.
    pub fn kind(&self) -> &'static str {
        match self {
            ToServer::Commands(_) => "commands",
            ToServer::Settings(_) => "settings",
            ToServer::SkipKillCam => "skip_kill_cam",
            ToServer::Chat { .. } => "chat",
            ToServer::ChooseSide(_) => "choose_side",
            ToServer::CallVote(_) => "call_vote",
            ToServer::Vote { .. } => "vote",
            ToServer::WantMap => "want_map",
            ToServer::MapLoaded { .. } => "map_loaded",
            ToServer::Voice(_) => "voice",
        }
    }

    pub fn channel(&self) -> u8 {
        match self {
            ToServer::Commands(_) | ToServer::Voice(_) => channel::UNRELIABLE,
            ToServer::Settings(_)
            | ToServer::SkipKillCam
            | ToServer::Chat { .. }
            | ToServer::ChooseSide(_)
            | ToServer::CallVote(_)
            | ToServer::Vote { .. }
            | ToServer::WantMap
            | ToServer::MapLoaded { .. } => channel::RELIABLE,
        }
    }

    /// Structural checks beyond decoding; field values are sanitised separately.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            ToServer::Commands(bytes) if bytes.len() > MAX_COMMAND_PACKET_BYTES => {
                Err(format!("a command packet of {} bytes (at most {MAX_COMMAND_PACKET_BYTES})", bytes.len()))
            }
            ToServer::Commands(_) => Ok(()),
            ToServer::Settings(s) if s.interp_ms > MAX_INTERP_MS => {
                Err(format!("interpolation delay {} ms (at most {MAX_INTERP_MS})", s.interp_ms))
            }
            ToServer::Settings(_)
            | ToServer::SkipKillCam
            | ToServer::ChooseSide(_)
            | ToServer::Vote { .. }
            | ToServer::WantMap
            | ToServer::MapLoaded { .. } => Ok(()),
            ToServer::Chat { text, .. } => chat_fits(text),
            ToServer::CallVote(call) => call.validate(),
            ToServer::Voice(frame) => frame.check(),
        }
    }
}

/// A chat line within its bytes (its characters and what it holds are the
/// server's to clean: `chat::clean_chat`).
fn chat_fits(text: &str) -> Result<(), String> {
    if text.len() <= crate::chat::MAX_CHAT_BYTES {
        Ok(())
    } else {
        Err(format!("a chat line of {} bytes (at most {})", text.len(), crate::chat::MAX_CHAT_BYTES))
    }
}

/// Server to client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToClient {
    Welcome(Welcome),
    PlayerJoined(PlayerInfo),
    PlayerLeft {
        id: PlayerId,
    },
    /// The world after a tick, as this client may see it: a
    /// [`crate::snapshot`], packed (a delta against one it acknowledged).
    Snapshot(Vec<u8>),
    /// To the shooter: what the server made of one of its shots.
    ShotResult(ShotResult),
    /// To everyone but the shooter: a shot, for its tracer and sound. It
    /// starts at the shooter's eye (the snapshot of the same tick says where).
    ShotFired {
        shooter: PlayerId,
        trace: ShotTrace,
    },
    /// To the victim: it was hit.
    Damaged {
        attacker: PlayerId,
        amount: u8,
        zone: HitZone,
        from: Vec3,
    },
    /// To everyone: a kill (`killer == victim`: fell out of the world).
    Killed {
        killer: PlayerId,
        victim: PlayerId,
        zone: HitZone,
    },
    /// To everyone: the scoreboard, on every change and every few seconds.
    Scores(Vec<ScoreRow>),
    /// To everyone: the match's state, on every change and every few seconds.
    Match(MatchInfo),
    /// To a client being sent away, just before the server disconnects it.
    Refused(Refusal),
    /// On a shooting range, to the shooter after each shot: its tally, and
    /// for a miss where the nearest target was.
    Range(RangeReport),
    /// To everyone (its shooter too, to match it to the rocket it drew): a
    /// rocket fired.
    RocketFired {
        shooter: PlayerId,
        launch: crate::rocket::RocketLaunch,
    },
    /// To everyone: a rocket exploded (its damage comes as `Damaged`).
    RocketExploded {
        owner: PlayerId,
        blast: crate::rocket::RocketBlast,
    },
    /// To a rocket's shooter: one player its splash hurt (the hit marker).
    RocketHit(HitReport),
    /// To a victim (with the kill-cam on): its death as the killer drew it.
    KillCam(Box<crate::kill_cam::KillCam>),
    /// A chat line the server passed on (cleaned), and who said it.
    Chat {
        from: PlayerId,
        text: String,
        team: bool,
    },
    /// To a sender: its line was not passed on, and why.
    ChatRefused(crate::chat::ChatRefusal),
    /// The server's own word to everyone (its console's `say`, a kick, a
    /// ban): chat length, drawn as the server's.
    Notice {
        text: String,
    },
    /// A player's side changed (a team, watching, the duel's queue).
    SideChanged {
        id: PlayerId,
        side: crate::modes::Side,
    },
    /// The next match is on this map (the rotation, the console's `map`, a
    /// vote): load it (or ask for it); everyone respawns on it.
    ChangeMap(crate::map_transfer::MapId),
    /// A vote: opened, a ballot cast, or ended.
    Vote(crate::vote::VoteStatus),
    /// To a caller or voter: its call or ballot was not taken, and why.
    VoteRefused(crate::vote::VoteRefusal),
    /// From the next match, this mode is played (a vote, the console's `mode`).
    ModeChanged {
        mode: crate::modes::Mode,
    },
    /// A piece of the map this client asked for (`ToServer::WantMap`), at
    /// `offset` in its file; `tag` names the map (`MapId::tag`), so that
    /// pieces of a map given up are told apart from the next one's.
    MapData {
        tag: u32,
        offset: u32,
        bytes: Vec<u8>,
    },
    /// To a client that asked for the map: not now. Its address has had
    /// its copies for a while (several players behind one router, or
    /// reconnects); ask again in `retry_in_s` seconds, when the budget has
    /// refilled. The client waits, says so, and asks again.
    MapRefused {
        retry_in_s: u16,
    },
    /// A frame of `from`'s voice, to a listener the routing allows.
    Voice {
        from: PlayerId,
        frame: crate::voice::VoiceFrame,
    },
}

/// Farthest a range miss is reported from the shot's line, metres.
pub const MAX_RANGE_MISS_M: f32 = 100.0;

/// A shooter's tally on the range after a shot.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeReport {
    /// Shots fired and targets hit since joining.
    pub shots: u32,
    pub hits: u32,
    pub miss: Option<RangeMiss>,
}

/// Where the target nearest a missed shot was on the server when the shot was
/// tested (rewound with lag compensation, the present without), from the
/// point where the shot passed it, in the shooter's view: positive `right_m`
/// means the target was to the right of the shot, positive `up_m` above.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeMiss {
    pub target: PlayerId,
    pub right_m: f32,
    pub up_m: f32,
}

/// Why the server sends a client away after connecting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// Its name is not allowed.
    Name(NameRefusal),
    /// No room: every player's place is taken and every spectator's too
    /// (`spectators`: it came to watch, and the watchers' places are taken).
    Full { spectators: bool },
}

impl Refusal {
    /// In words, for the player (`name`: the one it asked for).
    pub fn explain(&self, name: &str) -> String {
        match self {
            Refusal::Name(refusal) => refusal.explain(name),
            Refusal::Full { spectators: true } => "the server has no room for another spectator".into(),
            Refusal::Full { spectators: false } => "the server is full: no room to play, and none to watch".into(),
        }
    }
}

/// Where a shot went from its shooter's eye, in five bytes: the direction
/// (yaw on 4096 steps, pitch on 2048) and the distance (1/64 m, up to 256 m).
/// A tracer or an impact puff drawn from it is off by at most 0.05° and 8 mm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShotTrace([u8; 5]);

impl ShotTrace {
    const DISTANCE_STEPS_PER_M: f32 = 64.0;
    const MAX_DISTANCE_Q: u32 = (1 << 14) - 1;

    /// The trace of a shot from `from` that ended at `to`.
    pub fn new(from: Vec3, to: Vec3) -> Self {
        let (yaw, pitch) = arena_sim::look_at(from, to);
        let yaw_q = u32::from(arena_sim::quant::yaw_to_q(yaw) >> 4);
        let pitch_q = (i32::from(arena_sim::quant::pitch_to_q(pitch)) >> 5) as u32 & 0x7FF;
        let distance = from.distance(to);
        let distance_q = if distance.is_finite() {
            ((distance * Self::DISTANCE_STEPS_PER_M).round() as u32).min(Self::MAX_DISTANCE_Q)
        } else {
            0
        };
        let bits: u64 = (u64::from(yaw_q) << 25) | (u64::from(pitch_q) << 14) | u64::from(distance_q);
        let b = bits.to_be_bytes();
        Self([b[3], b[4], b[5], b[6], b[7]])
    }

    /// The end of the shot that started at `from`.
    pub fn end(&self, from: Vec3) -> Vec3 {
        let b = self.0;
        let bits = u64::from_be_bytes([0, 0, 0, b[0], b[1], b[2], b[3], b[4]]);
        let yaw = arena_sim::quant::q_to_yaw(((bits >> 25) as u16 & 0xFFF) << 4);
        // Sign-extend the 11-bit pitch.
        let pitch_q = ((((bits >> 14) & 0x7FF) as i32) << 21) >> 21;
        let pitch =
            arena_sim::quant::q_to_pitch((pitch_q << 5).clamp(-i32::from(i16::MAX), i32::from(i16::MAX)) as i16);
        let distance = (bits & u64::from(Self::MAX_DISTANCE_Q)) as f32 / Self::DISTANCE_STEPS_PER_M;
        from + arena_sim::player::view_forward(yaw, pitch) * distance
    }
}

/// One line of the scoreboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScoreRow {
    pub id: PlayerId,
    pub frags: i16,
    pub deaths: u16,
    /// Round trip to the server, milliseconds (0 for bots).
    pub ping_ms: u16,
}

impl ScoreRow {
    /// The scoreboard's order: most frags, then fewest deaths, then id.
    pub fn rank(rows: &mut [ScoreRow]) {
        rows.sort_by_key(|r| (std::cmp::Reverse(r.frags), r.deaths, r.id));
    }
}

/// Where the match is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchInfo {
    /// Counts matches since the server started.
    pub number: u32,
    pub phase: MatchPhase,
    pub frag_limit: u16,
    /// Seconds left in this phase (the match, or the results screen).
    pub seconds_left: u32,
    /// Each team's frags, red then blue (team deathmatch only).
    pub team_frags: Option<[i16; 2]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatchPhase {
    Playing,
    /// Over: the results are shown until the next match starts.
    Over {
        winner: Option<PlayerId>,
        /// The winning team (team deathmatch; none for a draw).
        team: Option<crate::modes::Team>,
    },
}

impl ToClient {
    /// The message's kind, for tallies.
    pub fn kind(&self) -> &'static str {
        match self {
            ToClient::Welcome(_) => "welcome",
            ToClient::PlayerJoined(_) => "player_joined",
            ToClient::PlayerLeft { .. } => "player_left",
            ToClient::Snapshot(_) => "snapshot",
            ToClient::ShotResult(_) => "shot_result",
            ToClient::ShotFired { .. } => "shot_fired",
            ToClient::Damaged { .. } => "damaged",
            ToClient::Killed { .. } => "killed",
            ToClient::Scores(_) => "scores",
            ToClient::Match(_) => "match",
            ToClient::Refused(_) => "refused",
            ToClient::Range(_) => "range",
            ToClient::RocketFired { .. } => "rocket_fired",
            ToClient::RocketExploded { .. } => "rocket_exploded",
            ToClient::RocketHit(_) => "rocket_hit",
            ToClient::KillCam(_) => "kill_cam",
            ToClient::Chat { .. } => "chat",
            ToClient::ChatRefused(_) => "chat_refused",
            ToClient::Notice { .. } => "notice",
            ToClient::ChangeMap(_) => "change_map",
            ToClient::SideChanged { .. } => "side_changed",
            ToClient::Vote(_) => "vote",
            ToClient::VoteRefused(_) => "vote_refused",
            ToClient::ModeChanged { .. } => "mode_changed",
            ToClient::MapData { .. } => "map_data",
            ToClient::MapRefused { .. } => "map_refused",
            ToClient::Voice { .. } => "voice",
        }
    }

    pub fn channel(&self) -> u8 {
        match self {
            ToClient::Snapshot(_) | ToClient::ShotFired { .. } | ToClient::Voice { .. } => channel::UNRELIABLE,
            _ => channel::RELIABLE,
        }
    }

    /// Structural checks beyond decoding: a server may be hostile too. Every
    /// float the client would draw or simulate with is finite, every list
    /// fits the player limit, no player appears twice.
    pub fn validate(&self) -> Result<(), String> {
        let finite = |v: Vec3, what: &str| if v.is_finite() { Ok(()) } else { Err(format!("{what} is not finite")) };
        let players = |n: usize, what: &str| {
            if n <= MAX_PLAYERS { Ok(()) } else { Err(format!("{n} {what} (at most {MAX_PLAYERS})")) }
        };
        match self {
            ToClient::Welcome(w) => {
                if !arena_sim::TICK_HZ_RANGE.contains(&w.tick_hz) {
                    return Err(format!("tick rate {} Hz", w.tick_hz));
                }
                if w.snapshot_hz == 0 || w.snapshot_hz > w.tick_hz {
                    return Err(format!("snapshot rate {} Hz", w.snapshot_hz));
                }
                players(w.players.len(), "players")?;
                w.map.validate()?;
                distinct(w.players.iter().map(|p| p.id))
            }
            ToClient::Snapshot(bytes) if bytes.len() > MAX_SNAPSHOT_BYTES => {
                Err(format!("a snapshot of {} bytes (at most {MAX_SNAPSHOT_BYTES})", bytes.len()))
            }
            ToClient::Snapshot(_) => Ok(()),
            ToClient::ShotResult(r) => {
                finite(r.end, "the shot's end")?;
                if !r.tested_tick.is_finite() {
                    return Err("the tested tick is not finite".into());
                }
                if r.hitboxes.len() > MAX_SHOT_RESULT_HITBOXES {
                    return Err(format!("{} hitboxes in a shot result", r.hitboxes.len()));
                }
                for (_, h) in &r.hitboxes {
                    check_hitbox(h)?;
                }
                Ok(())
            }
            ToClient::ShotFired { .. } => Ok(()),
            ToClient::Voice { frame, .. } => frame.check(),
            ToClient::KillCam(cam) => cam.validate(),
            ToClient::Chat { text, .. } | ToClient::Notice { text } => chat_fits(text),
            ToClient::ChangeMap(map) => map.validate(),
            ToClient::Vote(status) => status.call.validate(),
            ToClient::MapData { bytes, .. } if bytes.len() > crate::map_transfer::MAP_CHUNK_BYTES => Err(format!(
                "a map piece of {} bytes (at most {})",
                bytes.len(),
                crate::map_transfer::MAP_CHUNK_BYTES
            )),
            ToClient::Damaged { from, .. } => finite(*from, "the damage's origin"),
            ToClient::Scores(rows) => players(rows.len(), "score rows"),
            ToClient::Range(RangeReport { miss: Some(m), .. })
                if !(m.right_m.abs() <= MAX_RANGE_MISS_M && m.up_m.abs() <= MAX_RANGE_MISS_M) =>
            {
                Err("a range miss out of bounds".into())
            }
            ToClient::Range(r) if r.hits > r.shots => Err("more range hits than shots".into()),
            ToClient::Range(_) => Ok(()),
            ToClient::PlayerJoined(_)
            | ToClient::PlayerLeft { .. }
            | ToClient::Killed { .. }
            | ToClient::Match(_)
            | ToClient::Refused(_)
            | ToClient::ChatRefused(_)
            | ToClient::SideChanged { .. }
            | ToClient::VoteRefused(_)
            | ToClient::ModeChanged { .. }
            | ToClient::MapData { .. }
            // A wait the client clamps to its own bounds.
            | ToClient::MapRefused { .. }
            // Bit packs whose every reading is finite and bounded.
            | ToClient::RocketFired { .. }
            | ToClient::RocketExploded { .. }
            | ToClient::RocketHit(_) => Ok(()),
        }
    }
}

fn distinct(ids: impl Iterator<Item = PlayerId>) -> Result<(), String> {
    let mut seen = [false; 256];
    for id in ids {
        if std::mem::replace(&mut seen[usize::from(id.0)], true) {
            return Err(format!("player {} appears twice", id.0));
        }
    }
    Ok(())
}

/// The server's verdict on one shot, and what it tested against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShotResult {
    /// The tick of the command that fired.
    pub cmd_tick: u32,
    pub hit: Option<HitReport>,
    /// Where the shot ended: a player, a wall, or its range.
    pub end: Vec3,
    /// Whether the other players were rewound (lag compensation).
    pub lag_compensated: bool,
    /// The server time (in ticks) the other players were tested at.
    pub tested_tick: f64,
    /// The hitboxes of the players near the shot's line as tested (rewound
    /// or current): what "show hitboxes" draws.
    pub hitboxes: Vec<(PlayerId, Hitbox)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitReport {
    pub victim: PlayerId,
    pub zone: HitZone,
    pub damage: u8,
    pub killed: bool,
}

/// The first message a client receives after connecting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub your_id: PlayerId,
    /// Simulation rate, ticks per second.
    pub tick_hz: u32,
    /// Snapshots per second.
    pub snapshot_hz: u32,
    /// The server's tick when it sent this.
    pub server_tick: u32,
    /// The map played: its name, hash and size.
    pub map: crate::map_transfer::MapId,
    /// Everyone on the server, the new player included.
    pub players: Vec<PlayerInfo>,
    /// A shooting range: targets that cannot die, nobody hurt, tallies.
    pub range: bool,
    /// Shots go from where fire was pressed within a tick (clicks are used).
    pub subtick: bool,
    /// How matches are played here.
    pub mode: crate::modes::Mode,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerInfo {
    pub id: PlayerId,
    pub name: String,
    /// A server-side bot.
    pub bot: bool,
    /// Playing (for a team) or watching.
    pub side: crate::modes::Side,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{DecodeError, decode, encode};

    #[test]
    fn messages_round_trip() {
        let messages = vec![
            ToClient::Welcome(Welcome {
                your_id: PlayerId(3),
                tick_hz: 64,
                snapshot_hz: 20,
                server_tick: 1234,
                map: crate::map_transfer::MapId::of("Foundry", b"x"),
                players: vec![PlayerInfo {
                    id: PlayerId(3),
                    name: "Ada".into(),
                    bot: false,
                    side: crate::modes::Side::Team(crate::modes::Team::Blue),
                }],
                range: true,
                subtick: true,
                mode: crate::modes::Mode::Tdm,
            }),
            ToClient::SideChanged { id: PlayerId(4), side: crate::modes::Side::Waiting },
            ToClient::Range(RangeReport {
                shots: 9,
                hits: 4,
                miss: Some(RangeMiss { target: PlayerId(2), right_m: -0.8, up_m: 0.1 }),
            }),
            ToClient::PlayerLeft { id: PlayerId(9) },
            ToClient::Scores(vec![ScoreRow { id: PlayerId(1), frags: -1, deaths: 4, ping_ms: 80 }]),
            ToClient::Match(MatchInfo {
                number: 2,
                phase: MatchPhase::Over { winner: Some(PlayerId(1)), team: Some(crate::modes::Team::Red) },
                frag_limit: 20,
                seconds_left: 9,
                team_frags: Some([20, -3]),
            }),
            ToClient::Snapshot(vec![1, 2, 3]),
        ];
        for m in messages {
            let bytes = encode(&m).expect("encodes");
            assert_eq!(decode::<ToClient>(&bytes).expect("decodes"), m);
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut seed = 0x1234_5678_u32;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed as u8
                })
                .collect();
            let _ = decode::<ToServer>(&bytes);
            let _ = decode::<ToClient>(&bytes);
        }
        // A length prefix claiming a huge vector must not allocate it.
        let huge = [0u8, 0xfc, 0xff, 0xff, 0xff, 0x7f];
        assert!(decode::<ToServer>(&huge).is_err());
        assert!(matches!(decode::<ToServer>(&vec![0u8; 20_000]), Err(DecodeError::TooLarge(_))));
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let mut bytes = encode(&ToServer::Commands(vec![0; 8])).expect("encodes");
        bytes.push(7);
        assert!(matches!(decode::<ToServer>(&bytes), Err(DecodeError::TrailingBytes(1))));
    }

    #[test]
    fn shot_traces_end_where_the_shot_ended() {
        let from = Vec3::new(3.0, 1.6, -7.0);
        for to in [Vec3::new(20.0, 0.5, 30.0), Vec3::new(-100.0, 40.0, 2.0), Vec3::new(3.0, 1.0, -7.5), from] {
            let end = ShotTrace::new(from, to).end(from);
            let allowed = 0.01 + from.distance(to) * 0.002;
            assert!(end.distance(to) <= allowed, "{to} came back as {end}");
        }
    }

    #[test]
    fn oversized_packets_fail_validation() {
        assert!(ToServer::Commands(vec![0; MAX_COMMAND_PACKET_BYTES + 1]).validate().is_err());
        assert!(ToClient::Snapshot(vec![0; MAX_SNAPSHOT_BYTES + 1]).validate().is_err());
    }

    #[test]
    fn range_reports_are_checked() {
        let miss = |right_m| Some(RangeMiss { target: PlayerId(1), right_m, up_m: 0.0 });
        assert!(ToClient::Range(RangeReport { shots: 3, hits: 2, miss: miss(1.5) }).validate().is_ok());
        for bad in [f32::NAN, f32::INFINITY, MAX_RANGE_MISS_M + 1.0] {
            assert!(ToClient::Range(RangeReport { shots: 3, hits: 2, miss: miss(bad) }).validate().is_err(), "{bad}");
        }
        assert!(ToClient::Range(RangeReport { shots: 1, hits: 2, miss: None }).validate().is_err());
    }
}
