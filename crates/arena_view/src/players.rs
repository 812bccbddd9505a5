//! Other players as the local player sees them: an articulated body (head
//! with a visor, torso, pelvis, arms holding a rifle or a rocket launcher,
//! legs in their gait) in the player's own colour (its team's in team
//! deathmatch, dressed again when it switches), posed by the shared pose
//! function from where they are drawn ([`Drawn`]: interpolated, or the
//! newest snapshot's with interpolation off).
//! Every part is drawn exactly where its hitbox is. A pulsing bubble shows
//! spawn protection; a pulsing purple glow (a shell and a light) the quad
//! damage. The meshes are made once for everyone and the materials once for
//! each player ([`PlayerLooks`]); ghosts and ragdolls use them too.

use std::collections::HashMap;

use arena_client::{Drawn, LocalPlayer, NetPlayer, Roster, Spectating, WatchView};
use arena_protocol::modes::Team;
use arena_sim::hitbox::{BodyPart, HEAD_RADIUS_M, PARTS};
use arena_sim::pose::Side;
use arena_sim::{Hitbox, PlayerId};
use bevy::prelude::*;

use crate::vocabulary::{ViewSet, body_color, capsule_transform};

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, make_looks).add_systems(
        Update,
        (follow_teams.run_if(resource_exists_and_changed::<Roster>), dress_new_players, pose_players)
            .chain()
            .in_set(ViewSet::Follow),
    );
}

/// The visible model of a remote player; lives on the player's entity.
#[derive(Component)]
struct Model {
    /// One entity a body part, in [`BodyPart::ALL`]'s order (the head first).
    parts: [Entity; PARTS],
    gun_pivot: Entity,
    /// The rifle's parts and the launcher: whichever is in hand is shown.
    rifle_parts: [Entity; 2],
    launcher: Entity,
    /// The spawn-protection bubble, and its own material (its alpha pulses).
    shield: Entity,
    shield_material: Handle<StandardMaterial>,
    /// The quad's glow: a shell round the body with a light in it.
    quad: Entity,
    /// The team it is dressed in (a switch of team dresses it again).
    team: Option<Team>,
}

/// Pulses of the spawn-protection bubble per second.
const SHIELD_PULSE_HZ: f32 = 2.5;
/// The quad's glow: pulses a second, the shell's opacity between, the
/// light's lumens and reach (metres). One light for each player with the
/// quad (a map has one), at every quality: it is how the others see it coming.
const QUAD_PULSE_HZ: f32 = 1.5;
const QUAD_ALPHA: (f32, f32) = (0.15, 0.35);
const QUAD_LUMENS: f32 = 120_000.0;
const QUAD_RANGE_M: f32 = 7.0;

/// What every player model is made of: the meshes, made once, and each
/// player's materials in their colour, made the first time they are needed.
#[derive(Resource)]
pub(crate) struct PlayerLooks {
    /// Each body part's capsule, its hitbox's size (the head a sphere).
    pub parts: [Handle<Mesh>; PARTS],
    pub head: Handle<Mesh>,
    visor: Handle<Mesh>,
    /// The rifle's body (also the rifle a ragdoll drops) and barrel.
    pub rifle: Handle<Mesh>,
    barrel: Handle<Mesh>,
    /// The rocket launcher: a fat tube.
    launcher: Handle<Mesh>,
    /// A unit sphere, scaled around the hitboxes.
    shield: Handle<Mesh>,
    /// Gunmetal.
    pub dark: Handle<StandardMaterial>,
    /// The quad's shell, the same for everyone (its alpha pulses).
    quad: Handle<StandardMaterial>,
    colours: HashMap<(PlayerId, Option<Team>), Colours>,
    /// Each player's team, as the roster last said.
    teams: HashMap<PlayerId, Team>,
}

/// One player's materials.
#[derive(Clone)]
pub(crate) struct Colours {
    pub skin: Handle<StandardMaterial>,
    visor: Handle<StandardMaterial>,
    /// The spawn-protection bubble's (its alpha pulses).
    shield: Handle<StandardMaterial>,
    /// A fallen body's: a dimmer glow.
    pub fallen: Handle<StandardMaterial>,
    /// The debris of a death: a bright glow.
    pub burst: Handle<StandardMaterial>,
}

impl PlayerLooks {
    /// Player `id`'s colour: its team's, or its own.
    pub(crate) fn colour(&self, id: PlayerId) -> Color {
        body_color(id, self.teams.get(&id).copied())
    }

    /// Player `id`'s materials (in its team's colour), made on first use.
    pub(crate) fn colours(&mut self, id: PlayerId, materials: &mut Assets<StandardMaterial>) -> Colours {
        let team = self.teams.get(&id).copied();
        self.colours
            .entry((id, team))
            .or_insert_with(|| {
                let color = body_color(id, team);
                // A little glow of their own colour keeps players readable in shadow and at 30 m.
                let glowing = |glow: f32, roughness: f32| StandardMaterial {
                    base_color: color,
                    emissive: LinearRgba::from(color) * glow,
                    perceptual_roughness: roughness,
                    ..default()
                };
                Colours {
                    skin: materials.add(glowing(0.35, 0.55)),
                    visor: materials.add(StandardMaterial {
                        base_color: Color::srgb(0.1, 0.12, 0.14),
                        emissive: LinearRgba::from(color) * 0.6,
                        perceptual_roughness: 0.2,
                        ..default()
                    }),
                    shield: materials.add(StandardMaterial {
                        base_color: color.lighter(0.25).with_alpha(0.25),
                        emissive: LinearRgba::from(color) * 0.5,
                        alpha_mode: AlphaMode::Blend,
                        unlit: true,
                        cull_mode: None,
                        ..default()
                    }),
                    fallen: materials.add(glowing(0.2, 0.6)),
                    burst: materials.add(glowing(0.8, 0.6)),
                }
            })
            .clone()
    }
}

fn make_looks(
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut commands: Commands,
) {
    let head = meshes.add(Sphere::new(HEAD_RADIUS_M).mesh().uv(24, 16));
    // Bones keep their lengths in every pose, so one mesh a part fits all.
    let rest = Hitbox::standing_at(Vec3::ZERO).parts();
    let parts = std::array::from_fn(|i| match BodyPart::ALL[i] {
        BodyPart::Head => head.clone(),
        _ => meshes.add(Capsule3d::new(rest[i].radius, rest[i].a.distance(rest[i].b)).mesh().rings(4).longitudes(12)),
    });
    commands.insert_resource(PlayerLooks {
        parts,
        head,
        visor: meshes.add(Cuboid::new(0.3, 0.1, 0.12)),
        rifle: meshes.add(Cuboid::new(0.09, 0.13, 0.75)),
        barrel: meshes.add(Cuboid::new(0.06, 0.06, 0.3)),
        launcher: meshes.add(Cylinder::new(0.09, 1.0)),
        shield: meshes.add(Sphere::new(1.0).mesh().uv(24, 16)),
        dark: materials.add(StandardMaterial {
            base_color: Color::srgb(0.08, 0.09, 0.1),
            perceptual_roughness: 0.3,
            metallic: 0.4,
            ..default()
        }),
        quad: materials.add(StandardMaterial {
            base_color: quad_color().with_alpha(QUAD_ALPHA.1),
            alpha_mode: AlphaMode::Add,
            unlit: true,
            cull_mode: None,
            ..default()
        }),
        colours: HashMap::new(),
        teams: HashMap::new(),
    });
}

fn quad_color() -> Color {
    crate::looks::item_color(arena_sim::ItemKind::QuadDamage)
}

/// The roster's teams into the looks; a player whose team changed is
/// undressed (and dressed again, in its new colours, by `dress_new_players`).
fn follow_teams(
    roster: Res<Roster>,
    mut looks: ResMut<PlayerLooks>,
    models: Query<(Entity, &NetPlayer, &Model)>,
    mut commands: Commands,
) {
    looks.teams = roster.sides.iter().filter_map(|(id, side)| side.team().map(|t| (*id, t))).collect();
    for (entity, player, model) in &models {
        if model.team != looks.teams.get(&player.id).copied() {
            for part in model.parts.into_iter().chain([model.gun_pivot, model.shield, model.quad]) {
                commands.entity(part).despawn();
            }
            commands.entity(entity).remove::<Model>();
        }
    }
}

fn dress_new_players(
    mut commands: Commands,
    new: Query<(Entity, &NetPlayer), (Without<Model>, Without<LocalPlayer>)>,
    mut looks: ResMut<PlayerLooks>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (entity, player) in &new {
        let team = looks.teams.get(&player.id).copied();
        let colours = looks.colours(player.id, &mut materials);
        let parts = std::array::from_fn(|i| {
            let mut part = commands.spawn((
                Mesh3d(looks.parts[i].clone()),
                MeshMaterial3d(colours.skin.clone()),
                Transform::default(),
                ChildOf(entity),
            ));
            if BodyPart::ALL[i] == BodyPart::Head {
                // The visor shows which way the player looks.
                part.with_child((
                    Mesh3d(looks.visor.clone()),
                    MeshMaterial3d(colours.visor.clone()),
                    Transform::from_xyz(0.0, 0.02, -HEAD_RADIUS_M + 0.03),
                ));
            }
            part.id()
        });
        let gun_pivot = commands.spawn((Transform::default(), Visibility::default(), ChildOf(entity))).id();
        let rifle = commands
            .spawn((
                Mesh3d(looks.rifle.clone()),
                MeshMaterial3d(looks.dark.clone()),
                Transform::from_xyz(0.0, 0.02, -0.2),
                ChildOf(gun_pivot),
            ))
            .id();
        let barrel = commands
            .spawn((
                Mesh3d(looks.barrel.clone()),
                MeshMaterial3d(looks.dark.clone()),
                Transform::from_xyz(0.0, 0.04, -0.7),
                ChildOf(gun_pivot),
            ))
            .id();
        // The launcher, on the shoulder, in the player's colour at the mouth.
        let launcher = commands
            .spawn((
                Mesh3d(looks.launcher.clone()),
                MeshMaterial3d(looks.dark.clone()),
                Transform::from_xyz(0.0, 0.14, -0.15).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
                Visibility::Hidden,
                ChildOf(gun_pivot),
            ))
            .with_child((
                Mesh3d(looks.head.clone()),
                MeshMaterial3d(colours.skin.clone()),
                Transform::from_xyz(0.0, 0.5, 0.0).with_scale(Vec3::splat(0.45)),
            ))
            .id();
        let shield = commands
            .spawn((
                Name::new("spawn protection"),
                Mesh3d(looks.shield.clone()),
                MeshMaterial3d(colours.shield.clone()),
                Transform::default(),
                Visibility::Hidden,
                ChildOf(entity),
            ))
            .id();
        let quad = commands
            .spawn((
                Name::new("quad damage"),
                Mesh3d(looks.shield.clone()),
                MeshMaterial3d(looks.quad.clone()),
                Transform::default(),
                Visibility::Hidden,
                bevy::light::NotShadowCaster,
                ChildOf(entity),
            ))
            .with_child((
                PointLight {
                    color: quad_color(),
                    intensity: QUAD_LUMENS,
                    range: QUAD_RANGE_M,
                    shadow_maps_enabled: false,
                    ..default()
                },
                // At the shell's centre, the body's middle: shown with it.
                Transform::default(),
            ))
            .id();
        commands.entity(entity).insert((
            Model {
                parts,
                gun_pivot,
                rifle_parts: [rifle, barrel],
                launcher,
                shield,
                shield_material: colours.shield,
                quad,
                team,
            },
            Transform::default(),
            Visibility::default(),
        ));
    }
}

/// Poses every model from its drawn state: the root at the feet, every
/// part where the shared pose puts its hitbox (the same function the server
/// tests shots with), the head and the gun along the view. The dead are not
/// drawn (their ragdoll is).
fn pose_players(
    time: Res<Time>,
    // Absent in a demo's playback, which has no connection.
    (roster, spectating): (Option<Res<Roster>>, Option<Res<Spectating>>),
    mut models: Query<(&Model, &NetPlayer, &Drawn, &mut Transform, &mut Visibility)>,
    mut parts: Query<(&mut Transform, &mut Visibility), Without<Model>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    looks: Option<Res<PlayerLooks>>,
) {
    // A watcher following a player in first person sees from inside its head.
    let inside = match (roster, spectating) {
        (Some(roster), Some(spectating)) if roster.watching() && spectating.view == WatchView::FirstPerson => {
            spectating.target
        }
        _ => None,
    };
    // Everyone's quad glow pulses together: one material.
    let quad_pulse = 0.5 + 0.5 * (time.elapsed_secs() * QUAD_PULSE_HZ * std::f32::consts::TAU).sin();
    let mut quad_seen = false;
    for (model, player, drawn, mut root, mut visibility) in &mut models {
        let s = drawn.0;
        let shown = s.alive && Some(player.id) != inside;
        *visibility = if shown { Visibility::Inherited } else { Visibility::Hidden };
        if !shown {
            continue;
        }
        root.translation = s.pos;
        root.rotation = Quat::IDENTITY;
        let hitbox = Hitbox::of(&s);
        let pose = hitbox.pose();
        let view = arena_sim::player::view_rotation(s.yaw, s.pitch);
        for ((entity, capsule), part) in model.parts.iter().zip(arena_sim::hitbox::parts_of(&pose)).zip(BodyPart::ALL) {
            if let Ok((mut t, _)) = parts.get_mut(*entity) {
                *t = capsule_transform(&capsule, s.pos);
                if part == BodyPart::Head {
                    t.rotation = view;
                }
            }
        }
        if let Ok((mut t, mut shown)) = parts.get_mut(model.shield) {
            let protected = s.protected_s > 0.0;
            *shown = if protected { Visibility::Inherited } else { Visibility::Hidden };
            if protected {
                // An ellipsoid just around the hitboxes.
                t.translation = Vec3::Y * s.height() * 0.5;
                t.scale = Vec3::new(0.6, s.height() * 0.5 + 0.15, 0.6);
                let pulse = 0.5 + 0.5 * (time.elapsed_secs() * SHIELD_PULSE_HZ * std::f32::consts::TAU).sin();
                if let Some(mut material) = materials.get_mut(&model.shield_material) {
                    material.base_color.set_alpha(0.12 + 0.18 * pulse);
                }
            }
        }
        if let Ok((mut t, mut shown)) = parts.get_mut(model.quad) {
            // Remote states carry the quad as a flag (any time left).
            let quad = s.quad_s > 0.0;
            *shown = if quad { Visibility::Inherited } else { Visibility::Hidden };
            if quad {
                quad_seen = true;
                // Round the body, a little outside the protection's bubble.
                t.translation = Vec3::Y * s.height() * 0.5;
                t.scale = Vec3::new(0.75, s.height() * 0.5 + 0.25, 0.75);
            }
        }
        if let Ok((mut t, _)) = parts.get_mut(model.gun_pivot) {
            // In the trigger hand, along the view.
            t.translation = pose.arm(Side::Right).end - s.pos;
            t.rotation = view;
        }
        let rockets = s.weapon == arena_sim::Weapon::Rocket;
        let shown = |on: bool| if on { Visibility::Inherited } else { Visibility::Hidden };
        for part in model.rifle_parts {
            if let Ok((_, mut v)) = parts.get_mut(part) {
                *v = shown(!rockets);
            }
        }
        if let Ok((_, mut v)) = parts.get_mut(model.launcher) {
            *v = shown(rockets);
        }
    }
    if quad_seen
        && let Some(looks) = looks
        && let Some(mut material) = materials.get_mut(&looks.quad)
    {
        material.base_color.set_alpha(QUAD_ALPHA.0 + (QUAD_ALPHA.1 - QUAD_ALPHA.0) * quad_pulse);
    }
}
