//! The match on screen: a clock and the frag limit, the kill feed (with
//! the prized items taken: the mega, the red armour, the quad), the
//! scoreboard (held on its key), the results when a match ends, who killed
//! you while you wait to respawn, and the connection at a glance.

use arena_client::{
    Drawn, ItemTaken, KillNotice, LocalPlayer, MatchStatus, NetStats, Roster, Scoreboard, Session,
    transport::UdpTransport,
};
use arena_protocol::modes::{Side, Team};
use arena_protocol::{MatchPhase, ScoreRow};
use arena_sim::{HitZone, PlayerId};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::looks::item_color;
use crate::settings::{Action, Settings};
use crate::vocabulary::{ViewSet, roster_color};

/// How long a line stays in the feed, seconds.
const FEED_S: f64 = 7.0;
/// Most lines in the feed at once.
const FEED_LINES: usize = 5;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<KillFeed>()
        .add_systems(Update, collect_kills.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)))
        .add_systems(OnExit(Session::InGame), |mut feed: ResMut<KillFeed>| feed.0.clear())
        .add_systems(
            EguiPrimaryContextPass,
            (top_bar, kill_feed, death_notice, scoreboard).run_if(in_state(Session::InGame)),
        );
}

/// A line of the kill feed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FeedLine {
    Kill(KillNotice),
    /// One of the items worth fighting over taken ([`arena_sim::ItemKind::announced`]).
    Took(ItemTaken),
}

/// Recent kills and prized pickups: (real time, the line).
#[derive(Resource, Default, Debug)]
pub(crate) struct KillFeed(pub Vec<(f64, FeedLine)>);

fn collect_kills(
    time: Res<Time<Real>>,
    mut kills: MessageReader<KillNotice>,
    mut taken: MessageReader<ItemTaken>,
    mut feed: ResMut<KillFeed>,
) {
    let now = time.elapsed_secs_f64();
    feed.0.extend(kills.read().map(|k| (now, FeedLine::Kill(*k))));
    // Only the prizes: a feed of every health pack would push the kills out.
    feed.0.extend(taken.read().filter(|t| t.kind.announced()).map(|t| (now, FeedLine::Took(*t))));
    feed.0.retain(|(t, _)| now - t < FEED_S);
    let excess = feed.0.len().saturating_sub(FEED_LINES);
    feed.0.drain(..excess);
}

/// A player's colour (its team's), lightened a little to read as text on dark panels.
pub(crate) fn color32(roster: &Roster, id: PlayerId) -> egui::Color32 {
    let c = roster_color(roster, id).mix(&Color::WHITE, 0.3).to_srgba();
    egui::Color32::from_rgb((c.red * 255.0) as u8, (c.green * 255.0) as u8, (c.blue * 255.0) as u8)
}

fn name(roster: &Roster, id: PlayerId) -> String {
    roster.names.get(&id).cloned().unwrap_or_else(|| format!("player {}", id.0))
}

fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

/// Match clock and frag limit at the top; the connection at the top right.
fn top_bar(
    mut contexts: EguiContexts,
    time: Res<Time<Real>>,
    status: Res<MatchStatus>,
    stats: Res<NetStats>,
    transport: Option<Res<UdpTransport>>,
    roster: Res<Roster>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let now = time.elapsed_secs_f64();
    if roster.range {
        egui::Area::new(egui::Id::new("match clock")).anchor(egui::Align2::CENTER_TOP, [0.0, 10.0]).show(ctx, |ui| {
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
            ui.label(egui::RichText::new("Shooting range").size(20.0).color(egui::Color32::WHITE));
        });
    } else if let Some(info) = status.info
        && info.phase == MatchPhase::Playing
    {
        egui::Area::new(egui::Id::new("match clock")).anchor(egui::Align2::CENTER_TOP, [0.0, 10.0]).show(ctx, |ui| {
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
            ui.vertical_centered(|ui| {
                ui.label(
                    egui::RichText::new(format!(
                        "{}   ·   first to {}",
                        clock(status.seconds_left(now)),
                        info.frag_limit
                    ))
                    .size(20.0)
                    .color(egui::Color32::WHITE)
                    .strong(),
                );
                if let Some(frags) = info.team_frags {
                    team_totals(ui, frags, 18.0);
                }
            });
        });
    }
    // Connection quality: round trip and loss, coloured.
    let silent_s = transport.map(|t| t.server_silence().as_secs_f32()).unwrap_or(0.0);
    let (bars, color) = if silent_s > 1.0 {
        (0, egui::Color32::from_rgb(255, 80, 60))
    } else if stats.rtt_ms < 80.0 && stats.packet_loss < 0.01 {
        (3, egui::Color32::from_rgb(90, 220, 110))
    } else if stats.rtt_ms < 160.0 && stats.packet_loss < 0.05 {
        (2, egui::Color32::from_rgb(240, 200, 60))
    } else {
        (1, egui::Color32::from_rgb(255, 120, 60))
    };
    egui::Area::new(egui::Id::new("connection")).anchor(egui::Align2::RIGHT_BOTTOM, [-16.0, -12.0]).show(ctx, |ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
        ui.horizontal(|ui| {
            // Three signal bars, drawn (no font has them all), lit up to `bars`.
            let (rect, _) = ui.allocate_exact_size(egui::vec2(22.0, 14.0), egui::Sense::hover());
            for i in 0..3u8 {
                let height = 5.0 + 4.5 * f32::from(i);
                let left = rect.left() + 7.5 * f32::from(i);
                let bar = egui::Rect::from_min_max(
                    egui::pos2(left, rect.bottom() - height),
                    egui::pos2(left + 5.0, rect.bottom()),
                );
                let fill = if i < bars { color } else { egui::Color32::from_white_alpha(50) };
                ui.painter().rect_filled(bar, 1.0, fill);
            }
            ui.label(
                egui::RichText::new(format!("{:.0} ms  {:.1}% loss", stats.rtt_ms, stats.packet_loss * 100.0))
                    .color(color)
                    .size(14.0),
            );
        });
    });
    Ok(())
}

fn kill_feed(mut contexts: EguiContexts, feed: Res<KillFeed>, roster: Res<Roster>) -> Result {
    if feed.0.is_empty() {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Area::new(egui::Id::new("kill feed")).anchor(egui::Align2::RIGHT_TOP, [-16.0, 48.0]).show(ctx, |ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
        egui::Frame::new().fill(egui::Color32::from_black_alpha(170)).inner_margin(6.0).corner_radius(4.0).show(
            ui,
            |ui| {
                for (_, line) in &feed.0 {
                    let kill = match line {
                        FeedLine::Kill(kill) => kill,
                        FeedLine::Took(took) => {
                            pickup_line(ui, &roster, took);
                            continue;
                        }
                    };
                    ui.horizontal(|ui| {
                        if kill.killer == kill.victim {
                            ui.label(
                                egui::RichText::new(name(&roster, kill.victim))
                                    .color(color32(&roster, kill.victim))
                                    .strong(),
                            );
                            ui.label(egui::RichText::new("fell").color(egui::Color32::LIGHT_GRAY));
                            return;
                        }
                        ui.label(
                            egui::RichText::new(name(&roster, kill.killer))
                                .color(color32(&roster, kill.killer))
                                .strong(),
                        );
                        // Glyphs from egui's bundled emoji fonts, which every machine has.
                        let how = if kill.zone == HitZone::Head { "▶ ⌖ head" } else { "▶" };
                        ui.label(egui::RichText::new(how).color(egui::Color32::from_rgb(255, 220, 120)));
                        ui.label(
                            egui::RichText::new(name(&roster, kill.victim))
                                .color(color32(&roster, kill.victim))
                                .strong(),
                        );
                    });
                }
            },
        );
    });
    Ok(())
}

/// "Turing took the Quad Damage": the taker in its colour, the words in
/// italics and the item in its own colour, so that it stands apart from the
/// kills around it.
fn pickup_line(ui: &mut egui::Ui, roster: &Roster, took: &ItemTaken) {
    let c = item_color(took.kind).mix(&Color::WHITE, 0.2).to_srgba();
    let item = egui::Color32::from_rgb((c.red * 255.0) as u8, (c.green * 255.0) as u8, (c.blue * 255.0) as u8);
    ui.horizontal(|ui| {
        ui.label(egui::RichText::new(name(roster, took.by)).color(color32(roster, took.by)).strong());
        ui.label(egui::RichText::new("took the").italics().color(egui::Color32::from_gray(190)));
        ui.label(egui::RichText::new(took.kind.name()).color(item).strong().italics());
    });
}

/// Dead: who did it, and that a respawn is coming.
fn death_notice(
    mut contexts: EguiContexts,
    local: Query<&Drawn, With<LocalPlayer>>,
    feed: Res<KillFeed>,
    roster: Res<Roster>,
    status: Res<MatchStatus>,
    fetch: Res<arena_client::MapFetch>,
) -> Result {
    let dead = local.single().is_ok_and(|s| !s.alive);
    // Out of the world while the map comes is no death.
    if !dead || status.is_over() || fetch.progress().is_some() {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let killer = feed.0.iter().rev().find_map(|(_, line)| match line {
        FeedLine::Kill(k) if Some(k.victim) == roster.local_id => Some(k.killer),
        _ => None,
    });
    let line = match killer {
        Some(k) if Some(k) == roster.local_id => "You fell.".to_string(),
        Some(k) => format!("Killed by {}", name(&roster, k)),
        None => "You died.".to_string(),
    };
    // Above the crosshair and the players around it, below the match clock.
    let lift = ctx.content_rect().height() * 0.2;
    egui::Area::new(egui::Id::new("death")).anchor(egui::Align2::CENTER_CENTER, [0.0, -lift]).show(ctx, |ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
        ui.vertical_centered(|ui| {
            ui.label(egui::RichText::new(line).size(28.0).color(egui::Color32::from_rgb(255, 90, 70)).strong());
            ui.label(egui::RichText::new("respawning…").size(16.0).color(egui::Color32::WHITE));
        });
    });
    Ok(())
}

/// Rows in one column of the scoreboard before it splits into two.
const ROWS_PER_COLUMN: usize = 24;

/// The scoreboard while its key is held, and always when the match is over
/// (then with the winner and the time to the next match).
fn scoreboard(
    mut contexts: EguiContexts,
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    time: Res<Time<Real>>,
    board: Res<Scoreboard>,
    status: Res<MatchStatus>,
    roster: Res<Roster>,
) -> Result {
    let over = status.info.and_then(|i| match i.phase {
        MatchPhase::Over { winner, team } => Some((winner, team)),
        MatchPhase::Playing => None,
    });
    let held = settings.input(Action::Scoreboard).pressed(&keys, &mouse);
    if !held && over.is_none() {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let teams = status.info.and_then(|i| i.team_frags);
    let title = match (over, teams) {
        (Some((_, Some(team))), Some(frags)) => {
            format!("The {} team wins {}:{}", team.name(), frags[team.index()], frags[team.other().index()])
        }
        (Some((_, None)), Some(_)) => "A draw".to_string(),
        (Some((Some(winner), _)), None) => format!("{} wins!", name(&roster, winner)),
        (Some(_), None) => "Match over".to_string(),
        (None, _) => format!("Match {} · {}", status.info.map(|i| i.number).unwrap_or(1), roster.mode.label()),
    };
    egui::Window::new("scoreboard")
        // Held on a key: there at once, gone at once.
        .fade_in(false)
        .fade_out(false)
        .title_bar(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .min_width(380.0)
        .show(ctx, |ui| {
            ui.vertical_centered(|ui| {
                let color = if over.is_some() { egui::Color32::from_rgb(255, 200, 70) } else { egui::Color32::WHITE };
                ui.label(egui::RichText::new(title).size(26.0).strong().color(color));
                if over.is_some() {
                    let next = status.seconds_left(time.elapsed_secs_f64());
                    ui.label(format!("Next match in {next:.0} s"));
                }
                if let Some(frags) = teams {
                    team_totals(ui, frags, 20.0);
                }
            });
            ui.add_space(6.0);
            // 64 players do not fit one column on a 720-pixel screen: split
            // the table into columns side by side, and scroll if even that
            // is too tall for the window.
            let columns = board.rows.len().div_ceil(ROWS_PER_COLUMN).max(1);
            let per_column = board.rows.len().div_ceil(columns).max(1);
            let row_gap = if columns > 1 { 1.0 } else { 4.0 };
            let tallest_px = (ctx.content_rect().height() - 140.0).max(120.0);
            // Without a least height a scroll area in an auto-sized window
            // shrinks to the window's default size and hides rows that fit;
            // with too large a one, a short table gets an empty box.
            let table_px = (per_column + 2) as f32 * (ui.spacing().interact_size.y + row_gap);
            let least_px = table_px.min(tallest_px);
            egui::ScrollArea::vertical().max_height(tallest_px).min_scrolled_height(least_px).show(ui, |ui| {
                ui.horizontal_top(|ui| {
                    for (column, rows) in board.rows.chunks(per_column).enumerate() {
                        if column > 0 {
                            ui.separator();
                        }
                        egui::Grid::new(("scores", column)).num_columns(4).striped(true).spacing([24.0, row_gap]).show(
                            ui,
                            |ui| {
                                for header in ["Player", "Frags", "Deaths", "Ping"] {
                                    ui.label(egui::RichText::new(header).strong().weak());
                                }
                                ui.end_row();
                                for row in rows {
                                    score_row(ui, row, &roster);
                                }
                            },
                        );
                    }
                });
            });
            watchers(ui, &roster);
        });
    Ok(())
}

/// "Red 12 : 9 Blue", each in its colour.
fn team_totals(ui: &mut egui::Ui, frags: [i16; 2], size: f32) {
    // Lightened a little: read over the sky as over a dark panel.
    let colour = |team: Team| {
        let lift = |c: f32| ((c * 0.75 + 0.25) * 255.0) as u8;
        let [r, g, b] = team.rgb();
        egui::Color32::from_rgb(lift(r), lift(g), lift(b))
    };
    ui.horizontal(|ui| {
        ui.label(egui::RichText::new(format!("Red {}", frags[0])).size(size).strong().color(colour(Team::Red)));
        ui.label(egui::RichText::new(":").size(size).color(egui::Color32::WHITE));
        ui.label(egui::RichText::new(format!("{} Blue", frags[1])).size(size).strong().color(colour(Team::Blue)));
    });
}

/// Those watching (and the duel's queue, in its order of the roster), under the scores.
fn watchers(ui: &mut egui::Ui, roster: &Roster) {
    let names: Vec<String> = roster
        .sides
        .iter()
        .filter(|(_, side)| side.watches())
        .map(|(id, side)| match side {
            Side::Waiting => format!("{} (waiting to duel)", name(roster, *id)),
            _ => name(roster, *id),
        })
        .collect();
    if !names.is_empty() {
        ui.add_space(4.0);
        ui.label(egui::RichText::new(format!("Watching: {}", names.join(", "))).weak());
    }
}

fn score_row(ui: &mut egui::Ui, row: &ScoreRow, roster: &Roster) {
    let me = Some(row.id) == roster.local_id;
    let mut player = egui::RichText::new(name(roster, row.id)).color(color32(roster, row.id));
    if me {
        player = player.strong().underline();
    }
    ui.label(player);
    ui.label(egui::RichText::new(row.frags.to_string()).strong());
    ui.label(row.deaths.to_string());
    ui.label(if roster.bots.contains(&row.id) { "bot".to_string() } else { format!("{} ms", row.ping_ms) });
    ui.end_row();
}
