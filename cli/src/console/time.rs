//! Times as the pages show them: instants the API and the agents stamp, and how long ago.

use std::time::{SystemTime, UNIX_EPOCH};

use standin_wire::time::parse_rfc3339_ms;

/// Milliseconds since the epoch of a timestamp: RFC 3339, or one with no zone (some
/// agents send none), read as UTC.
pub(crate) fn millis(at: &str) -> Option<u64> {
    parse_rfc3339_ms(at).or_else(|| parse_rfc3339_ms(&format!("{at}Z")))
}

pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long before `now` the instant `at` was, in words: `12 s`, `4 min`, `3 h 20 min`,
/// `2 d 5 h`; `-` when there is no instant or it does not read.
pub(crate) fn ago(at: Option<&str>, now: u64) -> String {
    match at.and_then(millis) {
        Some(then) => span(now.saturating_sub(then)),
        None => "-".to_owned(),
    }
}

/// A span of milliseconds in words, to the two largest units.
pub(crate) fn span(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0 if ms > 0 => format!("{ms} ms"),
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86_400, secs % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_with_and_without_a_zone_read_as_the_same_instant() {
        let zoned = millis("2026-12-06T10:00:00.250Z");
        assert_eq!(zoned, millis("2026-12-06T10:00:00.250"));
        assert_eq!(zoned, millis("2026-12-06T11:00:00.250+01:00"));
        assert_eq!(millis("soon"), None);
    }

    #[test]
    fn spans_read_in_the_two_largest_units() {
        assert_eq!(span(0), "0 s");
        assert_eq!(span(140), "140 ms");
        assert_eq!(span(59_999), "59 s");
        assert_eq!(span(61_000), "1 min");
        assert_eq!(span((3 * 3600 + 20 * 60) * 1000), "3 h 20 min");
        assert_eq!(span((2 * 86_400 + 5 * 3600) * 1000), "2 d 5 h");
        let now = millis("2026-12-06T10:01:00Z").unwrap_or_default();
        assert_eq!(ago(Some("2026-12-06T10:00:00Z"), now), "1 min");
        assert_eq!(ago(None, now), "-");
    }
}
