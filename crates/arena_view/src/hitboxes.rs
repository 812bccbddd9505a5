//! "Show hitboxes" (netcode panel): for each of our shots over the last two
//! seconds, the target's hitbox where our client drew it when we fired (red)
//! and where the server tested it, rewound or not (blue), the shot's line,
//! and the server's verdict. Source's `sv_showimpacts`, for this game.

use arena_client::{NetcodeSettings, Session, ShotComparison, ShotComparisons};
use arena_sim::hitbox::{BODY_RADIUS_M, HEAD_RADIUS_M};
use arena_sim::{HitZone, Hitbox, PlayerId};
use bevy::prelude::*;

use crate::vocabulary::ViewSet;

const SEEN: Color = Color::srgb(1.0, 0.2, 0.2);
const TESTED: Color = Color::srgb(0.25, 0.5, 1.0);

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, draw_comparisons.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)));
}

/// The player a shot was about: the one it hit, or the one whose drawn
/// hitbox passed nearest to it.
pub fn shot_target(c: &ShotComparison) -> Option<PlayerId> {
    if let Some(hit) = c.result.hit {
        return Some(hit.victim);
    }
    let (origin, dir) = (c.fired.shot.origin, c.fired.shot.dir);
    c.fired
        .seen
        .iter()
        .filter(|(_, h)| h.alive)
        .map(|(id, h)| {
            let to = h.body_center() - origin;
            (*id, (to - dir * to.dot(dir).max(0.0)).length())
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(id, _)| id)
}

/// A short line about a verdict, for the HUD.
pub fn verdict(c: &ShotComparison) -> String {
    let how = if !c.result.lag_compensated {
        "not compensated".to_string()
    } else if (c.result.tested_tick - c.fired.render_tick).abs() > 0.5 {
        // The server did not believe (or had to clamp) our render time.
        format!("server's estimate used, {:.1} ticks from ours", c.result.tested_tick - c.fired.render_tick)
    } else {
        let back = f64::from(c.fired.cmd_tick) - c.result.tested_tick;
        format!("rewound {back:.1} ticks")
    };
    match c.result.hit {
        Some(hit) => format!(
            "HIT {}{} ({how})",
            if hit.zone == HitZone::Head { "head" } else { "body" },
            if hit.killed { ", kill" } else { "" }
        ),
        None => format!("MISS ({how})"),
    }
}

/// Draws a hitbox, `grow` metres larger all round (so that the server's,
/// drawn a little larger, stays visible when it matches ours exactly).
fn draw_hitbox(gizmos: &mut Gizmos, hitbox: &Hitbox, grow: f32, color: Color) {
    let (a, b) = hitbox.body_segment();
    let body = Capsule3d::new(BODY_RADIUS_M + grow, (b - a).length());
    gizmos.primitive_3d(&body, Isometry3d::from_translation((a + b) * 0.5), color);
    gizmos.sphere(Isometry3d::from_translation(hitbox.head_center()), HEAD_RADIUS_M + grow, color);
}

fn draw_comparisons(settings: Res<NetcodeSettings>, comparisons: Res<ShotComparisons>, mut gizmos: Gizmos) {
    if !settings.show_hitboxes {
        return;
    }
    for c in &comparisons.0 {
        let line = if c.result.hit.is_some() { Color::srgb(0.3, 1.0, 0.3) } else { Color::srgb(0.9, 0.9, 0.9) };
        gizmos.line(c.fired.shot.origin, c.result.end, line);
        let Some(target) = shot_target(c) else { continue };
        if let Some((_, seen)) = c.fired.seen.iter().find(|(id, _)| *id == target) {
            draw_hitbox(&mut gizmos, seen, 0.0, SEEN);
        }
        if let Some((_, tested)) = c.result.hitboxes.iter().find(|(id, _)| *id == target) {
            draw_hitbox(&mut gizmos, tested, 0.04, TESTED);
        }
    }
}
