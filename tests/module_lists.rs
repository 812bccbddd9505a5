//! Every crate's floor plan, checked against its code: the "Modules, bottom
//! up" list at the top of each `lib.rs` (and of any module folder that has
//! one) names every module the file declares, and nothing else, and each
//! module imports only modules listed above it or beside it on the same line
//! (the list's promise). A module added without a line, a line left after a
//! module went, or an import that runs back up fails here with its name.

// A test: a missing file or folder fails it at once, with its name.
#![allow(clippy::expect_used)]
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The files whose module list is checked: each crate's `lib.rs`, plus any
/// other source file that carries a "Modules, bottom up" heading.
fn plan_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut crates: Vec<PathBuf> =
        fs::read_dir(root.join("crates")).expect("crates/").map(|entry| entry.expect("crates/ entry").path()).collect();
    crates.sort();
    for krate in crates {
        let lib = krate.join("src/lib.rs");
        if lib.exists() {
            files.push(lib);
        }
        for file in rust_files(&krate.join("src")) {
            let text = fs::read_to_string(&file).expect("source file");
            if !files.contains(&file) && text.contains("Modules, bottom up") {
                files.push(file);
            }
        }
    }
    files
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else { return out };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The modules `text` declares with `mod name;` (any visibility), outside
/// inline modules (`mod tests { ... }` is not a file of the plan).
fn declared_modules(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        let Some(rest) = line.strip_suffix(';') else { continue };
        let rest = rest.strip_prefix("pub ").or_else(|| rest.strip_prefix("pub(crate) ")).unwrap_or(rest);
        if let Some(name) = rest.strip_prefix("mod ")
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            names.push(name.to_string());
        }
    }
    names
}

/// The list under "Modules, bottom up": each bullet's backticked names
/// before its colon, with the bullet's position (names on one bullet share
/// it).
fn listed_modules(text: &str) -> BTreeMap<String, usize> {
    let mut listed = BTreeMap::new();
    let mut in_list = false;
    let mut bullet = 0;
    for line in text.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            if in_list {
                break;
            }
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with('#') {
            in_list = doc.contains("Modules, bottom up");
            continue;
        }
        if !in_list {
            continue;
        }
        let Some(item) = doc.strip_prefix("- ") else { continue };
        let head = item.split_once(':').map_or(item, |(head, _)| head);
        bullet += 1;
        for (i, part) in head.split('`').enumerate() {
            if i % 2 == 1 {
                listed.insert(part.trim_end_matches('/').to_string(), bullet);
            }
        }
    }
    listed
}

/// The source of module `name` declared in `plan` (a `lib.rs`, `mod.rs` or
/// `folder.rs`): its own file, or every file of its folder.
fn module_sources(plan: &Path, name: &str) -> Vec<PathBuf> {
    let dir = plan.parent().expect("plan file's folder");
    let base = if plan.file_name().is_some_and(|f| f == "lib.rs" || f == "mod.rs" || f == "main.rs") {
        dir.to_path_buf()
    } else {
        dir.join(plan.file_stem().expect("file stem"))
    };
    let mut files = Vec::new();
    let single = base.join(format!("{name}.rs"));
    if single.exists() {
        files.push(single);
    }
    files.extend(rust_files(&base.join(name)));
    files
}

/// `text` without its `#[cfg(test)] mod NAME { ... }` blocks (braces
/// counted; a test module may import from anywhere). Other `#[cfg(test)]`
/// items stay.
fn outside_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        out.push_str(&rest[..at]);
        if !(trimmed.starts_with("mod ") || trimmed.starts_with("pub(crate) mod ")) {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        let Some(open) = after.find('{') else { return out };
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Modules of the same plan that `text` names through `crate::` (for a
/// crate's `lib.rs`) or `super::` (inside a folder), in code before its
/// tests.
fn imported_siblings(text: &str, prefix: &str, listed: &BTreeMap<String, usize>) -> Vec<String> {
    // The code outside test modules, comments left out (a doc link is no
    // import).
    let code: String =
        outside_tests(text).lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let code = code.as_str();
    let mut found = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        let after = &code[i + prefix.len()..];
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if listed.contains_key(&name) && !found.contains(&name) {
            found.push(name);
        }
    }
    // `use crate::{a, b::C}` groups.
    for (i, _) in code.match_indices(&format!("{prefix}{{")) {
        let group = &code[i + prefix.len() + 1..];
        let group = group.split('}').next().unwrap_or("");
        for part in group.split(',') {
            let name = part.trim().split("::").next().unwrap_or("").trim().to_string();
            if listed.contains_key(&name) && !found.contains(&name) {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn every_module_list_names_every_module_and_runs_bottom_up() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for plan in plan_files() {
        let text = fs::read_to_string(&plan).expect("plan file");
        let declared = declared_modules(&text);
        if declared.is_empty() {
            continue;
        }
        let listed = listed_modules(&text);
        let shown = plan.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(&plan).display().to_string();
        if listed.is_empty() {
            problems.push(format!("{shown}: declares {declared:?} but has no \"Modules, bottom up\" list"));
            continue;
        }
        checked += 1;
        for name in &declared {
            if !listed.contains_key(name) {
                problems.push(format!("{shown}: module `{name}` is missing from the list"));
            }
        }
        for name in listed.keys() {
            if !declared.contains(name) {
                problems.push(format!("{shown}: the list names `{name}`, which is not a module here"));
            }
        }
        let prefix = if plan.file_name().is_some_and(|f| f == "lib.rs") { "crate::" } else { "super::" };
        for (name, &place) in &listed {
            for source in module_sources(&plan, name) {
                let Ok(code) = fs::read_to_string(&source) else { continue };
                for used in imported_siblings(&code, prefix, &listed) {
                    if listed[&used] > place {
                        problems.push(format!(
                            "{shown}: `{name}` ({}) imports `{used}`, which the list puts after it",
                            source.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default()
                        ));
                    }
                }
            }
        }
    }
    assert!(checked >= 8, "only {checked} module lists found: is the heading still \"Modules, bottom up\"?");
    // The server's two wings stand side by side on one line of its list:
    // neither may name the other.
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/arena_server/src");
    for (wing, other) in [("tick", "internet"), ("internet", "tick")] {
        for file in rust_files(&server.join(wing)) {
            let code = outside_tests(&fs::read_to_string(&file).expect("server source"));
            for word in [format!("crate::{other}"), format!("super::super::{other}")] {
                if code.contains(&word) {
                    problems.push(format!("{}: the {wing} wing names the {other} wing ({word})", file.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "module lists out of step with the code:\n{}", problems.join("\n"));
}

#[test]
fn the_list_reader_sees_bullets_groups_and_folders() {
    let text = "//! Top.\n//!\n//! # Modules, bottom up\n//!\n//! - `a`: first.\n//! - `b`, `c/`: second,\n//!   continued: not a name `d`.\n\nmod a;\npub mod b;\npub(crate) mod c;\nmod tests {\n}\n";
    let listed = listed_modules(text);
    assert_eq!(listed.get("a"), Some(&1));
    assert_eq!(listed.get("b"), Some(&2));
    assert_eq!(listed.get("c"), Some(&2));
    assert_eq!(listed.get("d"), None);
    assert_eq!(declared_modules(text), ["a", "b", "c"]);
    let uses = imported_siblings(
        "use crate::{b::X, a};\nfn f() { crate::c::g() }\n#[cfg(test)]\nuse crate::z;",
        "crate::",
        &listed,
    );
    assert_eq!(uses, ["c", "b", "a"]);
    // A test module is left out, braces and all; code after it is read.
    let listed = listed_modules("//! # Modules, bottom up\n//! - `a`: a.\n//! - `d`: d.\n");
    let code = "#[cfg(test)]\nmod tests {\n    use crate::d;\n    fn t() { {} }\n}\nfn after() { crate::a::h() }\n";
    assert_eq!(imported_siblings(code, "crate::", &listed), ["a"]);
    // Other test-only items count.
    assert_eq!(imported_siblings("#[cfg(test)]\nfn helper() { crate::d::x() }\n", "crate::", &listed), ["d"]);
}

/// With `autotests = false`, cargo runs only the files a package's
/// `tests/main.rs` declares: a file of `tests/` without its `mod` line would
/// never be compiled or run, and nothing else would notice.
#[test]
fn every_test_file_is_a_module_of_its_packages_test_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for package in [root.to_path_buf(), root.join("crates/arena_fuzz")] {
        let tests = package.join("tests");
        let main = fs::read_to_string(tests.join("main.rs")).expect("tests/main.rs");
        let mut declared = declared_modules(&main);
        declared.sort();
        let mut files: Vec<String> = fs::read_dir(&tests)
            .expect("tests/")
            .map(|entry| entry.expect("tests/ entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            .filter_map(|path| path.file_stem().map(|stem| stem.to_string_lossy().into_owned()))
            .filter(|stem| stem != "main")
            .collect();
        files.sort();
        assert_eq!(
            declared,
            files,
            "{}: the `mod` lines of tests/main.rs against the files of tests/",
            package.display()
        );
        checked += files.len();
    }
    assert!(checked >= 33, "only {checked} test files found");
}
