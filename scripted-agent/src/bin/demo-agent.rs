//! The demo's remote worker: asks which format the report should take, then works for a
//! few seconds with progress updates and completes with the report as an artifact. It
//! pushes its changes and streams them; `--no-push` leaves push out of its card, so a
//! stand-in follows it instead.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use standin_scripted_agent::{Behaviour, TERMINAL, TestAgent, TurnDone};

const WORKING: &str = "TASK_STATE_WORKING";
const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";
const COMPLETED: &str = "TASK_STATE_COMPLETED";
const QUESTION: &str = "Which format should the report be in: Markdown or PDF?";

#[derive(Parser)]
#[command(
    about = "A2A demo agent: asks a question, works with progress, completes with an artifact"
)]
struct Args {
    /// Port on 127.0.0.1.
    #[arg(long, default_value_t = 27201)]
    port: u16,
    /// Leave push notifications out of the card (stand-ins then follow the task).
    #[arg(long)]
    no_push: bool,
    /// Progress updates before the report is done.
    #[arg(long, default_value_t = 3)]
    steps: u32,
    /// Milliseconds between progress updates.
    #[arg(long, default_value_t = 1500)]
    step_ms: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let behaviour = Behaviour {
        push_capable: !args.no_push,
        ..Behaviour::default()
    };
    let agent = match TestAgent::try_start(args.port, behaviour).await {
        Ok(agent) => agent,
        Err(err) => {
            eprintln!(
                "demo-agent: cannot listen on 127.0.0.1:{}: {err}",
                args.port
            );
            return std::process::ExitCode::FAILURE;
        }
    };
    agent.respond_with(Arc::new(|_task, turn, text| match turn {
        0 => vec![
            (WORKING.into(), "Reading the brief".into()),
            (INPUT_REQUIRED.into(), QUESTION.into()),
        ],
        _ => vec![(
            WORKING.into(),
            format!("Writing the report as {}", text.trim()),
        )],
    }));
    let push = if args.no_push { "off" } else { "on" };
    println!("demo-agent listening on {} (push {push})", agent.url);
    let mut turns = agent.turns_done();
    loop {
        match turns.recv().await {
            Ok(done) if done.turn >= 1 => {
                let (agent, steps, pause) = (
                    agent.clone(),
                    args.steps,
                    Duration::from_millis(args.step_ms),
                );
                tokio::spawn(async move { work(&agent, &done, steps, pause).await });
            }
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                return std::process::ExitCode::SUCCESS;
            }
        }
    }
}

/// The work after the answer: progress, then the report. A cancelled task stops here.
async fn work(agent: &TestAgent, done: &TurnDone, steps: u32, pause: Duration) {
    let ended = |agent: &TestAgent| {
        agent
            .state(&done.task)
            .is_none_or(|s| TERMINAL.contains(&s.as_str()))
    };
    for step in 1..=steps {
        tokio::time::sleep(pause).await;
        if ended(agent) {
            return;
        }
        let text = format!("Collecting sources ({step}/{steps})");
        agent.change(&done.task, WORKING, &text, false).await;
    }
    tokio::time::sleep(pause).await;
    if ended(agent) {
        return;
    }
    let format = done.text.trim();
    let report =
        format!("# Report\n\nFormat: {format}\n\n{steps} sources collected and summarised.\n");
    agent.add_artifact(&done.task, "report.md", &report).await;
    let text = format!("Report ready: report.md ({format}, {steps} sources)");
    agent.change(&done.task, COMPLETED, &text, false).await;
}
