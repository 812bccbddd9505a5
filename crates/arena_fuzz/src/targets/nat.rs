//! Fuzz targets of reaching a home host: what a home router answers (NAT-PMP,
//! PCP, UPnP's search answers, URLs, descriptions and HTTP answers), and
//! Arena's master-extension messages as a joining client reads them.

use std::net::SocketAddr;
use std::time::Duration;

use arena_client::Introduction;
use arena_master::reach::Reach;
use arena_nat::{natpmp, pcp, upnp};

use crate::target::Target;

/// Every parser of a router's answers, chosen by the first byte.
pub struct RouterAnswers;

impl Target for RouterAnswers {
    fn name(&self) -> &'static str {
        "router_answers"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut pcp_answer = pcp::map_request("192.168.1.10".parse().expect("ip"), [7; 12], 27015, 27015, 60).to_vec();
        pcp_answer[1] |= 0x80;
        vec![
            [&[0u8][..], &[0, 129, 0, 0, 0, 0, 0, 9, 0x69, 0x87, 0x69, 0x87, 0, 0, 0x1c, 0x20]].concat(),
            [&[1u8][..], &[0, 128, 0, 0, 0, 0, 0, 1, 11, 0, 1, 1]].concat(),
            [&[2u8][..], &pcp_answer].concat(),
            [&b"\x03HTTP/1.1 200 OK\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\nLOCATION: http://192.168.1.1:5000/rootDesc.xml\r\n\r\n"[..]].concat(),
            b"\x04<root><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType><controlURL>/ctl/IPConn</controlURL></service></root>".to_vec(),
            b"\x05HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
            b"\x06http://192.168.1.1:5000/rootDesc.xml".to_vec(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let Some((&which, rest)) = input.split_first() else { return };
        let text = String::from_utf8_lossy(rest);
        match which % 7 {
            0 => {
                if let Ok(granted) = natpmp::parse_map(rest, 27015) {
                    assert_eq!(granted.internal_port, 27015);
                }
            }
            1 => {
                let _ = natpmp::parse_external_address(rest);
            }
            2 => {
                let _ = pcp::parse_map(rest, [7; 12], 27015);
            }
            3 => {
                if let Some(location) = upnp::parse_search_answer(rest) {
                    assert!(location.len() <= rest.len());
                }
            }
            4 => {
                if let Some((kind, control)) = upnp::find_service(&text) {
                    assert!(kind.contains("WANIPConnection") || kind.contains("WANPPPConnection"));
                    assert!(control.len() <= text.len());
                }
                let _ = upnp::element(&text, "NewExternalIPAddress");
            }
            5 => {
                let _ = upnp::complete(rest);
                if let Ok((_, body)) = upnp::parse_http(rest) {
                    assert!(body.len() <= rest.len() * 3 + 3, "a body longer than its answer");
                }
            }
            _ => {
                if let Some((addr, path)) = upnp::parse_url(&text) {
                    assert!(addr.is_ipv4(), "a router URL on {addr}");
                    assert!(path.starts_with('/'));
                }
            }
        }
    }
}

/// Master-extension datagrams: parsed, written back the same, and read by
/// a joining client's introduction (which answers only its masters).
pub struct ReachMessages {
    introduction: Introduction,
    clock_ms: u64,
}

const MASTER: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::new(11, 0, 0, 1), 27950));
const SERVER: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::new(11, 0, 2, 1), 27015));

impl Default for ReachMessages {
    fn default() -> Self {
        Self { introduction: Introduction::new(SERVER, &[MASTER]), clock_ms: 0 }
    }
}

impl Target for ReachMessages {
    fn name(&self) -> &'static str {
        "reach_messages"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            Reach::PunchChallenge { server: SERVER, cookie: "0123456789abcdef01234567".into() }.encode(),
            Reach::PunchStarted { server: SERVER, nat: arena_master::reach::Nat::Punchable, game_port: 27015 }.encode(),
            Reach::Sent { nonce: "abcdefgh12345678".into(), seen: SERVER, probe_port: 27951, probe_ip: None }.encode(),
            Reach::Sent {
                nonce: "abcdefgh12345678".into(),
                seen: SERVER,
                probe_port: 27951,
                probe_ip: Some(std::net::IpAddr::from([11, 0, 0, 100])),
            }
            .encode(),
            Reach::PunchProbe.encode(),
            Reach::PunchRefused { server: SERVER, why: arena_master::reach::Refusal::Symmetric, game_port: 27015 }
                .encode(),
            Reach::RelayChallenge { server: SERVER, cookie: "0123456789abcdef01234567".into() }.encode(),
            Reach::RelayGrant {
                server: SERVER,
                turn: MASTER,
                username: "1800000600:11.0.9.1".into(),
                password: "q7uTmiJ3tbEVq2aD3Ri9hDEHaSs=".into(),
            }
            .encode(),
            Reach::RelayRefused { server: SERVER, why: arena_master::reach::RelayRefusal::Busy }.encode(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        self.clock_ms += 100;
        for (to, _) in self.introduction.due(Duration::from_millis(self.clock_ms), false) {
            assert_eq!(to, MASTER);
        }
        let Some(message) = Reach::parse(input) else { return };
        let encoded = message.encode();
        assert!(encoded.len() <= input.len() + 8, "{} bytes written for {} read", encoded.len(), input.len());
        assert_eq!(Reach::parse(&encoded), Some(message.clone()), "does not read back the same");
        let heard = input.len().is_multiple_of(5);
        if let Some((to, reply)) = self.introduction.receive(MASTER, message, heard) {
            assert_eq!(to, MASTER, "a reply to someone other than the master");
            assert!(matches!(
                Reach::parse(&reply),
                Some(
                    Reach::PunchRequest { server: SERVER, .. }
                        | Reach::RelayRequest { server: SERVER, .. }
                        | Reach::RelayIntro { server: SERVER, .. }
                )
            ));
        }
        if let Some(grant) = self.introduction.take_grant() {
            assert_eq!(grant.master, MASTER, "credentials taken from someone other than the master");
            // The transport would allocate and come back with an address.
            let _ = self.introduction.relayed(SocketAddr::from(([11, 0, 0, 3], 50001)), MASTER);
        }
        let _ = self.introduction.advice();
    }

    fn reset(&mut self) {
        *self = Self::default();
    }
}
