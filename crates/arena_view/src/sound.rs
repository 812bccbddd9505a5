//! Sound: every sound is synthesised at start (no files to ship or lose):
//! shots (ours, and others' in 3D), rockets leaving and exploding, weapon
//! switches, hits, head shots, kills, footsteps, jumps, landings, reloads,
//! being hit, dying and coming back, items taken (health and armour a
//! short chime and clank, the mega and the quad a rising fanfare), jump pads
//! (a whoosh) and teleporters (a zap, at both ends). Our own
//! movement and shooting sounds come from predicted events, so they play the
//! moment we act and only once, however often a tick is replayed; deaths and
//! respawns, when the drawn body dies or comes back. With no sound device
//! the game says so once and runs silently.

use arena_client::{
    BlastDrawn, DamageTaken, Drawn, DrawnDied, DrawnLaunched, DrawnRespawned, DrawnRockets, DrawnTeleported,
    HitConfirmed, HitPredicted, LocalPlayer, NetPlayer, PickupSound, PredictedEvents, RemoteShot, Session,
};
use arena_sim::rng::SplitMix64;
use arena_sim::{HitZone, ItemKind, PlayerId};
use bevy::audio::{AudioSink, PlaybackMode, SpatialAudioSink, SpatialScale, Volume};
use bevy::prelude::*;

use crate::vocabulary::ViewSet;

/// Samples per second of the synthesised sounds.
const RATE_HZ: u32 = 22_050;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<SoundStatus>()
        .add_systems(Startup, (synthesise, probe_device).chain())
        .add_systems(Update, check_device)
        .add_systems(
            Update,
            (own_sounds, remote_sounds, rocket_sounds, footsteps_of_others, map_sounds)
                .in_set(ViewSet::Overlay)
                .run_if(in_state(Session::InGame)),
        );
}

/// Whether sound plays; `None` until known.
#[derive(Resource, Default, Debug)]
pub(crate) struct SoundStatus {
    pub silent: Option<bool>,
    probe: Option<(Entity, f32)>,
}

#[derive(Resource)]
struct Sounds {
    shot: Handle<AudioSource>,
    hit: Handle<AudioSource>,
    head: Handle<AudioSource>,
    kill: Handle<AudioSource>,
    step: Handle<AudioSource>,
    jump: Handle<AudioSource>,
    land: Handle<AudioSource>,
    reload: Handle<AudioSource>,
    hurt: Handle<AudioSource>,
    death: Handle<AudioSource>,
    respawn: Handle<AudioSource>,
    launch: Handle<AudioSource>,
    blast: Handle<AudioSource>,
    switch: Handle<AudioSource>,
    /// Health or armour taken; the mega or the quad taken.
    pickup: Handle<AudioSource>,
    armour: Handle<AudioSource>,
    power_up: Handle<AudioSource>,
    /// A jump pad's throw; a teleporter's zap.
    whoosh: Handle<AudioSource>,
    zap: Handle<AudioSource>,
    silence: Handle<AudioSource>,
}

/// Health taken: two quick rising notes, soft and bright.
fn pickup_samples() -> Vec<f32> {
    synth(0.28, 15, |t, _| {
        let (hz, start) = if t < 0.09 { (740.0, 0.0) } else { (1110.0, 0.09) };
        let since = t - start;
        0.4 * (tone(t, hz) + 0.3 * tone(t, hz * 2.0)) * (since / 0.005).min(1.0) * (-since * 16.0).exp()
    })
}

/// Armour taken: a metal clank (a ringing partial over a knock) and a low
/// note under it.
fn armour_samples() -> Vec<f32> {
    let mut low = 0.0f32;
    synth(0.4, 16, move |t, noise| {
        low += (noise - low) * 0.3;
        let knock = low * (-t * 60.0).exp();
        let ring = (tone(t, 1630.0) + 0.7 * tone(t, 2470.0) + 0.5 * tone(t, 3320.0)) * (-t * 11.0).exp();
        let note = tone(t, 220.0) * (-t * 7.0).exp();
        0.3 * (1.2 * knock + 0.6 * ring + 0.8 * note)
    })
}

/// The mega or the quad taken: a rising fanfare of three notes over a
/// swelling shimmer, longer and louder than any other pickup.
fn power_up_samples() -> Vec<f32> {
    synth(0.9, 17, |t, _| {
        let notes = [(0.0, 523.25), (0.12, 659.25), (0.24, 783.99)];
        let mut v = 0.0;
        for (at, hz) in notes {
            if t >= at {
                let since = t - at;
                v += (tone(t, hz) + 0.4 * tone(t, hz * 2.0)) * (since / 0.01).min(1.0) * (-since * 3.5).exp();
            }
        }
        let shimmer = tone(t, 1046.5 + 30.0 * tone(t, 6.0)) * (t / 0.9 * std::f32::consts::PI).sin();
        0.22 * (v + 0.5 * shimmer)
    })
}

/// A jump pad: a low thump and a rush of air that rises in pitch as the
/// body leaves (noise through a filter that opens).
fn whoosh_samples() -> Vec<f32> {
    let mut low = 0.0f32;
    synth(0.7, 18, move |t, noise| {
        // The filter opens from dull to bright over the sound.
        let k = 0.03 + 0.25 * (t / 0.7);
        low += (noise - low) * k;
        let swell = (t / 0.08).min(1.0) * (-(t - 0.08).max(0.0) * 4.0).exp();
        let thump = tone(t, 90.0 - 40.0 * t) * (-t * 25.0).exp();
        0.8 * (1.6 * low * swell + 0.6 * thump)
    })
}

/// A teleporter: an electric zap, a buzz sweeping down through the octaves
/// with a crackle on it.
fn zap_samples() -> Vec<f32> {
    let mut phase = 0.0f32;
    synth(0.5, 19, move |t, noise| {
        let hz = 1800.0 * (-t * 6.0).exp() + 90.0;
        phase = (phase + hz / RATE_HZ as f32).fract();
        // A square-ish buzz: brighter than a sine, as a spark is.
        let buzz = (phase * std::f32::consts::TAU).sin().signum() * 0.5 + (phase * std::f32::consts::TAU).sin() * 0.5;
        let crackle = noise * (-t * 20.0).exp();
        0.35 * (0.8 * buzz + 0.7 * crackle) * (t / 0.004).min(1.0) * (-t * 5.0).exp()
    })
}

/// A rocket leaving: a hollow thump and a hiss that trails off.
fn launch_samples() -> Vec<f32> {
    let mut low = 0.0f32;
    synth(0.55, 12, move |t, noise| {
        low += (noise - low) * 0.2;
        let thump = tone(t, 70.0 - 30.0 * t) * (-t * 14.0).exp();
        let hiss = low * (-t * 4.5).exp() * (t / 0.03).min(1.0);
        0.7 * (0.9 * thump + 1.6 * hiss)
    })
}

/// An explosion: a crack, a deep boom and a long rumble.
fn blast_samples() -> Vec<f32> {
    let (mut low, mut lower) = (0.0f32, 0.0f32);
    synth(1.3, 13, move |t, noise| {
        low += (noise - low) * 0.12;
        lower += (noise - lower) * 0.03;
        let crack = noise * (-t * 40.0).exp();
        let boom = tone(t, 55.0 - 25.0 * t) * (-t * 5.0).exp();
        let rumble = (2.5 * low + 6.0 * lower) * (-t * 2.6).exp();
        0.32 * (0.6 * crack + boom + 0.5 * rumble)
    })
}

/// A weapon coming into the hands: two metal clicks.
fn switch_samples() -> Vec<f32> {
    synth(0.25, 14, |t, noise| {
        let click = |at: f32| if t >= at { (-(t - at) * 120.0).exp() } else { 0.0 };
        0.5 * (noise * 0.6 + tone(t, 2300.0) * 0.4) * (click(0.0) + 0.8 * click(0.14))
    })
}

/// 16-bit mono PCM WAV bytes.
fn wav(samples: &[f32]) -> Vec<u8> {
    let data_len = (samples.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + data_len as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&RATE_HZ.to_le_bytes());
    out.extend_from_slice(&(RATE_HZ * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for s in samples {
        out.extend_from_slice(&((s.clamp(-1.0, 1.0) * 32_000.0) as i16).to_le_bytes());
    }
    out
}

/// `seconds` of sound from a function of time (seconds) and white noise.
fn synth(seconds: f32, seed: u64, mut f: impl FnMut(f32, f32) -> f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..(seconds * RATE_HZ as f32) as usize)
        .map(|i| {
            let t = i as f32 / RATE_HZ as f32;
            f(t, rng.range(-1.0, 1.0))
        })
        .collect()
}

fn tone(t: f32, hz: f32) -> f32 {
    (t * hz * std::f32::consts::TAU).sin()
}

fn synthesise(mut commands: Commands, mut sources: ResMut<Assets<AudioSource>>) {
    let mut add = |samples: Vec<f32>| sources.add(AudioSource { bytes: wav(&samples).into() });
    // A low-passed noise, for thuds and steps: each sample leans on the last.
    let thud = |seconds: f32, seed: u64, body_hz: f32, decay: f32, gain: f32| {
        let mut last = 0.0f32;
        synth(seconds, seed, move |t, noise| {
            last += (noise - last) * 0.08;
            gain * (-t * decay).exp() * (last * 2.5 + 0.6 * tone(t, body_hz))
        })
    };
    let sounds = Sounds {
        shot: add(synth(0.32, 1, |t, noise| {
            let crack = noise * (-t * 28.0).exp();
            let boom = tone(t, 90.0 - 40.0 * t) * (-t * 12.0).exp();
            0.75 * (crack + 0.8 * boom)
        })),
        hit: add(synth(0.07, 2, |t, _| 0.5 * tone(t, 1900.0) * (-t * 70.0).exp())),
        head: add(synth(0.3, 3, |t, _| 0.45 * (tone(t, 1250.0) + 0.6 * tone(t, 2500.0)) * (-t * 14.0).exp())),
        kill: add(synth(0.45, 4, |t, _| {
            let hz = if t < 0.12 { 880.0 } else { 1320.0 };
            0.4 * tone(t, hz) * (-(t % 0.12) * 8.0).exp() * (-t * 4.0).exp()
        })),
        step: add(thud(0.09, 5, 75.0, 45.0, 0.35)),
        jump: add(synth(0.18, 6, |t, noise| 0.18 * noise * (t / 0.18 * std::f32::consts::PI).sin())),
        land: add(thud(0.16, 7, 60.0, 28.0, 0.55)),
        reload: add(synth(0.9, 8, |t, noise| {
            let click = |at: f32| if t >= at { (-(t - at) * 90.0).exp() } else { 0.0 };
            0.5 * noise * (click(0.0) + click(0.35) + 0.8 * click(0.75))
        })),
        hurt: add(thud(0.14, 9, 150.0, 30.0, 0.6)),
        death: add(synth(0.6, 10, |t, _| 0.4 * tone(t, 420.0 * (1.0 - t) + 110.0) * (-t * 3.5).exp())),
        // A rising shimmer, as the body comes back.
        respawn: add(synth(0.35, 11, |t, _| {
            let swell = (t / 0.35 * std::f32::consts::PI).sin();
            0.22 * swell * (tone(t, 330.0 + 1400.0 * t) + 0.5 * tone(t, 660.0 + 2800.0 * t))
        })),
        launch: add(launch_samples()),
        blast: add(blast_samples()),
        switch: add(switch_samples()),
        pickup: add(pickup_samples()),
        armour: add(armour_samples()),
        power_up: add(power_up_samples()),
        whoosh: add(whoosh_samples()),
        zap: add(zap_samples()),
        silence: add(vec![0.0; 256]),
    };
    commands.insert_resource(sounds);
}

/// Plays a silent sound: if the audio output never picks it up, there is no device.
fn probe_device(mut commands: Commands, sounds: Res<Sounds>, mut status: ResMut<SoundStatus>) {
    let probe = commands.spawn((AudioPlayer(sounds.silence.clone()), PlaybackSettings::ONCE)).id();
    status.probe = Some((probe, 0.0));
}

fn check_device(
    time: Res<Time<Real>>,
    mut status: ResMut<SoundStatus>,
    sinks: Query<(), Or<(With<AudioSink>, With<SpatialAudioSink>)>>,
    mut commands: Commands,
) {
    let Some((probe, waited)) = status.probe else { return };
    if sinks.get(probe).is_ok() {
        status.silent = Some(false);
        status.probe = None;
        commands.entity(probe).despawn();
    } else if waited > 1.0 {
        info!("No sound device found: the game runs silently.");
        status.silent = Some(true);
        status.probe = None;
        commands.entity(probe).despawn();
    } else {
        status.probe = Some((probe, waited + time.delta_secs()));
    }
}

fn play(commands: &mut Commands, sound: &Handle<AudioSource>, volume: f32) {
    commands.spawn((
        AudioPlayer(sound.clone()),
        PlaybackSettings { mode: PlaybackMode::Despawn, volume: Volume::Linear(volume), ..default() },
    ));
}

fn play_at(commands: &mut Commands, sound: &Handle<AudioSource>, at: Vec3, volume: f32) {
    commands.spawn((
        AudioPlayer(sound.clone()),
        PlaybackSettings {
            mode: PlaybackMode::Despawn,
            volume: Volume::Linear(volume),
            spatial: true,
            // Metres are large units for the ear: sounds fade over tens of metres.
            spatial_scale: Some(SpatialScale::new(0.1)),
            ..default()
        },
        Transform::from_translation(at),
    ));
}

/// Our own actions, the first time their tick is predicted; our hits and hurts.
fn own_sounds(
    mut predicted: MessageReader<PredictedEvents>,
    mut foreseen: MessageReader<HitPredicted>,
    mut hits: MessageReader<HitConfirmed>,
    mut hurts: MessageReader<DamageTaken>,
    sounds: Option<Res<Sounds>>,
    mut commands: Commands,
) {
    let Some(sounds) = sounds else { return };
    for event in predicted.read() {
        let (m, w) = (&event.events.movement, &event.events.weapon);
        if w.shot.is_some() {
            play(&mut commands, &sounds.shot, 0.55);
        }
        if w.reload_started {
            play(&mut commands, &sounds.reload, 0.6);
        }
        if w.rocket.is_some() {
            play(&mut commands, &sounds.launch, 0.7);
        }
        if w.switched {
            play(&mut commands, &sounds.switch, 0.5);
        }
        if m.jumped {
            play(&mut commands, &sounds.jump, 0.6);
        }
        if let Some(speed) = m.landed {
            play(&mut commands, &sounds.land, (speed / 12.0).clamp(0.2, 1.0));
        }
        if m.footstep {
            play(&mut commands, &sounds.step, 0.5);
        }
    }
    // A foreseen hit sounds at once; its confirmation only if it killed.
    let foreseen = foreseen.read().map(|f| (false, f.hit.zone));
    let confirmed = hits.read().filter(|h| h.is_news()).map(|h| (h.killed, h.zone));
    for (killed, zone) in foreseen.chain(confirmed) {
        let sound = match (killed, zone) {
            (true, _) => &sounds.kill,
            (false, HitZone::Head) => &sounds.head,
            (false, HitZone::Body | HitZone::Limb) => &sounds.hit,
        };
        play(&mut commands, sound, 0.8);
    }
    for _ in hurts.read() {
        play(&mut commands, &sounds.hurt, 0.8);
    }
}

/// Other players' shots, where they happen; every drawn death and respawn,
/// where the body is (ours, in our ears).
fn remote_sounds(
    mut shots: MessageReader<RemoteShot>,
    mut deaths: MessageReader<DrawnDied>,
    mut respawns: MessageReader<DrawnRespawned>,
    sounds: Option<Res<Sounds>>,
    mut commands: Commands,
) {
    let Some(sounds) = sounds else { return };
    for shot in shots.read() {
        play_at(&mut commands, &sounds.shot, shot.from, 0.7);
    }
    for death in deaths.read() {
        if death.local {
            play(&mut commands, &sounds.death, 0.8);
        } else {
            play_at(&mut commands, &sounds.death, death.state.pos, 0.8);
        }
    }
    for back in respawns.read() {
        if back.local {
            play(&mut commands, &sounds.respawn, 0.5);
        } else {
            play_at(&mut commands, &sounds.respawn, back.state.pos, 0.5);
        }
    }
}

/// Everyone else's rockets leaving, where they are first drawn; every blast,
/// where it is drawn.
fn rocket_sounds(
    drawn: Res<DrawnRockets>,
    mut blasts: MessageReader<BlastDrawn>,
    sounds: Option<Res<Sounds>>,
    mut heard: Local<Vec<(PlayerId, u32)>>,
    mut commands: Commands,
) {
    let Some(sounds) = sounds else { return };
    for rocket in drawn.0.iter().filter(|r| !r.own) {
        let Some(tick) = rocket.tick else { continue };
        if !heard.contains(&(rocket.owner, tick)) {
            heard.push((rocket.owner, tick));
            play_at(&mut commands, &sounds.launch, rocket.pos, 0.8);
        }
    }
    // Only rockets still drawn can be heard again.
    heard.retain(|key| drawn.0.iter().any(|r| (r.owner, r.tick) == (key.0, Some(key.1))));
    for blast in blasts.read() {
        play_at(&mut commands, &sounds.blast, blast.point, 1.0);
    }
}

/// Items taken (ours once, in our ears, when the client says so: it plays
/// each of our pickups once; others' at the item), jump pads' throws and
/// teleporters' zaps (a body's own in our ears; another's where it is, and
/// a teleport at both ends).
fn map_sounds(
    mut pickups: MessageReader<PickupSound>,
    mut launches: MessageReader<DrawnLaunched>,
    mut teleports: MessageReader<DrawnTeleported>,
    sounds: Option<Res<Sounds>>,
    mut commands: Commands,
) {
    let Some(sounds) = sounds else { return };
    for pickup in pickups.read() {
        let (sound, volume) = match pickup.kind {
            ItemKind::Health | ItemKind::LargeHealth => (&sounds.pickup, 0.6),
            ItemKind::YellowArmour | ItemKind::RedArmour => (&sounds.armour, 0.7),
            ItemKind::MegaHealth | ItemKind::QuadDamage => (&sounds.power_up, 0.8),
        };
        if pickup.own {
            play(&mut commands, sound, volume);
        } else {
            play_at(&mut commands, sound, pickup.at, volume);
        }
    }
    for launch in launches.read() {
        if launch.local {
            play(&mut commands, &sounds.whoosh, 0.6);
        } else {
            play_at(&mut commands, &sounds.whoosh, launch.at, 0.8);
        }
    }
    for teleport in teleports.read() {
        if teleport.local {
            // We are at the far end already: the entry's zap would come
            // from behind a wall across the map.
            play(&mut commands, &sounds.zap, 0.6);
        } else {
            play_at(&mut commands, &sounds.zap, teleport.from, 0.8);
            play_at(&mut commands, &sounds.zap, teleport.to, 0.8);
        }
    }
}

/// Other players' footsteps, in time with their legs: a step each time the
/// drawn gait (the one their body is posed with) passes a foot's touch-down,
/// by the rule the movement reports our own with; none in a crouch, in the
/// air or dead. A respawn starts a new walk: no step for the jump of its phase.
fn footsteps_of_others(
    players: Query<(Entity, &Drawn), (With<NetPlayer>, Without<LocalPlayer>)>,
    mut respawns: MessageReader<DrawnRespawned>,
    mut last_phase: Local<std::collections::HashMap<Entity, f32>>,
    sounds: Option<Res<Sounds>>,
    mut commands: Commands,
) {
    let Some(sounds) = sounds else { return };
    for back in respawns.read() {
        last_phase.remove(&back.entity);
    }
    for (entity, drawn) in &players {
        let phase = drawn.step_phase;
        if let Some(previous) = last_phase.insert(entity, phase)
            && drawn.on_ground
            && drawn.alive
            && !drawn.crouched
            && arena_sim::player::footstep_between(previous, phase)
        {
            play_at(&mut commands, &sounds.step, drawn.pos, 0.5);
        }
    }
    last_phase.retain(|e, _| players.contains(*e));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sound as a file: its length from the WAV header, its peak and RMS level.
    fn file_figures(samples: &[f32]) -> (f32, f32, f32) {
        let bytes = wav(samples);
        assert_eq!(&bytes[..4], b"RIFF");
        let data_len = u32::from_le_bytes([bytes[40], bytes[41], bytes[42], bytes[43]]);
        let pcm: Vec<f32> =
            bytes[44..].chunks(2).map(|c| f32::from(i16::from_le_bytes([c[0], c[1]])) / 32_768.0).collect();
        let peak = pcm.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        let rms = (pcm.iter().map(|s| s * s).sum::<f32>() / pcm.len().max(1) as f32).sqrt();
        (data_len as f32 / 2.0 / RATE_HZ as f32, peak, rms)
    }

    #[test]
    fn synthesised_sounds_are_the_right_length_and_loud_without_clipping() {
        for (name, samples, (min_s, max_s)) in [
            ("launch", launch_samples(), (0.4, 0.7)),
            ("blast", blast_samples(), (1.0, 1.6)),
            ("switch", switch_samples(), (0.15, 0.35)),
            ("pickup", pickup_samples(), (0.2, 0.35)),
            ("armour", armour_samples(), (0.3, 0.5)),
            ("power up", power_up_samples(), (0.7, 1.0)),
            ("whoosh", whoosh_samples(), (0.5, 0.8)),
            ("zap", zap_samples(), (0.4, 0.6)),
        ] {
            let (seconds, peak, rms) = file_figures(&samples);
            eprintln!("{name}: {seconds:.2} s, peak {peak:.2}, rms {rms:.3}");
            assert!((min_s..=max_s).contains(&seconds), "{name}: {seconds} s");
            // Loud enough, and below the rails (0.977 is a clamped sample).
            assert!(peak > 0.3 && peak < 0.95, "{name}: peak {peak}");
            assert!(rms > 0.01, "{name}: rms {rms}");
            // Not clipped: no sample at the rails.
            let clipped = samples.iter().filter(|s| s.abs() >= 1.0).count();
            assert_eq!(clipped, 0, "{name}: {clipped} clipped samples");
        }
    }
}
