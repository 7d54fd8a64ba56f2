//! Remote status text reaches the parent as data: secrets out, size bounded (abuse case 8).

/// Longest text the stand-in stores or relays, in bytes.
pub const MAX_TEXT_BYTES: usize = 4096;
/// Longest cancel reason the parent may give (it reaches the final note as is).
pub const MAX_REASON_BYTES: usize = crate::control::MAX_REASON_BYTES;
const _: () = assert!(
    MAX_REASON_BYTES <= MAX_TEXT_BYTES,
    "a reason is noted as is"
);
pub const REDACTED: &str = "[redacted]";
const TRUNCATED: &str = "…[truncated]";

/// A run this long of base64-ish characters with mixed case and digits looks like a key or
/// token. Hex ids and UUIDs are lower case only, so they pass.
const SECRET_RUN_MIN: usize = 32;
/// A run this long with mixed case is a secret even without a digit: our own push tokens
/// are 43 base64url characters, and about 1 in 1,500 of them has no digit.
const SECRET_RUN_NO_DIGIT_MIN: usize = 40;
const SECRET_KEYS: [&str; 6] = ["token", "secret", "password", "api_key", "apikey", "bearer"];

/// Scrubs secrets, then bounds the size; the result is what gets compared and stored.
/// Only the first `2 × MAX_TEXT_BYTES` are looked at: the rest would be cut anyway, and
/// the redaction's cost must not grow with what an agent chooses to send.
pub fn scrub(text: &str) -> String {
    let head = &text[..floor_char_boundary(text, 2 * MAX_TEXT_BYTES)];
    bound(&redact_key_values(&redact_secret_runs(head)))
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    let mut end = at;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

fn is_secret_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '/' | '=' | '.' | '~')
}

fn looks_secret(run: &str) -> bool {
    run.chars().filter(|c| c.is_ascii_alphanumeric()).count() >= SECRET_RUN_MIN
        && run.chars().any(|c| c.is_ascii_uppercase())
        && run.chars().any(|c| c.is_ascii_lowercase())
        && (run.chars().any(|c| c.is_ascii_digit()) || run.len() >= SECRET_RUN_NO_DIGIT_MIN)
}

fn redact_secret_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run_start: Option<usize> = None;
    let flush = |out: &mut String, run: &str| {
        if looks_secret(run) {
            out.push_str(REDACTED);
        } else {
            out.push_str(run);
        }
    };
    for (i, c) in text.char_indices() {
        if is_secret_char(c) {
            run_start.get_or_insert(i);
        } else {
            if let Some(start) = run_start.take() {
                flush(&mut out, &text[start..i]);
            }
            out.push(c);
        }
    }
    if let Some(start) = run_start {
        flush(&mut out, &text[start..]);
    }
    out
}

/// `Bearer abc`, `token=abc`, `"password": "abc"`: the value after a secret-sounding key.
fn redact_key_values(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while pos < text.len() {
        let next = SECRET_KEYS
            .iter()
            .filter_map(|k| lower[pos..].find(k).map(|i| (pos + i, k.len())))
            .min();
        let Some((at, key_len)) = next else { break };
        let after_key = at + key_len;
        let value_start = skip_separator(text, after_key);
        let value_end = text[value_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '&' | '}'))
            .map_or(text.len(), |i| value_start + i);
        if value_start > after_key
            && value_end > value_start
            && !text[value_start..value_end].starts_with(REDACTED)
        {
            out.push_str(&text[pos..value_start]);
            out.push_str(REDACTED);
            pos = value_end;
        } else {
            out.push_str(&text[pos..after_key]);
            pos = after_key;
        }
    }
    out.push_str(&text[pos..]);
    out
}

/// After a key: `=`, `:`, quotes or one space (as in `Bearer x`), each optional.
fn skip_separator(text: &str, from: usize) -> usize {
    let rest = &text[from..];
    let trimmed = rest.trim_start_matches(['"', '\'']);
    let trimmed = trimmed.trim_start_matches([' ', '\t']);
    let trimmed = trimmed.strip_prefix(['=', ':']).unwrap_or(trimmed);
    let trimmed = trimmed.trim_start_matches([' ', '\t', '"', '\'']);
    let consumed = rest.len() - trimmed.len();
    // A key followed directly by a letter is a word ("tokens"), not a key.
    if consumed == 0 { from } else { from + consumed }
}

/// Longest name the stand-in relays (a part's filename or media type), escaped.
pub const MAX_NAME_BYTES: usize = 256;

/// The bytes `c` takes in a JSON string: what a note costs in a Step Functions payload
/// (a control character is six, `\u0001`).
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// `text`'s size as a JSON string's contents.
pub fn escaped_bytes(text: &str) -> usize {
    text.chars().map(escaped_len).sum()
}

/// Cuts at a char boundary, so that the text escaped takes at most `MAX_TEXT_BYTES`,
/// and says so.
pub fn bound(text: &str) -> String {
    bound_to(text, MAX_TEXT_BYTES)
}

/// Cuts `text` so that escaped it takes at most `max` bytes (its marker included), and
/// says so: a note's every field fits, whatever characters an agent sends.
pub fn bound_to(text: &str, max: usize) -> String {
    if text.len() <= max / 6 || escaped_bytes(text) <= max {
        return text.to_owned();
    }
    let room = max.saturating_sub(TRUNCATED.len());
    let (mut used, mut cut) = (0, 0);
    for (i, c) in text.char_indices() {
        used += escaped_len(c);
        if used > room {
            break;
        }
        cut = i + c.len_utf8();
    }
    format!("{}{TRUNCATED}", &text[..cut])
}

/// A name (a filename, a media type): scrubbed as text is, and bounded to
/// `MAX_NAME_BYTES` escaped.
pub fn scrub_name(text: &str) -> String {
    let head = &text[..floor_char_boundary(text, 2 * MAX_NAME_BYTES)];
    bound_to(&scrub(head), MAX_NAME_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_megabyte_of_key_words_is_scrubbed_quickly_and_bounded() {
        // Every "token" is a key with no value: the redaction walks them one by one.
        let text = "token".repeat(200_000);
        let started = std::time::Instant::now();
        let out = scrub(&text);
        assert!(out.len() <= MAX_TEXT_BYTES + TRUNCATED.len());
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_token_without_a_digit_is_redacted_too() {
        // One in about 1,500 of our tokens has no digit: 43 base64url letters, - and _.
        let token = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN-_Q";
        assert_eq!(token.len(), 43);
        let out = scrub(&format!("webhook token {token} ok"));
        assert!(!out.contains(token), "{out}");
        // Lower-case words and ids of that length stay.
        let prose = "a supercalifragilisticexpialidociousword and 0123456789abcdef0123456789abcdef";
        assert_eq!(scrub(prose), prose);
    }

    #[test]
    fn bearer_and_key_value_secrets_are_redacted() {
        let out = scrub("Authorization: Bearer abc.def and token=s3cr3t; password: \"hunter2\"");
        assert!(!out.contains("abc.def"), "{out}");
        assert!(!out.contains("s3cr3t"), "{out}");
        assert!(!out.contains("hunter2"), "{out}");
    }

    #[test]
    fn ordinary_text_and_ids_pass_unchanged() {
        let text = "Task 8396b73a-66c5-45be-b11c-6c803d66dd2d: What colour should the widget be? Use tokens wisely.";
        assert_eq!(scrub(text), text);
        let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        assert_eq!(scrub(digest), digest);
    }

    #[test]
    fn long_text_is_bounded_at_a_char_boundary() {
        let text = "é".repeat(MAX_TEXT_BYTES);
        let out = scrub(&text);
        assert!(out.len() <= MAX_TEXT_BYTES);
        assert!(out.ends_with(TRUNCATED));
    }

    /// Control characters escape to six bytes each: the bound is on the escaped text,
    /// so a note of sixteen such parts still fits a DynamoDB item and a Step Functions
    /// payload.
    #[test]
    fn text_is_bounded_by_its_escaped_size() {
        let controls = "\u{1}".repeat(MAX_TEXT_BYTES);
        let out = scrub(&controls);
        assert!(
            escaped_bytes(&out) <= MAX_TEXT_BYTES,
            "{}",
            escaped_bytes(&out)
        );
        assert!(out.ends_with(TRUNCATED));
        assert_eq!(
            serde_json::to_string(&out).unwrap().len() - 2,
            escaped_bytes(&out)
        );
        let quotes = "\"\\\n".repeat(MAX_TEXT_BYTES);
        assert!(escaped_bytes(&scrub(&quotes)) <= MAX_TEXT_BYTES);
        let name = scrub_name(&"\u{7}".repeat(500_000));
        assert!(escaped_bytes(&name) <= MAX_NAME_BYTES, "{name:?}");
        assert_eq!(scrub_name("report.pdf"), "report.pdf");
        let plain = "plain text";
        assert_eq!(bound_to(plain, 10), plain);
        assert_eq!(scrub(&scrub(&controls)), scrub(&controls));
    }

    #[test]
    fn scrub_is_idempotent() {
        let text = "token=abc Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL";
        assert_eq!(scrub(&scrub(text)), scrub(text));
    }
}
