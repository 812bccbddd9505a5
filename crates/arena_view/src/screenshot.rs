//! `--screenshot FILE --seconds S`: save a screenshot one second before S, then
//! quit at S (or as soon after as the file is written).

use std::time::Duration;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot as Capture, ScreenshotCaptured, save_to_disk};

use crate::vocabulary::Screenshot;

/// Longest the game waits past S for a slow renderer to deliver the image.
const SAVE_GRACE: Duration = Duration::from_secs(20);

pub(crate) fn plugin(shot: Screenshot) -> impl Fn(&mut App) {
    move |app: &mut App| {
        app.insert_resource(Plan { shot: shot.clone(), requested: false, saved: false }).add_systems(Update, run_plan);
    }
}

#[derive(Resource)]
struct Plan {
    shot: Screenshot,
    requested: bool,
    saved: bool,
}

fn run_plan(mut commands: Commands, time: Res<Time<Real>>, mut plan: ResMut<Plan>, mut exit: MessageWriter<AppExit>) {
    let now = time.elapsed();
    let take_at = plan.shot.quit_after.saturating_sub(Duration::from_secs(1));
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
