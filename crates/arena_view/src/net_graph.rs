//! The net graph (F2 cycles off, compact, full): the last seconds of round
//! trip and jitter, loss, snapshot arrivals and the interpolation buffer,
//! prediction error and corrections, commands waiting for acknowledgement
//! and kbit/s each way, plotted live with egui_plot. The compact overlay is
//! Source's `net_graph 1`; the full panel has a plot per subject with
//! legends and units.

use std::collections::VecDeque;

use arena_client::{NetStats, Prediction, Roster, ServerClock, Session, SnapshotArrived};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use egui_plot::{Legend, Line, Plot, PlotPoints, Points};

use crate::settings::{Action, Settings};
use crate::vocabulary::{NetGraph, ViewSet};

/// How far back the plots reach, seconds.
pub(crate) const GRAPH_S: f64 = 10.0;
/// Most samples kept (a frame each; 10 s at 240 fps).
const MAX_SAMPLES: usize = 2400;
/// RFC 3550's jitter smoothing: each new difference counts this much.
const JITTER_GAIN: f64 = 1.0 / 16.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NetGraph>()
        .init_resource::<GraphData>()
        .add_systems(RunFixedMainLoop, toggle.in_set(ViewSet::Input).run_if(in_state(Session::InGame)))
        .add_systems(Update, sample.in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)))
        .add_systems(OnEnter(Session::Connecting), |mut data: ResMut<GraphData>| *data = GraphData::default())
        .add_systems(EguiPrimaryContextPass, show.run_if(in_state(Session::InGame)));
}

fn toggle(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    mut graph: ResMut<NetGraph>,
) {
    if settings.input(Action::NetGraph).just_pressed(&keys, &mouse) {
        *graph = graph.next();
    }
}

/// One frame's figures.
#[derive(Debug, Clone, Copy)]
struct Sample {
    t: f64,
    rtt_ms: f64,
    jitter_ms: f64,
    loss_pct: f64,
    /// How far the newest snapshot is ahead of the time others are drawn
    /// at: what interpolation has in hand (negative: extrapolating).
    buffer_ms: f64,
    /// The interpolation delay in use, milliseconds.
    delay_ms: f64,
    /// How much sooner someone peeking you sees you than you see them,
    /// estimated from your own link as both players': see [`Peek`].
    peek: Peek,
    /// The prediction error still being smoothed away, centimetres.
    error_cm: f64,
    pending: f64,
    kbit_in: f64,
    kbit_out: f64,
}

/// The terms of the peeker's advantage (Riot's sum, as `arena lab peek`
/// measures it), estimated live from this client's own link standing in for
/// both players': the peeker's command's trip (half the round trip), its
/// wait for its tick (the server buffer), the snapshot's trip to you (half
/// the round trip), your interpolation delay, less the tick the peeker's
/// own screen draws behind its commands. Milliseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Peek {
    trips_ms: f64,
    buffer_ms: f64,
    delay_ms: f64,
    own_view_ms: f64,
}

impl Peek {
    fn total_ms(&self) -> f64 {
        self.trips_ms + self.buffer_ms + self.delay_ms - self.own_view_ms
    }
}

/// The last [`GRAPH_S`] seconds of figures.
#[derive(Resource, Debug, Default)]
pub(crate) struct GraphData {
    samples: VecDeque<Sample>,
    /// Snapshot arrivals: (time, milliseconds since the one before).
    arrivals: VecDeque<(f64, f64)>,
    last_arrival_s: Option<f64>,
    /// RFC 3550 interarrival jitter of snapshots, milliseconds.
    jitter_ms: f64,
    last_transit_s: Option<f64>,
}

fn sample(
    time: Res<Time<Real>>,
    stats: Res<NetStats>,
    mut arrived: MessageReader<SnapshotArrived>,
    clock: Res<ServerClock>,
    roster: Res<Roster>,
    prediction: Res<Prediction>,
    mut data: ResMut<GraphData>,
) {
    let now = time.elapsed_secs_f64();
    let rate = roster.tick_rate();
    // Each snapshot at the time it came off the socket (not the frame that
    // read it: a slow frame would show its own length as the link's jitter).
    for snapshot in arrived.read() {
        let at = snapshot.arrived_s;
        if let Some(last) = data.last_arrival_s {
            data.arrivals.push_back((at, (at - last) * 1000.0));
        }
        data.last_arrival_s = Some(at);
        // Transit: arrival time minus send time, up to a constant.
        let transit = at - rate.ticks_to_s(f64::from(snapshot.tick) + snapshot.sent_after_ticks);
        if let Some(last) = data.last_transit_s {
            let d_ms = ((transit - last) * 1000.0).abs();
            data.jitter_ms += (d_ms.min(1000.0) - data.jitter_ms) * JITTER_GAIN;
        }
        data.last_transit_s = Some(transit);
    }
    let buffer_ms = clock.newest_tick.map_or(0.0, |tick| rate.ticks_to_ms(f64::from(tick) - clock.render_tick));
    let delay_ms = clock.delay_ms(rate);
    let peek = Peek {
        trips_ms: stats.rtt_ms,
        buffer_ms: stats.command_margin_ticks.map_or(0.0, |m| rate.ticks_to_ms(f64::from(m.max(0.0)))),
        delay_ms,
        own_view_ms: rate.ticks_to_ms(1.0),
    };
    let sample = Sample {
        t: now,
        rtt_ms: stats.rtt_ms,
        jitter_ms: data.jitter_ms,
        loss_pct: stats.packet_loss * 100.0,
        buffer_ms,
        delay_ms,
        peek,
        error_cm: f64::from(prediction.visual_offset.length()) * 100.0,
        pending: stats.commands_pending as f64,
        kbit_in: stats.bytes_in_per_s * 8.0 / 1000.0,
        kbit_out: stats.bytes_out_per_s * 8.0 / 1000.0,
    };
    data.samples.push_back(sample);
    while data.samples.front().is_some_and(|s| now - s.t > GRAPH_S) || data.samples.len() > MAX_SAMPLES {
        data.samples.pop_front();
    }
    while data.arrivals.front().is_some_and(|a| now - a.0 > GRAPH_S) || data.arrivals.len() > MAX_SAMPLES {
        data.arrivals.pop_front();
    }
}

const RTT: egui::Color32 = egui::Color32::from_rgb(110, 190, 255);
const JITTER: egui::Color32 = egui::Color32::from_rgb(255, 200, 80);
const LOSS: egui::Color32 = egui::Color32::from_rgb(255, 100, 90);
const ARRIVAL: egui::Color32 = egui::Color32::from_rgb(170, 170, 170);
const BUFFER: egui::Color32 = egui::Color32::from_rgb(120, 220, 140);
const ERROR: egui::Color32 = egui::Color32::from_rgb(230, 130, 255);
const IN: egui::Color32 = egui::Color32::from_rgb(110, 190, 255);
const OUT: egui::Color32 = egui::Color32::from_rgb(255, 160, 90);

impl GraphData {
    /// One figure over time, x in seconds before now.
    fn line(&self, now: f64, value: impl Fn(&Sample) -> f64) -> PlotPoints<'static> {
        self.samples.iter().map(|s| [s.t - now, value(s)]).collect()
    }
}

fn show(
    mut contexts: EguiContexts,
    graph: Res<NetGraph>,
    data: Res<GraphData>,
    stats: Res<NetStats>,
    prediction: Res<Prediction>,
    time: Res<Time<Real>>,
) -> Result {
    if *graph == NetGraph::Off {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let now = time.elapsed_secs_f64();
    let latest = data.samples.back().copied();
    match *graph {
        NetGraph::Off => {}
        NetGraph::Compact => compact(ctx, &data, latest, &stats, now),
        NetGraph::Full => full(ctx, &data, &prediction, now),
    }
    Ok(())
}

/// A small box above the connection figures: the numbers that matter and
/// one plot of round trip and interpolation buffer.
fn compact(ctx: &egui::Context, data: &GraphData, latest: Option<Sample>, stats: &NetStats, now: f64) {
    let Some(s) = latest else { return };
    egui::Area::new(egui::Id::new("net graph compact")).anchor(egui::Align2::RIGHT_BOTTOM, [-10.0, -34.0]).show(
        ctx,
        |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.set_width(300.0);
                ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
                let small = |text: String| egui::RichText::new(text).small().monospace();
                ui.label(small(format!(
                    "rtt {:>4.0} ms  jitter {:>3.0} ms  loss {:>4.1}%",
                    s.rtt_ms, s.jitter_ms, s.loss_pct
                )));
                ui.label(small(format!(
                    "in {:>5.1}  out {:>5.1} kbit/s  {:>3.0} snap/s",
                    s.kbit_in, s.kbit_out, stats.snapshots_per_s
                )));
                if let Some(via) = stats.via_relay {
                    let rtt =
                        via.round_trip.map_or("-".to_string(), |d| format!("+{:.0} ms", d.as_secs_f64() * 1000.0));
                    ui.label(small(format!("via relay {}  {rtt}", via.turn))).on_hover_text(
                        "No direct way through the routers: the master's TURN relay carries every datagram \
                         (4 bytes more each); the figure is the round trip to the relay, about what it adds.",
                    );
                }
                ui.label(small(format!(
                    "buffer {:>4.0} ms  pending {:>3.0}  err {:>4.1} cm",
                    s.buffer_ms, s.pending, s.error_cm
                )));
                let p = s.peek;
                ui.label(small(format!(
                    "peek ~{:>3.0} = trips {:.0} + wait {:.0} + delay {:.0} - tick {:.0} ms",
                    p.total_ms(),
                    p.trips_ms,
                    p.buffer_ms,
                    p.delay_ms,
                    p.own_view_ms
                )))
                .on_hover_text(
                    "The peeker's advantage over you, estimated from your link as both players': how much \
                     sooner someone stepping out sees you than you see them (arena lab peek measures it).",
                );
                recent_plot("net graph compact plot", 56.0).show_axes([false, true]).show_grid([false, true]).show(
                    ui,
                    |plot| {
                        plot.line(Line::new("rtt ms", data.line(now, |s| s.rtt_ms)).color(RTT));
                        plot.line(Line::new("buffer ms", data.line(now, |s| s.buffer_ms)).color(BUFFER));
                    },
                );
            });
        },
    );
}

/// A plot of the last `GRAPH_S` seconds (x: seconds ago) from 0 up, which
/// stays put: a graph to read while playing, not to explore.
fn recent_plot(id: &str, height: f32) -> Plot<'static> {
    Plot::new(id)
        .height(height)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .include_x(-GRAPH_S)
        .include_x(0.0)
        .include_y(0.0)
}

/// One plot of the full panel: a legend, a unit on y.
fn plot(ui: &mut egui::Ui, id: &str, y_label: &str, add: impl FnOnce(&mut egui_plot::PlotUi<'_>)) {
    recent_plot(id, 96.0)
        .legend(Legend::default().position(egui_plot::Corner::LeftTop))
        .y_axis_label(y_label)
        .y_axis_min_width(36.0)
        .show(ui, add);
}

fn full(ctx: &egui::Context, data: &GraphData, prediction: &Prediction, now: f64) {
    egui::Window::new("Net graph")
        .anchor(egui::Align2::LEFT_TOP, [10.0, 60.0])
        .default_width(440.0)
        .resizable(false)
        .collapsible(true)
        .show(ctx, |ui| {
            ui.label(egui::RichText::new(format!("the last {GRAPH_S:.0} s; x: seconds ago")).weak().small());
            plot(ui, "graph rtt", "ms", |p| {
                p.line(Line::new("round trip", data.line(now, |s| s.rtt_ms)).color(RTT));
                p.line(Line::new("jitter", data.line(now, |s| s.jitter_ms)).color(JITTER));
            });
            plot(ui, "graph snapshots", "ms", |p| {
                let arrivals: PlotPoints<'_> = data.arrivals.iter().map(|(t, ms)| [t - now, *ms]).collect();
                p.points(Points::new("snapshot arrival gap", arrivals).color(ARRIVAL).radius(1.5));
                p.line(Line::new("interpolation buffer", data.line(now, |s| s.buffer_ms)).color(BUFFER));
                p.line(Line::new("interpolation delay", data.line(now, |s| s.delay_ms)).color(RTT));
            });
            plot(ui, "graph peek", "ms", |p| {
                p.line(Line::new("peeker's advantage (est.)", data.line(now, |s| s.peek.total_ms())).color(LOSS));
                p.line(Line::new("trips", data.line(now, |s| s.peek.trips_ms)).color(RTT));
                p.line(Line::new("server wait", data.line(now, |s| s.peek.buffer_ms)).color(JITTER));
                p.line(Line::new("your delay", data.line(now, |s| s.peek.delay_ms)).color(BUFFER));
            });
            plot(ui, "graph loss", "%", |p| {
                p.line(Line::new("packet loss", data.line(now, |s| s.loss_pct)).color(LOSS));
            });
            plot(ui, "graph prediction", "cm / count", |p| {
                p.line(Line::new("prediction error (cm)", data.line(now, |s| s.error_cm)).color(ERROR));
                let corrections: PlotPoints<'_> = prediction
                    .recent_corrections
                    .iter()
                    .filter(|(t, _)| now - t <= GRAPH_S)
                    .map(|(t, m)| [t - now, f64::from(*m) * 100.0])
                    .collect();
                p.points(Points::new("correction (cm)", corrections).color(LOSS).radius(3.0));
                p.line(Line::new("commands pending", data.line(now, |s| s.pending)).color(JITTER));
            });
            plot(ui, "graph bandwidth", "kbit/s", |p| {
                p.line(Line::new("in", data.line(now, |s| s.kbit_in)).color(IN));
                p.line(Line::new("out", data.line(now, |s| s.kbit_out)).color(OUT));
            });
        });
}
