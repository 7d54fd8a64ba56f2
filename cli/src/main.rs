//! `standin`: drive the stand-ins of a deployed stack (LocalStack by default).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use standin_cli::events::{self, Heard, human_line};
use standin_cli::parts::parts_of;
use standin_cli::target::DEFAULT_ENDPOINT;
use standin_cli::{CliError, ControlClient, NoteStream, StackInfo, Target, agents};
use standin_wire::{AgentView, StandInStatus, Summary, WatchMode};

#[derive(Parser)]
#[command(
    name = "standin",
    version,
    about = "Start, answer, cancel and watch stand-ins: each one delegates a sub-task to a remote A2A agent"
)]
struct Cli {
    /// The deployed stack's name.
    #[arg(long, global = true, env = "STANDIN_STACK", default_value = "standin")]
    stack: String,
    /// Use AWS (the usual profile, region and credentials) instead of LocalStack.
    #[arg(long, global = true)]
    aws: bool,
    /// LocalStack's URL.
    #[arg(long, global = true, env = "STANDIN_ENDPOINT", default_value = DEFAULT_ENDPOINT)]
    endpoint: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a stand-in: sends MESSAGE to the agent and prints the local task id.
    Start {
        /// The agent's id (the stack's Agents parameter, or the registry).
        #[arg(long)]
        agent: String,
        /// The task for the agent: the first message of the conversation.
        #[arg(long)]
        message: String,
        /// A file for the agent: a local path (sent inline, so small) or an https:// link
        /// the agent fetches itself. Repeatable.
        #[arg(long = "file", value_name = "PATH|URL")]
        files: Vec<String>,
        /// Data for the agent: a JSON object, sent as a data part. Repeatable.
        #[arg(long = "data", value_name = "JSON")]
        data: Vec<String>,
        /// Choose the local id (default: a random one); starting twice is idempotent.
        #[arg(long)]
        task_id: Option<String>,
        /// End it after this many seconds (from its first turn): the remote task is
        /// cancelled and the parent told (default: the agent's max_duration, or the
        /// stack's MaxStandInSecs).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        deadline_secs: Option<u64>,
    },
    /// Send the remote agent the parent's next turn (an answer to its question).
    Reply {
        /// The stand-in's id (as `start` printed it).
        id: String,
        /// The parent's answer, sent to the agent as its next message.
        text: String,
        /// A file for the agent, as on `start`. Repeatable.
        #[arg(long = "file", value_name = "PATH|URL")]
        files: Vec<String>,
        /// Data for the agent, as on `start`. Repeatable.
        #[arg(long = "data", value_name = "JSON")]
        data: Vec<String>,
    },
    /// Serve Stand-in's tools to an LLM orchestrator over the Model Context Protocol, on
    /// stdin and stdout (list_agents, delegate, wait, reply, status, cancel, artifacts),
    /// with the caller's AWS credentials. Configure it as the client's command.
    Mcp,
    /// Serve a web console on loopback and open it in the browser: the stand-ins, each
    /// one's conversation and artifacts, reply and cancel, the agents. It reads through the
    /// control API with your AWS credentials; the stack exposes nothing new.
    Console {
        /// Where it listens: a loopback address (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:8787")]
        listen: std::net::SocketAddr,
        /// Print its address without opening a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Cancel the stand-in (and the remote task).
    Cancel {
        /// The stand-in's id.
        id: String,
        /// Why: the final note (CANCELED) carries it (at most 4 KiB).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Show one stand-in: watch mode, remote task, last state and text, execution.
    Status {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Read a stand-in's note log: every note it sent the parent, in order (to catch up
    /// after lost messages). Reads the log, not the queue: nothing is taken off it.
    Notes {
        id: String,
        /// Only the notes after this number.
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// What a stand-in's sub-task produced: its artifacts, or (with --out) each stored
    /// part written to DIR/ARTIFACT_ID/N-NAME, its SHA-256 checked.
    Artifacts {
        id: String,
        #[arg(long)]
        json: bool,
        /// Write each part to a file under this directory.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// List the stand-ins with their state.
    List {
        #[arg(long)]
        json: bool,
    },
    /// The agents stand-ins may be started on: the stack's and the registry's.
    Agents {
        #[command(subcommand)]
        command: AgentsCommand,
    },
    /// Keys for the A2A front's keyed door (/keyed/a2a/{agent}), for parents that cannot
    /// sign with SigV4.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Print each note as it arrives. With ID: that stand-in's notes, read from its note
    /// log (nothing is taken off the queue), until it asks the parent or ends. Without:
    /// every note on the parent queue, taken off it, until interrupted or a limit.
    Events {
        /// A stand-in's id: follow its notes until its question or its final note.
        id: Option<String>,
        /// With ID: only the notes after this number.
        #[arg(long, default_value_t = 0, requires = "id")]
        after: u64,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Stop after this many notes.
        #[arg(long)]
        count: Option<usize>,
        /// Stop after this many seconds without a note.
        #[arg(long)]
        idle_secs: Option<u64>,
    },
}

#[derive(Subcommand)]
enum AgentsCommand {
    /// Add or replace registry agents: FILE (or - for standard input) holds one entry or
    /// an agents document ({"agents": [...]}, at most 100), put whole or not at all. New
    /// stand-ins take them within 30 s.
    Put {
        /// A JSON file with one agent entry or an agents document; - reads standard input.
        file: String,
    },
    /// List every agent, the stack's and the registry's.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one agent's entry (JSON) and whose it is.
    Show { id: String },
    /// Remove a registry agent (running stand-ins keep the entry they started with).
    Remove { id: String },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Issue a key and print it (once: the stack keeps only its digest). The parent sends
    /// it as `Authorization: Bearer KEY` to {control URL}/keyed/a2a/{agent}.
    Create {
        /// What to call it (who holds it, say).
        #[arg(long, default_value = "")]
        name: String,
        /// An agent the key may reach (repeat it for more); none: every agent.
        #[arg(long = "agent")]
        agents: Vec<String>,
        /// The key's id, name and agents too, as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the keys (never a key itself).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: refused from the next request on.
    Revoke {
        /// The key's id, as `standin keys list` shows it.
        id: String,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, whatever a cause spelled over several.
            eprintln!("standin: {}", err.to_string().replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let target = if cli.aws {
        Target::Aws
    } else {
        Target::LocalStack {
            endpoint: cli.endpoint.trim_end_matches('/').to_owned(),
        }
    };
    let config = target.sdk_config().await;
    target.check(&config).await?;
    let stack = StackInfo::load(&target, &config, &cli.stack).await?;
    let control = || ControlClient::new(&target, &config, &stack.control_url);
    match cli.command {
        Command::Start {
            agent,
            message,
            files,
            data,
            task_id,
            deadline_secs,
        } => {
            let given = parts_of(&files, &data)?;
            // The caller's trace, as tools that run commands in a trace hand it on.
            let traceparent = std::env::var("TRACEPARENT").ok();
            let control = control().await?;
            let parts = control.ready(given).await?;
            let started = control
                .start(
                    &agent,
                    &message,
                    parts,
                    task_id.as_deref(),
                    deadline_secs,
                    traceparent.as_deref(),
                )
                .await?;
            println!("{}", started.task_id);
        }
        Command::Reply {
            id,
            text,
            files,
            data,
        } => {
            let given = parts_of(&files, &data)?;
            let control = control().await?;
            let parts = control.ready(given).await?;
            control.reply(&id, &text, parts).await?;
            eprintln!("reply sent to {id}");
        }
        Command::Mcp => {
            standin_mcp::serve_stdio(control().await?)
                .await
                .map_err(CliError::Mcp)?;
        }
        Command::Console { listen, no_open } => {
            standin_cli::console::serve(control().await?, &cli.stack, listen, !no_open).await?;
        }
        Command::Cancel { id, reason } => {
            control().await?.cancel(&id, reason.as_deref()).await?;
            eprintln!("cancel sent to {id}");
        }
        Command::Status { id, json } => {
            let status = control().await?.status(&id).await?;
            if json {
                println!("{}", to_json(&status));
            } else {
                print_status(&status);
            }
        }
        Command::Notes { id, after, json } => {
            for note in control().await?.notes(&id, after).await? {
                if json {
                    println!("{}", to_json(&note));
                } else {
                    println!("{}", human_line(&note));
                }
            }
        }
        Command::Artifacts { id, json, out } => {
            let control = control().await?;
            match out {
                Some(dir) => {
                    for path in standin_cli::artifacts::save(&control, &id, &dir).await? {
                        println!("{}", path.display());
                    }
                }
                None => {
                    let page = control.artifacts(&id).await?;
                    if json {
                        println!("{}", to_json(&page));
                    }
                    for artifact in page.artifacts.iter().filter(|_| !json) {
                        println!("{}", standin_cli::artifacts::human_line(artifact));
                    }
                }
            }
        }
        Command::List { json } => {
            let rows = control().await?.list().await?;
            if json {
                println!("{}", to_json(&rows));
            } else {
                print_list(&rows);
            }
        }
        Command::Agents { command } => agents(control().await?, command).await?,
        Command::Keys { command } => keys(control().await?, command).await?,
        Command::Events {
            id: Some(id),
            after,
            json,
            count,
            idle_secs,
        } => {
            let limits = standin_cli::note_log::Limits {
                count,
                idle: idle_secs.map(std::time::Duration::from_secs),
            };
            let control = control().await?;
            standin_cli::note_log::follow(&control, &id, after, limits, |note| {
                if json {
                    println!("{}", to_json(note));
                } else {
                    println!("{}", human_line(note));
                }
            })
            .await?;
        }
        Command::Events {
            id: None,
            json,
            count,
            idle_secs,
            ..
        } => {
            let mut notes = NoteStream::new(&target, &config, &stack.queue_url);
            let mut seen = 0;
            let mut idle_since = std::time::Instant::now();
            loop {
                if count.is_some_and(|c| seen >= c) {
                    break;
                }
                if idle_secs.is_some_and(|s| idle_since.elapsed().as_secs() >= s) {
                    break;
                }
                let Some(heard) = notes.next(1).await? else {
                    continue;
                };
                seen += 1;
                idle_since = std::time::Instant::now();
                match heard {
                    Heard::Note(note) if json => println!("{}", to_json(&note)),
                    Heard::Note(note) => println!("{}", human_line(&note)),
                    // Not a note: shown as it came, so the parent sees it.
                    Heard::Other(body) if json => println!("{}", to_json(&body)),
                    Heard::Other(body) => println!("{body}"),
                }
            }
        }
    }
    Ok(())
}

async fn agents(control: ControlClient, command: AgentsCommand) -> Result<(), CliError> {
    match command {
        AgentsCommand::Put { file } => {
            let text = if file == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(&file)
            }
            .map_err(|e| CliError::Input {
                path: file.clone(),
                detail: e.to_string(),
            })?;
            let stored = match agents::to_put(&file, &text)? {
                agents::Put::One(entry) => vec![control.put_agent(&entry).await?],
                agents::Put::Document(document) => control.put_agents(&document).await?,
            };
            for agent in stored {
                eprintln!(
                    "agent {} put",
                    agent.agent["id"].as_str().unwrap_or_default()
                );
            }
        }
        AgentsCommand::List { json } => {
            let all = control.agents().await?;
            if json {
                println!("{}", to_json(&all));
            } else {
                print_agents(&all);
            }
        }
        AgentsCommand::Show { id } => println!("{}", to_json(&control.agent(&id).await?)),
        AgentsCommand::Remove { id } => {
            control.remove_agent(&id).await?;
            eprintln!("agent {id} removed");
        }
    }
    Ok(())
}

async fn keys(control: ControlClient, command: KeysCommand) -> Result<(), CliError> {
    match command {
        KeysCommand::Create { name, agents, json } => {
            let issued = control.create_key(&name, &agents).await?;
            if json {
                println!("{}", to_json(&issued));
            } else {
                // The key alone on standard output, so a script can take it as it is.
                println!("{}", issued.key);
                eprintln!(
                    "key {} issued: it is shown only now; send it as Authorization: Bearer …",
                    issued.view.key_id
                );
            }
        }
        KeysCommand::List { json } => {
            let all = control.keys().await?;
            if json {
                println!("{}", to_json(&all));
            } else {
                standin_cli::keys::print_keys(&all);
            }
        }
        KeysCommand::Revoke { id } => {
            control.revoke_key(&id).await?;
            eprintln!("key {id} revoked");
        }
    }
    Ok(())
}

fn print_agents(all: &[AgentView]) {
    if all.is_empty() {
        println!("no agents yet: `standin agents put FILE` adds one");
        return;
    }
    println!(
        "{:<24} {:<9} {:<7} {:<40} NAME",
        "AGENT", "SOURCE", "UPDATES", "URL"
    );
    for view in all {
        let field = |name: &str| view.agent[name].as_str().unwrap_or("-").to_owned();
        // What the agent's card calls it, or that it did not read.
        let name = match &view.card {
            Some(card) if card.error.is_some() => "(card unreadable)".to_owned(),
            Some(card) if !card.name.is_empty() => card.name.clone(),
            _ => "-".to_owned(),
        };
        println!(
            "{:<24} {:<9} {:<7} {:<40} {name}",
            field("id"),
            view.source,
            field("updates"),
            field("url")
        );
    }
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn or_dash(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "-".into(), |v| v.to_string())
}

fn watch_name(watch: Option<WatchMode>) -> &'static str {
    match watch {
        Some(WatchMode::Push) => "push",
        Some(WatchMode::Follow) => "follow",
        Some(WatchMode::Poll) => "poll",
        Some(WatchMode::Off) => "off",
        None => "-",
    }
}

fn short_state(row: &Summary) -> String {
    row.state
        .map_or("-", |s| events::short_state(s.as_str()))
        .to_owned()
}

fn yes_no(closed: bool) -> &'static str {
    if closed { "yes" } else { "no" }
}

fn print_status(status: &StandInStatus) {
    let row = &status.summary;
    println!("stand-in   {}", row.task_id);
    println!("agent      {}", row.agent);
    println!("watch      {}", watch_line(row));
    println!("remote     {}", or_dash(row.remote_task_id.as_ref()));
    println!("state      {}", short_state(row));
    println!("text       {}", or_dash(row.text.as_ref()));
    println!("closed     {}", yes_no(row.closed));
    println!("notes      {}", row.seq);
    println!("started    {}", or_dash(row.created_at.as_ref()));
    println!("execution  {}", execution_line(status));
}

/// The watch, or why there is none yet.
fn watch_line(row: &Summary) -> String {
    match (row.watch, row.closed) {
        (Some(_), _) => watch_name(row.watch).to_owned(),
        (None, true) => "- (none: it ended before its first wait)".to_owned(),
        (None, false) => "- (chosen after the first turn)".to_owned(),
    }
}

/// The execution's own status is the stand-in's run, not the task's outcome: a stand-in
/// that told its parent FAILED ran to its end, and its execution SUCCEEDED.
fn execution_line(status: &StandInStatus) -> String {
    match status.execution_status.as_deref() {
        Some("SUCCEEDED") => format!(
            "{} (SUCCEEDED: the stand-in ran to its end; the task's outcome is its state)",
            status.execution_arn
        ),
        Some(state) => format!("{} ({state})", status.execution_arn),
        None => format!("{} (Step Functions did not answer)", status.execution_arn),
    }
}

fn print_list(rows: &[Summary]) {
    if rows.is_empty() {
        println!("no stand-ins yet: `standin start --agent ID --message TEXT` starts one");
        return;
    }
    println!(
        "{:<28} {:<14} {:<7} {:<15} {:<6} STARTED",
        "STAND-IN", "AGENT", "WATCH", "STATE", "CLOSED"
    );
    for row in rows {
        println!(
            "{:<28} {:<14} {:<7} {:<15} {:<6} {}",
            row.task_id,
            row.agent,
            watch_name(row.watch),
            short_state(row),
            yes_no(row.closed),
            or_dash(row.created_at.as_ref()),
        );
    }
}

#[cfg(test)]
mod tests {
    use standin_wire::{PendingView, TaskState};

    use super::*;

    fn ended_failed(execution_status: Option<&str>) -> StandInStatus {
        StandInStatus {
            summary: Summary {
                task_id: "t".into(),
                agent: "a".into(),
                remote_task_id: None,
                watch: None,
                state: Some(TaskState::Failed),
                text: Some("agent unavailable".into()),
                closed: true,
                seq: 1,
                created_at: None,
                last_note_at: None,
                context_id: None,
            },
            execution_arn: "arn:x".into(),
            execution_status: execution_status.map(str::to_owned),
            parked: false,
            pending: PendingView {
                cancel: false,
                replies: 0,
                push: false,
            },
            replies_taken: Vec::new(),
        }
    }

    #[test]
    fn a_failed_stand_ins_status_does_not_read_as_a_success() {
        let status = ended_failed(Some("SUCCEEDED"));
        let line = execution_line(&status);
        assert!(line.contains("the task's outcome is its state"), "{line}");
        assert!(watch_line(&status.summary).contains("ended before its first wait"));
        assert_eq!(
            execution_line(&ended_failed(Some("RUNNING"))),
            "arn:x (RUNNING)"
        );
        assert!(execution_line(&ended_failed(None)).contains("did not answer"));
    }
}
