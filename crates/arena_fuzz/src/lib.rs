//! Fuzzing on stable Rust. Every parser and rule that takes untrusted input
//! is a [`Target`]: a function from bytes that must never panic, and that
//! asserts what must hold of its output. The [`driver`] feeds each target
//! random inputs and mutations of valid ones, catches panics, and reports
//! how many inputs it tried and which panicked.
//!
//! There is no coverage guidance (libFuzzer needs a nightly toolchain, which
//! this project does not have); instead the inputs are shaped by what each
//! target parses: valid encodings mutated bit by bit, netcode headers with
//! every prefix byte and extreme sequence numbers, renet packets with every
//! kind and channel.
//!
//! The bounded run in this crate's tests is part of the test suite;
//! `scripts/fuzz.sh` runs the `arena-fuzz` binary for as long as asked.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `inputs`: input generation: random bytes, and mutations of a target's
//!   seeds.
//! - `target`: what a fuzz target is.
//! - `targets`: every target, by family.
//! - `driver`: random and mutated inputs into each target, panics caught.
//! - `flood`: `arena-fuzz flood`, a fuzzer over the network for soak tests
//!   of a real server process.

// A fuzz harness: a failed setup (no loopback socket, say) may panic, and a
// target's assertions panic by design; the driver catches and reports both.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod driver;
pub mod flood;
pub mod inputs;
pub mod target;
pub mod targets;

pub use driver::{Report, run};
pub use target::Target;
pub use targets::all;
