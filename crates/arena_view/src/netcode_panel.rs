//! The netcode panel (F1, or from the Esc menu): the paper's switches, the
//! link conditioner, and live figures. With it open the mouse is free for the
//! panel and the keyboard still moves you, so you can walk and watch.

use arena_client::{
    HitPredictions, InterpStats, LinkConditions, NetStats, NetcodeSettings, Roster, ServerClock, Session,
};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::vocabulary::{AutoAim, Ghosts, NetGraph, NetcodePanel, ViewSet};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NetcodePanel>()
        .add_systems(RunFixedMainLoop, toggle_panel.in_set(ViewSet::Input).run_if(in_state(Session::InGame)))
        .add_systems(EguiPrimaryContextPass, show_panel.run_if(in_state(Session::InGame)));
}

fn toggle_panel(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    settings: Res<crate::settings::Settings>,
    mut panel: ResMut<NetcodePanel>,
) {
    if settings.input(crate::settings::Action::NetcodePanel).just_pressed(&keys, &mouse) {
        panel.open = !panel.open;
    }
}

fn show_panel(
    mut contexts: EguiContexts,
    mut panel: ResMut<NetcodePanel>,
    mut settings: ResMut<NetcodeSettings>,
    stats: (Res<NetStats>, Res<HitPredictions>),
    clock: (Res<ServerClock>, Res<InterpStats>),
    roster: Res<Roster>,
    mut auto_aim: ResMut<AutoAim>,
    mut aids: (ResMut<Ghosts>, ResMut<NetGraph>),
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
            // Sections fold, for small windows.
            egui::CollapsingHeader::new("Techniques").default_open(true).show(ui, |ui| {
                techniques(ui, &mut edited, &roster, &clock.0);
                ui.checkbox(&mut auto_aim.0, "Auto-aim (demonstration)").on_hover_text(
                    "Your view follows the nearest player as you see them. With lag compensation every \
                     shot hits; without, shots trail by the target's speed times your latency.",
                );
                ui.checkbox(&mut aids.0.0, "Server ghosts (F3)").on_hover_text(
                    "A translucent body where the newest snapshot put each player (white) and where the \
                     server last had you (cyan): the interpolation delay and the prediction lead, as distances.",
                );
                ui.horizontal(|ui| {
                    ui.label("Net graph (F2)");
                    for (mode, label) in
                        [(NetGraph::Off, "off"), (NetGraph::Compact, "compact"), (NetGraph::Full, "full")]
                    {
                        ui.selectable_value(&mut *aids.1, mode, label);
                    }
                });
            });
            egui::CollapsingHeader::new("Link conditioner").default_open(true).show(ui, |ui| {
                conditioner(ui, &mut edited.conditions);
            });
            if edited != *settings {
                *settings = edited;
            }
            egui::CollapsingHeader::new("Live").default_open(true).show(ui, |ui| {
                live(ui, (&stats.0, &stats.1), (&clock.0, &clock.1), &roster);
            });
        });
    if !open {
        panel.open = false;
    }
    Ok(())
}

fn techniques(ui: &mut egui::Ui, edited: &mut NetcodeSettings, roster: &Roster, clock: &ServerClock) {
    ui.checkbox(&mut edited.prediction, "Client-side prediction")
        .on_hover_text("Run your own commands at once instead of waiting a round trip for the server.");
    ui.add_enabled_ui(edited.prediction, |ui| {
        ui.checkbox(&mut edited.reconciliation, "Reconciliation").on_hover_text(
            "On each snapshot, replay the commands the server has not seen yet. \
             Off: jump back to the server's older position (rubber-banding).",
        );
        // Half-Life's pushlatency: prediction of only part of the latency.
        let mut limited = edited.predict_ahead_ms.is_some();
        ui.horizontal(|ui| {
            let hint = "Half-Life's pushlatency: predict at most this far ahead of what the server acknowledged. \
                        Below your round trip your own motion lags by the difference and slides on after you let \
                        go: the \"ice skates\" of the paper's footnote, and why full prediction won.";
            if ui.checkbox(&mut limited, "Predict at most").on_hover_text(hint).changed() {
                edited.predict_ahead_ms = limited.then_some(60);
            }
            if let Some(ms) = edited.predict_ahead_ms.as_mut() {
                ui.add(egui::Slider::new(ms, 0..=300).suffix(" ms ahead"));
            }
        });
    });
    ui.checkbox(&mut edited.interpolation, "Entity interpolation")
        .on_hover_text("Draw other players smoothly, a little in the past. Off: as each snapshot arrives.");
    ui.add_enabled_ui(edited.interpolation, |ui| {
        let now_ms = clock.delay_ms(roster.tick_rate()).round().clamp(0.0, f64::from(u16::MAX)) as u16;
        let mut ms = slider_delay_ms(edited, now_ms);
        let slider = egui::Slider::new(&mut ms, 0..=arena_protocol::MAX_INTERP_MS).suffix(" ms").text("delay");
        if ui.add(slider).changed() {
            edited.interp_ms = Some(ms);
        }
        let adaptive = edited.interp_ms.is_none();
        let label = if adaptive { format!("adaptive (now {now_ms} ms)") } else { "adaptive".to_string() };
        if ui
            .selectable_label(adaptive, label)
            .on_hover_text(
                "About one snapshot interval plus what the lateness of the last two seconds' snapshots needs: \
             longer at once when snapshots come late, shorter within seconds once the link is clean. \
             Dragging the slider fixes the delay instead.",
            )
            .clicked()
        {
            edited.interp_ms = None;
        }
    });
    ui.checkbox(&mut edited.lag_compensation, "Lag compensation")
        .on_hover_text("The server rewinds the others to what you saw when you fired. Off: lead your targets.");
    ui.checkbox(&mut edited.projectile_compensation, "Projectile compensation").on_hover_text(
        "The server brings your rocket up to the time you fired it (at most the rewind cap), its first metres \
         tested against the others as you saw them. Off: it flies from the tick your command ran; lead moving \
         targets by your round trip.",
    );
    ui.add_enabled_ui(roster.subtick, |ui| {
        let hover = if roster.subtick {
            "A shot goes from the frame you clicked in: its time within the tick, its view, what it showed. \
             Off: from the next tick's view and position, up to a tick later."
        } else {
            "This server resolves shots on the tick (it runs with --no-subtick)."
        };
        ui.checkbox(&mut edited.subtick, "Sub-tick shots").on_hover_text(hover);
    });
    ui.checkbox(&mut edited.hit_prediction, "Predicted hit markers").on_hover_text(
        "The hit marker the moment your shot meets a body as you see it; the server confirms it, or denies \
         it (a grey marker, \"no hit\"). Off: the marker waits for the server. Damage is never predicted.",
    );
    ui.checkbox(&mut edited.show_hitboxes, "Show hitboxes")
        .on_hover_text("For each shot: where you saw the target (red), where the server tested it (blue).");
}

fn conditioner(ui: &mut egui::Ui, c: &mut LinkConditions) {
    ui.horizontal(|ui| {
        for (name, preset) in LinkConditions::PRESETS {
            if ui.selectable_label(*c == preset, name).clicked() {
                *c = preset;
            }
        }
    });
    ui.add(egui::Slider::new(&mut c.latency_ms, 0.0..=500.0).suffix(" ms").text("latency (round trip)"));
    ui.add(egui::Slider::new(&mut c.jitter_ms, 0.0..=100.0).suffix(" ms").text("jitter (±)"));
    let mut loss_percent = c.loss * 100.0;
    ui.add(egui::Slider::new(&mut loss_percent, 0.0..=30.0).suffix(" %").text("loss (each way)"));
    c.loss = loss_percent / 100.0;
}

fn live(
    ui: &mut egui::Ui,
    (stats, hits): (&NetStats, &HitPredictions),
    (clock, drawing): (&ServerClock, &InterpStats),
    roster: &Roster,
) {
    egui::Grid::new("netcode figures").num_columns(2).striped(true).show(ui, |ui| {
        let mut row = |name: &str, value: String| {
            ui.label(name);
            ui.monospace(value);
            ui.end_row();
        };
        row("round trip", format!("{:.0} ms", stats.rtt_ms));
        if let Some(via) = stats.via_relay {
            let added = via.round_trip.map_or("-".to_string(), |rtt| format!("{:.0} ms", rtt.as_secs_f64() * 1000.0));
            row("via relay", format!("{} (round trip to it {added})", via.turn));
        }
        row("packet loss", format!("{:.1} %", stats.packet_loss * 100.0));
        let kbit = |bytes_per_s: f64| bytes_per_s * 8.0 / 1000.0;
        row("in / out", format!("{:.1} / {:.1} kbit/s", kbit(stats.bytes_in_per_s), kbit(stats.bytes_out_per_s)));
        row("datagrams in / out", format!("{:.0} / {:.0} /s", stats.datagrams_in_per_s, stats.datagrams_out_per_s));
        row("snapshots", format!("{:.0} /s", stats.snapshots_per_s));
        row("commands pending", stats.commands_pending.to_string());
        let margin = stats.command_margin_ticks.map(|m| format!("{m:.2} ticks ahead at worst"));
        row("server buffer", margin.unwrap_or_else(|| "-".into()));
        let head_start = match (stats.head_start_ticks, stats.head_start_target_ticks) {
            (Some(mean), Some(target)) => {
                let ms = |ticks: f32| roster.tick_rate().ticks_to_ms(f64::from(ticks));
                format!("{:.1} ms (aiming at {:.1} ms)", ms(mean), ms(target))
            }
            _ => "-".into(),
        };
        row("command head start", head_start);
        row("late commands", format!("{:.1} %", stats.late_commands * 100.0));
        row("clock", format!("{:+.1} % ({} resets)", (stats.clock_rate - 1.0) * 100.0, stats.clock_resets));
        row("mispredictions", format!("{:.1} /s", stats.mispredictions_per_s));
        row("largest correction (5 s)", format!("{:.3} m", stats.recent_max_correction_m));
        row("interpolation delay", format!("{:.1} ms", clock.delay_ms(roster.tick_rate())));
        row(
            "foreseen hits",
            format!("{} confirmed, {} denied, {} unforeseen", hits.confirmed, hits.denied, hits.unforeseen),
        );
        row(
            "extrapolated / held",
            format!(
                "{} / {} frames ({} resets)",
                drawing.extrapolated_frames, drawing.held_frames, drawing.history_resets
            ),
        );
    });
}

/// The interpolation delay the panel's slider shows: the one chosen (by
/// the panel, the console's `cl_interp` or the flag), else the adaptive
/// delay now.
pub(crate) fn slider_delay_ms(settings: &NetcodeSettings, adaptive_now_ms: u16) -> u16 {
    settings.interp_ms.unwrap_or(adaptive_now_ms)
}
