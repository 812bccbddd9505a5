//! Combat on the client: our shots remembered with what we saw when firing
//! and the hit foreseen on it (`foreseen_hits`), the server's verdicts
//! paired with them (hit markers confirmed or denied, and the red and blue
//! hitboxes of "show hitboxes"), damage taken, kills and other players' shots
//! turned into messages for the view.

use std::collections::VecDeque;

use arena_protocol::{ShotResult, ToClient};
use arena_sim::{HitZone, Hitbox, PlayerId, Shot};
use bevy::prelude::*;

use crate::foreseen_hits::{HitDenied, HitPredicted, HitPredictions, Judged, PredictedHit, predict_hit};
use crate::prediction::PredictedEvents;
use crate::render_clock::ServerClock;
use crate::settings::NetcodeSettings;
use crate::vocabulary::{
    ClickedFrame, ClientStats, ClientWorld, Drawn, GameMessage, LocalPlayer, NetPlayer, NetState, SessionState,
};

/// How long a shot is remembered while its verdict is awaited, and how long a
/// comparison is kept for drawing, seconds.
pub(crate) const SHOT_MEMORY_S: f64 = 2.0;
/// Most shots remembered (ours, and verdicts kept for drawing).
const MAX_REMEMBERED_SHOTS: usize = 256;
/// Most combat messages of one kind passed on to the view in one frame. A
/// fair server sends at most one shot per player per tick; a hostile one
/// could send thousands, each a tracer and a sound.
pub(crate) const MAX_COMBAT_EVENTS_PER_FRAME: usize = 4 * arena_protocol::MAX_PLAYERS;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<ShotMemory>()
        .init_session_resource::<ShotComparisons>()
        .add_message::<HitConfirmed>()
        .add_message::<DamageTaken>()
        .add_message::<KillNotice>()
        .add_message::<RemoteShot>();
}

/// One of our shots: when, where, and the other players as we drew them.
#[derive(Debug, Clone)]
pub struct FiredShot {
    pub cmd_tick: u32,
    pub shot: Shot,
    /// Real time it was fired, seconds.
    pub fired_s: f64,
    /// Server time we were drawing the others at, ticks.
    pub render_tick: f64,
    pub seen: Vec<(PlayerId, Hitbox)>,
    /// The hit we foresaw on them, if any.
    pub predicted: Option<PredictedHit>,
    /// Whether that foreseen hit was shown (hit prediction on when fired).
    pub shown: bool,
}

#[derive(Resource, Debug, Default)]
pub struct ShotMemory(pub VecDeque<FiredShot>);

/// A shot of ours with the server's verdict.
#[derive(Debug, Clone)]
pub struct ShotComparison {
    pub fired: FiredShot,
    pub result: ShotResult,
    /// Real time the verdict came, seconds.
    pub received_s: f64,
}

#[derive(Resource, Debug, Default)]
pub struct ShotComparisons(pub VecDeque<ShotComparison>);

/// Our shot hit someone, the server says (the hit marker).
#[derive(Message, Debug, Clone, Copy)]
pub struct HitConfirmed {
    pub victim: PlayerId,
    pub zone: HitZone,
    pub killed: bool,
    /// It was foreseen and shown already ([`HitPredicted`]): only a kill is news.
    pub predicted: bool,
}

impl HitConfirmed {
    /// Whether it tells the player something not shown yet: a hit not
    /// foreseen, or a kill.
    pub fn is_news(&self) -> bool {
        !self.predicted || self.killed
    }
}

/// We were hit.
#[derive(Message, Debug, Clone, Copy)]
pub struct DamageTaken {
    pub attacker: PlayerId,
    pub amount: u8,
    pub zone: HitZone,
    /// Where the shot came from.
    pub from: Vec3,
}

/// Someone killed someone.
#[derive(Message, Debug, Clone, Copy)]
pub struct KillNotice {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
}

/// Another player fired.
#[derive(Message, Debug, Clone, Copy)]
pub struct RemoteShot {
    pub shooter: PlayerId,
    pub from: Vec3,
    pub to: Vec3,
}

/// Remembers each shot we fire (the first time its tick is predicted) with
/// the other players' hitboxes as drawn in the frame it was fired from, and
/// the hit foreseen on them (shown at once, with hit prediction on).
pub(crate) fn remember_shots(
    mut events: MessageReader<PredictedEvents>,
    time: Res<Time<Real>>,
    clock: Res<ServerClock>,
    settings: Res<NetcodeSettings>,
    world: Res<ClientWorld>,
    clicked: Res<ClickedFrame>,
    others: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    mut memory: ResMut<ShotMemory>,
    mut foreseen: MessageWriter<HitPredicted>,
) {
    let now = time.elapsed_secs_f64();
    for event in events.read() {
        let Some(shot) = event.events.weapon.shot else { continue };
        // As drawn in the frame clicked in, or (held) in the last one.
        let drawn: Vec<(PlayerId, arena_sim::PlayerState)> = if clicked.tick == event.tick {
            clicked.others.clone()
        } else {
            others.iter().map(|(p, d)| (p.id, d.0)).collect()
        };
        let predicted = predict_hit(&world, shot, &drawn);
        if let Some(hit) = predicted.filter(|_| settings.hit_prediction) {
            foreseen.write(HitPredicted { cmd_tick: event.tick, hit });
        }
        memory.0.push_back(FiredShot {
            cmd_tick: event.tick,
            shot,
            fired_s: now,
            render_tick: clock.render_tick,
            seen: drawn.iter().map(|(id, s)| (*id, Hitbox::of(s))).collect(),
            predicted,
            shown: predicted.is_some() && settings.hit_prediction,
        });
    }
    while memory.0.front().is_some_and(|s| now - s.fired_s > SHOT_MEMORY_S) || memory.0.len() > MAX_REMEMBERED_SHOTS {
        memory.0.pop_front();
    }
}

pub(crate) fn apply_combat_messages(
    mut messages: MessageReader<GameMessage>,
    time: Res<Time<Real>>,
    mut memory: ResMut<ShotMemory>,
    mut comparisons: ResMut<ShotComparisons>,
    mut predictions: ResMut<HitPredictions>,
    mut hits: MessageWriter<HitConfirmed>,
    mut denied: MessageWriter<HitDenied>,
    mut damage: MessageWriter<DamageTaken>,
    mut kills: MessageWriter<KillNotice>,
    mut shots: MessageWriter<RemoteShot>,
    mut stats: ResMut<ClientStats>,
    players: Query<(&NetPlayer, &NetState)>,
) {
    let now = time.elapsed_secs_f64();
    // Per kind: how many passed on this frame.
    let mut passed = [0usize; 4];
    for GameMessage(message) in messages.read() {
        let kind = match message {
            ToClient::ShotResult(_) => 0,
            ToClient::Damaged { .. } | ToClient::RocketHit(_) => 1,
            ToClient::Killed { .. } => 2,
            ToClient::ShotFired { .. } => 3,
            _ => continue,
        };
        passed[kind] += 1;
        if passed[kind] > MAX_COMBAT_EVENTS_PER_FRAME {
            stats.flood_dropped += 1;
            continue;
        }
        match message {
            ToClient::ShotResult(result) => {
                let fired =
                    memory.0.iter().position(|s| s.cmd_tick == result.cmd_tick).and_then(|i| memory.0.remove(i));
                let verdict = result.hit.map(|h| (h.victim, h.zone));
                // A verdict on a shot we no longer remember is judged as unforeseen.
                let predicted = fired.as_ref().and_then(|f| f.predicted);
                let judged = predictions.judge(predicted, verdict);
                // As it was shown when fired, whatever the switch says now.
                let shown = fired.as_ref().is_some_and(|f| f.shown);
                if let Some(hit) = result.hit {
                    let predicted = shown && judged == Judged::Confirmed;
                    hits.write(HitConfirmed { victim: hit.victim, zone: hit.zone, killed: hit.killed, predicted });
                }
                if let Some(predicted) = predicted.filter(|_| shown && judged == Judged::Denied) {
                    denied.write(HitDenied { cmd_tick: result.cmd_tick, predicted });
                }
                if let Some(fired) = fired {
                    comparisons.0.push_back(ShotComparison { fired, result: result.clone(), received_s: now });
                }
            }
            ToClient::Damaged { attacker, amount, zone, from } if from.is_finite() => {
                damage.write(DamageTaken { attacker: *attacker, amount: *amount, zone: *zone, from: *from });
            }
            ToClient::Killed { killer, victim, zone } => {
                kills.write(KillNotice { killer: *killer, victim: *victim, zone: *zone });
            }
            // Our rocket's splash hurt someone: the hit marker (never foreseen).
            ToClient::RocketHit(hit) => {
                hits.write(HitConfirmed { victim: hit.victim, zone: hit.zone, killed: hit.killed, predicted: false });
            }
            ToClient::ShotFired { shooter, trace } => {
                // From the shooter's eye as the snapshot of the same tick has it.
                if let Some((_, net)) = players.iter().find(|(p, _)| p.id == *shooter) {
                    let from = net.state.eye_pos();
                    shots.write(RemoteShot { shooter: *shooter, from, to: trace.end(from) });
                }
            }
            _ => {}
        }
    }
    while comparisons.0.front().is_some_and(|c| now - c.received_s > SHOT_MEMORY_S)
        || comparisons.0.len() > MAX_REMEMBERED_SHOTS
    {
        comparisons.0.pop_front();
    }
}
