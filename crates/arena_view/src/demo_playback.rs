//! `arena demo play FILE`: a recorded match in a window, replayed through the
//! shared rules from the demo's commands (`arena_replay`), with a
//! timeline (pause, step, 0.25-4x, seek), a camera at any player's eyes as
//! that player's client drew the world (itself at its own tick, the others
//! its view delay behind: round trip and interpolation delay, from the
//! recording) or a free one, and the overlays of a live game: hitboxes of
//! every shot (red as the shooter drew the victim and the server tested it,
//! blue where the server had it), ghosts (where the server had everyone
//! while the followed player drew them in the past), a net line (the
//! followed player's delay), the kill feed and the chat.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use arena_client::{Drawn, NetPlayer, PlayerName};
use arena_protocol::demo::DemoReader;
use arena_protocol::demo_frame::{DemoChat, DemoFrag, DemoHit};
use arena_replay::{Replay, ReplayError};
use arena_sim::player::{GAIT_CYCLE_M, view_forward, view_rotation};
use arena_sim::{ArenaWorld, HitZone, Hitbox, PlayerId, PlayerState};
use bevy::input::mouse::AccumulatedMouseMotion;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::camera::MainCamera;
use crate::hitboxes::draw_hitbox;
use crate::vocabulary::{PlaybackItems, ViewSet};

/// How much of the past is kept to draw players behind the present, seconds.
const PLAYBACK_HISTORY_S: f64 = 3.0;
/// How long a shot's overlay and a frag's feed line stay, seconds.
const SHOT_SHOWN_S: f64 = 1.0;
const FEED_SHOWN_S: f64 = 8.0;
/// Most lines in the kill feed.
const FEED_LINES: usize = 6;
/// Playback speeds offered.
pub const SPEEDS: [f32; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];
/// Free camera speed, metres per second.
const FREE_SPEED_MPS: f32 = 8.0;

const AS_DRAWN: Color = Color::srgb(1.0, 0.2, 0.2);
const SERVER: Color = Color::srgb(0.25, 0.5, 1.0);
const GHOST: Color = Color::srgba(1.0, 1.0, 1.0, 0.6);

/// How `arena demo play` starts.
#[derive(Resource, Clone, Debug, Default)]
pub struct PlaybackStart {
    /// Follow the player with this name (none: the first).
    pub follow: Option<String>,
    /// Start this many seconds in.
    pub at_s: f64,
    pub speed: f32,
    pub show_hitboxes: bool,
    pub free_camera: bool,
}

/// A shot as the replay fired it and the server judged it.
#[derive(Clone, Copy, Debug)]
struct ShotSeen {
    tick: u32,
    origin: Vec3,
    dir: Vec3,
    tested_tick: f64,
    hit: Option<DemoHit>,
}

/// The playback.
#[derive(Resource)]
pub(crate) struct Playback {
    reader: DemoReader,
    pub(crate) world: Arc<ArenaWorld>,
    hz: u32,
    replay: Replay,
    first_tick: u32,
    last_tick: u32,
    /// Everyone's state at the end of each recent tick.
    history: VecDeque<(u32, BTreeMap<PlayerId, PlayerState>)>,
    shots: VecDeque<ShotSeen>,
    feed: VecDeque<(u32, DemoFrag)>,
    /// Chat lines of the last [`FEED_SHOWN_S`], with their tick.
    chat: VecDeque<(u32, DemoChat)>,
    /// The playhead, ticks.
    t: f64,
    speed: f32,
    paused: bool,
    follow: Option<PlayerId>,
    free: (Vec3, f32, f32),
    show_hitboxes: bool,
    show_ghosts: bool,
    error: Option<String>,
    entities: HashMap<PlayerId, Entity>,
}

impl Playback {
    /// Opens a demo at its first keyframe (an error names what is wrong; a
    /// demo cut short plays up to its last whole chunk, one cut before its
    /// first is an error that says so).
    pub(crate) fn open(bytes: Vec<u8>) -> Result<Self, ReplayError> {
        let reader = DemoReader::open(bytes)?;
        reader.check_playable()?;
        let world = Arc::new(arena_replay::world_of(&reader)?);
        let hz = u32::from(reader.header.tick_hz.max(1));
        let (first_tick, last_tick) = match (reader.chunks.first(), reader.chunks.last()) {
            (Some(a), Some(b)) => (a.first_tick, b.last_tick),
            _ => return Err(ReplayError::NoKeyframe { tick: 0 }),
        };
        let replay = Replay::seek(&reader, first_tick, &world, 1.0 / hz as f32)?;
        let start = replay.world.tick;
        let mut playback = Self {
            reader,
            world,
            hz,
            replay,
            first_tick: start,
            last_tick,
            history: VecDeque::new(),
            shots: VecDeque::new(),
            feed: VecDeque::new(),
            chat: VecDeque::new(),
            t: f64::from(start),
            speed: 1.0,
            paused: false,
            follow: None,
            free: (Vec3::new(0.0, 12.0, 30.0), 0.0, -0.35),
            show_hitboxes: false,
            show_ghosts: false,
            error: None,
            entities: HashMap::new(),
        };
        playback.remember_now();
        Ok(playback)
    }

    fn dt_s(&self) -> f32 {
        1.0 / self.hz as f32
    }

    fn remember_now(&mut self) {
        let states = self.replay.world.players.iter().map(|(id, p)| (*id, p.state)).collect();
        self.history.push_back((self.replay.world.tick, states));
        let keep = (PLAYBACK_HISTORY_S * f64::from(self.hz)) as usize;
        while self.history.len() > keep {
            self.history.pop_front();
        }
    }

    /// Replays up to tick `to` (or the demo's end).
    fn advance(&mut self, to: u32) {
        let dt = self.dt_s();
        let mut ignored = Vec::new();
        while self.replay.world.tick < to {
            let step = self.replay.step(&self.world, dt, &mut ignored);
            ignored.clear();
            match step {
                Ok(Some((frame, fired))) => {
                    // The server's verdicts, matched in order to the shots fired.
                    let mut verdicts: Vec<_> = frame.shots.iter().collect();
                    for (shooter, shot) in fired.shots {
                        let Some(i) = verdicts.iter().position(|v| v.shooter == shooter) else { continue };
                        let v = verdicts.remove(i);
                        self.shots.push_back(ShotSeen {
                            tick: frame.tick,
                            origin: shot.origin,
                            dir: shot.dir,
                            tested_tick: v.tested_tick,
                            hit: v.hit,
                        });
                    }
                    self.feed.extend(frame.frags.iter().map(|f| (frame.tick, *f)));
                    self.chat.extend(frame.chat.iter().map(|c| (frame.tick, c.clone())));
                    while self.chat.len() > FEED_LINES {
                        self.chat.pop_front();
                    }
                    self.remember_now();
                }
                Ok(None) => break,
                Err(e) => {
                    self.error = Some(e.to_string());
                    self.paused = true;
                    break;
                }
            }
        }
        let now = self.replay.world.tick;
        let ticks = |s: f64| (s * f64::from(self.hz)) as u32;
        while self.shots.front().is_some_and(|s| now.wrapping_sub(s.tick) > ticks(SHOT_SHOWN_S)) {
            self.shots.pop_front();
        }
        while self.feed.front().is_some_and(|(t, _)| now.wrapping_sub(*t) > ticks(FEED_SHOWN_S)) {
            self.feed.pop_front();
        }
        while self.chat.front().is_some_and(|(t, _)| now.wrapping_sub(*t) > ticks(FEED_SHOWN_S)) {
            self.chat.pop_front();
        }
    }

    /// Jumps to tick `to`: replayed from the keyframe before it.
    fn seek(&mut self, to: u32) {
        let to = to.clamp(self.first_tick, self.last_tick);
        match Replay::seek(&self.reader, to, &self.world, self.dt_s()) {
            Ok(replay) => {
                self.replay = replay;
                self.history.clear();
                self.shots.clear();
                self.feed.clear();
                self.chat.clear();
                self.remember_now();
                self.t = f64::from(self.replay.world.tick);
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    /// Player `id` at time `t` (ticks), blended between the two ticks around
    /// it (the nearest kept when the past is not kept).
    fn state_at(&self, id: PlayerId, t: f64) -> Option<PlayerState> {
        let i = self.history.partition_point(|(tick, _)| f64::from(*tick) <= t);
        let older = self.history.get(i.saturating_sub(1)).and_then(|(tick, s)| Some((*tick, *s.get(&id)?)));
        let newer = self.history.get(i).and_then(|(tick, s)| Some((*tick, *s.get(&id)?)));
        match (older, newer) {
            (Some((ta, a)), Some((tb, b))) if a.spawn_count == b.spawn_count && tb > ta => {
                let f = ((t - f64::from(ta)) / f64::from(tb - ta)).clamp(0.0, 1.0) as f32;
                Some(blend(&a, &b, f))
            }
            (Some((_, a)), _) => Some(a),
            (None, Some((_, b))) => Some(b),
            (None, None) => None,
        }
    }

    /// How far behind the present player `id`'s client drew the others, ticks.
    fn delay_ticks(&self, id: PlayerId) -> f64 {
        let ms = self.replay.world.players.get(&id).map_or(0, |p| p.view_delay_ms);
        f64::from(ms) * f64::from(self.hz) / 1000.0
    }

    fn name(&self, id: PlayerId) -> String {
        self.replay.world.players.get(&id).map_or_else(|| format!("player {}", id.0), |p| p.info.name.clone())
    }

    fn clock(&self, tick: f64) -> String {
        let s = ((tick - f64::from(self.first_tick)) / f64::from(self.hz)).max(0.0);
        format!("{}:{:04.1}", (s / 60.0).floor() as u32, s % 60.0)
    }
}

/// A state between two ticks: position, velocity, view and gait blended,
/// the rest the older one's.
fn blend(a: &PlayerState, b: &PlayerState, f: f32) -> PlayerState {
    let gait = if (b.step_phase - a.step_phase).abs() < GAIT_CYCLE_M / 2.0 {
        a.step_phase + (b.step_phase - a.step_phase) * f
    } else {
        a.step_phase
    };
    PlayerState {
        pos: a.pos.lerp(b.pos, f),
        vel: a.vel.lerp(b.vel, f),
        yaw: a.yaw + arena_sim::cmd::wrap_angle(b.yaw - a.yaw) * f,
        pitch: a.pitch + (b.pitch - a.pitch) * f,
        step_phase: gait,
        twist: a.twist + (b.twist - a.twist) * f,
        landing: a.landing + (b.landing - a.landing) * f,
        ..*a
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PlaybackItems>()
        .add_systems(Startup, apply_start)
        .add_systems(Update, (controls, play, draw_players, publish_items).chain().in_set(ViewSet::Follow))
        .add_systems(Update, (hide_followed, overlays).in_set(ViewSet::Overlay))
        .add_systems(EguiPrimaryContextPass, timeline);
}

fn apply_start(start: Res<PlaybackStart>, mut playback: ResMut<Playback>) {
    playback.speed = if SPEEDS.contains(&start.speed) { start.speed } else { 1.0 };
    playback.show_hitboxes = start.show_hitboxes;
    if start.at_s > 0.0 {
        let to = f64::from(playback.first_tick) + start.at_s * f64::from(playback.hz);
        playback.seek(to.min(f64::from(u32::MAX)) as u32);
    }
    let wanted = start.follow.as_deref();
    let players = &playback.replay.world.players;
    playback.follow = if start.free_camera {
        None
    } else {
        players
            .iter()
            .find(|(_, p)| wanted.is_none_or(|w| p.info.name.eq_ignore_ascii_case(w)))
            .or_else(|| players.iter().next())
            .map(|(id, _)| *id)
    };
}

/// Keys: Space pauses, arrows step (paused) and change speed, Tab follows
/// the next player, F the free camera, H hitboxes, G ghosts; the free
/// camera flies with WASD (Q/E down/up) and looks with the right mouse button.
fn controls(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    time: Res<Time<Real>>,
    mut contexts: EguiContexts,
    mut playback: ResMut<Playback>,
) {
    if contexts.ctx_mut().is_ok_and(|c| c.egui_wants_keyboard_input()) {
        return;
    }
    let p = &mut *playback;
    if keys.just_pressed(KeyCode::Space) {
        p.paused = !p.paused;
    }
    if p.paused && keys.just_pressed(KeyCode::ArrowRight) {
        p.t = (p.t.floor() + 1.0).min(f64::from(p.last_tick));
    }
    if p.paused && keys.just_pressed(KeyCode::ArrowLeft) {
        let to = (p.t.floor() - 1.0).max(f64::from(p.first_tick)) as u32;
        p.seek(to);
    }
    let i = SPEEDS.iter().position(|s| *s == p.speed).unwrap_or(2);
    if keys.just_pressed(KeyCode::ArrowUp) {
        p.speed = SPEEDS[(i + 1).min(SPEEDS.len() - 1)];
    }
    if keys.just_pressed(KeyCode::ArrowDown) {
        p.speed = SPEEDS[i.saturating_sub(1)];
    }
    if keys.just_pressed(KeyCode::Tab) {
        let ids: Vec<PlayerId> = p.replay.world.players.keys().copied().collect();
        let next = match p.follow.and_then(|f| ids.iter().position(|id| *id == f)) {
            Some(k) => ids.get(k + 1).copied(),
            None => ids.first().copied(),
        };
        p.follow = next;
    }
    if keys.just_pressed(KeyCode::KeyF) {
        p.follow = None;
    }
    if keys.just_pressed(KeyCode::KeyH) {
        p.show_hitboxes = !p.show_hitboxes;
    }
    if keys.just_pressed(KeyCode::KeyG) {
        p.show_ghosts = !p.show_ghosts;
    }
    if p.follow.is_none() {
        let (mut pos, mut yaw, mut pitch) = p.free;
        if mouse.pressed(MouseButton::Right) {
            yaw -= motion.delta.x * 0.003;
            pitch = (pitch - motion.delta.y * 0.003).clamp(-1.5, 1.5);
        }
        let forward = view_forward(yaw, pitch);
        let right = view_forward(yaw - std::f32::consts::FRAC_PI_2, 0.0);
        let mut go = Vec3::ZERO;
        for (key, dir) in [
            (KeyCode::KeyW, forward),
            (KeyCode::KeyS, -forward),
            (KeyCode::KeyD, right),
            (KeyCode::KeyA, -right),
            (KeyCode::KeyE, Vec3::Y),
            (KeyCode::KeyQ, -Vec3::Y),
        ] {
            if keys.pressed(key) {
                go += dir;
            }
        }
        pos += go.normalize_or_zero() * FREE_SPEED_MPS * time.delta_secs();
        p.free = (pos, yaw, pitch);
    }
}

/// Moves the playhead on and replays up to it.
fn play(time: Res<Time<Real>>, mut playback: ResMut<Playback>) {
    let p = &mut *playback;
    if !p.paused {
        p.t += time.delta_secs_f64() * f64::from(p.hz) * f64::from(p.speed);
    }
    if p.t >= f64::from(p.last_tick) {
        p.t = f64::from(p.last_tick);
        p.paused = true;
    }
    let to = (p.t.ceil() as u32).min(p.last_tick);
    p.advance(to);
}

/// The items at the playhead, for the items' models and timers.
fn publish_items(playback: Res<Playback>, mut items: ResMut<PlaybackItems>) {
    let world = &playback.replay.world;
    if items.slots != world.items {
        items.slots.clone_from(&world.items);
    }
    items.now_tick = playback.t;
    items.rate = arena_sim::TickRate::new(playback.hz);
}

/// Every player as the followed player's client drew them (or at the
/// playhead for the free camera), and the camera.
fn draw_players(
    mut playback: ResMut<Playback>,
    mut drawn: Query<(&mut Drawn, &mut PlayerName)>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
    mut commands: Commands,
) {
    let p = &mut *playback;
    let ids: Vec<PlayerId> = p.replay.world.players.keys().copied().collect();
    let others_at = p.follow.map_or(p.t, |f| p.t - p.delay_ticks(f));
    for id in &ids {
        let at = if Some(*id) == p.follow { p.t } else { others_at };
        let Some(state) = p.state_at(*id, at) else { continue };
        let name = p.name(*id);
        match p.entities.get(id).and_then(|e| drawn.get_mut(*e).ok()) {
            Some((mut d, mut n)) => {
                d.0 = state;
                if n.0 != name {
                    n.0 = name;
                }
            }
            None => {
                let entity = commands.spawn((NetPlayer { id: *id }, Drawn(state), PlayerName(name))).id();
                p.entities.insert(*id, entity);
            }
        }
    }
    p.entities.retain(|id, e| {
        let keep = ids.contains(id);
        if !keep {
            commands.entity(*e).despawn();
        }
        keep
    });
    let Ok(mut transform) = camera.single_mut() else { return };
    match p.follow.and_then(|f| p.state_at(f, p.t)) {
        Some(me) => {
            transform.translation = me.eye_pos();
            transform.rotation = view_rotation(me.yaw, me.pitch);
        }
        None => {
            let (pos, yaw, pitch) = p.free;
            transform.translation = pos;
            transform.rotation = view_rotation(yaw, pitch);
        }
    }
}

/// In first person, the followed player's own body is not drawn.
fn hide_followed(playback: Res<Playback>, mut players: Query<(&NetPlayer, &mut Visibility)>) {
    for (player, mut visibility) in &mut players {
        if Some(player.id) == playback.follow {
            *visibility = Visibility::Hidden;
        }
    }
}

/// The shots' hitboxes and lines, and the ghosts.
fn overlays(playback: Res<Playback>, mut gizmos: Gizmos) {
    let p = &*playback;
    if p.show_hitboxes {
        // Each victim's newest hit only: older ones of the same player pile up.
        let mut newest: HashMap<PlayerId, usize> = HashMap::new();
        for (i, shot) in p.shots.iter().enumerate() {
            if let Some(h) = shot.hit {
                newest.insert(h.victim, i);
            }
        }
        for (i, shot) in p.shots.iter().enumerate() {
            if shot.hit.is_some_and(|h| newest.get(&h.victim) != Some(&i)) {
                continue;
            }
            let hit = shot.hit.is_some();
            let line = if hit { Color::srgb(0.3, 1.0, 0.3) } else { Color::srgb(0.9, 0.9, 0.9) };
            gizmos.line(shot.origin, shot.origin + shot.dir * 60.0, line);
            if let Some(h) = shot.hit {
                if let Some(drawn) = p.state_at(h.victim, shot.tested_tick) {
                    draw_hitbox(&mut gizmos, &Hitbox::of(&drawn), 0.0, AS_DRAWN);
                }
                if let Some(server) = p.state_at(h.victim, f64::from(shot.tick)) {
                    draw_hitbox(&mut gizmos, &Hitbox::of(&server), 0.04, SERVER);
                }
            }
        }
    }
    if p.show_ghosts
        && let Some(f) = p.follow
    {
        for (id, player) in &p.replay.world.players {
            if *id != f && player.state.alive {
                let now = p.state_at(*id, p.t).unwrap_or(player.state);
                draw_hitbox(&mut gizmos, &Hitbox::of(&now), 0.0, GHOST);
            }
        }
    }
}

fn zone(z: HitZone) -> &'static str {
    match z {
        HitZone::Head => "head",
        HitZone::Body => "body",
        HitZone::Limb => "limb",
    }
}

/// The timeline, the follow choice, the overlays' switches, the net line
/// and the kill feed.
fn timeline(mut contexts: EguiContexts, mut playback: ResMut<Playback>) {
    let Ok(ctx) = contexts.ctx_mut() else { return };
    let p = &mut *playback;
    let width = ctx.content_rect().width() - 24.0;
    egui::Area::new(egui::Id::new("timeline")).anchor(egui::Align2::CENTER_BOTTOM, egui::vec2(0.0, -8.0)).show(
        ctx,
        |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.set_width(width);
                ui.spacing_mut().slider_width = (width - 620.0).max(120.0);
                ui.horizontal(|ui| {
                    if ui.button(if p.paused { "▶ Play" } else { "⏸ Pause" }).clicked() {
                        p.paused = !p.paused;
                    }
                    if ui.button("⏮ Step").clicked() {
                        p.paused = true;
                        let to = (p.t.floor() - 1.0).max(f64::from(p.first_tick)) as u32;
                        p.seek(to);
                    }
                    if ui.button("Step ⏭").clicked() {
                        p.paused = true;
                        p.t = (p.t.floor() + 1.0).min(f64::from(p.last_tick));
                    }
                    ui.separator();
                    ui.label("Speed");
                    for s in SPEEDS {
                        if ui.selectable_label(p.speed == s, format!("{s}x")).clicked() {
                            p.speed = s;
                        }
                    }
                    ui.separator();
                    let mut at = p.t;
                    let (first, last) = (f64::from(p.first_tick), f64::from(p.last_tick));
                    let slider = ui.add(
                        egui::Slider::new(&mut at, first..=last)
                            .show_value(false)
                            .custom_formatter(|v, _| format!("{v:.0}")),
                    );
                    if slider.changed() {
                        p.seek(at as u32);
                    }
                    ui.monospace(format!("{} / {}", p.clock(p.t), p.clock(last)));
                });
                ui.horizontal(|ui| {
                    ui.label("Eyes");
                    let selected = p.follow.map_or_else(|| "free camera".to_string(), |f| p.name(f));
                    let ids: Vec<(PlayerId, String)> =
                        p.replay.world.players.keys().map(|id| (*id, p.name(*id))).collect();
                    egui::ComboBox::from_id_salt("follow").selected_text(selected).show_ui(ui, |ui| {
                        ui.selectable_value(&mut p.follow, None, "free camera");
                        for (id, name) in ids {
                            ui.selectable_value(&mut p.follow, Some(id), name);
                        }
                    });
                    ui.checkbox(&mut p.show_hitboxes, "Hitboxes (H)");
                    ui.checkbox(&mut p.show_ghosts, "Ghosts (G)");
                    ui.weak("Space pause · Left/Right step · Up/Down speed · Tab next player · F free camera (WASD, right mouse)");
                });
                if let Some(e) = &p.error {
                    ui.colored_label(egui::Color32::from_rgb(255, 90, 80), format!("The demo stops here: {e}"));
                } else if let Some(ends) = p.reader.ends() {
                    // A recording a crash cut: the player sees why it ends early.
                    ui.colored_label(egui::Color32::from_rgb(255, 190, 80), format!("The demo was {ends}"));
                }
            });
        },
    );
    egui::Area::new(egui::Id::new("demo net")).anchor(egui::Align2::LEFT_TOP, egui::vec2(12.0, 12.0)).show(ctx, |ui| {
        egui::Frame::popup(ui.style()).show(ui, |ui| {
            ui.strong(format!("DEMO  {}  tick {}", p.reader.header.server_name, p.t.floor()));
            match p.follow {
                Some(f) => {
                    let ms = p.replay.world.players.get(&f).map_or(0, |x| x.view_delay_ms);
                    ui.label(format!(
                        "{}'s eyes: the others drawn {ms} ms behind the server (round trip + interpolation)",
                        p.name(f)
                    ));
                }
                None => {
                    ui.label("Free camera: everyone where the server had them");
                }
            }
            if p.show_hitboxes {
                ui.colored_label(egui::Color32::from_rgb(255, 80, 80), "red: as the shooter drew it (tested)");
                ui.colored_label(egui::Color32::from_rgb(90, 140, 255), "blue: where the server had it");
            }
        });
    });
    egui::Area::new(egui::Id::new("demo feed")).anchor(egui::Align2::RIGHT_TOP, egui::vec2(-12.0, 12.0)).show(
        ctx,
        |ui| {
            // The newest few, as a game's feed.
            for (_, frag) in p.feed.iter().rev().take(FEED_LINES).rev() {
                let line = if frag.killer == frag.victim {
                    format!("{} fell", p.name(frag.victim))
                } else {
                    format!("{}  ▶  {}  ({})", p.name(frag.killer), p.name(frag.victim), zone(frag.zone))
                };
                ui.add(egui::Label::new(egui::RichText::new(line).strong().color(egui::Color32::WHITE)).extend());
            }
        },
    );
    if !p.chat.is_empty() {
        // The chat as it was said (cleaned by the server when it passed it
        // on, and again here: a demo file is untrusted too), plain text.
        egui::Area::new(egui::Id::new("demo chat")).anchor(egui::Align2::LEFT_BOTTOM, egui::vec2(12.0, -120.0)).show(
            ctx,
            |ui| {
                for (_, line) in &p.chat {
                    let to = if line.team { " (team)" } else { "" };
                    // The name it was said under (a spectator is in no player list).
                    let name = if line.name.trim().is_empty() {
                        p.name(line.from)
                    } else {
                        arena_protocol::names::clean_name(&line.name)
                    };
                    let text = format!("{name}{to}: {}", arena_protocol::chat::clean_chat(&line.text));
                    ui.add(egui::Label::new(egui::RichText::new(text).color(egui::Color32::from_rgb(235, 238, 245))));
                }
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A playback of a recording, with the systems that need no window.
    fn app(start: PlaybackStart) -> App {
        let bytes = arena_replay::example_demo(400, false, |_, _| {}).expect("a demo");
        let mut app = App::new();
        app.add_plugins((MinimalPlugins, bevy::asset::AssetPlugin::default()))
            .init_asset::<Mesh>()
            .init_asset::<StandardMaterial>()
            .configure_sets(Update, (ViewSet::Menus, ViewSet::Follow, ViewSet::Overlay).chain())
            .add_plugins(crate::players::plugin)
            .insert_resource(Playback::open(bytes).expect("opens"))
            .insert_resource(start)
            .add_systems(Startup, (crate::camera::spawn_camera, apply_start))
            .add_systems(Update, (play, draw_players).chain().in_set(ViewSet::Follow))
            // A frame's length fixed (a 60 Hz display's): on a loaded
            // machine real time moved the playback on between the updates
            // a test compares (the camera once 5 cm from the eye drawn an
            // update before).
            .insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(std::time::Duration::from_micros(16_667)));
        app
    }

    #[test]
    fn every_player_is_drawn_and_the_camera_follows_the_chosen_eyes() {
        let mut app = app(PlaybackStart { follow: Some("P1".into()), at_s: 2.0, speed: 1.0, ..default() });
        app.update();
        app.update();
        let drawn: Vec<(PlayerId, PlayerState)> =
            app.world_mut().query::<(&NetPlayer, &Drawn)>().iter(app.world()).map(|(p, d)| (p.id, d.0)).collect();
        assert_eq!(drawn.len(), 2, "{drawn:?}");
        // Dressed and posed by the game's own player models.
        app.update();
        let mut shown = app.world_mut().query::<(&NetPlayer, &Visibility, &Children)>();
        let models: Vec<_> = shown.iter(app.world()).map(|(p, v, c)| (p.id, *v, c.len())).collect();
        assert_eq!(models.len(), 2, "{models:?}");
        let playback = app.world().resource::<Playback>();
        assert_eq!(playback.follow, Some(PlayerId(1)));
        assert!(playback.t >= f64::from(playback.first_tick) + 2.0 * 64.0 - 1.0, "sought: {}", playback.t);
        // The camera at the followed player's eye, as drawn in the same update.
        let me = app
            .world_mut()
            .query::<(&NetPlayer, &Drawn)>()
            .iter(app.world())
            .find(|(p, _)| p.id == PlayerId(1))
            .expect("P1")
            .1
            .0;
        let mut cameras = app.world_mut().query_filtered::<&Transform, With<MainCamera>>();
        let eye = cameras.single(app.world()).expect("a camera").translation;
        assert!(eye.distance(me.eye_pos()) < 0.05, "{eye} vs {}", me.eye_pos());
    }

    #[test]
    fn seeking_back_and_forth_lands_on_the_same_states() {
        let mut app = app(PlaybackStart { at_s: 4.0, speed: 1.0, free_camera: true, ..default() });
        app.update();
        let tick = app.world().resource::<Playback>().replay.world.tick;
        let there: Vec<PlayerState> =
            app.world().resource::<Playback>().replay.world.players.values().map(|p| p.state).collect();
        let mut playback = app.world_mut().resource_mut::<Playback>();
        playback.seek(10);
        playback.seek(tick);
        let again: Vec<PlayerState> = playback.replay.world.players.values().map(|p| p.state).collect();
        assert_eq!(playback.replay.world.tick, tick);
        for (a, b) in there.iter().zip(&again) {
            assert!(arena_protocol::demo_frame::same_state(a, b));
        }
        assert!(playback.follow.is_none());
    }
}
