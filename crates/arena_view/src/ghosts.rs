//! Server ghosts (F3, or the netcode panel): for each other player a
//! translucent body where the newest snapshot put them (the server's most
//! recent truth) beside the interpolated model, and for our own player one
//! where the server last had us (the acknowledged state) beside the
//! predicted view. A line on the floor joins each ghost to what is drawn, so
//! the interpolation delay and the prediction lead become visible distances;
//! a line of text gives them in metres.

use arena_client::{Drawn, LocalPlayer, NetPlayer, NetState, Session};
use arena_sim::Hitbox;
use arena_sim::hitbox::TORSO_RADIUS_M;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::players::PlayerLooks;
use crate::settings::{Action, Settings};
use crate::vocabulary::{Ghosts, ViewSet, capsule_transform};

/// The others' ghosts, and ours.
const OTHERS_COLOR: Color = Color::srgba(1.0, 1.0, 1.0, 0.35);
const OWN_COLOR: Color = Color::srgba(0.3, 0.9, 1.0, 0.35);

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Ghosts>()
        .add_systems(Startup, make_materials)
        .add_systems(RunFixedMainLoop, toggle.in_set(ViewSet::Input).run_if(in_state(Session::InGame)))
        .add_systems(Update, (haunt, place_ghosts).chain().in_set(ViewSet::Overlay).run_if(in_state(Session::InGame)))
        .add_systems(EguiPrimaryContextPass, distances.run_if(in_state(Session::InGame)));
}

fn toggle(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    mut ghosts: ResMut<Ghosts>,
) {
    if settings.input(Action::Ghosts).just_pressed(&keys, &mouse) {
        ghosts.0 = !ghosts.0;
    }
}

/// The two ghost materials, made once.
#[derive(Resource)]
struct GhostMaterials {
    others: Handle<StandardMaterial>,
    own: Handle<StandardMaterial>,
}

fn make_materials(mut materials: ResMut<Assets<StandardMaterial>>, mut commands: Commands) {
    let mut ghostly = |color: Color| {
        materials.add(StandardMaterial { base_color: color, alpha_mode: AlphaMode::Blend, unlit: true, ..default() })
    };
    commands.insert_resource(GhostMaterials { others: ghostly(OTHERS_COLOR), own: ghostly(OWN_COLOR) });
}

/// A ghost, haunting the player entity `.0`.
#[derive(Component)]
struct Ghost(Entity);

/// On a player's entity: its ghost.
#[derive(Component)]
struct Haunted(Entity);

/// Gives every player a ghost (hidden until ghosts are on) and removes the
/// ghosts of those who left.
fn haunt(
    mut commands: Commands,
    players: Query<(Entity, Has<LocalPlayer>), (With<NetPlayer>, Without<Haunted>)>,
    ghosts: Query<(Entity, &Ghost)>,
    alive: Query<(), With<NetPlayer>>,
    looks: Res<PlayerLooks>,
    materials: Res<GhostMaterials>,
) {
    for (player, local) in &players {
        let material = if local { materials.own.clone() } else { materials.others.clone() };
        let ghost = commands
            .spawn((Name::new("ghost"), Ghost(player), Transform::default(), Visibility::Hidden))
            .with_children(|g| {
                for (i, mesh) in looks.parts.iter().enumerate() {
                    g.spawn((
                        GhostPart(i),
                        Mesh3d(mesh.clone()),
                        MeshMaterial3d(material.clone()),
                        Transform::default(),
                    ));
                }
            })
            .id();
        commands.entity(player).insert(Haunted(ghost));
    }
    for (entity, ghost) in &ghosts {
        if !alive.contains(ghost.0) {
            commands.entity(entity).despawn();
        }
    }
}

/// One body part of a ghost (its index in `BodyPart::ALL`).
#[derive(Component)]
struct GhostPart(usize);

/// Each player's ghost where the server had it (its newest snapshot state;
/// for us, the state the server acknowledged), joined to where it is drawn.
fn place_ghosts(
    ghosts_on: Res<Ghosts>,
    players: Query<(&NetState, &Drawn, Has<LocalPlayer>, &Haunted)>,
    mut ghosts: Query<(&mut Transform, &mut Visibility), (With<Ghost>, Without<GhostPart>)>,
    mut parts: Query<(&ChildOf, &GhostPart, &mut Transform), Without<Ghost>>,
    mut gizmos: Gizmos,
) {
    for (net, drawn, local, haunted) in &players {
        let Ok((mut transform, mut visibility)) = ghosts.get_mut(haunted.0) else { continue };
        let truth = net.state;
        let show = ghosts_on.0 && truth.alive;
        *visibility = if show { Visibility::Inherited } else { Visibility::Hidden };
        if !show {
            continue;
        }
        transform.translation = truth.pos;
        // Every part where its hitbox is: the pose the server had.
        let capsules = Hitbox::of(&truth).parts();
        for (parent, part, mut t) in &mut parts {
            if let (true, Some(capsule)) = (parent.parent() == haunted.0, capsules.get(part.0)) {
                *t = capsule_transform(capsule, truth.pos);
            }
        }
        let color = if local { OWN_COLOR } else { OTHERS_COLOR }.with_alpha(0.9);
        let lift = Vec3::Y * 0.03;
        gizmos.line(truth.pos + lift, drawn.pos + lift, color);
        gizmos.circle(
            Isometry3d::new(truth.pos + lift, Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
            TORSO_RADIUS_M,
            color,
        );
    }
}

/// "Ghosts: others 0.42 m behind the server (nearest), you 0.61 m ahead of it."
fn distances(
    mut contexts: EguiContexts,
    ghosts_on: Res<Ghosts>,
    players: Query<(&NetState, &Drawn, Has<LocalPlayer>)>,
) -> Result {
    if !ghosts_on.0 {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let me = players.iter().find(|(.., local)| *local).map(|(net, drawn, _)| (net.state, drawn.0));
    let own = me.map(|(truth, drawn)| drawn.pos.distance(truth.pos));
    let nearest = players
        .iter()
        .filter(|(net, _, local)| !local && net.state.alive)
        .map(|(net, drawn, _)| (me.map_or(0.0, |(_, m)| m.pos.distance(drawn.pos)), drawn.pos.distance(net.state.pos)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, gap)| gap);
    let mut text = String::from("Ghosts (F3): white = newest snapshot, cyan = you as the server acknowledged");
    if let Some(gap) = nearest {
        text.push_str(&format!("\nnearest player drawn {gap:.2} m behind the server"));
    }
    if let Some(lead) = own {
        text.push_str(&format!("\nyou, predicted, {lead:.2} m ahead of the server"));
    }
    egui::Area::new(egui::Id::new("ghost distances")).anchor(egui::Align2::CENTER_TOP, [0.0, 44.0]).show(ctx, |ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
        egui::Frame::popup(ui.style()).show(ui, |ui| {
            ui.label(egui::RichText::new(text).small());
        });
    });
    Ok(())
}
