//! A player's command: on the wire's grids and against the one expected, or
//! as its exact bits; a shot's extras.
//!
//! The expected one is the command packet's guess (`crate::command_packet::carry_turn`), run
//! forward: the same keys, the view turning on at the same rate.

use std::collections::BTreeMap;

use arena_sim::cmd::{Buttons, Click};
use arena_sim::quant;
use arena_sim::{PlayerId, UserCmd};

use super::model::FrameError;
use super::varint::{In, Out};
use crate::command_packet::carry_turn;

pub(super) fn put_raw_cmd(out: &mut Out, c: &UserCmd) {
    out.var(u64::from(c.tick));
    for v in [c.forward, c.right, c.yaw, c.pitch] {
        out.f32(v);
    }
    out.u8(c.buttons.0);
    out.f64(c.render_tick);
    match c.click {
        Some(k) => {
            out.u8(1);
            for v in [k.fraction, k.yaw, k.pitch] {
                out.f32(v);
            }
        }
        None => out.u8(0),
    }
    match c.drawn_between {
        Some((a, b)) => {
            out.u8(1);
            out.var(u64::from(a));
            out.var(u64::from(b));
        }
        None => out.u8(0),
    }
}

pub(super) fn get_raw_cmd(input: &mut In) -> Result<UserCmd, FrameError> {
    const W: &str = "command";
    let tick = input.u32(W)?;
    let (forward, right, yaw, pitch) = (input.f32(W)?, input.f32(W)?, input.f32(W)?, input.f32(W)?);
    let buttons = Buttons(input.u8(W)?);
    let render_tick = input.f64(W)?;
    let click = match input.u8(W)? {
        0 => None,
        1 => Some(Click { fraction: input.f32(W)?, yaw: input.f32(W)?, pitch: input.f32(W)? }),
        _ => return Err(FrameError::Invalid { what: "command's click" }),
    };
    let drawn_between = match input.u8(W)? {
        0 => None,
        1 => Some((input.u32(W)?, input.u32(W)?)),
        _ => return Err(FrameError::Invalid { what: "command's drawn snapshots" }),
    };
    Ok(UserCmd { tick, forward, right, yaw, pitch, buttons, render_tick, click, drawn_between })
}

/// Whether two commands are the same bit for bit.
pub(super) fn same_cmd(a: &UserCmd, b: &UserCmd) -> bool {
    let (mut x, mut y) = (Out(Vec::new()), Out(Vec::new()));
    put_raw_cmd(&mut x, a);
    put_raw_cmd(&mut y, b);
    x.0 == y.0
}

/// A command as its grid integers (the command packet's).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct CmdQ {
    pub(super) tick: u32,
    pub(super) forward: i8,
    pub(super) right: i8,
    pub(super) buttons: u8,
    pub(super) yaw: u16,
    pub(super) pitch: i16,
}

impl CmdQ {
    pub(super) fn of(c: &UserCmd) -> Self {
        Self {
            tick: c.tick,
            forward: quant::axis_to_q(c.forward),
            right: quant::axis_to_q(c.right),
            buttons: c.buttons.0,
            yaw: quant::yaw_to_q(c.yaw),
            pitch: quant::pitch_to_q(c.pitch),
        }
    }

    /// The next command as the last two lead to expect: the same keys, the
    /// view turning on at the same rate (the shared guess, run forward).
    fn expected_after(last: &UserCmd, before: Option<&UserCmd>) -> Self {
        let l = Self::of(last);
        let (yaw, pitch) = carry_turn((l.yaw, l.pitch), before.map(Self::of).map(|b| (b.yaw, b.pitch)));
        Self { tick: l.tick.wrapping_add(1), yaw, pitch, ..l }
    }
}

/// The shot's extras on their grids: render offset, click, drawn-between.
pub(super) fn put_shot_extras(out: &mut Out, c: &UserCmd) {
    let render = quant::render_offset_to_q(c.tick, c.render_tick);
    out.var(if render == u32::MAX { 0 } else { u64::from(render) + 1 });
    match c.click {
        Some(k) => {
            out.u8(1);
            out.var(u64::from(quant::click_fraction_to_q(k.fraction)));
            out.var(u64::from(quant::yaw_to_q(k.yaw)));
            out.ivar(i64::from(quant::pitch_to_q(k.pitch)));
        }
        None => out.u8(0),
    }
    match c.drawn_between {
        Some((older, newer)) => {
            out.u8(1);
            out.var(u64::from(c.tick.wrapping_sub(older)));
            out.var(u64::from(newer.wrapping_sub(older)));
        }
        None => out.u8(0),
    }
}

pub(super) fn get_shot_extras(input: &mut In, c: &mut UserCmd) -> Result<(), FrameError> {
    const W: &str = "command's shot";
    let render = input.var(W)?;
    let q =
        if render == 0 { u32::MAX } else { u32::try_from(render - 1).map_err(|_| FrameError::Invalid { what: W })? };
    c.render_tick = quant::render_tick_from_q(c.tick, q);
    c.click = match input.u8(W)? {
        0 => None,
        1 => {
            let fraction = u16::try_from(input.var(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            let yaw = u16::try_from(input.var(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            let pitch = i16::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            Some(Click {
                fraction: quant::q_to_click_fraction(fraction),
                yaw: quant::q_to_yaw(yaw),
                pitch: quant::q_to_pitch(pitch),
            })
        }
        _ => return Err(FrameError::Invalid { what: W }),
    };
    c.drawn_between = match input.u8(W)? {
        0 => None,
        1 => {
            let (back, span) = (input.u32(W)?, input.u32(W)?);
            let older = c.tick.wrapping_sub(back);
            Some((older, older.wrapping_add(span)))
        }
        _ => return Err(FrameError::Invalid { what: W }),
    };
    Ok(())
}

pub(super) fn cmd_from_q(q: CmdQ) -> UserCmd {
    UserCmd {
        tick: q.tick,
        forward: quant::q_to_axis(q.forward),
        right: quant::q_to_axis(q.right),
        yaw: quant::q_to_yaw(q.yaw),
        pitch: quant::q_to_pitch(q.pitch),
        buttons: Buttons(q.buttons),
        ..Default::default()
    }
}

/// Each player's last two commands in the chunk, from which its next one
/// is expected; both sides clear it at a chunk's start.
#[derive(Clone, Debug, Default)]
pub(super) struct LastCmds(BTreeMap<PlayerId, (Option<UserCmd>, UserCmd)>);

impl LastCmds {
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    pub(super) fn remember(&mut self, id: PlayerId, cmd: UserCmd) {
        let before = self.0.get(&id).map(|(_, last)| *last);
        self.0.insert(id, (before, cmd));
    }

    /// The player's next command as its last two lead to expect (all zeros
    /// before its first).
    pub(super) fn expected_next(&self, id: PlayerId) -> CmdQ {
        match self.0.get(&id) {
            Some((before, last)) => CmdQ::expected_after(last, before.as_ref()),
            None => CmdQ { tick: 0, forward: 0, right: 0, buttons: 0, yaw: 0, pitch: 0 },
        }
    }
}
