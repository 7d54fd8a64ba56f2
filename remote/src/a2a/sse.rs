//! A server-sent events decoder for A2A streams: CR, LF or CRLF line ends, `:` comments
//! (the SDK's pings), multi-line `data`, and named events (`event: error`).

use super::divert::SpillNames;
use super::limits::MAX_EVENT_BYTES;
use super::skim::Skim;
use crate::model::Spilled;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `message` unless the server named it (A2A uses `error`).
    pub event: String,
    /// The event's data, skimmed (see `skim::Skim`): whitespace between JSON tokens and
    /// the members the stand-in never reads are gone.
    pub data: String,
    /// The data went past `MAX_EVENT_BYTES` after skimming: it was not kept.
    pub oversized: bool,
}

/// Longest field name and event name kept (`data`, `event`, `error` are short).
const MAX_FIELD_BYTES: usize = 16;
const MAX_EVENT_NAME_BYTES: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Reading the field name (up to the first `:`).
    Field,
    Data,
    Event,
    /// A comment or a field the stand-in does not use: its bytes are not kept.
    Ignore,
}

/// Decodes a stream incrementally, never holding more than one event's skimmed data.
#[derive(Debug)]
pub struct SseDecoder {
    line: Line,
    field: Vec<u8>,
    /// The byte after `:` is a space to drop.
    skip_space: bool,
    event_name: Vec<u8>,
    data: Option<Skim>,
    data_lines: usize,
    /// A CR ended the last line; an LF arriving next belongs to it.
    after_cr: bool,
    /// Set when artifacts are collected (see `Skim::collecting`).
    collect: Option<SpillNames>,
    /// Stored content of events already dispatched, not yet taken.
    spilled: Vec<Spilled>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self {
            line: Line::Field,
            field: Vec::with_capacity(MAX_FIELD_BYTES),
            skip_space: false,
            event_name: Vec::new(),
            data: None,
            data_lines: 0,
            after_cr: false,
            collect: None,
            spilled: Vec::new(),
        }
    }
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose events keep their artifacts (see `Skim::collecting`).
    pub fn collecting(names: SpillNames) -> Self {
        Self {
            collect: Some(names),
            ..Self::default()
        }
    }

    /// Stored content read since the last call, in order: taken after each `push`,
    /// before the events it returned are used.
    pub fn take_spilled(&mut self) -> Vec<Spilled> {
        let mut spilled = std::mem::take(&mut self.spilled);
        if let Some(data) = self.data.as_mut() {
            spilled.extend(data.take_spilled());
        }
        spilled
    }

    /// Feeds bytes as they arrive and returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut events);
                }
                b'\n' => self.end_line(&mut events),
                _ => self.byte(b),
            }
        }
        events
    }

    /// The stream ended: an event not yet closed by a blank line still counts.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if self.line != Line::Field || !self.field.is_empty() {
            let mut events = Vec::new();
            self.end_line(&mut events);
        }
        self.dispatch()
    }

    fn byte(&mut self, b: u8) {
        match self.line {
            Line::Field if b == b':' => {
                self.line = match self.field.as_slice() {
                    b"" => Line::Ignore,
                    b"data" => {
                        self.start_data_line();
                        Line::Data
                    }
                    b"event" => {
                        self.event_name.clear();
                        Line::Event
                    }
                    _ => Line::Ignore,
                };
                self.skip_space = true;
            }
            Line::Field if self.field.len() < MAX_FIELD_BYTES => self.field.push(b),
            Line::Field => self.line = Line::Ignore,
            Line::Data | Line::Event if std::mem::take(&mut self.skip_space) && b == b' ' => {}
            Line::Data => {
                if let Some(data) = self.data.as_mut() {
                    data.push(&[b]);
                }
            }
            Line::Event => {
                if self.event_name.len() < MAX_EVENT_NAME_BYTES {
                    self.event_name.push(b);
                }
            }
            Line::Ignore => {}
        }
    }

    fn start_data_line(&mut self) {
        let collect = &self.collect;
        let data = self.data.get_or_insert_with(|| match collect {
            Some(names) => Skim::collecting(MAX_EVENT_BYTES, names.clone()),
            None => Skim::new(MAX_EVENT_BYTES),
        });
        if self.data_lines > 0 {
            data.push(b"\n");
        }
        self.data_lines += 1;
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        if self.line == Line::Field {
            match self.field.as_slice() {
                b"" => events.extend(self.dispatch()),
                // A field with no colon has an empty value.
                b"data" => self.start_data_line(),
                b"event" => self.event_name.clear(),
                _ => {}
            }
        }
        self.line = Line::Field;
        self.field.clear();
        self.skip_space = false;
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let name = std::mem::take(&mut self.event_name);
        self.data_lines = 0;
        let mut data = self.data.take()?;
        self.spilled.extend(data.take_spilled());
        let event = if name.is_empty() {
            "message".to_owned()
        } else {
            String::from_utf8_lossy(&name).into_owned()
        };
        Some(match data.finish() {
            Some(bytes) => SseEvent {
                event,
                data: String::from_utf8_lossy(&bytes).into_owned(),
                oversized: false,
            },
            None => SseEvent {
                event,
                data: String::new(),
                oversized: true,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out: Vec<SseEvent> = chunks.iter().flat_map(|c| d.push(c)).collect();
        out.extend(d.finish());
        out
    }

    #[test]
    fn crlf_events_and_ping_comments() {
        let raw = b"data: {\"a\":1}\r\n\r\n: ping - 2026-11-30\r\n\r\ndata: {\"b\":2}\r\n\r\n";
        let events = decode_all(&[raw]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "{\"a\":1}");
        assert_eq!(events[1].data, "{\"b\":2}");
        assert!(events.iter().all(|e| e.event == "message"));
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let events = decode_all(&[b"data: x\r", b"\n\r", b"\ndata: y\n\n"]);
        assert_eq!(
            events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
    }

    #[test]
    fn named_error_event() {
        let events = decode_all(&[b"event: error\ndata: {\"error\":{}}\n\n"]);
        assert_eq!(events[0].event, "error");
        assert_eq!(events[0].data, "{\"error\":{}}");
    }

    #[test]
    fn multi_line_data_joins_and_unterminated_tail_counts() {
        let events = decode_all(&[b"data: {\"a\":\ndata: [1, 2]}\n\ndata: \"tail\""]);
        assert_eq!(events[0].data, "{\"a\":[1,2]}");
        assert_eq!(events[1].data, "\"tail\"");
    }

    #[test]
    fn an_oversized_event_is_flagged_not_kept_and_the_next_one_is_whole() {
        let big = format!(
            "data: \"{}\"\n\ndata: {{\"ok\":1}}\n\n",
            "z".repeat(MAX_EVENT_BYTES + 10)
        );
        let events = decode_all(&[big.as_bytes()]);
        assert_eq!(events.len(), 2);
        assert!(events[0].oversized && events[0].data.is_empty());
        assert_eq!(events[1].data, "{\"ok\":1}");
        assert!(!events[1].oversized);
    }

    #[test]
    fn an_artifact_update_is_read_through_without_being_kept() {
        let artifact = "q".repeat(4 * MAX_EVENT_BYTES);
        let raw = format!(
            "data: {{\"result\":{{\"artifactUpdate\":{{\"taskId\":\"t\",\"artifact\":{{\"parts\":[{{\"text\":\"{artifact}\"}}]}}}}}}}}\n\n"
        );
        let mut d = SseDecoder::new();
        let events: Vec<SseEvent> = raw
            .as_bytes()
            .chunks(4096)
            .flat_map(|c| d.push(c))
            .collect();
        assert_eq!(events.len(), 1);
        assert!(!events[0].oversized);
        assert_eq!(
            events[0].data,
            "{\"result\":{\"artifactUpdate\":{\"taskId\":\"t\"}}}"
        );
    }

    #[test]
    fn long_field_names_and_comments_are_not_kept() {
        let mut d = SseDecoder::new();
        let noise = format!(":{}\n{}: x\n", "c".repeat(100_000), "f".repeat(100_000));
        assert!(d.push(noise.as_bytes()).is_empty());
        assert!(d.field.len() <= MAX_FIELD_BYTES);
        let events = d.push(b"data: 1\n\n");
        assert_eq!(events[0].data, "1");
    }

    #[test]
    fn event_name_does_not_leak_into_next_event() {
        let events = decode_all(&[b"event: error\n\ndata: ok\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, "message");
    }
}
