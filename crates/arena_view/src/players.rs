//! Other players as the local player sees them: a body, a head with a visor
//! and a rifle in the player's own colour, posed from their replicated state,
//! with a floating name tag.

use arena_client::{ClientWorld, LocalPlayer, NetPlayer, NetState, PlayerName};
use arena_sim::PlayerState;
use arena_sim::player::{CROUCH_HEIGHT_M, PLAYER_RADIUS_M, STAND_HEIGHT_M};
use bevy::prelude::*;

use crate::camera::MainCamera;
use crate::{ViewSet, player_color};

/// Farthest distance at which name tags are shown, metres.
const NAME_TAG_RANGE_M: f32 = 60.0;
/// Height of the name tag above the top of the head, metres.
const NAME_TAG_LIFT_M: f32 = 0.35;
/// Radius of the drawn body, a little inside the collision capsule, metres.
const BODY_RADIUS_M: f32 = PLAYER_RADIUS_M * 0.85;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, (dress_new_players, pose_players).chain().in_set(ViewSet::Follow))
        .add_systems(Update, (despawn_orphan_tags, place_name_tags, update_name_tag_text).in_set(ViewSet::Overlay));
}

/// The visible model of a remote player; lives on the player's entity.
#[derive(Component)]
struct Model {
    body: Entity,
    head: Entity,
    gun_pivot: Entity,
    tag: Entity,
}

/// A name tag, a UI node that follows a player on screen.
#[derive(Component)]
struct NameTag {
    player: Entity,
}

/// Where a remote player is drawn this frame. Later netcode stages
/// (interpolation) write it; the baseline is the newest snapshot's state.
#[derive(Component, Debug, Clone, Copy, Deref, DerefMut)]
pub struct DrawnState(pub PlayerState);

fn dress_new_players(
    mut commands: Commands,
    new: Query<(Entity, &NetPlayer, &NetState, &PlayerName), (Added<NetPlayer>, Without<LocalPlayer>)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (entity, player, state, name) in &new {
        let color = player_color(player.id);
        let skin = materials.add(StandardMaterial { base_color: color, perceptual_roughness: 0.55, ..default() });
        let dark = materials.add(StandardMaterial {
            base_color: Color::srgb(0.08, 0.09, 0.1),
            perceptual_roughness: 0.3,
            metallic: 0.4,
            ..default()
        });
        let visor = materials.add(StandardMaterial {
            base_color: Color::srgb(0.1, 0.12, 0.14),
            emissive: LinearRgba::from(color) * 0.6,
            perceptual_roughness: 0.2,
            ..default()
        });
        let body = commands
            .spawn((
                Mesh3d(meshes.add(Capsule3d::new(BODY_RADIUS_M, 1.0))),
                MeshMaterial3d(skin.clone()),
                Transform::default(),
                ChildOf(entity),
            ))
            .id();
        let head = commands
            .spawn((
                Mesh3d(meshes.add(Sphere::new(0.21).mesh().uv(24, 16))),
                MeshMaterial3d(skin),
                Transform::default(),
                ChildOf(entity),
            ))
            .with_child((
                // The visor shows which way the player looks.
                Mesh3d(meshes.add(Cuboid::new(0.3, 0.1, 0.12))),
                MeshMaterial3d(visor),
                Transform::from_xyz(0.0, 0.03, -0.16),
            ))
            .id();
        let gun_pivot = commands.spawn((Transform::default(), Visibility::default(), ChildOf(entity))).id();
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::new(0.09, 0.13, 0.75))),
            MeshMaterial3d(dark.clone()),
            Transform::from_xyz(0.0, 0.0, -0.3),
            ChildOf(gun_pivot),
        ));
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::new(0.06, 0.06, 0.3))),
            MeshMaterial3d(dark),
            Transform::from_xyz(0.0, 0.02, -0.8),
            ChildOf(gun_pivot),
        ));
        let tag = commands
            .spawn((
                Name::new("name tag"),
                NameTag { player: entity },
                Text::new(name.0.clone()),
                TextFont { font_size: bevy::text::FontSize::Px(16.0), ..default() },
                TextColor(Color::WHITE),
                TextShadow { offset: Vec2::splat(1.5), color: Color::srgba(0.0, 0.0, 0.0, 0.8) },
                Node { position_type: PositionType::Absolute, ..default() },
                Visibility::Hidden,
            ))
            .id();
        commands.entity(entity).insert((
            Model { body, head, gun_pivot, tag },
            DrawnState(state.state),
            Transform::default(),
            Visibility::default(),
        ));
    }
}

/// Poses every model from its drawn state: position and yaw on the root,
/// crouch on the body and head, pitch on the gun.
fn pose_players(
    mut models: Query<(&Model, &NetState, &mut DrawnState, &mut Transform)>,
    mut parts: Query<&mut Transform, Without<Model>>,
) {
    for (model, net, mut drawn, mut root) in &mut models {
        // Baseline: draw the newest snapshot as it is.
        drawn.0 = net.state;
        let s = drawn.0;
        root.translation = s.pos;
        root.rotation = Quat::from_rotation_y(s.yaw);
        let height = if s.crouched { CROUCH_HEIGHT_M } else { STAND_HEIGHT_M };
        let head_radius = 0.21;
        let body_top = height - 2.0 * head_radius - 0.02;
        if let Ok(mut t) = parts.get_mut(model.body) {
            // The body mesh is a capsule 1 m long plus its caps: stretch it
            // to fill the space from the feet to the neck.
            t.translation = Vec3::Y * (body_top * 0.5);
            t.scale = Vec3::new(1.0, body_top / (1.0 + 2.0 * BODY_RADIUS_M), 1.0);
        }
        if let Ok(mut t) = parts.get_mut(model.head) {
            t.translation = Vec3::Y * (height - head_radius);
            t.rotation = Quat::from_rotation_x(s.pitch * 0.5);
        }
        if let Ok(mut t) = parts.get_mut(model.gun_pivot) {
            t.translation = Vec3::new(0.4, s.eye_height() - 0.4, -0.1);
            t.rotation = Quat::from_rotation_x(s.pitch);
        }
    }
}

fn place_name_tags(
    camera: Query<(&Camera, &GlobalTransform), With<MainCamera>>,
    world: Res<ClientWorld>,
    players: Query<&DrawnState>,
    mut tags: Query<(&NameTag, &mut Node, &mut Visibility, &ComputedNode)>,
) {
    let Ok((camera, camera_transform)) = camera.single() else { return };
    let eye = camera_transform.translation();
    for (tag, mut node, mut visibility, computed) in &mut tags {
        let Ok(state) = players.get(tag.player) else { continue };
        let anchor = state.pos + Vec3::Y * (state.height() + NAME_TAG_LIFT_M);
        let to_anchor = anchor - eye;
        let distance = to_anchor.length();
        // Hidden when far, behind the camera, or behind a wall.
        let visible =
            distance < NAME_TAG_RANGE_M && world.cast_ray(eye, to_anchor / distance.max(1e-3), distance).is_none();
        match camera.world_to_viewport(camera_transform, anchor) {
            Ok(screen) if visible => {
                let size = computed.size() * computed.inverse_scale_factor();
                node.left = px(screen.x - size.x * 0.5);
                node.top = px(screen.y - size.y);
                *visibility = Visibility::Inherited;
            }
            _ => *visibility = Visibility::Hidden,
        }
    }
}

fn update_name_tag_text(
    names: Query<(&PlayerName, &Model), Changed<PlayerName>>,
    mut texts: Query<&mut Text, With<NameTag>>,
) {
    for (name, model) in &names {
        if let Ok(mut text) = texts.get_mut(model.tag) {
            text.0.clone_from(&name.0);
        }
    }
}

/// Removes the name tag when its player goes away.
fn despawn_orphan_tags(mut commands: Commands, tags: Query<(Entity, &NameTag)>, players: Query<(), With<NetPlayer>>) {
    for (entity, tag) in &tags {
        if players.get(tag.player).is_err() {
            commands.entity(entity).despawn();
        }
    }
}
