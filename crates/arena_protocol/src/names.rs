//! Player names: what a client may call itself, how a name travels in the
//! netcode connect token's 256 bytes of user data, and which names the server
//! refuses (a name that poses as a bot, or that looks like someone else's).

use serde::{Deserialize, Serialize};

/// Longest player name, in characters.
pub const MAX_NAME_CHARS: usize = 16;
/// Bytes of user data in a netcode connect token.
pub const USER_DATA_BYTES: usize = 256;
/// Most combining marks kept on one character (more is "Zalgo" text that
/// spills over the lines around it).
const MAX_MARKS_PER_CHAR: usize = 2;

pub use arena_query::is_invisible;

/// Whether `c` means something to the console language (`console.rs`): `;`
/// ends a command and `"` quotes a word. A name holding them could turn an
/// administrator's `kick NAME` into other commands (issue 60: a player
/// named `#0;sv_password 1`).
fn is_console_syntax(c: char) -> bool {
    matches!(c, ';' | '"')
}

/// Cleans a name someone typed or sent: invisible and direction-changing
/// characters removed, and what the console language reads (`;`, `"`, and
/// a leading `#`, which names a player by id); piles of combining marks cut
/// down, runs of whitespace collapsed, trimmed, cut to [`MAX_NAME_CHARS`]
/// characters; an empty result becomes "Player". Any name it gives can be
/// written as one console word in quotes (`console::quote_word`).
pub fn clean_name(raw: &str) -> String {
    let mut out = String::new();
    for word in raw.split(char::is_whitespace).filter(|w| !w.is_empty()) {
        let mut cleaned = String::new();
        let mut marks = 0;
        for c in word.chars().filter(|c| !is_invisible(*c) && !is_console_syntax(*c)) {
            if unicode_normalization::char::is_combining_mark(c) {
                marks += 1;
                if marks > MAX_MARKS_PER_CHAR || cleaned.is_empty() {
                    continue;
                }
            } else {
                marks = 0;
            }
            cleaned.push(c);
        }
        if out.is_empty() {
            // `#3` is player 3 to `kick` and `status`: no name may read so.
            cleaned = cleaned.trim_start_matches('#').to_string();
        }
        if cleaned.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&cleaned);
    }
    let cut: String = out.chars().take(MAX_NAME_CHARS).collect();
    let cut = cut.trim_end().to_string();
    if cut.is_empty() { "Player".to_string() } else { cut }
}

/// What a name looks like, for telling look-alikes apart: Unicode's
/// confusable skeleton (TS #39: Cyrillic "а" and Latin "a", "0" and "O",
/// "l" and "I" alike), case-folded, and skeletonised again so that case
/// cannot hide a confusable either.
pub fn look(name: &str) -> String {
    let skeleton: String = unicode_security::skeleton(name).collect();
    unicode_security::skeleton(&skeleton.to_lowercase()).collect::<String>().to_lowercase()
}

/// Why the server refuses a (cleaned) name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NameRefusal {
    /// It ends in "(bot)" or "[bot]": only the server's bots are bots.
    PosesAsBot,
    /// It looks like the name of someone already playing (but is not the
    /// same text: a plain duplicate is numbered instead).
    LooksLike(String),
}

impl NameRefusal {
    /// In words, for the refused player (the names cleaned again: `other`
    /// came over the network, and the line may be logged).
    pub fn explain(&self, name: &str) -> String {
        let name = clean_name(name);
        match self {
            NameRefusal::PosesAsBot => format!("The name \"{name}\" poses as a bot; choose another."),
            NameRefusal::LooksLike(other) => {
                let other = clean_name(other);
                format!("The name \"{name}\" looks too much like \"{other}\", who is playing; choose another.")
            }
        }
    }
}

/// Whether the server refuses the cleaned name `name` among the names in `taken`.
pub fn refuse_name<'a>(name: &str, taken: impl Iterator<Item = &'a str>) -> Option<NameRefusal> {
    let lower = name.to_lowercase();
    let squeezed: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.ends_with("(bot)") || squeezed.ends_with("[bot]") || look(&squeezed).ends_with(&look("(bot)")) {
        return Some(NameRefusal::PosesAsBot);
    }
    let mine = look(name);
    taken
        .filter(|t| !t.eq_ignore_ascii_case(name) && t.to_lowercase() != lower)
        .find(|t| look(t) == mine)
        .map(|t| NameRefusal::LooksLike(t.to_string()))
}

/// Makes `name` differ from every name in `taken` by appending " 2", " 3", ...
/// (shortening the base so the result still fits).
pub fn unique_name<'a>(name: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let is_taken = |candidate: &str| taken.clone().any(|t| t.to_lowercase() == candidate.to_lowercase());
    if !is_taken(name) {
        return name.to_string();
    }
    // Beyond the number of taken names, some number is free.
    let limit = taken.clone().count() + 2;
    for n in 2..=limit {
        let suffix = format!(" {n}");
        let room = MAX_NAME_CHARS.saturating_sub(suffix.chars().count());
        let base: String = name.chars().take(room).collect();
        let candidate = format!("{}{suffix}", base.trim_end());
        if !is_taken(&candidate) {
            return candidate;
        }
    }
    format!("Player {limit}")
}

/// Packs a name into connect-token user data: a length byte, then UTF-8.
pub fn name_to_user_data(name: &str) -> [u8; USER_DATA_BYTES] {
    join_user_data(name, false)
}

/// The byte of the user data that holds how a client joins (after the
/// name's, which never reach it).
const JOIN_FLAGS_BYTE: usize = USER_DATA_BYTES - 1;
/// In [`JOIN_FLAGS_BYTE`]: the client joins to watch.
const JOIN_SPECTATE: u8 = 1;

/// The user data a client connects with: its name, and whether it comes to
/// watch (`arena join --spectate`), so that it never stands in the world.
pub fn join_user_data(name: &str, spectate: bool) -> [u8; USER_DATA_BYTES] {
    let name = clean_name(name);
    let mut data = [0u8; USER_DATA_BYTES];
    let bytes = name.as_bytes();
    let len = bytes.len().min(JOIN_FLAGS_BYTE - 1);
    data[0] = len as u8;
    data[1..1 + len].copy_from_slice(&bytes[..len]);
    data[JOIN_FLAGS_BYTE] = if spectate { JOIN_SPECTATE } else { 0 };
    data
}

/// Reads a name from untrusted user data; anything odd becomes a clean name.
pub fn name_from_user_data(data: &[u8; USER_DATA_BYTES]) -> String {
    let len = usize::from(data[0]).min(JOIN_FLAGS_BYTE - 1);
    clean_name(&String::from_utf8_lossy(&data[1..1 + len]))
}

/// Whether untrusted user data asks to watch (other bits are ignored).
pub fn spectate_from_user_data(data: &[u8; USER_DATA_BYTES]) -> bool {
    data[JOIN_FLAGS_BYTE] & JOIN_SPECTATE != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned() {
        assert_eq!(clean_name("  Ada   Lovelace \n"), "Ada Lovelace");
        assert_eq!(clean_name("\u{0007}bell\u{0000}"), "bell");
        assert_eq!(clean_name(""), "Player");
        assert_eq!(clean_name("   "), "Player");
        assert_eq!(clean_name("abcdefghijklmnopqrstuvwxyz").chars().count(), MAX_NAME_CHARS);
        assert_eq!(clean_name("ÅÄÖåäöÅÄÖåäöÅÄÖåäö").chars().count(), MAX_NAME_CHARS);
    }

    #[test]
    fn invisible_and_direction_changing_characters_go() {
        assert_eq!(clean_name("A\u{200B}d\u{200D}a"), "Ada");
        assert_eq!(clean_name("\u{202E}txet desrever"), "txet desrever");
        assert_eq!(clean_name("Bob\u{2066}\u{2069}\u{FEFF}"), "Bob");
        assert_eq!(clean_name("\u{3164}\u{115F}"), "Player", "fillers alone are no name");
        assert_eq!(clean_name("e\u{0301}"), "e\u{0301}", "an accent stays");
        assert_eq!(clean_name("Z\u{0300}\u{0301}\u{0302}\u{0303}\u{0304}a"), "Z\u{0300}\u{0301}a");
        assert_eq!(clean_name("x\u{E0041}\u{FE0F}"), "x");
    }

    /// Issue 60's finding 2: a player named `#0;sv_password 1` turned the
    /// administrator's `kick` of that name into `kick #0` and `sv_password 1`.
    #[test]
    fn names_hold_nothing_the_console_reads() {
        assert_eq!(clean_name("#0;sv_password 1"), "0sv_password 1");
        assert_eq!(clean_name("a\"b"), "ab");
        assert_eq!(clean_name("##1"), "1");
        assert_eq!(clean_name("# 1"), "1");
        assert_eq!(clean_name("#"), "Player");
        assert_eq!(clean_name(";\";"), "Player");
        assert_eq!(clean_name("Bob #1"), "Bob #1", "a # inside a name means nothing");
        for raw in ["#0;sv_password 1", "\"; quit", "x\"y z\"", "#\u{200B}#2", " ; #a;b ", "\u{202E}#1"] {
            let name = clean_name(raw);
            assert!(!name.starts_with('#') && !name.contains([';', '"']), "{raw:?} gave {name:?}");
            let word = crate::console::quote_word(&name).expect("a name is a word");
            assert_eq!(crate::console::split_commands(&word), [word.as_str()], "{raw:?}");
            assert_eq!(crate::console::split_words(&word), std::slice::from_ref(&name), "{raw:?}");
        }
    }

    #[test]
    fn a_refusal_names_nobody_with_a_line_end() {
        let line = NameRefusal::LooksLike("x\nINFO forged".into()).explain("y\rz");
        assert!(!line.contains(['\n', '\r']), "{line:?}");
    }

    #[test]
    fn bots_and_look_alikes_are_refused_plain_duplicates_numbered() {
        let taken = ["Ada", "Bob", "Ian"];
        assert_eq!(refuse_name("Ada (bot)", taken.iter().copied()), Some(NameRefusal::PosesAsBot));
        assert_eq!(refuse_name("Eve[BOT]", taken.iter().copied()), Some(NameRefusal::PosesAsBot));
        assert_eq!(refuse_name("Eve ( bot )", taken.iter().copied()), Some(NameRefusal::PosesAsBot));
        // Cyrillic А, a zero for an o, a lower-case L for a capital i.
        assert_eq!(refuse_name("\u{0410}da", taken.iter().copied()), Some(NameRefusal::LooksLike("Ada".into())));
        assert_eq!(refuse_name("B0b", taken.iter().copied()), Some(NameRefusal::LooksLike("Bob".into())));
        assert_eq!(refuse_name("lan", taken.iter().copied()), Some(NameRefusal::LooksLike("Ian".into())));
        assert_eq!(refuse_name("Ada", taken.iter().copied()), None, "the same name is numbered, not refused");
        assert_eq!(refuse_name("ADA", taken.iter().copied()), None);
        assert_eq!(refuse_name("Cy", taken.iter().copied()), None);
        assert_eq!(refuse_name("Abbot", taken.iter().copied()), None);
    }

    #[test]
    fn names_are_made_unique() {
        let taken = ["Ada", "ada 2", "Bob"];
        assert_eq!(unique_name("Ada", taken.iter().copied()), "Ada 3");
        assert_eq!(unique_name("Cy", taken.iter().copied()), "Cy");
        let long = "abcdefghijklmnop";
        let made = unique_name(long, [long].into_iter());
        assert_eq!(made, "abcdefghijklmn 2");
        assert!(made.chars().count() <= MAX_NAME_CHARS);
    }

    #[test]
    fn user_data_round_trip_and_garbage() {
        assert_eq!(name_from_user_data(&name_to_user_data("Ada")), "Ada");
        let mut garbage = [0xffu8; USER_DATA_BYTES];
        assert_eq!(name_from_user_data(&garbage).chars().count(), MAX_NAME_CHARS);
        garbage[0] = 0;
        assert_eq!(name_from_user_data(&garbage), "Player");
        assert!(spectate_from_user_data(&join_user_data("Eve", true)));
        assert!(!spectate_from_user_data(&join_user_data("Eve", false)));
        assert_eq!(name_from_user_data(&join_user_data("Eve", true)), "Eve");
    }
}
