//! What the soak's agents do beyond their script (a change delivered as its habit
//! says, artifacts hoarded, an entry put) and what is judged of each habit at the end.

use super::*;

/// `text` with every push token in `tokens` blanked, `*` for each character, as the
/// stand-in blanks an echo.
pub(super) fn blank_tokens(text: &str, tokens: &[String]) -> String {
    let mut text = text.to_owned();
    for token in tokens {
        if text.contains(token.as_str()) {
            text = text.replace(token.as_str(), &"*".repeat(token.len()));
        }
    }
    text
}

/// The hoarding agent streams artifacts of many small parts, past the manifest's bound.
pub(super) async fn hoard(agent: &TestAgent, remote: &str) {
    let parts: Vec<Value> = (0..plan::HOARD_PARTS)
        .map(|_| json!({"text": "h".repeat(100)}))
        .collect();
    for n in 0..plan::HOARD_ARTIFACTS {
        let artifact =
            json!({"artifactId": format!("hoard-{n}"), "name": "transcript", "parts": parts});
        agent.artifact_update(remote, artifact, false, true).await;
    }
}

/// Every artifact the control API lists for a stand-in, page by page.
pub(super) async fn artifacts_listed(stack: &Stack, id: &str) -> Result<Vec<Value>, String> {
    let mut listed = Vec::new();
    let mut path = format!("/standins/{id}/artifacts");
    for _ in 0..100 {
        let (status, page) = stack
            .try_control("GET", &path, None)
            .await
            .map_err(|e| format!("GET {path}: {e}"))?;
        if status != 200 {
            return Err(format!("GET {path} answered {status}: {page}"));
        }
        listed.extend(page["artifacts"].as_array().into_iter().flatten().cloned());
        match page["next"].as_str() {
            Some(after) => path = format!("/standins/{id}/artifacts?after={after}"),
            None => return Ok(listed),
        }
    }
    Err(format!("GET /standins/{id}/artifacts: more than 100 pages"))
}

/// What the parent saw of one stand-in, for its persona's own check.
pub(super) struct Seen<'a> {
    pub(super) last: &'a Value,
    pub(super) notes: &'a [Value],
    pub(super) agent_id: &'a str,
    /// When its agent died (the dying persona).
    pub(super) died_ms: Option<u64>,
}

/// What a persona's end must show beyond the oracle's rules: a question's huge file name
/// cut and marked, the hoard kept within the manifest's bound and marked truncated, a
/// dead agent's stand-in ended FAILED naming it and the cause, and not before the agent
/// had been unreachable for its `max_unreachable`.
pub(super) async fn habit_problems(stack: &Stack, habit: Habit, seen: Seen<'_>) -> Vec<String> {
    match habit {
        Habit::HugeFilename => seen
            .notes
            .iter()
            .filter(|n| n["state"] == plan::INPUT_REQUIRED)
            .filter_map(|n| {
                let name = n["parts"][0]["filename"].as_str().unwrap_or_default();
                (!name.ends_with("[truncated]") || name.len() >= 1024).then(|| {
                    format!(
                        "a question's 500 KB file name reached the parent as {} bytes, not cut and marked",
                        name.len()
                    )
                })
            })
            .collect(),
        Habit::Hoards => {
            let id = seen.last["task_id"].as_str().unwrap_or_default();
            let listed = match artifacts_listed(stack, id).await {
                Ok(listed) => listed,
                Err(problem) => return vec![problem],
            };
            let parts: usize = listed
                .iter()
                .map(|a| a["parts"].as_array().map_or(0, Vec::len))
                .sum();
            if parts == 0 || parts >= plan::HOARD_ARTIFACTS * plan::HOARD_PARTS {
                // What the notes said of them tells a fold that kept nothing from a
                // manifest the API could not read.
                let told: Vec<String> = seen
                    .notes
                    .iter()
                    .filter(|n| {
                        n["artifacts"].as_array().is_some_and(|a| !a.is_empty())
                            || n["artifacts_omitted"].as_u64().unwrap_or(0) > 0
                    })
                    .map(|n| {
                        let listed = n["artifacts"].as_array().map_or(0, Vec::len);
                        let omitted = n["artifacts_omitted"].as_u64().unwrap_or(0);
                        format!("#{} {listed} (+{omitted} omitted)", n["seq"])
                    })
                    .collect();
                vec![format!(
                    "the hoard, past the manifest's bound, kept {parts} parts of {} (the stand-in ended {}; the API listed {} artifacts; notes that carried artifacts: {told:?})",
                    plan::HOARD_ARTIFACTS * plan::HOARD_PARTS,
                    seen.last["state"],
                    listed.len()
                )]
            } else if !listed.iter().any(|a| a["truncated"] == true) {
                vec!["the hoard, past the manifest's bound, is not marked truncated".to_owned()]
            } else {
                Vec::new()
            }
        }
        Habit::Dies => {
            let text = seen.last["text"].as_str().unwrap_or_default();
            let written = seen.last["at"].as_str().and_then(oracle::epoch_ms);
            let earliest = seen
                .died_ms
                .map(|died| died + plan::DIES_MAX_UNREACHABLE_SECS * 1000);
            if seen.last["state"] != plan::FAILED
                || !text.contains(&format!("{:?}", seen.agent_id))
                || !text.contains("unreachable")
            {
                vec![format!(
                    "the dead agent's stand-in did not end FAILED naming it and the cause: {} {text:?}",
                    seen.last["state"]
                )]
            } else if earliest.is_none_or(|earliest| written.is_none_or(|at| at < earliest)) {
                vec![format!(
                    "the stand-in ended its agent unreachable before it had been for its max_unreachable ({} s): died at {:?}, ended at {written:?}",
                    plan::DIES_MAX_UNREACHABLE_SECS,
                    seen.died_ms
                )]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// Puts an agent entry through the registry.
pub(super) async fn put_agent(stack: &Stack, id: &str, entry: Value) -> Result<(), String> {
    let path = format!("/agents/{id}");
    for _ in 0..8 {
        match stack.try_control("PUT", &path, Some(entry.clone())).await {
            Ok((200, _)) => return Ok(()),
            Ok((status, body)) if status != 429 && status < 500 => {
                return Err(format!("PUT {path} answered {status}: {body}"));
            }
            _ => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
    Err(format!("PUT {path} kept failing"))
}

/// The agent makes a change and delivers its push the way `delivery` says.
pub(super) async fn deliver(
    agent: &TestAgent,
    remote: &str,
    change: (&str, &String),
    previous: &(String, String),
    delivery: Delivery,
) {
    let (state, text) = change;
    match delivery {
        Delivery::Normal => agent.change(remote, state, text, false).await,
        Delivery::Duplicate => {
            agent.change(remote, state, text, false).await;
            agent
                .push(remote, &agent.status_update(remote, state, text))
                .await;
        }
        Delivery::Stale => {
            agent.change(remote, state, text, false).await;
            if !previous.0.is_empty() {
                agent
                    .push(
                        remote,
                        &agent.status_update(remote, &previous.0, &previous.1),
                    )
                    .await;
            }
        }
        Delivery::OutOfOrder => {
            let before = format!("{text} (before)");
            agent.change_and_lose_the_push(remote, plan::WORKING, &before);
            agent.change(remote, state, text, false).await;
            agent
                .push(remote, &agent.status_update(remote, plan::WORKING, &before))
                .await;
        }
        Delivery::PushFirst => {
            agent.change(remote, state, text, true).await;
            let (agent, remote) = (agent.clone(), remote.to_owned());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                agent.catch_up(&remote);
            });
        }
        Delivery::Lost => agent.change_and_lose_the_push(remote, state, text),
    }
}
