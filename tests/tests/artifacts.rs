//! What a sub-task produced reaches the parent, end to end on LocalStack: a report
//! streamed in chunks, a data artifact, a 20 MB file beside a file URI, an artifact
//! replaced, and (heard by push) one past the stand-in's bound (the test stack keeps
//! 25 MiB); and a question's form, a data part beside its text. The final note lists them; the parent reads each part byte for byte through
//! the control API; the steps' peak memory stays far below the 20 MB file.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{
    COMPLETED, INPUT_REQUIRED, SOON, assert_no_step_died, start_as, wait_parked,
};
use standin_integration::stack::{Stack, now_ms, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);
/// A step function's peak resident memory while the 20 MB file passed: the file held
/// whole (20 MB decoded, 27 MB of base64) would put a step far above this.
const PEAK_MB: u64 = 60;

fn big_file() -> Vec<u8> {
    (0..20 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

fn hex_sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every artifact by id, from a list of them.
fn by_id(list: &Value) -> std::collections::BTreeMap<String, Value> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|a| (a["artifact_id"].as_str().unwrap().to_owned(), a.clone()))
        .collect()
}

/// The bytes of each part of one artifact, read as a parent does: its links.
async fn read_parts(stack: &Stack, id: &str, artifact: &str) -> Vec<Option<Vec<u8>>> {
    let (status, content) = stack
        .control("GET", &format!("/standins/{id}/artifacts/{artifact}"), None)
        .await;
    assert_eq!(status, 200, "{content}");
    let mut parts = Vec::new();
    for link in content["links"].as_array().unwrap() {
        parts.push(match link.as_str() {
            Some(link) => {
                let response = reqwest::get(link).await.unwrap();
                assert_eq!(response.status().as_u16(), 200, "{link}");
                Some(response.bytes().await.unwrap().to_vec())
            }
            None => None,
        });
    }
    parts
}

async fn results(persona: &str, port: u16, watch: &str, past_the_bound: bool) {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(port, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which sources?")]);
    let since = now_ms();
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, watch).await;
    let remote = agent.task_ids().pop().unwrap();
    // A question with a form: the data part reaches the parent beside the text.
    let form = json!({"sources": ["web", "papers"], "max": 3});
    agent
        .ask_with_form(&remote, "Which sources?  Fill in the form.", form.clone())
        .await;
    let asked = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(asked[1]["parts"][0]["kind"], "data", "{}", asked[1]);
    assert_eq!(asked[1]["parts"][0]["data"], form);

    let middle = "A long middle section. ".repeat(5_000);
    let report =
        |parts: Value| json!({"artifactId": "report", "name": "report.md", "parts": parts});
    agent
        .artifact_update(
            &remote,
            report(json!([{"text": "# Report\n", "mediaType": "text/markdown"}])),
            false,
            false,
        )
        .await;
    agent
        .artifact_update(&remote, report(json!([{"text": middle}])), true, false)
        .await;
    agent
        .artifact_update(
            &remote,
            report(json!([{"text": "\nThe end.\n"}])),
            true,
            true,
        )
        .await;
    let table = json!({"rows": [[1, "a"], [2, "b"]]});
    agent
        .artifact_update(
            &remote,
            json!({"artifactId": "table", "parts": [{"data": table}]}),
            false,
            true,
        )
        .await;
    let file = big_file();
    agent
        .artifact_update(
            &remote,
            json!({"artifactId": "blob", "name": "blob", "parts": [
                {"raw": base64::engine::general_purpose::STANDARD.encode(&file),
                 "mediaType": "application/octet-stream", "filename": "blob.bin"},
                {"url": "https://files.example/x.pdf", "mediaType": "application/pdf"}]}),
            false,
            true,
        )
        .await;
    for text in ["first draft", "second draft"] {
        agent
            .artifact_update(
                &remote,
                json!({"artifactId": "draft", "parts": [{"text": text}]}),
                false,
                true,
            )
            .await;
    }
    let extra = vec![7u8; 8 * 1024 * 1024];
    if past_the_bound {
        agent
            .artifact_update(
                &remote,
                json!({"artifactId": "extra", "parts": [{"raw":
                    base64::engine::general_purpose::STANDARD.encode(&extra), "filename": "extra.bin"}]}),
                false,
                true,
            )
            .await;
    }
    agent
        .change(&remote, COMPLETED, "Report ready", false)
        .await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_no_step_died(&stack, &id).await;

    let last = notes.last().unwrap();
    assert_eq!(
        (last["state"].as_str(), last["final"].as_bool()),
        (Some(COMPLETED), Some(true))
    );
    let noted = by_id(&last["artifacts"]);
    let mut expected = vec!["blob", "draft", "report", "table"];
    if past_the_bound {
        expected.push("extra");
    }
    expected.sort_unstable();
    assert_eq!(noted.keys().collect::<Vec<_>>(), expected, "{last}");
    // Small text and data come inline in the note; the file is described, not carried.
    assert_eq!(noted["report"]["parts"][0]["text"], "# Report\n");
    assert_eq!(noted["report"]["parts"].as_array().unwrap().len(), 3);
    assert_eq!(noted["table"]["parts"][0]["data"], table);
    assert_eq!(noted["draft"]["parts"][0]["text"], "second draft", "{last}");
    let blob = &noted["blob"]["parts"];
    assert_eq!(blob[0]["size"], file.len());
    assert_eq!(blob[0]["sha256"], hex_sha(&file));
    assert_eq!(blob[0]["filename"], "blob.bin");
    assert_eq!(blob[1]["url"], "https://files.example/x.pdf");
    assert!(last.to_string().len() < 64 * 1024, "a note stays small");

    let (status, page) = stack
        .control("GET", &format!("/standins/{id}/artifacts"), None)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        by_id(&page["artifacts"]).keys().collect::<Vec<_>>(),
        expected
    );

    let report_parts = read_parts(&stack, &id, "report").await;
    let joined: Vec<u8> = report_parts.into_iter().flatten().flatten().collect();
    assert_eq!(
        String::from_utf8(joined).unwrap(),
        format!("# Report\n{middle}\nThe end.\n")
    );
    let table_parts = read_parts(&stack, &id, "table").await;
    let read: Value = serde_json::from_slice(table_parts[0].as_ref().unwrap()).unwrap();
    assert_eq!(read, table);
    let blob_parts = read_parts(&stack, &id, "blob").await;
    assert!(
        blob_parts[0].as_ref().unwrap() == &file,
        "the 20 MB file, byte for byte"
    );
    assert_eq!(blob_parts[1], None, "a URI is kept as the reference");
    assert_eq!(
        read_parts(&stack, &id, "draft").await,
        [Some(b"second draft".to_vec())]
    );
    if past_the_bound {
        let extra_noted = &noted["extra"];
        assert_eq!(extra_noted["truncated"], true, "{extra_noted}");
        assert_eq!(extra_noted["parts"][0]["flag"], "truncated");
        let kept = read_parts(&stack, &id, "extra").await;
        let kept = kept[0].as_ref().unwrap();
        assert!(
            kept.len() < extra.len() && extra.starts_with(kept),
            "what fit is kept"
        );
    }

    // The functions artifacts pass through. (The push function is handed whatever
    // LocalStack's API Gateway passes, here a 27 MB push of the file; AWS refuses a
    // body over 10 MB and Lambda an event over 6 MB before it runs.)
    let peaks = stack
        .peak_memory(&stack.function_logs(), since)
        .await
        .unwrap();
    let through = ["Turn", "Register", "Wake", "End", "Follow", "Control"];
    let passed: Vec<&(String, u64)> = peaks
        .iter()
        .filter(|(f, _)| {
            through
                .iter()
                .any(|s| f.contains(&format!("-{s}Function-")))
        })
        .collect();
    assert!(passed.len() >= 3, "{peaks:?}");
    for (function, peak) in passed {
        assert!(*peak > 0, "{function}: no peak recorded");
        assert!(*peak <= PEAK_MB, "{function} peaked at {peak} MB");
    }
}

#[tokio::test]
async fn artifacts_heard_by_push_reach_the_parent_byte_for_byte_and_past_the_bound_truncated() {
    results("results", 27171, "push", true).await;
}

#[tokio::test]
async fn artifacts_heard_by_follow_reach_the_parent_byte_for_byte() {
    results("results-follow", 27172, "follow", false).await;
}

/// A note too big for its item wedged a followed stand-in for ever (the note's write
/// failed, the follow failed, the same event came again) and ended a pushed one FAILED
/// after minutes: an agent asks its question with a part whose filename is 500 KB (an
/// event the stand-in reads whole: under its 1 MiB bound). The parent gets the question,
/// the name cut and marked, and the conversation completes after the reply; by follow
/// and by push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_a_500_kb_filename_reaches_the_parent_and_completes() {
    let stack = Stack::load(&STACK).await;
    let ask = async |port: u16, updates: &str| {
        let agent_id = unique(&format!("hugename-{updates}"));
        let entry = json!({"url": format!("http://127.0.0.1:{port}"), "follow_interval": 1,
                           "updates": updates});
        let (status, body) = stack
            .control("PUT", &format!("/agents/{agent_id}"), Some(entry))
            .await;
        assert_eq!(status, 200, "{body}");
        let agent = TestAgent::start(port, Behaviour::default()).await;
        agent.script_turn(&[(standin_integration::e2e::WORKING, "Reading the contract.")]);
        let id = unique(&agent_id);
        start_as(&stack, &agent_id, &id).await;
        wait_parked(
            &stack,
            &id,
            if updates == "follow" {
                "follow"
            } else {
                "push"
            },
        )
        .await;
        let remote = agent.task_ids().pop().unwrap();
        let huge = "n".repeat(500_000);
        let part = json!({"raw": "aGk=", "filename": huge, "mediaType": "application/pdf"});
        agent.ask_with_part(&remote, "Sign page 3?", part).await;
        // The first turn's WORKING may be a note of its own before the question.
        let mut question = None;
        for count in 1..=2 {
            let notes = stack.wait_notes(&id, count, SOON).await;
            question = notes.into_iter().find(|n| n["state"] == INPUT_REQUIRED);
            if question.is_some() {
                break;
            }
        }
        let question = question.expect("the question reached the parent");
        assert_eq!(question["text"], "Sign page 3?", "{question}");
        let filename = question["parts"][0]["filename"].as_str().unwrap();
        assert!(
            filename.ends_with("[truncated]") && filename.len() < 1024,
            "cut and marked: {} bytes",
            filename.len()
        );
        agent.script_turn(&[(COMPLETED, "Signed.")]);
        assert_eq!(
            standin_integration::e2e::reply(&stack, &id, "yes").await,
            202
        );
        let notes = standin_integration::e2e::wait_final(&stack, &id).await;
        let last = notes.last().unwrap();
        assert_eq!(
            (last["state"].as_str(), last["text"].as_str()),
            (Some(COMPLETED), Some("Signed.")),
            "{notes:#?}"
        );
    };
    futures_util::future::join(ask(27174, "follow"), ask(27175, "auto")).await;
}

/// An agent streams six artifacts of 900 small parts each (about 450 bytes a part in the
/// manifest: past its 2 MiB), then asks a question: the followed stand-in hears it; after
/// the reply it follows again (each subscription replays the whole task, every part with
/// it) and hears the next question; it ends, and the artifacts API, page by page, lists
/// what fit and marks the rest truncated.
#[tokio::test]
async fn an_artifact_past_the_manifests_bound_is_listed_truncated_and_the_conversation_goes_on() {
    let stack = Stack::load(&STACK).await;
    let port = 27178;
    let agent_id = unique("hoard");
    let entry = json!({"url": format!("http://127.0.0.1:{port}"), "follow_interval": 1,
                       "updates": "follow"});
    let (status, body) = stack
        .control("PUT", &format!("/agents/{agent_id}"), Some(entry))
        .await;
    assert_eq!(status, 200, "{body}");
    let agent = TestAgent::start(port, Behaviour::default()).await;
    agent.script_turn(&[(standin_integration::e2e::WORKING, "Transcribing.")]);
    let id = unique(&agent_id);
    start_as(&stack, &agent_id, &id).await;
    wait_parked(&stack, &id, "follow").await;
    let remote = agent.task_ids().pop().unwrap();
    let parts: Vec<Value> = (0..900).map(|_| json!({"text": "h".repeat(100)})).collect();
    for n in 0..6 {
        let artifact =
            json!({"artifactId": format!("hoard-{n}"), "name": "transcript", "parts": parts});
        agent.artifact_update(&remote, artifact, false, true).await;
    }
    let heard = async |text: &str| {
        let deadline = std::time::Instant::now() + SOON;
        loop {
            let notes = stack.notes(&id);
            if notes.iter().any(|n| n["text"] == text) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{text:?} never reached the parent: {notes:#?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    };
    let asked = async |text: &str| {
        agent.change(&remote, INPUT_REQUIRED, text, false).await;
        heard(text).await;
    };
    asked("Shall I go on?").await;
    agent.script_turn(&[(standin_integration::e2e::WORKING, "Going on.")]);
    assert_eq!(
        standin_integration::e2e::reply(&stack, &id, "yes").await,
        202
    );
    heard("Going on.").await;
    wait_parked(&stack, &id, "follow").await;
    asked("And the appendix?").await;
    agent.script_turn(&[(COMPLETED, "Done.")]);
    assert_eq!(
        standin_integration::e2e::reply(&stack, &id, "no").await,
        202
    );
    let notes = standin_integration::e2e::wait_final(&stack, &id).await;
    let last = notes.last().unwrap();
    assert_eq!(last["state"], COMPLETED, "{notes:#?}");
    let mut listed = Vec::new();
    let mut path = format!("/standins/{id}/artifacts");
    loop {
        let (status, page) = stack.control("GET", &path, None).await;
        assert_eq!(status, 200, "{page}");
        listed.extend(page["artifacts"].as_array().unwrap().iter().cloned());
        match page["next"].as_str() {
            Some(after) => path = format!("/standins/{id}/artifacts?after={after}"),
            None => break,
        }
    }
    let parts = |a: &Value| a["parts"].as_array().map_or(0, Vec::len);
    let kept: usize = listed.iter().map(parts).sum();
    assert!(
        (2000..5400).contains(&kept),
        "what fit the manifest is kept: {kept} parts"
    );
    assert!(
        listed.iter().any(|a| a["truncated"] == true),
        "the rest is marked: {:?}",
        listed
            .iter()
            .map(|a| (&a["artifact_id"], parts(a), &a["truncated"]))
            .collect::<Vec<_>>()
    );
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_no_step_died(&stack, &id).await;
}
