//! Voice in the window: the push-to-talk key (V unless rebound; the
//! console's `+voiprecord`) held while in a game and not typing; the
//! microphone open only while it is (cpal, its stream on a thread of its
//! own, opened on the press and closed on the release: the light of a
//! microphone in use goes off); what the talkers said played through the
//! sound device (a stream Bevy's audio pulls from, 40 ms held so that it
//! never runs dry mid-word, at most a quarter of a second behind); and a line on the HUD naming who talks, with a red "you
//! are talking" while the key is held. No microphone, or none that opens:
//! said on that line, once per press; the game goes on.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use arena_client::voice::{VoiceInput, VoiceOutput, VoiceStats};
use arena_client::{Roster, Session, VoiceSettings};
use arena_protocol::voice::SAMPLE_RATE_HZ;
use bevy::audio::{AddAudioSource, Decodable, Source};
use bevy::prelude::*;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

use crate::looks::overlay_text;
use crate::settings::{Action, Settings};
use crate::vocabulary::{ChatInput, ConsoleTalk, ConsoleWindow, PauseMenu, ViewSet};

/// Samples played late at most, seconds: older ones are dropped, so that a
/// stall never leaves the voice behind for good.
const MAX_PLAYBACK_LAG_S: f32 = 0.25;
/// How long the "no microphone" line stays, seconds.
const NO_MIC_SHOWN_S: f32 = 4.0;

pub(crate) fn plugin(app: &mut App) {
    // Without Bevy's audio (the view's tests) nothing plays, and the rest
    // goes on: the line, the key, the microphone.
    if app.is_plugin_added::<bevy::audio::AudioPlugin>() {
        app.add_audio_source::<VoiceStream>();
    }
    app.init_resource::<ConsoleTalk>()
        .init_resource::<Microphone>()
        .add_systems(OnEnter(Session::InGame), (spawn_voice_line, start_playback))
        .add_systems(OnExit(Session::InGame), stop_voice)
        .add_systems(
            Update,
            (apply_voice_settings, push_to_talk, take_microphone, feed_playback, voice_line)
                .chain()
                .in_set(ViewSet::Overlay),
        );
}

/// The voice's samples on their way to the sound device (mono, 16 kHz),
/// and whether the device is playing them (else it waits for
/// [`PREROLL_SAMPLES`]: the game fills the queue once a frame, the device
/// pulls it in its own chunks, and an empty queue would crackle).
#[derive(Clone, Default)]
struct Playback(Arc<Mutex<(VecDeque<f32>, bool)>>);

/// Samples held before playing starts, or starts again after running dry (40 ms).
const PREROLL_SAMPLES: usize = SAMPLE_RATE_HZ as usize / 25;

/// What Bevy's audio plays: the voice's samples as they come; silence when
/// there are none; never over.
#[derive(Asset, TypePath, Clone)]
struct VoiceStream(Playback);

/// The iterator the audio thread pulls from.
struct VoiceSamples(Playback);

impl Iterator for VoiceSamples {
    type Item = bevy::audio::Sample;

    fn next(&mut self) -> Option<Self::Item> {
        let mut guard = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (queue, playing) = &mut *guard;
        if !*playing && queue.len() >= PREROLL_SAMPLES {
            *playing = true;
        }
        if !*playing {
            return Some(0.0);
        }
        match queue.pop_front() {
            Some(sample) => Some(sample),
            None => {
                *playing = false;
                Some(0.0)
            }
        }
    }
}

impl Source for VoiceSamples {
    fn current_span_len(&self) -> Option<usize> {
        None
    }

    fn channels(&self) -> bevy::audio::ChannelCount {
        bevy::audio::ChannelCount::MIN
    }

    fn sample_rate(&self) -> bevy::audio::SampleRate {
        bevy::audio::SampleRate::new(SAMPLE_RATE_HZ).unwrap_or(bevy::audio::SampleRate::MIN)
    }

    fn total_duration(&self) -> Option<std::time::Duration> {
        None
    }
}

impl Decodable for VoiceStream {
    type Decoder = VoiceSamples;

    fn decoder(&self) -> Self::Decoder {
        VoiceSamples(self.0.clone())
    }
}

/// The playback's queue, while in a game.
#[derive(Resource)]
struct PlaybackQueue(Playback);

/// The line naming who talks.
#[derive(Component)]
struct VoiceLine;

/// The microphone: its samples as they come (at the device's rate and
/// channels), and the thread that holds its stream while the key is held.
#[derive(Resource, Default)]
struct Microphone {
    /// The key (or `+voiprecord`) was held last frame.
    key_held: bool,
    /// Being opened on its thread (opening a device can take a while: the
    /// game does not wait for it).
    opening: Option<Opening>,
    open: Option<OpenMicrophone>,
    /// Why it would not open, and for how much longer that shows.
    failure: Option<(String, f32)>,
    /// Where the resampling stands between batches.
    resampler: Resampler,
}

struct Opening {
    /// Behind a mutex only to be `Sync` (reached through `&mut`, never contended).
    opened: Mutex<Receiver<Result<(u32, usize), String>>>,
    samples: Arc<Mutex<Vec<f32>>>,
    stop: Sender<()>,
}

struct OpenMicrophone {
    samples: Arc<Mutex<Vec<f32>>>,
    rate_hz: u32,
    channels: usize,
    /// Dropping it ends the stream's thread (and closes the device).
    _stop: Sender<()>,
}

/// The player's voice settings into the client's.
fn apply_voice_settings(settings: Res<Settings>, mut voice: ResMut<VoiceSettings>) {
    let wanted = VoiceSettings { enabled: settings.voice, volume: settings.voice_volume };
    if *voice != wanted {
        *voice = wanted;
    }
}

/// The key (or the console's `+voiprecord`) held: the microphone opens on
/// the press and closes on the release.
fn push_to_talk(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    (chat, console, pause): (Res<ChatInput>, Res<ConsoleWindow>, Res<PauseMenu>),
    (console_talk, session): (Res<ConsoleTalk>, Res<State<Session>>),
    mut input: ResMut<VoiceInput>,
    mut microphone: ResMut<Microphone>,
    time: Res<Time>,
) {
    let typing = chat.open || console.open || pause.open;
    let key = !typing && settings.input(Action::PushToTalk).pressed(&keys, &mouse);
    let held = settings.voice && *session.get() == Session::InGame && (key || console_talk.0);
    // Said while the key is held, and a few seconds after.
    if let Some((_, left)) = microphone.failure.as_mut() {
        *left = if held { NO_MIC_SHOWN_S } else { *left - time.delta_secs() };
        if *left <= 0.0 {
            microphone.failure = None;
        }
    }
    if held && !microphone.key_held {
        microphone.resampler = Resampler::default();
        match open_microphone() {
            Ok(opening) => microphone.opening = Some(opening),
            Err(why) => fail(&mut microphone, why),
        }
    } else if !held {
        microphone.opening = None;
        microphone.open = None;
    }
    microphone.key_held = held;
    if let Some(mut opening) = microphone.opening.take() {
        let answer = opening.opened.get_mut().unwrap_or_else(PoisonError::into_inner).try_recv();
        match answer {
            Ok(Ok((rate_hz, channels))) => {
                microphone.open =
                    Some(OpenMicrophone { samples: opening.samples, rate_hz, channels, _stop: opening.stop });
            }
            Ok(Err(why)) => fail(&mut microphone, why),
            Err(std::sync::mpsc::TryRecvError::Empty) => microphone.opening = Some(opening),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                fail(&mut microphone, "the microphone's thread ended".into());
            }
        }
    }
    input.held = held && microphone.open.is_some();
}

/// The microphone would not open: said on the voice line for a while.
fn fail(microphone: &mut Microphone, why: String) {
    warn!("voice: {why}");
    microphone.failure = Some((why, NO_MIC_SHOWN_S));
}

/// Starts opening the default input device on a thread of its own (a
/// cpal stream may not leave the thread that made it), which holds it until
/// the key comes up (its stop sender dropped).
fn open_microphone() -> Result<Opening, String> {
    let (opened_tx, opened) = std::sync::mpsc::channel::<Result<(u32, usize), String>>();
    let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&samples);
    std::thread::Builder::new()
        .name("arena-microphone".into())
        .spawn(move || hold_microphone(&sink, &opened_tx, &stop_rx))
        .map_err(|e| format!("cannot start the microphone's thread: {e}"))?;
    Ok(Opening { opened: Mutex::new(opened), samples, stop })
}

fn hold_microphone(sink: &Arc<Mutex<Vec<f32>>>, opened: &Sender<Result<(u32, usize), String>>, stop: &Receiver<()>) {
    let host = cpal::default_host();
    let Some(device) = host.default_input_device() else {
        let _ = opened.send(Err("no microphone: voice cannot be sent".into()));
        return;
    };
    let config = match device.default_input_config() {
        Ok(config) => config,
        Err(e) => {
            let _ = opened.send(Err(format!("the microphone cannot be used: {e}")));
            return;
        }
    };
    let (rate_hz, channels) = (config.sample_rate(), usize::from(config.channels().max(1)));
    let error = |e: cpal::StreamError| warn!("voice: the microphone: {e}");
    let stream = match config.sample_format() {
        cpal::SampleFormat::F32 => {
            let sink = Arc::clone(sink);
            device.build_input_stream(
                &config.config(),
                move |data: &[f32], _: &_| push_samples(&sink, data.iter().copied()),
                error,
                None,
            )
        }
        cpal::SampleFormat::I16 => {
            let sink = Arc::clone(sink);
            device.build_input_stream(
                &config.config(),
                move |data: &[i16], _: &_| push_samples(&sink, data.iter().map(|&s| f32::from(s) / 32768.0)),
                error,
                None,
            )
        }
        other => {
            let _ = opened.send(Err(format!("the microphone gives {other} samples, which voice does not take")));
            return;
        }
    };
    let stream = match stream.map_err(|e| e.to_string()).and_then(|s| s.play().map(|()| s).map_err(|e| e.to_string())) {
        Ok(stream) => stream,
        Err(e) => {
            let _ = opened.send(Err(format!("the microphone would not open: {e}")));
            return;
        }
    };
    let _ = opened.send(Ok((rate_hz, channels)));
    // Until the key comes up (the sender is dropped).
    let _ = stop.recv();
    drop(stream);
}

/// A second of the device's samples waits at most.
fn push_samples(sink: &Mutex<Vec<f32>>, data: impl Iterator<Item = f32>) {
    let mut samples = sink.lock().unwrap_or_else(PoisonError::into_inner);
    samples.extend(data);
    let over = samples.len().saturating_sub(192_000);
    samples.drain(..over);
}

/// Linear resampling that carries its place from one batch to the next.
#[derive(Debug, Default, Clone)]
struct Resampler {
    /// Where the next output sample falls, in input samples past the last
    /// one of the previous batch (which is `last`).
    position: f64,
    last: f32,
}

impl Resampler {
    fn run(&mut self, input: &[f32], from_hz: u32, to_hz: u32, out: &mut Vec<i16>) {
        let Some(&newest) = input.last() else { return };
        let step = f64::from(from_hz) / f64::from(to_hz.max(1));
        let n = input.len() as f64;
        let last = self.last;
        let at = |i: i64| if i < 0 { last } else { input[i as usize] };
        let mut position = self.position;
        while position <= n - 1.0 {
            let base = position.floor();
            let frac = (position - base) as f32;
            let a = at(base as i64);
            let b = if frac == 0.0 { a } else { at(base as i64 + 1) };
            out.push(((a + (b - a) * frac).clamp(-1.0, 1.0) * 32767.0) as i16);
            position += step;
        }
        self.last = newest;
        self.position = position - n;
    }
}

/// The microphone's samples into the voice's input (mono, 16 kHz).
fn take_microphone(mut microphone: ResMut<Microphone>, mut input: ResMut<VoiceInput>) {
    let Microphone { open, resampler, .. } = &mut *microphone;
    let Some(open) = open.as_ref() else { return };
    let taken: Vec<f32> = std::mem::take(&mut *open.samples.lock().unwrap_or_else(PoisonError::into_inner));
    let mono: Vec<f32> = taken.chunks(open.channels).map(|c| c.iter().sum::<f32>() / c.len() as f32).collect();
    let mut out = Vec::with_capacity(mono.len());
    resampler.run(&mono, open.rate_hz, SAMPLE_RATE_HZ, &mut out);
    input.feed(&out);
}

/// The talkers' stream, played from the moment a game starts.
fn start_playback(mut commands: Commands, streams: Option<ResMut<Assets<VoiceStream>>>) {
    let Some(mut streams) = streams else { return };
    let playback = Playback::default();
    let handle = streams.add(VoiceStream(playback.clone()));
    commands.insert_resource(PlaybackQueue(playback));
    commands.spawn((Name::new("voice playback"), VoicePlayer, AudioPlayer(handle), PlaybackSettings::LOOP));
}

/// The entity playing the voice.
#[derive(Component)]
struct VoicePlayer;

fn stop_voice(
    mut commands: Commands,
    players: Query<Entity, Or<(With<VoicePlayer>, With<VoiceLine>)>>,
    mut microphone: ResMut<Microphone>,
    mut input: ResMut<VoiceInput>,
) {
    for entity in &players {
        commands.entity(entity).despawn();
    }
    commands.remove_resource::<PlaybackQueue>();
    commands.insert_resource(ConsoleTalk(false));
    microphone.opening = None;
    microphone.open = None;
    input.held = false;
}

/// What the client mixed, into the stream (the oldest dropped past
/// [`MAX_PLAYBACK_LAG_S`]).
fn feed_playback(queue: Option<Res<PlaybackQueue>>, mut output: ResMut<VoiceOutput>) {
    let mixed = output.take();
    let Some(queue) = queue else { return };
    let mut guard = queue.0.0.lock().unwrap_or_else(PoisonError::into_inner);
    let samples = &mut guard.0;
    samples.extend(mixed.iter().map(|&s| f32::from(s) / 32768.0));
    let max = (MAX_PLAYBACK_LAG_S * SAMPLE_RATE_HZ as f32) as usize;
    let over = samples.len().saturating_sub(max);
    samples.drain(..over);
}

fn spawn_voice_line(mut commands: Commands) {
    commands.spawn((
        Name::new("voice line"),
        VoiceLine,
        overlay_text("", 18.0, Color::WHITE, 1.5),
        Node { position_type: PositionType::Absolute, left: Val::Px(16.0), bottom: Val::Px(170.0), ..default() },
    ));
}

/// Who talks (by name, in their team's colour's words), and ourselves.
fn voice_line(
    stats: Res<VoiceStats>,
    roster: Res<Roster>,
    microphone: Res<Microphone>,
    input: Res<VoiceInput>,
    mut lines: Query<(&mut Text, &mut TextColor), With<VoiceLine>>,
) {
    let mut parts: Vec<String> = Vec::new();
    if input.held {
        parts.push("● you are talking".into());
    } else if let Some((why, _)) = &microphone.failure {
        parts.push(why.clone());
    }
    if !stats.talking.is_empty() {
        let names: Vec<String> = stats.talking.iter().map(|id| roster.name(*id)).collect();
        parts.push(format!("talking: {}", names.join(", ")));
    }
    let text = parts.join("   ");
    let colour = if input.held { Color::srgb(1.0, 0.35, 0.3) } else { Color::srgb(0.85, 0.95, 1.0) };
    for (mut line, mut line_colour) in &mut lines {
        if line.0 != text {
            line.0.clone_from(&text);
        }
        if line_colour.0 != colour {
            line_colour.0 = colour;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resampling_in_batches_is_one_smooth_signal() {
        let tone: Vec<f32> = (0..4800).map(|i| (i as f32 / 48_000.0 * 440.0 * std::f32::consts::TAU).sin()).collect();
        let mut whole = Vec::new();
        Resampler::default().run(&tone, 48_000, 16_000, &mut whole);
        let mut batched = Vec::new();
        let mut resampler = Resampler::default();
        for chunk in tone.chunks(333) {
            resampler.run(chunk, 48_000, 16_000, &mut batched);
        }
        assert!((1599..=1601).contains(&whole.len()), "{}", whole.len());
        assert_eq!(whole.len(), batched.len());
        assert!(whole.iter().zip(&batched).all(|(a, b)| (a - b).abs() <= 1), "batches change nothing");
    }
}
