//! `arena lab prediction`: a scripted player over a conditioned link;
//! mispredictions, corrections, missing and late commands, and the time from
//! a command to visible motion (with prediction limited by `--pushlatency`:
//! the round trip less what is predicted).

use arena_client::{ClientStats, ClockSync, LocalInput, MotionOnsets, NetStats, Prediction, Session, ThisTick};
use arena_server::{CommandBuffer, CommandStats, ServerPlayer, Sim};
use arena_sim::Buttons;
use bevy::prelude::*;
use serde::Serialize;

use super::setup::{LAB_FRAME_HZ, LabError, LabSettings, WARMUP_S, frame};
use crate::harness::{client_app_with, server_app_with_frame, session, step, step_until};

/// What `arena lab prediction` prints.
#[derive(Debug, Serialize)]
pub struct PredictionReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    /// Half-Life's `pushlatency` as given (`-N`: predict at most N ms ahead
    /// of the acknowledged state); none: full prediction.
    pub pushlatency_ms: Option<i32>,
    /// Command packets sent while measuring (one per tick).
    pub commands_sent: u64,
    pub mispredictions: u64,
    /// Largest correction of the drawn player, metres.
    pub max_correction_m: f32,
    /// Ticks the server ran on a repeated command because ours had not come.
    pub missing_commands: u64,
    /// Commands that reached the server after their tick.
    pub late_commands: u64,
    pub rtt_ms: f64,
    /// Mean time from a command's creation to the first frame in which the
    /// drawn player moves because of it, milliseconds.
    pub input_to_motion_ms: f64,
    /// Starts from standing still that `input_to_motion_ms` averages.
    pub motion_onsets: usize,
    /// Distance between the client's player and the server's at the end, metres.
    pub final_error_m: f32,
    pub clock_resets: u32,
    /// How early commands reached the server at worst in the last second, ticks.
    pub command_margin_ticks: Option<f32>,
    pub frame_hz: f64,
    /// Seconds after joining that were not measured.
    pub warmup_s: f64,
}

/// The scripted input, a 10 s loop: run, stop, turn, jump, run diagonally into
/// whatever wall comes, turn back, strafe along it, crouch-walk, stand.
/// Returns (forward, right, yaw change per second, buttons held, jump press).
fn script(t: f64) -> (f32, f32, f32, Buttons, bool) {
    let quarter = std::f32::consts::FRAC_PI_2;
    match t % 10.0 {
        p if p < 2.0 => (1.0, 0.0, 0.0, Buttons::default(), false),
        p if p < 3.0 => (0.0, 0.0, 0.0, Buttons::default(), false),
        p if p < 3.5 => (0.0, 0.0, quarter / 0.5, Buttons::default(), false),
        p if p < 4.0 => (1.0, 0.0, 0.0, Buttons::default(), p < 3.5 + 1.0 / 64.0),
        p if p < 6.0 => (1.0, 1.0, 0.0, Buttons::default(), false),
        p if p < 6.5 => (0.0, 0.0, -1.5 * quarter / 0.5, Buttons::default(), false),
        p if p < 8.5 => (0.5, 1.0, 0.0, Buttons::default(), false),
        p if p < 9.5 => (1.0, 0.0, 0.0, Buttons::CROUCH, false),
        _ => (0.0, 0.0, 0.0, Buttons::default(), false),
    }
}

fn server_command_stats(server: &mut App) -> CommandStats {
    let mut query = server.world_mut().query::<(&ServerPlayer, &CommandBuffer)>();
    query.iter(server.world()).map(|(_, b)| b.stats).next().unwrap_or_default()
}

fn server_position(server: &mut App) -> Option<Vec3> {
    let mut query = server.world_mut().query::<&Sim>();
    query.iter(server.world()).map(|s| s.pos).next()
}

fn drawn_position(client: &App) -> Option<Vec3> {
    crate::harness::drawn_self(client).map(|s| s.pos)
}

/// Runs `arena lab prediction`.
pub fn prediction(settings: LabSettings) -> Result<PredictionReport, LabError> {
    prediction_pushed(settings, None)
}

/// Runs `arena lab prediction --pushlatency MS`: prediction limited to
/// `|MS|` milliseconds ahead of the acknowledged state (Half-Life's
/// `pushlatency -N`); none: full prediction.
pub fn prediction_pushed(settings: LabSettings, pushlatency_ms: Option<i32>) -> Result<PredictionReport, LabError> {
    settings.validate()?;
    let frame = frame();
    let (mut server, info) = server_app_with_frame(&settings.server_config(), frame);
    let netcode =
        arena_client::NetcodeSettings { predict_ahead_ms: pushlatency_ms.map(i32::unsigned_abs), ..settings.netcode() };
    let mut client = client_app_with(frame, info.local_addr, "Lab", netcode);
    let joined = step_until(&mut [&mut server, &mut client], (10.0 * LAB_FRAME_HZ) as usize, |apps| {
        session(apps[1]) == Session::InGame
    });
    if !joined {
        return Err(LabError::NotJoined);
    }
    step(&mut [&mut server, &mut client], (WARMUP_S * LAB_FRAME_HZ) as usize);

    let start_server = server_command_stats(&mut server);
    let start_sent = client.world().resource::<ClientStats>().commands_sent;
    let start_mispredictions = client.world().resource::<Prediction>().mispredictions;
    client.world_mut().resource_mut::<Prediction>().max_correction_m = 0.0;

    let frames = (settings.seconds * LAB_FRAME_HZ).round() as usize;
    let mut onsets = MotionOnsets::default();
    for frame_index in 0..frames {
        let t = frame_index as f64 / LAB_FRAME_HZ;
        let (forward, right, turn, held, jump) = script(t);
        {
            let mut input = client.world_mut().resource_mut::<LocalInput>();
            input.forward = forward;
            input.right = right;
            input.yaw = arena_sim::cmd::wrap_angle(input.yaw + turn / LAB_FRAME_HZ as f32);
            input.held = held;
            if jump {
                input.press(Buttons::JUMP);
            }
        }
        server.update();
        client.update();

        // A command with movement made this frame, after standing still: the
        // clock for input-to-motion starts now; it stops when the player is
        // drawn moving.
        let command_moves = client.world().resource::<ThisTick>().0.map(|c| c.forward != 0.0 || c.right != 0.0);
        onsets.frame(t, 1.0 / LAB_FRAME_HZ, command_moves, drawn_position(&client));
    }
    let world = client.world();
    let commands_sent = world.resource::<ClientStats>().commands_sent - start_sent;
    let prediction = world.resource::<Prediction>();
    let mispredictions = prediction.mispredictions - start_mispredictions;
    let max_correction_m = prediction.max_correction_m;
    let end_server = server_command_stats(&mut server);

    // Let go and settle, then compare where each side has the player.
    {
        let mut input = client.world_mut().resource_mut::<LocalInput>();
        input.forward = 0.0;
        input.right = 0.0;
        input.held = Buttons::default();
    }
    step(&mut [&mut server, &mut client], (1.5 * LAB_FRAME_HZ) as usize);
    let client_pos = client.world().resource::<Prediction>().current.map(|s| s.pos);
    let final_error_m = match (client_pos, server_position(&mut server)) {
        (Some(a), Some(b)) => a.distance(b),
        _ => f32::NAN,
    };
    let stats = client.world().resource::<NetStats>().clone();
    let sync = client.world().get_resource::<ClockSync>().cloned();
    let input_to_motion_ms = onsets.mean_ms();
    Ok(PredictionReport {
        experiment: "prediction",
        settings,
        pushlatency_ms,
        commands_sent,
        mispredictions,
        max_correction_m,
        missing_commands: end_server.missing - start_server.missing,
        late_commands: end_server.late - start_server.late,
        rtt_ms: stats.rtt_ms,
        input_to_motion_ms,
        motion_onsets: onsets.delays_ms.len(),
        final_error_m,
        clock_resets: sync.as_ref().map(|s| s.resets).unwrap_or(0),
        command_margin_ticks: sync.and_then(|s| s.margin),
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
    })
}
