//! A map coming from the server, on screen: over the whole view, its name
//! and a progress bar while the pieces arrive (the player is out of the
//! world until it is in), or how long until it is asked for again when the
//! server said "not now".

use arena_client::{MapFetch, Session};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, progress.run_if(in_state(Session::InGame)));
}

fn progress(mut contexts: EguiContexts, fetch: Res<MapFetch>) -> Result {
    let Some((name, done)) = fetch.progress() else { return Ok(()) };
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    egui::Area::new(egui::Id::new("map download")).fixed_pos(screen.min).interactable(false).show(ctx, |ui| {
        ui.painter().rect_filled(screen, 0.0, egui::Color32::from_black_alpha(220));
        ui.scope_builder(egui::UiBuilder::new().max_rect(screen), |ui| {
            ui.vertical_centered(|ui| {
                ui.add_space(screen.height() * 0.4);
                ui.label(egui::RichText::new(format!("Downloading the map {name}")).size(24.0).strong());
                ui.add_space(10.0);
                ui.add(
                    egui::ProgressBar::new(done)
                        .desired_width(screen.width().min(520.0))
                        .show_percentage()
                        .animate(true),
                );
                ui.add_space(6.0);
                let line = match fetch.waiting() {
                    // The server said "not now" (issue 60): why, and when.
                    Some(wait_s) => format!(
                        "The server has sent this map to others at your address lately and sends only so many; \
                         asking again in {:.0} s.",
                        wait_s.ceil()
                    ),
                    None => "The server sends its own map; it is checked, kept and loaded.".to_string(),
                };
                ui.label(egui::RichText::new(line).color(egui::Color32::from_gray(190)));
            });
        });
    });
    Ok(())
}
