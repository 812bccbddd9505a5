//! Who the relay lets in: the credentials, the TURN REST form of them
//! (coturn's `--use-auth-secret`), and the keyed hashes of STUN's long-term
//! mechanism (the key `MD5(username:realm:password)`, HMAC-SHA1 with it).

use hmac::{Hmac, KeyInit, Mac};
use md5::{Digest, Md5};
use sha1::Sha1;

/// A username and password for the relay's long-term credential mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    /// The password is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("username", &self.username).field("password", &"..").finish()
    }
}

/// TURN REST credentials (coturn `--use-auth-secret`): username
/// `EXPIRY:NAME`, password base64(HMAC-SHA1(secret, username)). The relay
/// admits them until `expires_unix_s`; it counts its `--user-quota` by NAME.
pub fn rest_credentials(secret: &[u8], expires_unix_s: u64, name: &str) -> Credentials {
    let username = format!("{expires_unix_s}:{name}");
    let password = base64(&hmac_sha1(secret, &[username.as_bytes()]));
    Credentials { username, password }
}

/// The long-term key: MD5 of `username:realm:password` (RFC 8489 §9.2.2).
/// The password is taken as it is (no SASLprep: REST passwords are base64,
/// ASCII already).
pub(crate) fn long_term_key(username: &str, realm: &[u8], password: &str) -> [u8; 16] {
    let mut md5 = Md5::new();
    md5.update(username.as_bytes());
    md5.update(b":");
    md5.update(realm);
    md5.update(b":");
    md5.update(password.as_bytes());
    md5.finalize().into()
}

/// HMAC-SHA1 of the concatenation of `parts` under `key`.
pub(crate) fn hmac_sha1(key: &[u8], parts: &[&[u8]]) -> [u8; 20] {
    // HMAC takes a key of any length: this never fails.
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(key) else { return [0; 20] };
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Whether `tag` is the HMAC-SHA1 of `parts` under `key`, in constant time.
pub(crate) fn hmac_sha1_matches(key: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(key) else { return false };
    for part in parts {
        mac.update(part);
    }
    mac.verify_slice(tag).is_ok()
}

/// Standard base64 with padding (RFC 4648 §4).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        // RFC 2202 test case 2.
        let tag = hmac_sha1(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(tag, *b"\xef\xfc\xdf\x6a\xe5\xeb\x2f\xa2\xd2\x74\x16\xd5\xf1\x84\xdf\x9c\x25\x9a\x7c\x79");
        assert!(hmac_sha1_matches(b"Jefe", &[b"what do ya want for nothing?"], &tag));
        assert!(!hmac_sha1_matches(b"jefe", &[b"what do ya want for nothing?"], &tag));
    }

    #[test]
    fn rest_credentials_are_expiry_colon_name_and_a_base64_hmac() {
        let c = rest_credentials(b"secret", 1_700_000_000, "203.0.113.7");
        assert_eq!(c.username, "1700000000:203.0.113.7");
        // Python: base64.b64encode(hmac.new(b"secret", U, hashlib.sha1).digest())
        assert_eq!(c.password, "y02yDscMwjFKcIKfoPIyQXEQP3I=");
        assert!(!format!("{c:?}").contains(&c.password));
    }
}
