//! The arena as the player sees it: meshes built from the same map data as
//! the collision world, a material per surface kind with a world-aligned
//! metre grid, sunlight with shadows, ambient light, and a sky dome that
//! fades from the fog's colour at the horizon to deep blue overhead, with a
//! glow where the sun is.

use arena_sim::map::{SolidShape, SurfaceKind};
use bevy::asset::RenderAssetUsages;
use bevy::image::{ImageAddressMode, ImageSampler, ImageSamplerDescriptor};
use bevy::light::{CascadeShadowConfig, CascadeShadowConfigBuilder};
use bevy::mesh::VertexAttributeValues;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};

use arena_client::ClientWorld;

/// Sky colour at the horizon, which is also the fog's, so that distant
/// walls fade into the sky.
pub const SKY: Color = Color::srgb(0.62, 0.74, 0.88);
/// Sky colour straight overhead.
const ZENITH: Color = Color::srgb(0.22, 0.42, 0.78);
/// Radius of the sky dome, metres: inside the camera's far plane (500 m) from
/// anywhere in the arena.
const SKY_RADIUS_M: f32 = 400.0;
/// Where the sunlight comes from.
const TO_SUN: Vec3 = Vec3::new(0.45, 0.8, 0.35);
/// Size of one repeat of the grid texture, metres.
const GRID_TILE_M: f32 = 4.0;

pub(crate) fn plugin(app: &mut App) {
    app.insert_resource(ClearColor(SKY))
        .insert_resource(GlobalAmbientLight { color: Color::srgb(0.75, 0.82, 1.0), brightness: 700.0, ..default() })
        .add_systems(Startup, (spawn_arena, spawn_sun, spawn_sky))
        .add_systems(PostStartup, lighten_for_software_rendering);
}

/// With a software renderer (no GPU: a virtual display, a VM), trade the
/// costly parts of the picture for frames: no multisampling, one small
/// shadow cascade. A game at 2 frames a second teaches nothing about netcode.
fn lighten_for_software_rendering(
    adapter: Option<Res<bevy::render::renderer::RenderAdapterInfo>>,
    mut commands: Commands,
    cameras: Query<Entity, With<Camera3d>>,
    mut suns: Query<&mut CascadeShadowConfig, With<DirectionalLight>>,
) {
    // wgpu's `DeviceType` is not re-exported by Bevy; its Debug name is stable.
    let Some(adapter) = adapter else { return };
    if format!("{:?}", adapter.0.device_type) != "Cpu" {
        return;
    }
    info!("software rendering ({}): multisampling off, shadows reduced", adapter.0.name);
    for camera in &cameras {
        commands.entity(camera).insert(Msaa::Off);
    }
    for mut cascades in &mut suns {
        *cascades = CascadeShadowConfigBuilder { num_cascades: 1, maximum_distance: 40.0, ..default() }.build();
    }
    commands.insert_resource(bevy::light::DirectionalLightShadowMap { size: 1024 });
}

fn spawn_arena(
    mut commands: Commands,
    world: Res<ClientWorld>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut images: ResMut<Assets<Image>>,
) {
    let grid = images.add(grid_texture());
    let material = |kind: SurfaceKind| {
        let (color, roughness) = match kind {
            SurfaceKind::Floor => (Color::srgb(0.46, 0.48, 0.5), 0.95),
            SurfaceKind::Wall => (Color::srgb(0.72, 0.66, 0.58), 0.9),
            SurfaceKind::Platform => (Color::srgb(0.36, 0.5, 0.66), 0.7),
            SurfaceKind::Ramp => (Color::srgb(0.42, 0.57, 0.72), 0.7),
            SurfaceKind::Cover => (Color::srgb(0.86, 0.52, 0.2), 0.8),
            SurfaceKind::Pillar => (Color::srgb(0.8, 0.8, 0.82), 0.6),
            SurfaceKind::Trim => (Color::srgb(0.95, 0.8, 0.22), 0.6),
        };
        StandardMaterial {
            base_color: color,
            base_color_texture: Some(grid.clone()),
            perceptual_roughness: roughness,
            reflectance: 0.3,
            ..default()
        }
    };
    let mut by_kind = std::collections::HashMap::new();
    let root = commands.spawn((Name::new("arena"), Transform::default(), Visibility::default())).id();
    for solid in world.map().solids() {
        let handle = by_kind.entry(solid.kind).or_insert_with(|| materials.add(material(solid.kind))).clone();
        let transform = Transform::from_translation(solid.center).with_rotation(solid.rotation);
        let mut mesh = match solid.shape {
            SolidShape::Cuboid { half_extents } => Mesh::from(Cuboid::from_size(half_extents * 2.0)),
            SolidShape::Cylinder { radius, half_height } => {
                Cylinder::new(radius, half_height * 2.0).mesh().resolution(24).build()
            }
        };
        world_grid_uvs(&mut mesh, &transform);
        commands.spawn((
            Name::new(format!("{:?}", solid.kind)),
            Mesh3d(meshes.add(mesh)),
            MeshMaterial3d(handle),
            transform,
            ChildOf(root),
        ));
    }
}

/// Replaces a mesh's UVs with world-space coordinates projected along the
/// face's main axis, so that the grid lines run on across neighbouring
/// solids and one grid square is the same size everywhere.
fn world_grid_uvs(mesh: &mut Mesh, transform: &Transform) {
    let (Some(VertexAttributeValues::Float32x3(positions)), Some(VertexAttributeValues::Float32x3(normals))) =
        (mesh.attribute(Mesh::ATTRIBUTE_POSITION), mesh.attribute(Mesh::ATTRIBUTE_NORMAL))
    else {
        return;
    };
    let uvs: Vec<[f32; 2]> = positions
        .iter()
        .zip(normals)
        .map(|(p, n)| {
            let p = transform.transform_point(Vec3::from(*p)) / GRID_TILE_M;
            let n = (transform.rotation * Vec3::from(*n)).abs();
            if n.y >= n.x && n.y >= n.z {
                [p.x, p.z]
            } else if n.x >= n.z {
                [p.z, -p.y]
            } else {
                [p.x, -p.y]
            }
        })
        .collect();
    mesh.insert_attribute(Mesh::ATTRIBUTE_UV_0, uvs);
}

/// A light tile with fine lines every metre and a stronger line at its edge,
/// repeated: it gives every surface a sense of scale and of speed.
fn grid_texture() -> Image {
    const SIZE: u32 = 256;
    let per_metre = SIZE as f32 / GRID_TILE_M;
    let mut data = Vec::with_capacity((SIZE * SIZE * 4) as usize);
    for y in 0..SIZE {
        for x in 0..SIZE {
            let on_line = |v: u32, every: f32, width: f32| (v as f32 % every) < width;
            let shade: u8 = if on_line(x, SIZE as f32, 3.0) || on_line(y, SIZE as f32, 3.0) {
                150
            } else if on_line(x, per_metre, 1.5) || on_line(y, per_metre, 1.5) {
                205
            } else {
                // A faint irregular mottle so large walls do not look flat.
                let noise = ((x.wrapping_mul(73) ^ y.wrapping_mul(151)).wrapping_mul(2654435761) >> 28) as u8;
                238 - noise
            };
            data.extend_from_slice(&[shade, shade, shade, 255]);
        }
    }
    let mut image = Image::new(
        Extent3d { width: SIZE, height: SIZE, depth_or_array_layers: 1 },
        TextureDimension::D2,
        data.clone(),
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    // Mipmaps, box-filtered, so the grid fades evenly into the distance
    // instead of shimmering.
    let mut levels = data_levels(&data, SIZE);
    image.texture_descriptor.mip_level_count = levels.len() as u32;
    image.data = Some(levels.drain(..).flatten().collect());
    image.sampler = ImageSampler::Descriptor(ImageSamplerDescriptor {
        address_mode_u: ImageAddressMode::Repeat,
        address_mode_v: ImageAddressMode::Repeat,
        anisotropy_clamp: 8,
        ..ImageSamplerDescriptor::linear()
    });
    image
}

/// The full mip chain of a square RGBA8 image, level 0 first.
fn data_levels(level0: &[u8], size: u32) -> Vec<Vec<u8>> {
    let mut levels = vec![level0.to_vec()];
    let mut size = size as usize;
    while size > 1 {
        let previous = levels.last().map(Vec::as_slice).unwrap_or_default();
        let half = size / 2;
        let mut next = Vec::with_capacity(half * half * 4);
        for y in 0..half {
            for x in 0..half {
                for channel in 0..4 {
                    let at =
                        |dx: usize, dy: usize| u32::from(previous[((2 * y + dy) * size + 2 * x + dx) * 4 + channel]);
                    next.push(((at(0, 0) + at(1, 0) + at(0, 1) + at(1, 1) + 2) / 4) as u8);
                }
            }
        }
        levels.push(next);
        size = half;
    }
    levels
}

fn spawn_sun(mut commands: Commands) {
    commands.spawn((
        Name::new("sun"),
        DirectionalLight { illuminance: 9_000.0, shadow_maps_enabled: true, ..default() },
        Transform::from_xyz(0.0, 0.0, 0.0).looking_to(-TO_SUN, Vec3::Y),
        CascadeShadowConfigBuilder { first_cascade_far_bound: 12.0, maximum_distance: 90.0, ..default() }.build(),
    ));
    // A weak, shadowless fill from the other side, like light bounced off the
    // sky, so that faces turned from the sun still show their shape.
    commands.spawn((
        Name::new("sky fill"),
        DirectionalLight {
            illuminance: 2_000.0,
            shadow_maps_enabled: false,
            color: Color::srgb(0.8, 0.87, 1.0),
            ..default()
        },
        Transform::default().looking_to(Vec3::new(0.5, -0.6, 0.6), Vec3::Y),
    ));
}

/// A large sphere around the arena, coloured per vertex: horizon haze, blue
/// overhead, a warm glow around the sun. Unlit and outside the fog.
fn spawn_sky(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let mut mesh = Sphere::new(SKY_RADIUS_M).mesh().uv(48, 24);
    let Some(VertexAttributeValues::Float32x3(positions)) = mesh.attribute(Mesh::ATTRIBUTE_POSITION) else { return };
    let (horizon, zenith) = (SKY.to_linear(), ZENITH.to_linear());
    let sun = TO_SUN.normalize();
    let glow = LinearRgba::rgb(1.0, 0.85, 0.6);
    let colors: Vec<[f32; 4]> = positions
        .iter()
        .map(|p| {
            let dir = Vec3::from(*p).normalize_or(Vec3::Y);
            // Below the horizon: the horizon's colour (hidden by the walls anyway).
            let up = dir.y.max(0.0).powf(0.6);
            let mut c = horizon * (1.0 - up) + zenith * up;
            let toward_sun = dir.dot(sun).max(0.0);
            c += glow * (0.5 * toward_sun.powi(48) + 0.15 * toward_sun.powi(6));
            [c.red, c.green, c.blue, 1.0]
        })
        .collect();
    mesh.insert_attribute(Mesh::ATTRIBUTE_COLOR, colors);
    commands.spawn((
        Name::new("sky"),
        Mesh3d(meshes.add(mesh)),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::WHITE,
            unlit: true,
            fog_enabled: false,
            // Seen from inside.
            cull_mode: None,
            ..default()
        })),
        Transform::default(),
        bevy::light::NotShadowCaster,
        bevy::light::NotShadowReceiver,
    ));
}
