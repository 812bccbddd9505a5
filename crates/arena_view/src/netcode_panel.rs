//! The netcode panel (F1, or from the Esc menu): the paper's switches, the
//! link conditioner, and live figures. With it open the mouse is free for the
//! panel and the keyboard still moves you, so you can walk and watch.

use arena_client::{LinkConditions, NetStats, NetcodeSettings, Session};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::ViewSet;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NetcodePanel>()
        .add_systems(Update, toggle_panel.in_set(ViewSet::Input).run_if(in_state(Session::InGame)))
        .add_systems(EguiPrimaryContextPass, show_panel.run_if(in_state(Session::InGame)));
}

/// Whether the netcode panel is open.
#[derive(Resource, Default, Debug)]
pub struct NetcodePanel {
    pub open: bool,
}

fn toggle_panel(keys: Res<ButtonInput<KeyCode>>, mut panel: ResMut<NetcodePanel>) {
    if keys.just_pressed(KeyCode::F1) {
        panel.open = !panel.open;
    }
}

fn show_panel(
    mut contexts: EguiContexts,
    mut panel: ResMut<NetcodePanel>,
    mut settings: ResMut<NetcodeSettings>,
    stats: Res<NetStats>,
) -> Result {
    if !panel.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    egui::Window::new("Netcode")
        .open(&mut open)
        .resizable(false)
        .anchor(egui::Align2::RIGHT_TOP, [-12.0, 12.0])
        .default_width(300.0)
        .show(ctx, |ui| {
            // Edit a copy so that the resource only changes (and the
            // conditioner is only reconfigured) when something was touched.
            let mut edited = settings.clone();
            ui.heading("Techniques");
            ui.checkbox(&mut edited.prediction, "Client-side prediction")
                .on_hover_text("Run your own commands at once instead of waiting a round trip for the server.");
            ui.add_enabled_ui(edited.prediction, |ui| {
                ui.checkbox(&mut edited.reconciliation, "Reconciliation").on_hover_text(
                    "On each snapshot, replay the commands the server has not seen yet. \
                     Off: jump back to the server's older position (rubber-banding).",
                );
            });

            ui.separator();
            ui.heading("Link conditioner");
            ui.horizontal(|ui| {
                for (name, preset) in LinkConditions::PRESETS {
                    let selected = edited.conditions == preset;
                    if ui.selectable_label(selected, name).clicked() {
                        edited.conditions = preset;
                    }
                }
            });
            let c = &mut edited.conditions;
            ui.add(egui::Slider::new(&mut c.latency_ms, 0.0..=500.0).suffix(" ms").text("latency (round trip)"));
            ui.add(egui::Slider::new(&mut c.jitter_ms, 0.0..=100.0).suffix(" ms").text("jitter (±)"));
            let mut loss_percent = c.loss * 100.0;
            ui.add(egui::Slider::new(&mut loss_percent, 0.0..=30.0).suffix(" %").text("loss (each way)"));
            c.loss = loss_percent / 100.0;
            if edited != *settings {
                *settings = edited;
            }

            ui.separator();
            ui.heading("Live");
            egui::Grid::new("netcode figures").num_columns(2).striped(true).show(ui, |ui| {
                let mut row = |name: &str, value: String| {
                    ui.label(name);
                    ui.monospace(value);
                    ui.end_row();
                };
                row("round trip", format!("{:.0} ms", stats.rtt_ms));
                row("packet loss", format!("{:.1} %", stats.packet_loss * 100.0));
                row(
                    "in / out",
                    format!("{:.1} / {:.1} kB/s", stats.bytes_in_per_s / 1000.0, stats.bytes_out_per_s / 1000.0),
                );
                row("snapshots", format!("{:.0} /s", stats.snapshots_per_s));
                row("commands pending", stats.commands_pending.to_string());
                row(
                    "server buffer",
                    stats
                        .command_margin_ticks
                        .map(|m| format!("{m:.2} ticks ahead at worst"))
                        .unwrap_or_else(|| "-".into()),
                );
                row("clock", format!("{:+.1} % ({} resets)", (stats.clock_rate - 1.0) * 100.0, stats.clock_resets));
                row("mispredictions", format!("{:.1} /s", stats.mispredictions_per_s));
                row("largest correction (5 s)", format!("{:.3} m", stats.recent_max_correction_m));
            });
        });
    if !open {
        panel.open = false;
    }
    Ok(())
}
