//! `arena lab sweep`: the experiments over a range of round trips, of loss
//! and of flick rates, every report written as JSON, and five charts drawn
//! with plotters (SVG): hit ratio against round trip with lag compensation
//! on and off, the lead a shot needs against the paper's speed times the
//! round trip and the interpolation delay, interpolation error against
//! loss, input-to-motion against round trip with prediction on and off, and
//! a flick's hit ratio against how fast the view turns, with sub-tick shots
//! on and off; and the server's cost (a core's percent, from `/proc`)
//! against players at 64 and 128 Hz.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::Serialize;

use super::flick::{Flick, FlickReport, flick};
use super::hitreg::{HitregReport, hitreg};
use super::interpolation::{InterpolationReport, interpolation};
use super::peek::{Peek, PeekReport, peek};
use super::prediction::{PredictionReport, prediction};
use super::servercost::{ServerCostReport, ServerLoad, servercost};
use super::setup::{LabError, LabSettings, Switch};
use super::unlag::{UnlagReport, UnlagRow, unlag};

/// Round trips the sweep adds with the conditioner, milliseconds.
pub(super) const ROUND_TRIPS_MS: [f32; 7] = [0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0];
/// Loss each way for the interpolation runs, and the round trip they run at.
pub(super) const LOSSES: [f32; 6] = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3];
pub(super) const LOSS_ROUND_TRIP_MS: f32 = 100.0;
/// How fast the view turns in the flick runs, degrees per second, and the
/// frame rate and round trip they run at.
pub(super) const TURN_RATES_DEG_S: [f64; 6] = [0.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0];
pub(super) const FLICK_FPS: f64 = 144.0;
pub(super) const FLICK_ROUND_TRIP_MS: f32 = 100.0;
/// Tick rates (a snapshot every tick) the peek runs compare.
pub(super) const PEEK_TICK_HZ: [u32; 3] = [32, 64, 128];
/// Rewind caps the unlag runs compare, milliseconds.
pub(super) const UNLAG_CAPS_MS: [u16; 6] = [100, 150, 200, 300, 400, 1000];
/// Players the cost runs put on the server (a quarter of them network
/// clients in another process, the rest server bots: 64 is the 48 bots and
/// 16 clients `servercost` defaults to), and the tick rates they run at.
pub(super) const COST_PLAYERS: [usize; 5] = [8, 16, 32, 48, 64];
pub(super) const COST_TICK_HZ: [u32; 2] = [64, 128];

/// The parts of a sweep, each a set of runs and its charts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SweepPart {
    /// Hit ratio and lead against round trip, lag compensation on and off.
    Hitreg,
    /// Input to motion against round trip, prediction on and off.
    Prediction,
    /// Interpolation error against loss.
    Interpolation,
    /// Hit ratio against turn rate, sub-tick shots on and off.
    Flick,
    /// The peeker's advantage against round trip at 32, 64 and 128 Hz.
    Peek,
    /// Hits kept and time behind cover against round trip, per rewind cap.
    Unlag,
    /// The server's cost against players, at 64 and 128 Hz (processes of
    /// this binary on the wall clock; the machine should be otherwise idle).
    Cost,
}

impl SweepPart {
    /// What a sweep runs unless told: every part but `Cost`, whose
    /// processes on the wall clock want an otherwise idle machine (and
    /// whose failure, say without `/proc`, would lose the stepped runs).
    pub const DEFAULT: [SweepPart; 6] = [
        SweepPart::Hitreg,
        SweepPart::Prediction,
        SweepPart::Interpolation,
        SweepPart::Flick,
        SweepPart::Peek,
        SweepPart::Unlag,
    ];
}

/// Why a sweep stopped.
#[derive(Debug)]
pub enum SweepError {
    Lab(LabError),
    Write(PathBuf, std::io::Error),
    Chart(PathBuf, String),
}

impl std::fmt::Display for SweepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepError::Lab(e) => write!(f, "{e}"),
            SweepError::Write(path, e) => write!(f, "cannot write {}: {e}", path.display()),
            SweepError::Chart(path, e) => write!(f, "cannot draw {}: {e}", path.display()),
        }
    }
}

impl std::error::Error for SweepError {}

impl From<LabError> for SweepError {
    fn from(e: LabError) -> Self {
        SweepError::Lab(e)
    }
}

/// Everything a sweep measured.
#[derive(Debug, Serialize)]
pub struct SweepReport {
    pub experiment: &'static str,
    pub seconds_per_run: f64,
    pub hitreg_on: Vec<HitregReport>,
    pub hitreg_off: Vec<HitregReport>,
    pub prediction_on: Vec<PredictionReport>,
    pub prediction_off: Vec<PredictionReport>,
    pub interpolation: Vec<InterpolationReport>,
    pub flick_on: Vec<FlickReport>,
    pub flick_off: Vec<FlickReport>,
    pub peek: Vec<PeekReport>,
    pub unlag: Vec<UnlagReport>,
    /// The server's cost, by tick rate then players.
    pub cost: Vec<ServerCostReport>,
    /// The parts run.
    pub parts: Vec<SweepPart>,
    /// The files written.
    pub files: Vec<PathBuf>,
}

/// Runs the sweep's `parts` with `base` (its conditioner settings are
/// replaced run by run) and writes the charts and the JSON into `out`
/// (`sweep.json` for every part, `sweep-PART-PART.json` for some).
pub fn sweep(
    base: LabSettings,
    parts: &[SweepPart],
    out: &Path,
    progress: impl Fn(&str),
) -> Result<SweepReport, SweepError> {
    base.validate()?;
    // The charts are written after the runs (minutes); whether they can be
    // is known now.
    arena_server::check_writable(out).map_err(|e| SweepError::Write(out.to_path_buf(), e))?;
    let at = |rtt: f32, loss: f32| LabSettings {
        fake_latency_ms: rtt,
        fake_loss: loss,
        fake_jitter_ms: 0.0,
        ..base.clone()
    };
    let mut report = SweepReport {
        experiment: "sweep",
        seconds_per_run: base.seconds,
        hitreg_on: Vec::new(),
        hitreg_off: Vec::new(),
        prediction_on: Vec::new(),
        prediction_off: Vec::new(),
        interpolation: Vec::new(),
        flick_on: Vec::new(),
        flick_off: Vec::new(),
        peek: Vec::new(),
        unlag: Vec::new(),
        cost: Vec::new(),
        // In the enum's order, whatever the order asked in.
        parts: <SweepPart as clap::ValueEnum>::value_variants().iter().filter(|p| parts.contains(p)).copied().collect(),
        files: Vec::new(),
    };
    let has = |part: SweepPart| parts.contains(&part);
    for rtt in ROUND_TRIPS_MS {
        if has(SweepPart::Hitreg) {
            progress(&format!("round trip {rtt} ms: hitreg, lag compensation on and off"));
            report.hitreg_on.push(hitreg(LabSettings { lag_compensation: Switch::On, ..at(rtt, 0.0) })?);
            report.hitreg_off.push(hitreg(LabSettings { lag_compensation: Switch::Off, ..at(rtt, 0.0) })?);
        }
        if has(SweepPart::Prediction) {
            progress(&format!("round trip {rtt} ms: prediction on and off"));
            report.prediction_on.push(prediction(LabSettings { prediction: Switch::On, ..at(rtt, 0.0) })?);
            report.prediction_off.push(prediction(LabSettings { prediction: Switch::Off, ..at(rtt, 0.0) })?);
        }
        if has(SweepPart::Peek) {
            for tick in PEEK_TICK_HZ {
                progress(&format!("round trip {rtt} ms: peek at {tick} Hz"));
                // A peek takes about 2 s: three times the run for enough of them.
                let settings = LabSettings {
                    tick,
                    snapshot_rate: Some(tick),
                    seconds: (3.0 * base.seconds).min(3600.0),
                    ..at(rtt, 0.0)
                };
                report.peek.push(peek(settings, Peek::default())?);
            }
        }
        if has(SweepPart::Unlag) {
            progress(&format!("round trip {rtt} ms: unlag with caps {UNLAG_CAPS_MS:?} ms"));
            // Hits near cover are a few a peek: twice the run for the tail.
            report.unlag.push(unlag(
                LabSettings { seconds: (2.0 * base.seconds).min(3600.0), ..at(rtt, 0.0) },
                &UNLAG_CAPS_MS,
            )?);
        }
    }
    if has(SweepPart::Interpolation) {
        for loss in LOSSES {
            progress(&format!("loss {:.0}%: interpolation", loss * 100.0));
            report.interpolation.push(interpolation(at(LOSS_ROUND_TRIP_MS, loss))?);
        }
    }
    if has(SweepPart::Flick) {
        for turn_deg_s in TURN_RATES_DEG_S {
            progress(&format!("flick at {turn_deg_s} degrees a second: sub-tick shots on and off"));
            let rates = Flick { fps: FLICK_FPS, turn_deg_s, ..Flick::default() };
            let at_rtt = at(FLICK_ROUND_TRIP_MS, 0.0);
            report.flick_on.push(flick(LabSettings { subtick: Switch::On, ..at_rtt.clone() }, rates)?);
            report.flick_off.push(flick(LabSettings { subtick: Switch::Off, ..at_rtt }, rates)?);
        }
    }
    if has(SweepPart::Cost) {
        for tick in COST_TICK_HZ {
            for players in COST_PLAYERS {
                progress(&format!("server cost: {players} players at {tick} Hz"));
                let load = ServerLoad { players, clients: players / 4, executor: arena_server::Executor::Single };
                let run = servercost(LabSettings { tick, snapshot_rate: None, ..base.clone() }, load)?;
                if run.clients_in_game < run.clients {
                    progress(&format!(
                        "server cost: only {} of {} network clients got into the game",
                        run.clients_in_game, run.clients
                    ));
                }
                report.cost.push(run);
            }
        }
    }
    report.files = draw(&report, out)?;
    let json_name = if SweepPart::DEFAULT.iter().all(|p| report.parts.contains(p)) {
        "sweep.json".to_string()
    } else {
        let names: Vec<String> = report.parts.iter().map(|p| format!("{p:?}").to_lowercase()).collect();
        format!("sweep-{}.json", names.join("-"))
    };
    let json_path = out.join(json_name);
    let json =
        serde_json::to_string_pretty(&report).map_err(|e| SweepError::Chart(json_path.clone(), e.to_string()))?;
    std::fs::write(&json_path, json).map_err(|e| SweepError::Write(json_path.clone(), e))?;
    report.files.push(json_path);
    Ok(report)
}

/// The paper's lead: speed × (round trip + interpolation), metres.
pub(super) fn paper_lead_m(speed_mps: f64, rtt_ms: f64, interp_ms: f64) -> f64 {
    speed_mps * (rtt_ms + interp_ms) / 1000.0
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 420;
const ON: RGBColor = RGBColor(40, 140, 60);
const OFF: RGBColor = RGBColor(210, 80, 40);
const PAPER: RGBColor = RGBColor(60, 90, 200);

/// A colour for the `i`th of several series.
fn palette(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 6] = [
        RGBColor(40, 140, 60),
        RGBColor(210, 80, 40),
        RGBColor(60, 90, 200),
        RGBColor(150, 60, 170),
        RGBColor(200, 150, 20),
        RGBColor(40, 40, 40),
    ];
    COLORS[i % COLORS.len()]
}

struct Series {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
    dashed: bool,
}

fn chart(path: &Path, title: &str, x_label: &str, y_label: &str, series: &[Series]) -> Result<(), SweepError> {
    let fail = |e: &dyn std::fmt::Display| SweepError::Chart(path.to_path_buf(), e.to_string());
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let x_max = series.iter().flat_map(|s| s.points.iter().map(|p| finite(p.0))).fold(1.0_f64, f64::max) * 1.05;
    let y_max = series.iter().flat_map(|s| s.points.iter().map(|p| finite(p.1))).fold(1e-3_f64, f64::max) * 1.15;
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(|e| fail(&e))?;
    chart.configure_mesh().x_desc(x_label).y_desc(y_label).draw().map_err(|e| fail(&e))?;
    for s in series {
        // A run with nothing to measure (no shot) has no point.
        let finite: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        let s = &Series { points: finite, label: s.label.clone(), ..*s };
        let style = ShapeStyle::from(&s.color).stroke_width(2);
        let drawn = if s.dashed {
            chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 6, 4, style))
        } else {
            chart.draw_series(LineSeries::new(s.points.iter().copied(), style))
        };
        let color = s.color;
        drawn.map_err(|e| fail(&e))?.label(s.label.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 18, y)], ShapeStyle::from(&color).stroke_width(2))
        });
        if !s.dashed {
            chart
                .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, ShapeStyle::from(&s.color).filled())))
                .map_err(|e| fail(&e))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

fn draw(r: &SweepReport, out: &Path) -> Result<Vec<PathBuf>, SweepError> {
    let mut files = Vec::new();
    let mut write = |name: &str, title: &str, x: &str, y: &str, series: Vec<Series>| {
        let path = out.join(name);
        chart(&path, title, x, y, &series)?;
        files.push(path);
        Ok::<(), SweepError>(())
    };
    let rtt_of = |h: &HitregReport| h.rtt_ms;
    if !r.hitreg_on.is_empty() {
        write(
            "hit-ratio-vs-round-trip.svg",
            "Hit ratio against round trip (aiming at the target as drawn)",
            "round trip, ms",
            "hits per shot",
            vec![
                Series {
                    label: "lag compensation on".into(),
                    color: ON,
                    points: r.hitreg_on.iter().map(|h| (rtt_of(h), h.hit_ratio)).collect(),
                    dashed: false,
                },
                Series {
                    label: "lag compensation off".into(),
                    color: OFF,
                    points: r.hitreg_off.iter().map(|h| (rtt_of(h), h.hit_ratio)).collect(),
                    dashed: false,
                },
            ],
        )?;
    }
    if !r.hitreg_off.is_empty() {
        write(
            "lead-vs-round-trip.svg",
            "Lead needed without lag compensation",
            "round trip, ms",
            "lead, m",
            vec![
                Series {
                    label: "measured (server's target vs the aim)".into(),
                    color: OFF,
                    points: r.hitreg_off.iter().map(|h| (rtt_of(h), h.lead_needed_m)).collect(),
                    dashed: false,
                },
                Series {
                    label: "paper: speed × (round trip + interpolation)".into(),
                    color: PAPER,
                    points: r
                        .hitreg_off
                        .iter()
                        .map(|h| (rtt_of(h), paper_lead_m(h.target_speed_mps, h.rtt_ms, h.interp_ms)))
                        .collect(),
                    dashed: true,
                },
            ],
        )?;
    }
    if !r.interpolation.is_empty() {
        write(
            "interpolation-error-vs-loss.svg",
            &format!("Interpolation error against loss ({LOSS_ROUND_TRIP_MS:.0} ms round trip)"),
            "loss each way, %",
            "drawn position error, m",
            vec![
                Series {
                    label: "99th percentile".into(),
                    color: OFF,
                    points: r
                        .interpolation
                        .iter()
                        .map(|i| (f64::from(i.settings.fake_loss) * 100.0, i.render_error_p99_m))
                        .collect(),
                    dashed: false,
                },
                Series {
                    label: "mean".into(),
                    color: ON,
                    points: r
                        .interpolation
                        .iter()
                        .map(|i| (f64::from(i.settings.fake_loss) * 100.0, i.render_error_mean_m))
                        .collect(),
                    dashed: false,
                },
            ],
        )?;
    }
    if !r.prediction_on.is_empty() {
        write(
            "input-to-motion-vs-round-trip.svg",
            "Input to motion on screen against round trip",
            "round trip, ms",
            "input to motion, ms",
            vec![
                Series {
                    label: "prediction on".into(),
                    color: ON,
                    points: r.prediction_on.iter().map(|p| (p.rtt_ms, p.input_to_motion_ms)).collect(),
                    dashed: false,
                },
                Series {
                    label: "prediction off".into(),
                    color: OFF,
                    points: r.prediction_off.iter().map(|p| (p.rtt_ms, p.input_to_motion_ms)).collect(),
                    dashed: false,
                },
            ],
        )?;
    }
    if !r.flick_on.is_empty() {
        write(
            "hit-ratio-vs-turn-rate.svg",
            &format!("Flick: hit ratio against turn rate ({FLICK_FPS:.0} fps, {FLICK_ROUND_TRIP_MS:.0} ms round trip)"),
            "view turning, degrees per second",
            "hits per shot",
            vec![
                Series {
                    label: "sub-tick shots on".into(),
                    color: ON,
                    points: r.flick_on.iter().map(|f| (f.flick.turn_deg_s, f.hit_ratio)).collect(),
                    dashed: false,
                },
                Series {
                    label: "sub-tick shots off".into(),
                    color: OFF,
                    points: r.flick_off.iter().map(|f| (f.flick.turn_deg_s, f.hit_ratio)).collect(),
                    dashed: false,
                },
            ],
        )?;
    }
    if !r.peek.is_empty() {
        let mut series = Vec::new();
        for (i, tick) in PEEK_TICK_HZ.iter().enumerate() {
            let runs: Vec<&PeekReport> = r.peek.iter().filter(|p| p.settings.tick == *tick).collect();
            let rtt = |p: &PeekReport| (p.peeker_rtt_ms + p.holder_rtt_ms) / 2.0;
            series.push(Series {
                label: (format!("{tick} Hz: measured")),
                color: palette(i),
                points: runs.iter().map(|p| (rtt(p), p.advantage_mean_ms)).collect(),
                dashed: false,
            });
            series.push(Series {
                label: (format!("{tick} Hz: the sum of its measured terms")),
                color: palette(i),
                points: runs.iter().map(|p| (rtt(p), p.formula_ms)).collect(),
                dashed: true,
            });
        }
        write(
            "peekers-advantage-vs-round-trip.svg",
            "Peeker's advantage against round trip (both players on it; 144 fps)",
            "round trip, ms",
            "peeker sees the holder first by, ms",
            series,
        )?;
    }
    if !r.unlag.is_empty() {
        let by_cap = |value: fn(&UnlagRow) -> f64| -> Vec<Series> {
            UNLAG_CAPS_MS
                .iter()
                .enumerate()
                .map(|(i, cap)| Series {
                    label: (if Some(cap) == UNLAG_CAPS_MS.last() {
                        format!("cap {cap} ms (longer than any rewind swept)")
                    } else {
                        format!("cap {cap} ms")
                    }),
                    color: palette(i),
                    points: r
                        .unlag
                        .iter()
                        .filter_map(|u| u.caps.iter().find(|c| c.max_unlag_ms == *cap).map(|c| (u.rtt_ms, value(c))))
                        .collect(),
                    dashed: false,
                })
                .collect()
        };
        write(
            "hits-kept-vs-round-trip.svg",
            "Rewind cap: hits kept against round trip (of those with no cap)",
            "round trip, ms",
            "hit ratio / uncapped hit ratio",
            by_cap(|c| c.hits_kept),
        )?;
        write(
            "time-behind-cover-vs-round-trip.svg",
            "Rewind cap: how long victims had been behind cover when hit (p95)",
            "round trip, ms",
            "out of the shooter's sight on the server, ms",
            by_cap(|c| c.behind_cover_p95_ms),
        )?;
    }
    if !r.cost.is_empty() {
        write(
            "server-cost-vs-players.svg",
            "Server cost against players (a quarter of them network clients)",
            "players",
            "one core's time, %",
            COST_TICK_HZ
                .iter()
                .enumerate()
                .map(|(i, tick)| Series {
                    label: format!("{tick} Hz, {} build", r.cost[0].build),
                    color: palette(i),
                    points: r
                        .cost
                        .iter()
                        .filter(|c| c.tick == *tick)
                        .map(|c| (c.players as f64, c.core_percent))
                        .collect(),
                    dashed: false,
                })
                .collect(),
        )?;
    }
    Ok(files)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_lead_is_speed_times_delay() {
        assert!((paper_lead_m(6.4, 206.0, 31.0) - 1.5168).abs() < 1e-9);
        assert_eq!(paper_lead_m(5.0, 0.0, 0.0), 0.0);
    }

    #[test]
    fn a_chart_is_an_svg_with_its_title_and_legend() {
        let dir = std::env::temp_dir().join(format!("arena-sweep-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.svg");
        let series = [Series {
            label: "lag compensation on".into(),
            color: ON,
            points: vec![(0.0, 1.0), (100.0, 0.9)],
            dashed: false,
        }];
        chart(&path, "Hit ratio", "round trip, ms", "hits per shot", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("Hit ratio") && svg.contains("lag compensation on"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
