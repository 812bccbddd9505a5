//! The manual points at real files: every path in backticks that the README
//! and the pages of `docs/` name (the netcode page names the files each
//! technique lives in), and every relative link between pages, exists. A
//! file renamed or split without its page following fails here.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// Where a path the manual names may start.
const TREE_ROOTS: [&str; 7] = ["crates/", "src/", "tests/", "scripts/", "docs/", "deploy/", ".ci/"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every page of the manual, with their names.
fn pages() -> Vec<(String, String)> {
    let mut pages = vec![("README.md".to_string(), read(&root().join("README.md")))];
    let mut names: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ is readable").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    names.sort();
    for path in names {
        let name = format!("docs/{}", path.file_name().and_then(|n| n.to_str()).unwrap_or_default());
        pages.push((name, read(&path)));
    }
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The paths in backticks: `crates/x/src/y.rs`, `crates/x/src/y.rs::item`
/// (the item dropped), `tests/z.rs`...; commands and code are not paths.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| TREE_ROOTS.iter().any(|r| span.starts_with(r)) && !span.contains(char::is_whitespace))
        .map(|span| span.split("::").next().unwrap_or(span).trim_end_matches(['.', ',', ':']).to_string())
        .collect()
}

/// The targets of relative Markdown links, `[text](page.md)` or
/// `[text](page.md#part)`, as (file, part): an empty file for `(#part)`
/// within the page; web addresses are left out.
fn links(text: &str) -> Vec<(String, Option<String>)> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .map(|target| match target.split_once('#') {
            Some((file, part)) => (file.to_string(), Some(part.to_string())),
            None => (target.to_string(), None),
        })
        .collect()
}

/// The files relative links lead to.
fn linked_files(text: &str) -> Vec<String> {
    links(text).into_iter().map(|(file, _)| file).filter(|f| !f.is_empty()).collect()
}

/// The anchors a page's headings make, as GitHub makes them: lower case,
/// spaces to hyphens, punctuation other than hyphens and underscores gone.
fn anchors(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_path_the_manual_names_exists() {
    let mut missing = Vec::new();
    for (page, text) in pages() {
        for path in named_paths(&text) {
            if !root().join(&path).exists() {
                missing.push(format!("{page}: `{path}`"));
            }
        }
    }
    assert!(missing.is_empty(), "paths named in the manual that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn the_netcode_page_names_the_files_of_each_technique() {
    let text = read(&root().join("docs/netcode.md"));
    let paths = named_paths(&text);
    // The paper's techniques and what came after, each by its file: if the
    // page stopped naming files (or this reader stopped finding them), the
    // check above would pass on nothing.
    for file in [
        "crates/arena_client/src/prediction.rs",
        "crates/arena_client/src/interpolation.rs",
        "crates/arena_server/src/tick/lag_compensation.rs",
        "crates/arena_client/src/sub_tick_shots.rs",
        "crates/arena_server/src/tick/demo_recording.rs",
        "crates/arena_sim/src/movement.rs",
    ] {
        assert!(paths.iter().any(|p| p == file), "docs/netcode.md does not name {file}");
    }
}

#[test]
fn every_link_between_pages_leads_somewhere() {
    let mut missing = Vec::new();
    for (page, text) in pages() {
        let dir = root().join(&page).parent().map(Path::to_path_buf).unwrap_or_else(root);
        for target in linked_files(&text) {
            if !dir.join(&target).exists() {
                missing.push(format!("{page}: ({target})"));
            }
        }
    }
    assert!(missing.is_empty(), "links in the manual to files that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn every_link_to_a_part_of_a_page_finds_its_heading() {
    let pages = pages();
    let mut missing = Vec::new();
    let mut checked = 0;
    for (page, text) in &pages {
        for (file, part) in links(text) {
            let Some(part) = part else { continue };
            // Pages of the manual only (the README links into docs/).
            let target = if file.is_empty() {
                page.clone()
            } else if page == "README.md" {
                file.clone()
            } else {
                format!("docs/{file}")
            };
            let Some((_, target_text)) = pages.iter().find(|(name, _)| *name == target) else { continue };
            checked += 1;
            if !anchors(target_text).contains(&part) {
                missing.push(format!("{page}: ({file}#{part})"));
            }
        }
    }
    assert!(missing.is_empty(), "links to headings that do not exist:\n{}", missing.join("\n"));
    assert!(checked >= 10, "only {checked} links to parts of pages found: the reader is broken");
}

#[test]
fn the_readers_find_paths_and_links() {
    assert_eq!(
        named_paths("see `crates/a/src/b.rs::Thing`, `arena host`, `tests/c.rs`."),
        ["crates/a/src/b.rs", "tests/c.rs"]
    );
    assert_eq!(
        linked_files("[a](netcode.md#peek) [b](https://x.org/y) [c](../LICENSE-MIT)"),
        ["netcode.md", "../LICENSE-MIT"]
    );
    assert_eq!(
        anchors("# Hosting\n## The netcode panel (F1)\ntext\n### Outside `arena lab`"),
        ["hosting", "the-netcode-panel-f1", "outside-arena-lab"]
    );
}
