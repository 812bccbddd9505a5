//! Voice, client side: while the push-to-talk key is held, the microphone's
//! samples (or a file's: `arena bots --voice-file`) are cut into 20 ms
//! frames, coded with Opus and sent on the unreliable path, numbered,
//! nothing once the key is up; the talkers the server passes on are each
//! held in their own jitter buffer, decoded (lost frames recovered from the
//! next one's error correction or concealed), and mixed into one stream the
//! view plays (or `--voice-out` writes). A muted player (the chat's mute)
//! is not played; voice off in the settings sends and plays nothing, and
//! the server is told so it sends nothing either.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `codec`: Opus set for speech; a decoder that conceals what it refuses.
//! - `jitter_buffer`: one talker's frames held to their turn; its delay.
//! - `similarity`: how close what was heard is to what was said; a voice
//!   for tests.
//! - `files`: WAV files in and out, at the voice's rate.

mod codec;
mod files;
mod jitter_buffer;
mod similarity;

use std::collections::{BTreeMap, VecDeque};

use arena_protocol::voice::{FRAME_SAMPLES, SAMPLE_RATE_HZ, VoiceFrame};
use arena_protocol::{ToClient, ToServer};
use arena_sim::PlayerId;
use bevy::prelude::*;

pub use codec::{CodecError, Decoded, VoiceDecoder, VoiceEncoder, acceptable};
pub use files::{WavError, read_wav, resample, write_wav};
pub use jitter_buffer::{JitterBuffer, JitterCounts, MAX_DELAY_S, MAX_HELD, Turn};
pub use similarity::{similarity, speech_like};

use crate::chat::ChatLog;
use crate::settings::VoiceSettings;
use crate::vocabulary::{GameMessage, MessageTally, Outbox, Roster, Session, SessionState};

/// Samples waiting to be coded, at most (a second); older ones go.
const MAX_WAITING_SAMPLES: usize = SAMPLE_RATE_HZ as usize;
/// Mixed samples waiting for the view (or a file), at most (two seconds).
const MAX_MIXED_SAMPLES: usize = 2 * SAMPLE_RATE_HZ as usize;
/// Talkers played at once, at most (the server forwards
/// `arena_protocol::voice::MAX_TALKERS`; a hostile one may send more).
pub const MAX_HEARD_TALKERS: usize = 8;
/// A talker shows as talking on the HUD this long after its last frame, seconds.
pub const TALKING_SHOWN_S: f64 = 0.3;
/// Frames waiting in the outbox at most (a second's; the transport takes
/// them every frame while connected).
const MAX_OUTBOX_FRAMES: usize = 50;
/// Frames remembered for the lab (sent, played).
const LOG_FRAMES: usize = 8192;
/// The playout clock falls this far behind (a stalled frame) before it
/// skips ahead instead of catching up, seconds.
const MAX_PLAYOUT_LAG_S: f64 = 0.2;
/// Samples a talk fades in and out over (5 ms): no click at either end.
const FADE_SAMPLES: usize = 80;
/// Samples mixed at a time (5 ms): a talk starts within this of its turn.
const MIX_SAMPLES: usize = 80;
/// One mixing step, seconds.
const MIX_S: f64 = MIX_SAMPLES as f64 / SAMPLE_RATE_HZ as f64;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<VoiceInput>()
        .init_resource::<VoiceOutput>()
        .init_session_resource::<VoiceTalk>()
        .init_session_resource::<VoiceHearing>()
        .init_session_resource::<VoiceStats>()
        .init_session_resource::<VoiceVolumes>()
        // Frames of a connection that ended go nowhere else.
        .add_systems(OnEnter(Session::Offline), |mut outbox: ResMut<Outbox>| outbox.voice.clear());
}

/// The push-to-talk key and the microphone's samples (mono, 16 kHz): the
/// view presses and feeds it, as `arena bots --voice-file` does.
#[derive(Resource, Debug, Default)]
pub struct VoiceInput {
    /// The key is held: the microphone is open and its samples are sent.
    pub held: bool,
    samples: VecDeque<i16>,
}

impl VoiceInput {
    /// Samples the microphone took (dropped unless the key is held; a
    /// second at most waits).
    pub fn feed(&mut self, samples: &[i16]) {
        if !self.held {
            return;
        }
        self.samples.extend(samples);
        let over = self.samples.len().saturating_sub(MAX_WAITING_SAMPLES);
        self.samples.drain(..over);
    }
}

/// What the talkers said, mixed (mono, 16 kHz), for the view to play or a
/// file to keep; the oldest go past two seconds.
#[derive(Resource, Debug, Default)]
pub struct VoiceOutput {
    samples: VecDeque<i16>,
}

impl VoiceOutput {
    /// Everything mixed since the last take.
    pub fn take(&mut self) -> Vec<i16> {
        self.samples.drain(..).collect()
    }

    fn push(&mut self, samples: &[i16]) {
        self.samples.extend(samples);
        let over = self.samples.len().saturating_sub(MAX_MIXED_SAMPLES);
        self.samples.drain(..over);
    }
}

/// A file talked instead of a microphone (`arena bots --voice-file`, tests,
/// the lab): `start_after_s` in the game, the key is held while its samples
/// are fed at their own pace, then released.
#[derive(Resource, Debug, Clone)]
pub struct VoiceFile {
    samples: std::sync::Arc<Vec<i16>>,
    start_after_s: f64,
    in_game_since_s: Option<f64>,
    fed: usize,
    /// Fed to the end, the key released.
    pub done: bool,
}

impl VoiceFile {
    pub fn new(samples: std::sync::Arc<Vec<i16>>, start_after_s: f64) -> Self {
        Self { samples, start_after_s, in_game_since_s: None, fed: 0, done: false }
    }
}

/// What was played, kept whole (`arena bots --voice-out`, tests, the lab),
/// up to `files::MAX_FILE_S`.
#[derive(Resource, Debug, Clone, Default)]
pub struct VoiceRecording(pub Vec<i16>);

/// The file's samples into the input as real time passes, the key held
/// from its first to its last.
pub(crate) fn feed_voice_file(
    file: Option<ResMut<VoiceFile>>,
    mut input: ResMut<VoiceInput>,
    session: Res<State<Session>>,
    time: Res<Time<Real>>,
) {
    let Some(mut file) = file else { return };
    let now_s = time.elapsed_secs_f64();
    if file.done {
        return;
    }
    if *session.get() != Session::InGame {
        // Out of the game mid-file: the key comes up.
        if file.in_game_since_s.take().is_some() {
            input.held = false;
        }
        return;
    }
    // Back in the game mid-file: it goes on where it stopped.
    let resume_s = file.fed as f64 / f64::from(SAMPLE_RATE_HZ) + if file.fed > 0 { file.start_after_s } else { 0.0 };
    let since = *file.in_game_since_s.get_or_insert(now_s - resume_s);
    let talking_s = now_s - since - file.start_after_s;
    if talking_s < 0.0 {
        return;
    }
    let due = ((talking_s * f64::from(SAMPLE_RATE_HZ)) as usize).min(file.samples.len());
    if due > file.fed || file.fed == 0 {
        input.held = true;
        let samples = std::sync::Arc::clone(&file.samples);
        input.feed(&samples[file.fed..due]);
        file.fed = due;
    }
    if file.fed >= file.samples.len() {
        input.held = false;
        file.done = true;
    }
}

/// How loud each talker is played (1: as it came; 0 to [`MAX_TALKER_VOLUME`]),
/// by the id and the name it had when it was set (an id is given to someone
/// else once its player leaves: the volume is not), this connection.
#[derive(Resource, Debug, Default, Clone)]
pub struct VoiceVolumes(BTreeMap<PlayerId, (String, f32)>);

/// The loudest a talker may be turned up.
pub const MAX_TALKER_VOLUME: f32 = 2.0;

impl VoiceVolumes {
    /// Player `id`'s volume, called `name` now.
    pub fn get(&self, id: PlayerId, name: &str) -> f32 {
        self.0.get(&id).filter(|(n, _)| n == name).map_or(1.0, |(_, v)| *v)
    }

    /// Sets player `id`'s volume (`name`: what it is called now).
    pub fn set(&mut self, id: PlayerId, name: &str, volume: f32) {
        let volume = if volume.is_finite() { volume.clamp(0.0, MAX_TALKER_VOLUME) } else { 1.0 };
        self.0.insert(id, (name.to_owned(), volume));
    }
}

/// Our own talking: the encoder, the next frame's number, the key's last state.
#[derive(Resource, Debug, Default)]
pub(crate) struct VoiceTalk {
    encoder: Option<VoiceEncoder>,
    failed: bool,
    seq: u16,
    was_held: bool,
}

/// One talker being heard.
#[derive(Debug)]
struct Talker {
    buffer: JitterBuffer,
    decoder: VoiceDecoder,
    last_frame_s: f64,
    /// Decoded samples not yet mixed (less than a frame and a step).
    pcm: VecDeque<i16>,
}

/// The talkers being heard, and the playout clock.
#[derive(Resource, Debug, Default)]
pub(crate) struct VoiceHearing {
    talkers: BTreeMap<PlayerId, Talker>,
    /// The start of the next 20 ms to mix, on the app's real clock.
    clock_s: Option<f64>,
}

/// Voice's figures this connection, for the HUD, the panel and the lab.
#[derive(Resource, Debug, Default, Clone)]
pub struct VoiceStats {
    /// Our frames sent, and their bytes (the messages').
    pub sent_frames: u64,
    pub sent_bytes: u64,
    /// Frames of muted players not played; frames past the talkers we play at once.
    pub muted_frames: u64,
    pub too_many_talkers: u64,
    /// The jitter buffers' counts, all talkers together.
    pub counts: JitterCounts,
    /// The jitter buffers' delay summed over every turn that played, and the turns.
    pub delay_sum_s: f64,
    pub delay_turns: u64,
    /// Players heard now (within [`TALKING_SHOWN_S`]), and whether we talk.
    pub talking: Vec<PlayerId>,
    pub me_talking: bool,
    /// Our frames as they were sent: number and the real time the frame was
    /// whole (its last sample taken), the newest [`LOG_FRAMES`].
    pub sent_log: VecDeque<(u16, f64)>,
    /// Frames as they were played: talker, number and the real time their
    /// first sample went out, the newest [`LOG_FRAMES`].
    pub played_log: VecDeque<(PlayerId, u16, f64)>,
    /// The codec could not be set up: why (said once).
    pub unavailable: Option<String>,
    /// Our encoder's look-ahead, milliseconds (what the codec adds to the
    /// voice's delay beyond the frame).
    pub codec_delay_ms: f64,
}

impl VoiceStats {
    /// The jitter buffers' mean delay while playing, milliseconds.
    pub fn jitter_buffer_ms(&self) -> f64 {
        if self.delay_turns == 0 { 0.0 } else { self.delay_sum_s / self.delay_turns as f64 * 1000.0 }
    }
}

fn push_log<T>(log: &mut VecDeque<T>, item: T) {
    if log.len() >= LOG_FRAMES {
        log.pop_front();
    }
    log.push_back(item);
}

/// While the key is held: whole frames coded and put in the outbox; when it
/// comes up, the rest (padded with silence) as the talk's last frame.
pub(crate) fn send_voice(
    settings: Res<VoiceSettings>,
    mut input: ResMut<VoiceInput>,
    mut talk: ResMut<VoiceTalk>,
    mut outbox: ResMut<Outbox>,
    mut tally: ResMut<MessageTally>,
    mut stats: ResMut<VoiceStats>,
    time: Res<Time<Real>>,
) {
    if !settings.enabled {
        input.held = false;
        input.samples.clear();
        talk.was_held = false;
        stats.me_talking = false;
        return;
    }
    let held = input.held;
    let released = talk.was_held && !held;
    talk.was_held = held;
    stats.me_talking = held;
    if !held && !released {
        input.samples.clear();
        return;
    }
    if talk.encoder.is_none() && !talk.failed {
        match VoiceEncoder::new() {
            Ok(mut encoder) => {
                stats.codec_delay_ms = encoder.lookahead_ms();
                talk.encoder = Some(encoder);
            }
            Err(e) => {
                warn!("voice is unavailable: {e}");
                stats.unavailable = Some(e.to_string());
                talk.failed = true;
            }
        }
    }
    let now_s = time.elapsed_secs_f64();
    loop {
        let whole = input.samples.len() >= FRAME_SAMPLES;
        if !whole && !released {
            break;
        }
        let mut pcm = [0i16; FRAME_SAMPLES];
        let take = input.samples.len().min(FRAME_SAMPLES);
        for (slot, sample) in pcm.iter_mut().zip(input.samples.drain(..take)) {
            *slot = sample;
        }
        let last = released && input.samples.is_empty();
        let VoiceTalk { encoder, seq, .. } = &mut *talk;
        let Some(encoder) = encoder.as_mut() else {
            input.samples.clear();
            return;
        };
        match encoder.encode(&pcm) {
            Ok(opus) => {
                let message = ToServer::Voice(VoiceFrame { seq: *seq, last, opus });
                match arena_protocol::encode(&message) {
                    Ok(bytes) => {
                        tally.count_up(message.kind(), bytes.len());
                        stats.sent_frames += 1;
                        stats.sent_bytes += bytes.len() as u64;
                        push_log(&mut stats.sent_log, (*seq, now_s));
                        if outbox.voice.len() >= MAX_OUTBOX_FRAMES {
                            outbox.voice.remove(0);
                        }
                        outbox.voice.push(bytes);
                    }
                    Err(e) => error!("could not encode a voice frame: {e}"),
                }
                *seq = seq.wrapping_add(1);
            }
            Err(e) => warn!("{e}"),
        }
        if last {
            break;
        }
    }
}

/// The frames the server passed on, into their talkers' buffers (not a
/// muted player's; none with voice off).
pub(crate) fn receive_voice(
    mut messages: MessageReader<GameMessage>,
    settings: Res<VoiceSettings>,
    roster: Res<Roster>,
    chat: Res<ChatLog>,
    mut hearing: ResMut<VoiceHearing>,
    mut stats: ResMut<VoiceStats>,
    time: Res<Time<Real>>,
) {
    let now_s = time.elapsed_secs_f64();
    for GameMessage(message) in messages.read() {
        let ToClient::Voice { from, frame } = message else { continue };
        if !settings.enabled {
            continue;
        }
        if chat.is_muted(*from, &roster.name(*from)) {
            stats.muted_frames += 1;
            continue;
        }
        if !hearing.talkers.contains_key(from) {
            if hearing.talkers.len() >= MAX_HEARD_TALKERS {
                // Room from a talker that has stopped, or none.
                let quiet = hearing.talkers.iter().find(|(_, t)| !t.buffer.active()).map(|(id, _)| *id);
                match quiet {
                    Some(id) => retire(&mut hearing, &mut stats, id),
                    None => {
                        stats.too_many_talkers += 1;
                        continue;
                    }
                }
            }
            let decoder = match VoiceDecoder::new() {
                Ok(decoder) => decoder,
                Err(e) => {
                    if stats.unavailable.is_none() {
                        warn!("voice is unavailable: {e}");
                        stats.unavailable = Some(e.to_string());
                    }
                    continue;
                }
            };
            hearing.talkers.insert(
                *from,
                Talker { buffer: JitterBuffer::default(), decoder, last_frame_s: now_s, pcm: VecDeque::new() },
            );
        }
        if let Some(talker) = hearing.talkers.get_mut(from) {
            talker.buffer.push(frame.clone(), now_s);
            talker.last_frame_s = now_s;
        }
    }
}

/// A talker no longer heard: its counts kept in the totals.
fn retire(hearing: &mut VoiceHearing, stats: &mut VoiceStats, id: PlayerId) {
    if let Some(talker) = hearing.talkers.remove(&id) {
        add_counts(&mut stats.counts, &talker.buffer.counts);
    }
}

fn add_counts(total: &mut JitterCounts, c: &JitterCounts) {
    total.received += c.received;
    total.played += c.played;
    total.recovered += c.recovered;
    total.concealed += c.concealed;
    total.late += c.late;
    total.duplicate += c.duplicate;
    total.too_far += c.too_far;
    total.shrunk += c.shrunk;
    total.stretched += c.stretched;
    total.lost += c.lost;
}

/// Every 20 ms of the app's real clock: each talker's turn, decoded and
/// mixed into the output.
pub(crate) fn play_voice(
    settings: Res<VoiceSettings>,
    roster: Res<Roster>,
    mut hearing: ResMut<VoiceHearing>,
    mut output: ResMut<VoiceOutput>,
    mut recording: Option<ResMut<VoiceRecording>>,
    mut stats: ResMut<VoiceStats>,
    volumes: Res<VoiceVolumes>,
    time: Res<Time<Real>>,
) {
    let now_s = time.elapsed_secs_f64();
    // Talkers gone from the game, or silent for a while, go.
    let gone: Vec<PlayerId> = hearing
        .talkers
        .iter()
        .filter(|(id, t)| !roster.names.contains_key(id) || (!t.buffer.active() && now_s - t.last_frame_s > 10.0))
        .map(|(id, _)| *id)
        .collect();
    for id in gone {
        retire(&mut hearing, &mut stats, id);
    }
    let mut clock = hearing.clock_s.unwrap_or(now_s);
    if now_s - clock > MAX_PLAYOUT_LAG_S {
        clock = now_s - MIX_S;
    }
    let volume = settings.volume.clamp(0.0, 4.0);
    while clock + MIX_S <= now_s {
        let mut mix = [0i32; MIX_SAMPLES];
        for (id, talker) in &mut hearing.talkers {
            let gain = volume * volumes.get(*id, &roster.name(*id));
            // A frame's turn whenever less than a step is left decoded.
            while talker.pcm.len() < MIX_SAMPLES {
                let out_at = clock + talker.pcm.len() as f64 / f64::from(SAMPLE_RATE_HZ);
                let Some(frame) = take_turn(talker, clock, &mut stats, *id, out_at) else { break };
                talker.pcm.extend(frame);
            }
            for (i, sample) in talker.pcm.drain(..talker.pcm.len().min(MIX_SAMPLES)).enumerate() {
                mix[i] += (f32::from(sample) * gain) as i32;
            }
        }
        let mixed: Vec<i16> = mix.iter().map(|&s| s.clamp(-32767, 32767) as i16).collect();
        output.push(&mixed);
        if let Some(recording) = recording.as_mut()
            && recording.0.len() < files::MAX_FILE_S as usize * SAMPLE_RATE_HZ as usize
        {
            recording.0.extend_from_slice(&mixed);
        }
        clock += MIX_S;
    }
    hearing.clock_s = Some(clock);
    let talking: Vec<PlayerId> = hearing
        .talkers
        .iter()
        .filter(|(_, t)| t.buffer.active() && now_s - t.last_frame_s <= TALKING_SHOWN_S)
        .map(|(id, _)| *id)
        .collect();
    if stats.talking != talking {
        stats.talking = talking;
    }
}

/// One turn of `talker`'s buffer at `now_s`, decoded (faded in at a talk's
/// start and out at its end); `None`: silent. Its first sample goes out at
/// `out_at_s`.
fn take_turn(
    talker: &mut Talker,
    now_s: f64,
    stats: &mut VoiceStats,
    id: PlayerId,
    out_at_s: f64,
) -> Option<[i16; FRAME_SAMPLES]> {
    let mut pcm = [0i16; FRAME_SAMPLES];
    let (fade_in, fade_out) = match talker.buffer.turn(now_s) {
        Turn::Silent => return None,
        Turn::Play { frame, first } => {
            talker.decoder.decode(Some(&frame.opus), false, &mut pcm);
            talker.buffer.played_last(&frame);
            push_log(&mut stats.played_log, (id, frame.seq, out_at_s));
            (first, frame.last)
        }
        Turn::Recover { seq, next } => {
            talker.decoder.decode(Some(&next.opus), true, &mut pcm);
            push_log(&mut stats.played_log, (id, seq, out_at_s));
            (false, false)
        }
        Turn::Conceal { last } => {
            talker.decoder.decode(None, false, &mut pcm);
            (false, last)
        }
    };
    stats.delay_sum_s += talker.buffer.delay_s();
    stats.delay_turns += 1;
    for i in 0..FADE_SAMPLES {
        let g = i as f32 / FADE_SAMPLES as f32;
        if fade_in {
            pcm[i] = (f32::from(pcm[i]) * g) as i16;
        }
        if fade_out {
            let j = FRAME_SAMPLES - 1 - i;
            pcm[j] = (f32::from(pcm[j]) * g) as i16;
        }
    }
    Some(pcm)
}

/// The jitter buffers' counts now, the talkers still heard included.
pub fn voice_counts(stats: &VoiceStats, world: &World) -> JitterCounts {
    let mut total = stats.counts;
    if let Some(hearing) = world.get_resource::<VoiceHearing>() {
        for talker in hearing.talkers.values() {
            add_counts(&mut total, &talker.buffer.counts);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_talkers_volume_is_kept_within_its_range_and_not_given_to_the_next_holder_of_its_id() {
        let mut volumes = VoiceVolumes::default();
        let ada = PlayerId(3);
        assert_eq!(volumes.get(ada, "Ada"), 1.0, "as it came until it is set");
        volumes.set(ada, "Ada", 0.0);
        assert_eq!(volumes.get(ada, "Ada"), 0.0, "silenced");
        volumes.set(ada, "Ada", 7.5);
        assert_eq!(volumes.get(ada, "Ada"), MAX_TALKER_VOLUME, "turned up no further than the most");
        volumes.set(ada, "Ada", -1.0);
        assert_eq!(volumes.get(ada, "Ada"), 0.0);
        volumes.set(ada, "Ada", f32::NAN);
        assert_eq!(volumes.get(ada, "Ada"), 1.0, "a number that is none: as it came");
        volumes.set(ada, "Ada", 0.25);
        assert_eq!(volumes.get(ada, "Ada"), 0.25);
        // Ada left and Bob was given her id: he is heard as he comes.
        assert_eq!(volumes.get(ada, "Bob"), 1.0);
        assert_eq!(volumes.get(PlayerId(4), "Ada"), 1.0, "another player's id");
    }
}
