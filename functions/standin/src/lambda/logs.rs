//! One JSON object per log line, flat: the event's fields at the top level together with
//! the fields of every span it is in. Each invocation runs in a span that names its
//! stand-in, so every line an invocation writes (the SDK's included) carries `task_id`,
//! and CloudWatch Logs Insights finds a stand-in's whole story with one filter.

use std::fmt;

use lambda_http::{Request, RequestExt};
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Span, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

pub fn init() {
    let _ = tracing_subscriber::fmt()
        .json()
        .event_format(FlatJson)
        .try_init();
}

/// An invoked function's span: every step's and park's input has `task_id`.
pub fn event_span(event: &Value) -> Span {
    // A hearing carries its stand-in's row.
    let task_id = event["task_id"]
        .as_str()
        .or_else(|| event["row"]["task_id"].as_str());
    tracing::info_span!("invocation", task_id)
}

/// An API call's span: the path names the stand-in (push, reply, cancel, status, notes),
/// cut to a bounded length since it comes from outside; a start records its id on the
/// span once it is made.
pub fn request_span(request: &Request) -> Span {
    let span = tracing::info_span!("invocation", task_id = tracing::field::Empty);
    if let Some(id) = request.path_parameters().first("task_id") {
        span.record("task_id", crate::push::token::truncate_for_log(id));
    }
    span
}

/// A notify batch's span: the stand-ins whose notes it holds (`a,b,…`), and `task_id`
/// too when it holds one stand-in's, as every other function's lines name it.
pub fn batch_span(task_ids: &[&str]) -> Span {
    let single = task_ids.first().filter(|_| task_ids.len() == 1);
    tracing::info_span!("invocation", task_id = single, task_ids = %task_ids.join(","))
}

/// A follower's span: the stand-ins it was started with (`a,b,…`), so its own lines
/// (the follow queue's calls) name them; each park's lines name their own `task_id`.
pub fn follower_span(task_ids: &[String]) -> Span {
    tracing::info_span!("invocation", task_ids = %task_ids.join(","))
}

/// The event format: `{"level": …, <span fields>, <event fields>}`; no timestamp, since
/// CloudWatch stamps every line.
pub struct FlatJson;

impl<S, N> FormatEvent<S, N> for FlatJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        line.insert("level".into(), event.metadata().level().as_str().into());
        // The spans' fields as the JSON field formatter stored them, outermost first.
        for span in ctx
            .event_scope()
            .into_iter()
            .flat_map(|scope| scope.from_root())
        {
            if let Some(fields) = span.extensions().get::<FormattedFields<N>>()
                && let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(fields)
            {
                line.extend(fields);
            }
        }
        event.record(&mut Fields(&mut line));
        blank_held(&mut line);
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// Blanks every credential value the process holds from the line's strings, before
/// they are escaped (a value with a quote would not match the written line).
fn blank_held(line: &mut Map<String, Value>) {
    let held = crate::auth::held::values();
    if held.is_empty() {
        return;
    }
    let guard = crate::artifacts::guard::EchoGuard::new(None, held);
    for value in line.values_mut() {
        if let Value::String(text) = value {
            *text = guard.blank(text);
        }
    }
}

struct Fields<'a>(&'a mut Map<String, Value>);

/// Values JSON has a type for are written as that type; anything else by its `Debug`.
macro_rules! record_as_json {
    ($($method:ident: $type:ty),*) => {$(
        fn $method(&mut self, field: &Field, value: $type) {
            self.0.insert(field.name().into(), value.into());
        }
    )*};
}

impl Visit for Fields<'_> {
    record_as_json!(record_str: &str, record_bool: bool, record_f64: f64);
    record_as_json!(record_i64: i64, record_u64: u64);
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use tracing::{info, info_span, warn};
    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_or(Ok(0), |mut out| {
                out.extend_from_slice(buf);
                Ok(buf.len())
            })
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Self;
        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    /// What `log` writes through the flat JSON format.
    fn written(log: impl FnOnce()) -> String {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .event_format(FlatJson)
            .with_writer(out.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        String::from_utf8(out.0.lock().map(|o| o.clone()).unwrap_or_default()).unwrap_or_default()
    }

    #[test]
    fn every_line_in_an_invocation_carries_its_span_fields_at_the_top_level() {
        let text = written(|| {
            let span = info_span!("invocation", task_id = "job-1");
            let _entered = span.enter();
            info!(mode = "push", "watch chosen");
            warn!(attempt = 2_u64, ok = false, "GetTask failed");
            drop(_entered);
            // A start names its stand-in only once the id is made: recorded later.
            let start = info_span!("invocation", task_id = tracing::field::Empty);
            let _entered = start.enter();
            info!("before the id");
            start.record("task_id", "si-1");
            info!("after the id");
        });
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        assert_eq!(
            lines[..2],
            vec![
                serde_json::json!({"level": "INFO", "task_id": "job-1", "mode": "push", "message": "watch chosen"}),
                serde_json::json!({"level": "WARN", "task_id": "job-1", "attempt": 2, "ok": false, "message": "GetTask failed"}),
            ]
        );
        assert_eq!(
            lines[2..],
            vec![
                serde_json::json!({"level": "INFO", "message": "before the id"}),
                serde_json::json!({"level": "INFO", "task_id": "si-1", "message": "after the id"}),
            ]
        );
    }

    /// An agent's error that echoes a credential the process holds (here a 40-character
    /// lowercase hex API key, which the heuristic scrub lets through, with a quote in
    /// it so that the written line's escaping would hide it from a search of the line)
    /// is logged blanked.
    #[test]
    fn a_held_credential_never_reaches_a_log_line() {
        let key = "0123456789abcdef\"0123456789abcdef01234567";
        crate::auth::held::remember(key);
        let text = written(|| {
            warn!(error = %format!("the agent said: bad key {key}"), "GetTask failed");
        });
        let line: Value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
        let error = line["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("the agent said: bad key ****"), "{line}");
        assert!(!error.contains(key), "{line}");
    }
}
