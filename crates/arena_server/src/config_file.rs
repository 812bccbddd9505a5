//! `arena server --config FILE`: a dedicated server's options from a RON
//! file, keyed like the flags (`bots: 4`, `tick: 128`, `password_file:
//! "/run/secrets/arena"`). An unknown key is refused, named. The command
//! line wins over the environment (`ARENA_...`), which wins over the file:
//! the file's options become flags added after the command line's, for each
//! option given neither there nor in the environment.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Largest config file read, bytes.
pub const MAX_CONFIG_FILE_BYTES: u64 = 64 * 1024;

/// Every option of `arena server`, each optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerFile {
    name: Option<String>,
    bind: Option<SocketAddr>,
    public_addr: Option<Vec<SocketAddr>>,
    public_port: Option<u16>,
    tick: Option<u32>,
    snapshot_rate: Option<u32>,
    no_lag_compensation: Option<bool>,
    max_unlag_ms: Option<u16>,
    no_subtick: Option<bool>,
    no_projectile_compensation: Option<bool>,
    bot_rifle_only: Option<bool>,
    max_clients: Option<usize>,
    bots: Option<usize>,
    bot_skill: Option<f32>,
    bot_seed: Option<u64>,
    frag_limit: Option<u16>,
    time_limit_min: Option<f64>,
    password: Option<String>,
    password_file: Option<PathBuf>,
    range: Option<bool>,
    seconds: Option<f64>,
    record: Option<PathBuf>,
    record_keep: Option<usize>,
    /// Internet masters (`--master`, `ARENA_MASTERS`).
    masters: Option<Vec<String>>,
    master_heartbeat_s: Option<u32>,
    /// Ask the router for the port (`--map-port`: "auto", "off", or some of
    /// "upnp,natpmp,pcp"), and the lease asked for.
    map_port: Option<String>,
    map_lease_s: Option<u32>,
}

/// Why a config file cannot be used.
#[derive(Debug)]
pub enum ConfigFileError {
    Read(PathBuf, std::io::Error),
    TooLarge(PathBuf),
    Parse(PathBuf, String),
}

impl std::fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigFileError::Read(path, e) => write!(f, "cannot read the config file {}: {e}", path.display()),
            ConfigFileError::TooLarge(path) => {
                write!(f, "the config file {} is larger than {MAX_CONFIG_FILE_BYTES} bytes", path.display())
            }
            ConfigFileError::Parse(path, e) => write!(f, "the config file {} is not valid: {e}", path.display()),
        }
    }
}

/// The environment variable of a flag: `--max-unlag-ms` is `ARENA_MAX_UNLAG_MS`.
pub fn env_name(flag: &str) -> String {
    format!("ARENA_{}", flag.trim_start_matches('-').replace('-', "_").to_uppercase())
}

/// The command line with the file's options added, if `args` is `arena
/// server ... --config FILE ...`; `args` as they are otherwise.
pub fn with_config_file(
    args: Vec<String>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, ConfigFileError> {
    if args.get(1).map(String::as_str) != Some("server") {
        return Ok(args);
    }
    let config = args.iter().enumerate().find_map(|(i, a)| {
        if a == "--config" { args.get(i + 1).cloned() } else { a.strip_prefix("--config=").map(str::to_string) }
    });
    let Some(path) = config.or_else(|| env("ARENA_CONFIG")) else { return Ok(args) };
    let file = read(Path::new(&path))?;
    let given = |flag: &str| {
        args.iter().any(|a| a == flag || a.starts_with(&format!("{flag}="))) || env(&env_name(flag)).is_some()
    };
    let mut added: Vec<String> = Vec::new();
    let mut add = |flag: &str, value: Option<String>| {
        if let Some(value) = value
            && !given(flag)
        {
            added.push(flag.to_string());
            added.push(value);
        }
    };
    add("--name", file.name);
    add("--bind", file.bind.map(|a| a.to_string()));
    add("--public-port", file.public_port.map(|p| p.to_string()));
    add("--tick", file.tick.map(|v| v.to_string()));
    add("--snapshot-rate", file.snapshot_rate.map(|v| v.to_string()));
    add("--max-unlag-ms", file.max_unlag_ms.map(|v| v.to_string()));
    add("--max-clients", file.max_clients.map(|v| v.to_string()));
    add("--bots", file.bots.map(|v| v.to_string()));
    add("--bot-skill", file.bot_skill.map(|v| v.to_string()));
    add("--bot-seed", file.bot_seed.map(|v| v.to_string()));
    add("--frag-limit", file.frag_limit.map(|v| v.to_string()));
    add("--time-limit-min", file.time_limit_min.map(|v| v.to_string()));
    add("--password", file.password);
    add("--password-file", file.password_file.map(|p| p.display().to_string()));
    add("--seconds", file.seconds.map(|v| v.to_string()));
    add("--record", file.record.map(|p| p.display().to_string()));
    add("--record-keep", file.record_keep.map(|v| v.to_string()));
    add("--master-heartbeat-s", file.master_heartbeat_s.map(|v| v.to_string()));
    add("--map-port", file.map_port);
    add("--map-lease-s", file.map_lease_s.map(|v| v.to_string()));
    if !given("--public-addr") {
        for addr in file.public_addr.unwrap_or_default() {
            added.push("--public-addr".into());
            added.push(addr.to_string());
        }
    }
    // `--master` is repeatable; its variable is ARENA_MASTERS (a list).
    if !given("--master") && env("ARENA_MASTERS").is_none() {
        for master in file.masters.unwrap_or_default() {
            added.push(format!("--master={master}"));
        }
    }
    for (flag, on) in [
        ("--no-lag-compensation", file.no_lag_compensation),
        ("--no-subtick", file.no_subtick),
        ("--no-projectile-compensation", file.no_projectile_compensation),
        ("--bot-rifle-only", file.bot_rifle_only),
        ("--range", file.range),
    ] {
        if on == Some(true) && !given(flag) {
            added.push(flag.to_string());
        }
    }
    let mut args = args;
    args.extend(added);
    Ok(args)
}

fn read(path: &Path) -> Result<ServerFile, ConfigFileError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| ConfigFileError::Read(path.to_path_buf(), e))?;
    // Read one byte past the limit: a longer file is refused, not cut short.
    let mut text = String::new();
    file.take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| ConfigFileError::Read(path.to_path_buf(), e))?;
    if text.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(ConfigFileError::TooLarge(path.to_path_buf()));
    }
    parse_config_file(&text).map_err(|e| ConfigFileError::Parse(path.to_path_buf(), e))
}

/// Checks a config file's text: `Ok` when every key is known and every
/// value has its type (what the fuzz harness drives).
pub fn check_config_file(text: &str) -> Result<(), String> {
    parse_config_file(text).map(|_| ())
}

fn parse_config_file(text: &str) -> Result<ServerFile, String> {
    // Keys are written bare (`bots: 4`), not `bots: Some(4)`.
    ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(text)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn write(text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("arena-config-{}-{}.ron", std::process::id(), text.len()));
        std::fs::write(&path, text).unwrap_or_default();
        path
    }

    #[test]
    fn the_command_line_wins_over_the_environment_which_wins_over_the_file() {
        let path = write("(name: \"From file\", bots: 4, tick: 128, no_subtick: true)");
        let line = format!("arena server --config {} --tick 32", path.display());
        let env = |key: &str| (key == "ARENA_BOTS").then(|| "2".to_string());
        let got = with_config_file(args(&line), env).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(path);
        let mut want = args(&line);
        want.extend(["--name".to_string(), "From file".to_string(), "--no-subtick".to_string()]);
        assert_eq!(got, Ok(want));
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let path = write("(bots: 4, tickrate: 128)");
        let line = format!("arena server --config {}", path.display());
        let error = with_config_file(args(&line), |_| None).map(|_| ()).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(path);
        let message = error.err().unwrap_or_default();
        assert!(message.contains("tickrate"), "{message}");
    }

    #[test]
    fn a_file_too_large_is_refused() {
        let path = write(&format!("(name: \"{}\")", "x".repeat(MAX_CONFIG_FILE_BYTES as usize)));
        let line = format!("arena server --config {}", path.display());
        let error = with_config_file(args(&line), |_| None).map(|_| ()).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(path);
        assert!(error.err().unwrap_or_default().contains("larger than"));
    }

    #[test]
    fn masters_come_from_the_file_unless_the_line_or_the_environment_gives_them() {
        let path = write("(masters: [\"master.example.org\", \"192.0.2.1:27950\"], master_heartbeat_s: 60)");
        let line = format!("arena server --config {}", path.display());
        let from_file = with_config_file(args(&line), |_| None).map_err(|e| e.to_string());
        let env = |key: &str| (key == "ARENA_MASTERS").then(|| "elsewhere.example.org".to_string());
        let from_env = with_config_file(args(&line), env).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(path);
        let mut want = args(&line);
        want.extend(
            ["--master-heartbeat-s", "60", "--master=master.example.org", "--master=192.0.2.1:27950"].map(String::from),
        );
        assert_eq!(from_file, Ok(want));
        let mut want = args(&line);
        want.extend(["--master-heartbeat-s", "60"].map(String::from));
        assert_eq!(from_env, Ok(want));
    }

    #[test]
    fn other_modes_and_no_file_are_left_alone() {
        assert_eq!(with_config_file(args("arena play --bots 2"), |_| None).ok(), Some(args("arena play --bots 2")));
        assert_eq!(with_config_file(args("arena server --bots 2"), |_| None).ok(), Some(args("arena server --bots 2")));
        assert_eq!(env_name("--max-unlag-ms"), "ARENA_MAX_UNLAG_MS");
    }
}
