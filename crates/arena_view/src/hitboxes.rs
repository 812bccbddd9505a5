//! "Show hitboxes" (netcode panel): for each of our shots over the last two
//! seconds, the target's hitbox where our client drew it when we fired (red)
//! and where the server tested it, rewound or not (blue), the shot's line,
//! and the server's verdict. Source's `sv_showimpacts`, for this game.

use arena_client::{NetcodeSettings, Session, ShotComparison, ShotComparisons};
use arena_sim::{HitZone, Hitbox, PlayerId};
use bevy::prelude::*;

use crate::vocabulary::{ViewSet, capsule_transform};

const SEEN: Color = Color::srgb(1.0, 0.2, 0.2);
const TESTED: Color = Color::srgb(0.25, 0.5, 1.0);

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, draw_comparisons.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)));
}

/// The player a shot was about: the one it hit, or the one whose drawn
/// hitbox passed nearest to it.
pub(crate) fn shot_target(c: &ShotComparison) -> Option<PlayerId> {
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
pub(crate) fn verdict(c: &ShotComparison) -> String {
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
            match hit.zone {
                HitZone::Head => "head",
                HitZone::Body => "body",
                HitZone::Limb => "limb",
            },
            if hit.killed { ", kill" } else { "" }
        ),
        None => format!("MISS ({how})"),
    }
}

/// Draws a hitbox, every part of it, `grow` metres larger all round (so that
/// the server's, drawn a little larger, stays visible when it matches ours
/// exactly).
pub(crate) fn draw_hitbox<G: GizmoConfigGroup>(gizmos: &mut Gizmos<G>, hitbox: &Hitbox, grow: f32, color: Color) {
    for part in hitbox.parts() {
        let place = capsule_transform(&part, Vec3::ZERO);
        let shape = Capsule3d::new(part.radius + grow, part.a.distance(part.b));
        gizmos.primitive_3d(&shape, Isometry3d::new(place.translation, place.rotation), color);
    }
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
