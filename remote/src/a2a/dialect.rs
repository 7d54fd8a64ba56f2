//! Each call the stand-in makes, in the dialect (1.0 or 0.3) and binding (JSON-RPC or
//! HTTP+JSON) the agent's card chose, and each answer read back as 1.0's wire. Adding a
//! dialect is a variant here and a file like `v03.rs` (docs/decisions.md, D36).

use reqwest::Method;
use serde_json::{Value, json};

use super::binding::Transport;
use super::call::{Answer, Call};
use super::v03;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    V1,
    V03,
}

impl Dialect {
    /// The `A2A-Version` header's value.
    pub fn version(self) -> &'static str {
        match self {
            Self::V1 => "1.0",
            Self::V03 => "0.3",
        }
    }
}

/// Builds the calls for one agent.
#[derive(Debug, Clone)]
pub struct Calls {
    pub dialect: Dialect,
    pub tenant: Option<String>,
}

fn segments(path: &[&str]) -> Vec<String> {
    path.iter().map(|s| (*s).to_owned()).collect()
}

impl Calls {
    fn call(
        &self,
        operation: &'static str,
        rpc_method: &'static str,
        mut params: Value,
        rest: (Method, &[&str]),
        rest_body: Option<Value>,
        answer: Answer,
    ) -> Call {
        let mut rest_path = match self.dialect {
            Dialect::V1 => self.tenant.iter().cloned().collect::<Vec<_>>(),
            Dialect::V03 => vec!["v1".to_owned()],
        };
        rest_path.extend(segments(rest.1));
        if let (Dialect::V1, Some(tenant), Some(object)) =
            (self.dialect, &self.tenant, params.as_object_mut())
        {
            object.insert("tenant".into(), tenant.clone().into());
        }
        Call {
            operation,
            rpc_method,
            params,
            rest_method: rest.0,
            rest_path,
            rest_query: None,
            rest_body,
            answer,
        }
    }

    fn v1(&self) -> bool {
        self.dialect == Dialect::V1
    }

    /// SendMessage; `message` is 1.0's. 0.3 says `blocking: false` for 1.0's
    /// `returnImmediately: true`.
    pub fn send(&self, message: &Value, return_immediately: bool) -> Call {
        let (params, rest_body) = if self.v1() {
            let mut params = json!({ "message": message });
            if return_immediately {
                params["configuration"] = json!({ "returnImmediately": true });
            }
            (params.clone(), Some(params))
        } else {
            let configuration = json!({ "blocking": !return_immediately });
            (
                json!({ "message": v03::message_kinded(message), "configuration": configuration }),
                Some(
                    json!({ "request": v03::message_proto(message), "configuration": configuration }),
                ),
            )
        };
        let rpc = if self.v1() {
            "SendMessage"
        } else {
            "message/send"
        };
        self.call(
            "SendMessage",
            rpc,
            params,
            (Method::POST, &["message:send"]),
            rest_body,
            Answer::Sent,
        )
    }

    pub fn stream(&self, message: &Value) -> Call {
        let (params, rest_body) = if self.v1() {
            let params = json!({ "message": message });
            (params.clone(), Some(params))
        } else {
            (
                json!({ "message": v03::message_kinded(message) }),
                Some(json!({ "request": v03::message_proto(message) })),
            )
        };
        let rpc = if self.v1() {
            "SendStreamingMessage"
        } else {
            "message/stream"
        };
        self.call(
            "SendStreamingMessage",
            rpc,
            params,
            (Method::POST, &["message:stream"]),
            rest_body,
            Answer::Sent,
        )
    }

    /// GetTask without the history: the stand-in reads only the status.
    pub fn get(&self, id: &str) -> Call {
        let rpc = if self.v1() { "GetTask" } else { "tasks/get" };
        let mut call = self.call(
            "GetTask",
            rpc,
            json!({ "id": id, "historyLength": 0 }),
            (Method::GET, &["tasks", id]),
            None,
            Answer::Task,
        );
        call.rest_query = Some(("historyLength", "0"));
        call
    }

    /// The card an authenticated caller may read (0.3's "authenticated extended card").
    pub fn extended_card(&self) -> Call {
        let (rpc, path) = if self.v1() {
            ("GetExtendedAgentCard", "extendedAgentCard")
        } else {
            ("agent/getAuthenticatedExtendedCard", "card")
        };
        self.call(
            "GetExtendedAgentCard",
            rpc,
            json!({}),
            (Method::GET, &[path]),
            None,
            Answer::Card,
        )
    }

    /// SubscribeToTask (0.3's `tasks/resubscribe`, a GET over HTTP+JSON).
    pub fn subscribe(&self, id: &str) -> Call {
        let (rpc, method) = if self.v1() {
            ("SubscribeToTask", Method::POST)
        } else {
            ("tasks/resubscribe", Method::GET)
        };
        let last = format!("{id}:subscribe");
        self.call(
            "SubscribeToTask",
            rpc,
            json!({ "id": id }),
            (method, &["tasks", &last]),
            None,
            Answer::Sent,
        )
    }

    pub fn cancel(&self, id: &str) -> Call {
        let rpc = if self.v1() {
            "CancelTask"
        } else {
            "tasks/cancel"
        };
        let last = format!("{id}:cancel");
        self.call(
            "CancelTask",
            rpc,
            json!({ "id": id }),
            (Method::POST, &["tasks", &last]),
            Some(json!({})),
            Answer::Task,
        )
    }

    /// CreateTaskPushNotificationConfig; `config` is 1.0's (with `taskId`).
    pub fn create_push(&self, config: &Value, task_id: &str, config_id: &str) -> Call {
        let (rpc, params, rest_body) = if self.v1() {
            let mut rest_body = config.clone();
            if let Some(object) = rest_body.as_object_mut() {
                object.remove("taskId");
            }
            (
                "CreateTaskPushNotificationConfig",
                config.clone(),
                Some(rest_body),
            )
        } else {
            let inner = v03::push_config(config);
            (
                "tasks/pushNotificationConfig/set",
                json!({ "taskId": task_id, "pushNotificationConfig": inner }),
                Some(json!({
                    "parent": format!("tasks/{task_id}"),
                    "configId": config_id,
                    "config": {
                        "name": format!("tasks/{task_id}/pushNotificationConfigs/{config_id}"),
                        "pushNotificationConfig": inner,
                    },
                })),
            )
        };
        self.call(
            "CreateTaskPushNotificationConfig",
            rpc,
            params,
            (Method::POST, &["tasks", task_id, "pushNotificationConfigs"]),
            rest_body,
            Answer::PushConfig(task_id.to_owned()),
        )
    }

    pub fn delete_push(&self, task_id: &str, config_id: &str) -> Call {
        let (rpc, params) = if self.v1() {
            (
                "DeleteTaskPushNotificationConfig",
                json!({ "taskId": task_id, "id": config_id }),
            )
        } else {
            (
                "tasks/pushNotificationConfig/delete",
                json!({ "id": task_id, "pushNotificationConfigId": config_id }),
            )
        };
        self.call(
            "DeleteTaskPushNotificationConfig",
            rpc,
            params,
            (
                Method::DELETE,
                &["tasks", task_id, "pushNotificationConfigs", config_id],
            ),
            None,
            Answer::Nothing,
        )
    }

    /// An answer's result as 1.0's wire.
    pub fn read(&self, answer: &Answer, transport: &dyn Transport, result: Value) -> Value {
        if self.v1() {
            return result;
        }
        match answer {
            // Both 0.3 forms of a task read with one function.
            Answer::Task => v03::task_v1(&result),
            Answer::Sent => self.item(transport, result),
            Answer::PushConfig(task_id) => v03::push_config_v1(&result, task_id),
            Answer::Nothing | Answer::Card => result,
        }
    }

    /// A stream item (or a 0.3 send result) as 1.0's stream response. A 1.0 stream may
    /// carry 0.3's flat `kind`-tagged events after a 1.0 first one (LangGraph's API
    /// server does), so a 1.0 item is read by its own shape.
    pub fn item(&self, transport: &dyn Transport, item: Value) -> Value {
        match self.dialect {
            Dialect::V1 if is_kinded(&item) => v03::kinded_v1(&item),
            Dialect::V1 => item,
            Dialect::V03 => transport.v03_item(&item),
        }
    }
}

/// 1.0's stream response wraps its one member (`task`, `statusUpdate`, …); 0.3's
/// JSON-RPC item is the object itself, tagged by `kind`.
fn is_kinded(item: &Value) -> bool {
    const WRAPPERS: [&str; 4] = ["task", "message", "statusUpdate", "artifactUpdate"];
    item.get("kind").is_some_and(Value::is_string)
        && !WRAPPERS.iter().any(|w| item.get(*w).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(dialect: Dialect, tenant: Option<&str>) -> Calls {
        Calls {
            dialect,
            tenant: tenant.map(str::to_owned),
        }
    }

    #[test]
    fn each_dialect_names_its_methods_and_paths() {
        let v1 = calls(Dialect::V1, None);
        let v03 = calls(Dialect::V03, None);
        let message = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        for (one, zero_three, rpc, path) in [
            (
                v1.send(&message, true),
                v03.send(&message, true),
                "message/send",
                "v1/message:send",
            ),
            (
                v1.stream(&message),
                v03.stream(&message),
                "message/stream",
                "v1/message:stream",
            ),
            (v1.get("t"), v03.get("t"), "tasks/get", "v1/tasks/t"),
            (
                v1.subscribe("t"),
                v03.subscribe("t"),
                "tasks/resubscribe",
                "v1/tasks/t:subscribe",
            ),
            (
                v1.cancel("t"),
                v03.cancel("t"),
                "tasks/cancel",
                "v1/tasks/t:cancel",
            ),
            (
                v1.delete_push("t", "c"),
                v03.delete_push("t", "c"),
                "tasks/pushNotificationConfig/delete",
                "v1/tasks/t/pushNotificationConfigs/c",
            ),
        ] {
            assert_eq!(
                one.rpc_method, one.operation,
                "1.0 names methods as operations"
            );
            assert_eq!(zero_three.rpc_method, rpc);
            assert_eq!(zero_three.rest_path.join("/"), path);
            assert_eq!(one.rest_path.join("/"), path.trim_start_matches("v1/"));
        }
        assert_eq!(v03.subscribe("t").rest_method, Method::GET);
        assert_eq!(
            v03.send(&message, true).params["configuration"],
            json!({"blocking": false})
        );
        assert_eq!(
            v03.send(&message, true).params["message"]["kind"],
            "message"
        );
        assert_eq!(
            v03.send(&message, false).rest_body.unwrap()["request"]["content"],
            json!([{"text": "hi"}])
        );
    }

    #[test]
    fn a_tenant_goes_with_every_call_of_one_point_zero() {
        let tenanted = calls(Dialect::V1, Some("acme"));
        let get = tenanted.get("t");
        assert_eq!(get.params["tenant"], "acme");
        assert_eq!(get.rest_path, ["acme", "tasks", "t"]);
        let delete = tenanted.delete_push("t", "c");
        assert_eq!(delete.params["tenant"], "acme");
        assert_eq!(delete.rest_path[0], "acme");
    }
}
