//! Bounds on everything the stand-in reads from an agent, and the skim that keeps what it
//! needs of a large answer without holding the rest.
//!
//! The stand-in reads a task's id, context, status and metadata; never its artifacts or
//! history. `Skim` filters JSON as the bytes arrive and drops the members named
//! `artifacts`, `artifact` and `history` (at any depth) without buffering them, so a task
//! with a multi-megabyte artifact costs the function a few kilobytes. What is kept is
//! bounded; past the bound the answer is an agent error (`RemoteError::TooLarge`), never an
//! out-of-memory.

/// The agent card, read whole (cards are small; a larger one is refused).
pub const MAX_CARD_BYTES: usize = 256 * 1024;
/// A unary answer (GetTask, SendMessage, CancelTask, push config calls) after skimming.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// One stream event after skimming.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// Every byte of one stream (a turn's, or a follow window's), skimmed members included:
/// an endless stream ends here rather than at the function's timeout.
pub const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// An error message kept from an agent's error object (it reaches logs and reasons).
pub const MAX_ERROR_MESSAGE_BYTES: usize = 1024;

/// Members the stand-in never reads, dropped while reading.
const DROPPED: [&[u8]; 3] = [b"artifacts", b"artifact", b"history"];
/// Keys longer than this are never dropped, so only this much of a key is kept to compare.
const KEY_PREFIX: usize = 16;
/// Deeper nesting than this is not a task the stand-in can use.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frame {
    object: bool,
    /// In an object: the next string is a key.
    expect_key: bool,
    /// Where the current member starts in the output (its comma included), to cut it.
    member_start: usize,
}

/// Skipping a dropped member's value.
#[derive(Debug, Clone, Copy, Default)]
struct Skip {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The dropped member was its object's first: the comma after it must go too.
    was_first: bool,
}

/// Filters JSON bytes as they arrive: drops `artifacts`, `artifact` and `history`
/// members, drops whitespace between tokens, and keeps at most `limit` bytes.
#[derive(Debug)]
pub struct Skim {
    out: Vec<u8>,
    limit: usize,
    stack: Vec<Frame>,
    in_string: bool,
    escaped: bool,
    string_is_key: bool,
    key: Vec<u8>,
    key_len: usize,
    skip: Option<Skip>,
    drop_next_comma: bool,
    over: bool,
}

impl Skim {
    pub fn new(limit: usize) -> Self {
        Self {
            out: Vec::new(),
            limit,
            stack: Vec::new(),
            in_string: false,
            escaped: false,
            string_is_key: false,
            key: Vec::with_capacity(KEY_PREFIX),
            key_len: 0,
            skip: None,
            drop_next_comma: false,
            over: false,
        }
    }

    /// Whether the kept bytes went past the limit (the rest is then discarded).
    pub fn is_over(&self) -> bool {
        self.over
    }

    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.over {
                return;
            }
            self.byte(b);
        }
    }

    /// The kept JSON, or None when it went past the limit.
    pub fn finish(self) -> Option<Vec<u8>> {
        (!self.over).then_some(self.out)
    }

    fn emit(&mut self, b: u8) {
        if self.out.len() >= self.limit {
            self.over = true;
            return;
        }
        self.out.push(b);
    }

    fn byte(&mut self, b: u8) {
        if let Some(mut skip) = self.skip.take() {
            if self.skip_byte(&mut skip, b) {
                // The value ended with this byte (a string's quote, a container's close).
                self.drop_next_comma = skip.was_first;
                return;
            }
            if skip.depth == 0 && !skip.in_string && matches!(b, b',' | b'}' | b']') {
                // A number or literal ended at its parent's separator: handle it normally.
                self.drop_next_comma = skip.was_first;
            } else {
                self.skip = Some(skip);
                return;
            }
        }
        if self.in_string {
            self.string_byte(b);
            return;
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'"' => {
                self.string_is_key = self.stack.last().is_some_and(|f| f.object && f.expect_key);
                if self.string_is_key {
                    self.key.clear();
                    self.key_len = 0;
                }
                self.in_string = true;
                self.emit(b);
            }
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    self.over = true;
                    return;
                }
                self.emit(b);
                let member_start = self.out.len();
                self.stack.push(Frame {
                    object: b == b'{',
                    expect_key: b == b'{',
                    member_start,
                });
            }
            b'}' | b']' => {
                self.drop_next_comma = false;
                self.stack.pop();
                self.emit(b);
            }
            b',' => {
                let at = self.out.len();
                if let Some(frame) = self.stack.last_mut()
                    && frame.object
                {
                    frame.expect_key = true;
                    frame.member_start = at;
                }
                // After a dropped first member the comma goes too: the next member is
                // then the first, and starts where the comma would have been.
                if !std::mem::take(&mut self.drop_next_comma) {
                    self.emit(b);
                }
            }
            b':' => {
                let dropped = self.key_len <= KEY_PREFIX && DROPPED.contains(&self.key.as_slice());
                let Some(frame) = self.stack.last_mut() else {
                    self.emit(b);
                    return;
                };
                frame.expect_key = false;
                if dropped {
                    let start = frame.member_start;
                    let was_first = start > 0 && self.out.get(start - 1) == Some(&b'{');
                    self.out.truncate(start);
                    self.skip = Some(Skip {
                        was_first,
                        ..Skip::default()
                    });
                } else {
                    self.emit(b);
                }
            }
            _ => self.emit(b),
        }
    }

    fn string_byte(&mut self, b: u8) {
        let closes = b == b'"' && !self.escaped;
        if self.string_is_key && !closes {
            self.key_len += 1;
            if self.key.len() < KEY_PREFIX {
                self.key.push(b);
            }
        }
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
        }
        self.emit(b);
    }

    /// Consumes one byte of a skipped value; true when the value ended with it.
    fn skip_byte(&mut self, skip: &mut Skip, b: u8) -> bool {
        if skip.in_string {
            if skip.escaped {
                skip.escaped = false;
            } else if b == b'\\' {
                skip.escaped = true;
            } else if b == b'"' {
                skip.in_string = false;
                return skip.depth == 0;
            }
            return false;
        }
        match b {
            b'"' => skip.in_string = true,
            b'{' | b'[' => skip.depth += 1,
            b'}' | b']' if skip.depth > 0 => {
                skip.depth -= 1;
                return skip.depth == 0;
            }
            _ => {}
        }
        false
    }
}

/// An agent's error text as the stand-in keeps it: scrubbed (an agent may echo our token)
/// and cut to `MAX_ERROR_MESSAGE_BYTES` (on a character boundary).
pub fn bounded_message(message: &str) -> String {
    let message = standin_wire::scrub::scrub(message);
    if message.len() <= MAX_ERROR_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_ERROR_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skim(input: &str, limit: usize) -> Option<String> {
        let mut s = Skim::new(limit);
        // Byte by byte: every state must survive any split.
        for b in input.as_bytes() {
            s.push(&[*b]);
        }
        s.finish().map(|v| String::from_utf8(v).unwrap_or_default())
    }

    fn same_json(a: &str, b: &str) {
        let a: serde_json::Value = serde_json::from_str(a).unwrap_or_default();
        let b: serde_json::Value = serde_json::from_str(b).unwrap_or_default();
        assert_eq!(a, b);
    }

    #[test]
    fn keeps_what_the_stand_in_reads_and_drops_artifacts_and_history() {
        let task = r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":{"parts":[{"text":"done, \"quoted\" {not json}"}]}},
            "artifacts":[{"artifactId":"a","parts":[{"text":"huge ] } \" ,"}]}],"history":[{"role":"ROLE_USER"}],"metadata":{"sub_state":"x"}}"#;
        let kept = skim(task, 1 << 20).unwrap_or_default();
        same_json(
            &kept,
            r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":{"parts":[{"text":"done, \"quoted\" {not json}"}]}},"metadata":{"sub_state":"x"}}"#,
        );
    }

    #[test]
    fn a_dropped_first_member_takes_its_comma_and_nested_ones_go_too() {
        same_json(
            &skim(r#"{"artifacts":[1,2],"id":"t"}"#, 100).unwrap_or_default(),
            r#"{"id":"t"}"#,
        );
        same_json(
            &skim(
                r#"{"result":{"history":null,"task":{"artifact":{"x":1}}}}"#,
                100,
            )
            .unwrap_or_default(),
            r#"{"result":{"task":{}}}"#,
        );
        same_json(
            &skim(r#"{"a":1,"history":-2.5e3}"#, 100).unwrap_or_default(),
            r#"{"a":1}"#,
        );
        same_json(
            &skim(r#"{"history":true}"#, 100).unwrap_or_default(),
            r#"{}"#,
        );
        same_json(
            &skim(
                r#"{"history":1,"artifacts":[2],"id":3,"artifact":"x"}"#,
                100,
            )
            .unwrap_or_default(),
            r#"{"id":3}"#,
        );
    }

    #[test]
    fn a_ten_megabyte_artifact_is_read_through_without_being_kept() {
        let big = "x".repeat(10 * 1024 * 1024);
        let task = format!(
            r#"{{"id":"t","artifacts":[{{"parts":[{{"text":"{big}"}}]}}],"status":{{"state":"TASK_STATE_WORKING"}}}}"#
        );
        let mut s = Skim::new(MAX_RESPONSE_BYTES);
        for chunk in task.as_bytes().chunks(8192) {
            s.push(chunk);
        }
        let kept = s.finish().unwrap_or_default();
        assert!(kept.len() < 100, "{}", kept.len());
        same_json(
            std::str::from_utf8(&kept).unwrap_or_default(),
            r#"{"id":"t","status":{"state":"TASK_STATE_WORKING"}}"#,
        );
    }

    #[test]
    fn past_the_limit_is_over_not_kept() {
        let text = "y".repeat(2000);
        assert_eq!(skim(&format!(r#"{{"status":"{text}"}}"#), 1000), None);
        assert!(skim(&format!(r#"{{"status":"{text}"}}"#), 4000).is_some());
    }

    #[test]
    fn keys_that_only_start_like_dropped_ones_stay() {
        same_json(
            &skim(
                r#"{"historyLength":0,"artifactsCount":2,"xhistory":1}"#,
                100,
            )
            .unwrap_or_default(),
            r#"{"historyLength":0,"artifactsCount":2,"xhistory":1}"#,
        );
    }

    #[test]
    fn error_messages_are_scrubbed_too() {
        let echoed = "bad token Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL";
        assert!(!bounded_message(echoed).contains("Zm9vYmFy"));
    }

    #[test]
    fn error_messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_ERROR_MESSAGE_BYTES);
        let cut = bounded_message(&long);
        assert!(cut.len() <= MAX_ERROR_MESSAGE_BYTES + "…".len());
        assert!(cut.ends_with('…'));
        assert_eq!(bounded_message("short"), "short");
    }
}
