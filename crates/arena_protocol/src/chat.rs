//! Chat's rules both ends share: how long a line may be, what is taken out
//! of it (control characters and bidirectional overrides, which would let a
//! line rewrite how its reader's screen or log reads), and why the server
//! refuses one. Text is never markup: the view draws it as plain text.

use serde::{Deserialize, Serialize};

/// Longest chat line, in characters, after cleaning.
pub const MAX_CHAT_CHARS: usize = 128;
/// Longest chat line on the wire, bytes (128 characters of up to 4 bytes).
pub const MAX_CHAT_BYTES: usize = MAX_CHAT_CHARS * 4;

/// Why the server did not pass a line on (told to its sender only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatRefusal {
    /// More than the rate allows (1 a second, 3 at once).
    TooFast,
    /// Nothing left once cleaned.
    Empty,
    /// A team message where there are no teams.
    NoTeams,
}

impl ChatRefusal {
    /// In words, for the sender.
    pub fn explain(self) -> &'static str {
        match self {
            ChatRefusal::TooFast => "not sent: at most one message a second (three at once)",
            ChatRefusal::Empty => "not sent: the message is empty",
            ChatRefusal::NoTeams => "not sent: there are no teams in this game (Y says it to all)",
        }
    }
}

/// Whether `c` may stand in a chat line: no control characters (C0, C1,
/// DEL), no bidirectional controls (embeddings, overrides, isolates and
/// marks), and nothing else names refuse as invisible (zero-width spaces
/// and joiners, fillers such as U+3164 and U+2800, variation selectors,
/// tags): a line of nothing but those would show as blank, and one word
/// split by them slips past a reader's eye and any word filter.
pub fn allowed(c: char) -> bool {
    !c.is_control()
        && !crate::names::is_invisible(c)
        && !matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A chat line as it may be shown: disallowed characters dropped, runs of
/// whitespace one space, trimmed, at most [`MAX_CHAT_CHARS`] characters.
pub fn clean_chat(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_CHAT_BYTES));
    let mut chars = 0;
    let mut space = false;
    for c in text.chars().filter(|&c| allowed(c)) {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            if chars + 1 >= MAX_CHAT_CHARS {
                break;
            }
            out.push(' ');
            chars += 1;
            space = false;
        }
        if chars >= MAX_CHAT_CHARS {
            break;
        }
        out.push(c);
        chars += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_controls_and_overrides_and_keep_their_words() {
        assert_eq!(clean_chat("  gg \t wp\n"), "gg wp");
        assert_eq!(clean_chat("a\u{202E}evil\u{202C}b\u{0007}c\u{200F}"), "aevilbc");
        assert_eq!(clean_chat("\u{1b}[31mred"), "[31mred", "escape sequences lose their escape");
        assert_eq!(clean_chat("日本語 ok"), "日本語 ok");
        // What names refuse as invisible: zero-width characters, fillers,
        // the soft hyphen, variation selectors and tags.
        assert_eq!(clean_chat("a\u{200B}d\u{2060}m\u{00AD}i\u{FEFF}n"), "admin");
        assert_eq!(clean_chat("\u{3164}\u{2800}\u{115F}\u{FFA0}"), "", "a line of fillers is empty");
        assert_eq!(clean_chat("x\u{E0041}\u{FE0F}y"), "xy");
        assert_eq!(clean_chat("\u{2066}\u{2069}"), "");
        let long = "x".repeat(1000);
        assert_eq!(clean_chat(&long).chars().count(), MAX_CHAT_CHARS);
        let words = "ab ".repeat(100);
        let cleaned = clean_chat(&words);
        assert!(cleaned.chars().count() <= MAX_CHAT_CHARS && !cleaned.ends_with(' '), "{cleaned:?}");
        assert!(clean_chat(&"é".repeat(200)).len() <= MAX_CHAT_BYTES);
    }
}
