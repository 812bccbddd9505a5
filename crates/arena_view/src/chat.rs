//! Chat on screen: the last lines over the bottom left of the view, each
//! fading [`SHOWN_S`] after it came; while a line is being typed (Y, or U
//! for the team: `input.rs` opens it), the field, and the whole log to
//! scroll. Names and text are drawn as plain text, never as markup.

use arena_client::{ChatLine, ChatLog, SayChat, Session};
use arena_protocol::chat::MAX_CHAT_CHARS;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::vocabulary::ChatInput;

/// How long a line stays over the view, and the last part of it in which it fades, seconds.
const SHOWN_S: f64 = 8.0;
const FADE_S: f64 = 2.0;
/// Lines over the view at most while no line is being typed.
const SHOWN_LINES: usize = 6;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, chat_box.run_if(in_state(Session::InGame)));
}

/// One line: the speaker's name (or the server's word), then the text.
fn line_job(line: &ChatLine, alpha: f32) -> egui::text::LayoutJob {
    let fade = |c: egui::Color32| c.gamma_multiply(alpha);
    let mut job = egui::text::LayoutJob::default();
    let font = egui::FontId::proportional(14.0);
    let plain = |color| egui::TextFormat { font_id: font.clone(), color, ..Default::default() };
    match &line.from {
        Some(name) => {
            let who = if line.team { format!("{name} (team): ") } else { format!("{name}: ") };
            // The speaker in its team's colour; without teams, one warm colour.
            let colour = match line.side.team() {
                Some(team) => {
                    let [r, g, b] = team.rgb();
                    let lift = |c: f32| ((c * 0.7 + 0.3) * 255.0) as u8;
                    egui::Color32::from_rgb(lift(r), lift(g), lift(b))
                }
                None => egui::Color32::from_rgb(255, 205, 110),
            };
            job.append(&who, 0.0, plain(fade(colour)));
            job.append(&line.text, 0.0, plain(fade(egui::Color32::from_rgb(235, 238, 245))));
        }
        None => job.append(&line.text, 0.0, plain(fade(egui::Color32::from_rgb(255, 140, 100)))),
    }
    job
}

fn chat_box(
    mut contexts: EguiContexts,
    log: Res<ChatLog>,
    mut input: ResMut<ChatInput>,
    time: Res<Time<Real>>,
    mut say: MessageWriter<SayChat>,
) -> Result {
    let now = time.elapsed_secs_f64();
    if !input.open && log.lines.back().is_none_or(|l| now - l.at_s > SHOWN_S) {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Area::new(egui::Id::new("chat"))
        .anchor(egui::Align2::LEFT_BOTTOM, [12.0, -110.0])
        .interactable(input.open)
        .show(ctx, |ui| {
            ui.set_max_width(520.0);
            if input.open {
                egui::Frame::new()
                    .fill(egui::Color32::from_black_alpha(150))
                    .inner_margin(6.0)
                    .corner_radius(4.0)
                    .show(ui, |ui| {
                        // The whole log, newest at the bottom, to scroll back.
                        egui::ScrollArea::vertical().max_height(180.0).stick_to_bottom(true).show(ui, |ui| {
                            for line in &log.lines {
                                ui.add(egui::Label::new(line_job(line, 1.0)).wrap());
                            }
                        });
                        ui.horizontal(|ui| {
                            ui.label(if input.team { "say (team):" } else { "say:" });
                            let field = ui.add(
                                egui::TextEdit::singleline(&mut input.text)
                                    .char_limit(MAX_CHAT_CHARS)
                                    .desired_width(420.0),
                            );
                            if !input.focused {
                                field.request_focus();
                                input.focused = true;
                            }
                            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                                let text = std::mem::take(&mut input.text);
                                say.write(SayChat { text, team: input.team });
                                *input = ChatInput::default();
                            }
                        });
                    });
            } else {
                let recent: Vec<&ChatLine> =
                    log.lines.iter().rev().take_while(|l| now - l.at_s <= SHOWN_S).take(SHOWN_LINES).collect();
                for line in recent.into_iter().rev() {
                    let left = SHOWN_S - (now - line.at_s);
                    let alpha = (left / FADE_S).clamp(0.0, 1.0) as f32;
                    egui::Frame::new()
                        .fill(egui::Color32::from_black_alpha((110.0 * alpha) as u8))
                        .inner_margin(egui::Margin::symmetric(6, 2))
                        .show(ui, |ui| {
                            ui.add(egui::Label::new(line_job(line, alpha)).wrap());
                        });
                }
            }
        });
    Ok(())
}
