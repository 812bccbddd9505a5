//! Every `arena lab` experiment, run briefly through the `arena` binary,
//! prints a report holding exactly the keys `docs/experiments.md` names for
//! it: none missing, none the manual leaves out, none printed twice; and
//! every experiment of the command line has its section there.
//!
//! How the manual names keys (its own words say the same to a reader):
//! - a paragraph starting "Every report has" names keys every report holds;
//! - a paragraph starting "The common keys" names the common keys, which a
//!   section's keys take in when they start with "the common keys";
//! - in a section `## NAME ...`, the paragraph starting "Keys" names, after
//!   its first colon, what the report of `arena lab NAME` holds;
//! - each backticked snake_case word is a key; words in parentheses right
//!   after a key (or after keys joined by "and") are keys inside it: it is an
//!   object holding them, or a list or map whose entries do. Parentheses
//!   with no backticked key are prose. A key the common keys give inner
//!   keys (`settings`) has them wherever it is named.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

const ARENA: &str = env!("CARGO_BIN_EXE_arena");
/// Read at build time: editing the manual rebuilds this test.
const MANUAL: &str = include_str!("../docs/experiments.md");

/// Each experiment's short run: arguments that keep it to a few seconds of
/// simulated (or wall) time; every other flag keeps its default. One test
/// per experiment, so that a failure names it.
macro_rules! short_runs {
    ($($name:ident: [$($arg:expr),* $(,)?]),* $(,)?) => {
        const SHORT_RUNS: &[(&str, &[&str])] = &[$((stringify!($name), &[$($arg),*])),*];
        $(
            #[test]
            fn $name() {
                check(stringify!($name), &[$($arg),*]);
            }
        )*
    };
}

short_runs! {
    prediction: ["--seconds", "1"],
    hitreg: ["--seconds", "1"],
    interpolation: ["--seconds", "1"],
    flick: ["--seconds", "1"],
    peek: ["--seconds", "1"],
    timing: ["--seconds", "1"],
    // One cap: each cap is a fresh server and a run of its own.
    unlag: ["--seconds", "1", "--caps", "400"],
    rockets: ["--seconds", "1"],
    bandwidth: ["--seconds", "1", "--players", "2"],
    killcam: ["--kills", "1"],
    demo: ["--seconds", "2", "--players", "2"],
    // Two trials: one alone, one contested.
    pickups: ["--seconds", "3"],
    teleport: ["--seconds", "4"],
    voice: ["--seconds", "1"],
    // Real processes on the wall clock: 5 s of settling, 1 s measured, and
    // one network client so that the `arena bots` report is read too.
    servercost: ["--seconds", "1", "--players", "2", "--clients", "1"],
    master: ["--seconds", "1", "--servers", "2", "--forged-addresses", "50", "--heartbeats", "500", "--getservers-per-s", "100"],
    // The smallest part (six interpolation runs), each as short as the others.
    sweep: ["--parts", "interpolation", "--run-seconds", "1"],
}

/// The experiments `arena lab --help` lists.
fn cli_experiments() -> Vec<String> {
    let out = Command::new(ARENA).args(["lab", "--help"]).output().expect("arena runs");
    assert!(out.status.success(), "arena lab --help failed: {}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8_lossy(&out.stdout);
    help.lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        // A command's line is indented two spaces; a wrapped description more.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_experiment_has_its_section_and_a_short_run() {
    let cli = cli_experiments();
    // The parse of the help found the commands at all.
    assert!(cli.iter().any(|c| c == "prediction"), "no experiments read from `arena lab --help`: {cli:?}");
    let manual = Manual::parse(MANUAL).unwrap_or_else(|e| panic!("docs/experiments.md: {e}"));
    for name in &cli {
        assert!(
            manual.sections.contains_key(name),
            "`arena lab {name}` has no `## {name}` section with a Keys paragraph in docs/experiments.md"
        );
        assert!(
            SHORT_RUNS.iter().any(|(n, _)| n == name),
            "`arena lab {name}` has no short run in tests/lab_keys.rs (add it to `short_runs!`)"
        );
    }
    for name in manual.sections.keys() {
        assert!(cli.contains(name), "docs/experiments.md names keys for `{name}`, which `arena lab` does not have");
    }
}

/// A key the manual names, and the keys it names inside it.
#[derive(Clone, Debug, PartialEq)]
struct Key {
    name: String,
    inner: Vec<Key>,
}

/// What the manual says the reports hold.
#[derive(Debug)]
struct Manual {
    /// Each experiment's keys, everything its report holds.
    sections: BTreeMap<String, Vec<Key>>,
}

impl Manual {
    fn parse(text: &str) -> Result<Self, String> {
        let paragraphs = |text: &str| -> Vec<String> {
            text.split("\n\n").map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
        };
        let after_colon = |p: &str| p.split_once(':').map_or(String::new(), |(_, rest)| rest.to_owned());
        let find = |start: &str| {
            paragraphs(text)
                .into_iter()
                .find(|p| p.starts_with(start))
                .ok_or_else(|| format!("no paragraph starting \"{start}\""))
        };
        let every = parse_keys(&find("Every report has")?)?;
        let common = parse_keys(&after_colon(&find("The common keys")?))?;
        let mut sections = BTreeMap::new();
        for section in text.split("\n## ").skip(1) {
            let name = section.split_whitespace().next().unwrap_or_default().to_owned();
            let keys: Vec<String> = paragraphs(section).into_iter().filter(|p| p.starts_with("Keys")).collect();
            let [paragraph] = keys.as_slice() else {
                if keys.is_empty() {
                    continue; // not an experiment (the flags, what lies outside `arena lab`)
                }
                return Err(format!("`## {name}` has {} Keys paragraphs", keys.len()));
            };
            let list = after_colon(paragraph);
            let mut keys = every.clone();
            if list.trim_start().starts_with("the common keys") {
                keys.extend(common.iter().cloned());
            }
            for key in parse_keys(&list)? {
                // `settings` named alone has the fields the common keys give it.
                let defined = common.iter().find(|c| c.name == key.name && key.inner.is_empty());
                keys.push(defined.cloned().unwrap_or(key));
            }
            if sections.insert(name.clone(), keys).is_some() {
                return Err(format!("two sections for `{name}`"));
            }
        }
        Ok(Self { sections })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Key(String),
    And,
    Open,
    Close,
    /// Any other word or punctuation: it ends a run of keys.
    Other,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            '`' => {
                let quoted: String = chars.by_ref().take_while(|c| *c != '`').collect();
                let snake = quoted.starts_with(|c: char| c.is_ascii_lowercase())
                    && quoted.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                tokens.push(if snake { Token::Key(quoted) } else { Token::Other });
            }
            c if c.is_whitespace() => {}
            c if c.is_alphanumeric() => {
                let mut word = String::from(c);
                while let Some(c) = chars.next_if(|c| c.is_alphanumeric() || *c == '\'' || *c == '-') {
                    word.push(c);
                }
                tokens.push(if word == "and" { Token::And } else { Token::Other });
            }
            _ => tokens.push(Token::Other),
        }
    }
    tokens
}

/// The keys a passage of the manual names (see the file's head).
fn parse_keys(text: &str) -> Result<Vec<Key>, String> {
    let tokens = tokens(text);
    let mut at = 0;
    let keys = parse_list(&tokens, &mut at, false).map_err(|e| format!("{e} in \"{text}\""))?;
    Ok(keys)
}

fn parse_list(tokens: &[Token], at: &mut usize, nested: bool) -> Result<Vec<Key>, String> {
    #[derive(PartialEq)]
    enum After {
        Key,
        And,
        Other,
    }
    let mut keys: Vec<Key> = Vec::new();
    // The keys a parenthesis here would belong to.
    let mut run: Vec<usize> = Vec::new();
    let mut after = After::Other;
    loop {
        let Some(token) = tokens.get(*at) else {
            return if nested { Err("an unclosed parenthesis".into()) } else { Ok(keys) };
        };
        *at += 1;
        match token {
            Token::Close if nested => return Ok(keys),
            Token::Close => return Err("an unopened parenthesis".into()),
            Token::Key(name) => {
                if after != After::And {
                    run.clear();
                }
                run.push(keys.len());
                keys.push(Key { name: name.clone(), inner: Vec::new() });
                after = After::Key;
            }
            Token::And if after == After::Key => after = After::And,
            Token::Open => {
                let inner = parse_list(tokens, at, true)?;
                if !inner.is_empty() {
                    if after != After::Key {
                        let names: Vec<&str> = inner.iter().map(|k| k.name.as_str()).collect();
                        return Err(format!("keys {names:?} in parentheses that follow no key"));
                    }
                    for &i in &run {
                        keys[i].inner = inner.clone();
                    }
                }
                run.clear();
                after = After::Other;
            }
            Token::And | Token::Other => {
                run.clear();
                after = After::Other;
            }
        }
    }
}

/// Parses JSON as serde_json does but refuses an object holding a key
/// twice, which serde_json (like most readers) would settle silently by
/// keeping the last.
fn parse_strict(text: &str) -> Result<Value, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut deserializer).map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    Ok(value)
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut list = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict)? {
            list.push(v);
        }
        Ok(Value::Array(list))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("the key `{key}` twice in one object")));
            }
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }
}

/// Where `object` and the manual's `keys` for it disagree, both ways.
fn disagreements(path: &str, object: &Map<String, Value>, keys: &[Key], out: &mut Vec<String>) {
    for key in keys {
        match object.get(&key.name) {
            None => out.push(format!("`{}` is named by the manual but missing", join(path, &key.name))),
            Some(value) if !key.inner.is_empty() => entries(&join(path, &key.name), value, &key.inner, out),
            Some(_) => {}
        }
    }
    for name in object.keys() {
        if !keys.iter().any(|k| &k.name == name) {
            out.push(format!("`{}` is printed but the manual does not name it", join(path, name)));
        }
    }
}

/// `value` should be an object holding `inner`, or a list or map (whose
/// entries' names are data) of such; an empty one could hide anything.
fn entries(path: &str, value: &Value, inner: &[Key], out: &mut Vec<String>) {
    match value {
        Value::Object(object) if inner.iter().any(|k| object.contains_key(&k.name)) => {
            disagreements(path, object, inner, out)
        }
        Value::Object(map) if !map.is_empty() => {
            for (name, entry) in map {
                entries(&join(path, name), entry, inner, out);
            }
        }
        Value::Array(list) if !list.is_empty() => {
            for (i, entry) in list.iter().enumerate() {
                entries(&format!("{path}[{i}]"), entry, inner, out);
            }
        }
        other => {
            let names: Vec<&str> = inner.iter().map(|k| k.name.as_str()).collect();
            let shown: String = other.to_string().chars().take(80).collect();
            out.push(format!("`{path}` should hold {names:?} (or be a list or map of such) but is {shown}"));
        }
    }
}

/// A directory of this test's own for what a run writes (removed after).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arena-lab-keys-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The one JSON file a run wrote into `dir`.
fn written_json(dir: &Path) -> String {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the scratch directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    let [file] = files.as_slice() else { panic!("expected one JSON file in {}, found {files:?}", dir.display()) };
    std::fs::read_to_string(file).expect("the JSON file reads")
}

/// Runs `arena lab NAME ARGS` and returns its report: stdout, or for
/// `sweep` (which prints nothing) the JSON file it writes.
fn run(name: &str, args: &[&str]) -> Value {
    let dir = scratch(name);
    let mut command = Command::new(ARENA);
    command.args(["lab", name]).args(args);
    // The runs that write files write them here, not into /tmp at large.
    if name == "sweep" || name == "demo" {
        command.arg("--out").arg(&dir);
    }
    let started = Instant::now();
    let out = command.output().expect("arena runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(
        out.status.success(),
        "arena lab {name} {} failed ({}); the end of its stderr:\n{}",
        args.join(" "),
        out.status,
        tail.join("\n")
    );
    eprintln!("arena lab {name} {}: {:.1} s", args.join(" "), started.elapsed().as_secs_f64());
    let text = if name == "sweep" { written_json(&dir) } else { String::from_utf8_lossy(&out.stdout).into_owned() };
    let _ = std::fs::remove_dir_all(&dir);
    parse_strict(text.trim()).unwrap_or_else(|e| panic!("arena lab {name}: not one JSON object ({e}):\n{text}"))
}

/// Runs an experiment briefly and checks its report against the manual.
fn check(name: &str, args: &[&str]) {
    let manual = Manual::parse(MANUAL).unwrap_or_else(|e| panic!("docs/experiments.md: {e}"));
    let Some(keys) = manual.sections.get(name) else {
        panic!("docs/experiments.md has no `## {name}` section with a Keys paragraph")
    };
    let report = run(name, args);
    let Some(object) = report.as_object() else { panic!("arena lab {name} printed {report}, not an object") };
    assert_eq!(
        object.get("experiment"),
        Some(&Value::from(name)),
        "arena lab {name}'s report names another experiment"
    );
    let mut problems = Vec::new();
    disagreements("", object, keys, &mut problems);
    // A sweep's lists hold the reports above: each checked against its own
    // experiment's keys (the sweep ran at least one).
    let mut nested = 0;
    for (list_name, list) in object.iter().filter_map(|(k, v)| Some((k, v.as_array()?))) {
        for (i, inner) in list.iter().enumerate() {
            let Some(inner) = inner.as_object() else { continue };
            let Some(experiment) = inner.get("experiment").and_then(Value::as_str) else { continue };
            match manual.sections.get(experiment) {
                Some(keys) => disagreements(&format!("{list_name}[{i}]"), inner, keys, &mut problems),
                None => problems.push(format!("`{list_name}[{i}]` is a `{experiment}` report, which has no section")),
            }
            nested += 1;
        }
    }
    if name == "sweep" {
        assert!(nested > 0, "the sweep's report held no report to check");
    }
    assert!(
        problems.is_empty(),
        "arena lab {name} {}: the report and docs/experiments.md disagree:\n  {}",
        args.join(" "),
        problems.join("\n  ")
    );
}

// The checker itself, on made-up text: it must be able to fail.

fn names(keys: &[Key]) -> Vec<String> {
    keys.iter()
        .map(|k| if k.inner.is_empty() { k.name.clone() } else { format!("{}({})", k.name, names(&k.inner).join(",")) })
        .collect()
}

#[test]
fn the_manuals_key_lists_parse_as_the_file_head_says() {
    let keys = parse_keys(
        " `a`, `b` and `c` (each: `d`, `e` (over the largest's)), `f` (prose, `--fps`), `g`, `h` (one row per \
         cap: `i`) and more, `DIR/x.json`",
    )
    .expect("parses");
    assert_eq!(names(&keys), ["a", "b(d,e)", "c(d,e)", "f", "g", "h(i)"]);
    assert!(parse_keys("`a`, some (`b`)").is_err(), "inner keys must follow their key");
    assert!(parse_keys("`a` (`b`").is_err());
}

#[test]
fn a_report_is_checked_both_ways_and_for_keys_twice() {
    let keys = parse_keys("`a`, `rows` (`x`, `y`), `kinds` (`n`)").expect("parses");
    let verdict = |json: &str| {
        let value = parse_strict(json).expect("JSON");
        let mut out = Vec::new();
        disagreements("", value.as_object().expect("an object"), &keys, &mut out);
        out
    };
    assert!(verdict(r#"{"a":1,"rows":[{"x":1,"y":null}],"kinds":{"k":{"n":2}}}"#).is_empty());
    let missing = verdict(r#"{"a":1,"rows":[{"x":1}],"kinds":{"k":{"n":2}}}"#);
    assert_eq!(missing, ["`rows[0].y` is named by the manual but missing"]);
    let extra = verdict(r#"{"a":1,"b":2,"rows":[{"x":1,"y":2}],"kinds":{"k":{"n":2}}}"#);
    assert_eq!(extra, ["`b` is printed but the manual does not name it"]);
    assert_eq!(verdict(r#"{"a":1,"rows":[],"kinds":{"k":{"n":2}}}"#).len(), 1, "an empty list hides its rows");
    assert!(parse_strict(r#"{"a":1,"a":2}"#).is_err(), "a key printed twice");
}
