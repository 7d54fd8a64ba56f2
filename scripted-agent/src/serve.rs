//! The agent's HTTP side: its card, its JSON-RPC calls (each turn's script played as a
//! stream or an answer), `GET /changes`, and the SSE it streams.

use super::*;

pub(crate) fn status(state: &str, text: &str, task: &str, context: &str, at: &str) -> Value {
    let mut status = json!({"state": state, "timestamp": at});
    if !text.is_empty() {
        status["message"] = json!({"messageId": format!("m-{}", rand_id()), "taskId": task, "contextId": context, "role": "ROLE_AGENT", "parts": [{"text": text}]});
    }
    status
}

/// A status with parts (a form, a sign-in link) beside its text.
pub(crate) fn with_parts(mut status: Value, extra: &[Value]) -> Value {
    let parts = status
        .get_mut("message")
        .and_then(|m| m.get_mut("parts"))
        .and_then(Value::as_array_mut);
    if let Some(parts) = parts {
        parts.extend(extra.iter().cloned());
    }
    status
}

/// `GET /authorize/{task}`: the user signs in out of band, where the agent's
/// AUTH_REQUIRED note sent them, and the task moves on.
pub(crate) async fn authorize(
    State(agent): State<TestAgent>,
    axum::extract::Path(task): axum::extract::Path<String>,
) -> Response {
    let waiting = agent.state(&task).as_deref() == Some("TASK_STATE_AUTH_REQUIRED");
    if !waiting {
        return (StatusCode::CONFLICT, "no sign-in is awaited for this task").into_response();
    }
    agent
        .change(
            &task,
            "TASK_STATE_WORKING",
            "Signed in; booking the room",
            false,
        )
        .await;
    (StatusCode::OK, "Signed in. You can close this page.").into_response()
}

pub(crate) fn rand_id() -> String {
    let mut b = [0u8; 8];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) async fn changes(State(agent): State<TestAgent>) -> Response {
    let list: Vec<Value> = agent
        .changes()
        .into_iter()
        .map(|c| json!({"task": c.task, "state": c.state, "text": c.text, "at_ms": c.at_ms as u64}))
        .collect();
    (
        [(header::CONTENT_TYPE, "application/json")],
        Value::Array(list).to_string(),
    )
        .into_response()
}

pub(crate) async fn card(State(agent): State<TestAgent>) -> Response {
    let behaviour = lock(&agent.inner).behaviour.clone();
    let push = behaviour.push_capable;
    let interface = behaviour
        .interface_url
        .unwrap_or_else(|| format!("{}/", agent.url));
    let description = format!(
        "Scriptable A2A agent for the end-to-end tests{}",
        " ".repeat(behaviour.card_padding)
    );
    let body = json!({
        "name": "Stand-in test agent",
        "description": description,
        "supportedInterfaces": [{"url": interface, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "version": "0.0.1",
        "capabilities": {"streaming": behaviour.streaming, "pushNotifications": push},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "scripted", "name": "Scripted turns", "tags": ["test"],
                    "description": "Answers each turn as the test scripted it"}]
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn rpc_result(id: &Value, result: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"result": result, "id": id, "jsonrpc": "2.0"}).to_string(),
    )
        .into_response()
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        json!({"error": {"code": code, "message": message}, "id": id, "jsonrpc": "2.0"})
            .to_string(),
    )
        .into_response()
}

/// A live tail for a subscription: the change feed, the task it follows, and when to drop it.
type Live = (
    broadcast::Receiver<(String, Value)>,
    String,
    Option<Duration>,
);

fn sse(
    id: Value,
    events: Vec<Value>,
    live: Option<Live>,
    guard: Option<OpenGuard>,
    dead: tokio::sync::watch::Receiver<bool>,
) -> Response {
    let frame = move |v: &Value| {
        Bytes::from(format!(
            "data: {}\r\n\r\n",
            json!({"result": v, "id": id, "jsonrpc": "2.0"})
        ))
    };
    let first: Vec<Result<Bytes, std::io::Error>> = events.iter().map(|e| Ok(frame(e))).collect();
    let head = futures_util::stream::iter(first);
    let body = match live {
        None => Body::from_stream(head),
        Some((rx, task, drop_after)) => {
            let deadline = drop_after.map(|d| tokio::time::Instant::now() + d);
            let tail = futures_util::stream::unfold(
                (rx, false, guard),
                move |(mut rx, done, guard)| {
                    let task = task.clone();
                    let frame = frame.clone();
                    let mut dead = dead.clone();
                    async move {
                        if done {
                            return None;
                        }
                        loop {
                            let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
                            let next = tokio::select! {
                                // A dead process ends no stream cleanly: the body fails, and
                                // the connection is cut without its last chunk.
                                _ = dead.wait_for(|dead| *dead) => {
                                    let died = std::io::Error::other("the agent died");
                                    return Some((Err(died), (rx, true, guard)));
                                }
                                r = tokio::time::timeout_at(deadline.unwrap_or(far), rx.recv()) => match r {
                                    Ok(r) => r,
                                    Err(_) => return None,
                                },
                            };
                            match next {
                                Ok((t, event)) if t == task => {
                                    let state = event["statusUpdate"]["status"]["state"]
                                        .as_str()
                                        .unwrap_or_default()
                                        .to_owned();
                                    let end = TERMINAL.contains(&state.as_str());
                                    return Some((
                                        Ok::<_, std::io::Error>(frame(&event)),
                                        (rx, end, guard),
                                    ));
                                }
                                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                                Err(broadcast::error::RecvError::Closed) => return None,
                            }
                        }
                    }
                },
            );
            Body::from_stream(futures_util::StreamExt::chain(head, tail))
        }
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

pub(crate) async fn rpc(
    State(agent): State<TestAgent>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return rpc_error(&Value::Null, -32700, "parse error");
    };
    let id = request["id"].clone();
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    lock(&agent.inner).calls.push(method.clone());
    if headers.get("a2a-version").and_then(|v| v.to_str().ok()) != Some("1.0") {
        return rpc_error(&id, -32009, "A2A-Version 1.0 required");
    }
    let params = &request["params"];
    let behaviour = lock(&agent.inner).behaviour.clone();
    if let Some((methods, to)) = &behaviour.redirect
        && methods.contains(&method)
    {
        return Response::builder()
            .status(StatusCode::TEMPORARY_REDIRECT)
            .header(header::LOCATION, to.as_str())
            .body(Body::empty())
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    let streams = matches!(method.as_str(), "SendStreamingMessage" | "SubscribeToTask");
    if streams && !behaviour.streaming {
        return rpc_error(&id, -32004, "Streaming is not supported by this agent");
    }
    match method.as_str() {
        "SendStreamingMessage" | "SendMessage" => {
            if let Some(message) = behaviour.turn_error {
                return rpc_error(&id, -32603, &message);
            }
            if method == "SendStreamingMessage" && behaviour.endless_stream {
                return endless_line();
            }
            send(&agent, id, params, method == "SendStreamingMessage").await
        }
        "GetTask" => match agent.snapshot(params["id"].as_str().unwrap_or_default(), true) {
            Some(task) => rpc_result(&id, task),
            None => rpc_error(&id, -32001, "Task not found"),
        },
        "SubscribeToTask" => {
            let task = params["id"].as_str().unwrap_or_default().to_owned();
            let Some(snapshot) = agent.snapshot(&task, false) else {
                return rpc_error(&id, -32001, "Task not found");
            };
            let state = snapshot["status"]["state"].as_str().unwrap_or_default();
            if TERMINAL.contains(&state) {
                return rpc_error(
                    &id,
                    -32004,
                    &format!("Task {task} is in terminal state: {state}"),
                );
            }
            let drop_after = lock(&agent.inner).behaviour.drop_subscriptions_after;
            agent.open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let guard = OpenGuard(agent.open.clone());
            sse(
                id,
                vec![json!({"task": snapshot})],
                Some((agent.events.subscribe(), task, drop_after)),
                Some(guard),
                agent.dead.subscribe(),
            )
        }
        "CreateTaskPushNotificationConfig" => {
            if let Some(delay) = behaviour.slow_push_registration {
                tokio::time::sleep(delay).await;
            }
            if !behaviour.push_capable {
                return rpc_error(&id, -32003, "Push notifications not supported");
            }
            if behaviour.refuse_push_registration {
                return rpc_error(&id, -32602, "Invalid push notification URL");
            }
            let task = params["taskId"].as_str().unwrap_or_default().to_owned();
            if agent.snapshot(&task, false).is_none() {
                return rpc_error(&id, -32001, "Task not found");
            }
            let config = PushConfig {
                id: params["id"].as_str().unwrap_or(&task).to_owned(),
                url: params["url"].as_str().unwrap_or_default().to_owned(),
                token: params["token"].as_str().unwrap_or_default().to_owned(),
            };
            let mut inner = lock(&agent.inner);
            inner.tokens.push(config.token.clone());
            let list = inner.configs.entry(task).or_default();
            list.retain(|c| c.id != config.id);
            list.push(config);
            drop(inner);
            rpc_result(&id, params.clone())
        }
        "DeleteTaskPushNotificationConfig" => {
            let task = params["taskId"].as_str().unwrap_or_default().to_owned();
            let config = params["id"].as_str().unwrap_or_default().to_owned();
            let slow = {
                let mut inner = lock(&agent.inner);
                inner.deletes.push(format!("{task}/{config}"));
                inner.behaviour.slow_deletes
            };
            if let Some(delay) = slow {
                tokio::time::sleep(delay).await;
            }
            let mut inner = lock(&agent.inner);
            inner.deletes_answered += 1;
            if inner.behaviour.fail_deletes {
                return rpc_error(&id, -32603, "delete failed on purpose");
            }
            if let Some(list) = inner.configs.get_mut(&task) {
                list.retain(|c| c.id != config);
            }
            drop(inner);
            rpc_result(&id, Value::Null)
        }
        "CancelTask" => {
            let task = params["id"].as_str().unwrap_or_default().to_owned();
            let Some(snapshot) = agent.snapshot(&task, false) else {
                return rpc_error(&id, -32001, "Task not found");
            };
            if TERMINAL.contains(&snapshot["status"]["state"].as_str().unwrap_or_default()) {
                return rpc_error(&id, -32002, "Task cannot be canceled");
            }
            agent.change(&task, "TASK_STATE_CANCELED", "", false).await;
            rpc_result(&id, agent.snapshot(&task, true).unwrap_or(Value::Null))
        }
        _ => rpc_error(&id, -32601, "Method not found"),
    }
}

/// An SSE stream whose one `data:` line never ends (64 KiB of `x` at a time, forever).
fn endless_line() -> Response {
    let head =
        futures_util::stream::once(async { Ok::<_, Infallible>(Bytes::from_static(b"data: \"")) });
    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
    let tail = futures_util::stream::repeat_with(move || Ok::<_, Infallible>(chunk.clone()));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .body(Body::from_stream(futures_util::StreamExt::chain(
            head, tail,
        )))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn send(agent: &TestAgent, id: Value, params: &Value, streaming: bool) -> Response {
    let message = &params["message"];
    lock(&agent.inner).messages.push(message.clone());
    let existing = message["taskId"].as_str().map(str::to_owned);
    let user_text: String = message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let (task, context, mut events) = match existing {
        Some(task) => {
            let Some(snap) = agent.snapshot(&task, false) else {
                return rpc_error(&id, -32001, "Task not found");
            };
            let context = snap["contextId"].as_str().unwrap_or_default().to_owned();
            let state = snap["status"]["state"].as_str().unwrap_or_default();
            if TERMINAL.contains(&state) {
                // As the official SDK answers a message to a finished task.
                return rpc_error(
                    &id,
                    -32004,
                    &format!("Task {task} is in terminal state: {state}"),
                );
            }
            if message["contextId"].as_str() != Some(context.as_str()) {
                return rpc_error(&id, -32602, "contextId must match the task's");
            }
            (task, context, vec![])
        }
        None => {
            let (task, context) = (format!("task-{}", rand_id()), format!("ctx-{}", rand_id()));
            let rec = TaskRec {
                id: task.clone(),
                context_id: context.clone(),
                state: "TASK_STATE_SUBMITTED".into(),
                text: String::new(),
                visible_state: "TASK_STATE_SUBMITTED".into(),
                visible_text: String::new(),
                changed_at: now_rfc3339(),
                artifacts: Vec::new(),
                parts: Vec::new(),
                turns: 0,
            };
            lock(&agent.inner).tasks.insert(task.clone(), rec);
            let snapshot = agent.snapshot(&task, false).unwrap_or(Value::Null);
            (task, context, vec![json!({"task": snapshot})])
        }
    };
    let _ = context;
    let (turn, script) = {
        let mut inner = lock(&agent.inner);
        let turn = inner.tasks.get_mut(&task).map_or(0, |t| {
            t.turns += 1;
            t.turns - 1
        });
        let script = if !inner.turns.is_empty() {
            inner.turns.remove(0)
        } else if let Some(responder) = inner.responder.clone() {
            drop(inner);
            responder(&task, turn, &user_text)
        } else {
            vec![(
                "TASK_STATE_COMPLETED".to_owned(),
                "nothing scripted".to_owned(),
            )]
        };
        (turn, script)
    };
    // A turn answers the question: its form goes with it.
    if let Some(rec) = lock(&agent.inner).tasks.get_mut(&task) {
        rec.parts.clear();
    }
    for (state, text) in &script {
        let update = agent.status_update(&task, state, text);
        {
            let mut inner = lock(&agent.inner);
            if let Some(rec) = inner.tasks.get_mut(&task) {
                rec.state = state.clone();
                rec.text = text.clone();
                rec.changed_at = now_rfc3339();
                rec.visible_state = state.clone();
                rec.visible_text = text.clone();
            }
            inner.record(&task, state, text);
        }
        if !lock(&agent.inner).behaviour.quiet_turns {
            let _ = agent.events.send((task.clone(), update.clone()));
        }
        agent.push(&task, &update).await;
        events.push(update);
    }
    let _ = agent.turns_done.send(TurnDone {
        task: task.clone(),
        turn,
        text: user_text,
    });
    if streaming {
        sse(id, events, None, None, agent.dead.subscribe())
    } else {
        rpc_result(&id, json!({"task": agent.snapshot(&task, true)}))
    }
}
