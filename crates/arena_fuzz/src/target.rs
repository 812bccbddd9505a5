//! What a fuzz target is: a function from bytes that must never panic.
//! Imports nothing of this crate, so that every family of targets can
//! implement it without a circle.

/// Something to fuzz.
pub trait Target {
    fn name(&self) -> &'static str;
    /// Valid inputs to start mutations from.
    fn seeds(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    /// Runs one input. Panics only on a bug.
    fn run(&mut self, input: &[u8]);
    /// Starts afresh after a panic (stateful targets).
    fn reset(&mut self) {}
}
