//! Votes on screen: the vote open (or just ended) at the left of the view
//! (who called it, its question, the count against the majority needed,
//! the seconds left), the two keys that answer it (F7 yes, F8 no) until
//! we have answered, and our calls from the pause menu (`vote_menu`).
//! Names and map names are drawn as plain text, never as markup.

use arena_client::{Session, VoteAction, VoteBoard};
use arena_protocol::vote::VoteOutcome;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::vocabulary::{ChatInput, ConsoleWindow, ViewSet};

/// The keys that answer a vote (Quake 3 uses F1 and F2, which open the
/// netcode panel and the net graph here).
pub(crate) const YES_KEY: KeyCode = KeyCode::F7;
pub(crate) const NO_KEY: KeyCode = KeyCode::F8;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, answer_keys.in_set(ViewSet::Menus).run_if(in_state(Session::InGame)))
        .add_systems(EguiPrimaryContextPass, vote_panel.run_if(in_state(Session::InGame)));
}

/// F7 and F8 answer the vote open, once (not while a line is being typed).
fn answer_keys(
    keys: Res<ButtonInput<KeyCode>>,
    board: Res<VoteBoard>,
    (chat, console): (Res<ChatInput>, Res<ConsoleWindow>),
    mut votes: MessageWriter<VoteAction>,
) {
    if chat.open || console.open || !board.awaits_us() {
        return;
    }
    if keys.just_pressed(YES_KEY) {
        votes.write(VoteAction::Ballot(true));
    } else if keys.just_pressed(NO_KEY) {
        votes.write(VoteAction::Ballot(false));
    }
}

fn vote_panel(mut contexts: EguiContexts, board: Res<VoteBoard>, time: Res<Time<Real>>) -> Result {
    let now = time.elapsed_secs_f64();
    let Some(vote) = board.visible(now) else { return Ok(()) };
    let ctx = contexts.ctx_mut()?;
    let status = &vote.status;
    egui::Area::new(egui::Id::new("vote")).anchor(egui::Align2::LEFT_CENTER, [12.0, -60.0]).interactable(false).show(
        ctx,
        |ui| {
            egui::Frame::new()
                .fill(egui::Color32::from_black_alpha(170))
                .inner_margin(egui::Margin::symmetric(14, 8))
                .corner_radius(6.0)
                .show(ui, |ui| {
                    ui.set_min_width(360.0);
                    let (title, colour) = match status.outcome {
                        VoteOutcome::Open => {
                            (format!("Vote called by {}", vote.caller), egui::Color32::from_rgb(255, 205, 110))
                        }
                        VoteOutcome::Passed => ("Vote passed".to_string(), egui::Color32::from_rgb(120, 220, 120)),
                        VoteOutcome::Failed => ("Vote failed".to_string(), egui::Color32::from_rgb(235, 110, 100)),
                    };
                    ui.label(egui::RichText::new(title).color(colour).size(14.0));
                    ui.label(egui::RichText::new(capitalised(&vote.question)).strong().size(20.0));
                    ui.horizontal(|ui| {
                        let yes = format!("F7  Yes  {}", status.yes);
                        let no = format!("F8  No  {}", status.no);
                        let mark = |ours: bool| if ours { " ✔" } else { "" };
                        ui.label(
                            egui::RichText::new(format!("{yes}{}", mark(vote.ours == Some(true))))
                                .color(egui::Color32::from_rgb(140, 230, 140))
                                .size(17.0),
                        );
                        ui.add_space(18.0);
                        ui.label(
                            egui::RichText::new(format!("{no}{}", mark(vote.ours == Some(false))))
                                .color(egui::Color32::from_rgb(240, 130, 120))
                                .size(17.0),
                        );
                    });
                    let needed = status.needed();
                    let tail = match status.outcome {
                        VoteOutcome::Open => format!("{} s left", vote.seconds_left(now)),
                        _ => "ended".to_string(),
                    };
                    ui.label(
                        egui::RichText::new(format!("{needed} yes of {} players pass it · {tail}", status.voters))
                            .color(egui::Color32::from_gray(200))
                            .size(13.0),
                    );
                    // The time left, as a bar.
                    if status.outcome == VoteOutcome::Open {
                        let total = f64::from(arena_protocol::vote::VOTE_SECONDS);
                        let left = ((vote.ends_at_s - now) / total).clamp(0.0, 1.0) as f32;
                        ui.add(egui::ProgressBar::new(left).desired_width(360.0).desired_height(4.0));
                    }
                });
        },
    );
    Ok(())
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The pause menu's calls: another map (the built-in ones; others by the
/// console's `callvote map NAME`), another mode, a restart, a kick.
pub(crate) fn vote_menu(
    ui: &mut egui::Ui,
    roster: &arena_client::Roster,
    votes: &mut MessageWriter<VoteAction>,
) -> bool {
    use arena_protocol::modes::Mode;
    use arena_protocol::vote::VoteCall;
    if roster.range {
        return false;
    }
    let mut called = None;
    egui::CollapsingHeader::new("Call a vote").show(ui, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.label("Map:");
            for name in arena_sim::MapDef::built_in_names().into_iter().filter(|n| *n != roster.map_name) {
                if ui.button(name).clicked() {
                    called = Some(VoteCall::Map(name.to_string()));
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("Mode:");
            for mode in Mode::ALL.into_iter().filter(|m| *m != roster.mode) {
                if ui.button(mode.label()).clicked() {
                    called = Some(VoteCall::Mode(mode));
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            if ui.button("Restart the match").clicked() {
                called = Some(VoteCall::Restart);
            }
            ui.menu_button("Kick…", |ui| {
                for (id, name) in roster.names.iter().filter(|(id, _)| Some(**id) != roster.local_id) {
                    if ui.button(name.as_str()).clicked() {
                        called = Some(VoteCall::Kick(*id));
                    }
                }
            });
        });
        ui.label(egui::RichText::new("A majority of the players decides within 20 s; one call a minute.").weak());
    });
    match called {
        Some(call) => {
            votes.write(VoteAction::Call(call));
            true
        }
        None => false,
    }
}
