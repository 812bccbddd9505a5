//! Fuzz target of a map sent by a server: an announcement (`MapId`, as a
//! welcome or a map change carries it) and a run of `MapData` messages, all
//! from the bytes, through the client's `MapDownload`. Nothing is kept
//! beyond what was announced (within the cap), a piece out of place or
//! beyond the announced size is refused, and a map is given whole only
//! when its hash matches.

use arena_protocol::map_transfer::{MAX_MAP_BYTES, MapDownload, MapId, chunks};
use arena_protocol::{ToClient, decode, encode};

use crate::target::Target;

pub struct MapTransfer;

/// Messages a run takes at most (a whole map of the cap is 256 of them).
const MAX_MESSAGES: usize = 300;

/// The bytes as messages: each a little-endian u16 length, then that many
/// bytes of an encoded `ToClient`.
fn messages(mut input: &[u8]) -> Vec<ToClient> {
    let mut out = Vec::new();
    while input.len() >= 2 && out.len() < MAX_MESSAGES {
        let len = usize::from(u16::from_le_bytes([input[0], input[1]]));
        let end = (2 + len).min(input.len());
        if let Ok(message) = decode::<ToClient>(&input[2..end]) {
            out.push(message);
        }
        input = &input[end..];
    }
    out
}

fn framed(messages: &[ToClient]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        let Ok(bytes) = encode(m) else { continue };
        out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

impl Target for MapTransfer {
    fn name(&self) -> &'static str {
        "map_transfer"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let text = arena_sim::map::SPIRE_RON.as_bytes();
        let id = MapId::of("Tower", text);
        let whole: Vec<ToClient> = std::iter::once(ToClient::ChangeMap(id.clone()))
            .chain(chunks(text).map(|(offset, bytes)| ToClient::MapData {
                tag: id.tag(),
                offset,
                bytes: bytes.to_vec(),
            }))
            .collect();
        // Damaged on the way, and one that sends more than it announced.
        let mut damaged = whole.clone();
        if let Some(ToClient::MapData { bytes, .. }) = damaged.get_mut(3) {
            bytes[10] ^= 0x20;
        }
        let tag = id.tag();
        let short = MapId { bytes: 1500, ..id };
        let more = vec![
            ToClient::ChangeMap(short),
            ToClient::MapData { tag, offset: 0, bytes: text[..1024].to_vec() },
            ToClient::MapData { tag, offset: 1024, bytes: text[1024..2048].to_vec() },
        ];
        vec![framed(&whole), framed(&damaged), framed(&more)]
    }

    fn run(&mut self, input: &[u8]) {
        let mut download: Option<MapDownload> = None;
        for message in messages(input) {
            if message.validate().is_err() {
                continue;
            }
            match message {
                ToClient::ChangeMap(id) | ToClient::Welcome(arena_protocol::Welcome { map: id, .. }) => {
                    download = MapDownload::new(id.clone()).ok();
                    if let Some(d) = &download {
                        assert!(d.id().bytes as usize <= MAX_MAP_BYTES);
                    }
                }
                ToClient::MapData { tag, offset, bytes } => {
                    // Pieces of another map are dropped, as the client does.
                    let Some(d) = download.as_mut().filter(|d| d.id().tag() == tag) else { continue };
                    let announced = d.id().clone();
                    match d.accept(offset, &bytes) {
                        Ok(Some(whole)) => {
                            assert!(announced.matches(&whole), "a map given whole matches its announcement");
                            download = None;
                        }
                        Ok(None) => assert!(d.received() < announced.bytes as usize),
                        Err(_) => {
                            // Refused: the client gives the download up.
                            assert!(d.received() <= announced.bytes as usize);
                            download = None;
                        }
                    }
                }
                _ => {}
            }
        }
    }
}
