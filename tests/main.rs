//! The root package's integration tests, in one binary: each module is one
//! file of `tests/`, named after what it tests (docs/development.md has the
//! table). One binary links the game once instead of once per file, which
//! was most of the time a fresh build spent on our own tests.
//!
//! Names are kept: `cargo test NAME` still filters, a test's full name is
//! `FILE::NAME` (`cargo test --test integration combat::` runs one file's).

mod chat;
mod clean_stop;
mod combat;
mod combat_loop;
mod demo;
mod docs;
mod hole_punch;
mod honest_edges;
// Drives the view's input systems: only with the window.
#[cfg(feature = "window")]
mod input_frame;
mod internet_reach;
mod internet_safety;
mod interp_delay;
mod io_thread;
mod items;
mod kill_cam;
mod lab_keys;
mod map_check;
mod map_download;
mod maps;
mod master_list;
mod modes;
mod module_lists;
mod netcode_baseline;
mod netcode_prediction;
mod range;
mod rates;
mod rcon;
mod rockets;
mod server_config;
mod server_queries;
mod subtick;
mod voice;
mod votes;
mod web_join;
