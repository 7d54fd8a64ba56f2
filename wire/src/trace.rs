//! One trace across the hop: a W3C trace context (`traceparent`) a parent gives on a
//! start, or one the stand-in begins. The stand-in sends it, as given, on every call to
//! the agent; each note names its trace; the execution's X-Ray segments join it.

use crate::body_error::{BodyError, field_refused};

/// A W3C `traceparent`: `00-{trace id}-{parent span id}-{flags}`, held in its
/// canonical (lower-case) form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: String,
    parent_id: String,
    flags: String,
}

const RULE: &str = "must be a W3C traceparent: 00-{32 lower-case hex, not all zero}-{16 lower-case hex, not all zero}-{2 hex}";

fn hex_of(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn all_zero(text: &str) -> bool {
    text.bytes().all(|b| b == b'0')
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl TraceContext {
    /// Reads a `traceparent`; `field` names it in the refusal. Only version 00 is read:
    /// a later version's extra fields would be dropped when the stand-in passes it on.
    pub fn parse(field: &str, value: &str) -> Result<Self, BodyError> {
        let refused = || {
            let shown: String = value.chars().take(80).collect();
            field_refused(field, format!("{RULE}, got {shown:?}"))
        };
        let mut fields = value.split('-');
        let (Some(version), Some(trace_id), Some(parent_id), Some(flags), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(refused());
        };
        if version != "00"
            || !hex_of(trace_id, 32)
            || all_zero(trace_id)
            || !hex_of(parent_id, 16)
            || all_zero(parent_id)
            || !hex_of(flags, 2)
        {
            return Err(refused());
        }
        Ok(Self {
            trace_id: trace_id.to_owned(),
            parent_id: parent_id.to_owned(),
            flags: flags.to_owned(),
        })
    }

    /// A trace of the stand-in's own, sampled, from 24 random bytes (16 for the trace,
    /// 8 for the span that begins it).
    pub fn begin(random: [u8; 24]) -> Self {
        let (trace, span) = random.split_at(16);
        let mut context = Self {
            trace_id: hex(trace),
            parent_id: hex(span),
            flags: "01".into(),
        };
        // All zero is invalid; 24 random bytes are never that, but a bad source could be.
        if all_zero(&context.trace_id) {
            context.trace_id.replace_range(31.., "1");
        }
        if all_zero(&context.parent_id) {
            context.parent_id.replace_range(15.., "1");
        }
        context
    }

    /// The 32 hex digits that name the trace.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// The header's value, as the agent gets it.
    pub fn header(&self) -> String {
        format!("00-{}-{}-{}", self.trace_id, self.parent_id, self.flags)
    }

    /// The trace as Step Functions takes it for an execution (`traceHeader`), so the
    /// execution's X-Ray segments join the trace: X-Ray's id is the same 128 bits,
    /// written `1-{8 hex}-{24 hex}`.
    pub fn xray_header(&self) -> String {
        let sampled = u8::from_str_radix(&self.flags, 16).map_or(0, |flags| flags & 1);
        format!(
            "Root=1-{}-{};Sampled={sampled}",
            &self.trace_id[..8],
            &self.trace_id[8..]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIVEN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_and_is_given_back_as_it_came() {
        let trace = TraceContext::parse("traceparent", GIVEN).unwrap();
        assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.header(), GIVEN);
        assert_eq!(
            trace.xray_header(),
            "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Sampled=1"
        );
        let unsampled = TraceContext::parse("traceparent", &GIVEN.replace("-01", "-00")).unwrap();
        assert!(unsampled.xray_header().ends_with(";Sampled=0"));
    }

    #[test]
    fn a_malformed_traceparent_is_refused_naming_the_field() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        ] {
            let err = TraceContext::parse("traceparent", bad).unwrap_err();
            assert!(
                err.0.starts_with("traceparent: must be a W3C traceparent"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn a_begun_trace_is_a_valid_sampled_traceparent() {
        let begun = TraceContext::begin([7; 24]);
        assert_eq!(TraceContext::parse("t", &begun.header()), Ok(begun.clone()));
        assert!(begun.header().ends_with("-01"));
        let zero = TraceContext::begin([0; 24]);
        assert!(TraceContext::parse("t", &zero.header()).is_ok());
    }
}
