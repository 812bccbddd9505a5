//! Choosing where a player (re)appears.

use glam::Vec3;

use crate::map::SpawnPoint;

/// Picks the spawn point farthest from every occupied position (the nearest
/// other player is as far away as possible). Ties, and the empty arena, go to
/// the first candidate at or after `start`, so that callers can rotate `start`
/// to spread players over equally good points. Returns `None` only when there
/// are no spawn points.
pub fn pick_spawn(spawns: &[SpawnPoint], occupied: &[Vec3], start: usize) -> Option<usize> {
    if spawns.is_empty() {
        return None;
    }
    let n = spawns.len();
    let score =
        |i: usize| -> f32 { occupied.iter().map(|p| p.distance_squared(spawns[i].pos)).fold(f32::INFINITY, f32::min) };
    (0..n)
        .map(|k| (start + k) % n)
        .fold(None, |best: Option<(usize, f32)>, i| {
            let s = score(i);
            match best {
                Some((_, best_score)) if best_score >= s => best,
                _ => Some((i, s)),
            }
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawns() -> Vec<SpawnPoint> {
        [-20.0, 0.0, 20.0].iter().map(|&x| SpawnPoint { pos: Vec3::new(x, 0.0, 0.0), yaw_deg: 0.0 }).collect()
    }

    #[test]
    fn empty_arena_rotates() {
        assert_eq!(pick_spawn(&spawns(), &[], 0), Some(0));
        assert_eq!(pick_spawn(&spawns(), &[], 4), Some(1));
        assert_eq!(pick_spawn(&[], &[], 0), None);
    }

    #[test]
    fn farthest_from_the_nearest_player() {
        let occupied = [Vec3::new(-19.0, 0.0, 0.0)];
        assert_eq!(pick_spawn(&spawns(), &occupied, 0), Some(2));
        let occupied = [Vec3::new(-19.0, 0.0, 0.0), Vec3::new(21.0, 0.0, 0.0)];
        assert_eq!(pick_spawn(&spawns(), &occupied, 0), Some(1));
    }
}
