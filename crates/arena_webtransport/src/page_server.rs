//! The page, served from the folder `scripts/web-build.sh` made: plain HTTP
//! (a secure context on 127.0.0.1 and localhost) and HTTPS with the
//! endpoint's certificate (for a friend on the LAN, who accepts it once) on
//! the same TCP port, told apart by the first byte. Only GET and HEAD of a
//! file inside the folder: no path outside it, no hidden files, no
//! directory listings; bounded request heads, header counts, connections
//! and time. `/web-endpoint` says the endpoint's port and current hash.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

use crate::limits::{
    HTTP_READ_TIMEOUT, HTTP_WRITE_TIMEOUT, MAX_HEADERS, MAX_HTTP_CONNECTIONS, MAX_HTTP_CONNECTIONS_PER_IP,
    MAX_REQUEST_BYTES, bump,
};
use crate::shared::Shared;

/// A TLS record's first byte (a handshake): an HTTPS client's first byte.
const TLS_HANDSHAKE: u8 = 0x16;
/// The path of the endpoint's description.
pub const ENDPOINT_INFO_PATH: &str = "/web-endpoint";

/// What a request asked for, once read.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    File { path: String, head_only: bool, gzip: bool },
    EndpointInfo { head_only: bool },
}

/// Why a request is refused, with its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    BadRequest,
    NotFound,
    Method,
    TooLarge,
    TooManyHeaders,
}

impl Refused {
    fn status(self) -> &'static str {
        match self {
            Refused::BadRequest => "400 Bad Request",
            Refused::NotFound => "404 Not Found",
            Refused::Method => "405 Method Not Allowed",
            Refused::TooLarge => "413 Content Too Large",
            Refused::TooManyHeaders => "431 Request Header Fields Too Large",
        }
    }
}

/// Reads a request head (`head` is it, up to and without the blank line).
pub fn parse_request(head: &[u8]) -> Result<Request, Refused> {
    let text = std::str::from_utf8(head).map_err(|_| Refused::BadRequest)?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().ok_or(Refused::BadRequest)?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refused::BadRequest);
    };
    if !version.starts_with("HTTP/1.") {
        return Err(Refused::BadRequest);
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Err(Refused::Method),
    };
    let mut gzip = false;
    let mut headers = 0;
    for line in lines {
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(Refused::TooManyHeaders);
        }
        let (name, value) = line.split_once(':').ok_or(Refused::BadRequest)?;
        if name.eq_ignore_ascii_case("accept-encoding") && value.split(',').any(takes_gzip) {
            gzip = true;
        }
    }
    let path = target.split(['?', '#']).next().unwrap_or_default();
    if path == ENDPOINT_INFO_PATH {
        return Ok(Request::EndpointInfo { head_only });
    }
    Ok(Request::File { path: file_in_folder(path)?, head_only, gzip })
}

/// Whether one `Accept-Encoding` entry takes gzip (`gzip`, `gzip;q=0.5`;
/// not `gzip;q=0`).
fn takes_gzip(entry: &str) -> bool {
    let mut parts = entry.split(';');
    if parts.next().map(str::trim) != Some("gzip") {
        return false;
    }
    parts.all(|p| match p.trim().strip_prefix("q=") {
        Some(q) => q.trim().parse::<f32>().is_ok_and(|q| q > 0.0),
        None => true,
    })
}

/// A request's path as a file name inside the folder: `/` is
/// `index.html`; each part plain (letters, digits, `.`, `_`, `-`, not
/// starting with a dot), so no `..`, no hidden file, no escapes or
/// percent-encoding, no folder.
pub fn file_in_folder(path: &str) -> Result<String, Refused> {
    let rest = path.strip_prefix('/').ok_or(Refused::NotFound)?;
    if rest.is_empty() {
        return Ok("index.html".into());
    }
    if rest.len() > 200 {
        return Err(Refused::NotFound);
    }
    for part in rest.split('/') {
        let plain = !part.is_empty()
            && !part.starts_with('.')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !plain {
            return Err(Refused::NotFound);
        }
    }
    Ok(rest.to_string())
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "css" => "text/css",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// Connections open, in all and per address.
#[derive(Debug, Default)]
struct Open {
    all: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Serves the page from `folder` on `listener` until the process ends.
pub(crate) async fn serve(listener: TcpListener, folder: PathBuf, shared: Arc<Shared>) {
    let open = Arc::new(Mutex::new(Open::default()));
    loop {
        let Ok((stream, from)) = listener.accept().await else {
            // Out of descriptors, say: a moment, then on.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let ip = arena_udp::limit_key(arena_udp::canonical(from).ip());
        {
            let mut open = lock(&open);
            let mine = open.per_ip.get(&ip).copied().unwrap_or(0);
            if open.all >= MAX_HTTP_CONNECTIONS || mine >= MAX_HTTP_CONNECTIONS_PER_IP {
                bump(&shared.counters.http_connections_refused);
                continue;
            }
            open.all += 1;
            *open.per_ip.entry(ip).or_default() += 1;
        }
        let (folder, shared, open) = (folder.clone(), shared.clone(), open.clone());
        tokio::spawn(async move {
            connection(stream, from, &folder, &shared).await;
            let mut open = lock(&open);
            open.all = open.all.saturating_sub(1);
            if let Some(n) = open.per_ip.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.per_ip.remove(&ip);
                }
            }
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn connection(stream: TcpStream, from: SocketAddr, folder: &Path, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let mut first = [0u8; 1];
    let peeked = timeout(HTTP_READ_TIMEOUT, stream.peek(&mut first)).await;
    if !matches!(peeked, Ok(Ok(1))) {
        return;
    }
    if first[0] == TLS_HANDSHAKE {
        let acceptor = tokio_rustls::TlsAcceptor::from(shared.page_tls());
        // A browser that has not accepted the certificate yet ends the
        // handshake itself; nothing to count.
        if let Ok(Ok(tls)) = timeout(HTTP_READ_TIMEOUT, acceptor.accept(stream)).await {
            answer(tls, from, folder, shared).await;
        }
    } else {
        answer(stream, from, folder, shared).await;
    }
}

/// Reads one request and answers it; the connection then closes.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, from: SocketAddr, folder: &Path, shared: &Shared) {
    let head = match timeout(HTTP_READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(refused)) => {
            bump(&shared.counters.http_refused);
            let _ = timeout(HTTP_WRITE_TIMEOUT, refuse(&mut stream, refused)).await;
            return;
        }
        Err(_) => {
            bump(&shared.counters.http_refused);
            return;
        }
    };
    let request = match parse_request(&head) {
        Ok(request) => request,
        Err(refused) => {
            tracing::debug!("web page: refused a request from {from}: {}", refused.status());
            bump(&shared.counters.http_refused);
            let _ = timeout(HTTP_WRITE_TIMEOUT, refuse(&mut stream, refused)).await;
            return;
        }
    };
    let served = match request {
        Request::EndpointInfo { head_only } => {
            let body = shared.endpoint_info();
            // Public facts (a port and a hash): any page may read them, so
            // that a page hosted elsewhere can join with an address alone.
            let header = response_header("200 OK", "application/json", body.len() as u64, false).replacen(
                "\r\n\r\n",
                "\r\nAccess-Control-Allow-Origin: *\r\n\r\n",
                1,
            );
            timeout(HTTP_WRITE_TIMEOUT, async {
                stream.write_all(header.as_bytes()).await?;
                if !head_only {
                    stream.write_all(body.as_bytes()).await?;
                }
                stream.flush().await
            })
            .await
        }
        Request::File { path, head_only, gzip } => match open_file(folder, &path, gzip).await {
            Some((file, len, gzipped)) => {
                let header = response_header("200 OK", content_type(&path), len, gzipped);
                timeout(HTTP_WRITE_TIMEOUT, async {
                    stream.write_all(header.as_bytes()).await?;
                    if !head_only {
                        let mut file = file.take(len);
                        tokio::io::copy(&mut file, &mut stream).await?;
                    }
                    stream.flush().await
                })
                .await
            }
            None => {
                bump(&shared.counters.http_refused);
                let _ = timeout(HTTP_WRITE_TIMEOUT, refuse(&mut stream, Refused::NotFound)).await;
                return;
            }
        },
    };
    if matches!(served, Ok(Ok(()))) {
        bump(&shared.counters.http_served);
    }
    let _ = timeout(HTTP_READ_TIMEOUT, stream.shutdown()).await;
}

/// The request head, without its blank line; bounded.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Vec<u8>, Refused> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await.map_err(|_| Refused::BadRequest)?;
        if n == 0 {
            return Err(Refused::BadRequest);
        }
        // Only the new bytes (and the three before them) are searched: a
        // head sent a byte at a time costs no more than one sent whole.
        let from = head.len().saturating_sub(3);
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(from + end);
            return Ok(head);
        }
        if head.len() > MAX_REQUEST_BYTES {
            return Err(Refused::TooLarge);
        }
    }
}

/// The file, its length and whether it is the gzipped copy; `None` when
/// it is not a plain file inside the folder (a link out of it included).
async fn open_file(folder: &Path, name: &str, gzip: bool) -> Option<(tokio::fs::File, u64, bool)> {
    let root = tokio::fs::canonicalize(folder).await.ok()?;
    if gzip && let Some(found) = open_inside(&root, &format!("{name}.gz")).await {
        return Some((found.0, found.1, true));
    }
    let (file, len) = open_inside(&root, name).await?;
    Some((file, len, false))
}

async fn open_inside(root: &Path, name: &str) -> Option<(tokio::fs::File, u64)> {
    let path = tokio::fs::canonicalize(root.join(name)).await.ok()?;
    if !path.starts_with(root) {
        return None;
    }
    let file = tokio::fs::File::open(&path).await.ok()?;
    let meta = file.metadata().await.ok()?;
    meta.is_file().then_some((file, meta.len()))
}

fn response_header(status: &str, content_type: &str, len: u64, gzipped: bool) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n{}\
         Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        if gzipped { "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n" } else { "" }
    )
}

async fn refuse<S: AsyncWrite + Unpin>(stream: &mut S, refused: Refused) -> std::io::Result<()> {
    let body = format!("{}\n", refused.status());
    let header = response_header(refused.status(), "text/plain; charset=utf-8", body.len() as u64, false);
    stream.write_all(header.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_files_inside_the_folder_are_named() {
        assert_eq!(file_in_folder("/"), Ok("index.html".into()));
        assert_eq!(file_in_folder("/arena_bg.wasm"), Ok("arena_bg.wasm".into()));
        for bad in [
            "/../etc/passwd",
            "/..",
            "/a/../../b",
            "/.git/config",
            "/%2e%2e/x",
            "//etc/passwd",
            "/a//b",
            "/a\\..\\b",
            "relative",
            "/dir/",
        ] {
            assert_eq!(file_in_folder(bad), Err(Refused::NotFound), "{bad}");
        }
    }

    #[test]
    fn requests_are_read_with_their_limits() {
        let get = |text: &str| parse_request(text.as_bytes());
        assert_eq!(
            get("GET /arena.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br, gzip"),
            Ok(Request::File { path: "arena.js".into(), head_only: false, gzip: true })
        );
        assert_eq!(get("HEAD /web-endpoint?x=1 HTTP/1.1"), Ok(Request::EndpointInfo { head_only: true }));
        for (encoding, gzip) in [("gzip;q=0", false), ("gzip; q=0.0", false), ("gzip;q=0.5", true), ("gzipx", false)] {
            let request = get(&format!("GET / HTTP/1.1\r\nAccept-Encoding: {encoding}"));
            assert_eq!(request, Ok(Request::File { path: "index.html".into(), head_only: false, gzip }), "{encoding}");
        }
        assert_eq!(get("POST / HTTP/1.1"), Err(Refused::Method));
        assert_eq!(get("GET / HTTP/2"), Err(Refused::BadRequest));
        assert_eq!(get("GET /../x HTTP/1.1"), Err(Refused::NotFound));
        assert_eq!(get("GET  / HTTP/1.1"), Err(Refused::BadRequest));
        let many = format!("GET / HTTP/1.1{}", "\r\nX: y".repeat(MAX_HEADERS + 1));
        assert_eq!(get(&many), Err(Refused::TooManyHeaders));
        assert_eq!(parse_request(&[0xFF, 0xFE]), Err(Refused::BadRequest));
    }
}
