//! The view's turn carried on: the guess at a command's view that both
//! command codings (the command packet and the demo frames) code against
//! (delta coding's guess, not the client's prediction of its player).
//!
//! A command is coded as what differs from the one its neighbours lead to
//! expect: the same keys and movement, the view turned on from the nearer
//! neighbour as far as it turned from the farther one to the nearer. The
//! command packet runs it back in time (each older copy from the two newer
//! ones after it); a demo frame runs it forward (a player's next command
//! from its last two). The keys and movement are each coding's own to copy;
//! the view's turn, on the wire's grids, is shared here.

use arena_sim::quant::PITCH_STEPS;

/// A view on the wire's grids: yaw in 1/65536 turn (wrapping), pitch in
/// steps (within ±[`PITCH_STEPS`]).
pub(crate) type ViewQ = (u16, i16);

/// The view of the command beside `near`, given the one on `near`'s other
/// side (`far`, if any): turned on from `near` as far as it turned from
/// `far` to `near`, the pitch held on its grid; without `far`, `near`'s own.
pub(crate) fn carry_turn(near: ViewQ, far: Option<ViewQ>) -> ViewQ {
    let (yaw, pitch) = near;
    let Some((far_yaw, far_pitch)) = far else {
        return near;
    };
    let turn = yaw.wrapping_sub(far_yaw);
    let pitch = (2 * i32::from(pitch) - i32::from(far_pitch)).clamp(-PITCH_STEPS, PITCH_STEPS);
    (yaw.wrapping_add(turn), pitch as i16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_turn_is_carried_on_either_way_in_time() {
        // Forward: 100, 130 -> 160; back: 160, 130 -> 100.
        assert_eq!(carry_turn((130, -20), Some((100, -10))), (160, -30));
        assert_eq!(carry_turn((130, -20), Some((160, -30))), (100, -10));
        // Without a second command the view stays.
        assert_eq!(carry_turn((130, -20), None), (130, -20));
    }

    #[test]
    fn the_yaw_wraps_and_the_pitch_stops_at_its_limits() {
        assert_eq!(carry_turn((5, 0), Some((u16::MAX - 4, 0))), (15, 0));
        assert_eq!(carry_turn((u16::MAX - 4, 0), Some((5, 0))), (u16::MAX - 14, 0));
        let top = PITCH_STEPS as i16;
        assert_eq!(carry_turn((0, top - 10), Some((0, top - 200))).1, top);
        assert_eq!(carry_turn((0, -top + 10), Some((0, -top + 200))).1, -top);
    }
}
