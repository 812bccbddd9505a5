//! The page around the game in a browser (wasm32 only): the page's clock,
//! which takes a hidden tab's pause (or any long stall) as a pause rather
//! than as time to catch up on; pointer lock, taken on a click and known to
//! be lost when Esc (or the browser) releases it; the status published as
//! `window.arena_status`; console lines that the page's scripts queue with
//! `arena_console(line)`.

use std::time::Duration;

use bevy::input::InputSystems;
use bevy::input::mouse::AccumulatedMouseMotion;
use bevy::platform::time::Instant;
use bevy::prelude::*;
use bevy::time::{TimeSystems, TimeUpdateStrategy};
use bevy::window::{CursorGrabMode, CursorOptions};
use web_sys::wasm_bindgen::{JsCast, JsValue};

use crate::console::Console;
use crate::page_status::{PageStatus, gather};
use crate::vocabulary::{PauseMenu, ViewSet};

/// Longest gap between two frames taken as time that passed: a longer one
/// (a hidden tab, whose animation frames stop; a stall) is a pause, of
/// which the clocks see only [`RESUMED_FRAME`]. Both ends of the game live
/// in the page and stop together, so nothing is owed: no timeout, no flood
/// of catch-up ticks, the client's clock as far ahead of the server's as
/// before. Above a slow page's frame (software WebGL 2 in a 640x360 page
/// draws 6 to 9 a second here).
const MAX_FRAME_GAP: Duration = Duration::from_millis(500);
/// A pause this long is said in the log (a hidden tab); shorter ones (a slow
/// page's frames) are only counted in the status.
const TOLD_PAUSE: Duration = Duration::from_secs(2);
/// What the clocks see of a pause: one frame at 60 a second.
const RESUMED_FRAME: Duration = Duration::from_micros(16_667);
/// Console lines taken from the page's queue a frame at most, and the
/// queue's length at most (the page's `arena_console` keeps to it; a script
/// pushing to the queue itself may not). A line longer than a console line
/// may be is refused whole, before it is copied out of the page: cut
/// short, it would run as another command.
const SCRIPT_LINES_PER_FRAME: u32 = 16;
const SCRIPT_QUEUE_MAX: u32 = 256;
/// The canvas the game draws in (`web/index.html`).
pub(crate) const CANVAS: &str = "#arena";

pub(crate) fn plugin(app: &mut App) {
    app.insert_resource(PageClock { last_real: None, skipped: Duration::ZERO, pauses: 0 })
        .add_systems(First, advance_page_clock.before(TimeSystems))
        .add_systems(PreUpdate, follow_pointer_lock.after(InputSystems))
        .add_systems(Update, (take_script_lines, lock_on_click.after(ViewSet::Menus)))
        .add_systems(Last, (since_load_ms.pipe(gather), publish_status).chain());
}

/// The page's clock: the browser's, less the pauses.
#[derive(Resource, Debug)]
pub(crate) struct PageClock {
    /// The browser's instant at the last frame (none before the first).
    last_real: Option<Instant>,
    skipped: Duration,
    pauses: u32,
}

/// Before Bevy's clocks read it: this frame's instant on the page's clock.
fn advance_page_clock(mut clock: ResMut<PageClock>, mut strategy: ResMut<TimeUpdateStrategy>) {
    let now = Instant::now();
    let gap = clock.last_real.map_or(Duration::ZERO, |last| now.saturating_duration_since(last));
    if gap > MAX_FRAME_GAP {
        clock.skipped += gap - RESUMED_FRAME;
        clock.pauses += 1;
        if gap >= TOLD_PAUSE {
            info!("the page was paused for {:.1} s (a hidden tab?): the game resumes where it was", gap.as_secs_f32());
        }
    }
    clock.last_real = Some(now);
    *strategy = TimeUpdateStrategy::ManualInstant(now.checked_sub(clock.skipped).unwrap_or(now));
}

fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

/// Milliseconds since the page began loading (the browser's time origin).
fn since_load_ms() -> f64 {
    window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// Whether the page holds the pointer.
fn pointer_locked() -> bool {
    window().and_then(|w| w.document()).and_then(|d| d.pointer_lock_element()).is_some()
}

/// Esc (or the browser) releasing the pointer while the game holds it
/// opens the pause menu, as Esc does natively: the browser keeps that Esc to
/// itself, and Bevy still believes the cursor grabbed (closing the menu then
/// asks for the pointer again). While the pointer is free, the mouse does
/// not turn the view.
fn follow_pointer_lock(
    mut was_locked: Local<bool>,
    mut pause: ResMut<PauseMenu>,
    mut motion: ResMut<AccumulatedMouseMotion>,
    cursor: Query<&CursorOptions>,
) {
    let locked = pointer_locked();
    let held = cursor.iter().any(|c| c.grab_mode == CursorGrabMode::Locked);
    if *was_locked && !locked && held {
        pause.open = true;
    }
    *was_locked = locked;
    if !locked {
        motion.delta = Vec2::ZERO;
    }
}

/// A click while playing takes the pointer, when it is not held yet (the
/// browser grants it only on a click: the first request may have come too
/// late after the menu's).
fn lock_on_click(buttons: Res<ButtonInput<MouseButton>>, cursor: Query<&CursorOptions>) {
    let playing = cursor.iter().any(|c| c.grab_mode == CursorGrabMode::Locked);
    if playing && buttons.just_pressed(MouseButton::Left) && !pointer_locked() {
        let canvas = window().and_then(|w| w.document()).and_then(|d| d.query_selector(CANVAS).ok().flatten());
        if let Some(canvas) = canvas {
            request_pointer_lock(&canvas);
        }
    }
}

/// Asks for the pointer; a refusal (too soon after Esc, no click) is
/// caught, whether the browser throws it or rejects its promise: the next
/// click asks again.
fn request_pointer_lock(canvas: &web_sys::Element) {
    let Ok(request) = js_sys::Reflect::get(canvas, &JsValue::from_str("requestPointerLock")) else { return };
    let Ok(request) = request.dyn_into::<js_sys::Function>() else { return };
    match request.call0(canvas) {
        Ok(answer) => {
            // A promise (today's browsers): its refusal handled, not "uncaught".
            if let Ok(catch) = js_sys::Reflect::get(&answer, &JsValue::from_str("catch"))
                && let Ok(catch) = catch.dyn_into::<js_sys::Function>()
            {
                let ignore = web_sys::wasm_bindgen::closure::Closure::once_into_js(|_: JsValue| {});
                let _ = catch.call1(&answer, &ignore);
            }
        }
        Err(e) => debug!("the browser refused the pointer: {e:?}"),
    }
}

/// Console lines the page's scripts queued (`arena_console(line)` pushes
/// to `window.arena_console_queue`): a few a frame, a line too long refused.
fn take_script_lines(mut console: ResMut<Console>) {
    let Some(window) = window() else { return };
    let Ok(queue) = js_sys::Reflect::get(&window, &JsValue::from_str("arena_console_queue")) else { return };
    let Ok(queue) = queue.dyn_into::<js_sys::Array>() else { return };
    if queue.length() > SCRIPT_QUEUE_MAX {
        warn!("page scripts queued {} console lines: the oldest {SCRIPT_QUEUE_MAX} kept", queue.length());
        queue.set_length(SCRIPT_QUEUE_MAX);
    }
    for _ in 0..SCRIPT_LINES_PER_FRAME {
        if queue.length() == 0 {
            break;
        }
        let item = queue.shift();
        let Some(text) = item.dyn_ref::<js_sys::JsString>() else { continue };
        // UTF-16 units: never fewer than the line's characters; the console
        // checks the line's bytes again.
        if text.length() as usize > arena_protocol::console::MAX_LINE_BYTES {
            console.say(format!(
                "a page script's console line of {} characters refused (a line is at most {} bytes)",
                text.length(),
                arena_protocol::console::MAX_LINE_BYTES
            ));
            continue;
        }
        if let Some(line) = text.as_string() {
            console.submit(line);
        }
    }
}

/// `window.arena_status`, a plain object (JSON's), made afresh each frame.
fn publish_status(status: Res<PageStatus>, clock: Res<PageClock>, cursor: Query<&CursorOptions>) {
    let Some(window) = window() else { return };
    let mut value = match serde_json::to_value(&*status) {
        Ok(value) => value,
        Err(e) => {
            warn!("the page status cannot be written: {e}");
            return;
        }
    };
    if let Some(object) = value.as_object_mut() {
        object.insert("pointer_locked".into(), pointer_locked().into());
        object.insert("cursor_grabbed".into(), cursor.iter().any(|c| c.grab_mode == CursorGrabMode::Locked).into());
        object.insert("pauses".into(), clock.pauses.into());
        object.insert("paused_s".into(), clock.skipped.as_secs_f64().into());
    }
    let Ok(parsed) = js_sys::JSON::parse(&value.to_string()) else { return };
    let _ = js_sys::Reflect::set(&window, &JsValue::from_str("arena_status"), &parsed);
}
