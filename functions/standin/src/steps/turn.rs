//! The turn: the first message or a parent's reply, read to an interrupted or final state.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tracing::warn;

use super::next::{self, Next, Pacing};
use super::progress::Progress;
use super::{Invocation, Outcome, Step, StepError, apply_open, ensure_ours, load_row};
use crate::agents::AgentSpec;
use crate::doorbell::EndCause;
use crate::row::{Row, RowStore, StoreError};
use crate::state::{MAX_ID_BYTES, RemoteOut, TurnReader, from_status};
use crate::watch::misconfigured;
use standin_remote::{Agent, ArtifactUpdate, FollowUp, RemoteError, Sent, Turn, Update};

/// A stand-in a Step Functions parent started has no row yet: the first turn makes it,
/// with the parent's task token, so its end answers the parent like any other. A row that
/// exists (the control API made it, or the turn is retried) is kept. A first step without
/// a message still gets its row, so the turn can end it failed and the parent hears why;
/// one whose id breaks the rules (every note is keyed by it) gets none: its token stays in
/// the step, and the end answers it directly. The row keeps the agent's entry as now
/// (`spec`): later edits change new stand-ins only. `known`: the row the invocation read.
pub async fn adopt<S: RowStore>(
    store: &S,
    step: &mut Step,
    spec: Option<&AgentSpec>,
    known: Option<&Row>,
) -> Result<(), StepError> {
    let token = step.parent_task_token.take();
    let first = step.message.is_some() || token.is_some();
    if first && standin_wire::TaskId::parse(&step.task_id).is_err() {
        step.parent_task_token = token;
        return Ok(());
    }
    if !first || known.is_some() || store.get(&step.task_id).await?.is_some() {
        return Ok(());
    }
    let mut row = Row::new(step.task_id.as_str(), step.agent.as_str());
    row.created_at = Some(crate::clock::now_rfc3339());
    row.parent_task_token = token;
    row.agent_entry = spec.map(|spec| spec.to_entry().to_string());
    // One that does not read is left off: the first turn's check ends the stand-in, saying why.
    row.traceparent = step
        .traceparent
        .clone()
        .filter(|given| standin_wire::TraceContext::parse("traceparent", given).is_ok());
    match store.create(&row).await {
        Ok(_) | Err(StoreError::AlreadyExists(_)) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// A URL's scheme, host and port.
fn origin_of(url: &str) -> Option<String> {
    let origin = reqwest::Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// The agent as a failure names it: its id and, when known, where it was reached (the
/// origin only, so no path or query reaches a note).
fn named(agent: &str, spec: Option<&AgentSpec>) -> String {
    match spec.and_then(|spec| origin_of(&spec.url)) {
        Some(origin) => format!("agent {agent:?} at {origin}"),
        None => format!("agent {agent:?}"),
    }
}

/// The turn: send the message (first turn, or the parent's reply), read to an interrupted
/// or final state, apply. A follow-up the agent refuses (-32004 for a task that ended, task
/// not found, a stream broken before its first event) may still have moved the task, so
/// GetTask decides; only an agent out of reach (or a failed first turn) ends the stand-in
/// failed. A first turn a parent started itself is checked here by the control API's
/// parser and ends failed, telling the parent why, rather than fail where nobody hears it;
/// so does one whose agent is out of reach or misconfigured.
pub async fn turn<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    mut step: Step,
    window: Duration,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let (store, spec) = (invocation.rows(), invocation.spec.as_ref());
    // The row as the invocation read it on its way in (for the agent's entry) serves
    // every check below: a turn that finds its row reads it once.
    let known = invocation.row.as_ref();
    // An execution that is not the stand-in's touches nothing, its row least of all.
    ensure_ours(store, &step, known).await?;
    // Before anything can fail: a stand-in whose row exists can always be ended.
    adopt(store, &mut step, spec, known).await?;
    if step.next.is_none() {
        // A first turn starts its own cursor: one a parent wrote into the input could
        // carry a deadline years away, or an agent "unreachable" since the future.
        step.cursor = super::next::Cursor::default();
        let first = json!({"agent": step.agent, "message": step.message, "parts": step.parts,
            "task_id": step.task_id, "traceparent": step.traceparent});
        if let Err(standin_wire::BodyError(reason)) = standin_wire::StartRequest::parse(&first) {
            warn!(task_id = %step.task_id, %reason, "stand-in not started");
            return Ok(step.then(Next::End(EndCause::failed(&reason))));
        }
    }
    let agent = match invocation.agent().await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "agent unavailable for the turn");
            let reason = format!("agent unavailable: {}: {err}", named(&step.agent, spec));
            return Ok(step.then(Next::End(EndCause::failed(&reason))));
        }
    };
    if step.message.is_some()
        && let Some(spec) = spec
        && let Some(reason) = misconfigured(&spec.id, spec.updates, agent.can_stream())
    {
        warn!(task_id = %step.task_id, %reason, "stand-in not started");
        return Ok(step.then(Next::End(EndCause::failed(&reason))));
    }
    exchange(invocation, agent, step, window, pacing).await
}

/// The turn's exchange with the agent, once it is reached.
async fn exchange<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    agent: &A,
    mut step: Step,
    window: Duration,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let (teller, spec) = (&invocation.teller, invocation.spec.as_ref());
    let agent_named = named(&step.agent, spec);
    let delivery = spec.map(|spec| spec.file_delivery).unwrap_or_default();
    let (text, parts, first) = match step.next.take() {
        Some(Next::Turn { reply, parts }) => (reply, parts, false),
        _ => {
            let text = step.message.take().ok_or(StepError::Input("message"))?;
            let given = json!({ "parts": std::mem::take(&mut step.parts) });
            match standin_wire::parse_parts(&given, &text) {
                Ok(parts) => (text, parts, true),
                Err(standin_wire::BodyError(reason)) => {
                    return Ok(step.then(Next::End(EndCause::failed(&reason))));
                }
            }
        }
    };
    let store = teller.rows();
    // The row as the invocation read it, when it found one (checked as ours).
    let row = match invocation.row.clone() {
        Some(row) => row,
        None => load_row(store, &step).await?,
    };
    if row.closed {
        // The stand-in has ended (its final note is written): nothing is sent on its
        // behalf any more, whoever asks.
        warn!(task_id = %step.task_id, "turn on an ended stand-in; nothing sent");
        return Ok(step.then(Next::End(EndCause::Final)));
    }
    let follow_up =
        row.remote_task_id
            .clone()
            .zip(row.context_id.clone())
            .map(|(task_id, context_id)| FollowUp {
                task_id,
                context_id,
            });
    // A first turn that Step Functions runs again after it reached the agent (the row
    // has the agent's task): sent again it would be a follow-up, the prompt taken for an
    // answer. GetTask says where the task stands instead.
    let first_again = first && row.remote_task_id.is_some();
    let uploads = invocation.uploads.as_deref();
    let parts = match crate::uploads::hand_over(uploads, parts, !first_again, delivery).await {
        Ok(parts) => parts,
        Err(crate::uploads::HandOverError::Gone(reason)) => {
            warn!(task_id = %step.task_id, %reason, "an upload cannot be handed over");
            return Ok(step.then(Next::End(EndCause::failed(&reason))));
        }
        Err(crate::uploads::HandOverError::Unavailable(err)) => {
            return Err(StepError::Uploads(err));
        }
    };
    let message = Turn::with_id(message_id(&step, &row), text, follow_up).with_parts(parts);
    let mut progress = Progress::new(teller, &step.task_id, &row);
    let mut sent = if first_again {
        Err(NotSent::refused(RemoteError::Transport(
            "the first message reached the agent in an earlier run of this step".into(),
        )))
    } else {
        send(agent, &message, window, &mut progress, &row).await
    };
    if row.remote_task_id.is_some()
        && !first_again
        && matches!(&sent, Err(failed) if failed.may_resend())
    {
        // Refused before the agent took it (connection, 5xx, 429): once more.
        tokio::time::sleep(RESEND_AFTER).await;
        sent = send(agent, &message, window, &mut progress, &row).await;
    }
    let (out, context) = match sent {
        Ok(Some(result)) => result,
        refused => {
            // A timeout may have delivered the reply all the same: the watch will tell.
            // (A stream the agent accepted and then broke is not sent again, but judged
            // like a refusal: if the task stays unmoved through the rechecks it ends,
            // rather than leave parent and agent waiting on each other.)
            let maybe_taken =
                first_again || matches!(&refused, Err(failed) if failed.may_have_taken());
            let why = match refused {
                Err(failed) => format!("turn failed: {agent_named}: {}", failed.error),
                _ => format!("{agent_named} answered without a task state"),
            };
            warn!(task_id = %step.task_id, reason = %why, "turn refused; asking GetTask");
            let Some(remote) = row.remote_task_id.as_deref() else {
                return Ok(step.then(Next::End(EndCause::failed(&why))));
            };
            match agent.get(remote).await {
                Ok(task) => {
                    let known = row.last_text();
                    let out = from_status(&task, known).about(remote);
                    // Nothing moved and the agent still waits for input: the reply was not
                    // taken, and parking would leave parent and agent waiting on each other.
                    if out.state.is_interrupted()
                        && !maybe_taken
                        && row
                            .last
                            .as_ref()
                            .is_some_and(|last| !out.differs_from(last))
                    {
                        // Judged after the rechecks: an SDK may refuse the stream and
                        // still run the turn (@a2a-js/sdk answers -32004 to a follow-up
                        // stream that begins with a status update, and completes).
                        warn!(task_id = %step.task_id, "reply refused and the task unmoved; rechecking");
                        let next =
                            next::after_refused_reply(&mut step.cursor, why, row.mode(), pacing);
                        return Ok(step.then(next));
                    }
                    (out, None)
                }
                Err(err) => {
                    let reason = format!("{why}; GetTask failed too: {err}");
                    return Ok(step.then(Next::End(EndCause::failed(&reason))));
                }
            }
        }
    };
    // A direct answer to a first turn (a message, no task) ends the exchange: COMPLETED
    // with its text, and no remote task.
    let answered = out.remote_task_id.is_empty() && out.is_final;
    let out = match row.remote_task_id.as_deref() {
        Some(remote) => out.about(remote),
        None if answered => out,
        None => {
            let too_long = out.remote_task_id.len() > MAX_ID_BYTES
                || context.as_ref().is_some_and(|c| c.len() > MAX_ID_BYTES);
            if too_long || out.remote_task_id.is_empty() {
                let reason = format!(
                    "the agent's task or context id is empty or over the {MAX_ID_BYTES}-byte limit"
                );
                return Ok(step.then(Next::End(EndCause::failed(&reason))));
            }
            let set = store.set_remote(&step.task_id, &out.remote_task_id, context.as_deref());
            progress.took_remote(set.await?);
            out
        }
    };
    let seen = Some(progress.seen());
    if apply_open(teller, &step.task_id, seen, &out).await? == Outcome::AlreadyFinal {
        return Ok(step.then(Next::End(EndCause::Final)));
    }
    let watch = row.watch.as_ref().map(|w| w.mode);
    let next = next::after_turn(&mut step.cursor, &out, watch, pacing);
    Ok(step.then(next))
}

/// The turn's message id, the same however often Step Functions runs the step (a Lambda
/// service error retries it with the same input): the stand-in (its id and when its row
/// was made), its generation and the park the turn follows name the turn.
fn message_id(step: &Step, row: &Row) -> String {
    use sha2::{Digest, Sha256};
    // The row's creation time tells apart two deployments (or two lives of one id after
    // its row expired) that name a stand-in alike and share an agent.
    let created = row.created_at.as_deref().unwrap_or_default();
    let digest = Sha256::new()
        .chain_update(step.task_id.as_bytes())
        .chain_update([0])
        .chain_update(created.as_bytes())
        .chain_update([0])
        .chain_update(step.generation.to_be_bytes())
        .chain_update(step.cursor.parks.to_be_bytes())
        .finalize();
    hex::encode(&digest[..16])
}

/// A turn that did not come back with a task state, and whether the agent had accepted
/// it (a 200 stream that broke before its first event) before it failed.
#[derive(Debug)]
struct NotSent {
    error: RemoteError,
    accepted: bool,
}

impl NotSent {
    fn refused(error: RemoteError) -> Self {
        Self {
            error,
            accepted: false,
        }
    }

    /// Only what the agent never accepted is sent again: a passing refusal (connection,
    /// 5xx, 429), never a timeout, an accepted stream, or a gateway's 502 or 504 (the
    /// agent behind it may have taken the message).
    fn may_resend(&self) -> bool {
        let gateway = matches!(self.error, RemoteError::Http { status: 502 | 504 });
        !self.accepted && !gateway && !self.may_have_taken() && self.error.is_retryable()
    }

    /// A timeout, ours or a gateway's (504, gRPC's DEADLINE_EXCEEDED, or its UNKNOWN for
    /// a stream a proxy cut): the agent may be working on the message, so the stand-in
    /// parks and the watch tells, rather than judge it refused.
    fn may_have_taken(&self) -> bool {
        matches!(
            self.error,
            RemoteError::Timeout { .. }
                | RemoteError::Http { status: 504 }
                | RemoteError::Grpc {
                    code: standin_remote::grpc_code::DEADLINE_EXCEEDED
                        | standin_remote::grpc_code::UNKNOWN,
                    ..
                }
        )
    }
}

type Sending = Result<Option<(RemoteOut, Option<String>)>, NotSent>;

/// How long a refused follow-up waits before it is sent once more.
const RESEND_AFTER: Duration = Duration::from_secs(2);

/// Sends the turn, streaming when the agent can. A direct answer ends the exchange only
/// when there is no task yet: answering a follow-up with a bare message says nothing of
/// the task, so GetTask decides.
async fn send<A: Agent, S: RowStore>(
    agent: &A,
    message: &Turn,
    window: Duration,
    progress: &mut Progress<'_, S>,
    row: &Row,
) -> Sending {
    let sent = if agent.can_stream() {
        send_turn(agent, message, window, progress).await
    } else {
        send_unary(agent, message, window, progress).await
    };
    match sent {
        Ok(Some((out, _))) if row.remote_task_id.is_some() && out.remote_task_id.is_empty() => {
            Ok(None)
        }
        other => other,
    }
}

/// The turn of an agent whose card says it cannot stream: SendMessage answers at once
/// (`returnImmediately`); GetTask then follows the task, waiting 1 s, 2 s, 4 s, … (at
/// most 8 s) between asks, to an interrupted or final state or the end of the window.
/// So a first turn longer than the window still learns its task and hands it to the watch.
async fn send_unary<A: Agent, S: RowStore>(
    agent: &A,
    message: &Turn,
    window: Duration,
    progress: &mut Progress<'_, S>,
) -> Sending {
    let deadline = tokio::time::Instant::now() + window;
    let task = match agent.send(message).await.map_err(NotSent::refused)? {
        Sent::Task(task) => task,
        Sent::Answer(text) => return Ok(Some((crate::state::answered(&text), None))),
    };
    let context = task.context_id.clone();
    let mut out = from_status(&task, "");
    progress.heard(&out, context.as_deref()).await;
    let mut wait = Duration::from_secs(1);
    while !(out.is_final || out.state.is_interrupted())
        && tokio::time::Instant::now() + wait < deadline
    {
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(UNARY_POLL_MAX);
        match agent.get(&task.task_id).await {
            Ok(now) => {
                out = from_status(&now, &out.text).about(&task.task_id);
                progress.heard(&out, context.as_deref()).await;
            }
            Err(err) if err.is_retryable() => continue,
            Err(_) => break,
        }
    }
    Ok(Some((out, context)))
}

/// The longest wait between GetTask calls while a non-streaming turn runs.
const UNARY_POLL_MAX: Duration = Duration::from_secs(8);

async fn send_turn<A: Agent, S: RowStore>(
    agent: &A,
    message: &Turn,
    window: Duration,
    progress: &mut Progress<'_, S>,
) -> Sending {
    let mut reader = TurnReader::new();
    let mut stream = agent
        .send_streaming(message)
        .await
        .map_err(NotSent::refused)?;
    let deadline = tokio::time::Instant::now() + window;
    loop {
        let wake_at = progress.due().map_or(deadline, |due| due.min(deadline));
        match tokio::time::timeout_at(wake_at, stream.next()).await {
            // A change held back to coalesce is due.
            Err(_) if wake_at < deadline => progress.tell_held().await,
            // The window is over: what was seen so far is the turn's result; the watch
            // hears the rest.
            Err(_) | Ok(None) => break,
            Ok(Some(Err(error))) => {
                if reader.last().is_none() {
                    // The agent answered 200 and began the stream: it has the message.
                    return Err(NotSent {
                        error,
                        accepted: true,
                    });
                }
                break;
            }
            Ok(Some(Ok(event))) => {
                if reader.read(&event) {
                    break;
                }
                if let Update::Artifact(ArtifactUpdate {
                    last_chunk: true, ..
                }) = &event
                {
                    progress
                        .artifact_completed(reader.last(), reader.context_id())
                        .await;
                } else if let Some(out) = reader.last() {
                    progress.heard(out, reader.context_id()).await;
                }
            }
        }
    }
    let context = reader.context_id().map(str::to_owned);
    Ok(reader.finish().map(|out| (out, context)))
}
