//! Handles on the deployed stand-in stack: its outputs, the control API, the parent
//! queue (drained by one collector thread, so parallel tests each see their own notes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct Stack {
    pub name: String,
    pub config: aws_config::SdkConfig,
    pub outputs: HashMap<String, String>,
    pub endpoint: String,
    pub http: reqwest::Client,
}

/// The stand-in stack a suite runs against: `STANDIN_E2E_STACK`, or `standin`. `make
/// test` runs three lanes of suites at once, each on a stack of its own, so that each
/// lane's parent alone reads its stack's parent queue.
pub fn under_test() -> String {
    std::env::var("STANDIN_E2E_STACK").unwrap_or_else(|_| "standin".to_owned())
}

impl Stack {
    /// The stack `under_test`.
    pub async fn under_test() -> Self {
        Self::load(&under_test()).await
    }

    pub async fn load(name: &str) -> Self {
        let endpoint = std::env::var("AWS_ENDPOINT_URL")
            .expect("AWS_ENDPOINT_URL is not set: run these tests with `make test`, which starts LocalStack and deploys the stacks");
        let config = aws_config::load_from_env().await;
        let cfn = aws_sdk_cloudformation::Client::new(&config);
        let described = cfn
            .describe_stacks()
            .stack_name(name)
            .send()
            .await
            .unwrap_or_else(|e| {
                panic!("stack {name} is not deployed in LocalStack at {endpoint}: {e}")
            });
        let outputs = described.stacks()[0]
            .outputs()
            .iter()
            .map(|o| {
                (
                    o.output_key().unwrap().to_owned(),
                    o.output_value().unwrap().to_owned(),
                )
            })
            .collect();
        Self {
            name: name.to_owned(),
            config,
            outputs,
            endpoint,
            // A fresh connection per call: LocalStack may close an idle kept-alive one
            // just as a call reuses it, and the call then fails with no answer at all.
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("an HTTP client"),
        }
    }

    pub fn out(&self, key: &str) -> &str {
        self.outputs
            .get(key)
            .unwrap_or_else(|| panic!("stack output {key} is missing"))
    }

    pub fn api_url(&self, api_output: &str, path: &str) -> String {
        format!(
            "{}/_aws/execute-api/{}/Prod{path}",
            self.endpoint,
            self.out(api_output)
        )
    }

    pub async fn control(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        self.try_control(method, path, body)
            .await
            .expect("control API reachable")
    }

    /// A control API call; Err when no answer came (the connection failed or closed).
    pub async fn try_control(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), reqwest::Error> {
        // Every call is held to the control API's document: a body that does not fit it
        // must be refused (400), and every answer must fit the schema of its status.
        let misfit = standin_wire::openapi::check_request(method, path, body.as_ref()).err();
        let url = self.api_url("ControlApiId", path);
        let verb = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let request = match (method, &body) {
            ("GET", _) => self.http.get(url),
            (_, Some(body)) => self.http.request(verb, url).json(body),
            (_, None) => self.http.request(verb, url),
        };
        let response = request.send().await?;
        let status = response.status().as_u16();
        let answer = response.json().await.unwrap_or(Value::Null);
        if let Some(misfit) = misfit {
            assert_eq!(status, 400, "{misfit}, yet answered {status}: {answer}");
        }
        if let Err(err) = standin_wire::openapi::check_response(method, path, status, &answer) {
            panic!("{err}: {answer}");
        }
        Ok((status, answer))
    }

    pub fn execution_arn(&self, name: &str) -> String {
        format!(
            "{}:{name}",
            self.out("StateMachineArn")
                .replace(":stateMachine:", ":execution:")
        )
    }

    pub async fn execution_status(&self, name: &str) -> Option<String> {
        let sfn = aws_sdk_sfn::Client::new(&self.config);
        let d = sfn
            .describe_execution()
            .execution_arn(self.execution_arn(name))
            .send()
            .await
            .ok()?;
        Some(d.status().as_str().to_owned())
    }

    /// The execution's history, every event in order.
    pub async fn history(
        &self,
        name: &str,
    ) -> Result<Vec<aws_sdk_sfn::types::HistoryEvent>, String> {
        let sfn = aws_sdk_sfn::Client::new(&self.config);
        let mut events = sfn
            .get_execution_history()
            .execution_arn(self.execution_arn(name))
            .into_paginator()
            .items()
            .send();
        let mut all = vec![];
        while let Some(event) = events.next().await {
            all.push(event.map_err(|e| {
                format!(
                    "the history of {name}: {}",
                    aws_sdk_sfn::error::DisplayErrorContext(&e)
                )
            })?);
        }
        Ok(all)
    }

    /// When each visit to `state` began and ended (epoch ms), in order, from the history.
    pub async fn state_visits(&self, name: &str, state: &str) -> Result<Vec<(u64, u64)>, String> {
        let mut visits = vec![];
        let mut entered = None;
        for event in self.history(name).await? {
            let at = event.timestamp().to_millis().unwrap_or(0).max(0) as u64;
            if event
                .state_entered_event_details()
                .is_some_and(|d| d.name() == state)
            {
                entered = Some(at);
            } else if event
                .state_exited_event_details()
                .is_some_and(|d| d.name() == state)
                && let Some(from) = entered.take()
            {
                visits.push((from, at));
            }
        }
        Ok(visits)
    }

    /// `state_visits` over the stand-in's executions, rolled ones (`{name}__1`, …)
    /// included, in order.
    pub async fn state_visits_all(
        &self,
        name: &str,
        state: &str,
    ) -> Result<Vec<(u64, u64)>, String> {
        let mut all = self.state_visits(name, state).await?;
        for generation in 1.. {
            match self
                .state_visits(&format!("{name}__{generation}"), state)
                .await
            {
                Ok(more) => all.extend(more),
                Err(e) if e.contains("ExecutionDoesNotExist") => break,
                Err(e) => return Err(e),
            }
        }
        Ok(all)
    }

    /// The names of the states the execution entered, in order.
    pub async fn states_entered(&self, name: &str) -> Vec<String> {
        self.history(name)
            .await
            .expect("execution history readable")
            .iter()
            .filter(|e| e.r#type().as_str().ends_with("StateEntered"))
            .filter_map(|e| e.state_entered_event_details())
            .map(|d| d.name().to_owned())
            .collect()
    }

    pub async fn wait_execution(&self, name: &str, status: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let now = self.execution_status(name).await;
            if now.as_deref() == Some(status) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "execution {name} is {now:?}, expected {status}"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    pub async fn row_status(&self, task_id: &str) -> Value {
        self.control("GET", &format!("/standins/{task_id}"), None)
            .await
            .1
    }

    /// The notes the parent got for this stand-in so far.
    pub fn notes(&self, task_id: &str) -> Vec<Value> {
        self.notes_received(task_id)
            .into_iter()
            .map(|(note, _)| note)
            .collect()
    }

    /// The notes the parent got for this stand-in so far, each with when it was received
    /// (milliseconds since the Unix epoch).
    pub fn notes_received(&self, task_id: &str) -> Vec<(Value, u64)> {
        self.notes_timed(task_id)
            .into_iter()
            .map(|n| (n.note, n.received_ms))
            .collect()
    }

    /// The stand-in's notes as the parent received them, with when SQS took each.
    pub fn notes_timed(&self, task_id: &str) -> Vec<Received> {
        collector(&self.config, self.out("ParentQueueUrl"))
            .lock()
            .unwrap()
            .get(task_id)
            .cloned()
            .unwrap_or_default()
    }

    pub async fn wait_notes(&self, task_id: &str, count: usize, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let notes = self.notes(task_id);
            if notes.len() >= count {
                return notes;
            }
            assert!(
                Instant::now() < deadline,
                "{task_id}: {} notes after {within:?}, expected {count}: {notes:#?}",
                notes.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The stand-in's note log (the control API), every note after `after`.
    pub async fn note_log(&self, task_id: &str, after: u64) -> Vec<Value> {
        let (status, body) = self
            .control(
                "GET",
                &format!("/standins/{task_id}/notes?after={after}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["notes"].as_array().cloned().unwrap_or_default()
    }

    /// Every item of the table named by stack output `table`, as debug text.
    pub async fn table_text(&self, table: &str) -> Result<String, String> {
        let db = aws_sdk_dynamodb::Client::new(&self.config);
        let mut pages = db
            .scan()
            .table_name(self.out(table))
            .into_paginator()
            .items()
            .send();
        let mut text = String::new();
        while let Some(item) = pages.next().await {
            let item = item.map_err(|e| format!("the {table} could not be read: {e}"))?;
            text.push_str(&format!("{item:?}"));
        }
        Ok(text)
    }

    /// Every object in the artifacts bucket, read as text (bytes that are not UTF-8 as
    /// replacement characters): what the token scans search.
    pub async fn bucket_text(&self) -> Result<String, String> {
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&self.config)
                .force_path_style(true)
                .build(),
        );
        let bucket = self.out("ArtifactsBucketName");
        let mut pages = s3.list_objects_v2().bucket(bucket).into_paginator().send();
        let mut text = String::new();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| format!("the artifacts bucket could not be listed: {e}"))?;
            for object in page.contents() {
                let key = object.key().unwrap_or_default();
                let got = s3.get_object().bucket(bucket).key(key).send().await;
                // Stand-ins running meanwhile delete the parts an artifact no longer
                // names: one listed may be gone by its read.
                if let Err(err) = &got
                    && err.as_service_error().is_some_and(|e| e.is_no_such_key())
                {
                    continue;
                }
                let body = got
                    .map_err(|e| format!("{key} could not be read: {e}"))?
                    .body
                    .collect()
                    .await
                    .map_err(|e| format!("{key} could not be read: {e}"))?;
                text.push_str(&String::from_utf8_lossy(&body.into_bytes()));
                text.push('\n');
            }
        }
        Ok(text)
    }

    /// Peak memory (MB) in the REPORT lines of the functions whose log groups start with
    /// `prefix`, since `since_ms`: (function, largest Max Memory Used).
    pub async fn peak_memory(
        &self,
        prefix: &str,
        since_ms: u64,
    ) -> Result<Vec<(String, u64)>, String> {
        let mut peaks: std::collections::BTreeMap<String, u64> = Default::default();
        for (group, line) in self
            .log_events(prefix, Some(since_ms), None, Some("REPORT"))
            .await?
        {
            let used = line
                .split("Max Memory Used: ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|mb| mb.parse::<u64>().ok());
            if let Some(mb) = used {
                let peak = peaks.entry(group).or_default();
                *peak = (*peak).max(mb);
            }
        }
        Ok(peaks.into_iter().collect())
    }

    /// The whole history, with its data, of every execution whose name `keep` accepts.
    pub async fn history_text(&self, keep: impl Fn(&str) -> bool) -> Result<String, String> {
        let sfn = aws_sdk_sfn::Client::new(&self.config);
        let mut executions = sfn
            .list_executions()
            .state_machine_arn(self.out("StateMachineArn"))
            .into_paginator()
            .items()
            .send();
        let mut text = String::new();
        while let Some(e) = executions.next().await {
            let e = e.map_err(|e| format!("the executions could not be listed: {e}"))?;
            if !keep(e.name()) {
                continue;
            }
            let mut events = sfn
                .get_execution_history()
                .execution_arn(e.execution_arn())
                .include_execution_data(true)
                .into_paginator()
                .items()
                .send();
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| format!("a history could not be read: {e}"))?;
                text.push_str(&format!("{event:?}"));
            }
        }
        Ok(text)
    }

    /// Every log line of the log groups starting with `prefix`, since `since_ms` if given.
    pub async fn log_text(&self, prefix: &str, since_ms: Option<u64>) -> Result<String, String> {
        let mut text = String::new();
        for (_, line) in self.log_events(prefix, since_ms, None, None).await? {
            text.push_str(&line);
            text.push('\n');
        }
        Ok(text)
    }

    /// The prefix of this stack's functions' log groups (`/aws/lambda/<stack>-<Logical
    /// id>-<suffix>`), for `log_events`.
    pub fn function_logs(&self) -> String {
        format!("/aws/lambda/{}-", self.name)
    }

    /// The log events (group name, message) of the log groups starting with `prefix`,
    /// between two instants when given, matching `pattern` when given. A prefix ending in
    /// `-` names a stack's functions: another stack whose name merely starts the same
    /// (`standin-b` after `standin-`) is left out, since a logical id starts upper case.
    pub async fn log_events(
        &self,
        prefix: &str,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        pattern: Option<&str>,
    ) -> Result<Vec<(String, String)>, String> {
        let logs = aws_sdk_cloudwatchlogs::Client::new(&self.config);
        let mut groups = logs
            .describe_log_groups()
            .log_group_name_prefix(prefix)
            .into_paginator()
            .items()
            .send();
        let mut events = vec![];
        while let Some(group) = groups.next().await {
            let group = group.map_err(|e| format!("the log groups could not be listed: {e}"))?;
            let name = group.log_group_name().unwrap_or_default().to_owned();
            let another_stack = prefix.ends_with('-')
                && !name[prefix.len().min(name.len())..]
                    .starts_with(|c: char| c.is_ascii_uppercase());
            if another_stack {
                continue;
            }
            let mut pages = logs
                .filter_log_events()
                .log_group_name(&name)
                .set_start_time(from_ms.map(|ms| ms as i64))
                .set_end_time(to_ms.map(|ms| ms as i64))
                .set_filter_pattern(pattern.map(str::to_owned))
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page =
                    page.map_err(|e| format!("the logs of {name} could not be read: {e}"))?;
                for e in page.events() {
                    events.push((name.clone(), e.message().unwrap_or_default().to_owned()));
                }
            }
        }
        Ok(events)
    }

    /// Every message body the parent queue delivered, for the token scan.
    pub fn all_note_bodies(&self) -> Vec<String> {
        collector(&self.config, self.out("ParentQueueUrl"))
            .lock()
            .unwrap()
            .values()
            .flatten()
            .map(|r| r.note.to_string())
            .collect()
    }
}

/// A note at the parent: the note, when the collector received it and when SQS took it
/// (its `SentTimestamp`), in epoch milliseconds.
#[derive(Debug, Clone)]
pub struct Received {
    pub note: Value,
    pub received_ms: u64,
    pub sent_ms: Option<u64>,
}

type Notes = Arc<Mutex<HashMap<String, Vec<Received>>>>;

/// One long poll (1 s) of a queue: each message's JSON body, when it arrived here and
/// when SQS took it. What was received is deleted.
pub async fn take_timed(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
) -> Result<Vec<Received>, String> {
    let (out, receipts) = receive_timed(sqs, queue_url).await?;
    delete_received(sqs, queue_url, &receipts).await;
    Ok(out)
}

/// One long poll (1 s) of a queue, nothing deleted yet: each message as `take_timed`
/// gives it, and its receipt handle.
async fn receive_timed(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
) -> Result<(Vec<Received>, Vec<String>), String> {
    let got = sqs
        .receive_message()
        .queue_url(queue_url)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::SentTimestamp,
        )
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .map_err(|e| format!("{queue_url} could not be read: {e}"))?;
    let received_ms = now_ms();
    let out = got
        .messages()
        .iter()
        .map(|m| Received {
            note: serde_json::from_str(m.body().unwrap_or("null")).unwrap_or(Value::Null),
            received_ms,
            sent_ms: sent_ms(m),
        })
        .collect();
    let receipts = got
        .messages()
        .iter()
        .map(|m| m.receipt_handle().unwrap_or_default().to_owned())
        .collect();
    Ok((out, receipts))
}

async fn delete_received(sqs: &aws_sdk_sqs::Client, queue_url: &str, receipts: &[String]) {
    if receipts.is_empty() {
        return;
    }
    let mut deletes = sqs.delete_message_batch().queue_url(queue_url);
    for (i, receipt) in receipts.iter().enumerate() {
        if let Ok(entry) = aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
            .id(i.to_string())
            .receipt_handle(receipt)
            .build()
        {
            deletes = deletes.entries(entry);
        }
    }
    let _ = deletes.send().await;
}

/// The `SentTimestamp` SQS stamped on a message, when it was asked for.
fn sent_ms(message: &aws_sdk_sqs::types::Message) -> Option<u64> {
    message
        .attributes()?
        .get(&aws_sdk_sqs::types::MessageSystemAttributeName::SentTimestamp)?
        .parse()
        .ok()
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One thread (with its own runtime) drains the parent queue for the whole test binary.
/// How many readers the tests' parent runs on its queue at once.
const PARENT_READERS: usize = 4;

fn collector(config: &aws_config::SdkConfig, queue_url: &str) -> Notes {
    static NOTES: OnceLock<Notes> = OnceLock::new();
    NOTES
        .get_or_init(|| {
            let notes: Notes = Arc::default();
            let (sink, config, queue_url) = (notes.clone(), config.clone(), queue_url.to_owned());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let sqs = aws_sdk_sqs::Client::new(&config);
                    // Several readers, as a parent reading hundreds of stand-ins' notes
                    // would run: one reader's round trips, each slow on a busy
                    // LocalStack, would make the parent the slowest link. A note is
                    // kept before it is deleted, and the queue hands out a stand-in's
                    // next note only once the one before is deleted, so each stand-in's
                    // notes are kept in the order the queue gave them.
                    let readers: Vec<_> = (0..PARENT_READERS)
                        .map(|_| {
                            let (sqs, sink, queue_url) =
                                (sqs.clone(), sink.clone(), queue_url.clone());
                            tokio::spawn(async move {
                                loop {
                                    let Ok((got, receipts)) = receive_timed(&sqs, &queue_url).await
                                    else {
                                        tokio::time::sleep(Duration::from_millis(500)).await;
                                        continue;
                                    };
                                    {
                                        let mut sink = sink.lock().unwrap();
                                        for received in got {
                                            let task = received.note["task_id"]
                                                .as_str()
                                                .unwrap_or_default();
                                            sink.entry(task.to_owned()).or_default().push(received);
                                        }
                                    }
                                    delete_received(&sqs, &queue_url, &receipts).await;
                                }
                            })
                        })
                        .collect();
                    for reader in readers {
                        let _ = reader.await;
                    }
                });
            });
            notes
        })
        .clone()
}

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Faults between the functions and LocalStack (the fault proxy) and in Lambda's
/// delivery of invocations (the local executor's rules), as `scripts/test` sets them up.
pub mod faults {
    use serde_json::{Value, json};

    fn proxy() -> String {
        std::env::var("STANDIN_FAULT_PROXY")
            .expect("STANDIN_FAULT_PROXY is not set: run these tests with `make test`")
    }

    /// Adds one rule (see `localstack/fault_proxy.py` for its fields).
    pub async fn add(rule: Value) {
        let response = reqwest::Client::new()
            .post(format!("{}/__faults/rules", proxy()))
            .json(&rule)
            .send()
            .await
            .expect("fault proxy reachable");
        assert!(response.status().is_success(), "rule taken: {rule}");
    }

    /// For `seconds`, the proxy answers `status` to every call of `target` (an
    /// X-Amz-Target such as `AmazonSQS.SendMessage`) whose body holds all of `matching`.
    pub async fn refuse(id: &str, target: &str, matching: &[&str], status: u16, seconds: u64) {
        add(json!({"id": id, "target": target, "match": matching, "status": status, "seconds": seconds})).await;
    }

    /// The next call of `target` whose body holds all of `matching` is carried out by
    /// LocalStack, but its answer never reaches the function (the connection drops): the
    /// SDK retries a call that already happened.
    pub async fn lose_answer_once(id: &str, target: &str, matching: &[&str]) {
        add(json!({"id": id, "target": target, "match": matching, "action": "lose_answer", "times": 1, "seconds": 120})).await;
    }

    /// How many calls the proxy refused under rule `id`.
    pub async fn refused(id: &str) -> u64 {
        let stats: Value = reqwest::Client::new()
            .get(format!("{}/__faults/stats", proxy()))
            .send()
            .await
            .expect("fault proxy reachable")
            .json()
            .await
            .expect("stats are JSON");
        stats[id].as_u64().unwrap_or(0)
    }

    /// The next `times` invocations of the function whose name holds `function`, with
    /// `matching` in their payload, are delivered late (`delay`), twice (`twice`) or
    /// never (`drop`).
    pub fn invoke(
        name: &str,
        function: &str,
        matching: &str,
        action: &str,
        seconds: u64,
        times: u32,
    ) {
        let folder = std::env::var("STANDIN_INVOKE_FAULTS")
            .expect("STANDIN_INVOKE_FAULTS is not set: run these tests with `make test`");
        let rule = json!({"function": function, "match": matching, "action": action, "seconds": seconds, "times": times});
        let tmp = format!("{folder}/.{name}.tmp");
        std::fs::write(&tmp, rule.to_string()).expect("rule written");
        std::fs::rename(&tmp, format!("{folder}/{name}.json")).expect("rule in place");
    }
}
