//! The arena as the player sees it: meshes built from the same map data as
//! the collision world, a material per surface kind (its texture from
//! `surfaces`, laid in world metres or once a face), sunlight with shadows
//! (how good is the quality setting's), ambient light, and a sky dome that
//! fades from the fog's colour at the horizon to deep blue overhead, with a
//! glow where the sun is.

use arena_sim::map::SolidShape;
use bevy::light::CascadeShadowConfigBuilder;
use bevy::mesh::VertexAttributeValues;
use bevy::prelude::*;

use arena_client::ClientWorld;

use crate::surfaces::{Mapping, TILE_M, surface};

/// Sky colour at the horizon, which is also the fog's, so that distant
/// walls fade into the sky.
pub(crate) const SKY: Color = Color::srgb(0.62, 0.74, 0.88);
/// Sky colour straight overhead.
const ZENITH: Color = Color::srgb(0.22, 0.42, 0.78);
/// Radius of the sky dome, metres: inside the camera's far plane (500 m) from
/// anywhere in the arena.
const SKY_RADIUS_M: f32 = 400.0;
/// Where the sunlight comes from.
const TO_SUN: Vec3 = Vec3::new(0.45, 0.8, 0.35);
/// Largest size (metres, along any side) of a cover block drawn as a crate.
const CRATE_MAX_M: f32 = 3.0;

/// The sunlight (the one light that casts shadows).
#[derive(Component)]
pub(crate) struct Sun;

/// The ambient light's brightness, and the sky fill's illuminance (lux).
const AMBIENT_BRIGHTNESS: f32 = 700.0;
const SKY_FILL_LUX: f32 = 2_000.0;
/// WebGL 2 draws one directional light (the sun): in a browser the sky
/// fill's share goes to the ambient light instead, about what a diffuse
/// surface gets from it on average (its illuminance over pi).
const FILL_IN_AMBIENT: bool = cfg!(target_arch = "wasm32");

pub(crate) fn plugin(app: &mut App) {
    let brightness = AMBIENT_BRIGHTNESS + if FILL_IN_AMBIENT { SKY_FILL_LUX / std::f32::consts::PI } else { 0.0 };
    app.insert_resource(ClearColor(SKY))
        .insert_resource(GlobalAmbientLight { color: Color::srgb(0.75, 0.82, 1.0), brightness, ..default() })
        .add_systems(Startup, (spawn_sun, spawn_sky))
        // At start, and again when a server's welcome brings another map.
        .add_systems(Update, spawn_arena.run_if(resource_changed::<ClientWorld>));
}

/// The arena's meshes, built from the map the client world holds.
#[derive(Component)]
struct ArenaMeshes;

fn spawn_arena(
    mut commands: Commands,
    world: Res<ClientWorld>,
    built: Query<Entity, With<ArenaMeshes>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut images: ResMut<Assets<Image>>,
) {
    // One material (and texture) for each kind of surface and size.
    let mut looks = std::collections::HashMap::new();
    for old in &built {
        commands.entity(old).despawn();
    }
    let root = commands.spawn((Name::new("arena"), ArenaMeshes, Transform::default(), Visibility::default())).id();
    for solid in world.map().solids() {
        let small = match solid.shape {
            SolidShape::Cuboid { half_extents } => half_extents.max_element() * 2.0 <= CRATE_MAX_M,
            SolidShape::Cylinder { .. } => false,
        };
        let (handle, mapping) = looks
            .entry((solid.kind, small))
            .or_insert_with(|| {
                let look = surface(solid.kind, small);
                let material = StandardMaterial {
                    base_color: look.tint,
                    base_color_texture: Some(images.add(look.image)),
                    perceptual_roughness: look.roughness,
                    metallic: look.metallic,
                    reflectance: 0.3,
                    ..default()
                };
                (materials.add(material), look.mapping)
            })
            .clone();
        let transform = Transform::from_translation(solid.center).with_rotation(solid.rotation);
        let mut mesh = match solid.shape {
            SolidShape::Cuboid { half_extents } => Mesh::from(Cuboid::from_size(half_extents * 2.0)),
            SolidShape::Cylinder { radius, half_height } => {
                Cylinder::new(radius, half_height * 2.0).mesh().resolution(24).build()
            }
        };
        if mapping == Mapping::World {
            world_grid_uvs(&mut mesh, &transform);
        }
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
            let p = transform.transform_point(Vec3::from(*p)) / TILE_M;
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

fn spawn_sun(mut commands: Commands) {
    commands.spawn((
        Name::new("sun"),
        Sun,
        DirectionalLight { illuminance: 9_000.0, shadow_maps_enabled: true, ..default() },
        Transform::from_xyz(0.0, 0.0, 0.0).looking_to(-TO_SUN, Vec3::Y),
        CascadeShadowConfigBuilder { first_cascade_far_bound: 12.0, maximum_distance: 90.0, ..default() }.build(),
        // Ragdolls (on the live layer) cast shadows too.
        crate::vocabulary::camera_layers(true),
    ));
    // A weak, shadowless fill from the other side, like light bounced off the
    // sky, so that faces turned from the sun still show their shape.
    if FILL_IN_AMBIENT {
        return;
    }
    commands.spawn((
        Name::new("sky fill"),
        DirectionalLight {
            illuminance: SKY_FILL_LUX,
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
