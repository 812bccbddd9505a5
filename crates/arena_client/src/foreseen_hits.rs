//! Foreseen hits (the "hit prediction" switch): at the click, on the
//! hitboxes this client drew, whether the shot hit someone (body or head)
//! and where, by the server's own rule (`ArenaWorld::first_hit`), so the hit
//! marker and sparks come at once; the server's verdict then confirms the
//! foreseen hit or denies it, and the tally of both is kept. Damage and
//! kills are never foreseen: only the server says them. (Not the local
//! player's movement, which `prediction` predicts.)

use arena_sim::{ArenaWorld, HitZone, Hitbox, PlayerId, PlayerState, Shot};
use bevy::prelude::*;

use crate::vocabulary::SessionState;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<HitPredictions>().add_message::<HitPredicted>().add_message::<HitDenied>();
}

/// A hit this client foresees for one of its shots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PredictedHit {
    pub victim: PlayerId,
    pub zone: HitZone,
    /// Where the shot meets the hitbox as drawn.
    pub at: Vec3,
}

/// Whether `shot` hits one of the players as drawn (`drawn`: id and state),
/// walls first, the nearest first. Nobody is hurt through spawn protection
/// (the server reports no hit), so a protected player stops the shot and
/// foresees no hit; the dead are not there.
pub(crate) fn predict_hit(world: &ArenaWorld, shot: Shot, drawn: &[(PlayerId, PlayerState)]) -> Option<PredictedHit> {
    let hitboxes: Vec<(PlayerId, Hitbox)> = drawn.iter().map(|(id, s)| (*id, Hitbox::of(s))).collect();
    let (hit, at) = world.first_hit(shot, &hitboxes);
    let (victim, zone) = hit?;
    let hurtable = drawn.iter().any(|(id, s)| *id == victim && s.hurtable());
    hurtable.then_some(PredictedHit { victim, zone, at })
}

/// Our shot will hit, as we see it (the hit marker, now).
#[derive(Message, Debug, Clone, Copy)]
pub struct HitPredicted {
    pub cmd_tick: u32,
    pub hit: PredictedHit,
}

/// The server did not find the hit we showed (a different player, or none).
#[derive(Message, Debug, Clone, Copy)]
pub struct HitDenied {
    pub cmd_tick: u32,
    pub predicted: PredictedHit,
}

/// How predictions and verdicts compared, since joining.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct HitPredictions {
    /// Shots whose verdict came.
    pub judged: u64,
    /// Those whose prediction was the verdict: the same player and zone, or
    /// a miss both ways.
    pub agreed: u64,
    /// Hits foreseen, and of them the ones the server confirmed (the same
    /// player) and denied.
    pub predicted_hits: u64,
    pub confirmed: u64,
    pub denied: u64,
    /// Hits the server found that were not foreseen.
    pub unforeseen: u64,
}

/// What a verdict says of a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// A foreseen hit on the player the server hit.
    Confirmed,
    /// A foreseen hit the server did not find on that player.
    Denied,
    /// A hit that was not foreseen.
    Unforeseen,
    /// A miss both ways.
    Missed,
}

impl HitPredictions {
    /// Compares a prediction with the server's verdict (who and where, if
    /// anyone) and counts it.
    pub fn judge(&mut self, predicted: Option<PredictedHit>, verdict: Option<(PlayerId, HitZone)>) -> Judged {
        self.judged += 1;
        self.agreed += u64::from(predicted.map(|p| (p.victim, p.zone)) == verdict);
        let judged = match (predicted, verdict) {
            (Some(p), Some((victim, _))) if p.victim == victim => Judged::Confirmed,
            (Some(_), _) => Judged::Denied,
            (None, Some(_)) => Judged::Unforeseen,
            (None, None) => Judged::Missed,
        };
        self.predicted_hits += u64::from(predicted.is_some());
        self.confirmed += u64::from(judged == Judged::Confirmed);
        self.denied += u64::from(judged == Judged::Denied);
        self.unforeseen += u64::from(judged == Judged::Unforeseen);
        judged
    }

    /// The share of judged shots whose prediction was the verdict.
    pub fn agreement(&self) -> f64 {
        if self.judged == 0 { 1.0 } else { self.agreed as f64 / self.judged as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::MapDef;

    fn standing(x: f32, z: f32) -> PlayerState {
        PlayerState::spawned_at(Vec3::new(x, 0.0, z), 0.0)
    }

    #[test]
    fn a_hit_is_foreseen_on_the_nearest_drawn_body_not_behind_walls_nor_on_the_protected() {
        let world = ArenaWorld::new(MapDef::foundry());
        let target = standing(0.0, 10.0);
        let eye = Vec3::new(0.0, Hitbox::of(&target).body_center().y, 14.0);
        let shot = Shot { origin: eye, dir: Vec3::NEG_Z };
        let hit = predict_hit(&world, shot, &[(PlayerId(2), target)]).expect("a hit");
        assert_eq!((hit.victim, hit.zone), (PlayerId(2), HitZone::Body));
        let surface = 10.0 + arena_sim::hitbox::TORSO_RADIUS_M;
        assert!((hit.at.z - surface).abs() < 0.01, "on the torso's surface: {}", hit.at);
        let protected = PlayerState { protected_s: 0.5, ..target };
        assert_eq!(predict_hit(&world, shot, &[(PlayerId(2), protected)]), None);
        let dead = PlayerState { alive: false, ..target };
        assert_eq!(predict_hit(&world, shot, &[(PlayerId(2), dead)]), None);
        // Behind the centre slab.
        let hidden = standing(0.0, -6.0);
        let through = Shot { origin: Vec3::new(0.0, 1.2, 6.0), dir: Vec3::NEG_Z };
        assert_eq!(predict_hit(&world, through, &[(PlayerId(3), hidden)]), None);
    }

    #[test]
    fn verdicts_confirm_deny_or_surprise() {
        let mut tally = HitPredictions::default();
        let p = |victim: u8, zone| Some(PredictedHit { victim: PlayerId(victim), zone, at: Vec3::ZERO });
        assert_eq!(tally.judge(p(1, HitZone::Head), Some((PlayerId(1), HitZone::Head))), Judged::Confirmed);
        assert_eq!(tally.judge(p(1, HitZone::Head), Some((PlayerId(1), HitZone::Body))), Judged::Confirmed);
        assert_eq!(tally.judge(p(1, HitZone::Body), None), Judged::Denied);
        assert_eq!(tally.judge(p(1, HitZone::Body), Some((PlayerId(2), HitZone::Body))), Judged::Denied);
        assert_eq!(tally.judge(None, Some((PlayerId(2), HitZone::Body))), Judged::Unforeseen);
        assert_eq!(tally.judge(None, None), Judged::Missed);
        let expected =
            HitPredictions { judged: 6, agreed: 2, predicted_hits: 4, confirmed: 2, denied: 2, unforeseen: 1 };
        assert_eq!(tally, expected);
        assert!((tally.agreement() - 2.0 / 6.0).abs() < 1e-12);
    }
}
