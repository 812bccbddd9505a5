//! The console's window: over the top of the view, the scrollback, the
//! line being typed (history on Up/Down, completion on Tab, keys typed in
//! the frame it opened kept) and what Tab offers, each described; typed
//! passwords shown as stars. What a line does is `console.rs`'s.

use arena_protocol::console;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::console::{Console, Game, HISTORY_LINES, ViewHost, config_dir};
use crate::vocabulary::ConsoleWindow;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, show);
}

/// `line` as the scrollback shows it: passwords (`rcon_password X`,
/// `connect ADDRESS PASSWORD`) as stars, for whoever looks at the screen.
fn masked(line: &str) -> String {
    console::split_commands(line)
        .iter()
        .map(|command| {
            let words = console::split_words(command);
            match words.first().map(String::as_str) {
                Some("rcon_password") if words.len() > 1 => "rcon_password ****".to_string(),
                Some("connect") if words.len() > 2 => format!("connect {} ****", words[1]),
                _ => command.trim().to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The console window: over the top of the view, the scrollback, the line,
/// and what Tab offers.
fn show(
    mut contexts: EguiContexts,
    window: Res<ConsoleWindow>,
    mut console: ResMut<Console>,
    mut game: Game,
) -> Result {
    if !window.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let height = screen.height() * 0.45;
    let console = &mut *console;
    egui::Area::new(egui::Id::new("console"))
        .order(egui::Order::Foreground)
        .anchor(egui::Align2::LEFT_TOP, [0.0, 0.0])
        .show(ctx, |ui| {
            egui::Frame::new().fill(egui::Color32::from_rgba_unmultiplied(12, 14, 20, 235)).inner_margin(8.0).show(
                ui,
                |ui| {
                    ui.set_width(screen.width() - 16.0);
                    ui.set_min_height(height);
                    let mono = egui::FontId::monospace(13.0);
                    let candidates_height = if console.candidates.is_empty() {
                        0.0
                    } else {
                        22.0 * (console.candidates.len().min(8) as f32) + 8.0
                    };
                    egui::ScrollArea::vertical()
                        .max_height((height - 40.0 - candidates_height).max(40.0))
                        .stick_to_bottom(true)
                        .auto_shrink([false, false])
                        .show(ui, |ui| {
                            for line in &console.lines {
                                ui.label(
                                    egui::RichText::new(line)
                                        .font(mono.clone())
                                        .color(egui::Color32::from_rgb(200, 205, 215)),
                                );
                            }
                        });
                    ui.separator();
                    // Keys the line editor takes before the text field sees them.
                    let (tab, up, down) = ui.input_mut(|i| {
                        (
                            i.consume_key(egui::Modifiers::NONE, egui::Key::Tab),
                            i.consume_key(egui::Modifiers::NONE, egui::Key::ArrowUp),
                            i.consume_key(egui::Modifiers::NONE, egui::Key::ArrowDown),
                        )
                    });
                    let dir = config_dir(&game.file);
                    let mut empty = (String::new(), String::new());
                    let host = ViewHost {
                        game: &mut game,
                        rcon_password: &mut empty.0,
                        rcon_address: &mut empty.1,
                        actions: Vec::new(),
                        dir,
                    };
                    let field = ui
                        .horizontal(|ui| {
                            ui.label(egui::RichText::new("]").font(mono.clone()));
                            ui.add(
                                egui::TextEdit::singleline(&mut console.input)
                                    .font(mono.clone())
                                    .lock_focus(true)
                                    .char_limit(console::MAX_LINE_BYTES)
                                    .desired_width(f32::INFINITY),
                            )
                        })
                        .inner;
                    if !console.focused {
                        // Keys typed on the frame the console opened (before the field
                        // had the keyboard): into the line, but the console key's own.
                        let typed: String = ui.input(|i| {
                            i.events
                                .iter()
                                .filter_map(|e| match e {
                                    egui::Event::Text(t) => Some(t.clone()),
                                    _ => None,
                                })
                                .collect()
                        });
                        console.input.extend(typed.chars().filter(|c| *c != '`' && *c != '~'));
                    }
                    // After the field took this frame's typing (at a few frames
                    // a second, a word and the Tab after it come in one frame).
                    if tab {
                        let completion = console::complete(&console.input, &host);
                        console.input = completion.apply(&console.input);
                        console.candidates =
                            if completion.candidates.len() > 1 { completion.candidates } else { Vec::new() };
                    }
                    if up || down {
                        let n = console.history.len();
                        let at = match (console.browsing, up) {
                            (None, true) if n > 0 => Some(n - 1),
                            (Some(i), true) => Some(i.saturating_sub(1)),
                            (Some(i), false) if i + 1 < n => Some(i + 1),
                            _ => None,
                        };
                        console.browsing = at;
                        console.input = at.and_then(|i| console.history.get(i).cloned()).unwrap_or_default();
                    }
                    if !console.focused || tab || up || down {
                        field.request_focus();
                        if let Some(mut state) = egui::TextEdit::load_state(ui.ctx(), field.id) {
                            let end = egui::text::CCursor::new(console.input.chars().count());
                            state.cursor.set_char_range(Some(egui::text::CCursorRange::one(end)));
                            state.store(ui.ctx(), field.id);
                        }
                        console.focused = true;
                    }
                    if field.changed() && !tab {
                        console.candidates.clear();
                    }
                    if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                        let line = std::mem::take(&mut console.input);
                        console.candidates.clear();
                        console.browsing = None;
                        if !line.trim().is_empty() {
                            console.say(format!("] {}", masked(&line)));
                            if console.history.back() != Some(&line) {
                                if console.history.len() >= HISTORY_LINES {
                                    console.history.pop_front();
                                }
                                console.history.push_back(line.clone());
                            }
                            console.submit(line);
                        }
                        field.request_focus();
                    }
                    if !console.candidates.is_empty() {
                        egui::Frame::new().fill(egui::Color32::from_rgb(30, 34, 46)).inner_margin(4.0).show(ui, |ui| {
                            for (i, c) in console.candidates.iter().take(8).enumerate() {
                                let described = console::describe(&host, c).unwrap_or_default();
                                let text = if described.is_empty() { c.clone() } else { described };
                                let color = if i == 0 {
                                    egui::Color32::from_rgb(255, 220, 120)
                                } else {
                                    egui::Color32::from_rgb(190, 200, 215)
                                };
                                ui.label(egui::RichText::new(text).font(mono.clone()).color(color));
                            }
                            if console.candidates.len() > 8 {
                                ui.label(
                                    egui::RichText::new(format!("… {} more", console.candidates.len() - 8))
                                        .font(mono.clone()),
                                );
                            }
                        });
                    }
                },
            );
        });
    Ok(())
}
