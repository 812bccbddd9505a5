//! UPnP-IGD, the parts a port mapping needs: SSDP discovery (an
//! `M-SEARCH` to the multicast group and to the gateway itself), the
//! device description (HTTP GET), and three SOAP actions on its
//! WAN*Connection service: `AddPortMapping`, `DeletePortMapping`,
//! `GetExternalIPAddress`.
//!
//! Whatever answers on the LAN is untrusted: answers are taken only from
//! the gateway (the routing table's, never the answer's word) and a
//! description is fetched only from the gateway, bodies are read up to
//! [`MAX_HTTP_BYTES`] before a deadline, and the XML is scanned for a few
//! elements rather than parsed.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

const SSDP_GROUP: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(239, 255, 255, 250), 1900);
const SEARCH_TARGET: &str = "urn:schemas-upnp-org:device:InternetGatewayDevice:1";
/// The services that map ports, most wanted first.
const SERVICES: [&str; 3] = [
    "urn:schemas-upnp-org:service:WANIPConnection:2",
    "urn:schemas-upnp-org:service:WANIPConnection:1",
    "urn:schemas-upnp-org:service:WANPPPConnection:1",
];
/// Longest HTTP answer read (headers and body), bytes.
pub const MAX_HTTP_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub enum UpnpError {
    Io(io::Error),
    /// No gateway answered the search in time.
    NoGateway,
    /// An answer that is not what the protocol says.
    Malformed(&'static str),
    /// The device has no WAN connection service.
    NoService,
    /// The action failed: HTTP status and the UPnP error code if given
    /// (718: the port is mapped to another machine).
    Action {
        status: u16,
        code: Option<u32>,
    },
}

impl std::fmt::Display for UpnpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpnpError::Io(e) => write!(f, "UPnP: {e}"),
            UpnpError::NoGateway => f.write_str("no UPnP gateway answered"),
            UpnpError::Malformed(what) => write!(f, "UPnP: {what}"),
            UpnpError::NoService => f.write_str("the UPnP gateway has no WAN connection service"),
            UpnpError::Action { status, code: Some(code) } => {
                write!(f, "the UPnP gateway refused (HTTP {status}, UPnP error {code})")
            }
            UpnpError::Action { status, code: None } => write!(f, "the UPnP gateway refused (HTTP {status})"),
        }
    }
}

impl From<io::Error> for UpnpError {
    fn from(e: io::Error) -> Self {
        UpnpError::Io(e)
    }
}

/// A gateway's WAN connection service, found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gateway {
    pub addr: SocketAddr,
    pub control_path: String,
    pub service: String,
}

/// The M-SEARCH datagram.
pub fn search_request() -> String {
    format!(
        "M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nST: {SEARCH_TARGET}\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\n\r\n"
    )
}

/// The `LOCATION` of a search answer, if it is an HTTP one for an IGD.
pub fn parse_search_answer(answer: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(answer).ok()?;
    if !text.starts_with("HTTP/1.1 200") && !text.starts_with("HTTP/1.0 200") {
        return None;
    }
    let mut location = None;
    let mut igd = false;
    for line in text.lines().take(64) {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("location") {
            location = Some(value.to_owned());
        } else if name.eq_ignore_ascii_case("st") {
            igd = value.contains("InternetGatewayDevice");
        }
    }
    location.filter(|_| igd)
}

/// An `http://a.b.c.d:port/path` address: the host must be an IPv4 literal.
pub fn parse_url(url: &str) -> Option<(SocketAddr, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr: SocketAddr = match authority.parse() {
        Ok(addr) => addr,
        Err(_) => SocketAddr::from((authority.parse::<Ipv4Addr>().ok()?, 80)),
    };
    Some((addr, path.to_owned()))
}

/// Finds an IGD: searches from `local` (multicast, and unicast to
/// `gateway`) until `deadline`, then fetches the first description the
/// gateway points at on itself (see [`description_to_fetch`]).
pub fn discover(local: Ipv4Addr, gateway: Ipv4Addr, deadline: Instant) -> Result<Gateway, UpnpError> {
    let socket = UdpSocket::bind(SocketAddr::from((local, 0)))?;
    let request = search_request();
    let _ = socket.set_multicast_ttl_v4(2);
    let _ = socket.send_to(request.as_bytes(), SSDP_GROUP);
    let _ = socket.send_to(request.as_bytes(), SocketAddr::from((gateway, 1900)));
    let mut buffer = [0u8; 2048];
    let mut last_error = UpnpError::NoGateway;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(last_error);
        }
        socket.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        let (len, from) = match socket.recv_from(&mut buffer) {
            Ok(got) => got,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return Err(last_error);
            }
            Err(e) => return Err(e.into()),
        };
        let (addr, path) = match description_to_fetch(&buffer[..len], from, gateway) {
            Ok(Some(found)) => found,
            Ok(None) => continue,
            Err(e) => {
                last_error = e;
                continue;
            }
        };
        match describe(addr, &path, deadline) {
            Ok(gateway) => return Ok(gateway),
            Err(e) => last_error = e,
        }
    }
}

/// The description a search answer from `from` points at, if the game
/// should fetch it: `None` for what is not an IGD's answer.
pub fn description_to_fetch(
    answer: &[u8],
    from: SocketAddr,
    gateway: Ipv4Addr,
) -> Result<Option<(SocketAddr, String)>, UpnpError> {
    let Some(location) = parse_search_answer(answer) else { return Ok(None) };
    let Some((addr, path)) = parse_url(&location) else {
        return Err(UpnpError::Malformed("a location that is not http://ipv4:port/"));
    };
    // Only from the gateway, about itself: a UDP source is easy to forge
    // on a LAN, so a peer could make an answer's source and location agree
    // on any host (and the game would GET any URL there); the gateway's
    // address comes from the routing table, not from the answer.
    if from.ip() != std::net::IpAddr::V4(gateway) {
        return Err(UpnpError::Malformed("a search answer from another host than the gateway"));
    }
    if addr.ip() != std::net::IpAddr::V4(gateway) {
        return Err(UpnpError::Malformed("a location on another host than the gateway"));
    }
    Ok(Some((addr, path)))
}

fn describe(addr: SocketAddr, path: &str, deadline: Instant) -> Result<Gateway, UpnpError> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let (status, body) = http(addr, request.as_bytes(), deadline)?;
    if status != 200 {
        return Err(UpnpError::Action { status, code: None });
    }
    let (service, control) = find_service(&body).ok_or(UpnpError::NoService)?;
    let control_path = match parse_url(&control) {
        Some((_, path)) => path,
        None if control.starts_with('/') => control,
        None => format!("/{control}"),
    };
    Ok(Gateway { addr, control_path, service })
}

/// The best WAN connection service of a description and its control URL.
pub fn find_service(description: &str) -> Option<(String, String)> {
    let mut found: Vec<(usize, String, String)> = Vec::new();
    let mut rest = description;
    for _ in 0..64 {
        let Some((service, after)) = element(rest, "service") else { break };
        rest = after;
        let (Some((kind, _)), Some((control, _))) = (element(service, "serviceType"), element(service, "controlURL"))
        else {
            continue;
        };
        if let Some(rank) = SERVICES.iter().position(|s| *s == kind.trim()) {
            found.push((rank, kind.trim().to_owned(), control.trim().to_owned()));
        }
    }
    found.into_iter().min_by_key(|(rank, _, _)| *rank).map(|(_, kind, control)| (kind, control))
}

/// The text of the first element named `name` (any namespace prefix), and
/// what follows it.
pub fn element<'a>(xml: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
    let mut from = 0;
    while let Some(open) = xml[from..].find('<').map(|i| i + from) {
        let tag_end = xml[open..].find('>').map(|i| i + open)?;
        let tag = &xml[open + 1..tag_end];
        from = tag_end + 1;
        let tag_name = tag.split(|c: char| c.is_ascii_whitespace() || c == '/').next().unwrap_or("");
        let local = tag_name.rsplit(':').next().unwrap_or("");
        if local != name || tag.ends_with('/') {
            continue;
        }
        let close = format!("</{tag_name}>");
        let end = xml[from..].find(&close)? + from;
        return Some((&xml[from..end], &xml[end + close.len()..]));
    }
    None
}

/// One HTTP/1.1 exchange over a fresh connection: status and body.
fn http(addr: SocketAddr, request: &[u8], deadline: Instant) -> Result<(u16, String), UpnpError> {
    let left = |_: ()| {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() { Err(UpnpError::Io(io::Error::from(io::ErrorKind::TimedOut))) } else { Ok(left) }
    };
    let mut stream = TcpStream::connect_timeout(&addr, left(())?)?;
    stream.set_write_timeout(Some(left(())?))?;
    stream.write_all(request)?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        stream.set_read_timeout(Some(left(())?))?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                if answer.len() > MAX_HTTP_BYTES {
                    return Err(UpnpError::Malformed("an answer over 64 KiB"));
                }
                if complete(&answer) {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    parse_http(&answer)
}

/// Whether an answer with a `Content-Length` has all of its body.
pub fn complete(answer: &[u8]) -> bool {
    let Some(head_end) = find(answer, b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&answer[..head_end]);
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .is_some_and(|len| answer.len().saturating_sub(head_end + 4) >= len)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads an HTTP answer: status and body (chunked bodies decoded).
pub fn parse_http(answer: &[u8]) -> Result<(u16, String), UpnpError> {
    let head_end = find(answer, b"\r\n\r\n").ok_or(UpnpError::Malformed("an HTTP answer without its headers' end"))?;
    let head =
        std::str::from_utf8(&answer[..head_end]).map_err(|_| UpnpError::Malformed("HTTP headers not in UTF-8"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| head.starts_with("HTTP/1."))
        .ok_or(UpnpError::Malformed("no HTTP status"))?;
    let chunked = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(n, v)| {
            n.trim().eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked")
        })
    });
    let mut body = &answer[head_end + 4..];
    let bytes = if chunked {
        let mut out = Vec::new();
        loop {
            let line_end = find(body, b"\r\n").ok_or(UpnpError::Malformed("a chunk without its size"))?;
            let size_text = std::str::from_utf8(&body[..line_end]).map_err(|_| UpnpError::Malformed("a chunk size"))?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| UpnpError::Malformed("a chunk size"))?;
            body = &body[line_end + 2..];
            if size == 0 {
                break;
            }
            if size > body.len() {
                return Err(UpnpError::Malformed("a chunk longer than the answer"));
            }
            out.extend_from_slice(&body[..size]);
            body = body.get(size + 2..).unwrap_or(&[]);
        }
        out
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

/// Escapes text for an XML element.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The SOAP request for `action` with these arguments.
pub fn soap_request(gateway: &Gateway, action: &str, args: &[(&str, String)]) -> String {
    let mut body = format!(
        "<?xml version=\"1.0\"?>\r\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body><u:{action} xmlns:u=\"{}\">",
        gateway.service
    );
    for (name, value) in args {
        body.push_str(&format!("<{name}>{}</{name}>", xml_escape(value)));
    }
    body.push_str(&format!("</u:{action}></s:Body></s:Envelope>\r\n"));
    format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nSOAPAction: \"{}#{action}\"\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        gateway.control_path,
        gateway.addr,
        gateway.service,
        body.len()
    )
}

fn soap(gateway: &Gateway, action: &str, args: &[(&str, String)], deadline: Instant) -> Result<String, UpnpError> {
    let (status, body) = http(gateway.addr, soap_request(gateway, action, args).as_bytes(), deadline)?;
    if status != 200 {
        let code = element(&body, "errorCode").and_then(|(c, _)| c.trim().parse().ok());
        return Err(UpnpError::Action { status, code });
    }
    Ok(body)
}

impl Gateway {
    /// Maps UDP `external_port` on the router to `internal` for `lease_s`.
    pub fn add_port(
        &self,
        external_port: u16,
        internal: SocketAddrV4,
        lease_s: u32,
        description: &str,
        deadline: Instant,
    ) -> Result<(), UpnpError> {
        let args = [
            ("NewRemoteHost", String::new()),
            ("NewExternalPort", external_port.to_string()),
            ("NewProtocol", "UDP".to_owned()),
            ("NewInternalPort", internal.port().to_string()),
            ("NewInternalClient", internal.ip().to_string()),
            ("NewEnabled", "1".to_owned()),
            ("NewPortMappingDescription", description.to_owned()),
            ("NewLeaseDuration", lease_s.to_string()),
        ];
        soap(self, "AddPortMapping", &args, deadline).map(|_| ())
    }

    pub fn delete_port(&self, external_port: u16, deadline: Instant) -> Result<(), UpnpError> {
        let args = [
            ("NewRemoteHost", String::new()),
            ("NewExternalPort", external_port.to_string()),
            ("NewProtocol", "UDP".to_owned()),
        ];
        soap(self, "DeletePortMapping", &args, deadline).map(|_| ())
    }

    pub fn external_ip(&self, deadline: Instant) -> Result<Ipv4Addr, UpnpError> {
        let body = soap(self, "GetExternalIPAddress", &[], deadline)?;
        element(&body, "NewExternalIPAddress")
            .and_then(|(ip, _)| ip.trim().parse().ok())
            .ok_or(UpnpError::Malformed("no external address in the answer"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_answers() {
        let answer = b"HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=120\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n\
            LOCATION: http://192.168.1.1:5000/rootDesc.xml\r\n\r\n";
        assert_eq!(parse_search_answer(answer).as_deref(), Some("http://192.168.1.1:5000/rootDesc.xml"));
        assert_eq!(parse_search_answer(b"NOTIFY * HTTP/1.1\r\nLOCATION: http://x/\r\n\r\n"), None);
        assert_eq!(parse_search_answer(&[0xFF; 40]), None);
        assert_eq!(
            parse_url("http://192.168.1.1:5000/rootDesc.xml"),
            Some((SocketAddr::from(([192, 168, 1, 1], 5000)), "/rootDesc.xml".to_owned()))
        );
        assert_eq!(parse_url("http://router.lan/x"), None);
        assert_eq!(parse_url("https://1.2.3.4/"), None);
    }

    #[test]
    fn finds_the_wan_service() {
        let description = "<root><device><serviceList>\
            <service><serviceType>urn:schemas-upnp-org:service:Layer3Forwarding:1</serviceType><controlURL>/L3F</controlURL></service>\
            <service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType>\
            <controlURL>/ctl/IPConn</controlURL></service></serviceList></device></root>";
        assert_eq!(
            find_service(description),
            Some(("urn:schemas-upnp-org:service:WANIPConnection:1".to_owned(), "/ctl/IPConn".to_owned()))
        );
        assert_eq!(find_service("<service><serviceType>"), None);
        assert_eq!(
            element("<s:Body><u:X><NewExternalIPAddress>11.0.0.2</NewExternalIPAddress>", "NewExternalIPAddress")
                .map(|e| e.0),
            Some("11.0.0.2")
        );
        assert_eq!(element("<a/><a>x</a>", "a").map(|e| e.0), Some("x"));
    }

    #[test]
    fn reads_http_answers() {
        let (status, body) = parse_http(b"HTTP/1.1 500 Internal\r\nContent-Length: 5\r\n\r\nhello").unwrap();
        assert_eq!((status, body.as_str()), (500, "hello"));
        let (_, body) =
            parse_http(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                .unwrap();
        assert_eq!(body, "abcde");
        assert!(parse_http(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffff\r\nabc").is_err());
        assert!(parse_http(b"garbage").is_err());
        assert!(complete(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab"));
        assert!(!complete(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab"));
        assert!(!complete(b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nab"));
    }

    #[test]
    fn soap_escapes_arguments() {
        let gateway = Gateway {
            addr: SocketAddr::from(([192, 168, 1, 1], 5000)),
            control_path: "/ctl".to_owned(),
            service: SERVICES[1].to_owned(),
        };
        let request =
            soap_request(&gateway, "AddPortMapping", &[("NewPortMappingDescription", "<Arena & co>".to_owned())]);
        assert!(request.contains("&lt;Arena &amp; co&gt;"));
        assert!(request.contains("SOAPAction: \"urn:schemas-upnp-org:service:WANIPConnection:1#AddPortMapping\""));
        let body_len = request.split("\r\n\r\n").nth(1).unwrap().len();
        assert!(request.contains(&format!("Content-Length: {body_len}\r\n")));
    }

    #[test]
    fn only_the_gateways_search_answers_are_followed() {
        let answer = |location: &str| {
            format!(
                "HTTP/1.1 200 OK\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\nLOCATION: {location}\r\n\r\n"
            )
        };
        let gateway = Ipv4Addr::new(192, 168, 1, 1);
        // A LAN peer forging the answer from the host it aims at (the
        // source and the location agree): not followed.
        let forged = answer("http://192.168.1.50:80/admin/reboot.cgi?confirm=1");
        let from: SocketAddr = "192.168.1.50:1900".parse().expect("address");
        assert!(description_to_fetch(forged.as_bytes(), from, gateway).is_err(), "a forged answer is followed");
        // The gateway's own answer, about itself: followed.
        let real = answer("http://192.168.1.1:5000/rootDesc.xml");
        let from: SocketAddr = "192.168.1.1:1900".parse().expect("address");
        let (addr, path) = description_to_fetch(real.as_bytes(), from, gateway).expect("good").expect("an IGD");
        assert_eq!((addr, path.as_str()), ("192.168.1.1:5000".parse().expect("address"), "/rootDesc.xml"));
        // The gateway pointing elsewhere: not followed either.
        let elsewhere = answer("http://192.168.1.50:80/rootDesc.xml");
        assert!(description_to_fetch(elsewhere.as_bytes(), from, gateway).is_err());
    }
}
