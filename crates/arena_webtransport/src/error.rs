//! Why the endpoint did not open, or a client link did not connect: each
//! in a sentence for the person who started the server.

use crate::certificate::CertificateError;

/// Why the endpoint did not open.
#[derive(Debug)]
pub enum WebError {
    Bind(std::io::Error),
    PagePort { port: u16, error: std::io::Error },
    Folder(String),
    Certificate(CertificateError),
    Runtime(std::io::Error),
    Connect(String),
    Closed,
}

impl std::fmt::Display for WebError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WebError::Bind(e) => write!(f, "cannot open the WebTransport endpoint's UDP port: {e}"),
            WebError::PagePort { port, error } => {
                write!(f, "cannot open TCP port {port} for the web page (the endpoint's UDP port is {port}): {error}")
            }
            WebError::Folder(e) => write!(f, "{e}"),
            WebError::Certificate(e) => write!(f, "{e}"),
            WebError::Runtime(e) => write!(f, "cannot start the WebTransport endpoint's thread: {e}"),
            WebError::Connect(e) => write!(f, "cannot open a WebTransport session: {e}"),
            WebError::Closed => write!(f, "the WebTransport endpoint's thread ended"),
        }
    }
}

impl std::error::Error for WebError {}
