//! The endpoint's certificate: self-signed, ECDSA P-256, made at start and
//! renewed before it ends, its key only in memory. A browser accepts it by
//! its SHA-256 hash (`serverCertificateHashes`) when it is valid for at most
//! 14 days and now lies inside that time; the page over HTTPS shows the
//! same certificate, which a friend accepts once.

use std::sync::Arc;
use std::time::Duration;

use wtransport::Identity;

/// How far back a certificate's validity starts: a browser whose clock is
/// behind by up to this still takes it.
pub const BACKDATED: Duration = Duration::from_secs(60 * 60);
/// How long after it is made a certificate stays valid. With [`BACKDATED`]
/// the whole span is 13 days and an hour, inside Chromium's 14 days (a peer
/// project saw exactly 14 refused).
pub const VALID_AHEAD: Duration = Duration::from_secs(13 * 24 * 60 * 60);
/// When a new certificate replaces the current one, a week before it would
/// end: open sessions keep theirs; a new one needs the new hash, which a
/// page this server served fetches (`/web-endpoint`) and the log prints in
/// a new `web:` line.
pub const RENEW_AFTER: Duration = Duration::from_secs(6 * 24 * 60 * 60);

/// Why no certificate could be made.
#[derive(Debug)]
pub struct CertificateError(String);

impl std::fmt::Display for CertificateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot make the WebTransport certificate: {}", self.0)
    }
}

impl std::error::Error for CertificateError {}

/// A certificate and what is said about it.
pub struct Certificate {
    pub(crate) identity: Identity,
    /// The SHA-256 hash of its DER, in lowercase hex (what links carry).
    pub hash_hex: String,
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate").field("hash_hex", &self.hash_hex).finish()
    }
}

impl Certificate {
    /// A new certificate for `names` (host names and IP addresses; a
    /// browser pinning by hash does not check them, one accepting it over
    /// HTTPS shows them), valid from [`BACKDATED`] ago for [`VALID_AHEAD`].
    pub fn make(names: &[String]) -> Result<Self, CertificateError> {
        let now = time::OffsetDateTime::now_utc();
        let not_before = now - time::Duration::try_from(BACKDATED).map_err(|e| CertificateError(e.to_string()))?;
        let not_after = now + time::Duration::try_from(VALID_AHEAD).map_err(|e| CertificateError(e.to_string()))?;
        let identity = Identity::self_signed_builder()
            .subject_alt_names(names.iter().map(String::as_str))
            .not_before(not_before)
            .not_after(not_after)
            .build()
            .map_err(|e| CertificateError(e.to_string()))?;
        let hash_hex = match identity.certificate_chain().as_slice().first() {
            Some(certificate) => hex(certificate.hash().as_ref()),
            None => return Err(CertificateError("no certificate in the chain".into())),
        };
        Ok(Self { identity, hash_hex })
    }

    /// The TLS configuration the page is served over HTTPS with.
    pub(crate) fn page_tls(&self) -> Result<Arc<rustls::ServerConfig>, CertificateError> {
        let chain: Vec<rustls::pki_types::CertificateDer<'static>> = self
            .identity
            .certificate_chain()
            .as_slice()
            .iter()
            .map(|c| rustls::pki_types::CertificateDer::from(c.der().to_vec()))
            .collect();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
            self.identity.private_key().secret_der().to_vec(),
        ));
        // ring, as wtransport uses (aws-lc-rs would need cmake and nasm to
        // build); its provider lacks post-quantum key exchange, which a page
        // behind a self-signed certificate on a LAN can do without.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| CertificateError(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| CertificateError(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Bytes as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_is_one_a_browser_takes_by_its_hash() {
        let certificate = Certificate::make(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        assert_eq!(certificate.hash_hex.len(), 64);
        assert!(arena_protocol::web_link::parse_cert(&certificate.hash_hex).is_some());
        assert!(BACKDATED + VALID_AHEAD < Duration::from_secs(14 * 24 * 60 * 60));
        assert!(RENEW_AFTER < VALID_AHEAD);
        assert!(certificate.page_tls().is_ok());
        // Each is new: nothing is kept or shared between servers.
        let other = Certificate::make(&["localhost".into()]).unwrap();
        assert_ne!(other.hash_hex, certificate.hash_hex);
    }
}
