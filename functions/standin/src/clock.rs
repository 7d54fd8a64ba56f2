//! The clock: now, in the forms the stand-in writes (RFC 3339 from `standin-wire`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch, as Lambda gives an invocation's deadline.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn now_rfc3339() -> String {
    rfc3339_in(0)
}

/// `seconds` from now.
pub fn rfc3339_in(seconds: u64) -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs() + seconds, since.subsec_millis())
}

pub use standin_wire::time::{parse_rfc3339_ms, rfc3339};
