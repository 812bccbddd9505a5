//! The remote console's key: Argon2id of the rcon password under the
//! server's salt, and the four subkeys (a seal key and a nonce key for each
//! way) that the seals of `super` use. The Argon2id output itself is never
//! kept, and a key never prints.

use blake2::Blake2bMac;
use blake2::digest::consts::{U32, U64};
use blake2::digest::{KeyInit as MacKeyInit, Mac};
use chacha20poly1305::aead::OsRng;
use chacha20poly1305::aead::rand_core::RngCore;

use super::{KEY_BYTES, SALT_BYTES, Salt};
use crate::key::MAX_PASSWORD_BYTES;

/// The labels the subkeys are keyed BLAKE2b of: one seal key and one nonce
/// key for each way, none equal to another whatever the password.
const LABEL_COMMAND_SEAL: &[u8] = b"arena rcon v2 command seal";
const LABEL_COMMAND_NONCE: &[u8] = b"arena rcon v2 command nonce";
const LABEL_ANSWER_SEAL: &[u8] = b"arena rcon v2 answer seal";
const LABEL_ANSWER_NONCE: &[u8] = b"arena rcon v2 answer nonce";

/// Argon2id memory cost, KiB, and passes (as the netcode key: OWASP's
/// minimum, 19 MiB, 2 passes).
const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;

/// Why a password cannot open a remote console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RconKeyError {
    /// Empty, or only spaces: an empty password never opens rcon.
    Empty,
    TooLong {
        bytes: usize,
    },
    Kdf(String),
    /// The system's randomness failed (making a server's salt).
    Random(String),
}

impl std::fmt::Display for RconKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RconKeyError::Empty => f.write_str("the rcon password is empty; an empty password never opens the console"),
            RconKeyError::TooLong { bytes } => {
                write!(f, "the rcon password is {bytes} bytes long; at most {MAX_PASSWORD_BYTES} are allowed")
            }
            RconKeyError::Kdf(e) => write!(f, "cannot derive a key from the rcon password: {e}"),
            RconKeyError::Random(e) => write!(f, "cannot make the rcon key's salt (no system randomness): {e}"),
        }
    }
}

impl std::error::Error for RconKeyError {}

/// `password` as a key is derived from (surrounding spaces do not count, as
/// for the game's password), or why it cannot open a console.
fn usable_password(password: &str) -> Result<&str, RconKeyError> {
    let password = password.trim();
    if password.is_empty() {
        return Err(RconKeyError::Empty);
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(RconKeyError::TooLong { bytes: password.len() });
    }
    Ok(password)
}

/// Whether `password` can open a console (not empty, not too long): what a
/// client refuses before anything is sent (its key waits for the server's salt).
pub fn check_password(password: &str) -> Result<(), RconKeyError> {
    usable_password(password).map(|_| ())
}

/// A new salt from the system's randomness: a server makes one at its start.
pub fn new_salt() -> Result<Salt, RconKeyError> {
    let mut salt = [0u8; SALT_BYTES];
    OsRng.try_fill_bytes(&mut salt).map_err(|e| RconKeyError::Random(e.to_string()))?;
    Ok(salt)
}

/// One way's keys (commands, or answers).
#[derive(Clone)]
pub(super) struct WayKeys {
    /// XChaCha20-Poly1305's key.
    pub(super) seal: [u8; 32],
    /// The synthetic nonces' BLAKE2b key.
    pub(super) nonce: [u8; KEY_BYTES],
}

/// The keys both ends seal with, derived from the rcon password and the
/// server's salt. The salt comes along (a server hands it out with each
/// challenge); the Argon2id output itself is not kept.
#[derive(Clone)]
pub struct RconKey {
    salt: Salt,
    pub(super) command: WayKeys,
    pub(super) answer: WayKeys,
}

impl std::fmt::Debug for RconKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key (logs, panics, debug dumps).
        f.write_str("RconKey(..)")
    }
}

/// A seal key: keyed BLAKE2b-256 of `label` under the Argon2id output.
fn seal_subkey(key: &[u8; KEY_BYTES], label: &[u8]) -> [u8; 32] {
    let mut mac = <Blake2bMac<U32> as MacKeyInit>::new(key.into());
    Mac::update(&mut mac, label);
    mac.finalize().into_bytes().into()
}

/// A nonce key: keyed BLAKE2b-512 of `label` under the Argon2id output.
fn nonce_subkey(key: &[u8; KEY_BYTES], label: &[u8]) -> [u8; KEY_BYTES] {
    let mut mac = <Blake2bMac<U64> as MacKeyInit>::new(key.into());
    Mac::update(&mut mac, label);
    mac.finalize().into_bytes().into()
}

impl RconKey {
    /// The key of `password` (surrounding spaces do not count, as for the
    /// game's password) under a server's `salt`. Argon2id at 19 MiB: tens
    /// of milliseconds, once per server start and once per command a
    /// client sends (when the challenge has brought the salt).
    pub fn derive(password: &str, salt: &Salt) -> Result<Self, RconKeyError> {
        let password = usable_password(password)?;
        let params = argon2::Params::new(MEMORY_KIB, PASSES, 1, Some(KEY_BYTES))
            .map_err(|e| RconKeyError::Kdf(e.to_string()))?;
        let kdf = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut key = [0u8; KEY_BYTES];
        kdf.hash_password_into(password.as_bytes(), salt, &mut key).map_err(|e| RconKeyError::Kdf(e.to_string()))?;
        Ok(Self {
            salt: *salt,
            command: WayKeys {
                seal: seal_subkey(&key, LABEL_COMMAND_SEAL),
                nonce: nonce_subkey(&key, LABEL_COMMAND_NONCE),
            },
            answer: WayKeys {
                seal: seal_subkey(&key, LABEL_ANSWER_SEAL),
                nonce: nonce_subkey(&key, LABEL_ANSWER_NONCE),
            },
        })
    }

    /// The key of `password` under a new salt ([`new_salt`]): a server's,
    /// made once at its start.
    pub fn with_new_salt(password: &str) -> Result<Self, RconKeyError> {
        // The password is checked first: no randomness spent on a refusal.
        let password = usable_password(password)?;
        Self::derive(password, &new_salt()?)
    }

    /// The salt this key was derived under: what a server's challenges carry.
    pub fn salt(&self) -> &Salt {
        &self.salt
    }
}
