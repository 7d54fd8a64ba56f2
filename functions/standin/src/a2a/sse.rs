//! A server-sent events decoder for A2A streams: CR, LF or CRLF line ends, `:` comments
//! (the SDK's pings), multi-line `data`, and named events (`event: error`).

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `message` unless the server named it (A2A uses `error`).
    pub event: String,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    /// A CR ended the last line; an LF arriving next belongs to it.
    after_cr: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
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
                    self.line(&mut events);
                }
                b'\n' => self.line(&mut events),
                _ => self.buffer.push(b),
            }
        }
        events
    }

    /// The stream ended: an event not yet closed by a blank line still counts.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.buffer.is_empty() {
            let mut events = Vec::new();
            self.line(&mut events);
        }
        self.dispatch()
    }

    fn line(&mut self, events: &mut Vec<SseEvent>) {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
        if line.is_empty() {
            events.extend(self.dispatch());
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if self.data.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent {
            event: event.unwrap_or_else(|| "message".to_owned()),
            data,
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
    fn multi_line_data_joins_with_newline_and_unterminated_tail_counts() {
        let events = decode_all(&[b"data: a\ndata: b\n\ndata: tail"]);
        assert_eq!(events[0].data, "a\nb");
        assert_eq!(events[1].data, "tail");
    }

    #[test]
    fn event_name_does_not_leak_into_next_event() {
        let events = decode_all(&[b"event: error\n\ndata: ok\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, "message");
    }
}
