//! Fuzz target of a listener's voice path: any bytes as a run of
//! `ToClient::Voice` messages (decoded with the codec's limits, validated),
//! each into its talker's jitter buffer at a fuzzed time, turns taken as a
//! mixer takes them, and every frame the buffer plays decoded by libopus
//! through the client's guard. Nothing may panic; the buffer stays within
//! its bounds; every turn gives a whole 20 ms frame.

use arbitrary::{Arbitrary, Unstructured};
use arena_client::voice::{JitterBuffer, MAX_DELAY_S, MAX_HELD, Turn, VoiceDecoder};
use arena_protocol::voice::{FRAME_SAMPLES, VoiceFrame};
use arena_protocol::{ToClient, decode, encode};
use arena_sim::PlayerId;

use crate::target::Target;

/// Talkers a run keeps apart (ids past it share the last buffer).
const TALKERS: usize = 4;

/// The decoders, made once and reset for each input (making one costs
/// more than most inputs' whole run).
#[derive(Default)]
pub struct VoiceFrames {
    decoders: Vec<VoiceDecoder>,
}

impl Target for VoiceFrames {
    fn name(&self) -> &'static str {
        "voice_frames"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        // Real Opus frames of a talk, numbered across the wrap, as messages
        // with their lengths before them (the run's shape).
        let Ok(mut encoder) = arena_client::voice::VoiceEncoder::new() else { return Vec::new() };
        let said = arena_client::voice::speech_like(0.3, arena_protocol::voice::SAMPLE_RATE_HZ, 9);
        let mut run = Vec::new();
        for (i, chunk) in said.chunks_exact(FRAME_SAMPLES).enumerate() {
            let mut pcm = [0i16; FRAME_SAMPLES];
            pcm.copy_from_slice(chunk);
            let Ok(opus) = encoder.encode(&pcm) else { continue };
            let frame = VoiceFrame { seq: 65530u16.wrapping_add(i as u16), last: i == 14, opus };
            let Ok(bytes) = encode(&ToClient::Voice { from: PlayerId(2), frame }) else { continue };
            run.push(bytes.len() as u8);
            run.push(((i * 7) % 40) as u8);
            run.extend(bytes);
        }
        vec![run]
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut buffers: Vec<JitterBuffer> = (0..TALKERS).map(|_| JitterBuffer::default()).collect();
        if self.decoders.is_empty() {
            let Ok(decoders) = (0..TALKERS).map(|_| VoiceDecoder::new()).collect::<Result<Vec<_>, _>>() else {
                return;
            };
            self.decoders = decoders;
        }
        let decoders = &mut self.decoders;
        for decoder in decoders.iter_mut() {
            decoder.reset();
        }
        let mut now_s = 0.0f64;
        let mut clock_s = 0.0f64;
        while !u.is_empty() {
            let len = usize::from(u8::arbitrary(&mut u).unwrap_or(0));
            // Time to the next arrival, 0-255 ms.
            now_s += f64::from(u8::arbitrary(&mut u).unwrap_or(0)) / 1000.0;
            let bytes = u.bytes(len.min(u.len())).unwrap_or(&[]);
            let message = decode::<ToClient>(bytes).ok().filter(|m| m.validate().is_ok());
            if let Some(ToClient::Voice { from, frame }) = message {
                let talker = usize::from(from.0).min(TALKERS - 1);
                buffers[talker].push(frame, now_s);
            }
            // The mixer's turns up to now.
            while clock_s + 0.02 <= now_s {
                for (buffer, decoder) in buffers.iter_mut().zip(decoders.iter_mut()) {
                    let mut pcm = [0i16; FRAME_SAMPLES];
                    match buffer.turn(clock_s) {
                        Turn::Silent => {}
                        Turn::Play { frame, .. } => {
                            decoder.decode(Some(&frame.opus), false, &mut pcm);
                            buffer.played_last(&frame);
                        }
                        Turn::Recover { next, .. } => {
                            decoder.decode(Some(&next.opus), true, &mut pcm);
                        }
                        Turn::Conceal { .. } => {
                            decoder.decode(None, false, &mut pcm);
                        }
                    }
                    assert!(buffer.held() <= MAX_HELD, "held {}", buffer.held());
                    let delay = buffer.delay_s();
                    assert!(delay.is_finite() && (0.0..=MAX_DELAY_S).contains(&delay), "delay {delay}");
                }
                clock_s += 0.02;
            }
        }
    }
}
