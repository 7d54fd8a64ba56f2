//! An artifact part's content, taken out of an answer as the bytes arrive.
//!
//! The skim hands each part's `text`, `raw` (0.3: `file.bytes`) and `data` value here.
//! A small value goes back into the kept JSON as it was; a large one is decoded (JSON
//! string escapes undone, base64 decoded) and handed on in chunks, and a placeholder
//! naming it takes its place. So a 50 MB file costs the function one network chunk and
//! the sink's own buffer, never the file.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::model::{ContentKind, Spilled};

/// A value longer than this (as JSON) is stored, not kept inline.
pub const INLINE_MAX: usize = 4 * 1024;
/// Inline content one answer may keep in all; past it every value is stored, so many
/// small parts cannot push the kept answer over its bound.
pub const INLINE_BUDGET: usize = 256 * 1024;
/// How a stored value is marked in the kept JSON (the NUL cannot start an agent's text
/// by accident, and the nonce makes it impossible to forge).
pub const SPILL_MARK: &str = "\u{0}standin-spill:";
/// The same, as it is written inside a JSON string.
const SPILL_MARK_JSON: &str = "\\u0000standin-spill:";

/// Names the spills of one client: a random nonce and a counter.
#[derive(Debug, Clone)]
pub struct SpillNames {
    nonce: String,
    next: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl SpillNames {
    pub fn new() -> Self {
        let mut bytes = [0u8; 8];
        rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
        Self {
            nonce: hex::encode(bytes),
            next: Default::default(),
        }
    }

    fn next(&self) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}-{n}", self.nonce)
    }

    /// The spill a kept string names, when it is one of ours.
    pub fn spill_in<'a>(&self, value: &'a str) -> Option<&'a str> {
        let rest = value.strip_prefix(SPILL_MARK)?;
        rest.strip_prefix(self.nonce.as_str())
            .filter(|r| r.starts_with('-'))
            .map(|_| rest)
    }
}

impl Default for SpillNames {
    fn default() -> Self {
        Self::new()
    }
}

/// Which member a diverted value is, so its content can be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Text,
    Base64,
    Data,
}

/// One value being diverted.
#[derive(Debug)]
pub struct Divert {
    member: Member,
    /// The value as received (whitespace between tokens dropped) while it may still be
    /// kept inline.
    raw: Vec<u8>,
    is_string: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    spill: Option<Open>,
}

#[derive(Debug)]
struct Open {
    id: String,
    decoder: Decoder,
}

/// How a byte ended (or did not end) the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    More,
    /// The byte was the value's last (a string's quote, a container's close).
    Ended,
    /// The value (a number or literal) ended before this byte, which is its parent's.
    EndedBefore,
}

impl Divert {
    pub fn new(member: Member) -> Self {
        Self {
            member,
            raw: Vec::new(),
            is_string: false,
            depth: 0,
            in_string: false,
            escaped: false,
            spill: None,
        }
    }

    /// Takes one byte of the value; `out` receives what a spill opens and decodes.
    pub fn feed(&mut self, b: u8, names: &SpillNames, out: &mut Vec<Spilled>) -> Fed {
        let first = self.raw.is_empty() && self.spill.is_none();
        if first {
            self.is_string = b == b'"';
        }
        let fed = self.track(b, first);
        if fed == Fed::EndedBefore {
            return fed;
        }
        if !self.in_string && !matches!(b, b'"') && b.is_ascii_whitespace() {
            return fed;
        }
        let strips_quotes = self.strips_quotes();
        match &mut self.spill {
            Some(open) => {
                let closing_quote = fed == Fed::Ended && strips_quotes;
                if !closing_quote {
                    open.decoder.push(b, &open.id, out);
                }
            }
            None => {
                self.raw.push(b);
                if self.raw.len() > INLINE_MAX && fed == Fed::More {
                    self.open(names, out);
                }
            }
        }
        fed
    }

    /// Tracks strings and nesting to find the value's end.
    fn track(&mut self, b: u8, first: bool) -> Fed {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                return if self.depth == 0 {
                    Fed::Ended
                } else {
                    Fed::More
                };
            }
            return Fed::More;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 {
                    return Fed::Ended;
                }
            }
            b',' | b'}' | b']' if self.depth == 0 && !first => return Fed::EndedBefore,
            _ => {}
        }
        Fed::More
    }

    fn kind(&self) -> ContentKind {
        match (self.member, self.is_string) {
            (Member::Text, true) => ContentKind::Text,
            (Member::Base64, true) => ContentKind::File,
            _ => ContentKind::Data,
        }
    }

    /// Text and file content is the string's, without its quotes; data is stored as
    /// JSON, quotes and all.
    fn strips_quotes(&self) -> bool {
        self.kind() != ContentKind::Data
    }

    /// Starts storing: what was held goes to the decoder first.
    fn open(&mut self, names: &SpillNames, out: &mut Vec<Spilled>) {
        let kind = self.kind();
        let id = names.next();
        out.push(Spilled::Opened {
            spill: id.clone(),
            kind,
        });
        let mut decoder = Decoder::new(kind);
        let held = std::mem::take(&mut self.raw);
        // A string's opening quote is not content (its closing one has not come yet).
        let content = if self.strips_quotes() {
            held.get(1..).unwrap_or_default()
        } else {
            &held[..]
        };
        for &b in content {
            decoder.push(b, &id, out);
        }
        self.spill = Some(Open { id, decoder });
    }

    /// The value ended: the JSON to keep in its place. `inline_left` is what the answer
    /// may still keep inline; a value that does not fit is stored now.
    pub fn finish(
        mut self,
        names: &SpillNames,
        inline_left: &mut usize,
        out: &mut Vec<Spilled>,
    ) -> Vec<u8> {
        if self.spill.is_none() {
            if self.raw.len() <= *inline_left {
                *inline_left -= self.raw.len();
                return self.raw;
            }
            let complete = std::mem::take(&mut self.raw);
            let last = complete
                .len()
                .saturating_sub(usize::from(self.strips_quotes()));
            self.raw = complete[..last].to_vec();
            self.open(names, out);
        }
        let Some(open) = self.spill else {
            return Vec::new();
        };
        let valid = open.decoder.finish(&open.id, out);
        out.push(Spilled::Closed {
            spill: open.id.clone(),
            valid,
        });
        format!("\"{SPILL_MARK_JSON}{}\"", open.id).into_bytes()
    }
}

/// Decodes a spill's bytes as they come: a string's escapes, then base64 for a file.
#[derive(Debug)]
struct Decoder {
    kind: ContentKind,
    unescape: Unescape,
    base64: Base64,
    chunk: Vec<u8>,
    /// A file's unescaped characters on their way to the base64 decoder.
    scratch: Vec<u8>,
}

/// Bytes handed on at once; the sink buffers as it needs.
const CHUNK: usize = 64 * 1024;

impl Decoder {
    fn new(kind: ContentKind) -> Self {
        Self {
            kind,
            unescape: Unescape::default(),
            base64: Base64::default(),
            chunk: Vec::with_capacity(CHUNK),
            scratch: Vec::with_capacity(4),
        }
    }

    fn push(&mut self, b: u8, id: &str, out: &mut Vec<Spilled>) {
        match self.kind {
            ContentKind::Data => self.chunk.push(b),
            ContentKind::Text => self.unescape.push(b, &mut self.chunk),
            ContentKind::File => {
                self.scratch.clear();
                self.unescape.push(b, &mut self.scratch);
                for &c in &self.scratch {
                    self.base64.push(c, &mut self.chunk);
                }
            }
        }
        if self.chunk.len() >= CHUNK {
            self.flush(id, out);
        }
    }

    fn flush(&mut self, id: &str, out: &mut Vec<Spilled>) {
        if !self.chunk.is_empty() {
            out.push(Spilled::Bytes {
                spill: id.to_owned(),
                bytes: std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK)),
            });
        }
    }

    /// The last bytes; false when the content was not valid.
    fn finish(mut self, id: &str, out: &mut Vec<Spilled>) -> bool {
        let valid = match self.kind {
            ContentKind::File => {
                let mut text = Vec::new();
                self.unescape.finish(&mut text);
                for c in text {
                    self.base64.push(c, &mut self.chunk);
                }
                std::mem::take(&mut self.base64).finish(&mut self.chunk)
            }
            ContentKind::Text => {
                self.unescape.finish(&mut self.chunk);
                true
            }
            ContentKind::Data => true,
        };
        self.flush(id, out);
        valid
    }
}

/// A JSON string's escapes undone, byte by byte (the quotes are not given).
#[derive(Debug, Default)]
struct Unescape {
    state: Escape,
    hex: u32,
    hex_digits: u8,
    /// A high surrogate waiting for its low half.
    high: Option<u32>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Escape {
    #[default]
    Plain,
    Backslash,
    Hex,
}

const REPLACEMENT: char = '\u{fffd}';

fn push_char(c: char, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

impl Unescape {
    fn push(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.state {
            Escape::Plain if b == b'\\' => self.state = Escape::Backslash,
            Escape::Plain => {
                self.lone_high(out);
                out.push(b);
            }
            Escape::Backslash if b == b'u' => {
                self.state = Escape::Hex;
                self.hex = 0;
                self.hex_digits = 0;
            }
            Escape::Backslash => {
                self.lone_high(out);
                self.state = Escape::Plain;
                out.push(match b {
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    other => other,
                });
            }
            Escape::Hex => {
                let digit = char::from(b).to_digit(16);
                self.hex = (self.hex << 4) | digit.unwrap_or(0);
                self.hex_digits += 1;
                if digit.is_none() {
                    self.state = Escape::Plain;
                    self.lone_high(out);
                    push_char(REPLACEMENT, out);
                } else if self.hex_digits == 4 {
                    self.state = Escape::Plain;
                    self.code_unit(self.hex, out);
                }
            }
        }
    }

    fn code_unit(&mut self, unit: u32, out: &mut Vec<u8>) {
        match (self.high.take(), unit) {
            (Some(high), 0xdc00..=0xdfff) => {
                let c = 0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00);
                push_char(char::from_u32(c).unwrap_or(REPLACEMENT), out);
            }
            (high, _) => {
                if high.is_some() {
                    push_char(REPLACEMENT, out);
                }
                match unit {
                    0xd800..=0xdbff => self.high = Some(unit),
                    _ => push_char(char::from_u32(unit).unwrap_or(REPLACEMENT), out),
                }
            }
        }
    }

    fn lone_high(&mut self, out: &mut Vec<u8>) {
        if self.high.take().is_some() {
            push_char(REPLACEMENT, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        self.lone_high(out);
    }
}

/// Base64 decoded as it comes: standard or URL-safe alphabet, padded or not, line
/// breaks ignored (MIME encoders wrap).
#[derive(Debug, Default)]
struct Base64 {
    pending: Vec<u8>,
    /// Padding was seen: only more padding may follow.
    padded: bool,
    invalid: bool,
}

/// Characters decoded at a time (a multiple of 4).
const BASE64_BATCH: usize = 4 * 1024;

fn engine() -> GeneralPurpose {
    GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

impl Base64 {
    fn push(&mut self, c: u8, out: &mut Vec<u8>) {
        let c = match c {
            b'-' => b'+',
            b'_' => b'/',
            c if c.is_ascii_whitespace() => return,
            c => c,
        };
        if self.invalid {
            return;
        }
        if c == b'=' {
            let padding = self
                .pending
                .iter()
                .rev()
                .take_while(|&&p| p == b'=')
                .count();
            if padding >= 2 {
                self.invalid = true;
                self.pending.clear();
                return;
            }
            self.padded = true;
        } else if self.padded {
            // Content after the padding: not base64, and nothing more is held.
            self.invalid = true;
            self.pending.clear();
            return;
        }
        self.pending.push(c);
        if self.pending.len() >= BASE64_BATCH && !self.padded {
            self.decode(out);
        }
    }

    fn decode(&mut self, out: &mut Vec<u8>) {
        let whole = self.pending.len() / 4 * 4;
        match engine().decode(&self.pending[..whole]) {
            Ok(bytes) => out.extend_from_slice(&bytes),
            Err(_) => self.invalid = true,
        }
        self.pending.drain(..whole);
    }

    fn finish(mut self, out: &mut Vec<u8>) -> bool {
        if !self.pending.is_empty() && !self.invalid {
            match engine().decode(&self.pending) {
                Ok(bytes) => out.extend_from_slice(&bytes),
                Err(_) => self.invalid = true,
            }
        }
        !self.invalid
    }
}

/// Base64 that came whole (a small inline file), read as leniently as a stored one.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut base64 = Base64::default();
    let mut out = Vec::new();
    for &c in text.as_bytes() {
        base64.push(c, &mut out);
    }
    base64.finish(&mut out).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a whole value byte by byte; what is kept and what was stored.
    fn divert(member: Member, value: &str, budget: usize) -> (String, Vec<Spilled>) {
        let names = SpillNames::new();
        let mut d = Divert::new(member);
        let mut out = Vec::new();
        for &b in value.as_bytes() {
            assert_ne!(d.feed(b, &names, &mut out), Fed::EndedBefore);
        }
        let mut left = budget;
        let kept = d.finish(&names, &mut left, &mut out);
        (String::from_utf8(kept).unwrap_or_default(), out)
    }

    fn stored(out: &[Spilled]) -> (Option<ContentKind>, Vec<u8>, Option<bool>) {
        let mut kind = None;
        let mut bytes = Vec::new();
        let mut valid = None;
        for s in out {
            match s {
                Spilled::Opened { kind: k, .. } => kind = Some(*k),
                Spilled::Bytes { bytes: b, .. } => bytes.extend_from_slice(b),
                Spilled::Closed { valid: v, .. } => valid = Some(*v),
            }
        }
        (kind, bytes, valid)
    }

    #[test]
    fn a_small_value_is_kept_as_it_came() {
        let (kept, out) = divert(Member::Text, r#""short \"text\"""#, INLINE_BUDGET);
        assert_eq!(kept, r#""short \"text\"""#);
        assert!(out.is_empty());
    }

    #[test]
    fn a_large_text_is_stored_unescaped_and_marked() {
        let text = "line é \u{1F600}\n\"quoted\"\\ ".repeat(400);
        let json = serde_json::to_string(&text).unwrap_or_default();
        // Escape the emoji as a surrogate pair, as some encoders do.
        let json = json.replace('\u{1F600}', "\\ud83d\\ude00");
        let (kept, out) = divert(Member::Text, &json, INLINE_BUDGET);
        let (kind, bytes, valid) = stored(&out);
        assert_eq!((kind, valid), (Some(ContentKind::Text), Some(true)));
        assert_eq!(String::from_utf8(bytes).unwrap_or_default(), text);
        let kept: String = serde_json::from_str(&kept).unwrap_or_default();
        assert!(kept.starts_with(SPILL_MARK), "{kept:?}");
    }

    #[test]
    fn a_large_file_is_stored_decoded_whatever_the_base64_style() {
        let bytes: Vec<u8> = (0..30_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let standard = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let wrapped = standard
            .as_bytes()
            .chunks(76)
            .map(|l| std::str::from_utf8(l).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\\n")
            .replace('/', "\\/");
        let url_safe = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
        for encoded in [standard, wrapped, url_safe] {
            let (_, out) = divert(Member::Base64, &format!("\"{encoded}\""), INLINE_BUDGET);
            let (kind, got, valid) = stored(&out);
            assert_eq!((kind, valid), (Some(ContentKind::File), Some(true)));
            assert_eq!(got, bytes);
        }
    }

    #[test]
    fn bytes_that_are_not_base64_are_stored_as_invalid() {
        let (_, out) = divert(Member::Base64, &format!("\"{}\"", "*".repeat(9000)), 0);
        assert_eq!(stored(&out).2, Some(false));
    }

    #[test]
    fn large_data_is_stored_as_its_json() {
        let data = serde_json::json!({"rows": (0..2000).collect::<Vec<_>>(), "s": "a}b"});
        let json = serde_json::to_string_pretty(&data).unwrap_or_default();
        let (_, out) = divert(Member::Data, &json, INLINE_BUDGET);
        let (kind, bytes, _) = stored(&out);
        assert_eq!(kind, Some(ContentKind::Data));
        let back: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        assert_eq!(back, data);
    }

    #[test]
    fn a_small_value_past_the_budget_is_stored() {
        let (kept, out) = divert(Member::Text, r#""tiny""#, 3);
        assert_eq!(stored(&out).1, b"tiny");
        assert!(kept.contains("standin-spill"));
    }

    #[test]
    fn a_forged_mark_is_not_ours() {
        let names = SpillNames::new();
        assert_eq!(
            names.spill_in("\u{0}standin-spill:0000000000000000-1"),
            None
        );
        let ours = format!("{SPILL_MARK}{}-3", names.nonce);
        assert_eq!(names.spill_in(&ours), Some(&ours[SPILL_MARK.len()..]));
    }

    #[test]
    fn a_number_ends_at_its_parents_separator() {
        let names = SpillNames::new();
        let mut d = Divert::new(Member::Data);
        let mut out = Vec::new();
        for &b in b"12.5" {
            assert_eq!(d.feed(b, &names, &mut out), Fed::More);
        }
        assert_eq!(d.feed(b'}', &names, &mut out), Fed::EndedBefore);
        assert_eq!(d.finish(&names, &mut 100, &mut out), b"12.5");
    }
}
