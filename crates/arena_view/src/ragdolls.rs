//! Ragdolls with bevy_rapier3d, on this client only: a player who dies falls
//! from the pose it was last drawn in, every body part a capsule joined to
//! the next at the neck, waist, shoulders, elbows, hips and knees, pushed the
//! way the killing shot went, and settles against the arena; the rifle
//! drops beside. Cosmetic,
//! never authoritative (like Source's client ragdolls): the movement rules
//! stay the pure function in `arena_sim`, and the server and headless runs
//! have no physics at all (only this crate adds the plugin).

use std::collections::{HashMap, VecDeque};

use arena_client::{ClientWorld, Drawn, DrawnDied, KillNotice, NetPlayer, Session};
use arena_sim::hitbox::{BodyPart, PARTS};
use arena_sim::map::SolidShape;
use arena_sim::pose::Side;
use arena_sim::{HitZone, Hitbox, PlayerId};
use bevy::prelude::*;
use bevy_rapier3d::prelude::*;

use crate::players::PlayerLooks;
use crate::vocabulary::{ViewSet, capsule_transform};

/// How long a body lies before it goes, seconds; most bodies at once.
const RAGDOLL_S: f32 = 10.0;
const MAX_RAGDOLLS: usize = 12;
/// The push of a killing shot: speed given to the head and the body, m/s.
const HEAD_PUSH_MPS: f32 = 6.0;
const HEADSHOT_PUSH_MPS: f32 = 9.0;
const BODY_PUSH_MPS: f32 = 1.5;
/// Longest frame the physics catches up on, seconds, and the steps it is cut into.
const MAX_STEP_S: f32 = 0.5;
const SUBSTEPS: usize = 32;
/// A kill is matched with the drawn body's death within this long, seconds.
const KILL_MEMORY_S: f64 = 3.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_plugins(RapierPhysicsPlugin::<NoUserData>::default())
        // Follow real time even on slow frames (software rendering runs at a
        // few frames a second), in steps no longer than a 64 Hz tick.
        .insert_resource(TimestepMode::Variable { max_dt: MAX_STEP_S, time_scale: 1.0, substeps: SUBSTEPS })
        .init_resource::<RecentKills>()
        .init_resource::<Ragdolls>()
        .add_systems(Update, arena_colliders.run_if(resource_changed::<ClientWorld>))
        .add_systems(
            Update,
            (note_kills, fall, expire).chain().in_set(ViewSet::Follow).run_if(in_state(Session::InGame)),
        )
        .add_systems(OnExit(Session::InGame), clear);
}

/// Kills heard lately: victim → (killer, zone, real time).
#[derive(Resource, Default)]
struct RecentKills(HashMap<PlayerId, (PlayerId, HitZone, f64)>);

/// Bodies lying in the arena, oldest first, with the time each fell.
#[derive(Resource, Default)]
struct Ragdolls(VecDeque<(f64, Vec<Entity>)>);

/// One of the arena's solids as a fixed collider.
#[derive(Component)]
struct ArenaCollider;

/// The arena's solids as fixed colliders, from the same map as everything
/// else (built again for another map).
fn arena_colliders(world: Res<ClientWorld>, old: Query<Entity, With<ArenaCollider>>, mut commands: Commands) {
    for entity in &old {
        commands.entity(entity).despawn();
    }
    for solid in world.map().solids() {
        let collider = match solid.shape {
            SolidShape::Cuboid { half_extents: h } => Collider::cuboid(h.x, h.y, h.z),
            SolidShape::Cylinder { radius, half_height } => Collider::cylinder(half_height, radius),
        };
        commands.spawn((
            Name::new("arena collider"),
            ArenaCollider,
            RigidBody::Fixed,
            collider,
            Friction::coefficient(0.8),
            Transform::from_translation(solid.center).with_rotation(solid.rotation),
        ));
    }
}

fn note_kills(
    time: Res<Time<bevy::time::Real>>,
    mut kills: MessageReader<KillNotice>,
    mut recent: ResMut<RecentKills>,
) {
    let now = time.elapsed_secs_f64();
    for kill in kills.read() {
        recent.0.insert(kill.victim, (kill.killer, kill.zone, now));
    }
    recent.0.retain(|_, (_, _, at)| now - *at < KILL_MEMORY_S);
}

/// A body falls the moment another player's drawn model dies, where it
/// was last drawn alive.
fn fall(
    time: Res<Time<bevy::time::Real>>,
    mut deaths: MessageReader<DrawnDied>,
    everyone: Query<(&NetPlayer, &Drawn)>,
    mut recent: ResMut<RecentKills>,
    mut ragdolls: ResMut<Ragdolls>,
    mut looks: ResMut<PlayerLooks>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut commands: Commands,
) {
    let now = time.elapsed_secs_f64();
    for death in deaths.read().filter(|d| !d.local) {
        let body = death.last_alive;
        let (push, zone) = match recent.0.remove(&death.id) {
            Some((killer, zone, _)) if killer != death.id => {
                let from = everyone.iter().find(|(p, _)| p.id == killer).map(|(_, drawn)| drawn.eye_pos());
                let dir = from.map(|f| (body.eye_pos() - f).normalize_or_zero()).unwrap_or(Vec3::ZERO);
                (dir, zone)
            }
            _ => (Vec3::ZERO, HitZone::Body),
        };
        let skin = looks.colours(death.id, &mut materials).fallen;
        let fallen = Fallen { state: &body, push, zone, skin };
        let parts = spawn_ragdoll(&mut commands, &looks, fallen);
        ragdolls.0.push_back((now, parts));
    }
}

/// A body about to fall: as last drawn, pushed the way the killing shot went.
struct Fallen<'a> {
    state: &'a arena_sim::PlayerState,
    push: Vec3,
    zone: HitZone,
    skin: Handle<StandardMaterial>,
}

/// Where each part hangs from its parent: (part, parent, the joint).
fn joints(pose: &arena_sim::pose::Pose, torso_bottom: Vec3) -> Vec<(BodyPart, BodyPart, Vec3)> {
    let mut joints =
        vec![(BodyPart::Head, BodyPart::Torso, pose.neck), (BodyPart::Pelvis, BodyPart::Torso, torso_bottom)];
    for side in Side::BOTH {
        let (arm, leg) = (pose.arm(side), pose.leg(side));
        joints.push((BodyPart::UpperArm(side), BodyPart::Torso, arm.root));
        joints.push((BodyPart::Forearm(side), BodyPart::UpperArm(side), arm.middle));
        joints.push((BodyPart::Thigh(side), BodyPart::Pelvis, leg.root));
        joints.push((BodyPart::Shin(side), BodyPart::Thigh(side), leg.middle));
    }
    joints
}

fn spawn_ragdoll(commands: &mut Commands, looks: &PlayerLooks, fallen: Fallen) -> Vec<Entity> {
    let Fallen { state, push, zone, skin } = fallen;
    let hitbox = Hitbox::of(state);
    let pose = hitbox.pose();
    let capsules = arena_sim::hitbox::parts_of(&pose);
    let damping = Damping { linear_damping: 0.3, angular_damping: 1.0 };
    // The parts pass through each other (the joints hold them together);
    // they fall against the arena only.
    let groups = CollisionGroups::new(Group::GROUP_2, Group::GROUP_1);
    let places: [Transform; PARTS] = std::array::from_fn(|i| capsule_transform(&capsules[i], Vec3::ZERO));
    let bodies: [Entity; PARTS] = std::array::from_fn(|i| {
        let capsule = capsules[i];
        let part = BodyPart::ALL[i];
        let half = capsule.a.distance(capsule.b) * 0.5;
        let collider =
            if half > 1e-3 { Collider::capsule_y(half, capsule.radius) } else { Collider::ball(capsule.radius) };
        let kick = match (part, zone) {
            (BodyPart::Head, HitZone::Head) => HEADSHOT_PUSH_MPS,
            (BodyPart::Head, _) => HEAD_PUSH_MPS,
            _ => BODY_PUSH_MPS,
        };
        commands
            .spawn((
                Name::new(format!("ragdoll {}", part.name())),
                crate::vocabulary::live_layer(),
                RigidBody::Dynamic,
                collider,
                groups,
                Friction::coefficient(0.9),
                damping,
                Velocity { linear: state.vel + push * kick, angular: Vec3::ZERO },
                Mesh3d(looks.parts[i].clone()),
                MeshMaterial3d(skin.clone()),
                places[i],
            ))
            .id()
    });
    let torso = BodyPart::Torso.index();
    for (part, parent, at) in joints(&pose, capsules[torso].a) {
        let (child, parent) = (part.index(), parent.index());
        let local = |t: &Transform| t.rotation.inverse() * (at - t.translation);
        let joint = SphericalJointBuilder::new()
            .local_anchor1(local(&places[parent]))
            .local_anchor2(local(&places[child]))
            .build();
        commands.entity(bodies[child]).insert(ImpulseJoint::new(bodies[parent], joint));
    }
    let body_at = capsules[torso].center();
    // The rifle drops from the hands and tumbles.
    let side = Quat::from_rotation_y(state.yaw) * Vec3::X;
    let rifle = commands
        .spawn((
            Name::new("ragdoll rifle"),
            crate::vocabulary::live_layer(),
            RigidBody::Dynamic,
            Collider::cuboid(0.045, 0.065, 0.375),
            damping,
            Velocity { linear: state.vel + push * 2.0 + side, angular: side * 3.0 },
            Mesh3d(looks.rifle.clone()),
            MeshMaterial3d(looks.dark.clone()),
            Transform::from_translation(body_at + side * 0.45).with_rotation(Quat::from_rotation_y(state.yaw)),
        ))
        .id();
    let mut parts = bodies.to_vec();
    parts.push(rifle);
    parts
}

/// Old bodies go, and the oldest when there are too many.
fn expire(time: Res<Time<bevy::time::Real>>, mut ragdolls: ResMut<Ragdolls>, mut commands: Commands) {
    let now = time.elapsed_secs_f64();
    while ragdolls.0.front().is_some_and(|(at, _)| now - at > f64::from(RAGDOLL_S) || ragdolls.0.len() > MAX_RAGDOLLS) {
        if let Some((_, parts)) = ragdolls.0.pop_front() {
            for part in parts {
                commands.entity(part).despawn();
            }
        }
    }
}

fn clear(mut ragdolls: ResMut<Ragdolls>, mut recent: ResMut<RecentKills>, mut commands: Commands) {
    for (_, parts) in ragdolls.0.drain(..) {
        for part in parts {
            commands.entity(part).despawn();
        }
    }
    recent.0.clear();
}
