//! `fps_max`: at most so many frames a second, by sleeping out the rest of
//! each frame's share at its end (0: as fast as the display's sync allows).
//! In a browser the page's animation frames pace the game and a page cannot
//! sleep: there `fps_max` does nothing.

use std::time::{Duration, Instant};

use bevy::prelude::*;

use crate::settings::Settings;

pub(crate) fn plugin(app: &mut App) {
    if cfg!(not(target_arch = "wasm32")) {
        app.add_systems(Last, limit);
    }
}

fn limit(settings: Res<Settings>, mut last: Local<Option<Instant>>) {
    let now = Instant::now();
    if settings.fps_max > 0 {
        let share = Duration::from_secs_f64(1.0 / f64::from(settings.fps_max));
        if let Some(spent) = last.map(|at| now.duration_since(at))
            && spent < share
        {
            std::thread::sleep(share - spent);
        }
    }
    *last = Some(Instant::now());
}
