//! The client over HTTP+JSON, for agents whose card lists it first.

use super::*;

async fn rest_client(replies: Vec<Reply>) -> (ReplayServer, AgentClient) {
    let card = card_with(|c| {
        let list = c["supportedInterfaces"].as_array_mut().expect("list");
        list.reverse();
    });
    let mut all = vec![card];
    all.extend(replies);
    let server = ReplayServer::start(all).await;
    let client = AgentClient::connect(http_client().expect("client"), &server.base, None, quick())
        .await
        .expect("card");
    assert_eq!(client.agent().binding, Binding::HttpJson);
    (server, client)
}

#[tokio::test]
async fn rest_binding_paths_bodies_and_errors() {
    let (server, client) = rest_client(vec![
        captured("c_rest/01_rest_send_message_first_turn.json"),
        captured("c_rest/02_rest_get_task.json"),
        captured("c_rest/04_rest_create_push_config.json"),
        raw_stream("e_raw_sse_framing/subscribe_rest.raw", 9),
        captured("c_rest/10_rest_subscribe_terminal_error.json"),
        captured("c_rest/11_rest_get_task_unknown_error.json"),
        captured("c_rest/13_rest_delete_push_config.json"),
    ])
    .await;
    let sent = client
        .send_message(&user("widget", None), false)
        .await
        .expect("sent");
    assert!(
        matches!(sent, SendMessageResult::Task(t) if t.status.state == WireState::InputRequired)
    );
    assert_eq!(
        client.get_task(REST_TASK).await.expect("task").status.state,
        WireState::InputRequired
    );
    let config = TaskPushNotificationConfig {
        id: Some("cfg-c".into()),
        task_id: REST_TASK.into(),
        url: "http://127.0.0.1:41242/webhook/c".into(),
        token: Some("tok-c".into()),
        authentication: None,
    };
    assert_eq!(
        client
            .create_push_config(&config)
            .await
            .expect("created")
            .id
            .as_deref(),
        Some("cfg-c")
    );
    let events = collect(client.subscribe_to_task(REST_TASK).await.expect("stream")).await;
    assert_eq!(events.len(), 4);
    assert!(events.iter().all(Result::is_ok));
    assert!(
        client
            .subscribe_to_task(REST_TASK)
            .await
            .err()
            .expect("terminal")
            .is_terminal_task()
    );
    assert!(matches!(
        client.get_task("does-not-exist").await,
        Err(RemoteError::TaskNotFound(_))
    ));
    client
        .delete_push_config(REST_TASK, "cfg-c")
        .await
        .expect("deleted");

    let r = server.requests();
    let line = |i: usize| format!("{} {}", r[i].method, r[i].target);
    assert_eq!(line(1), "POST /rest/message:send");
    assert_eq!(r[1].header("content-type"), Some("application/a2a+json"));
    assert_eq!(
        line(2),
        format!("GET /rest/tasks/{REST_TASK}?historyLength=0")
    );
    assert_eq!(
        line(3),
        format!("POST /rest/tasks/{REST_TASK}/pushNotificationConfigs")
    );
    assert_eq!(
        r[3].json(),
        json!({"id": "cfg-c", "url": "http://127.0.0.1:41242/webhook/c", "token": "tok-c"})
    );
    assert_eq!(line(4), format!("POST /rest/tasks/{REST_TASK}:subscribe"));
    assert_eq!(
        line(7),
        format!("DELETE /rest/tasks/{REST_TASK}/pushNotificationConfigs/cfg-c")
    );
    assert!(
        r.iter()
            .skip(1)
            .all(|q| q.header("a2a-version") == Some("1.0"))
    );
}

#[tokio::test]
async fn rest_ids_cannot_change_the_path() {
    let (server, client) =
        rest_client(vec![captured("c_rest/11_rest_get_task_unknown_error.json")]).await;
    let _ = client.get_task("../../admin?x=1#f").await;
    assert_eq!(
        server.requests()[1].target,
        "/rest/tasks/..%2F..%2Fadmin%3Fx=1%23f?historyLength=0"
    );
}
