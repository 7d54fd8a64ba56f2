//! The registry through the API.

use super::*;

/// The registry through the API: an agent put is listed, shown and takes a stand-in, its
/// entry snapshotted on the row; the stack's agents are not the API's to change.
#[tokio::test]
async fn an_agent_put_through_the_api_takes_a_stand_in_and_keeps_its_entry() {
    let w = World::new();
    let body = json!({"url": "https://added.example", "updates": "follow"});
    let put = w
        .call(Call::AgentPut {
            id: "added",
            body: &body,
        })
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body["source"], "registry");
    assert_eq!(put.body["agent"]["url"], "https://added.example");
    let shown = w.call(Call::AgentShow { id: "added" }).await;
    assert_eq!(
        (shown.status, &shown.body["agent"]),
        (200, &put.body["agent"])
    );
    let listed = w.call(Call::AgentList { after: None }).await;
    let ids: Vec<(&str, &str)> = listed.body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"]["id"].as_str().unwrap(),
                a["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("writer", "stack"),
            ("critic", "stack"),
            ("added", "registry")
        ]
    );
    let started = w
        .start(json!({"agent": "added", "message": "hi", "task_id": "si-added"}))
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let row = w.store.get("si-added").await.unwrap().expect("a row");
    let kept = row.agent_entry.expect("the row keeps the entry");
    assert!(kept.contains("https://added.example"), "{kept}");
    // An edit changes new stand-ins only: the row's snapshot stays.
    let edit = json!({"url": "https://moved.example"});
    assert_eq!(
        w.call(Call::AgentPut {
            id: "added",
            body: &edit
        })
        .await
        .status,
        200
    );
    let row = w.store.get("si-added").await.unwrap().expect("a row");
    assert!(row.agent_entry.unwrap().contains("https://added.example"));
    let removed = w.call(Call::AgentRemove { id: "added" }).await;
    assert_eq!(
        (removed.status, removed.body["removed"].as_bool()),
        (200, Some(true))
    );
    assert_eq!(w.registry.entry("added"), None);
    assert_eq!(w.call(Call::AgentShow { id: "added" }).await.status, 404);
    assert_eq!(w.call(Call::AgentRemove { id: "added" }).await.status, 404);
    let unknown = w
        .start(json!({"agent": "added", "message": "hi", "task_id": "si-gone"}))
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
}

#[tokio::test]
async fn a_bad_agent_entry_is_refused_naming_its_field_and_the_stacks_are_kept() {
    let w = World::new();
    let bad = json!({"url": "ftp://h"});
    let refused = w
        .call(Call::AgentPut {
            id: "x",
            body: &bad,
        })
        .await;
    assert_eq!(
        (refused.status, refused.body["field"].as_str()),
        (400, Some("url"))
    );
    assert!(error(&refused).starts_with("url: "), "{}", refused.body);
    let wrong_id = json!({"id": "y", "url": "http://h"});
    let refused = w
        .call(Call::AgentPut {
            id: "x",
            body: &wrong_id,
        })
        .await;
    assert_eq!(
        refused.body["field"].as_str(),
        Some("id"),
        "{}",
        refused.body
    );
    let bad_path = json!({"url": "http://h"});
    let refused = w
        .call(Call::AgentPut {
            id: "a b",
            body: &bad_path,
        })
        .await;
    assert_eq!(
        refused.body["field"].as_str(),
        Some("id"),
        "{}",
        refused.body
    );
    assert_eq!(w.registry.entry("x"), None);
    let taken = w
        .call(Call::AgentPut {
            id: "writer",
            body: &bad_path,
        })
        .await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(error(&taken).contains("Agents parameter"), "{}", taken.body);
    assert_eq!(w.call(Call::AgentRemove { id: "writer" }).await.status, 409);
    let shown = w.call(Call::AgentShow { id: "writer" }).await;
    assert_eq!(shown.body["source"], "stack");
}

/// The confused deputy through `PUT /agents`: entries that would have the functions
/// sign a call to SQS or S3, or read a card off SQS, are refused naming the field, and
/// nothing is stored.
#[tokio::test]
async fn an_agent_entry_on_an_aws_api_is_refused_by_put_agents() {
    let mut w = World::new();
    w.agents = Catalog::new(
        AgentsConfig::parse(r#"{"agents":[]}"#).unwrap(),
        Some(Box::new(w.registry.clone())),
    )
    .with_rules(standin::agent_rules::EntryRules {
        region: Some("us-east-1".into()),
        role_pattern: Some("arn:aws:iam::123456789012:role/standin-agent-*".into()),
        ..Default::default()
    });
    let role = "arn:aws:iam::123456789012:role/standin-agent-a";
    let queue = "https://sqs.us-east-1.amazonaws.com/123456789012/standin-parent.fifo";
    for (entry, field) in [
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com",
                   "card_url": format!("{queue}?Action=SendMessage&MessageBody=forged"),
                   "auth": {"type": "sigv4", "service": "sqs", "role_arn": role}}),
            "auth.service",
        ),
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com",
                   "card_url": format!("{queue}?Action=ReceiveMessage&VisibilityTimeout=43200"),
                   "auth": {"type": "sigv4", "role_arn": role}}),
            "url",
        ),
        (
            json!({"url": "https://s3.us-east-1.amazonaws.com",
                   "auth": {"type": "sigv4", "service": "s3", "role_arn": role}}),
            "auth.service",
        ),
        (
            json!({"url": "https://agent.example",
                   "card_url": format!("{queue}?Action=SendMessage"),
                   "allowed_origins": ["https://sqs.us-east-1.amazonaws.com"]}),
            "card_url",
        ),
        (
            json!({"url": "https://bedrock-agentcore.us-east-1.amazonaws.com",
                   "auth": {"type": "sigv4", "service": "bedrock-agentcore"}}),
            "auth.role_arn",
        ),
    ] {
        let refused = w
            .call(Call::AgentPut {
                id: "deputy",
                body: &entry,
            })
            .await;
        assert_eq!(
            (refused.status, refused.body["field"].as_str()),
            (400, Some(field)),
            "{entry}: {}",
            refused.body
        );
        assert_eq!(w.registry.entry("deputy"), None, "{entry}");
    }
    let agentcore = json!({"url": "https://bedrock-agentcore.us-east-1.amazonaws.com/runtimes/r/invocations",
                           "auth": {"type": "sigv4", "role_arn": role}});
    let taken = w
        .call(Call::AgentPut {
            id: "runtime",
            body: &agentcore,
        })
        .await;
    assert_eq!(taken.status, 200, "{}", taken.body);
}

/// A parent choosing an agent reads what its card says; a card that does not read is
/// shown as why, beside the others, and an answer that changes an entry reads no card.
#[tokio::test]
async fn the_agents_listed_and_shown_carry_what_their_cards_say() {
    let w = World::new();
    let listed = w.call(Call::AgentList { after: None }).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let writer = &listed.body["agents"][0];
    assert_eq!(writer["agent"]["id"], "writer");
    assert_eq!(
        writer["card"],
        json!({"name": "Writer", "description": "Drafts prose",
               "skills": [{"id": "draft", "name": "Draft",
                           "description": "A first draft from notes", "tags": ["prose"]}]})
    );
    let critic = &listed.body["agents"][1];
    assert_eq!(
        critic["card"],
        json!({"name": "", "description": "", "skills": [],
               "error": "http://127.0.0.1:9 answered HTTP 404 Not Found"})
    );
    let shown = w.call(Call::AgentShow { id: "writer" }).await;
    assert_eq!(shown.body["card"]["name"], "Writer", "{}", shown.body);

    let body = json!({"url": "https://added.example"});
    let put = w
        .call(Call::AgentPut {
            id: "added",
            body: &body,
        })
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body.get("card"), None, "{}", put.body);
}

#[tokio::test]
async fn the_agent_routes_are_the_documents() {
    let (_w, router) = router();
    let (status, body) = request(&router, "PUT", "/agents/r1", json!({"url": "http://h"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = request(&router, "GET", "/agents/r1", Value::Null).await;
    assert_eq!((status, body["agent"]["id"].as_str()), (200, Some("r1")));
    let (status, body) = request(&router, "GET", "/agents", Value::Null).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = request(&router, "DELETE", "/agents/r1", Value::Null).await;
    assert_eq!(status, 200);
    let (status, body) = request(&router, "POST", "/agents/r1", Value::Null).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn an_agents_document_is_put_whole_or_refused_naming_its_entry_and_field() {
    let (w, router) = router();
    let half_bad = json!({"agents": [
        {"id": "ok1", "url": "http://h"},
        {"id": "ok2", "url": "http://h", "follow_interval": 0.5}
    ]});
    let refused = w.call(Call::AgentsPut { body: &half_bad }).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body,
        json!({"error": "agents[1].follow_interval: must be at least 1 second, got 0.5",
               "field": "agents[1].follow_interval"})
    );
    assert_eq!(w.registry.entry("ok1"), None, "nothing of it was written");

    let good =
        json!({"agents": [{"id": "ok1", "url": "http://h"}, {"id": "ok2", "url": "http://h"}]});
    let (status, body) = request(&router, "PUT", "/agents", good).await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["agent"]["id"].as_str())
        .collect();
    assert_eq!(ids, ["ok1", "ok2"]);
    assert!(w.registry.entry("ok1").is_some() && w.registry.entry("ok2").is_some());
}
