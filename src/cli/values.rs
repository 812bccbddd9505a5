//! Value parsers and checks that several subcommands share: a window's
//! size, a number of seconds and a frame rate.

use std::time::Duration;

/// Smallest and largest window side, pixels.
const WINDOW_SIDE_PX: std::ops::RangeInclusive<u32> = 160..=8192;

/// `--resolution WIDTHxHEIGHT`, each side within [`WINDOW_SIDE_PX`].
pub(super) fn parse_resolution(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(|| format!("\"{text}\" is not WIDTHxHEIGHT"))?;
    let parse = |v: &str| v.trim().parse::<u32>().ok().filter(|v| WINDOW_SIDE_PX.contains(v));
    match (parse(w), parse(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!("\"{text}\" is not WIDTHxHEIGHT with each 160-8192")),
    }
}

/// A `--seconds` value as a duration: finite, above 0 and below 10⁹ s
/// (what `Duration::from_secs_f64` takes without panicking, with room).
pub(super) fn positive_duration(seconds: f64) -> Result<Duration, String> {
    if seconds.is_finite() && seconds > 0.0 && seconds < 1e9 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!("--seconds must be a positive number, not {seconds}"))
    }
}

/// `--fps` of `arena bots`: 1 to 1000 frames a second.
pub(super) fn frame_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(fps) if (1.0..=1000.0).contains(&fps) => Ok(fps),
        _ => Err(format!("{text} is not a frame rate from 1 to 1000")),
    }
}

/// `--say-every-s` of `arena bots`: 0.1 to 3600 seconds.
pub(super) fn say_interval(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.1..=3600.0).contains(&s) => Ok(s),
        _ => Err(format!("{text} is not a number of seconds from 0.1 to 3600")),
    }
}
