//! The two-view kill-cam (a setting, on by default; the jump key skips it):
//! after a death, the last seconds from the killer's eyes as its client drew
//! them, ending on the fatal shot frozen: our body as the killer saw it
//! (with the hitboxes the server tested, red), a ghost where the server had
//! us at that instant (white), the shot's line, and the distance and time
//! between the two.

use arena_client::{Drawn, KillCamFeed, LocalPlayer, NetPlayer, NetcodeSettings, Roster, Session, SkipKillCam};
use arena_sim::hitbox::{BodyPart, PARTS, parts_of};
use arena_sim::player::view_rotation;
use arena_sim::{HitZone, Hitbox, PlayerId};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::camera::MainCamera;
use crate::players::PlayerLooks;
use crate::settings::{Action, Settings};
use crate::vocabulary::{KillCamShown, ViewSet, camera_layers, capsule_transform};
use bevy::camera::visibility::RenderLayers;

const TESTED: Color = Color::srgb(1.0, 0.25, 0.2);
const GHOST: Color = Color::srgba(1.0, 1.0, 1.0, 0.35);
const SHOT: Color = Color::srgb(1.0, 0.85, 0.3);
const GHOST_LINE: Color = Color::srgba(1.0, 1.0, 1.0, 0.8);

/// The narrowest the frozen shot zooms to, degrees (vertical).
const ZOOM_MIN_FOV_DEG: f32 = 8.0;
/// How much of the view the frozen shot's two bodies fill, metres either side.
const ZOOM_FRAME_M: f32 = 3.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<KillCamShown>()
        .add_systems(Update, follow_setting.run_if(resource_changed::<Settings>))
        .add_systems(RunFixedMainLoop, skip.in_set(ViewSet::Input).run_if(in_state(Session::InGame)))
        .add_systems(
            Update,
            (x_ray_lines, play).chain().in_set(ViewSet::Overlay).in_set(Played).run_if(in_state(Session::InGame)),
        )
        .add_systems(EguiPrimaryContextPass, caption.run_if(in_state(Session::InGame)));
}

/// After the kill-cam has placed the camera and its puppets this frame.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Played;

fn follow_setting(settings: Res<Settings>, mut netcode: ResMut<NetcodeSettings>) {
    if netcode.kill_cam != settings.kill_cam {
        netcode.kill_cam = settings.kill_cam;
    }
}

fn skip(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    settings: Res<Settings>,
    shown: Res<KillCamShown>,
    console: Res<crate::vocabulary::ConsoleWindow>,
    mut skips: MessageWriter<SkipKillCam>,
) {
    // Space typed into the console skips nothing.
    if shown.playing.is_some() && !console.open && settings.input(Action::Jump).just_pressed(&keys, &mouse) {
        skips.write(SkipKillCam);
    }
}

/// Our body as the killer drew it and the server's ghost of it: one
/// entity a part each.
#[derive(Resource)]
struct Puppets {
    body: [Entity; PARTS],
    ghost: [Entity; PARTS],
    /// Whose colour the body wears.
    dressed_as: Option<PlayerId>,
}

fn spawn_puppet(commands: &mut Commands, looks: &PlayerLooks, material: &Handle<StandardMaterial>) -> [Entity; PARTS] {
    std::array::from_fn(|i| {
        let mesh = looks.parts[i].clone();
        commands
            .spawn((
                Name::new("kill-cam puppet"),
                Mesh3d(mesh),
                MeshMaterial3d(material.clone()),
                Transform::default(),
                Visibility::Hidden,
            ))
            .id()
    })
}

/// The puppets' parts (never the camera or a player's own entity).
type PartQuery<'w, 's> =
    Query<'w, 's, (&'static mut Transform, &'static mut Visibility), (Without<MainCamera>, Without<NetPlayer>)>;

fn pose(parts: &[Entity; PARTS], hitbox: &Hitbox, shown: bool, q: &mut PartQuery) {
    let view = view_rotation(hitbox.input.yaw, hitbox.input.pitch);
    for ((entity, capsule), part) in parts.iter().zip(parts_of(&hitbox.pose())).zip(BodyPart::ALL) {
        if let Ok((mut t, mut v)) = q.get_mut(*entity) {
            *v = if shown { Visibility::Visible } else { Visibility::Hidden };
            *t = capsule_transform(&capsule, Vec3::ZERO);
            if part == BodyPart::Head {
                t.rotation = view;
            }
        }
    }
}

/// Plays the newest kill-cam while we are dead: the camera at the killer's
/// eye, our body as drawn, then the frozen shot with its ghost.
#[allow(clippy::too_many_arguments)]
fn play(
    time: Res<Time<Real>>,
    settings: Res<Settings>,
    mut feed: ResMut<KillCamFeed>,
    mut shown: ResMut<KillCamShown>,
    local: Query<&Drawn, With<LocalPlayer>>,
    mut others: Query<&mut Visibility, (With<NetPlayer>, Without<LocalPlayer>)>,
    mut camera: Query<(&mut Transform, &mut RenderLayers, &mut Projection), With<MainCamera>>,
    mut parts: PartQuery,
    puppets: Option<ResMut<Puppets>>,
    mut looks: ResMut<PlayerLooks>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut gizmos: Gizmos,
    mut commands: Commands,
) {
    let dead = local.single().is_ok_and(|d| !d.0.alive);
    let Some(mut puppets) = puppets else {
        let ghost = materials.add(StandardMaterial {
            base_color: GHOST,
            alpha_mode: AlphaMode::Blend,
            unlit: true,
            ..default()
        });
        let body = spawn_puppet(&mut commands, &looks, &looks.dark.clone());
        let ghost = spawn_puppet(&mut commands, &looks, &ghost);
        commands.insert_resource(Puppets { body, ghost, dressed_as: None });
        return;
    };
    // Alive again (or the setting off): the kill-cam is over.
    if !dead || !settings.kill_cam {
        feed.current = None;
    }
    let Some(received) = feed.current.as_ref() else {
        if shown.playing.take().is_some() {
            if let Ok((_, mut layers, mut projection)) = camera.single_mut() {
                *layers = camera_layers(true);
                set_fov(&mut projection, crate::camera::vertical_fov(&settings));
            }
            pose(&puppets.body, &Hitbox::default(), false, &mut parts);
            pose(&puppets.ghost, &Hitbox::default(), false, &mut parts);
        }
        shown.frozen = false;
        return;
    };
    let cam = &received.cam;
    let elapsed = (time.elapsed_secs_f64() - received.received_s).max(0.0) as f32;
    let length = crate::vocabulary::kill_cam_track_s(cam);
    let frozen = elapsed >= length;
    let at = (elapsed / length.max(1e-3)).clamp(0.0, 1.0) * cam.frames.len().saturating_sub(1) as f32;
    let (i, f) = (at.floor() as usize, at.fract());
    let (Some(a), Some(b)) = (cam.frames.get(i), cam.frames.get((i + 1).min(cam.frames.len() - 1))) else { return };
    // The killer's eye and view.
    if let Ok((mut t, mut layers, mut projection)) = camera.single_mut() {
        // The past only: tracers, debris and ragdolls of now are left out.
        *layers = camera_layers(false);
        // Frozen, the view closes in on the two bodies (over a third of a second).
        let full = crate::camera::vertical_fov(&settings);
        let fov = match (frozen, cam.shot) {
            (true, Some(shot)) => {
                let between = (shot.drawn.body_center() + shot.server.body_center()) * 0.5;
                let distance = between.distance(shot.origin).max(1.0);
                let spread = shot.drawn.body_center().distance(shot.server.body_center()) * 0.5 + ZOOM_FRAME_M;
                let tight = (2.0 * (spread / distance).atan()).clamp(ZOOM_MIN_FOV_DEG.to_radians(), full);
                let k = ((elapsed - length) / 0.33).clamp(0.0, 1.0);
                full + (tight - full) * k
            }
            _ => full,
        };
        set_fov(&mut projection, fov);
        // Through a teleporter between the two frames: a cut, not a slide
        // across the map.
        let (a_eye, f_eye) = if a.killer.life == b.killer.life {
            (a.killer, f)
        } else if f < 0.5 {
            (a.killer, 0.0)
        } else {
            (b.killer, 0.0)
        };
        t.translation = a_eye.pos().lerp(b.killer.pos(), f_eye);
        let yaw = a_eye.yaw() + arena_sim::cmd::wrap_angle(b.killer.yaw() - a_eye.yaw()) * f_eye;
        let pitch = a_eye.pitch() + (b.killer.pitch() - a_eye.pitch()) * f_eye;
        t.rotation = view_rotation(yaw, pitch);
    }
    // Only the past is shown: the others as they are now are hidden.
    for mut v in &mut others {
        *v = Visibility::Hidden;
    }
    if puppets.dressed_as != Some(cam.victim) {
        let skin = looks.colours(cam.victim, &mut materials).skin;
        for e in puppets.body {
            commands.entity(e).insert(MeshMaterial3d(skin.clone()));
        }
        puppets.dressed_as = Some(cam.victim);
    }
    let victim = if f > 0.0 { a.victim.hitbox().lerp(&b.victim.hitbox(), f) } else { a.victim.hitbox() };
    pose(&puppets.body, &victim, victim.alive, &mut parts);
    match (frozen, cam.shot) {
        (true, Some(shot)) => {
            pose(&puppets.ghost, &shot.server, true, &mut parts);
            crate::hitboxes::draw_hitbox(&mut gizmos, &shot.drawn, 0.01, TESTED);
            // The ghost's outline in sight even behind a wall.
            crate::hitboxes::draw_hitbox(&mut gizmos, &shot.server, 0.0, GHOST_LINE);
            // From a metre out: seen from its own origin the line is a point.
            // A rocket's flight ends at its blast, marked by the splash's reach.
            match shot.blast {
                Some(blast) => {
                    gizmos.line(shot.origin + shot.dir, blast, SHOT);
                    gizmos.sphere(Isometry3d::from_translation(blast), arena_sim::rocket::SPLASH_RADIUS_M, SHOT);
                }
                None => gizmos.line(shot.origin + shot.dir, shot.origin + shot.dir * 120.0, SHOT),
            }
            // From where the killer saw us to where the server had us, on the floor.
            let lift = Vec3::Y * 0.05;
            gizmos.line(shot.drawn.feet() + lift, shot.server.feet() + lift, Color::WHITE);
        }
        _ => pose(&puppets.ghost, &Hitbox::default(), false, &mut parts),
    }
    shown.playing = Some((cam.clone(), elapsed));
    shown.frozen = frozen;
}

/// On the frozen shot, lines are drawn over everything (a ghost behind
/// cover stays in sight); otherwise as usual. (Its own system: `Gizmos`
/// reads the store.)
fn x_ray_lines(shown: Res<KillCamShown>, mut store: ResMut<GizmoConfigStore>) {
    let (config, _) = store.config_mut::<DefaultGizmoConfigGroup>();
    let (bias, width) = if shown.frozen && shown.playing.is_some() { (-1.0, 3.0) } else { (0.0, 2.0) };
    if config.depth_bias != bias {
        config.depth_bias = bias;
        config.line.width = width;
    }
}

fn set_fov(projection: &mut Projection, fov: f32) {
    if let Projection::Perspective(p) = projection
        && (p.fov - fov).abs() > 1e-4
    {
        p.fov = fov;
    }
}

fn zone_name(zone: HitZone) -> &'static str {
    match zone {
        HitZone::Head => "head",
        HitZone::Body => "body",
        HitZone::Limb => "limb",
    }
}

/// The caption: whose eyes, and on the frozen shot the gap between the views.
fn caption(mut contexts: EguiContexts, shown: Res<KillCamShown>, roster: Res<Roster>, settings: Res<Settings>) {
    let Some((cam, _)) = &shown.playing else { return };
    let Ok(ctx) = contexts.ctx_mut() else { return };
    let killer = roster.name(cam.killer);
    egui::Area::new(egui::Id::new("kill cam")).anchor(egui::Align2::CENTER_TOP, egui::vec2(0.0, 24.0)).show(
        ctx,
        |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                let how = if cam.shot.is_some_and(|s| s.blast.is_some()) {
                    "rocket".to_string()
                } else {
                    format!("{} shot", zone_name(cam.zone))
                };
                ui.heading(format!("KILL-CAM: {killer}'s view, as their client drew it ({how})"));
                if shown.frozen {
                    match (cam.shot, cam.gap()) {
                        (Some(shot), Some((metres, ms))) => {
                            // A rocket's flight, or a hitscan shot's rewind.
                            let (red, ghost, judged) = if shot.blast.is_some() {
                                (
                                    "Red: your hitboxes where their rocket met you, which the server tested.",
                                    "White ghost: where the server had you when it exploded.",
                                    "the rocket flew through the world as",
                                )
                            } else {
                                (
                                    "Red: your hitboxes where they saw you, which the server tested (rewound).",
                                    "White ghost: where the server had you at that instant.",
                                    "lag compensation judged the shot as",
                                )
                            };
                            ui.colored_label(egui::Color32::from_rgb(255, 90, 80), red);
                            ui.label(ghost);
                            let place = if shot.server_in_cover { "behind cover" } else { "in the open" };
                            ui.strong(format!(
                                "You were {metres:.2} m / {ms:.0} ms away on the server, {place}: {judged} {killer} \
                                 saw it."
                            ));
                        }
                        _ => {
                            ui.label("Killed by a rocket's blast.");
                        }
                    }
                }
                ui.weak(format!("{} skips", settings.input(Action::Jump).name()));
            });
        },
    );
}
