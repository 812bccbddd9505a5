//! The netcode key. A private game's key is derived from its password with
//! Argon2id (a memory-hard password KDF), so that only a client that knows the
//! password can make a connect token the server can open, and nobody on the
//! path can read the session keys inside it. An open game uses the all-zero
//! key that everyone knows: anyone may join, and the session keys are only as
//! secret as the path.

/// Bytes in a netcode key.
pub const KEY_BYTES: usize = 32;

/// A netcode private key.
pub type NetcodeKey = [u8; KEY_BYTES];

/// The key of an open game.
pub const OPEN_KEY: NetcodeKey = [0; KEY_BYTES];

/// Longest password accepted, bytes of UTF-8.
pub const MAX_PASSWORD_BYTES: usize = 128;

/// Argon2id's salt. It is fixed because client and server must derive the
/// same key from the password alone; it still keeps tables computed for
/// other programs useless against Arena's keys.
const SALT: &[u8] = b"arena netcode key v1";
/// Argon2id memory cost, KiB (OWASP's minimum recommendation: 19 MiB).
const MEMORY_KIB: u32 = 19 * 1024;
/// Argon2id passes over the memory.
const PASSES: u32 = 2;

/// Why a password cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PasswordError {
    TooLong { bytes: usize },
    Kdf(String),
}

impl std::fmt::Display for PasswordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PasswordError::TooLong { bytes } => {
                write!(f, "the password is {bytes} bytes long; at most {MAX_PASSWORD_BYTES} are allowed")
            }
            PasswordError::Kdf(e) => write!(f, "cannot derive a key from the password: {e}"),
        }
    }
}

impl std::error::Error for PasswordError {}

/// A game's password as the player typed it: leading and trailing spaces do
/// not count, and an empty password means an open game.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Password(Option<String>);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the password itself (logs, panics, debug dumps).
        f.write_str(if self.0.is_some() { "Password(set)" } else { "Password(open)" })
    }
}

impl Password {
    /// No password: an open game.
    pub const OPEN: Password = Password(None);

    /// A password from what was typed; empty means none.
    pub fn new(text: &str) -> Result<Self, PasswordError> {
        let text = text.trim();
        if text.len() > MAX_PASSWORD_BYTES {
            return Err(PasswordError::TooLong { bytes: text.len() });
        }
        Ok(Self((!text.is_empty()).then(|| text.to_string())))
    }

    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// The netcode key for this password (the open key without one).
    pub fn key(&self) -> Result<NetcodeKey, PasswordError> {
        let Some(password) = &self.0 else { return Ok(OPEN_KEY) };
        let params = argon2::Params::new(MEMORY_KIB, PASSES, 1, Some(KEY_BYTES))
            .map_err(|e| PasswordError::Kdf(e.to_string()))?;
        let kdf = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut key = [0u8; KEY_BYTES];
        kdf.hash_password_into(password.as_bytes(), SALT, &mut key).map_err(|e| PasswordError::Kdf(e.to_string()))?;
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_password_gives_the_same_key_and_others_differ() -> Result<(), PasswordError> {
        let a = Password::new("swordfish")?.key()?;
        assert_eq!(a, Password::new("  swordfish ")?.key()?, "surrounding spaces do not count");
        assert_ne!(a, Password::new("Swordfish")?.key()?);
        assert_ne!(a, OPEN_KEY);
        assert_eq!(Password::new("")?.key()?, OPEN_KEY);
        assert!(!Password::new("   ")?.is_set());
        Ok(())
    }

    #[test]
    fn long_passwords_are_refused_and_never_printed() {
        assert!(matches!(Password::new(&"x".repeat(129)), Err(PasswordError::TooLong { bytes: 129 })));
        let secret = Password::new("hunter2").unwrap_or_default();
        assert!(!format!("{secret:?}").contains("hunter2"));
    }
}
