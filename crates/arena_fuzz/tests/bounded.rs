//! The bounded fuzz run of the test suite: every target, a few thousand
//! inputs each, no panic. (`scripts/fuzz.sh` runs the long one.)

use arena_fuzz::{all, run};

/// Inputs per target: enough to reach every branch the shaped inputs aim
/// at, few enough for a test run of seconds.
const INPUTS: u64 = 3_000;

#[test]
fn no_target_panics_on_a_bounded_run() {
    let mut failures = Vec::new();
    for mut target in all() {
        let report = run(target.as_mut(), INPUTS, 0x5EED, None);
        assert_eq!(report.inputs, INPUTS, "{} stopped early", report.target);
        if report.panics > 0 {
            failures.push(report.to_string());
        }
    }
    assert!(failures.is_empty(), "panics:\n{}", failures.join("\n"));
}
