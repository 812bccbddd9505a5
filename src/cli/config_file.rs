//! `--config FILE` on `server`, `host` and `play`: the file's options as
//! flags to add to the command line, each option given neither there nor
//! (for `server`) in the environment, in the subcommand's own terms.

use std::ffi::OsString;
use std::path::PathBuf;

use arena_server::{ConfigFileError, FileOption};
use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

/// The subcommand whose flags the file is keyed by (a dedicated server's).
const DEDICATED: &str = "server";

/// Why a config file's options cannot be added.
#[derive(Debug)]
pub(crate) enum ConfigFileArgsError {
    /// The file cannot be read, or is not a config file.
    File(ConfigFileError),
    /// The file has an option the subcommand does not take (`bind` on
    /// `host`, which listens on `--port`; `public_addr` on `play`).
    NotAnOption { path: PathBuf, key: &'static str, mode: String },
}

impl std::fmt::Display for ConfigFileArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigFileArgsError::File(e) => write!(f, "{e}"),
            ConfigFileArgsError::NotAnOption { path, key, mode } => {
                write!(f, "the config file {} sets `{key}`, which is not an option of `arena {mode}`", path.display())
            }
        }
    }
}

/// The flags a `--config FILE` adds to a command line that `grammar` parsed
/// as `matches`: none when its subcommand has no `--config` or it is not
/// given (on the command line, or for `server` as `ARENA_CONFIG`).
pub(super) fn file_flags(grammar: &Command, matches: &ArgMatches) -> Result<Vec<OsString>, ConfigFileArgsError> {
    let Some((mode, given)) = matches.subcommand() else { return Ok(Vec::new()) };
    // An error here is a subcommand without a `--config` option.
    let Ok(Some(path)) = given.try_get_one::<PathBuf>("config") else { return Ok(Vec::new()) };
    let Some(subcommand) = grammar.find_subcommand(mode) else { return Ok(Vec::new()) };
    let options = arena_server::read_config_file(path).map_err(ConfigFileArgsError::File)?;
    let mut flags = Vec::new();
    for option in &options {
        let not_an_option =
            || ConfigFileArgsError::NotAnOption { path: path.clone(), key: option.key, mode: mode.to_string() };
        let flag = flag_on(mode, option).ok_or_else(not_an_option)?;
        let long = flag.trim_start_matches('-');
        let arg = subcommand.get_arguments().find(|arg| arg.get_long() == Some(long)).ok_or_else(not_an_option)?;
        if let Some(ValueSource::CommandLine | ValueSource::EnvVariable) = given.value_source(arg.get_id().as_str()) {
            continue;
        }
        // A dedicated server's `--server-name` is its name too: given, it
        // wins over the file's `name` as `--name` would.
        if mode == DEDICATED
            && option.key == "name"
            && let Some(ValueSource::CommandLine | ValueSource::EnvVariable) = given.value_source("server_name")
        {
            continue;
        }
        flags.extend(as_flags(flag, &option.values));
    }
    Ok(flags)
}

/// The flag a file's option stands for on `mode`'s command line. The file
/// is keyed by `arena server`'s flags; on a listen server (`host`, `play`)
/// its `name` is the game's (`--server-name`: their `--name` is the
/// player's), and `bind` and `seconds` are a dedicated server's alone
/// (`host` listens on `--port`; a window's `--seconds` times a screenshot).
fn flag_on(mode: &str, option: &FileOption) -> Option<&'static str> {
    match option.flag {
        flag if mode == DEDICATED => Some(flag),
        "--name" => Some("--server-name"),
        "--bind" | "--seconds" => None,
        flag => Some(flag),
    }
}

/// `--flag=VALUE` for each value (so that a value that starts with `-` is
/// not taken for a flag), or `--flag` alone for a switch.
fn as_flags(flag: &str, values: &[String]) -> Vec<OsString> {
    if values.is_empty() {
        return vec![flag.into()];
    }
    values.iter().map(|value| format!("{flag}={value}").into()).collect()
}
