//! Opus for voice: the encoder set for speech (wideband, 16 kbit/s, in-band
//! forward error correction) and a decoder that takes only what a frame
//! may be. A frame that is too long, not 20 ms, or does not decode is
//! damaged: it is concealed (Opus's loss concealment), never a panic.

use std::sync::{Mutex, PoisonError};

use arena_protocol::voice::{BITRATE_BPS, FRAME_SAMPLES, MAX_FRAME_BYTES, SAMPLE_RATE_HZ};

/// The loss the encoder plans its error correction for, percent: the
/// paper's "poor" links lose a few percent each way.
const EXPECTED_LOSS_PERCENT: i32 = 10;

/// Why the codec could not be set up (a libopus that refuses its settings).
#[derive(Debug)]
pub struct CodecError(pub String);

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "voice codec: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

fn err(what: &str, e: opus::Error) -> CodecError {
    CodecError(format!("{what}: {e}"))
}

/// One talker's encoder. libopus's state is `Send` but not `Sync`: behind
/// a mutex that is never contended (it is reached through `&mut self`),
/// so that it may live in a Bevy resource.
pub struct VoiceEncoder {
    encoder: Mutex<opus::Encoder>,
    out: [u8; MAX_FRAME_BYTES],
}

impl std::fmt::Debug for VoiceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VoiceEncoder")
    }
}

impl VoiceEncoder {
    pub fn new() -> Result<Self, CodecError> {
        let mut encoder = opus::Encoder::new(SAMPLE_RATE_HZ, opus::Channels::Mono, opus::Application::Voip)
            .map_err(|e| err("encoder", e))?;
        encoder.set_bitrate(opus::Bitrate::Bits(BITRATE_BPS)).map_err(|e| err("bitrate", e))?;
        encoder.set_inband_fec(true).map_err(|e| err("forward error correction", e))?;
        encoder.set_packet_loss_perc(EXPECTED_LOSS_PERCENT).map_err(|e| err("expected loss", e))?;
        encoder.set_signal(opus::Signal::Voice).map_err(|e| err("signal", e))?;
        Ok(Self { encoder: Mutex::new(encoder), out: [0; MAX_FRAME_BYTES] })
    }

    /// The encoder's look-ahead, milliseconds: how much later than the
    /// frame's own time its sound comes out of a decoder.
    pub fn lookahead_ms(&mut self) -> f64 {
        let encoder = self.encoder.get_mut().unwrap_or_else(PoisonError::into_inner);
        encoder.get_lookahead().map_or(0.0, |n| f64::from(n) * 1000.0 / f64::from(SAMPLE_RATE_HZ))
    }

    /// One 20 ms frame of samples, coded: at most [`MAX_FRAME_BYTES`]
    /// (the encoder is held to it), or why libopus refused.
    pub fn encode(&mut self, pcm: &[i16; FRAME_SAMPLES]) -> Result<Vec<u8>, CodecError> {
        let encoder = self.encoder.get_mut().unwrap_or_else(PoisonError::into_inner);
        let n = encoder.encode(pcm, &mut self.out).map_err(|e| err("encode", e))?;
        Ok(self.out[..n.min(MAX_FRAME_BYTES)].to_vec())
    }
}

/// How a frame's samples came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// From its own bytes.
    Frame,
    /// From the next frame's error correction (this one was lost).
    Recovered,
    /// Made up by loss concealment (lost, late or damaged).
    Concealed,
}

/// One talker's decoder (behind a mutex as the encoder is).
pub struct VoiceDecoder {
    decoder: Mutex<opus::Decoder>,
}

impl std::fmt::Debug for VoiceDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VoiceDecoder")
    }
}

/// Whether `bytes` may be handed to the decoder: within the size limit
/// and exactly one 20 ms frame's worth of audio by its own header.
pub fn acceptable(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes.len() <= MAX_FRAME_BYTES
        && opus::packet::get_nb_samples(bytes, SAMPLE_RATE_HZ).is_ok_and(|n| n == FRAME_SAMPLES)
}

impl VoiceDecoder {
    pub fn new() -> Result<Self, CodecError> {
        Ok(Self {
            decoder: Mutex::new(
                opus::Decoder::new(SAMPLE_RATE_HZ, opus::Channels::Mono).map_err(|e| err("decoder", e))?,
            ),
        })
    }

    /// Forgets the talk it was decoding (a fresh decoder's state, without
    /// making one).
    pub fn reset(&mut self) {
        let decoder = self.decoder.get_mut().unwrap_or_else(PoisonError::into_inner);
        let _ = decoder.reset_state();
    }

    /// The samples of a frame: from `frame`'s bytes, or (with `fec`) from
    /// the error correction in the next frame's bytes, or concealed when
    /// there are none, they are not acceptable, or they do not decode.
    pub fn decode(&mut self, frame: Option<&[u8]>, fec: bool, pcm: &mut [i16; FRAME_SAMPLES]) -> Decoded {
        let decoder = self.decoder.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(bytes) = frame.filter(|b| acceptable(b))
            && decoder.decode(bytes, pcm, fec).is_ok_and(|n| n == FRAME_SAMPLES)
        {
            return if fec { Decoded::Recovered } else { Decoded::Frame };
        }
        if decoder.decode(&[], pcm, false).is_ok_and(|n| n == FRAME_SAMPLES) {
            Decoded::Concealed
        } else {
            // A decoder that cannot even conceal: silence.
            pcm.fill(0);
            Decoded::Concealed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(frame: usize) -> [i16; FRAME_SAMPLES] {
        std::array::from_fn(|i| {
            let t = (frame * FRAME_SAMPLES + i) as f32 / SAMPLE_RATE_HZ as f32;
            ((t * 220.0 * std::f32::consts::TAU).sin() * 8000.0 + (t * 660.0 * std::f32::consts::TAU).sin() * 3000.0)
                as i16
        })
    }

    #[test]
    fn speech_rate_frames_decode_and_damaged_ones_are_concealed() {
        let mut encoder = VoiceEncoder::new().unwrap();
        let mut decoder = VoiceDecoder::new().unwrap();
        let mut pcm = [0i16; FRAME_SAMPLES];
        let mut total = 0;
        for frame in 0..50 {
            let bytes = encoder.encode(&tone(frame)).unwrap();
            assert!(!bytes.is_empty() && bytes.len() <= MAX_FRAME_BYTES, "{}", bytes.len());
            total += bytes.len();
            assert_eq!(decoder.decode(Some(&bytes), false, &mut pcm), Decoded::Frame);
        }
        // A second of frames: about the target rate.
        assert!((total * 8) < 28_000, "{} bit/s", total * 8);
        assert!(pcm.iter().any(|&s| s.abs() > 1000), "sound came out");
        // Nothing, too long, 60 ms by its header, a frame count past the limit.
        for junk in [&[][..], &[0x4B; 161][..], &[0x58, 1, 2][..], &[0x4B, 0xFF, 1, 2][..]] {
            assert_eq!(decoder.decode(Some(junk), false, &mut pcm), Decoded::Concealed, "{junk:?}");
        }
        assert_eq!(decoder.decode(None, false, &mut pcm), Decoded::Concealed);
    }
}
