//! The windowed modes (the main menu, `play`, `host`, `join`, `demo play`):
//! opened by the view in a build with the `window` feature, refused with
//! [`NoWindow`] by one without it (`--no-default-features`: the headless
//! build of servers, masters, bots and the lab, with no renderer or winit).

use crate::cli::{DemoPlayArgs, HostArgs, JoinArgs, PlayArgs, WindowArgs};

/// A mode that opens the game's window, with its options (which a build
/// without the window parses only to refuse the mode).
#[derive(Debug)]
#[cfg_attr(not(feature = "window"), allow(dead_code))]
pub(crate) enum Windowed {
    Menu(WindowArgs),
    Play(PlayArgs),
    Host(HostArgs),
    Join(JoinArgs),
    DemoPlay(DemoPlayArgs),
}

#[cfg(feature = "window")]
pub(crate) use with_window::run;
#[cfg(not(feature = "window"))]
pub(crate) use without_window::run;

#[cfg(feature = "window")]
mod with_window {
    use arena_view::StartAction;

    use super::Windowed;

    /// Runs `mode` in the game's window until it closes, or says why it
    /// cannot start.
    pub(crate) fn run(mode: Windowed) -> Result<(), String> {
        let (start, window) = match mode {
            Windowed::Menu(window) => (Ok(StartAction::Menu), window),
            Windowed::Play(args) => (args.server_config().map(StartAction::QuickPlay), args.window),
            Windowed::Host(args) => (args.server_config().map(StartAction::Host), args.window),
            Windowed::Join(args) => (args.start(), args.window),
            Windowed::DemoPlay(args) => {
                let p = args.playback()?;
                return arena_view::run_demo(&p.file, p.start, p.resolution, p.screenshot);
            }
        };
        arena_view::run(start.and_then(|start| window.view_config(start))?)
    }
}

#[cfg(not(feature = "window"))]
mod without_window {
    use std::fmt;

    use super::Windowed;

    /// Why a windowed mode cannot run: this binary was built without the
    /// game's window.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct NoWindow {
        /// The command that asked for the window (`arena play`).
        pub command: &'static str,
    }

    impl fmt::Display for NoWindow {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "`{}` opens the game's window, and this build of arena has none (it was built with \
                 --no-default-features, for servers). Build it with its default features to play \
                 (`cargo build --release`). This build runs `arena server`, `master`, `servers`, \
                 `bots`, `lab`, `demo info` and `demo verify`.",
                self.command
            )
        }
    }

    impl std::error::Error for NoWindow {}

    impl Windowed {
        /// The command that asked for this mode.
        fn command(&self) -> &'static str {
            match self {
                Windowed::Menu(_) => "arena",
                Windowed::Play(_) => "arena play",
                Windowed::Host(_) => "arena host",
                Windowed::Join(_) => "arena join",
                Windowed::DemoPlay(_) => "arena demo play",
            }
        }
    }

    /// Refuses `mode`: there is no window to run it in.
    pub(crate) fn run(mode: Windowed) -> Result<(), String> {
        Err(NoWindow { command: mode.command() }.to_string())
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::cli::{self, Cli, Mode};

        #[test]
        fn a_windowed_mode_says_this_build_has_no_window_and_how_to_get_one() {
            let Ok(Cli { mode: Some(Mode::Play(args)), .. }) = cli::parse(["arena", "play", "--bots", "2"]) else {
                panic!("arena play parses")
            };
            let refused = run(Windowed::Play(args)).err().unwrap_or_default();
            assert!(refused.starts_with("`arena play` opens the game's window"), "{refused}");
            assert!(refused.contains("cargo build --release"), "{refused}");
        }
    }
}
