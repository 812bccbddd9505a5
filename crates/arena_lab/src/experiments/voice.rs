//! `arena lab voice`: one talker and two listeners on a free-for-all server,
//! every link through the conditioner; the talker holds its key through
//! `--seconds` of a synthetic voice (`arena_client::voice::speech_like`).
//! Mouth to ear is timed frame by frame: from the moment a frame's first
//! sample was taken (the frame whole, less its 20 ms) to the moment the
//! listener's mixer put that sample out, plus the encoder's look-ahead.

use std::collections::HashMap;
use std::sync::Arc;

use arena_client::voice::{VoiceFile, VoiceRecording, VoiceStats, similarity, speech_like, voice_counts};
use arena_protocol::voice::{FRAME_MS, SAMPLE_RATE_HZ};
use serde::Serialize;

use super::setup::{LAB_FRAME_HZ, LabError, LabSettings, Summary, WARMUP_S, frame, frames_for};
use crate::harness::LoopbackGame;

/// The talker's quiet time measured before it talks (its upstream without
/// voice), seconds at most.
const QUIET_S: f64 = 5.0;
/// Time after the talk for its last frames to play, seconds.
const TAIL_S: f64 = 1.5;

/// Mouth to ear, milliseconds.
#[derive(Debug, Serialize)]
pub struct MouthToEar {
    pub p50: f64,
    pub p95: f64,
}

/// What `arena lab voice` prints.
#[derive(Debug, Serialize)]
pub struct VoiceReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    pub mouth_to_ear_ms: MouthToEar,
    /// The talker's upstream while talking less its upstream while quiet,
    /// UDP payload, kilobits a second.
    pub voice_kbit_s: f64,
    /// Frames the talker sent; over both listeners: frames that never came
    /// in time, those recovered from the next frame's error correction,
    /// and turns concealed (lost or late frames, and waits to grow the buffer).
    pub frames_sent: u64,
    pub frames_lost: u64,
    pub frames_recovered: u64,
    pub frames_concealed: u64,
    /// The listeners' jitter buffers' mean delay while playing, milliseconds.
    pub jitter_buffer_ms: f64,
    /// How close what each listener heard is to what was said, 0 to 1
    /// (the mean of the two).
    pub voice_similarity: f64,
    /// The encoder's look-ahead, milliseconds (in `mouth_to_ear_ms`).
    pub codec_delay_ms: f64,
    pub listeners: usize,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// Runs `arena lab voice`.
pub fn voice(settings: LabSettings) -> Result<VoiceReport, LabError> {
    settings.validate()?;
    let names = ["Talker", "Ann", "Ben"];
    let mut lab = LoopbackGame::start(&settings.server_config(), &settings.netcode(), settings.seed, &names, frame())
        .map_err(|_| LabError::NotJoined)?;
    let listeners = [1, 2];
    for &i in &listeners {
        lab.clients[i].insert_resource(VoiceRecording::default());
    }
    lab.step(frames_for(WARMUP_S));
    let sent_bytes = |lab: &LoopbackGame| {
        lab.clients[0]
            .world()
            .get_resource::<arena_client::transport::UdpTransport>()
            .map_or(0, |t| t.counters().bytes_sent)
    };

    // Quiet: the talker's upstream without voice.
    let quiet_s = settings.seconds.min(QUIET_S);
    let before = sent_bytes(&lab);
    lab.step(frames_for(quiet_s));
    let quiet_bytes = sent_bytes(&lab) - before;

    // Talking.
    let said = Arc::new(speech_like(settings.seconds, SAMPLE_RATE_HZ, settings.seed));
    lab.clients[0].insert_resource(VoiceFile::new(Arc::clone(&said), 0.0));
    for &i in &listeners {
        lab.clients[i].insert_resource(VoiceRecording::default());
    }
    let before = sent_bytes(&lab);
    lab.step(frames_for(settings.seconds));
    let talk_bytes = sent_bytes(&lab) - before;
    lab.step(frames_for(TAIL_S));

    let talker = lab.clients[0].world().resource::<VoiceStats>().clone();
    let sent_at: HashMap<u16, f64> = talker.sent_log.iter().copied().collect();
    let frame_s = f64::from(FRAME_MS) / 1000.0;
    let mut mouth_to_ear = Vec::new();
    let (mut lost, mut recovered, mut concealed) = (0, 0, 0);
    let (mut delay_sum, mut delay_turns) = (0.0, 0);
    let mut likeness = Vec::new();
    for &i in &listeners {
        let world = lab.clients[i].world();
        let stats = world.resource::<VoiceStats>();
        let counts = voice_counts(stats, world);
        lost += counts.lost;
        recovered += counts.recovered;
        concealed += counts.concealed;
        delay_sum += stats.delay_sum_s;
        delay_turns += stats.delay_turns;
        for (_, seq, played_at) in &stats.played_log {
            if let Some(sent) = sent_at.get(seq) {
                mouth_to_ear.push((played_at - (sent - frame_s)) * 1000.0 + talker.codec_delay_ms);
            }
        }
        likeness.push(similarity(&said, &world.resource::<VoiceRecording>().0, SAMPLE_RATE_HZ));
    }
    let m2e = Summary::of(&mouth_to_ear);
    let talk_s = settings.seconds;
    let extra = talk_bytes as f64 - quiet_bytes as f64 * talk_s / quiet_s;
    Ok(VoiceReport {
        experiment: "voice",
        mouth_to_ear_ms: MouthToEar { p50: m2e.p50, p95: m2e.p95 },
        voice_kbit_s: (extra * 8.0 / talk_s / 1000.0).max(0.0),
        frames_sent: talker.sent_frames,
        frames_lost: lost,
        frames_recovered: recovered,
        frames_concealed: concealed,
        jitter_buffer_ms: if delay_turns == 0 { 0.0 } else { delay_sum / delay_turns as f64 * 1000.0 },
        voice_similarity: likeness.iter().sum::<f64>() / likeness.len().max(1) as f64,
        codec_delay_ms: talker.codec_delay_ms,
        listeners: listeners.len(),
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
        settings,
    })
}
