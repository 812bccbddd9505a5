//! `--config FILE` of `arena server` (and of `host` and `play`): a server's
//! options from a RON file, keyed like `arena server`'s flags (`bots: 4`,
//! `tick: 128`, `password_file: "/run/secrets/arena"`). An unknown key is
//! refused, named. Each option is read as the flag it stands for; the
//! command line (the `arena` binary) adds those given neither there nor in
//! the environment, so the command line wins over the environment
//! (`ARENA_...`), which wins over the file.

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
    no_items: Option<bool>,
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
    /// How matches are played: "ffa", "tdm" or "duel" (`--mode`).
    mode: Option<String>,
    friendly_fire: Option<bool>,
    /// Voice between players: "on" or "off" (`--voice`).
    voice: Option<String>,
    max_spectators: Option<usize>,
    /// The map played (`--map`), and the maps played in turn (`--maps`).
    map: Option<String>,
    maps: Option<Vec<String>>,
    /// What votes may be called on: "map,mode,kick,restart" or "none" (`--vote-kinds`).
    vote_kinds: Option<String>,
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

/// One of a config file's options, as the flag of `arena server` it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOption {
    /// The file's key (`max_unlag_ms`), to name it in messages.
    pub key: &'static str,
    /// The flag of `arena server` it stands for (`--max-unlag-ms`).
    pub flag: &'static str,
    /// The flag's values: one for most, one per entry of a list
    /// (`public_addr`, `masters`), none for a switch that is on.
    pub values: Vec<String>,
}

/// The options the config file at `path` gives, each as `arena server`'s
/// flag; keys the file leaves out, switches set to `false` and empty lists
/// are not among them. Which of them apply is the command line's to decide
/// (those given neither there nor in the environment).
pub fn read_config_file(path: &Path) -> Result<Vec<FileOption>, ConfigFileError> {
    let file = read(path)?;
    let mut options = Vec::new();
    let mut add = |key: &'static str, flag: &'static str, values: Vec<String>| {
        options.push(FileOption { key, flag, values });
    };
    for (key, flag, value) in [
        ("name", "--name", file.name),
        ("bind", "--bind", file.bind.map(|a| a.to_string())),
        ("public_port", "--public-port", file.public_port.map(|p| p.to_string())),
        ("tick", "--tick", file.tick.map(|v| v.to_string())),
        ("snapshot_rate", "--snapshot-rate", file.snapshot_rate.map(|v| v.to_string())),
        ("max_unlag_ms", "--max-unlag-ms", file.max_unlag_ms.map(|v| v.to_string())),
        ("max_clients", "--max-clients", file.max_clients.map(|v| v.to_string())),
        ("bots", "--bots", file.bots.map(|v| v.to_string())),
        ("bot_skill", "--bot-skill", file.bot_skill.map(|v| v.to_string())),
        ("bot_seed", "--bot-seed", file.bot_seed.map(|v| v.to_string())),
        ("frag_limit", "--frag-limit", file.frag_limit.map(|v| v.to_string())),
        ("time_limit_min", "--time-limit-min", file.time_limit_min.map(|v| v.to_string())),
        ("password", "--password", file.password),
        ("password_file", "--password-file", file.password_file.map(|p| p.display().to_string())),
        ("seconds", "--seconds", file.seconds.map(|v| v.to_string())),
        ("record", "--record", file.record.map(|p| p.display().to_string())),
        ("record_keep", "--record-keep", file.record_keep.map(|v| v.to_string())),
        ("master_heartbeat_s", "--master-heartbeat-s", file.master_heartbeat_s.map(|v| v.to_string())),
        ("map_port", "--map-port", file.map_port),
        ("map_lease_s", "--map-lease-s", file.map_lease_s.map(|v| v.to_string())),
        ("mode", "--mode", file.mode),
        ("voice", "--voice", file.voice),
        ("max_spectators", "--max-spectators", file.max_spectators.map(|v| v.to_string())),
        ("map", "--map", file.map),
        ("vote_kinds", "--vote-kinds", file.vote_kinds),
    ] {
        if let Some(value) = value {
            add(key, flag, vec![value]);
        }
    }
    // The lists: `--public-addr` and `--master` (the file's `masters`) are repeatable.
    let public_addrs: Vec<String> = file.public_addr.unwrap_or_default().iter().map(|a| a.to_string()).collect();
    if !public_addrs.is_empty() {
        add("public_addr", "--public-addr", public_addrs);
    }
    let maps = file.maps.unwrap_or_default();
    if !maps.is_empty() {
        add("maps", "--maps", vec![maps.join(",")]);
    }
    let masters = file.masters.unwrap_or_default();
    if !masters.is_empty() {
        add("masters", "--master", masters);
    }
    for (key, flag, on) in [
        ("no_lag_compensation", "--no-lag-compensation", file.no_lag_compensation),
        ("no_subtick", "--no-subtick", file.no_subtick),
        ("no_projectile_compensation", "--no-projectile-compensation", file.no_projectile_compensation),
        ("no_items", "--no-items", file.no_items),
        ("bot_rifle_only", "--bot-rifle-only", file.bot_rifle_only),
        ("range", "--range", file.range),
        ("friendly_fire", "--friendly-fire", file.friendly_fire),
    ] {
        if on == Some(true) {
            add(key, flag, Vec::new());
        }
    }
    Ok(options)
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

    fn write(text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("arena-config-{}-{}.ron", std::process::id(), text.len()));
        std::fs::write(&path, text).unwrap_or_default();
        path
    }

    fn read_text(text: &str) -> Result<Vec<FileOption>, String> {
        let path = write(text);
        let options = read_config_file(&path).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(path);
        options
    }

    fn option(key: &'static str, flag: &'static str, values: &[&str]) -> FileOption {
        FileOption { key, flag, values: values.iter().map(|v| v.to_string()).collect() }
    }

    #[test]
    fn each_option_is_named_by_its_flag() {
        let options = read_text(
            "(name: \"From file\", tick: 128, public_addr: [\"203.0.113.7:27015\", \"[2001:db8::1]:27015\"], \
             masters: [\"master.example.org\"], no_subtick: true, range: false, bot_seed: 7)",
        );
        let want = vec![
            option("name", "--name", &["From file"]),
            option("tick", "--tick", &["128"]),
            option("bot_seed", "--bot-seed", &["7"]),
            option("public_addr", "--public-addr", &["203.0.113.7:27015", "[2001:db8::1]:27015"]),
            option("masters", "--master", &["master.example.org"]),
            option("no_subtick", "--no-subtick", &[]),
        ];
        assert_eq!(options, Ok(want));
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let message = read_text("(bots: 4, tickrate: 128)").err().unwrap_or_default();
        assert!(message.contains("tickrate"), "{message}");
    }

    #[test]
    fn a_file_too_large_is_refused() {
        let message = read_text(&format!("(name: \"{}\")", "x".repeat(MAX_CONFIG_FILE_BYTES as usize)));
        assert!(message.err().unwrap_or_default().contains("larger than"));
    }

    #[test]
    fn a_missing_file_is_an_error_that_names_it() {
        let path = std::env::temp_dir().join(format!("arena-config-{}-missing.ron", std::process::id()));
        let error = read_config_file(&path).map_err(|e| e.to_string());
        assert!(error.err().unwrap_or_default().contains(&path.display().to_string()));
    }
}
