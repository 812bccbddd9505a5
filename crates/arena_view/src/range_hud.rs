//! The shooting range's HUD: hits, shots and hit ratio live (since the last
//! change of lag compensation or fake latency, and in all), and for each
//! recent miss where the target was on the server, drawn as dots around the
//! shot and written out.

use arena_client::{NetStats, NetcodeSettings, RangeStats, Roster, Session};
use arena_sim::hitbox::TORSO_RADIUS_M;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::vocabulary::ViewSet;

/// Side of the miss diagram, pixels, and how many pixels a metre takes.
const DIAGRAM_PX: f32 = 150.0;
const PX_PER_M: f32 = 30.0;
/// A miss fades from the diagram after this long, seconds.
const MISS_SHOWN_S: f64 = 12.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Segment>()
        .add_systems(Update, follow_changes.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)))
        .add_systems(OnEnter(Session::Connecting), |mut segment: ResMut<Segment>| *segment = Segment::default())
        .add_systems(EguiPrimaryContextPass, range_panel.run_if(in_state(Session::InGame)));
}

/// The tally at the last change of the settings that matter on the range,
/// so that "since the change" compares like with like.
#[derive(Resource, Debug, Default)]
struct Segment {
    settings: Option<(bool, u32)>,
    shots: u32,
    hits: u32,
}

fn follow_changes(settings: Res<NetcodeSettings>, stats: Res<RangeStats>, mut segment: ResMut<Segment>) {
    let now = (settings.lag_compensation, settings.conditions.latency_ms.round() as u32);
    if segment.settings != Some(now) {
        *segment = Segment { settings: Some(now), shots: stats.shots, hits: stats.hits };
    }
}

fn ratio(hits: u32, shots: u32) -> String {
    if shots == 0 { "-".to_string() } else { format!("{:.0}%", 100.0 * f64::from(hits) / f64::from(shots)) }
}

/// "0.84 m right, 0.10 m low" from a miss's offsets.
fn describe(right_m: f32, up_m: f32) -> String {
    let side = if right_m >= 0.0 { "right" } else { "left" };
    let height = if up_m >= 0.0 { "high" } else { "low" };
    format!("{:.2} m {side}, {:.2} m {height}", right_m.abs(), up_m.abs())
}

fn range_panel(
    mut contexts: EguiContexts,
    roster: Res<Roster>,
    stats: Res<RangeStats>,
    segment: Res<Segment>,
    settings: Res<NetcodeSettings>,
    net: Res<NetStats>,
    time: Res<Time<Real>>,
) -> Result {
    if !roster.range {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let now = time.elapsed_secs_f64();
    let shots = stats.shots.saturating_sub(segment.shots);
    let hits = stats.hits.saturating_sub(segment.hits);
    egui::Window::new("Shooting range")
        .anchor(egui::Align2::LEFT_TOP, [10.0, 10.0])
        .resizable(false)
        .collapsible(false)
        .interactable(false)
        .show(ctx, |ui| {
            let on = settings.lag_compensation;
            ui.label(
                egui::RichText::new(format!(
                    "lag compensation {}  ·  round trip {:.0} ms",
                    if on { "ON" } else { "OFF" },
                    net.rtt_ms
                ))
                .color(if on {
                    egui::Color32::from_rgb(120, 220, 120)
                } else {
                    egui::Color32::from_rgb(255, 150, 90)
                }),
            );
            ui.label(
                egui::RichText::new(format!("{hits} / {shots} hits   {}", ratio(hits, shots))).size(24.0).strong(),
            );
            ui.label(
                egui::RichText::new(format!(
                    "since the last change · in all {} / {} ({})",
                    stats.hits,
                    stats.shots,
                    ratio(stats.hits, stats.shots)
                ))
                .weak(),
            );
            ui.add_space(4.0);
            ui.label("Misses: where the target was on the server");
            miss_diagram(ui, &stats, now);
            for (miss, _) in stats.misses.iter().rev().take(3) {
                let who = roster.names.get(&miss.target).map(|n| n.trim_end_matches(" (bot)")).unwrap_or("target");
                ui.label(egui::RichText::new(format!("{who}: {}", describe(miss.right_m, miss.up_m))).small());
            }
            if stats.misses.is_empty() {
                ui.label(egui::RichText::new("no misses yet").small().weak());
            }
        });
    Ok(())
}

/// The shot at the centre (a cross), the target's body width as a ring, and
/// each recent miss as a dot where the target's centre was, fading with age.
fn miss_diagram(ui: &mut egui::Ui, stats: &RangeStats, now: f64) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(DIAGRAM_PX, DIAGRAM_PX), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let centre = rect.center();
    painter.rect_filled(rect, 4.0, egui::Color32::from_black_alpha(90));
    let grid = egui::Stroke::new(1.0, egui::Color32::from_white_alpha(25));
    for m in [-2.0, -1.0, 1.0, 2.0] {
        let d = m * PX_PER_M;
        painter.line_segment([egui::pos2(centre.x + d, rect.top()), egui::pos2(centre.x + d, rect.bottom())], grid);
        painter.line_segment([egui::pos2(rect.left(), centre.y + d), egui::pos2(rect.right(), centre.y + d)], grid);
    }
    painter.circle_stroke(
        centre,
        TORSO_RADIUS_M * PX_PER_M,
        egui::Stroke::new(1.0, egui::Color32::from_white_alpha(90)),
    );
    let cross = egui::Stroke::new(1.5, egui::Color32::WHITE);
    painter.line_segment([centre - egui::vec2(5.0, 0.0), centre + egui::vec2(5.0, 0.0)], cross);
    painter.line_segment([centre - egui::vec2(0.0, 5.0), centre + egui::vec2(0.0, 5.0)], cross);
    for (miss, at) in &stats.misses {
        let age = now - at;
        if age > MISS_SHOWN_S {
            continue;
        }
        let alpha = (255.0 * (1.0 - age / MISS_SHOWN_S)).clamp(40.0, 255.0) as u8;
        let offset = egui::vec2(miss.right_m, -miss.up_m) * PX_PER_M;
        let half = DIAGRAM_PX / 2.0 - 4.0;
        let at = centre + egui::vec2(offset.x.clamp(-half, half), offset.y.clamp(-half, half));
        painter.circle_filled(at, 4.0, egui::Color32::from_rgba_unmultiplied(255, 120, 80, alpha));
    }
    painter.text(
        rect.left_bottom() + egui::vec2(4.0, -4.0),
        egui::Align2::LEFT_BOTTOM,
        "1 m grid",
        egui::FontId::proportional(10.0),
        egui::Color32::from_white_alpha(120),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_read_as_a_player_would_say_them() {
        assert_eq!(describe(0.84, -0.1), "0.84 m right, 0.10 m low");
        assert_eq!(describe(-1.5, 0.25), "1.50 m left, 0.25 m high");
        assert_eq!(ratio(0, 0), "-");
        assert_eq!(ratio(9, 10), "90%");
    }
}
