//! Player names: what a client may call itself, and how a name travels in the
//! netcode connect token's 256 bytes of user data.

use crate::messages::MAX_NAME_CHARS;

/// Bytes of user data in a netcode connect token.
pub const USER_DATA_BYTES: usize = 256;

/// Cleans a name someone typed or sent: control characters removed, runs of
/// whitespace collapsed, trimmed, cut to [`MAX_NAME_CHARS`] characters; an empty
/// result becomes "Player".
pub fn clean_name(raw: &str) -> String {
    let mut out = String::new();
    for word in raw.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().filter(|c| !c.is_control()));
    }
    let cut: String = out.chars().take(MAX_NAME_CHARS).collect();
    let cut = cut.trim_end().to_string();
    if cut.is_empty() { "Player".to_string() } else { cut }
}

/// Makes `name` differ from every name in `taken` by appending " 2", " 3", ...
/// (shortening the base so the result still fits).
pub fn unique_name<'a>(name: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let is_taken = |candidate: &str| taken.clone().any(|t| t.eq_ignore_ascii_case(candidate));
    if !is_taken(name) {
        return name.to_string();
    }
    for n in 2.. {
        let suffix = format!(" {n}");
        let room = MAX_NAME_CHARS.saturating_sub(suffix.chars().count());
        let base: String = name.chars().take(room).collect();
        let candidate = format!("{}{suffix}", base.trim_end());
        if !is_taken(&candidate) {
            return candidate;
        }
    }
    unreachable!("the number of taken names is finite")
}

/// Packs a name into connect-token user data: a length byte, then UTF-8.
pub fn name_to_user_data(name: &str) -> [u8; USER_DATA_BYTES] {
    let name = clean_name(name);
    let mut data = [0u8; USER_DATA_BYTES];
    let bytes = name.as_bytes();
    let len = bytes.len().min(USER_DATA_BYTES - 1);
    data[0] = len as u8;
    data[1..1 + len].copy_from_slice(&bytes[..len]);
    data
}

/// Reads a name from untrusted user data; anything odd becomes a clean name.
pub fn name_from_user_data(data: &[u8; USER_DATA_BYTES]) -> String {
    let len = usize::from(data[0]).min(USER_DATA_BYTES - 1);
    clean_name(&String::from_utf8_lossy(&data[1..1 + len]))
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
    }
}
