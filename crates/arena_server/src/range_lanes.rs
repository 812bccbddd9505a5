//! The shooting range's layout (`--range`): its lanes, where each target
//! runs along its lane, and where shooters stand on the firing line. A leaf:
//! the options count one target per lane (see `config.rs`), the tick moves
//! them (see `tick/range.rs`).

use bevy::prelude::*;

/// The firing line: shooters stand at this z (on the ground in front of the
/// south platform), facing north down the lanes, metres.
pub const FIRING_LINE_Z_M: f32 = 18.0;
/// Where along the firing line shooters stand (x), metres, first choice first.
const FIRING_SPOTS_X_M: [f32; 9] = [0.0, -1.5, 1.5, -3.0, 3.0, -4.5, 4.5, -6.0, 6.0];
/// Targets run from x = -this to +this, metres.
pub const LANE_HALF_WIDTH_M: f32 = 6.0;

/// One lane: how far from the firing line and how fast its target runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lane {
    pub distance_m: f32,
    pub speed_mps: f32,
}

/// The lanes, nearest first. Clear of the map's cover between the firing
/// line and the centre slab (z = 0.8).
/// The fastest runs as fast as a player can.
pub const LANES: [Lane; 4] = [
    Lane { distance_m: 6.0, speed_mps: 3.0 },
    Lane { distance_m: 9.0, speed_mps: 4.0 },
    Lane { distance_m: 12.0, speed_mps: 5.5 },
    Lane { distance_m: 15.0, speed_mps: arena_sim::movement::MAX_GROUND_SPEED_MPS },
];

impl Lane {
    /// Where the target of lane `index` stands `t_s` seconds into the
    /// server's life, and its velocity.
    pub fn at(&self, index: usize, t_s: f64) -> (Vec3, Vec3) {
        let width = 2.0 * f64::from(LANE_HALF_WIDTH_M);
        // Each lane starts at a different point of its run.
        let travelled = t_s * f64::from(self.speed_mps) + width * 0.37 * index as f64;
        let legs = travelled / width;
        let along = (legs.fract() * width) as f32;
        let eastward = (legs.floor() as i64).rem_euclid(2) == 0;
        let (x, vx) = if eastward {
            (-LANE_HALF_WIDTH_M + along, self.speed_mps)
        } else {
            (LANE_HALF_WIDTH_M - along, -self.speed_mps)
        };
        (Vec3::new(x, 0.0, FIRING_LINE_Z_M - self.distance_m), Vec3::new(vx, 0.0, 0.0))
    }

    /// A target's name: its distance and speed.
    pub fn name(&self) -> String {
        format!("Target {:.0} m {:.1} m/s", self.distance_m, self.speed_mps)
    }
}

/// Where a shooter joining the range stands: the first spot of the firing
/// line with nobody within a metre, facing the lanes (yaw 0 looks north).
pub(crate) fn firing_spot(occupied: &[Vec3]) -> (Vec3, f32) {
    let spot = FIRING_SPOTS_X_M
        .iter()
        .map(|&x| Vec3::new(x, 0.0, FIRING_LINE_Z_M))
        .find(|p| occupied.iter().all(|o| o.distance(*p) > 1.0))
        .unwrap_or(Vec3::new(0.0, 0.0, FIRING_LINE_Z_M));
    (spot, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_run_their_lane_at_their_speed_and_turn_at_the_ends() {
        for (i, lane) in LANES.iter().enumerate() {
            let dt = 1.0 / 64.0;
            let mut previous = lane.at(i, 0.0).0;
            let mut turns = 0;
            let mut last_vx = lane.at(i, 0.0).1.x;
            for step in 1..64 * 20 {
                let (pos, vel) = lane.at(i, f64::from(step) * dt);
                assert!(pos.x.abs() <= LANE_HALF_WIDTH_M + 1e-4, "{pos}");
                assert_eq!(pos.z, FIRING_LINE_Z_M - lane.distance_m);
                assert_eq!(vel.length(), lane.speed_mps);
                let moved = pos.distance(previous);
                assert!(moved <= lane.speed_mps * dt as f32 + 1e-3, "lane {i} jumped {moved} m");
                if vel.x.signum() != last_vx.signum() {
                    turns += 1;
                }
                last_vx = vel.x;
                previous = pos;
            }
            // 20 s over 12 m lanes: as many turns as the speed says.
            let expected = (20.0 * lane.speed_mps / (2.0 * LANE_HALF_WIDTH_M)) as i32;
            assert!((turns - expected).abs() <= 1, "lane {i}: {turns} turns, expected {expected}");
        }
    }

    #[test]
    fn shooters_spread_along_the_firing_line() {
        let (a, yaw) = firing_spot(&[]);
        let (b, _) = firing_spot(&[a]);
        assert_eq!(yaw, 0.0);
        assert!(a.distance(b) > 1.0);
        assert_eq!(a.z, FIRING_LINE_Z_M);
    }
}
