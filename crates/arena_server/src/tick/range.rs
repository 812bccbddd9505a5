//! The shooting range (`--range`): targets that strafe across lanes at known
//! speeds and distances and cannot die, shots that hurt nobody (the combat
//! rules see to that), and each shooter's tally, kept from the shots the
//! combat rules resolved, with, for a miss, where the target was on the
//! server.
//!
//! The targets are players with no client (like bots) whose state is set
//! here each tick instead of by commands: they run back and forth along
//! their lane at a constant speed and turn at the ends at once, so that the
//! lead a shot needs without lag compensation is exactly speed × delay.
//! The lanes themselves, and where shooters stand, are in `range_lanes.rs`.

use arena_protocol::{MAX_RANGE_MISS_M, RangeMiss, RangeReport, ToClient};
use arena_sim::quant::snap_state;
use arena_sim::{Hitbox, PlayerId, PlayerState, Shot};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::net::send;
use crate::range_lanes::LANES;
use crate::vocabulary::{RocketResolved, Roster, ServerPlayer, ServerTick, ShotResolved, Sim, TickRate};

/// A range target, running lane `.0` of [`LANES`].
#[derive(Component, Debug, Clone, Copy)]
pub struct RangeTarget(pub usize);

/// A shooter's tally since joining.
#[derive(Component, Debug, Clone, Copy, Default)]
pub(crate) struct RangeTally {
    pub shots: u32,
    pub hits: u32,
}

/// Each tick, after every command ran: the targets where their lanes put
/// them, alive, whole and unprotected (so that hits count at once).
pub(crate) fn move_targets(tick: Res<ServerTick>, rate: Res<TickRate>, mut targets: Query<(&RangeTarget, &mut Sim)>) {
    let t_s = f64::from(tick.0) / f64::from(rate.hz());
    for (target, mut sim) in &mut targets {
        let Some(lane) = LANES.get(target.0) else { continue };
        let (pos, vel) = lane.at(target.0, t_s);
        // Facing the firing line, whole, unprotected.
        let state = PlayerState { vel, ..PlayerState::spawned_at(pos, std::f32::consts::PI) };
        sim.0 = snap_state(&state);
    }
}

/// Each shot a shooter on the range fired, once resolved: its tally, and
/// for a miss where the nearest target was, told to the shooter.
pub(crate) fn tally_shots(
    mut resolved: MessageReader<ShotResolved>,
    roster: Res<Roster>,
    targets: Query<&ServerPlayer, With<RangeTarget>>,
    mut tallies: Query<(&ServerPlayer, &mut RangeTally)>,
    mut server: ResMut<RenetServer>,
) {
    for ShotResolved { tested, hit } in resolved.read() {
        let pending = &tested.pending;
        let Some((shooter, mut tally)) = tallies.iter_mut().find(|(p, _)| p.id == pending.shooter) else { continue };
        let Some(client) = shooter.client_id else { continue };
        let lanes: Vec<(PlayerId, Hitbox)> =
            tested.others.iter().filter(|(id, _)| targets.iter().any(|t| t.id == *id)).copied().collect();
        let on_target = hit.is_some_and(|h| lanes.iter().any(|(id, _)| *id == h.victim));
        tally.shots = tally.shots.saturating_add(1);
        tally.hits = tally.hits.saturating_add(u32::from(on_target));
        let missed = if on_target { None } else { miss(pending.shot, &lanes) };
        if let Some(m) = missed {
            debug!(
                "range miss by {}: target {:.2} m right, {:.2} m up; render tick claimed {:.2}, estimated {:.2}, tested {:.2}",
                roster.label(pending.shooter),
                m.right_m,
                m.up_m,
                pending.cmd.render_tick,
                tested.estimate,
                tested.tick
            );
        }
        send(&mut server, client, &ToClient::Range(RangeReport { shots: tally.shots, hits: tally.hits, miss: missed }));
    }
}

/// Each of a shooter's rockets is a shot on its tally, a hit when its
/// splash reached a target (nobody is hurt on a range; the kick is felt).
pub(crate) fn tally_rockets(
    mut resolved: MessageReader<RocketResolved>,
    targets: Query<&ServerPlayer, With<RangeTarget>>,
    mut tallies: Query<(&ServerPlayer, &mut RangeTally)>,
    mut server: ResMut<RenetServer>,
) {
    for RocketResolved { owner, reached } in resolved.read() {
        let Some((shooter, mut tally)) = tallies.iter_mut().find(|(p, _)| p.id == *owner) else { continue };
        let Some(client) = shooter.client_id else { continue };
        let on_target = reached.iter().any(|id| targets.iter().any(|t| t.id == *id));
        tally.shots = tally.shots.saturating_add(1);
        tally.hits = tally.hits.saturating_add(u32::from(on_target));
        send(&mut server, client, &ToClient::Range(RangeReport { shots: tally.shots, hits: tally.hits, miss: None }));
    }
}

/// For a shot that hit no target: the target nearest its line (in front of
/// the shooter), as tested, and where it was from the point where the shot
/// passed it, in the shooter's view (right, up).
pub(crate) fn miss(shot: Shot, targets: &[(PlayerId, Hitbox)]) -> Option<RangeMiss> {
    let right = shot.dir.cross(Vec3::Y).normalize_or_zero();
    let up = right.cross(shot.dir).normalize_or_zero();
    targets
        .iter()
        .filter_map(|(id, hitbox)| {
            let to = hitbox.body_center() - shot.origin;
            let along = to.dot(shot.dir);
            let off = to - shot.dir * along;
            (along > 0.0).then_some((*id, off))
        })
        .min_by(|a, b| a.1.length_squared().total_cmp(&b.1.length_squared()))
        .map(|(target, off)| RangeMiss {
            target,
            right_m: off.dot(right).clamp(-MAX_RANGE_MISS_M, MAX_RANGE_MISS_M),
            up_m: off.dot(up).clamp(-MAX_RANGE_MISS_M, MAX_RANGE_MISS_M),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_says_where_the_target_was_from_the_shot() {
        let target = Hitbox::of(&PlayerState::spawned_at(Vec3::new(1.0, 0.0, -10.0), 0.0));
        let center = target.body_center();
        let origin = Vec3::new(0.0, center.y, 0.0);
        // Looking north (-z); the target 1 m east: to the right.
        let shot = Shot { origin, dir: Vec3::NEG_Z };
        let m = miss(shot, &[(PlayerId(4), target)]).expect("a target in front");
        assert_eq!(m.target, PlayerId(4));
        assert!((m.right_m - 1.0).abs() < 1e-4 && m.up_m.abs() < 1e-4, "{m:?}");
        // Nothing behind the shooter counts.
        assert!(miss(Shot { origin, dir: Vec3::Z }, &[(PlayerId(4), target)]).is_none());
    }
}
