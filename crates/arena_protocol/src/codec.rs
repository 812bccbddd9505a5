//! The one place that knows the wire format: bincode 2 (varint integers) through
//! serde, with a hard limit on how much a message may make the decoder allocate.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest message either side accepts, bytes. A snapshot of 32 players is
/// about 2 KiB; anything near this limit is garbage or an attack.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_MESSAGE_BYTES>()
}

#[derive(Debug)]
pub enum DecodeError {
    TooLarge(usize),
    Malformed(String),
    TrailingBytes(usize),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::TooLarge(n) => write!(f, "message of {n} bytes is over the {MAX_MESSAGE_BYTES}-byte limit"),
            DecodeError::Malformed(e) => write!(f, "message does not decode: {e}"),
            DecodeError::TrailingBytes(n) => write!(f, "message has {n} unexpected trailing bytes"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Encodes a message. Our own messages always encode; an error here is a bug,
/// so it is logged by the caller and the message dropped rather than panicking.
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, bincode::error::EncodeError> {
    bincode::serde::encode_to_vec(message, config())
}

/// Decodes a whole message from untrusted bytes: size-limited, and every byte
/// must belong to the message.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(DecodeError::TooLarge(bytes.len()));
    }
    let (value, read) = bincode::serde::decode_from_slice::<T, _>(bytes, config())
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    if read != bytes.len() {
        return Err(DecodeError::TrailingBytes(bytes.len() - read));
    }
    Ok(value)
}
