//! Arena in a browser tab: the entry point of the web build. The page's
//! script (`web/index.html`) loads this module; `main` runs the same game
//! as the native window in the page's canvas, its listen server inside the
//! page (`arena_view::run_web`), and a panic says so on the page rather than
//! leaving a frozen canvas.
//!
//! Natively this binary does nothing but say where the game is: the web
//! build is made by `scripts/web-build.sh`.

#[cfg(target_arch = "wasm32")]
fn main() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        show_problem(&format!(
            "Arena stopped: {info}. Reload the page to start again; the browser's console (F12) has the details."
        ));
    }));
    arena_view::run_web();
}

/// The page's `arena_problem(text)` (web/index.html), which shows `text`
/// over the canvas; nothing if the page has none.
#[cfg(target_arch = "wasm32")]
fn show_problem(text: &str) {
    use web_sys::wasm_bindgen::{JsCast, JsValue};
    let Some(window) = web_sys::window() else { return };
    let Ok(show) = js_sys::Reflect::get(&window, &JsValue::from_str("arena_problem")) else { return };
    if let Ok(show) = show.dyn_into::<js_sys::Function>() {
        let _ = show.call1(&JsValue::NULL, &JsValue::from_str(text));
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("arena_web is the browser build of Arena: scripts/web-build.sh builds it; run `arena` for the game");
    std::process::exit(2);
}
