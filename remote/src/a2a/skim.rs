//! The skim: what the stand-in needs of a large answer, kept as the bytes arrive, without
//! holding the rest.
//!
//! The stand-in reads a task's id, context, status and metadata, and its artifacts; never
//! its history. `Skim` filters JSON as the bytes arrive and drops `history` (at any depth)
//! without buffering it. Artifacts are dropped too, unless the skim collects them: then
//! each part's content goes through `divert`, which keeps small values and stores large
//! ones as they arrive, so a task with a multi-megabyte artifact costs the function a few
//! kilobytes either way.

use super::divert::{Divert, Fed, INLINE_BUDGET, Member, SpillNames};
use crate::model::Spilled;

/// Members the stand-in never reads, dropped while reading.
const DROPPED: [&[u8]; 1] = [b"history"];
/// A task's artifacts and an update's artifact: dropped too unless the skim collects them.
const ARTIFACTS: [&[u8]; 2] = [b"artifacts", b"artifact"];
/// Keys longer than this are never dropped, so only this much of a key is kept to compare.
const KEY_PREFIX: usize = 16;
/// Deeper nesting than this is not a task the stand-in can use.
const MAX_DEPTH: usize = 64;

/// Where a container sits, as far as artifacts go: only a part's own content members are
/// diverted, never a `text` deep in some metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Within {
    Other,
    /// Inside an artifact (or the array of them).
    Artifact,
    /// An artifact's `parts`.
    Parts,
    /// One part.
    Part,
    /// A 0.3 part's `file`.
    PartFile,
    /// Anything else inside an artifact (its metadata, a part's metadata): never
    /// diverted, whatever its keys say.
    Opaque,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frame {
    object: bool,
    within: Within,
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
    /// Set when artifacts are collected: how stored content is named.
    collect: Option<SpillNames>,
    divert: Option<Divert>,
    /// The next value is a part's content, to divert.
    divert_next: Option<Member>,
    /// Where the next container sits, from the member it is the value of.
    next_within: Within,
    inline_left: usize,
    spilled: Vec<Spilled>,
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
            collect: None,
            divert: None,
            divert_next: None,
            next_within: Within::Other,
            inline_left: INLINE_BUDGET,
            spilled: Vec::new(),
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

    /// A skim that keeps artifacts, their large content handed out as it arrives
    /// (`take_spilled`) under names from `names`.
    pub fn collecting(limit: usize, names: SpillNames) -> Self {
        Self {
            collect: Some(names),
            ..Self::new(limit)
        }
    }

    /// Stored content read since the last call, in order; the caller hands it on before
    /// reading more, so what is held stays one chunk.
    pub fn take_spilled(&mut self) -> Vec<Spilled> {
        std::mem::take(&mut self.spilled)
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
        if let Some(member) = self.divert_next
            && !b.is_ascii_whitespace()
        {
            self.divert_next = None;
            self.divert = Some(Divert::new(member));
        }
        if let Some(mut divert) = self.divert.take() {
            let Some(names) = self.collect.as_ref() else {
                return;
            };
            let fed = divert.feed(b, names, &mut self.spilled);
            if fed == Fed::More {
                self.divert = Some(divert);
                return;
            }
            // The value ended: its inline JSON or its placeholder takes its place.
            let kept = divert.finish(names, &mut self.inline_left, &mut self.spilled);
            for kept_byte in kept {
                self.emit(kept_byte);
            }
            if fed == Fed::Ended {
                return;
            }
        }
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
                let within = self.within_next(b == b'{');
                self.stack.push(Frame {
                    object: b == b'{',
                    within,
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
                let key = (self.key_len <= KEY_PREFIX).then_some(self.key.as_slice());
                let artifacts = key.is_some_and(|k| ARTIFACTS.contains(&k));
                let dropped = key.is_some_and(|k| DROPPED.contains(&k))
                    || (artifacts && self.collect.is_none());
                let within = self.stack.last().map_or(Within::Other, |f| f.within);
                self.next_within = match (within, key) {
                    (Within::Other, _) if artifacts => Within::Artifact,
                    (Within::Other, _) => Within::Other,
                    (Within::Artifact, Some(b"parts")) => Within::Parts,
                    (Within::Part, Some(b"file")) => Within::PartFile,
                    _ => Within::Opaque,
                };
                self.divert_next = match (within, key) {
                    (Within::Part, Some(b"text")) => Some(Member::Text),
                    (Within::Part, Some(b"raw")) => Some(Member::Base64),
                    (Within::Part, Some(b"data")) => Some(Member::Data),
                    (Within::PartFile, Some(b"bytes" | b"fileWithBytes")) => Some(Member::Base64),
                    _ => None,
                };
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

    /// Where a container opened now sits: an object member's from its key, an array
    /// element's from the array.
    fn within_next(&self, object: bool) -> Within {
        let Some(parent) = self.stack.last() else {
            return Within::Other;
        };
        if parent.object {
            // `parts` must be an array and `file` an object to be what they say.
            return match (self.next_within, object) {
                (Within::Parts, true) | (Within::PartFile, false) => Within::Opaque,
                (within, _) => within,
            };
        }
        match parent.within {
            // The elements of a task's `artifacts` are artifacts.
            Within::Artifact => Within::Artifact,
            Within::Parts if object => Within::Part,
            Within::Other => Within::Other,
            _ => Within::Opaque,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::limits::MAX_RESPONSE_BYTES;

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

    /// Collects byte by byte; the kept JSON and the text of every spill.
    fn collect(input: &str) -> (String, Vec<String>) {
        let mut s = Skim::collecting(1 << 20, SpillNames::new());
        let mut spills: Vec<String> = Vec::new();
        for b in input.as_bytes() {
            s.push(&[*b]);
            for each in s.take_spilled() {
                match each {
                    Spilled::Opened { .. } => spills.push(String::new()),
                    Spilled::Bytes { bytes, .. } => {
                        if let Some(last) = spills.last_mut() {
                            last.push_str(&String::from_utf8_lossy(&bytes));
                        }
                    }
                    Spilled::Closed { .. } => {}
                }
            }
        }
        let kept = s.finish().map(|v| String::from_utf8(v).unwrap_or_default());
        (kept.unwrap_or_default(), spills)
    }

    #[test]
    fn collected_artifacts_keep_small_content_and_store_only_a_parts_large_one() {
        let long = "z".repeat(super::super::divert::INLINE_MAX + 1);
        let task = format!(
            r#"{{"id":"t","history":[{{"parts":[{{"text":"{long}"}}]}}],
            "status":{{"message":{{"parts":[{{"text":"{long}"}}]}}}},
            "artifacts":[{{"artifactId":"a","metadata":{{"text":"{long}","parts":[{{"text":"{long}"}}]}},
              "parts":[{{"text":"small"}},{{"text":"{long}"}},{{"data":{{"text":"{long}"}}}}]}}]}}"#
        );
        let (kept, spills) = collect(&task);
        let kept: serde_json::Value = serde_json::from_str(&kept).unwrap_or_default();
        assert_eq!(kept.get("history"), None, "history is never kept");
        assert_eq!(kept["status"]["message"]["parts"][0]["text"], long.as_str());
        let artifact = &kept["artifacts"][0];
        assert_eq!(
            artifact["metadata"]["text"],
            long.as_str(),
            "metadata is not a part"
        );
        assert_eq!(
            artifact["metadata"]["parts"][0]["text"],
            long.as_str(),
            "nor are parts inside metadata"
        );
        assert_eq!(artifact["parts"][0]["text"], "small");
        let stored = |v: &serde_json::Value| {
            v.as_str()
                .is_some_and(|s| s.starts_with(super::super::divert::SPILL_MARK))
        };
        assert!(stored(&artifact["parts"][1]["text"]), "{artifact}");
        assert!(stored(&artifact["parts"][2]["data"]), "{artifact}");
        assert_eq!(spills.len(), 2);
        assert_eq!(spills[0], long);
        assert_eq!(spills[1], format!(r#"{{"text":"{long}"}}"#));
    }
}
