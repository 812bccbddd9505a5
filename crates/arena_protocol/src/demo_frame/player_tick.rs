//! A player's tick in a frame: its command against the expected one, and the
//! states the server changed.
//!
//! The player's id, a mask of the command's fields that differ from the
//! one its last two lead to expect (and a second mask byte for the states that
//! follow, or for a command off the wire's grids, sent as its exact bits),
//! the differences, a shot's extras, then the states. A decoded command
//! outside what sanitising leaves alone is refused: no server recorded it.

use super::command::{
    CmdQ, LastCmds, cmd_from_q, get_raw_cmd, get_shot_extras, put_raw_cmd, put_shot_extras, same_cmd,
};
use super::model::{FrameError, PlayerTick};
use super::state::{get_state, put_state};
use super::varint::{In, Out};

// Command mask: what differs from the expected command.
const C_TICK: u8 = 1 << 0;
const C_FORWARD: u8 = 1 << 1;
const C_RIGHT: u8 = 1 << 2;
const C_BUTTONS: u8 = 1 << 3;
const C_YAW: u8 = 1 << 4;
/// (Visible to the codec's tests, which write a pitch difference by hand.)
pub(super) const C_PITCH: u8 = 1 << 5;
/// A shot's extras follow: render time, click, drawn-between.
const C_SHOT: u8 = 1 << 6;
/// A second mask byte follows.
const C_MORE: u8 = 1 << 7;
// The second mask byte.
const M_FROM: u8 = 1 << 0;
const M_AFTER: u8 = 1 << 1;
/// The command is off the wire's grids: every field as its exact bits.
const M_RAW: u8 = 1 << 2;
const M_ALL: u8 = 0b111;

pub(super) fn put_player(out: &mut Out, last: &mut LastCmds, p: &PlayerTick) {
    out.u8(p.id.0);
    let expected = last.expected_next(p.id);
    let q = CmdQ::of(&p.cmd);
    // On the grids exactly (as every command from the wire is)?
    let mut rebuilt = cmd_from_q(q);
    let shot = p.cmd.render_tick != 0.0 || p.cmd.click.is_some() || p.cmd.drawn_between.is_some();
    if shot {
        let mut extras = Out(Vec::new());
        put_shot_extras(&mut extras, &p.cmd);
        let mut input = In { bytes: &extras.0, at: 0 };
        if get_shot_extras(&mut input, &mut rebuilt).is_err() {
            rebuilt.tick = rebuilt.tick.wrapping_add(1); // cannot match: raw
        }
    }
    let raw = !same_cmd(&rebuilt, &p.cmd);
    let more =
        (u8::from(p.from.is_some()) * M_FROM) | (u8::from(p.after.is_some()) * M_AFTER) | (u8::from(raw) * M_RAW);
    let mut mask = if more != 0 { C_MORE } else { 0 };
    if !raw {
        for (differs, bit) in [
            (q.tick != expected.tick, C_TICK),
            (q.forward != expected.forward, C_FORWARD),
            (q.right != expected.right, C_RIGHT),
            (q.buttons != expected.buttons, C_BUTTONS),
            (q.yaw != expected.yaw, C_YAW),
            (q.pitch != expected.pitch, C_PITCH),
            (shot, C_SHOT),
        ] {
            if differs {
                mask |= bit;
            }
        }
    }
    out.u8(mask);
    if more != 0 {
        out.u8(more);
    }
    if raw {
        put_raw_cmd(out, &p.cmd);
    } else {
        if mask & C_TICK != 0 {
            out.ivar(i64::from(q.tick.wrapping_sub(expected.tick) as i32));
        }
        if mask & C_FORWARD != 0 {
            out.u8(q.forward as u8);
        }
        if mask & C_RIGHT != 0 {
            out.u8(q.right as u8);
        }
        if mask & C_BUTTONS != 0 {
            out.u8(q.buttons);
        }
        if mask & C_YAW != 0 {
            out.ivar(i64::from(q.yaw.wrapping_sub(expected.yaw) as i16));
        }
        if mask & C_PITCH != 0 {
            out.ivar(i64::from(q.pitch) - i64::from(expected.pitch));
        }
        if shot {
            put_shot_extras(out, &p.cmd);
        }
    }
    if let Some(s) = &p.from {
        put_state(out, s);
    }
    if let Some(s) = &p.after {
        put_state(out, s);
    }
    last.remember(p.id, p.cmd);
}

pub(super) fn get_player(input: &mut In, last: &mut LastCmds) -> Result<PlayerTick, FrameError> {
    const W: &str = "player's command";
    let id = input.id(W)?;
    let mask = input.u8(W)?;
    let more = if mask & C_MORE != 0 { input.u8(W)? } else { 0 };
    if more & !M_ALL != 0 || (mask & C_MORE != 0 && more == 0) {
        return Err(FrameError::Invalid { what: "command's mask" });
    }
    let cmd = if more & M_RAW != 0 {
        if mask & !C_MORE != 0 {
            return Err(FrameError::Invalid { what: "command's mask" });
        }
        get_raw_cmd(input)?
    } else {
        let mut q = last.expected_next(id);
        if mask & C_TICK != 0 {
            let d = i32::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            q.tick = q.tick.wrapping_add(d as u32);
        }
        if mask & C_FORWARD != 0 {
            q.forward = input.u8(W)? as i8;
        }
        if mask & C_RIGHT != 0 {
            q.right = input.u8(W)? as i8;
        }
        if mask & C_BUTTONS != 0 {
            q.buttons = input.u8(W)?;
        }
        if mask & C_YAW != 0 {
            let d = i16::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            q.yaw = q.yaw.wrapping_add(d as u16);
        }
        if mask & C_PITCH != 0 {
            let p = i64::from(q.pitch).checked_add(input.ivar(W)?);
            q.pitch = p.and_then(|p| i16::try_from(p).ok()).ok_or(FrameError::Invalid { what: W })?;
        }
        let mut cmd = cmd_from_q(q);
        if mask & C_SHOT != 0 {
            get_shot_extras(input, &mut cmd)?;
        }
        cmd
    };
    // The server runs sanitised commands (and its own, whose yaw may sit
    // at +pi, unwrapped): one with a field sanitising would clamp was
    // not recorded by a server, and a replay does not run it.
    let mut sane = cmd;
    let report = sane.sanitize();
    let unchanged = |a: f32, b: f32| a.to_bits() == b.to_bits();
    if report.non_finite
        || !unchanged(sane.forward, cmd.forward)
        || !unchanged(sane.right, cmd.right)
        || !unchanged(sane.pitch, cmd.pitch)
        || sane.buttons != cmd.buttons
        || sane.render_tick.to_bits() != cmd.render_tick.to_bits()
        || sane.click != cmd.click
        || cmd.yaw.abs() > 2.0 * std::f32::consts::TAU
        || ((sane.yaw - cmd.yaw).abs() > 1e-3 && (sane.yaw - cmd.yaw).abs() < std::f32::consts::TAU - 1e-3)
    {
        return Err(FrameError::Invalid { what: "command (out of range)" });
    }
    let from = if more & M_FROM != 0 { Some(get_state(input)?) } else { None };
    let after = if more & M_AFTER != 0 { Some(get_state(input)?) } else { None };
    last.remember(id, cmd);
    Ok(PlayerTick { id, cmd, from, after })
}
