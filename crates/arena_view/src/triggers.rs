//! The map's jump pads and teleporters made visible, from the same boxes the
//! movement tests bodies against: a pad as a glowing plate on its box's
//! floor, chevrons running across it the way it throws and rings rising off
//! it; a teleporter as a glowing frame round a shimmering sheet across its
//! entry (a plate, for an entry lying flat), and a ring on the floor where
//! it puts the player, with a chevron the way they will face. Built again
//! when another map comes, so a map with neither shows nothing.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use arena_client::ClientWorld;
use arena_sim::map::{JumpPadDef, TeleporterDef};
use bevy::light::{NotShadowCaster, NotShadowReceiver};
use bevy::prelude::*;

use crate::looks::glow;
use crate::vocabulary::ViewSet;

/// Jump pads' colour (sRGB): cyan, the colour of "up".
const PAD_RGB: [f32; 3] = [0.2, 0.9, 1.0];
/// Teleporters' colour (sRGB): magenta, apart from every item's.
const TELEPORTER_RGB: [f32; 3] = [0.95, 0.35, 0.9];
/// Thickness of a plate, metres: it lies on the floor at the box's bottom.
const PLATE_M: f32 = 0.05;
/// How far above a plate its chevrons and rings lie (none flickers into
/// it), metres.
const LIFT_M: f32 = 0.015;
/// A chevron's arms: how thick (flat) and how wide, metres.
const CHEVRON_THICK_M: f32 = 0.02;
const CHEVRON_WIDTH_M: f32 = 0.12;
/// Longest arm a chevron has, metres (on a large pad).
const MAX_ARM_M: f32 = 1.0;
/// Space between a pad's chevrons along the throw, metres, and how fast they
/// run along it, metres per second.
const CHEVRON_GAP_M: f32 = 0.8;
const CHEVRON_SPEED_MPS: f32 = 0.9;
/// Most chevrons on one pad.
const MAX_CHEVRONS: usize = 5;
/// Slower across than this, a pad throws straight up: no chevrons, m/s.
const UPWARD_ONLY_MPS: f32 = 0.5;
/// A pad's rising ring: how high it climbs while it shrinks away (metres),
/// how many rise a second, and its width (metres).
const RING_RISE_M: f32 = 1.4;
const RING_HZ: f32 = 0.8;
const RING_WIDTH_M: f32 = 0.07;
/// A teleporter's frame: bars this thick, metres.
const FRAME_M: f32 = 0.08;
/// How often a teleporter's sheet shimmers, Hz, and its opacity between.
const SHIMMER_HZ: f32 = 0.7;
const SHEET_ALPHA: (f32, f32) = (0.18, 0.42);
/// A destination's ring, inner and outer radius, metres (about a body's width).
const DEST_RING_M: (f32, f32) = (0.42, 0.52);
/// A destination's chevron's arm, metres.
const DEST_ARM_M: f32 = 0.3;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, build_triggers.run_if(resource_changed::<ClientWorld>))
        .add_systems(Update, animate_triggers.in_set(ViewSet::Follow));
}

/// The pads and teleporters of the map the client world holds.
#[derive(Component)]
struct TriggerMeshes;

/// A chevron running across a pad: along `dir` from the plate's centre
/// `centre`, over `span_m` metres, starting `offset_m` into its run.
#[derive(Component)]
struct RunningChevron {
    centre: Vec3,
    dir: Vec3,
    span_m: f32,
    /// Its share of the run it starts at, 0 to 1.
    offset: f32,
}

/// A ring rising off a pad from `base`, `phase` (0 to 1) into its climb.
#[derive(Component)]
struct RisingRing {
    base: Vec3,
    phase: f32,
}

/// The teleporters' sheets' one material, whose opacity shimmers.
#[derive(Resource)]
struct SheetMaterial(Handle<StandardMaterial>);

fn rgb(c: [f32; 3]) -> Color {
    Color::srgb(c[0], c[1], c[2])
}

/// The height of the floor a box stands on: the first surface below its
/// top within the box, or its bottom (a box sunk into the floor, or one
/// whose top is inside a solid).
fn floor_under(world: &ClientWorld, center: Vec3, size: Vec3) -> f32 {
    let top = center.y + size.y * 0.5;
    let bottom = center.y - size.y * 0.5;
    match world.cast_ray(Vec3::new(center.x, top, center.z), Vec3::NEG_Y, size.y) {
        Some(toi) if toi > 0.0 => (top - toi).max(bottom),
        _ => bottom,
    }
}

/// The materials and meshes every pad and teleporter shares.
struct Looks {
    pad_plate: Handle<StandardMaterial>,
    pad_glow: Handle<StandardMaterial>,
    teleporter_plate: Handle<StandardMaterial>,
    teleporter_glow: Handle<StandardMaterial>,
    sheet: Handle<StandardMaterial>,
}

impl Looks {
    fn new(materials: &mut Assets<StandardMaterial>) -> Self {
        // A plate is lit (it lies in the scene's light and shadow) but
        // glows a little of its colour, so that it reads as a pad in shade.
        let plate = |c: [f32; 3]| StandardMaterial {
            base_color: rgb(c).darker(0.35),
            emissive: LinearRgba::from(rgb(c)) * 0.6,
            perceptual_roughness: 0.35,
            metallic: 0.3,
            ..default()
        };
        let [r, g, b] = TELEPORTER_RGB;
        Self {
            pad_plate: materials.add(plate(PAD_RGB)),
            pad_glow: materials.add(glow(PAD_RGB[0], PAD_RGB[1], PAD_RGB[2], 2.0)),
            teleporter_plate: materials.add(plate(TELEPORTER_RGB)),
            teleporter_glow: materials.add(glow(r, g, b, 2.0)),
            sheet: materials.add(StandardMaterial {
                base_color: rgb(TELEPORTER_RGB).with_alpha(SHEET_ALPHA.1),
                emissive: LinearRgba::rgb(r, g, b),
                alpha_mode: AlphaMode::Blend,
                unlit: true,
                // Seen from both sides: a body walks through it either way.
                cull_mode: None,
                double_sided: true,
                ..default()
            }),
        }
    }
}

fn build_triggers(
    mut commands: Commands,
    world: Res<ClientWorld>,
    built: Query<Entity, With<TriggerMeshes>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for old in &built {
        commands.entity(old).despawn();
    }
    let map = world.map();
    let root = commands
        .spawn((Name::new("pads and teleporters"), TriggerMeshes, Transform::default(), Visibility::default()))
        .id();
    let looks = Looks::new(&mut materials);
    for (i, pad) in map.jump_pads.iter().enumerate() {
        let floor = floor_under(&world, pad.center, pad.size);
        spawn_pad(&mut commands, root, &mut meshes, &looks, pad, floor, i);
    }
    for teleporter in &map.teleporters {
        let floor = floor_under(&world, teleporter.center, teleporter.size);
        spawn_teleporter(&mut commands, root, &mut meshes, &looks, teleporter, floor);
    }
    commands.insert_resource(SheetMaterial(looks.sheet));
}

/// A plate `size` across (x, z) on the floor at `floor`, centred under `center`.
fn spawn_plate(
    commands: &mut Commands,
    root: Entity,
    meshes: &mut Assets<Mesh>,
    material: &Handle<StandardMaterial>,
    (center, size, floor): (Vec3, Vec3, f32),
) {
    commands.spawn((
        Name::new("plate"),
        Mesh3d(meshes.add(Cuboid::new(size.x, PLATE_M, size.z))),
        MeshMaterial3d(material.clone()),
        Transform::from_xyz(center.x, floor + PLATE_M * 0.5, center.z),
        NotShadowCaster,
        ChildOf(root),
    ));
}

/// A flat ring from `inner_m` to `outer_m` out, lying face up.
fn flat_ring(meshes: &mut Assets<Mesh>, inner_m: f32, outer_m: f32) -> Handle<Mesh> {
    let mut mesh = Annulus::new(inner_m, outer_m).mesh().resolution(40).build();
    // The annulus faces +Z: laid down, it faces up.
    mesh.rotate_by(Quat::from_rotation_x(-FRAC_PI_2));
    meshes.add(mesh)
}

/// A chevron's two arms under `parent`, whose -Z is the way it points: each
/// arm `arm_m` long, meeting at the tip, the chevron centred on the parent.
fn spawn_chevron_arms(
    commands: &mut Commands,
    parent: Entity,
    arm: &Handle<Mesh>,
    material: &Handle<StandardMaterial>,
    arm_m: f32,
) {
    let depth = arm_m * FRAC_PI_4.cos();
    let tip = Vec3::new(0.0, 0.0, -depth * 0.5);
    for side in [1.0f32, -1.0] {
        // The arm's length lies along its own Z; turned a quarter of a right
        // angle either way, it runs from the tip back and out.
        let rotation = Quat::from_rotation_y(side * FRAC_PI_4);
        commands.spawn((
            Mesh3d(arm.clone()),
            MeshMaterial3d(material.clone()),
            Transform::from_translation(tip + rotation * Vec3::Z * arm_m * 0.5).with_rotation(rotation),
            NotShadowCaster,
            NotShadowReceiver,
            ChildOf(parent),
        ));
    }
}

fn spawn_pad(
    commands: &mut Commands,
    root: Entity,
    meshes: &mut Assets<Mesh>,
    looks: &Looks,
    pad: &JumpPadDef,
    floor: f32,
    index: usize,
) {
    spawn_plate(commands, root, meshes, &looks.pad_plate, (pad.center, pad.size, floor));
    let top = Vec3::new(pad.center.x, floor + PLATE_M + LIFT_M, pad.center.z);
    let small_side = pad.size.x.min(pad.size.z);
    // Rings rising off it: a pad throws up.
    let radius = (small_side * 0.4).clamp(0.25, 2.0);
    let ring = flat_ring(meshes, radius - RING_WIDTH_M, radius);
    for phase in [0.0, 0.5] {
        commands.spawn((
            Name::new("pad ring"),
            Mesh3d(ring.clone()),
            MeshMaterial3d(looks.pad_glow.clone()),
            Transform::from_translation(top),
            RisingRing { base: top, phase },
            NotShadowCaster,
            NotShadowReceiver,
            ChildOf(root),
        ));
    }
    let across = Vec3::new(pad.launch.x, 0.0, pad.launch.z);
    if across.length() < UPWARD_ONLY_MPS {
        return;
    }
    let dir = across.normalize();
    // The pad's extent along the throw and across it (the box is axis-aligned).
    let along = dir.x.abs() * pad.size.x + dir.z.abs() * pad.size.z;
    let sideways = dir.z.abs() * pad.size.x + dir.x.abs() * pad.size.z;
    // Arms that keep the chevron within the pad's width and length.
    let arm_m = (0.8 * sideways / (2.0 * FRAC_PI_4.sin())).min(0.5 * along).clamp(0.15, MAX_ARM_M);
    let depth = arm_m * FRAC_PI_4.cos() + CHEVRON_WIDTH_M;
    let span_m = (along - depth - 0.2).max(0.0);
    let count = ((span_m / CHEVRON_GAP_M).floor() as usize).clamp(1, MAX_CHEVRONS);
    let arm = meshes.add(Cuboid::new(CHEVRON_WIDTH_M, CHEVRON_THICK_M, arm_m));
    for k in 0..count {
        let chevron = commands
            .spawn((
                Name::new(format!("pad {index} chevron")),
                RunningChevron { centre: top, dir, span_m, offset: k as f32 / count as f32 },
                Transform::from_translation(top).looking_to(dir, Vec3::Y),
                Visibility::default(),
                ChildOf(root),
            ))
            .id();
        spawn_chevron_arms(commands, chevron, &arm, &looks.pad_glow, arm_m);
    }
}

fn spawn_teleporter(
    commands: &mut Commands,
    root: Entity,
    meshes: &mut Assets<Mesh>,
    looks: &Looks,
    teleporter: &TeleporterDef,
    floor: f32,
) {
    let (center, size) = (teleporter.center, teleporter.size);
    if size.y <= size.x.min(size.z) {
        // Lying flat (a floor teleporter): a plate, and rings rising off it.
        spawn_plate(commands, root, meshes, &looks.teleporter_plate, (center, size, floor));
        let top = Vec3::new(center.x, floor + PLATE_M + LIFT_M, center.z);
        let radius = (size.x.min(size.z) * 0.4).clamp(0.25, 2.0);
        let ring = flat_ring(meshes, radius - RING_WIDTH_M, radius);
        for phase in [0.0, 0.33, 0.67] {
            commands.spawn((
                Name::new("teleporter ring"),
                Mesh3d(ring.clone()),
                MeshMaterial3d(looks.teleporter_glow.clone()),
                Transform::from_translation(top),
                RisingRing { base: top, phase },
                NotShadowCaster,
                NotShadowReceiver,
                ChildOf(root),
            ));
        }
    } else {
        // Standing: walked through across its thin side. The sheet spans
        // the wide side, from the floor to the box's top.
        let wide_x = size.x >= size.z;
        let width = size.x.max(size.z);
        let top = center.y + size.y * 0.5;
        let height = (top - floor).max(0.1);
        let middle = Vec3::new(center.x, floor + height * 0.5, center.z);
        // The rectangle and the bars are made along X: turned a right angle
        // for a sheet along Z.
        let turn = if wide_x { Quat::IDENTITY } else { Quat::from_rotation_y(FRAC_PI_2) };
        commands.spawn((
            Name::new("teleporter sheet"),
            Mesh3d(meshes.add(Rectangle::new(width, height))),
            MeshMaterial3d(looks.sheet.clone()),
            Transform::from_translation(middle).with_rotation(turn),
            NotShadowCaster,
            NotShadowReceiver,
            ChildOf(root),
        ));
        let post = meshes.add(Cuboid::new(FRAME_M, height, FRAME_M));
        let beam = meshes.add(Cuboid::new(width + FRAME_M, FRAME_M, FRAME_M));
        let side = turn * Vec3::X * (width * 0.5);
        let bars = [
            (post.clone(), middle + side),
            (post, middle - side),
            (beam.clone(), middle + Vec3::Y * (height * 0.5)),
            (beam, middle - Vec3::Y * (height * 0.5 - FRAME_M * 0.5)),
        ];
        for (mesh, at) in bars {
            commands.spawn((
                Name::new("teleporter frame"),
                Mesh3d(mesh),
                MeshMaterial3d(looks.teleporter_glow.clone()),
                Transform::from_translation(at).with_rotation(turn),
                NotShadowReceiver,
                ChildOf(root),
            ));
        }
    }
    // The way out: a ring where the feet come out, a chevron the way they face.
    let dest = teleporter.dest + Vec3::Y * LIFT_M * 2.0;
    commands.spawn((
        Name::new("teleporter destination"),
        Mesh3d(flat_ring(meshes, DEST_RING_M.0, DEST_RING_M.1)),
        MeshMaterial3d(looks.teleporter_glow.clone()),
        Transform::from_translation(dest),
        NotShadowCaster,
        NotShadowReceiver,
        ChildOf(root),
    ));
    let facing = arena_sim::player::view_forward(teleporter.yaw(), 0.0);
    let chevron = commands
        .spawn((
            Name::new("teleporter exit facing"),
            Transform::from_translation(dest).looking_to(facing, Vec3::Y),
            Visibility::default(),
            ChildOf(root),
        ))
        .id();
    let arm = meshes.add(Cuboid::new(CHEVRON_WIDTH_M * 0.7, CHEVRON_THICK_M, DEST_ARM_M));
    spawn_chevron_arms(commands, chevron, &arm, &looks.teleporter_glow, DEST_ARM_M);
}

/// Where a chevron is `u` (0 to 1) into its run, and how large: it grows
/// from nothing at the run's start and shrinks to nothing at its end, so
/// that it wraps round unseen.
fn chevron_at(chevron: &RunningChevron, u: f32) -> (Vec3, f32) {
    let along = (u - 0.5) * chevron.span_m;
    (chevron.centre + chevron.dir * along, (PI * u).sin())
}

fn animate_triggers(
    time: Res<Time>,
    world: Option<Res<arena_client::ClientWorld>>,
    sheet: Option<Res<SheetMaterial>>,
    mut chevrons: Query<(&RunningChevron, &mut Transform), Without<RisingRing>>,
    mut rings: Query<(&RisingRing, &mut Transform), Without<RunningChevron>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let t = time.elapsed_secs();
    for (chevron, mut transform) in &mut chevrons {
        let run_s = chevron.span_m.max(CHEVRON_GAP_M) / CHEVRON_SPEED_MPS;
        let u = (chevron.offset + t / run_s).fract();
        let (at, scale) = chevron_at(chevron, u);
        transform.translation = at;
        transform.scale = Vec3::splat(scale.max(1e-3));
    }
    for (ring, mut transform) in &mut rings {
        let u = (ring.phase + t * RING_HZ).fract();
        transform.translation = ring.base + Vec3::Y * (u * RING_RISE_M);
        transform.scale = Vec3::splat((1.0 - u).max(1e-3));
    }
    // Only a map with teleporters has sheets to shimmer (a changed
    // material is prepared again, every frame it changes).
    let sheets = world.is_some_and(|w| !w.map().teleporters.is_empty());
    if let Some(sheet) = sheet.filter(|_| sheets)
        && let Some(mut material) = materials.get_mut(&sheet.0)
    {
        let pulse = 0.5 + 0.5 * (t * SHIMMER_HZ * std::f32::consts::TAU).sin();
        material.base_color.set_alpha(SHEET_ALPHA.0 + (SHEET_ALPHA.1 - SHEET_ALPHA.0) * pulse);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chevrons_grow_in_run_across_and_shrink_away() {
        let chevron = RunningChevron { centre: Vec3::ZERO, dir: Vec3::NEG_Z, span_m: 2.0, offset: 0.0 };
        let (start, small) = chevron_at(&chevron, 0.0);
        let (middle, full) = chevron_at(&chevron, 0.5);
        let (end, _) = chevron_at(&chevron, 1.0);
        assert_eq!((start, middle, end), (Vec3::new(0.0, 0.0, 1.0), Vec3::ZERO, Vec3::new(0.0, 0.0, -1.0)));
        assert!(small < 1e-6 && (full - 1.0).abs() < 1e-6, "{small} {full}");
    }
}
