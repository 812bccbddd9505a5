//! Voice's rules both ends share: what a frame is (20 ms of Opus, mono,
//! numbered), how large it may be, and how much one talker may send. The
//! frames are strangers' bytes: the server only checks their size and
//! budget and passes them on; the client bounds them again before its
//! decoder sees them (`arena_client`'s `voice/`).

use serde::{Deserialize, Serialize};

/// One frame's audio, milliseconds (Opus's 20 ms frame: the trade between
/// delay and the bits each frame's header costs).
pub const FRAME_MS: u32 = 20;
/// Frames a second.
pub const FRAMES_PER_S: u32 = 1000 / FRAME_MS;
/// The voice's sample rate, Hz: Opus's wideband, all speech needs.
pub const SAMPLE_RATE_HZ: u32 = 16_000;
/// Samples in one frame.
pub const FRAME_SAMPLES: usize = (SAMPLE_RATE_HZ * FRAME_MS / 1000) as usize;
/// The encoder's target, bits a second: the low end of speech's 16-24
/// kbit/s, because each frame costs its framing too (`arena lab voice`:
/// 26.6 kbit/s of upstream at 20 kbit/s).
pub const BITRATE_BPS: i32 = 16_000;
/// Largest frame on the wire, bytes: 20 ms at 16 kbit/s is 40 bytes, and
/// in-band forward error correction adds the previous frame's coarse copy;
/// the encoder is held under this, and anything longer is refused.
pub const MAX_FRAME_BYTES: usize = 160;

/// What one talker may send, at most: frames a second (the key held gives
/// [`FRAMES_PER_S`]; a little over covers a burst after a stall), and the
/// burst.
pub const TALKER_FRAMES_PER_S: f32 = FRAMES_PER_S as f32 * 1.25;
pub const TALKER_FRAME_BURST: f32 = 10.0;
/// Bytes a second one talker may send (32 kbit/s: the encoder's target
/// with room for its variable rate and its error correction), and the burst.
pub const TALKER_BYTES_PER_S: f32 = 4_000.0;
pub const TALKER_BYTE_BURST: f32 = 1_600.0;
/// Talkers one audience (a team, the watchers, everyone) hears at once, at
/// most: the server forwards the first this many who are talking to it and
/// drops the rest until one stops.
pub const MAX_TALKERS: usize = 4;
/// A talker whose last frame is older than this has stopped, milliseconds
/// (its place among the [`MAX_TALKERS`] frees).
pub const TALKER_QUIET_MS: u32 = 300;

/// One frame of a talker's voice: its number (counting up by one a frame
/// from the first of a talk, wrapping), whether it is the last before the
/// key was released (the listener ends without waiting), and Opus's bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoiceFrame {
    pub seq: u16,
    pub last: bool,
    pub opus: Vec<u8>,
}

impl VoiceFrame {
    /// Whether its bytes are within the limit, and there are some.
    pub fn check(&self) -> Result<(), String> {
        if self.opus.is_empty() {
            Err("an empty voice frame".into())
        } else if self.opus.len() > MAX_FRAME_BYTES {
            Err(format!("a voice frame of {} bytes (at most {MAX_FRAME_BYTES})", self.opus.len()))
        } else {
            Ok(())
        }
    }
}

/// How far `seq` is after `base`, in frames (negative: before), on the
/// wrapping 16-bit count.
pub fn seq_after(seq: u16, base: u16) -> i32 {
    i32::from(seq.wrapping_sub(base) as i16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_bounded_and_numbers_wrap() {
        let frame = |n: usize| VoiceFrame { seq: 0, last: false, opus: vec![1; n] };
        assert!(frame(0).check().is_err());
        assert!(frame(1).check().is_ok());
        assert!(frame(MAX_FRAME_BYTES).check().is_ok());
        assert!(frame(MAX_FRAME_BYTES + 1).check().is_err());
        assert_eq!(seq_after(1, 65535), 2);
        assert_eq!(seq_after(65535, 1), -2);
        assert_eq!(FRAME_SAMPLES, 320);
    }
}
