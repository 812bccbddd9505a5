//! Sub-tick shots: where a click falls between ticks. A press of fire is
//! stamped with the frame on screen (the local player's place between two
//! predicted ticks, and the others as that frame drew them); the command
//! whose two ticks hold that instant carries it as a fraction, its view and
//! its render time, so the server fires from that instant along that view
//! and rewinds the others to what that frame drew (`arena_server`'s
//! `simulation.rs` and `lag_compensation.rs` take it from there).

use arena_sim::{Click, PlayerId, PlayerState, tick_diff};
use bevy::prelude::*;

use crate::vocabulary::{Drawn, DrawnFrame, LocalPlayer, NetPlayer};

/// A click waiting for its command.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingClick {
    /// The view at the click, radians.
    pub yaw: f32,
    pub pitch: f32,
    /// How long after the frame drawn last it came, seconds (0 for input
    /// read once a frame, whose events carry no time).
    pub after_s: f64,
    /// That frame and the other players as it drew them, once a newer one
    /// is about to be drawn (until then, the last drawn).
    pub frame: Option<(DrawnFrame, Vec<(PlayerId, PlayerState)>)>,
}

/// What a command does with the click waiting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClickFor {
    /// None, or none that can be placed: the shot goes from the tick.
    Nothing,
    /// The click comes after this command's tick: it waits for a later one.
    Later,
    /// This command carries it: the click, its render time, and the others
    /// as they were drawn.
    Now(Click, f64, Vec<(PlayerId, PlayerState)>),
}

/// Where the click waiting (`pending`) falls for the command of `tick`: on the
/// timeline the local player is drawn along, its frame's place (`drawn`
/// if it was not stamped with an older one) plus the time after it, at
/// `ticks_per_s` (the fixed timestep's); its render time at
/// `render_ticks_per_s`. A command carries it if it lies within the two
/// ticks before the command's end; one after waits; one older, or with
/// no place (the local player not drawn between predicted ticks), goes.
pub(crate) fn click_for(
    pending: &mut Option<PendingClick>,
    tick: u32,
    drawn: &DrawnFrame,
    (ticks_per_s, render_ticks_per_s): (f64, f64),
    others: impl FnOnce() -> Vec<(PlayerId, PlayerState)>,
) -> ClickFor {
    let Some(click) = pending.as_mut() else { return ClickFor::Nothing };
    let (frame, _) = click.frame.get_or_insert_with(|| (*drawn, others()));
    let Some(frame_tick) = frame.tick else {
        *pending = None;
        return ClickFor::Nothing;
    };
    // Ticks after this command's end (wrapping as ticks do).
    let after_end =
        f64::from(tick_diff(frame_tick, tick)) - 1.0 + f64::from(frame.fraction) + click.after_s * ticks_per_s;
    if after_end >= 0.0 {
        return ClickFor::Later;
    }
    let fraction = after_end + 2.0;
    let Some(click) = pending.take() else { return ClickFor::Nothing };
    let Some((frame, seen)) = click.frame.filter(|_| fraction >= 0.0) else { return ClickFor::Nothing };
    let render_tick = frame.render_tick + click.after_s * render_ticks_per_s;
    ClickFor::Now(Click { fraction: fraction as f32, yaw: click.yaw, pitch: click.pitch }, render_tick, seen)
}

/// The other players as the frame on screen draws them.
pub(crate) fn drawn_others(others: &Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>) -> Vec<(PlayerId, PlayerState)> {
    others.iter().map(|(p, d)| (p.id, d.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A click `after_s` after a frame drawn `fraction` of the way to the
    /// state after command `frame_tick`, placed for the command of `tick`
    /// at 64 ticks a second.
    fn place(frame_tick: u32, fraction: f32, after_s: f64, tick: u32) -> ClickFor {
        let mut pending = Some(PendingClick { yaw: 0.0, pitch: 0.0, after_s, frame: None });
        let drawn = DrawnFrame { tick: Some(frame_tick), fraction, render_tick: 90.0 };
        click_for(&mut pending, tick, &drawn, (64.0, 64.0), Vec::new)
    }

    fn fraction_of(placed: &ClickFor) -> Option<f32> {
        if let ClickFor::Now(click, ..) = placed { Some(click.fraction) } else { None }
    }

    #[test]
    fn a_click_goes_with_the_command_whose_two_ticks_hold_it() {
        // Drawn a quarter of the way into command 100's tick: the command
        // of 100 ends there, so it carries the click at 1.25 of its two ticks.
        assert_eq!(fraction_of(&place(100, 0.25, 0.0, 100)), Some(1.25));
        // Half a tick after that frame, as the next command's second half...
        assert_eq!(fraction_of(&place(100, 0.25, 0.5 / 64.0, 101)), Some(0.75));
        // ...and not yet for a command that ends before it.
        assert_eq!(place(100, 0.25, 0.0, 99), ClickFor::Later);
        // Older than two ticks: it goes, and the shot is from the tick.
        assert_eq!(place(100, 0.25, 0.0, 103), ClickFor::Nothing);
    }

    #[test]
    fn a_click_is_placed_across_the_wrap_of_ticks() {
        assert_eq!(fraction_of(&place(u32::MAX, 0.25, 0.0, u32::MAX)), Some(1.25));
        assert_eq!(fraction_of(&place(u32::MAX, 0.5, 0.0, 0)), Some(0.5));
        assert_eq!(place(0, 0.5, 0.0, u32::MAX), ClickFor::Later);
        assert_eq!(place(u32::MAX - 5, 0.5, 0.0, 1), ClickFor::Nothing);
    }
}
