//! `standin`: drive the stand-ins of a deployed stack (LocalStack by default).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::Value;
use standin_cli::events::{self, human_line};
use standin_cli::target::DEFAULT_ENDPOINT;
use standin_cli::{CliError, ControlClient, NoteStream, StackInfo, Target};

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
        /// The agent's id in the stack's Agents parameter.
        #[arg(long)]
        agent: String,
        #[arg(long)]
        message: String,
        /// Choose the local id (default: a random one); starting twice is idempotent.
        #[arg(long)]
        task_id: Option<String>,
    },
    /// Send the remote agent the parent's next turn.
    Reply { id: String, text: String },
    /// Cancel the stand-in (and the remote task).
    Cancel {
        id: String,
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
    /// List the stand-ins with their state.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Follow the parent queue and print each note as it arrives (and take it off the queue).
    Events {
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
            task_id,
        } => {
            let (id, _) = control()
                .await?
                .start(&agent, &message, task_id.as_deref())
                .await?;
            println!("{id}");
        }
        Command::Reply { id, text } => {
            control().await?.reply(&id, &text).await?;
            eprintln!("reply sent to {id}");
        }
        Command::Cancel { id, reason } => {
            control().await?.cancel(&id, reason.as_deref()).await?;
            eprintln!("cancel sent to {id}");
        }
        Command::Status { id, json } => {
            let row = control().await?.status(&id).await?;
            if json {
                println!("{row}");
            } else {
                print_status(&row);
            }
        }
        Command::Notes { id, after, json } => {
            for note in control().await?.notes(&id, after).await? {
                if json {
                    println!("{note}");
                } else {
                    println!("{}", human_line(&note));
                }
            }
        }
        Command::List { json } => {
            let rows = control().await?.list().await?;
            if json {
                println!("{}", Value::Array(rows));
            } else {
                print_list(&rows);
            }
        }
        Command::Events {
            json,
            count,
            idle_secs,
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
                let Some(note) = notes.next(1).await? else {
                    continue;
                };
                seen += 1;
                idle_since = std::time::Instant::now();
                if json {
                    println!("{note}");
                } else {
                    println!("{}", human_line(&note));
                }
            }
        }
    }
    Ok(())
}

fn field(row: &Value, key: &str) -> String {
    match &row[key] {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn short_state(row: &Value) -> String {
    events::short_state(&field(row, "state")).to_owned()
}

fn print_status(row: &Value) {
    let closed = if row["closed"].as_bool() == Some(true) {
        "yes"
    } else {
        "no"
    };
    println!("stand-in   {}", field(row, "task_id"));
    println!("agent      {}", field(row, "agent"));
    println!("watch      {}", field(row, "watch"));
    println!("remote     {}", field(row, "remote_task_id"));
    println!("state      {}", short_state(row));
    println!("text       {}", field(row, "text"));
    println!("closed     {closed}");
    println!("notes      {}", field(row, "seq"));
    println!("started    {}", field(row, "created_at"));
    match row["execution_status"].as_str() {
        Some(status) => println!("execution  {} ({status})", field(row, "execution_arn")),
        None => println!("execution  {}", field(row, "execution_arn")),
    }
}

fn print_list(rows: &[Value]) {
    if rows.is_empty() {
        println!("no stand-ins yet: `standin start --agent ID --message TEXT` starts one");
        return;
    }
    println!(
        "{:<28} {:<14} {:<7} {:<15} {:<6} STARTED",
        "STAND-IN", "AGENT", "WATCH", "STATE", "CLOSED"
    );
    for row in rows {
        let closed = if row["closed"].as_bool() == Some(true) {
            "yes"
        } else {
            "no"
        };
        println!(
            "{:<28} {:<14} {:<7} {:<15} {:<6} {}",
            field(row, "task_id"),
            field(row, "agent"),
            field(row, "watch"),
            short_state(row),
            closed,
            field(row, "created_at"),
        );
    }
}
