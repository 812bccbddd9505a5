//! The map's items as a player sees them: each a small model that says what
//! it is (a white box with a green cross through it for health, larger and
//! orange for large health; the mega a glowing blue sphere round a white
//! cross; armour a chest plate with shoulders, yellow or red; the quad a
//! glowing purple cube on its corner), hovering over its spot, turning and
//! bobbing slowly, each out of step with its neighbours. Taken, it is gone:
//! a faint ring of its colour lies on the floor, pulsing in its last
//! seconds, and over the spot, while the spot is in sight, its name and the
//! seconds until it is back. The items are as the newest snapshot lists
//! them, our own pickups gone at once (as the client predicted them). A
//! server without items (its list is not the map's) shows none, nor does
//! the arena behind the menus. Built again when another map comes.

use std::collections::HashMap;
use std::f32::consts::{FRAC_PI_4, TAU};

use arena_client::{ClientWorld, ItemTable, PickupStats, Roster, ServerClock, Session};
use arena_sim::{ItemKind, TickRate, tick_diff};
use bevy::light::{NotShadowCaster, NotShadowReceiver};
use bevy::prelude::*;
use bevy::text::FontSize;

use crate::callouts::AreaLamp;
use crate::camera::MainCamera;
use crate::looks::{TEXT_SHADOW, item_color, overlay_text};
use crate::vocabulary::{KillCamShown, PlaybackItems, ViewSet};

/// Height of a model's centre above its spot, metres.
const HOVER_M: f32 = 0.5;
/// How far a model bobs up and down, metres, and how often, Hz.
const BOB_M: f32 = 0.07;
const BOB_HZ: f32 = 0.45;
/// How fast a model turns, radians per second (a turn in about five seconds).
const TURN_RAD_PER_S: f32 = 1.3;
/// Phase between one item's bob and turn and the next one's, radians
/// (about the golden angle, so that no two neighbours move alike).
const PHASE_STEP_RAD: f32 = 2.4;
/// The ring left on the floor: its inner and outer radius (about the
/// pickup's reach), how far above the spot (no flicker into the floor),
/// metres, and its opacity.
const RING_M: (f32, f32) = (0.5, 0.62);
const RING_LIFT_M: f32 = 0.02;
const RING_ALPHA: f32 = 0.35;
/// In its last seconds away the ring pulses, so that someone waiting by it
/// sees it coming: how long, seconds, how much (share of its size) and how
/// fast, Hz.
const SOON_S: f32 = 3.0;
const SOON_PULSE: f32 = 0.15;
const SOON_PULSE_HZ: f32 = 2.0;
/// Where the timer's bottom is, metres above the spot.
const TIMER_LIFT_M: f32 = 1.1;
/// Nearer than this a timer is fully opaque; farther than the range, not
/// shown, metres.
const TIMER_FULL_M: f32 = 20.0;
const TIMER_RANGE_M: f32 = 50.0;
/// Text sizes of the timer's name and seconds, pixels.
const TIMER_NAME_PX: f32 = 14.0;
const TIMER_SECONDS_PX: f32 = 22.0;
/// The mega's and the quad's light (shown at the high quality setting, as
/// the call-out lamps are): lumens, and how far it reaches, metres.
const GLOW_LUMENS: f32 = 40_000.0;
const GLOW_RANGE_M: f32 = 4.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ItemsShown>()
        .add_systems(Update, place_items.run_if(resource_changed::<ClientWorld>))
        .add_systems(Update, (follow_items.in_set(ViewSet::Follow), place_timers.in_set(ViewSet::Overlay)));
}

/// What the items show this frame: whether at all, and for each item of
/// the map, the seconds until it is back (none: it is there).
#[derive(Resource, Default, Debug)]
struct ItemsShown {
    shown: bool,
    back_in_s: Vec<Option<f32>>,
}

/// The items' meshes, their rings among them, for the map the client world holds.
#[derive(Component)]
struct ItemsRoot;

/// An item's model (its parts are children), hovering over the spot.
#[derive(Component)]
struct Hover {
    item: usize,
    phase: f32,
}

/// The ring on the floor of a taken item's spot.
#[derive(Component)]
struct TakenRing {
    item: usize,
}

/// A taken item's name and seconds, over its spot (a UI text; its child
/// span holds the seconds).
#[derive(Component)]
struct ItemTimer {
    item: usize,
    kind: ItemKind,
    spot: Vec3,
}

/// The seconds until an item of `kind` taken at `taken_tick` is back, at
/// the server time `now_ticks`; none if it is back by then.
fn back_in_s(kind: ItemKind, taken_tick: u32, now_ticks: f64, rate: TickRate) -> Option<f32> {
    let back = taken_tick.wrapping_add(rate.ticks_in(kind.respawn_s()));
    let whole = now_ticks.floor();
    // The server's ticks count round a u32, as the slot's tick does.
    let now = whole.rem_euclid(f64::from(u32::MAX) + 1.0) as u32;
    let left = f64::from(tick_diff(back, now)) - (now_ticks - whole);
    // Never more than the whole respawn (a pickup of ours predicted ahead
    // of the server's clock).
    (left > 0.0).then(|| (rate.ticks_to_s(left) as f32).min(kind.respawn_s()))
}

/// The shared meshes and materials of the models: built once a map.
struct ModelLooks {
    cube: Handle<Mesh>,
    sphere: Handle<Mesh>,
    white: Handle<StandardMaterial>,
    dark: Handle<StandardMaterial>,
    /// Each kind's own: its body, its see-through shell (mega, quad), its ring.
    bodies: HashMap<ItemKind, Handle<StandardMaterial>>,
    shells: HashMap<ItemKind, Handle<StandardMaterial>>,
    rings: HashMap<ItemKind, Handle<StandardMaterial>>,
    ring: Handle<Mesh>,
}

impl ModelLooks {
    fn new(meshes: &mut Assets<Mesh>, materials: &mut Assets<StandardMaterial>) -> Self {
        let mut ring = Annulus::new(RING_M.0, RING_M.1).mesh().resolution(40).build();
        // The annulus faces +Z: laid down, it faces up.
        ring.rotate_by(Quat::from_rotation_x(-std::f32::consts::FRAC_PI_2));
        let mut bodies = HashMap::new();
        let mut shells = HashMap::new();
        let mut rings = HashMap::new();
        for kind in ItemKind::ALL {
            let color = item_color(kind);
            let linear = LinearRgba::from(color);
            let (glow, metallic) = match kind {
                // The quad shines of itself; armour is metal.
                ItemKind::QuadDamage => (1.6, 0.1),
                ItemKind::YellowArmour | ItemKind::RedArmour => (0.25, 0.6),
                _ => (0.45, 0.0),
            };
            bodies.insert(
                kind,
                materials.add(StandardMaterial {
                    base_color: color,
                    emissive: linear * glow,
                    perceptual_roughness: 0.35,
                    metallic,
                    ..default()
                }),
            );
            shells.insert(
                kind,
                materials.add(StandardMaterial {
                    base_color: color.lighter(0.1).with_alpha(0.4),
                    alpha_mode: AlphaMode::Blend,
                    unlit: true,
                    ..default()
                }),
            );
            rings.insert(
                kind,
                materials.add(StandardMaterial {
                    base_color: color.with_alpha(RING_ALPHA),
                    alpha_mode: AlphaMode::Blend,
                    unlit: true,
                    ..default()
                }),
            );
        }
        Self {
            cube: meshes.add(Cuboid::new(1.0, 1.0, 1.0)),
            sphere: meshes.add(Sphere::new(1.0).mesh().uv(24, 16)),
            white: materials.add(StandardMaterial {
                base_color: Color::srgb(0.95, 0.95, 0.95),
                emissive: LinearRgba::rgb(0.3, 0.3, 0.3),
                perceptual_roughness: 0.5,
                ..default()
            }),
            dark: materials.add(StandardMaterial {
                base_color: Color::srgb(0.08, 0.08, 0.1),
                perceptual_roughness: 0.4,
                metallic: 0.5,
                ..default()
            }),
            bodies,
            shells,
            rings,
            ring: meshes.add(ring),
        }
    }

    fn body(&self, kind: ItemKind) -> Handle<StandardMaterial> {
        self.bodies.get(&kind).cloned().unwrap_or_else(|| self.white.clone())
    }

    fn shell(&self, kind: ItemKind) -> Handle<StandardMaterial> {
        self.shells.get(&kind).cloned().unwrap_or_else(|| self.white.clone())
    }

    fn ring_material(&self, kind: ItemKind) -> Handle<StandardMaterial> {
        self.rings.get(&kind).cloned().unwrap_or_else(|| self.white.clone())
    }
}

/// One part of a model: `mesh` scaled to `size`, at `at` in the model, turned by `rotation`.
fn part(
    commands: &mut Commands,
    parent: Entity,
    (mesh, material): (&Handle<Mesh>, Handle<StandardMaterial>),
    at: Vec3,
    size: Vec3,
    rotation: Quat,
) -> Entity {
    commands
        .spawn((
            Mesh3d(mesh.clone()),
            MeshMaterial3d(material),
            Transform { translation: at, rotation, scale: size },
            ChildOf(parent),
        ))
        .id()
}

/// A cross of three bars through one point, `length` long and `thick` across,
/// in `material`: a cross from whichever side it is seen.
fn cross(
    commands: &mut Commands,
    parent: Entity,
    looks: &ModelLooks,
    material: Handle<StandardMaterial>,
    length: f32,
    thick: f32,
) {
    for size in [Vec3::new(length, thick, thick), Vec3::new(thick, length, thick), Vec3::new(thick, thick, length)] {
        part(commands, parent, (&looks.cube, material.clone()), Vec3::ZERO, size, Quat::IDENTITY);
    }
}

/// A light in `kind`'s colour at the model's centre, lit as the quality setting says.
fn glow_light(commands: &mut Commands, parent: Entity, kind: ItemKind) {
    commands.spawn((
        Name::new("item glow"),
        AreaLamp,
        PointLight {
            color: item_color(kind),
            intensity: GLOW_LUMENS,
            range: GLOW_RANGE_M,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::default(),
        Visibility::Hidden,
        ChildOf(parent),
    ));
}

/// The model of an item of `kind`, centred on `hover`.
fn spawn_model(commands: &mut Commands, hover: Entity, kind: ItemKind, looks: &ModelLooks) {
    let body = looks.body(kind);
    match kind {
        ItemKind::Health | ItemKind::LargeHealth => {
            // A white box with a cross of the kind's colour through it.
            let s = if kind == ItemKind::LargeHealth { 1.35 } else { 1.0 };
            part(
                commands,
                hover,
                (&looks.cube, looks.white.clone()),
                Vec3::ZERO,
                Vec3::splat(0.24 * s),
                Quat::IDENTITY,
            );
            cross(commands, hover, looks, body, 0.4 * s, 0.12 * s);
        }
        ItemKind::MegaHealth => {
            // A white cross inside a see-through blue sphere, and its light.
            cross(commands, hover, looks, looks.white.clone(), 0.36, 0.1);
            let shell =
                part(commands, hover, (&looks.sphere, looks.shell(kind)), Vec3::ZERO, Vec3::splat(0.3), Quat::IDENTITY);
            commands.entity(shell).insert(NotShadowCaster);
            // A small solid core, so the sphere reads as blue from afar.
            part(commands, hover, (&looks.sphere, body), Vec3::ZERO, Vec3::splat(0.12), Quat::IDENTITY);
            glow_light(commands, hover, kind);
        }
        ItemKind::YellowArmour | ItemKind::RedArmour => {
            // A chest plate with shoulders and a belt, a dark seam down its
            // front and back: a torso, seen turning.
            let parts = [
                (Vec3::new(0.0, 0.03, 0.0), Vec3::new(0.5, 0.46, 0.2)),
                (Vec3::new(0.29, 0.2, 0.0), Vec3::new(0.2, 0.1, 0.26)),
                (Vec3::new(-0.29, 0.2, 0.0), Vec3::new(0.2, 0.1, 0.26)),
                (Vec3::new(0.0, -0.27, 0.0), Vec3::new(0.38, 0.12, 0.18)),
            ];
            for (at, size) in parts {
                part(commands, hover, (&looks.cube, body.clone()), at, size, Quat::IDENTITY);
            }
            for z in [-0.102, 0.102] {
                let seam = (&looks.cube, looks.dark.clone());
                part(commands, hover, seam, Vec3::new(0.0, 0.03, z), Vec3::new(0.06, 0.38, 0.01), Quat::IDENTITY);
            }
        }
        ItemKind::QuadDamage => {
            // A glowing cube on one corner, in a see-through one, and its light.
            let corner = Quat::from_rotation_x(0.6155) * Quat::from_rotation_z(FRAC_PI_4);
            part(commands, hover, (&looks.cube, body), Vec3::ZERO, Vec3::splat(0.3), corner);
            let shell = part(commands, hover, (&looks.cube, looks.shell(kind)), Vec3::ZERO, Vec3::splat(0.46), corner);
            commands.entity(shell).insert(NotShadowCaster);
            glow_light(commands, hover, kind);
        }
    }
}

fn place_items(
    mut commands: Commands,
    world: Res<ClientWorld>,
    built: Query<Entity, Or<(With<ItemsRoot>, With<ItemTimer>)>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for old in &built {
        commands.entity(old).despawn();
    }
    let map = world.map();
    // Hidden until `follow_items` knows the server's items are these.
    let root = commands.spawn((Name::new("items"), ItemsRoot, Transform::default(), Visibility::Hidden)).id();
    if map.items.is_empty() {
        return;
    }
    let looks = ModelLooks::new(&mut meshes, &mut materials);
    for (i, item) in map.items.iter().enumerate() {
        let spot = commands
            .spawn((
                Name::new(item.kind.name()),
                Transform::from_translation(item.pos),
                Visibility::default(),
                ChildOf(root),
            ))
            .id();
        let phase = (i as f32 * PHASE_STEP_RAD) % TAU;
        let hover = commands
            .spawn((
                Hover { item: i, phase },
                Transform::from_xyz(0.0, HOVER_M, 0.0),
                Visibility::default(),
                ChildOf(spot),
            ))
            .id();
        spawn_model(&mut commands, hover, item.kind, &looks);
        commands.spawn((
            Name::new("taken ring"),
            TakenRing { item: i },
            Mesh3d(looks.ring.clone()),
            MeshMaterial3d(looks.ring_material(item.kind)),
            Transform::from_xyz(0.0, RING_LIFT_M, 0.0),
            Visibility::Hidden,
            NotShadowCaster,
            NotShadowReceiver,
            ChildOf(spot),
        ));
        commands
            .spawn((
                Name::new("item timer"),
                ItemTimer { item: i, kind: item.kind, spot: item.pos },
                overlay_text(format!("{}\n", item.kind.name()), TIMER_NAME_PX, Color::WHITE, 1.5),
                TextLayout::justify(Justify::Center),
                Node { position_type: PositionType::Absolute, ..default() },
                Visibility::Hidden,
            ))
            .with_child((
                TextSpan::new(""),
                TextFont { font_size: FontSize::Px(TIMER_SECONDS_PX), ..default() },
                TextColor(Color::WHITE),
            ));
    }
}

/// Whether items are shown (in a game, the server's list the map's), and
/// each one's state; the models turned and bobbed, the taken ones hidden
/// and their rings shown.
fn follow_items(
    (time, real): (Res<Time>, Res<Time<Real>>),
    world: Res<ClientWorld>,
    session: Option<Res<State<Session>>>,
    // Absent without the client (a demo's playback has its own list).
    (table, roster, clock, stats): (
        Option<Res<ItemTable>>,
        Option<Res<Roster>>,
        Option<Res<ServerClock>>,
        Option<Res<PickupStats>>,
    ),
    playback: Option<Res<PlaybackItems>>,
    mut shown: ResMut<ItemsShown>,
    mut roots: Query<&mut Visibility, With<ItemsRoot>>,
    mut hovers: Query<(&Hover, &mut Transform, &mut Visibility), Without<ItemsRoot>>,
    mut rings: Query<(&TakenRing, &mut Transform, &mut Visibility), (Without<Hover>, Without<ItemsRoot>)>,
) {
    let map = world.map();
    let in_game = session.is_some_and(|s| *s.get() == Session::InGame);
    // In a game, the newest snapshot's list and the server's clock; in a
    // demo's playback, the recording's list at the playhead.
    let source = match (table, roster, playback) {
        (_, _, Some(p)) if !map.items.is_empty() && p.slots.len() == map.items.len() => {
            Some((p.slots.clone(), p.rate, Some(p.now_tick), None, None))
        }
        (Some(table), Some(roster), _) if in_game && !map.items.is_empty() && table.slots.len() == map.items.len() => {
            let rate = roster.tick_rate();
            // The server's clock now (the newest snapshot's tick before it has one).
            let now = clock
                .as_ref()
                .and_then(|c| c.server_time_s(real.elapsed_secs_f64()))
                .map(|s| rate.s_to_ticks(s))
                .or(table.tick.map(f64::from));
            let render_tick = clock.as_ref().filter(|c| c.started()).map(|c| c.render_tick);
            Some((table.slots.clone(), rate, now, roster.local_id, render_tick))
        }
        _ => None,
    };
    let (slots, rate, now_ticks, me, render_tick) = match source {
        Some(source) => source,
        _ => {
            shown.shown = false;
            shown.back_in_s.clear();
            for mut visibility in &mut roots {
                visibility.set_if_neq(Visibility::Hidden);
            }
            return;
        }
    };
    for mut visibility in &mut roots {
        visibility.set_if_neq(Visibility::Inherited);
    }
    let pending = stats.as_ref().map(|s| s.pending.as_slice()).unwrap_or_default();
    shown.shown = true;
    shown.back_in_s = map
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let now = now_ticks?;
            // As the server lists it, or as we took it (predicted, not yet
            // judged): whichever keeps it away longer.
            // Someone else's pickup shows when their body, drawn the
            // interpolation delay behind, gets there.
            let listed = slots
                .get(i)
                .and_then(|slot| slot.taken)
                .filter(|t| Some(t.by) == me || render_tick.is_none_or(|r| r >= f64::from(t.tick)))
                .map(|t| t.tick);
            let ours = pending.iter().filter(|p| p.item == i).map(|p| p.tick);
            listed.into_iter().chain(ours).filter_map(|tick| back_in_s(item.kind, tick, now, rate)).reduce(f32::max)
        })
        .collect();
    let t = time.elapsed_secs();
    for (hover, mut transform, mut visibility) in &mut hovers {
        let there = shown.back_in_s.get(hover.item).is_some_and(Option::is_none);
        visibility.set_if_neq(if there { Visibility::Inherited } else { Visibility::Hidden });
        if there {
            transform.translation.y = HOVER_M + BOB_M * (TAU * BOB_HZ * t + hover.phase).sin();
            transform.rotation = Quat::from_rotation_y(TURN_RAD_PER_S * t + hover.phase);
        }
    }
    for (ring, mut transform, mut visibility) in &mut rings {
        let back = shown.back_in_s.get(ring.item).copied().flatten();
        visibility.set_if_neq(if back.is_some() { Visibility::Inherited } else { Visibility::Hidden });
        let pulse = match back {
            Some(s) if s < SOON_S => 1.0 + SOON_PULSE * (TAU * SOON_PULSE_HZ * t).sin(),
            _ => 1.0,
        };
        transform.scale = Vec3::splat(pulse);
    }
}

/// How opaque a timer is at `distance` metres: full up close, fading to
/// nothing at [`TIMER_RANGE_M`].
fn timer_alpha(distance: f32) -> f32 {
    ((TIMER_RANGE_M - distance) / (TIMER_RANGE_M - TIMER_FULL_M)).clamp(0.0, 1.0)
}

/// The seconds a timer shows: whole, rounded up (it says 1 until the item is back).
fn seconds_shown(back_in_s: f32) -> String {
    format!("{}", back_in_s.ceil().max(1.0) as u32)
}

/// Each taken item's timer over its spot, while the spot (or the timer's
/// place) is in sight and in range; none while the kill-cam shows the past.
fn place_timers(
    shown: Res<ItemsShown>,
    world: Res<ClientWorld>,
    camera: Query<(&Camera, &Transform), With<MainCamera>>,
    kill_cam: Option<Res<KillCamShown>>,
    mut timers: Query<(
        &ItemTimer,
        &mut Node,
        &mut Visibility,
        &ComputedNode,
        &mut TextColor,
        &mut TextShadow,
        Option<&Children>,
    )>,
    mut spans: Query<(&mut TextSpan, &mut TextColor), Without<ItemTimer>>,
) {
    let past = kill_cam.is_some_and(|k| k.playing.is_some());
    let view = camera.single().ok().filter(|_| shown.shown && !past);
    let screen = view.and_then(|(camera, _)| camera.logical_viewport_size());
    for (timer, mut node, mut visibility, computed, mut color, mut shadow, children) in &mut timers {
        let back = shown.back_in_s.get(timer.item).copied().flatten();
        let (Some((camera, transform)), Some(screen), Some(back)) = (view, screen, back) else {
            visibility.set_if_neq(Visibility::Hidden);
            continue;
        };
        // This frame's camera (it has no parent), as the name tags take it.
        let camera_transform = GlobalTransform::from(*transform);
        let eye = camera_transform.translation();
        let anchor = timer.spot + Vec3::Y * TIMER_LIFT_M;
        let distance = anchor.distance(eye);
        let seen = |point: Vec3| {
            let to = point - eye;
            let d = to.length();
            d < 1e-3 || world.cast_ray(eye, to / d, d).is_none()
        };
        let place = camera
            .world_to_viewport(&camera_transform, anchor)
            .ok()
            .filter(|p| p.x >= 0.0 && p.y >= 0.0 && p.x <= screen.x && p.y <= screen.y);
        let Some(point) =
            place.filter(|_| distance < TIMER_RANGE_M && (seen(anchor) || seen(timer.spot + Vec3::Y * HOVER_M)))
        else {
            visibility.set_if_neq(Visibility::Hidden);
            continue;
        };
        let size = computed.size() * computed.inverse_scale_factor();
        node.left = px(point.x - size.x * 0.5);
        node.top = px(point.y - size.y);
        let alpha = timer_alpha(distance);
        let name_color = item_color(timer.kind).mix(&Color::WHITE, 0.3).with_alpha(alpha);
        color.set_if_neq(TextColor(name_color));
        shadow.color = TEXT_SHADOW.with_alpha(TEXT_SHADOW.alpha() * alpha);
        for child in children.into_iter().flatten() {
            if let Ok((mut span, mut span_color)) = spans.get_mut(*child) {
                let text = seconds_shown(back);
                if span.0 != text {
                    span.0 = text;
                }
                span_color.set_if_neq(TextColor(Color::WHITE.with_alpha(alpha)));
            }
        }
        visibility.set_if_neq(Visibility::Inherited);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_item_counts_down_to_its_respawn() {
        let rate = TickRate::new(64);
        // The mega (35 s) taken at tick 1000.
        let left = |now: f64| back_in_s(ItemKind::MegaHealth, 1000, now, rate);
        assert_eq!(left(1000.0), Some(35.0));
        let half = left(1000.0 + 64.0 * 10.5).expect("away");
        assert!((half - 24.5).abs() < 1e-4, "{half}");
        assert_eq!(left(1000.0 + 64.0 * 35.0), None, "back on its tick");
        assert_eq!(left(1000.0 + 64.0 * 100.0), None);
        // Round the u32 the ticks count on.
        let wrapped = back_in_s(ItemKind::RedArmour, u32::MAX - 10, f64::from(u32::MAX) + 1.0 + 5.0, rate);
        let expected = 25.0 - 16.0 / 64.0;
        assert!(wrapped.is_some_and(|s| (s - expected).abs() < 1e-4), "{wrapped:?}");
        assert_eq!(seconds_shown(24.2), "25");
        assert_eq!(seconds_shown(0.01), "1");
    }

    #[test]
    fn timers_fade_with_distance() {
        assert_eq!(timer_alpha(5.0), 1.0);
        assert_eq!(timer_alpha(TIMER_RANGE_M), 0.0);
        assert!(timer_alpha(30.0) > timer_alpha(40.0));
    }
}
