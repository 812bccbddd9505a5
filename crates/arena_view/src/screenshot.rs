//! `--screenshot FILE --seconds S`: save a screenshot one second before S
//! (with `--screenshot-after-kill`, just after the first kill in view,
//! as the body falls; with `--screenshot-in-kill-cam`, on a kill-cam's frozen
//! shot, the first behind cover or a rocket's), then quit at S (or as soon after as the file is written).

use std::time::Duration;

use arena_client::{ClientWorld, Drawn, KillNotice, LocalPlayer, NetPlayer};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot as Capture, ScreenshotCaptured, save_to_disk};

use crate::camera::MainCamera;
use crate::vocabulary::{KillCamShown, Screenshot, ViewSet};

/// Longest the game waits past S for a slow renderer to deliver the image.
const SAVE_GRACE: Duration = Duration::from_secs(20);
/// How long after a kill the picture is taken: the body has started to fall.
const AFTER_KILL: Duration = Duration::from_millis(700);
/// How long into a kill-cam's frozen shot its picture is taken, seconds.
const FROZEN_SETTLE_S: f32 = 0.4;

pub(crate) fn plugin(shot: Screenshot) -> impl Fn(&mut App) {
    move |app: &mut App| {
        app.insert_resource(Plan { shot: shot.clone(), requested: false, saved: false, killed_at: None })
            // After the camera has moved this frame.
            .add_systems(
                Update,
                (watch_kills, watch_kill_cam, run_plan).chain().in_set(ViewSet::Overlay).after(crate::kill_cam::Played),
            );
    }
}

#[derive(Resource)]
struct Plan {
    shot: Screenshot,
    requested: bool,
    saved: bool,
    /// When the first kill in view happened.
    killed_at: Option<Duration>,
}

/// A kill is "in view" nearer than this, metres.
const KILL_IN_VIEW_M: f32 = 20.0;

fn watch_kills(
    time: Res<Time<Real>>,
    mut kills: MessageReader<KillNotice>,
    players: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    camera: Query<(&Camera, &Transform), With<MainCamera>>,
    world: Res<ClientWorld>,
    mut plan: ResMut<Plan>,
) {
    let Ok((camera, transform)) = camera.single() else { return };
    let eye = transform.translation;
    for kill in kills.read() {
        if !plan.shot.after_kill || plan.killed_at.is_some() {
            continue;
        }
        // Someone else's death, near, on the screen and not behind a wall.
        let Some((_, Drawn(victim))) = players.iter().find(|(p, _)| p.id == kill.victim) else { continue };
        let chest = victim.pos + Vec3::Y * victim.height() * 0.6;
        let to = chest - eye;
        let on_screen = camera
            .world_to_ndc(&GlobalTransform::from(*transform), chest)
            .is_some_and(|ndc| ndc.x.abs() < 0.8 && ndc.y.abs() < 0.8 && (0.0..1.0).contains(&ndc.z));
        let seen = to.length() < KILL_IN_VIEW_M && world.cast_ray(eye, to.normalize_or_zero(), to.length()).is_none();
        if on_screen && seen {
            info!("a kill in view: the screenshot follows");
            plan.killed_at = Some(time.elapsed());
        }
    }
}

/// A kill-cam frozen on its shot: now (behind cover, or a rocket's), or
/// late in the run.
fn watch_kill_cam(time: Res<Time<Real>>, shown: Res<KillCamShown>, mut plan: ResMut<Plan>) {
    // Once the view has closed in on the frozen shot (a third of a second).
    if !plan.shot.in_kill_cam || plan.killed_at.is_some() || shown.frozen_for_s().is_none_or(|s| s < FROZEN_SETTLE_S) {
        return;
    }
    let late = time.elapsed().as_secs_f64() > plan.shot.quit_after.as_secs_f64() * 0.9;
    if shown.in_cover() || shown.rocket() || late {
        info!(
            "a kill-cam on its frozen shot (ghost behind cover: {}, a rocket's: {}): the screenshot follows",
            shown.in_cover(),
            shown.rocket()
        );
        // Taken now: the frozen shot holds still.
        plan.killed_at = Some(time.elapsed().saturating_sub(AFTER_KILL));
    }
}

fn run_plan(mut commands: Commands, time: Res<Time<Real>>, mut plan: ResMut<Plan>, mut exit: MessageWriter<AppExit>) {
    let now = time.elapsed();
    let last_chance = plan.shot.quit_after.saturating_sub(Duration::from_secs(1));
    let take_at = plan.killed_at.map_or(last_chance, |at| (at + AFTER_KILL).min(last_chance));
    if !plan.requested && now >= take_at {
        plan.requested = true;
        let path = plan.shot.path.clone();
        info!("taking a screenshot to {}", path.display());
        commands
            .spawn(Capture::primary_window())
            .observe(save_to_disk(path))
            .observe(|_: On<ScreenshotCaptured>, mut plan: ResMut<Plan>| plan.saved = true);
    }
    let deadline_passed = now >= plan.shot.quit_after + SAVE_GRACE;
    if now >= plan.shot.quit_after && (plan.saved || deadline_passed) {
        if !plan.saved {
            error!("the screenshot was not written within {} s", SAVE_GRACE.as_secs());
        }
        exit.write(AppExit::Success);
    }
}
