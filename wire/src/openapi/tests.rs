#![allow(clippy::unwrap_used)] // tests fail loudly by design

use serde_json::{Value, json, to_value};

use super::*;
use crate::{
    Accepted, CancelRequest, ErrorBody, FileContent, InputFile, InputPart, ListPage, NotesPage,
    ParentNote, PendingView, ReplyId, ReplyRequest, StandInStatus, StartRequest, Started, Summary,
    TaskId, TaskState, WatchMode,
};

fn problem(result: Result<(), ContractError>) -> String {
    match result {
        Ok(()) => panic!("fits"),
        Err(err) => err.to_string(),
    }
}

/// Every schema in the document, wherever it sits, uses only keywords the check reads.
#[test]
fn the_document_uses_only_what_the_check_reads() {
    fn schema(node: &Value, at: &str, seen: &mut usize) {
        *seen += 1;
        let map = node.as_object().unwrap();
        for key in map.keys() {
            assert!(SCHEMA_KEYWORDS.contains(&key.as_str()), "{at}: `{key}`");
        }
        for (name, property) in map
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            schema(property, &format!("{at}.{name}"), seen);
        }
        for part in map
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            schema(part, &format!("{at}.allOf"), seen);
        }
        if let Some(items) = map.get("items") {
            schema(items, &format!("{at}[]"), seen);
        }
    }
    fn document(node: &Value, at: &str, seen: &mut usize) {
        match node {
            Value::Object(map) => {
                for (key, child) in map {
                    let at = format!("{at}/{key}");
                    if key == "schema" {
                        schema(child, &at, seen);
                    } else if at == "/components/schemas" {
                        for (name, each) in child.as_object().unwrap() {
                            schema(each, &format!("{at}/{name}"), seen);
                        }
                    } else {
                        document(child, &at, seen);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| document(item, at, seen)),
            _ => {}
        }
    }
    let doc: Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut seen = 0;
    document(&doc, "", &mut seen);
    assert!(seen > 40, "the walk reached the schemas: {seen}");
}

/// What API Gateway needs of each operation: the control function behind it, SigV4 (but
/// the A2A front's keyed door, where the function checks a key), and the body validator
/// wherever a body is taken.
#[test]
fn every_operation_is_signed_integrated_and_validated() {
    let ops = operations().unwrap();
    let mut names: Vec<String> = ops
        .iter()
        .map(|op| format!("{} {}", op.method, op.template))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "delete /agents/{agent_id}",
            "delete /keys/{key_id}",
            "delete /standins/{task_id}/webhooks/{webhook_id}",
            "get /a2a/{agent_id}/.well-known/agent-card.json",
            "get /agents",
            "get /agents/{agent_id}",
            "get /keyed/a2a/{agent_id}/.well-known/agent-card.json",
            "get /keys",
            "get /standins",
            "get /standins/{task_id}",
            "get /standins/{task_id}/artifacts",
            "get /standins/{task_id}/artifacts/{artifact_id}",
            "get /standins/{task_id}/notes",
            "get /standins/{task_id}/turns",
            "get /standins/{task_id}/webhooks",
            "post /a2a/{agent_id}",
            "post /keyed/a2a/{agent_id}",
            "post /keys",
            "post /mcp",
            "post /standins",
            "post /standins/{task_id}/cancel",
            "post /standins/{task_id}/reply",
            "post /uploads",
            "put /agents",
            "put /agents/{agent_id}",
            "put /standins/{task_id}/webhooks/{webhook_id}",
        ]
    );
    for op in ops {
        let d = op.definition;
        let security = if op.template.starts_with("/keyed/") {
            json!([])
        } else {
            json!([{"sigv4": []}])
        };
        assert_eq!(d["security"], security, "{}", op.template);
        let integration = &d["x-amazon-apigateway-integration"];
        assert_eq!(integration["type"], "aws_proxy");
        assert!(
            integration["uri"]["Fn::Sub"]
                .as_str()
                .unwrap()
                .contains("${ControlFunction.Arn}")
        );
        // A cancel's body is optional: API Gateway would refuse an empty one as not an
        // object, so only required bodies are validated there.
        // An agent entry is checked by the function alone, which names the field that
        // breaks its rule (API Gateway's validator would only say "Invalid request body").
        // And an MCP message by the MCP server, an A2A request by the front, each answering
        // in JSON-RPC's own terms.
        let validated_by_the_function = d["operationId"] == "putAgent"
            || d["operationId"] == "putAgents"
            || d["operationId"] == "mcp"
            || d["operationId"] == "a2aFront"
            || d["operationId"] == "a2aFrontKeyed";
        assert_eq!(
            d["x-amazon-apigateway-request-validator"] == "body",
            d["requestBody"]["required"] == true && !validated_by_the_function,
            "{} {}",
            op.method,
            op.template
        );
        for status in ["403", "413", "429", "500", "502", "503", "504"] {
            assert!(
                !d["responses"][status].is_null(),
                "{} {status}",
                op.template
            );
        }
    }
}

#[test]
fn requests_find_their_operation_with_or_without_a_query() {
    assert_eq!(
        operation("GET", "/standins/a-1/notes?after=3")
            .unwrap()
            .template,
        "/standins/{task_id}/notes"
    );
    assert_eq!(
        operation("get", "/standins/notes").unwrap().template,
        "/standins/{task_id}"
    );
    assert_eq!(
        operation("POST", "/standins").unwrap().template,
        "/standins"
    );
    assert_eq!(
        operation("DELETE", "/standins/a").unwrap_err(),
        ContractError::NoOperation {
            method: "DELETE".into(),
            path: "/standins/a".into()
        }
    );
    assert!(operation("POST", "/standins//reply").is_err());
}

fn every_kind_of_part() -> Vec<InputPart> {
    let file = |name: Option<&str>, content| {
        InputPart::File(InputFile {
            name: name.map(Into::into),
            media_type: name.map(|_| "text/csv".into()),
            content,
        })
    };
    vec![
        InputPart::Text {
            text: "more".into(),
        },
        InputPart::Data {
            data: serde_json::json!({"rows": [1, 2]})
                .as_object()
                .cloned()
                .unwrap(),
        },
        file(Some("a.csv"), FileContent::Bytes("YSxi".into())),
        file(None, FileContent::Url("https://x.test/c.pdf".into())),
    ]
}

#[test]
fn every_request_the_wire_types_write_fits() {
    let full = StartRequest {
        agent: "writer".into(),
        message: "Write it".into(),
        parts: every_kind_of_part(),
        task_id: Some(TaskId::parse("job-1").unwrap()),
        deadline_secs: Some(600),
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        webhook: None,
        context_id: None,
    };
    let bare = StartRequest {
        parts: Vec::new(),
        task_id: None,
        deadline_secs: None,
        traceparent: None,
        webhook: None,
        context_id: None,
        ..full.clone()
    };
    for start in [full, bare] {
        check_request("POST", "/standins", Some(&to_value(start).unwrap())).unwrap();
    }
    for reply in [
        ReplyRequest {
            text: "blue".into(),
            parts: Vec::new(),
            reply_id: None,
        },
        ReplyRequest {
            text: "blue".into(),
            parts: every_kind_of_part(),
            reply_id: Some(ReplyId::parse("r-1").unwrap()),
        },
    ] {
        check_request("POST", "/standins/a/reply", Some(&to_value(reply).unwrap())).unwrap();
    }
    for cancel in [
        CancelRequest::default(),
        CancelRequest {
            reason: Some("enough".into()),
        },
    ] {
        check_request(
            "POST",
            "/standins/a/cancel",
            Some(&to_value(cancel).unwrap()),
        )
        .unwrap();
    }
    check_request("GET", "/standins/a", None).unwrap();
}

#[test]
fn requests_that_break_the_shape_are_named() {
    for (body, says) in [
        (json!({"message": "m"}), "at $.agent: is required"),
        (json!({"agent": "a"}), "at $.message: is required"),
        (
            json!({"agent": "", "message": "m"}),
            "at $.agent: must not be empty",
        ),
        (
            json!({"agent": "a", "message": "m", "task_id": 5}),
            "at $.task_id: must be of type string, got 5",
        ),
        (
            json!({"agent": "a", "message": "m", "task_id": "x".repeat(65)}),
            "must be at most 64 characters, got 65",
        ),
        (json!(["agent"]), "must be of type object, got [\"agent\"]"),
    ] {
        let said = problem(check_request("POST", "/standins", Some(&body)));
        assert!(said.contains(says), "{body}: {said}");
        assert!(
            said.starts_with("the body of POST /standins does not fit"),
            "{said}"
        );
    }
    assert!(
        problem(check_request(
            "POST",
            "/standins/a/reply",
            Some(&json!({"text": 1}))
        ))
        .contains("must be of type string, got 1")
    );
    assert!(problem(check_request("POST", "/standins/a/reply", None)).contains("needs a body"));
    assert!(
        problem(check_request("GET", "/standins/a", Some(&json!({})))).contains("takes no body")
    );
}

fn note(seq: u64, remote: Option<&str>) -> ParentNote {
    ParentNote {
        task_id: "job-1".into(),
        remote_task_id: remote.map(str::to_owned),
        agent: "writer".into(),
        state: TaskState::InputRequired,
        text: "What colour?".into(),
        is_final: false,
        seq,
        at: "2026-12-01T10:00:00.000Z".into(),
        changed_at: Some("2026-12-01T09:59:59.5Z".into()),
        watch: Some(crate::WatchMode::Push),
        artifacts: Vec::new(),
        artifacts_omitted: 0,
        parts: Vec::new(),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
    }
}

fn summary(fresh: bool) -> Summary {
    Summary {
        task_id: "job-1".into(),
        agent: "writer".into(),
        remote_task_id: (!fresh).then(|| "t-1".into()),
        watch: (!fresh).then_some(WatchMode::Push),
        state: (!fresh).then_some(TaskState::Working),
        text: (!fresh).then(|| "Building".into()),
        closed: false,
        seq: u64::from(!fresh),
        created_at: (!fresh).then(|| "2026-12-01T10:00:00Z".into()),
        last_note_at: (!fresh).then(|| "2026-12-01T10:00:05Z".into()),
        context_id: None,
    }
}

#[test]
fn every_answer_the_wire_types_write_fits() {
    let started = Started {
        task_id: TaskId::parse("job-1").unwrap(),
        execution_arn: "arn:x".into(),
        trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
    };
    check_response("POST", "/standins", 200, &to_value(started).unwrap()).unwrap();
    let accepted = to_value(Accepted {
        task_id: "job-1".into(),
        accepted: true,
    })
    .unwrap();
    check_response("POST", "/standins/job-1/reply", 202, &accepted).unwrap();
    check_response("POST", "/standins/job-1/cancel", 202, &accepted).unwrap();
    for error in [
        ErrorBody {
            error: "unknown agent".into(),
            agents: Some(vec!["writer".into()]),
        },
        ErrorBody {
            error: "no stand-in job-1".into(),
            agents: None,
        },
    ] {
        check_response("POST", "/standins", 400, &to_value(error).unwrap()).unwrap();
    }
    for fresh in [true, false] {
        let status = StandInStatus {
            summary: summary(fresh),
            execution_arn: "arn:x".into(),
            execution_status: (!fresh).then(|| "RUNNING".into()),
            parked: !fresh,
            pending: PendingView {
                cancel: false,
                replies: 1,
                push: fresh,
            },
            replies_taken: Vec::new(),
        };
        check_response("GET", "/standins/job-1", 200, &to_value(status).unwrap()).unwrap();
    }
    let page = ListPage {
        standins: vec![summary(true), summary(false)],
        next: Some("k".into()),
    };
    check_response("GET", "/standins", 200, &to_value(page).unwrap()).unwrap();
    for next in [None, Some(2)] {
        let notes = NotesPage {
            task_id: "job-1".into(),
            notes: vec![note(1, None), note(2, Some("t-1"))],
            next,
        };
        check_response(
            "GET",
            "/standins/job-1/notes?after=0",
            200,
            &to_value(notes).unwrap(),
        )
        .unwrap();
    }
}

#[test]
fn answers_that_break_the_contract_are_named() {
    let mut bad_state = to_value(note(1, Some("t"))).unwrap();
    bad_state["state"] = json!("DONE");
    let page = json!({"task_id": "j", "notes": [bad_state], "next": null});
    let said = problem(check_response("GET", "/standins/j/notes", 200, &page));
    assert!(
        said.contains("at $.notes[0].state: must be one of") && said.contains("got \"DONE\""),
        "{said}"
    );
    let said = problem(check_response(
        "GET",
        "/standins/j/notes",
        200,
        &json!({"task_id": "j", "notes": []}),
    ));
    assert!(said.contains("at $.next: is required"), "{said}");
    let mut negative = to_value(summary(false)).unwrap();
    negative["seq"] = json!(-1);
    let said = problem(check_response(
        "GET",
        "/standins",
        200,
        &json!({"standins": [negative], "next": null}),
    ));
    assert!(said.contains("must be at least 0, got -1"), "{said}");
    assert_eq!(
        check_response("GET", "/standins/j", 418, &json!({})).unwrap_err(),
        ContractError::UndocumentedStatus {
            method: "GET".into(),
            path: "/standins/{task_id}".into(),
            status: 418
        }
    );
    // A 400 comes from the function (`error`) or from API Gateway's validator (`message`).
    check_response(
        "POST",
        "/standins",
        400,
        &json!({"message": "Invalid request body"}),
    )
    .unwrap();
    let said = problem(check_response(
        "POST",
        "/standins",
        400,
        &json!({"reason": "x"}),
    ));
    assert!(
        said.contains("fits none of its choices")
            && said.contains("$.error: is required")
            && said.contains("$.message: is required"),
        "{said}"
    );
    let said = problem(check_response(
        "GET",
        "/standins/j",
        404,
        &json!({"message": "x"}),
    ));
    assert!(said.contains("$.error: is required"), "{said}");
    check_response(
        "GET",
        "/standins/j",
        403,
        &json!({"message": "Missing Authentication Token"}),
    )
    .unwrap();
}

#[test]
fn a_schema_word_the_check_does_not_read_is_refused_not_skipped() {
    let said = problem(check(
        &json!({"type": "string", "pattern": "^a$"}),
        &json!("b"),
        "a test value",
    ));
    assert!(
        said.contains("uses `pattern`, which this check does not read"),
        "{said}"
    );
}
