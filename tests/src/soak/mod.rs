//! The soak: hundreds of stand-ins at once against misbehaving agents, with faults between
//! the functions and AWS, judged by an oracle and summed up in a report.
//!
//! `run` drives one soak against a deployed stack (the test stack, whose agents include the
//! soak personas of [`plan::PERSONAS`]); `scripts/soak` (make soak) and a reduced test in
//! `make test` call it.

mod agents;
pub mod observe;
pub mod oracle;
pub mod plan;
pub mod report;
pub mod usage;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use crate::agent::{Behaviour, TestAgent};
use crate::stack::{Stack, now_ms};
use agents::{Seen, blank_tokens, deliver, habit_problems, hoard, put_agent};
use plan::{Delivery, Ending, Habit, Plan, Step, Watch};

#[derive(Clone, Debug)]
pub struct Options {
    /// The deployed stack to drive.
    pub stack: String,
    /// How many stand-ins in all.
    pub standins: usize,
    /// How many run at once.
    pub concurrency: usize,
    /// No new stand-in starts after this long (None: every stand-in asked for starts).
    pub duration: Option<Duration>,
    /// The pause before each change an agent makes between turns.
    pub gap: (Duration, Duration),
    /// At most this many stand-ins start a second (None: as fast as slots free up).
    pub starts_per_sec: Option<f64>,
    /// The test stack's parameters this run deployed differently, as given (the report
    /// says them).
    pub stack_params: Option<String>,
    pub seed: u64,
    /// A fault profile for the fault proxy (None: no faults between functions and AWS).
    pub profile: Option<PathBuf>,
    /// Kill one running follow process this often.
    pub kill_follow_every: Option<Duration>,
    /// How long a stand-in may take to hear a change or to end once its agent is done.
    pub patience: Duration,
    /// Where the report goes (soak-report.json, soak-latency.svg).
    pub out: PathBuf,
    /// Only the stand-ins of these indices (of `0..standins`), each with its plan in the
    /// whole run: a failed stand-in replayed alone.
    pub only: Option<Vec<usize>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            stack: "standin".into(),
            standins: 100,
            concurrency: 100,
            duration: None,
            gap: (Duration::from_secs(2), Duration::from_secs(12)),
            starts_per_sec: None,
            stack_params: None,
            seed: 1,
            profile: None,
            kill_follow_every: Some(Duration::from_secs(60)),
            patience: Duration::from_secs(300),
            out: PathBuf::from("soak-out"),
            only: None,
        }
    }
}

/// What happened to one stand-in, as the soak's orchestrator saw it.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub started_ms: u64,
    /// When the driver was done with it (heard its end, or gave up).
    pub ended_ms: u64,
    pub remote: Option<String>,
    /// What went wrong on the soak's side of the conversation (a change never heard).
    pub problems: Vec<String>,
    /// Control API calls that had to be retried (5xx or 429).
    pub control_retries: u64,
    pub deliveries: Vec<Delivery>,
    /// The parent cancelled it (the control API took the cancel).
    pub cancelled: bool,
    /// Its persona's habit acted (a token echoed, a huge name asked with, a hoard
    /// streamed, the agent dead), so the habit's own check had something to judge.
    pub habit_acts: u64,
}

/// Where each stand-in's driver hears that its agent answered turn `k` (of remote task).
type Routes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<(usize, String)>>>>;

/// Counts of what the agents did, for the report.
#[derive(Default)]
struct Tally {
    turns: HashMap<(String, usize), u32>,
}

pub struct Soak {
    pub options: Options,
    pub stack: Stack,
    agents: HashMap<&'static str, TestAgent>,
    /// The dying personas' agents, one a stand-in.
    agents_of_their_own: Mutex<Vec<TestAgent>>,
    /// The next of [`plan::DIES_PORTS`] to try.
    next_dies_port: std::sync::atomic::AtomicU16,
    plans: Plans,
    routes: Routes,
    tally: Arc<Mutex<Tally>>,
}

fn behaviour(habit: Habit, watch: Watch) -> Behaviour {
    let mut b = Behaviour::default();
    match habit {
        Habit::Polite => {}
        Habit::Slow => {
            b.slow_push_registration = Some(Duration::from_secs(2));
            b.slow_deletes = Some(Duration::from_secs(2));
        }
        Habit::RefusesPush => b.refuse_push_registration = true,
        Habit::DropsStreams => b.drop_subscriptions_after = Some(Duration::from_secs(4)),
        Habit::HugeFilename | Habit::EchoesToken | Habit::Hoards | Habit::Dies => {}
    }
    if watch == Watch::Off {
        b.push_capable = false;
    }
    b
}

/// Answers the soak's turns from the plans, and routes each answered turn to its driver.
fn hook(agent: &TestAgent, plans: &Plans, routes: &Routes, tally: &Arc<Mutex<Tally>>) {
    let known = plans.clone();
    agent.respond_with(Arc::new(move |_task, _turn, text| {
        let Some((id, k)) = plan::parse_turn_text(text) else {
            return vec![(plan::COMPLETED.into(), "not a soak turn".into())];
        };
        let plans = known.lock().unwrap_or_else(|p| p.into_inner());
        match plans.get(&id).and_then(|p| p.turns.get(k)) {
            Some(turn) => turn.clone(),
            None => vec![(plan::WORKING.into(), format!("{id} unplanned turn {k}"))],
        }
    }));
    let mut done = agent.turns_done();
    let (routes, tally) = (routes.clone(), tally.clone());
    tokio::spawn(async move {
        loop {
            let turn = match done.recv().await {
                Ok(turn) => turn,
                // Missing a turn would hang its driver: count what was missed.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    eprintln!("soak: {n} turn reports were missed (the driver is overloaded)");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let Some((id, k)) = plan::parse_turn_text(&turn.text) else {
                continue;
            };
            *tally
                .lock()
                .unwrap()
                .turns
                .entry((id.clone(), k))
                .or_default() += 1;
            if let Some(route) = routes.lock().unwrap().get(&id) {
                let _ = route.send((k, turn.task.clone()));
            }
        }
    });
}

type Plans = Arc<Mutex<HashMap<String, Plan>>>;

impl Soak {
    /// Starts the soak's agents on their ports, puts the personas the deploy does not
    /// know through the registry, and loads the stack.
    pub async fn prepare(options: Options) -> Result<Self, String> {
        let stack = Stack::load(&options.stack).await;
        let plans: Plans = Arc::default();
        let routes: Routes = Arc::default();
        let tally: Arc<Mutex<Tally>> = Arc::default();
        let mut agents = HashMap::new();
        for persona in plan::PERSONAS.iter().filter(|p| p.port != 0) {
            let agent = TestAgent::try_start(persona.port, behaviour(persona.habit, persona.watch))
                .await
                .map_err(|e| {
                    format!(
                        "the soak agent {} on 127.0.0.1:{}: {e}",
                        persona.name, persona.port
                    )
                })?;
            if !persona.deployed {
                put_agent(&stack, persona.name, persona.entry(&agent.url)).await?;
            }
            hook(&agent, &plans, &routes, &tally);
            agents.insert(persona.name, agent);
        }
        Ok(Self {
            options,
            stack,
            agents,
            agents_of_their_own: Mutex::default(),
            next_dies_port: std::sync::atomic::AtomicU16::new(plan::DIES_PORTS.start),
            plans,
            routes,
            tally,
        })
    }

    /// The agent a stand-in talks to, and its id in the registry: a dying persona's is an
    /// agent of its own, started and registered here.
    async fn agent_for(&self, plan: &Plan) -> Result<(TestAgent, String), String> {
        let persona = plan.persona;
        if persona.port != 0 {
            return Ok((self.agents[persona.name].clone(), persona.name.to_owned()));
        }
        let mut started = None;
        for _ in plan::DIES_PORTS {
            let port = self
                .next_dies_port
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if !plan::DIES_PORTS.contains(&port) {
                break;
            }
            if let Ok(agent) =
                TestAgent::try_start(port, behaviour(persona.habit, persona.watch)).await
            {
                started = Some(agent);
                break;
            }
        }
        let agent = started.ok_or_else(|| {
            format!(
                "an agent of its own for {}: no free port left in {:?}",
                plan.id,
                plan::DIES_PORTS
            )
        })?;
        hook(&agent, &self.plans, &self.routes, &self.tally);
        let name = format!("{}-agent", plan.id);
        put_agent(&self.stack, &name, persona.entry(&agent.url)).await?;
        self.agents_of_their_own.lock().unwrap().push(agent.clone());
        Ok((agent, name))
    }

    fn all_agents(&self) -> Vec<TestAgent> {
        let mut all: Vec<TestAgent> = self.agents.values().cloned().collect();
        all.extend(self.agents_of_their_own.lock().unwrap().iter().cloned());
        all
    }

    /// Runs the soak and judges it; the report says whether every promise held.
    pub async fn run(self) -> Result<report::Report, String> {
        let soak = Arc::new(self);
        let options = soak.options.clone();
        let began = Instant::now();
        let began_ms = now_ms();
        let baseline = observe::dead_letters(&soak.stack).await;
        observe::clear_faults().await;
        let windows = match &options.profile {
            Some(path) => observe::load_profile(path).await?,
            None => Vec::new(),
        };
        let proxy_before = observe::proxy_stats().await;
        let sampler = usage::Sampler::start(options.stack.clone());
        let killer = options.kill_follow_every.map(|every| {
            let stack = options.stack.clone();
            tokio::spawn(async move { observe::kill_follows(&stack, every).await })
        });
        // Ids differ from run to run: an ended stand-in's id can't be started again.
        let tag = format!("soak-{}", began_ms / 1000 % 1_000_000);
        let progress = {
            let soak = soak.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    let ids: Vec<String> = soak.plans.lock().unwrap().keys().cloned().collect();
                    let (mut ended, mut notes) = (0, 0);
                    for id in &ids {
                        let got = soak.stack.notes(id);
                        notes += got.len();
                        ended += usize::from(got.iter().any(|n| n["final"] == true));
                    }
                    eprintln!(
                        "  {:>4} s: {} stand-ins started, {} ended, {} notes received",
                        began.elapsed().as_secs(),
                        ids.len(),
                        ended,
                        notes
                    );
                }
            })
        };
        let slots = Arc::new(Semaphore::new(options.concurrency));
        let mut next_start = Instant::now();
        let mut handles = Vec::new();
        let indices: Vec<usize> = match &options.only {
            Some(only) => only.clone(),
            None => (0..options.standins).collect(),
        };
        for index in indices {
            if options
                .duration
                .is_some_and(|limit| began.elapsed() > limit)
            {
                break;
            }
            let permit = slots
                .clone()
                .acquire_owned()
                .await
                .map_err(|e| e.to_string())?;
            if let Some(rate) = options.starts_per_sec {
                // Paced from the last start, not from the beginning: after a wait for a
                // slot the next ones do not start back to back.
                let due = next_start.max(Instant::now());
                tokio::time::sleep_until(due.into()).await;
                next_start = due + Duration::from_secs_f64(1.0 / rate);
            }
            let plan = plan::plan(&tag, options.seed, index, options.gap);
            let (tx, rx) = mpsc::unbounded_channel();
            soak.routes.lock().unwrap().insert(plan.id.clone(), tx);
            soak.plans
                .lock()
                .unwrap()
                .insert(plan.id.clone(), plan.clone());
            let soak = soak.clone();
            handles.push(tokio::spawn(async move {
                let mut run = soak.converse(&plan, rx).await;
                run.ended_ms = now_ms();
                drop(permit);
                (plan, run)
            }));
        }
        let mut runs = Vec::new();
        for handle in handles {
            runs.push(
                handle
                    .await
                    .map_err(|e| format!("a stand-in's driver panicked: {e}"))?,
            );
        }
        let driven_ms = now_ms();
        progress.abort();
        observe::clear_faults().await;
        eprintln!("  all stand-ins done; reading executions, queues, logs and tables");
        if let Some(killer) = killer {
            killer.abort();
        }
        let kills = observe::KILLS.load(std::sync::atomic::Ordering::SeqCst);
        let usage = sampler.stop().await;
        let proxy = observe::proxy_delta(&proxy_before, &observe::proxy_stats().await);
        let ids: Vec<String> = runs.iter().map(|(p, _)| p.id.clone()).collect();
        let executions = observe::executions(&soak.stack, &ids, options.patience).await;
        let dead_letters = observe::dead_letters(&soak.stack).await;
        let tokens: Vec<String> = soak
            .all_agents()
            .iter()
            .flat_map(TestAgent::tokens_registered)
            .collect();
        let logs = observe::functions_logs(&soak.stack, &options.stack, began_ms).await;
        let leaks = observe::token_leaks(&soak.stack, &logs, &tokens, &ids).await;
        let heard_by_stand_in = observe::heard_by_the_stand_in(&logs, &ids);
        let aws_calls_by_function = observe::aws_calls_by_function(&logs, &options.stack);
        let changes = soak.changes_by_remote(&tokens);
        let turns = std::mem::take(&mut soak.tally.lock().unwrap().turns);
        let mut judged = Vec::new();
        let mut timelines: HashMap<String, Vec<String>> = HashMap::new();
        for (plan, run) in runs {
            let received: Vec<oracle::Received> = soak
                .stack
                .notes_timed(&plan.id)
                .into_iter()
                .map(|got| oracle::Received {
                    seq: got.note["seq"].as_u64().unwrap_or(0),
                    state: got.note["state"].as_str().unwrap_or_default().to_owned(),
                    text: got.note["text"].as_str().unwrap_or_default().to_owned(),
                    is_final: got.note["final"].as_bool().unwrap_or(false),
                    received_ms: got.received_ms,
                    written_ms: got.note["at"].as_str().and_then(oracle::epoch_ms),
                    queued_ms: got.sent_ms,
                })
                .collect();
            let log = run
                .remote
                .as_ref()
                .and_then(|r| changes.get(r))
                .cloned()
                .unwrap_or_default();
            let own_end = if run.cancelled {
                Some(plan::CANCELED)
            } else if plan.ending == Ending::AgentDied {
                Some(plan::FAILED)
            } else {
                None
            };
            let mut verdict = oracle::judge(&log, &received, own_end);
            verdict.violations.extend(run.problems.iter().cloned());
            for ((id, k), times) in &turns {
                if id != &plan.id {
                    continue;
                }
                if *times > 1 {
                    verdict.violations.push(format!(
                        "the parent's message for turn {k} reached the agent {times} times"
                    ));
                }
                if *k >= plan.turns.len() {
                    verdict.violations.push(format!(
                        "the agent was asked for turn {k}, which the parent never sent"
                    ));
                }
            }
            if let Some(e) = executions.get(&plan.id) {
                verdict.violations.extend(e.problems.iter().cloned());
            }
            // A violation may quote a note: one that kept an echoed token must not carry
            // it into the report.
            for violation in &mut verdict.violations {
                *violation = blank_tokens(violation, &tokens);
            }
            if !verdict.violations.is_empty() {
                timelines.insert(plan.id.clone(), timeline(&run, &log, &received));
            }
            judged.push(report::Judged {
                plan,
                run,
                verdict,
                received,
            });
        }
        let violated: Vec<String> = judged
            .iter()
            .filter(|j| !j.verdict.violations.is_empty())
            .map(|j| j.plan.id.clone())
            .take(report::STORIES)
            .collect();
        let warnings = observe::warnings_of(&logs, &violated);
        let stories = violated
            .iter()
            .map(|id| {
                let blank = |lines: &[String]| -> Vec<String> {
                    lines.iter().map(|l| blank_tokens(l, &tokens)).collect()
                };
                let warned = match &warnings {
                    Ok(all) => json!(blank(all.get(id).map_or(&[][..], Vec::as_slice))),
                    Err(unread) => json!({"unread": unread}),
                };
                let story = json!({
                    "timeline": blank(timelines.get(id).map_or(&[][..], Vec::as_slice)),
                    "warnings": warned,
                });
                (id.clone(), story)
            })
            .collect();
        Ok(report::Report::build(report::Inputs {
            options,
            began_ms,
            driven_ms,
            judged,
            windows,
            proxy,
            kills,
            usage,
            executions,
            dead_letters: observe::delta(&baseline, &dead_letters),
            leaks,
            heard_by_stand_in,
            aws_calls_by_function,
            stories,
        }))
    }

    /// Each remote task's changes, as the parent is meant to hear them: a push token an
    /// agent echoed is blanked (`*` for each character), and the rest scrubbed as every
    /// note's text is.
    fn changes_by_remote(&self, tokens: &[String]) -> HashMap<String, Vec<oracle::Change>> {
        let mut all: HashMap<String, Vec<oracle::Change>> = HashMap::new();
        for agent in self.all_agents() {
            for c in agent.changes() {
                let text = blank_tokens(&c.text, tokens);
                all.entry(c.task).or_default().push(oracle::Change {
                    state: c.state,
                    text: standin_wire::scrub::scrub(&text),
                    at_ms: c.at_ms as u64,
                });
            }
        }
        all
    }

    /// One stand-in's conversation, as its parent and its remote agent hold it.
    async fn converse(
        &self,
        plan: &Plan,
        mut turns: mpsc::UnboundedReceiver<(usize, String)>,
    ) -> Run {
        let mut run = Run {
            started_ms: now_ms(),
            ..Run::default()
        };
        let patience = self.options.patience;
        let (agent, agent_id) = match self.agent_for(plan).await {
            Ok(found) => found,
            Err(problem) => {
                run.problems.push(problem);
                return run;
            }
        };
        let agent = &agent;
        let habit = plan.persona.habit;
        let body =
            json!({"agent": agent_id, "message": plan::turn_text(&plan.id, 0), "task_id": plan.id});
        if !self.control(&mut run, "/standins", body, 200).await {
            return run;
        }
        let mut last: (String, String) = (String::new(), String::new());
        let mut died_ms = None;
        for (k, segment) in plan.segments.iter().enumerate() {
            let remote = loop {
                match tokio::time::timeout(patience, turns.recv()).await {
                    Ok(Some((turn, remote))) if turn == k => break remote,
                    Ok(Some(_)) => continue,
                    _ => {
                        run.problems
                            .push(format!("turn {k} never reached the agent"));
                        return run;
                    }
                }
            };
            run.remote = Some(remote.clone());
            if let Some(end) = plan.turns[k].last() {
                last = end.clone();
            }
            if habit == Habit::Hoards && k == 0 {
                hoard(agent, &remote).await;
                run.habit_acts += 1;
            }
            for (pause, step) in &segment.steps {
                tokio::time::sleep(*pause).await;
                let (state, text, delivery) = match step {
                    Step::Progress { text, delivery } => (plan::WORKING, text, *delivery),
                    Step::Ask { text, delivery } => (plan::INPUT_REQUIRED, text, *delivery),
                    Step::End {
                        ending,
                        text,
                        delivery,
                    } => (ending.state(), text, *delivery),
                    Step::Die => {
                        agent.die();
                        died_ms = Some(now_ms());
                        run.habit_acts += 1;
                        continue;
                    }
                };
                match (habit, state) {
                    (Habit::HugeFilename, plan::INPUT_REQUIRED) => {
                        run.deliveries.push(Delivery::Normal);
                        let name = "n".repeat(500_000);
                        let part = json!({"raw": "aGk=", "filename": name, "mediaType": "application/pdf"});
                        agent.ask_with_part(&remote, text, part).await;
                        run.habit_acts += 1;
                    }
                    (Habit::EchoesToken, plan::WORKING) => {
                        let echoed = match agent.configs(&remote).first() {
                            Some(config) => {
                                run.habit_acts += 1;
                                format!("{text} (echo {})", config.token)
                            }
                            // Not registered yet: nothing to echo this time.
                            None => text.clone(),
                        };
                        run.deliveries.push(delivery);
                        deliver(agent, &remote, (state, &echoed), &last, delivery).await;
                        last = (state.to_owned(), echoed);
                        continue;
                    }
                    _ => {
                        run.deliveries.push(delivery);
                        deliver(agent, &remote, (state, text), &last, delivery).await;
                    }
                }
                last = (state.to_owned(), text.clone());
            }
            match (&plan.questions[k], plan.ending) {
                (Some(question), _) => {
                    if !self.heard(&plan.id, plan::INPUT_REQUIRED, question).await {
                        run.problems
                            .push(format!("the question {question:?} was never heard"));
                        return run;
                    }
                    // Named, so that a retry after a lost answer is queued once.
                    let body = json!({"text": plan::turn_text(&plan.id, k + 1), "reply_id": format!("a{}", k + 1)});
                    if !self
                        .control(&mut run, &format!("/standins/{}/reply", plan.id), body, 202)
                        .await
                    {
                        return run;
                    }
                }
                (None, Ending::ParentCancel) => {
                    // Cancel once the last change is heard, or while it is on its way.
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        self.heard(&plan.id, &last.0, &last.1),
                    )
                    .await;
                    let path = format!("/standins/{}/cancel", plan.id);
                    if !self
                        .control(
                            &mut run,
                            &path,
                            json!({"reason": "the soak's parent changed its mind"}),
                            202,
                        )
                        .await
                    {
                        return run;
                    }
                    run.cancelled = true;
                }
                (None, _) => {}
            }
        }
        let deadline = Instant::now() + patience;
        let last = loop {
            if let Some(last) = self
                .stack
                .notes(&plan.id)
                .into_iter()
                .find(|n| n["final"] == true)
            {
                break last;
            }
            if Instant::now() > deadline {
                run.problems.push(format!(
                    "no final note within {patience:?} of the agent's end"
                ));
                return run;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let notes = self.stack.notes(&plan.id);
        let seen = Seen {
            last: &last,
            notes: &notes,
            agent_id: &agent_id,
            died_ms,
        };
        run.problems
            .extend(habit_problems(&self.stack, habit, seen).await);
        run
    }

    /// Whether the parent got a note of this state and text within the patience.
    async fn heard(&self, id: &str, state: &str, text: &str) -> bool {
        let deadline = Instant::now() + self.options.patience;
        while Instant::now() < deadline {
            if self
                .stack
                .notes(id)
                .iter()
                .any(|n| n["state"] == state && n["text"] == text)
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    }

    /// A control API call as a careful parent makes it: retried on 5xx, 429 and no answer
    /// at all, with backoff; any other answer than `expected` is a problem of the stand-in.
    async fn control(&self, run: &mut Run, path: &str, body: Value, expected: u16) -> bool {
        let mut wait = Duration::from_millis(500);
        for _ in 0..12 {
            let Ok((status, answer)) = self
                .stack
                .try_control("POST", path, Some(body.clone()))
                .await
            else {
                // No answer: the call may or may not have been taken; a parent retries.
                run.control_retries += 1;
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(8));
                continue;
            };
            if status == expected {
                return true;
            }
            // A cancel whose first answer was lost may have ended the stand-in already.
            if status == 409 && path.ends_with("/cancel") && run.control_retries > 0 {
                return true;
            }
            if status == 429 || status >= 500 {
                run.control_retries += 1;
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(8));
                continue;
            }
            run.problems
                .push(format!("POST {path} answered {status}: {answer}"));
            return false;
        }
        run.problems.push(format!("POST {path} kept failing"));
        false
    }
}

/// One stand-in's conversation in time, seconds from its start: what its agent did and
/// what its parent got, for the report of a stand-in the oracle faults.
fn timeline(run: &Run, log: &[oracle::Change], received: &[oracle::Received]) -> Vec<String> {
    let since = |ms: u64| ms.saturating_sub(run.started_ms) as f64 / 1000.0;
    let mut lines: Vec<(u64, String)> = log
        .iter()
        .map(|c| {
            (
                c.at_ms,
                format!("{:7.1} s agent: {} {:?}", since(c.at_ms), c.state, c.text),
            )
        })
        .collect();
    lines.extend(received.iter().map(|n| {
        let text: String = n.text.chars().take(120).collect();
        (
            n.received_ms,
            format!(
                "{:7.1} s parent got #{} {} {text:?}{}",
                since(n.received_ms),
                n.seq,
                n.state,
                if n.is_final { " (final)" } else { "" }
            ),
        )
    }));
    lines.sort_by_key(|(at, _)| *at);
    let mut out: Vec<String> = lines.into_iter().map(|(_, line)| line).collect();
    out.push(format!(
        "{:7.1} s the driver was done with it",
        since(run.ended_ms)
    ));
    out
}
