//! Stopping cleanly on a signal, the same in every long-running process
//! (the master, the dedicated server, the game): SIGTERM (Docker, systemd,
//! Kubernetes) and SIGINT (Ctrl+C) set a flag that the process's loop
//! watches, so that it says goodbye before it exits; a second signal while
//! it does exits at once.

use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Makes SIGTERM and SIGINT set `flag`, and either of them, arriving with
/// `flag` already set, exit the process at once (status 1). Tries both
/// signals; the first error, if any, is returned (that signal then ends the
/// process as it would without this).
#[cfg(not(target_arch = "wasm32"))]
pub fn stop_on_signals(flag: &Arc<AtomicBool>) -> io::Result<()> {
    let mut result = Ok(());
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        // In this order: the second signal finds the flag already set.
        let registered = signal_hook::flag::register_conditional_shutdown(signal, 1, flag.clone())
            .and_then(|_| signal_hook::flag::register(signal, flag.clone()));
        if let Err(e) = registered
            && result.is_ok()
        {
            result = Err(e);
        }
    }
    result
}

/// A page gets no signals: nothing to register.
#[cfg(target_arch = "wasm32")]
pub fn stop_on_signals(_: &Arc<AtomicBool>) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_signal_sets_the_flag_instead_of_ending_the_process() {
        let flag = Arc::new(AtomicBool::new(false));
        stop_on_signals(&flag).expect("registered");
        // One signal only: a second one would end this test process.
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).expect("raised");
        assert!(flag.load(Ordering::SeqCst));
    }
}
