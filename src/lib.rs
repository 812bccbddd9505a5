//! The `arena` package: the command line (in `main.rs`) and the pieces the
//! binary and the tests share: headless test harnesses and (later) the lab
//! experiments.

pub mod bots;
pub mod harness;
pub mod lab;
