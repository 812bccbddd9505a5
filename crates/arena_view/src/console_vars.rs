//! The console's variables: the paper's netcode ones (`arena_client::console`)
//! and the view's own, which of them the settings file keeps, and the check
//! of a kept value.

use std::sync::LazyLock;

use arena_protocol::console::Var;

/// The netcode variables saved in the settings file (the others are the
/// link conditioner's, which a player should not find still on next time).
pub(crate) const SAVED: [&str; 10] = [
    "cl_predict",
    "cl_reconcile",
    "cl_interpolate",
    "cl_interp",
    "cl_lagcompensation",
    "pushlatency",
    "cl_showhitboxes",
    "cl_updaterate",
    "cl_cmdrate",
    "rate",
];

/// The view's own variables.
const VIEW_VARS: [Var; 7] = [
    Var::integer("net_graph", Some("net_graph"), "0 off, 1 compact, 2 full, 3 full with the server ghosts", 0.0, 3.0),
    Var::switch("cl_autoaim", None, "the auto-aim demonstration: aim at the nearest player in sight, as drawn"),
    Var::integer("fps_max", Some("fps_max"), "most frames a second (0: as the display allows)", 0.0, 1000.0),
    Var::number("sensitivity", Some("sensitivity"), "mouse sensitivity", 0.1, 5.0),
    Var::text("name", Some("name"), "your name (from the next join)", 64),
    Var::text("rcon_password", Some("rcon_password"), "the remote console's password (never saved)", 128),
    Var::text("rcon_address", Some("rcon_address"), "a server to rcon other than the one joined (host:port)", 128),
];

pub(crate) static VARS: LazyLock<Vec<Var>> =
    LazyLock::new(|| arena_client::console::VARS.iter().chain(VIEW_VARS.iter()).copied().collect());

/// Whether `value` may be saved for variable `name`.
pub(crate) fn check_saved(name: &str, value: &str) -> Result<(), String> {
    let Some(var) = SAVED.contains(&name).then(|| VARS.iter().find(|v| v.name == name)).flatten() else {
        return Err(format!("\"{name}\" is not a saved console variable"));
    };
    let value = var.parse(value)?;
    // Within the range, and not in one of its gaps (`rate 500`).
    arena_client::console::set(&mut arena_client::NetcodeSettings::default(), var, &value).map(|_| ())
}
