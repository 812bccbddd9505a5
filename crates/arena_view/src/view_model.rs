//! First person: the local player's arms and the weapon in hand, children
//! of the camera, posed every frame from the drawn (predicted) state: the
//! rifle kicks back with each shot and its magazine comes out and goes back
//! in by the left hand over a reload; the launcher kicks harder and the left
//! hand loads the next rocket at the tube's back while it cannot fire; the
//! weapon taken up rises into view; everything sways with the steps. The
//! arms reach the grips by the same two-bone rule the bodies' arms use.

use arena_client::{Drawn, LocalPlayer, NetPlayer, PredictedEvents, Session};
use arena_sim::hitbox::Capsule;
use arena_sim::pose::two_bone;
use arena_sim::weapon::{RELOAD_S, ROCKET_INTERVAL_S, SWITCH_S};
use arena_sim::{PlayerState, Weapon};
use bevy::light::NotShadowCaster;
use bevy::prelude::*;

use crate::camera::MainCamera;
use crate::vocabulary::{ViewSet, capsule_transform, roster_color};

/// Where the rifle rests relative to the camera, metres.
pub(crate) const VIEW_MODEL_AT: Vec3 = Vec3::new(0.22, -0.2, -0.45);
/// Where the launcher rests relative to the camera, metres.
pub(crate) const LAUNCHER_AT: Vec3 = Vec3::new(0.2, -0.2, -0.55);
/// How far a weapon dips out of view while being taken up, metres.
const SWITCH_DIP_M: f32 = 0.3;
/// The shoulders, relative to the camera (just below the view), metres.
const SHOULDERS: [Vec3; 2] = [Vec3::new(-0.12, -0.36, -0.15), Vec3::new(0.3, -0.4, 0.1)];
/// Upper arm and forearm lengths, and their (sleeve) radii, metres.
const UPPER_ARM_M: f32 = 0.34;
const FOREARM_M: f32 = 0.34;
const UPPER_ARM_RADIUS_M: f32 = 0.05;
const FOREARM_RADIUS_M: f32 = 0.04;
const HAND_RADIUS_M: f32 = 0.042;
/// Where the hands hold the rifle, in the rifle's own frame: the right on the
/// grip, the left under the handguard; and the magazine's place.
const RIFLE_GRIP: Vec3 = Vec3::new(0.0, -0.1, 0.06);
const RIFLE_FORE: Vec3 = Vec3::new(0.0, -0.06, -0.22);
const MAGAZINE_AT: Vec3 = Vec3::new(0.0, -0.12, -0.12);
/// Where the hands hold the launcher, in its own frame (the tube along -Z):
/// the grip under it, the left hand along the tube; the tube's back.
const LAUNCHER_GRIP: Vec3 = Vec3::new(0.0, -0.12, 0.05);
const LAUNCHER_FORE: Vec3 = Vec3::new(-0.03, -0.07, -0.12);
const LAUNCHER_BACK: Vec3 = Vec3::new(0.0, -0.02, 0.35);
/// Recoil: how much one shot adds (1 for a rifle shot), the most it builds
/// to, and how fast it settles, per second.
const RIFLE_KICK: f32 = 1.0;
const ROCKET_KICK: f32 = 2.2;
const MAX_RECOIL: f32 = 2.4;
const RECOIL_SETTLE_PER_S: f32 = 14.0;
/// How far back (metres) and up (radians) one unit of recoil throws the weapon.
const RECOIL_BACK_M: f32 = 0.06;
const RECOIL_UP_RAD: f32 = 0.09;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Recoil>().add_systems(PostStartup, spawn_view_models).add_systems(
        Update,
        (
            (follow_own_colour, animate_view_model).chain().run_if(in_state(Session::InGame)),
            hide_view_models.run_if(not(in_state(Session::InGame))),
        )
            .in_set(ViewSet::Follow),
    );
}

/// The first-person rifle, a child of the camera.
#[derive(Component)]
pub(crate) struct ViewModel;

/// The end of the first-person rifle's barrel: where shots start on screen.
#[derive(Component)]
pub(crate) struct Muzzle;

/// The first-person rocket launcher, a child of the camera.
#[derive(Component)]
pub(crate) struct LauncherModel;

/// The rifle's magazine (it leaves the rifle during a reload).
#[derive(Component)]
struct Magazine;

/// One arm's pieces: upper arm, forearm, hand; `0` left, `1` right.
#[derive(Component, Clone, Copy)]
struct ArmPiece {
    side: usize,
    piece: Piece,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Piece {
    Upper,
    Fore,
    Hand,
}

/// The sleeves' material, dyed in the local player's colour.
#[derive(Resource)]
struct Sleeves(Handle<StandardMaterial>);

/// How hard the weapon was just kicked (fades quickly), and which way the
/// last rifle shot nudged it sideways.
#[derive(Resource, Default, Debug)]
struct Recoil {
    amount: f32,
    side: f32,
}

fn spawn_view_models(
    mut commands: Commands,
    camera: Query<Entity, With<MainCamera>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let Ok(camera) = camera.single() else { return };
    let gunmetal = materials.add(StandardMaterial {
        base_color: Color::srgb(0.12, 0.13, 0.15),
        perceptual_roughness: 0.35,
        metallic: 0.6,
        ..default()
    });
    let accent = materials.add(StandardMaterial {
        base_color: Color::srgb(0.95, 0.62, 0.15),
        perceptual_roughness: 0.5,
        ..default()
    });
    // The rifle, low and to the right; shown only in a game.
    let rifle = commands
        .spawn((
            Name::new("view model"),
            ViewModel,
            Transform::from_translation(VIEW_MODEL_AT),
            Visibility::Hidden,
            ChildOf(camera),
        ))
        .id();
    for (size, offset, material) in [
        (Vec3::new(0.07, 0.1, 0.55), Vec3::ZERO, gunmetal.clone()),
        (Vec3::new(0.035, 0.035, 0.3), Vec3::new(0.0, 0.02, -0.42), gunmetal.clone()),
        (Vec3::new(0.05, 0.14, 0.08), Vec3::new(0.0, -0.1, 0.05), gunmetal.clone()),
        (Vec3::new(0.075, 0.03, 0.2), Vec3::new(0.0, 0.065, -0.05), accent.clone()),
    ] {
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::from_size(size))),
            MeshMaterial3d(material),
            Transform::from_translation(offset),
            NotShadowCaster,
            ChildOf(rifle),
        ));
    }
    commands.spawn((
        Name::new("magazine"),
        Magazine,
        Mesh3d(meshes.add(Cuboid::new(0.045, 0.16, 0.07))),
        MeshMaterial3d(accent.clone()),
        Transform::from_translation(MAGAZINE_AT).with_rotation(Quat::from_rotation_x(-0.15)),
        NotShadowCaster,
        ChildOf(rifle),
    ));
    commands.spawn((
        Name::new("muzzle"),
        Muzzle,
        Transform::from_xyz(0.0, 0.02, -0.6),
        Visibility::default(),
        ChildOf(rifle),
    ));
    // The launcher: a fat tube on the right shoulder, a sight, a grip.
    let launcher = commands
        .spawn((
            Name::new("launcher view model"),
            LauncherModel,
            Transform::from_translation(LAUNCHER_AT),
            Visibility::Hidden,
            ChildOf(camera),
        ))
        .id();
    let olive = materials.add(StandardMaterial {
        base_color: Color::srgb(0.24, 0.27, 0.2),
        perceptual_roughness: 0.6,
        metallic: 0.2,
        ..default()
    });
    commands.spawn((
        Mesh3d(meshes.add(Cylinder::new(0.06, 0.8))),
        MeshMaterial3d(olive),
        Transform::from_xyz(0.0, 0.0, -0.1).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
        NotShadowCaster,
        ChildOf(launcher),
    ));
    // A dark mouth ring, the grip below, the sight on the left.
    commands.spawn((
        Mesh3d(meshes.add(Torus::new(0.045, 0.07))),
        MeshMaterial3d(materials.add(StandardMaterial { base_color: Color::srgb(0.05, 0.05, 0.05), ..default() })),
        Transform::from_xyz(0.0, 0.0, -0.5).with_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
        NotShadowCaster,
        ChildOf(launcher),
    ));
    for (size, offset) in [
        (Vec3::new(0.035, 0.12, 0.05), Vec3::new(0.0, -0.1, 0.05)),
        (Vec3::new(0.02, 0.05, 0.1), Vec3::new(-0.06, 0.06, -0.2)),
    ] {
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::from_size(size))),
            MeshMaterial3d(accent.clone()),
            Transform::from_translation(offset),
            NotShadowCaster,
            ChildOf(launcher),
        ));
    }
    // The arms: sleeves in the player's colour (set once it is known), dark gloves.
    let sleeves = materials.add(StandardMaterial {
        base_color: Color::srgb(0.4, 0.4, 0.45),
        perceptual_roughness: 0.8,
        ..default()
    });
    let gloves = materials.add(StandardMaterial {
        base_color: Color::srgb(0.1, 0.09, 0.08),
        perceptual_roughness: 0.7,
        ..default()
    });
    let upper = meshes.add(Capsule3d::new(UPPER_ARM_RADIUS_M, UPPER_ARM_M).mesh().rings(4).longitudes(12));
    let fore = meshes.add(Capsule3d::new(FOREARM_RADIUS_M, FOREARM_M).mesh().rings(4).longitudes(12));
    let hand = meshes.add(Sphere::new(HAND_RADIUS_M).mesh().uv(12, 8));
    for side in 0..2 {
        for (piece, mesh, material) in [
            (Piece::Upper, upper.clone(), sleeves.clone()),
            (Piece::Fore, fore.clone(), sleeves.clone()),
            (Piece::Hand, hand.clone(), gloves.clone()),
        ] {
            commands.spawn((
                Name::new("arm"),
                ArmPiece { side, piece },
                Mesh3d(mesh),
                MeshMaterial3d(material),
                Transform::default(),
                Visibility::Hidden,
                NotShadowCaster,
                ChildOf(camera),
            ));
        }
    }
    commands.insert_resource(Sleeves(sleeves));
}

/// Dyes the sleeves in the local player's colour (its team's).
fn follow_own_colour(
    local: Query<Ref<NetPlayer>, With<LocalPlayer>>,
    roster: Res<arena_client::Roster>,
    sleeves: Option<Res<Sleeves>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let (Ok(player), Some(sleeves)) = (local.single(), sleeves) else { return };
    if !(player.is_changed() || roster.is_changed()) {
        return;
    }
    if let Some(mut material) = materials.get_mut(&sleeves.0) {
        material.base_color = roster_color(&roster, player.id).darker(0.1);
    }
}

fn hide_view_models(mut models: Query<&mut Visibility, Or<(With<ViewModel>, With<LauncherModel>, With<ArmPiece>)>>) {
    for mut visibility in &mut models {
        *visibility = Visibility::Hidden;
    }
}

/// 0 → 1 → 0 over `from..to` of `p`, smoothly; 0 outside.
fn bump(p: f32, from: f32, to: f32) -> f32 {
    if p <= from || p >= to {
        return 0.0;
    }
    (std::f32::consts::PI * (p - from) / (to - from)).sin().powi(2)
}

/// 0 before `from`, 1 after `to`, smooth in between.
fn ramp(p: f32, from: f32, to: f32) -> f32 {
    let t = ((p - from) / (to - from)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Where the weapon in hand is this frame, relative to the camera, and
/// where each hand goes in the weapon's frame (left, right), and the
/// magazine's place in the rifle's frame. A pure function of the drawn
/// state, the recoil and how long ago the weapon was taken up.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HeldPose {
    weapon: Transform,
    hands: [Vec3; 2],
    magazine: Vec3,
}

fn held_pose(state: &PlayerState, recoil: &Recoil, since_switch_s: f32) -> HeldPose {
    let stride = state.step_phase / arena_sim::movement::FOOTSTEP_DISTANCE_M * std::f32::consts::TAU;
    let sway = if state.on_ground { (state.ground_speed() / arena_sim::player::RUN_SPEED_MPS).min(1.0) } else { 0.0 };
    let bob = Vec3::new(stride.sin() * 0.012 * sway, -(stride * 2.0).cos().abs() * 0.01 * sway, 0.0);
    let dip = Vec3::NEG_Y * (1.0 - since_switch_s / SWITCH_S).clamp(0.0, 1.0) * SWITCH_DIP_M;
    let kick = Vec3::new(recoil.side * 0.01 * recoil.amount, 0.0, RECOIL_BACK_M * recoil.amount);
    let kick_turn = Quat::from_rotation_x(RECOIL_UP_RAD * recoil.amount)
        * Quat::from_rotation_y(recoil.side * 0.02 * recoil.amount);
    match state.weapon {
        Weapon::Rifle => {
            // The reload: tilt the rifle; the left hand takes the magazine
            // out, down out of view, and back in with a full one.
            let p = if state.reload_s > 0.0 { 1.0 - state.reload_s / RELOAD_S } else { 1.0 };
            let tilt = bump(p, 0.0, 1.0);
            let out = ramp(p, 0.12, 0.3) - ramp(p, 0.62, 0.8);
            let magazine = MAGAZINE_AT + Vec3::new(-0.06, -0.45, 0.1) * out;
            let left = if p < 1.0 {
                let to_magazine = ramp(p, 0.02, 0.12) - ramp(p, 0.82, 0.95);
                RIFLE_FORE.lerp(magazine + Vec3::new(0.0, -0.06, 0.0), to_magazine)
            } else {
                RIFLE_FORE
            };
            let weapon =
                Transform::from_translation(VIEW_MODEL_AT + bob + dip + kick + Vec3::new(-0.04, -0.06, 0.0) * tilt)
                    .with_rotation(
                        kick_turn * Quat::from_rotation_x(-0.35 * tilt) * Quat::from_rotation_z(0.55 * tilt),
                    );
            HeldPose { weapon, hands: [left, RIFLE_GRIP], magazine }
        }
        Weapon::Rocket => {
            // Between rockets the left hand goes to the tube's back and loads the next.
            let p = if state.fire_cooldown_s > 0.0 { 1.0 - state.fire_cooldown_s / ROCKET_INTERVAL_S } else { 1.0 };
            let load = bump(p, 0.15, 0.95);
            let left = LAUNCHER_FORE.lerp(LAUNCHER_BACK, load);
            let weapon =
                Transform::from_translation(LAUNCHER_AT + bob + dip + kick + Vec3::new(0.0, -0.03, 0.0) * load)
                    .with_rotation(kick_turn * Quat::from_rotation_z(0.12 * load));
            HeldPose { weapon, hands: [left, LAUNCHER_GRIP], magazine: MAGAZINE_AT }
        }
    }
}

/// The arm of `side` (0 left, 1 right) from its shoulder to `hand`, both
/// relative to the camera: elbows down and out.
fn arm(side: usize, hand: Vec3) -> [Capsule; 2] {
    let out = if side == 0 { -1.0 } else { 1.0 };
    let limb = two_bone(SHOULDERS[side], hand, UPPER_ARM_M, FOREARM_M, Vec3::new(out, -1.0, 0.3));
    [
        Capsule { a: limb.root, b: limb.middle, radius: UPPER_ARM_RADIUS_M },
        Capsule { a: limb.middle, b: limb.end, radius: FOREARM_RADIUS_M },
    ]
}

#[allow(clippy::type_complexity)]
fn animate_view_model(
    time: Res<Time>,
    mut events: MessageReader<PredictedEvents>,
    local: Query<&Drawn, With<LocalPlayer>>,
    mut recoil: ResMut<Recoil>,
    mut switched: Local<(Option<Weapon>, f32)>,
    mut rifle: Query<
        (&mut Transform, &mut Visibility),
        (With<ViewModel>, Without<LauncherModel>, Without<ArmPiece>, Without<Magazine>),
    >,
    mut launcher: Query<(&mut Transform, &mut Visibility), (With<LauncherModel>, Without<ArmPiece>, Without<Magazine>)>,
    mut magazine: Query<&mut Transform, (With<Magazine>, Without<ArmPiece>)>,
    mut arms: Query<(&ArmPiece, &mut Transform, &mut Visibility)>,
) {
    for event in events.read() {
        let weapon = &event.events.weapon;
        if weapon.shot.is_some() {
            recoil.amount += RIFLE_KICK;
            recoil.side = if recoil.side > 0.0 { -1.0 } else { 1.0 };
        }
        if weapon.rocket.is_some() {
            recoil.amount += ROCKET_KICK;
            recoil.side = 0.0;
        }
    }
    recoil.amount = recoil.amount.min(MAX_RECOIL) * (-time.delta_secs() * RECOIL_SETTLE_PER_S).exp();
    let Ok(Drawn(state)) = local.single() else { return };
    if switched.0 != Some(state.weapon) {
        *switched = (Some(state.weapon), 0.0);
    }
    switched.1 += time.delta_secs();
    let held = held_pose(state, &recoil, switched.1);
    let shown = |on: bool| if on { Visibility::Inherited } else { Visibility::Hidden };
    let rockets = state.weapon == Weapon::Rocket;
    for (mut transform, mut visibility) in &mut rifle {
        *visibility = shown(state.alive && !rockets);
        *transform = if rockets { Transform::from_translation(VIEW_MODEL_AT) } else { held.weapon };
    }
    for (mut transform, mut visibility) in &mut launcher {
        *visibility = shown(state.alive && rockets);
        *transform = if rockets { held.weapon } else { Transform::from_translation(LAUNCHER_AT) };
    }
    for mut transform in &mut magazine {
        transform.translation = held.magazine;
    }
    let capsules = [0, 1].map(|side| {
        let hand = held.weapon.transform_point(held.hands[side]);
        (arm(side, hand), hand)
    });
    for (piece, mut transform, mut visibility) in &mut arms {
        *visibility = shown(state.alive);
        let ([upper, fore], hand) = capsules[piece.side];
        *transform = match piece.piece {
            Piece::Upper => capsule_transform(&upper, Vec3::ZERO),
            Piece::Fore => capsule_transform(&fore, Vec3::ZERO),
            Piece::Hand => Transform::from_translation(fore.b.lerp(hand, 0.5)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holding(weapon: Weapon) -> PlayerState {
        PlayerState { weapon, ..PlayerState::spawned_at(Vec3::ZERO, 0.0) }
    }

    #[test]
    fn the_hands_reach_the_grips_at_rest() {
        for weapon in [Weapon::Rifle, Weapon::Rocket] {
            let held = held_pose(&holding(weapon), &Recoil::default(), 10.0);
            for side in 0..2 {
                let hand = held.weapon.transform_point(held.hands[side]);
                let [_, fore] = arm(side, hand);
                assert!(
                    fore.b.distance(hand) < 1e-3,
                    "{weapon:?} side {side}: the hand short of the grip by {}",
                    fore.b.distance(hand)
                );
            }
        }
    }

    #[test]
    fn a_reload_takes_the_magazine_out_and_puts_it_back() {
        let mut state = holding(Weapon::Rifle);
        let rest = held_pose(&state, &Recoil::default(), 10.0);
        let mut lowest = rest.magazine.y;
        let mut left_hand_travel: f32 = 0.0;
        let steps = 64;
        for i in 0..=steps {
            state.reload_s = RELOAD_S * (1.0 - i as f32 / steps as f32);
            let held = held_pose(&state, &Recoil::default(), 10.0);
            lowest = lowest.min(held.magazine.y);
            left_hand_travel = left_hand_travel.max(held.hands[0].distance(RIFLE_FORE));
        }
        assert!(rest.magazine.y - lowest > 0.3, "the magazine comes out and out of view: {lowest}");
        assert!(left_hand_travel > 0.2, "the left hand leaves the handguard: {left_hand_travel}");
        state.reload_s = 0.0;
        assert_eq!(held_pose(&state, &Recoil::default(), 10.0), rest, "and all is back in place");
    }

    #[test]
    fn recoil_throws_the_weapon_back_and_up_and_a_switch_raises_it() {
        let state = holding(Weapon::Rifle);
        let rest = held_pose(&state, &Recoil::default(), 10.0).weapon;
        let kicked = held_pose(&state, &Recoil { amount: 1.0, side: 1.0 }, 10.0).weapon;
        assert!(kicked.translation.z > rest.translation.z + 0.03, "back towards the eye");
        assert!((kicked.rotation * Vec3::NEG_Z).y > 0.05, "the muzzle up");
        let taking_up = held_pose(&state, &Recoil::default(), 0.0).weapon;
        assert!(taking_up.translation.y < rest.translation.y - 0.2, "below the view while taken up");
    }

    #[test]
    fn the_launchers_left_hand_loads_between_rockets() {
        let mut state = holding(Weapon::Rocket);
        state.fire_cooldown_s = ROCKET_INTERVAL_S * 0.45;
        let loading = held_pose(&state, &Recoil::default(), 10.0);
        assert!(loading.hands[0].distance(LAUNCHER_BACK) < loading.hands[0].distance(LAUNCHER_FORE), "{loading:?}");
    }
}
