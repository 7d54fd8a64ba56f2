//! RFC 3339 instants, written and read without a date-time dependency: the notes'
//! `at`, and the status timestamps agents send.

/// Days-to-civil after Howard Hinnant's algorithm.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Milliseconds since the epoch of an RFC 3339 instant, as agents stamp a task's status
/// (`2026-11-30T04:30:11.255Z`, `…11.255123+00:00`, `…11+02:00`); None for anything else.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let number = |from: usize, len: usize| -> Option<i64> {
        let part = text.get(from..from + len)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    let bytes = text.as_bytes();
    if separators.iter().any(|&(at, c)| bytes.get(at) != Some(&c))
        || !matches!(bytes.get(10), Some(b'T' | b't' | b' '))
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let first3 = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = first3.parse::<i64>().ok()?;
        rest = &fraction[digits..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let digits = |at: usize| {
                let pair = rest.get(at..at + 2)?;
                pair.bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| pair.parse::<i64>().ok())?
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let (hours, minutes) = (digits(1)?, digits(4)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            sign * (hours * 60 + minutes)
        }
    };
    // Days from civil, after Howard Hinnant (the inverse of `rfc3339`).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(secs * 1000 + millis).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn instants_read_back_as_written_with_any_offset_or_precision() {
        use super::parse_rfc3339_ms as parse;
        assert_eq!(parse("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse("2026-11-30T04:30:11.255Z"), Some(1_796_013_011_255));
        assert_eq!(
            parse("2026-11-30T04:30:11.255123+00:00"),
            Some(1_796_013_011_255)
        );
        assert_eq!(
            parse("2026-11-30T06:30:11.2+02:00"),
            Some(1_796_013_011_200)
        );
        assert_eq!(parse("2026-11-30T04:30:11Z"), Some(1_796_013_011_000));
        assert_eq!(parse("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        for bad in [
            "",
            "2026-11-30",
            "2026-13-30T04:30:11Z",
            "2026-11-30T04:30:11",
            "2026-11-30T04:30:11.Z",
            "x026-11-30T04:30:11Z",
            "2026-11-30T04:30:11+2:00",
            "2026-11-30T04:30:11+-1:00",
            "2026-11-30T04:30:11+99:00",
            "2026-11-30T04:30:11+01:60",
            "2026-11-30T04:30:11é",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        for secs in [0, 86_399, 951_782_400, 1_796_013_011, 4_102_444_800] {
            let written = super::rfc3339(secs, 7);
            assert_eq!(parse(&written), Some(secs * 1000 + 7), "{written}");
        }
    }

    #[test]
    fn known_instants() {
        assert_eq!(super::rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(1_796_013_011, 255),
            "2026-11-30T04:30:11.255Z"
        );
        assert_eq!(super::rfc3339(951_782_400, 0), "2000-02-29T00:00:00.000Z");
    }
}
