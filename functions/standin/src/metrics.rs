//! The stand-in's CloudWatch metrics, in Embedded Metric Format: one JSON line on
//! stdout per measurement, which CloudWatch Logs turns into a metric with no API call, no
//! permission and no latency on the path that measures it.
//!
//! Every metric is in the `StandIn` namespace with the stack's name as the `Stack`
//! dimension, plus at most one dimension of its own (a refusal's reason, an end's cause):
//! few enough series to stay cheap. Each line also carries the stand-in's `task_id` as a
//! plain property, so a metric's spike leads to the stand-ins behind it in Logs Insights.

use std::sync::OnceLock;

use serde_json::{Value, json};

pub const NAMESPACE: &str = "StandIn";

static STACK: OnceLock<String> = OnceLock::new();

/// The stack the metrics are for (`STACK_NAME`); read once at the cold start.
pub fn init(stack: Option<String>) {
    let _ = STACK.set(stack.unwrap_or_else(|| "unnamed".to_owned()));
}

/// What is measured: each is a metric name, and the unit CloudWatch shows it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A push the receiver recorded and rang the doorbell for.
    PushesAccepted,
    /// A push the receiver refused; dimension `Reason` (its refusal category).
    PushesRefused,
    /// Notes the notify function handed to the parent's queue (at least once: a batch
    /// retried after a refusal counts again what other stand-ins' lanes had sent).
    NotesSent,
    /// A note an outlet refused (it is retried in order): what the delivery alarm watches.
    NotesNotDelivered,
    /// A note an outlet refused for good (the sender's fault): passed over so the notes
    /// behind it go on, kept in the note log; its own alarm says so.
    NotesRefused,
    /// A Step Functions parent's SendTaskSuccess or SendTaskFailure refused for good (not a
    /// token, a bad output, a key or permission we lack; not a parent that stopped waiting):
    /// that parent never hears the end; its own alarm says so.
    ParentCallbacksRefused,
    /// From the agent's change (its status timestamp) to the stand-in's record of it, in
    /// milliseconds; dimension `Watch` (`push`, `follow`, `off`).
    HeardLatency,
    /// A follow window that ended; dimension `Ending` (changed, timeout, closed, …).
    FollowWindows,
    /// A stand-in that ended; dimension `Cause` (its final state or failure).
    StandInsEnded,
    /// A webhook delivery given up after its tries (its mark stays: the stand-in's next
    /// note tries again); its own alarm says so.
    WebhookGaveUp,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Self::PushesAccepted => "PushesAccepted",
            Self::PushesRefused => "PushesRefused",
            Self::NotesSent => "NotesSent",
            Self::NotesNotDelivered => "NotesNotDelivered",
            Self::NotesRefused => "NotesRefused",
            Self::ParentCallbacksRefused => "ParentCallbacksRefused",
            Self::HeardLatency => "HeardLatency",
            Self::FollowWindows => "FollowWindows",
            Self::StandInsEnded => "StandInsEnded",
            Self::WebhookGaveUp => "WebhookGaveUp",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Self::HeardLatency => "Milliseconds",
            _ => "Count",
        }
    }

    pub fn dimension(self) -> Option<&'static str> {
        match self {
            Self::PushesRefused => Some("Reason"),
            Self::HeardLatency => Some("Watch"),
            Self::FollowWindows => Some("Ending"),
            Self::StandInsEnded => Some("Cause"),
            _ => None,
        }
    }

    /// Every metric, for the template's dashboard test.
    #[cfg(any(test, feature = "test-support"))]
    pub const ALL: [Self; 10] = [
        Self::PushesAccepted,
        Self::PushesRefused,
        Self::NotesSent,
        Self::NotesNotDelivered,
        Self::NotesRefused,
        Self::ParentCallbacksRefused,
        Self::HeardLatency,
        Self::FollowWindows,
        Self::StandInsEnded,
        Self::WebhookGaveUp,
    ];
}

/// The EMF line for one measurement (public for the tests that read it back).
pub fn line(
    metric: Metric,
    value: f64,
    dimension: Option<&str>,
    task_id: Option<&str>,
    at_ms: u64,
) -> Value {
    let stack = STACK.get().map_or("unnamed", String::as_str);
    let mut dimensions = vec!["Stack"];
    let mut line = json!({
        "Stack": stack,
        metric.name(): value,
    });
    if let Some(name) = metric.dimension() {
        dimensions.push(name);
        line[name] = json!(dimension.unwrap_or("none"));
    }
    if let Some(task_id) = task_id {
        line["task_id"] = json!(task_id);
    }
    line["_aws"] = json!({
        "Timestamp": at_ms,
        "CloudWatchMetrics": [{
            "Namespace": NAMESPACE,
            "Dimensions": [dimensions],
            "Metrics": [{"Name": metric.name(), "Unit": metric.unit()}],
        }],
    });
    line
}

/// Prints one measurement's EMF line, with the value of the metric's own dimension.
pub fn record(metric: Metric, value: f64, dimension: Option<&str>, task_id: Option<&str>) {
    let at_ms = crate::clock::now_ms();
    println!("{}", line(metric, value, dimension, task_id, at_ms));
}

/// Records how long after the agent's change (`changed_at`, its status timestamp) we heard
/// it; nothing without a readable timestamp, or with a clock ahead of ours.
pub fn heard(changed_at: Option<&str>, watch: &str, task_id: &str) {
    let now = crate::clock::now_ms();
    if let Some(latency) = changed_at
        .and_then(crate::clock::parse_rfc3339_ms)
        .and_then(|at| now.checked_sub(at))
    {
        record(
            Metric::HeardLatency,
            latency as f64,
            Some(watch),
            Some(task_id),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_emf_with_the_stack_its_dimension_and_the_task_id() {
        init(Some("prod".into()));
        let line = line(
            Metric::PushesRefused,
            1.0,
            Some("bad_token"),
            Some("job-1"),
            1_700_000_000_000,
        );
        assert_eq!(
            line,
            json!({
                "Stack": "prod",
                "Reason": "bad_token",
                "PushesRefused": 1.0,
                "task_id": "job-1",
                "_aws": {
                    "Timestamp": 1_700_000_000_000_u64,
                    "CloudWatchMetrics": [{
                        "Namespace": "StandIn",
                        "Dimensions": [["Stack", "Reason"]],
                        "Metrics": [{"Name": "PushesRefused", "Unit": "Count"}],
                    }],
                },
            })
        );
    }

    #[test]
    fn latency_is_in_milliseconds_by_watch() {
        let line = line(Metric::HeardLatency, 250.0, Some("push"), Some("j"), 1);
        assert_eq!(
            line["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"],
            "Milliseconds"
        );
        assert_eq!(line["Watch"], "push");
        assert_eq!(line["HeardLatency"], 250.0);
    }

    #[test]
    fn a_line_without_a_stand_in_or_a_dimension_has_only_the_stack() {
        let line = line(Metric::NotesSent, 3.0, None, None, 1);
        assert_eq!(
            line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Stack"]])
        );
        assert!(line.get("task_id").is_none());
    }
}
