//! `make bench`: heard latency of push and follow against the floor stack, the cost of a
//! heard change and of an idle hour, cold starts against Python, the push receiver's CPU
//! against its floor. Run by `scripts/bench`, which deploys both stacks and runs the
//! receiver's criterion benchmark first.

use std::path::PathBuf;

use standin_integration::bench::{self, Options};

const USAGE: &str =
    "usage: bench --binaries DIR --python PATH --criterion DIR --localstack-log FILE
             [--stack NAME] [--floor-stack NAME] [--changes N] [--cold-runs N] [--out DIR]
  --changes N     WORKING changes heard per watch, one final per five (default 50)
  --cold-runs N   starts per function for the cold-start medians (default 20)
  --out DIR       where results.json and latency.svg go (default bench)";

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        stack: "standin".into(),
        floor_stack: "standin-floor".into(),
        changes: 50,
        cold_runs: 20,
        binaries: PathBuf::new(),
        python: PathBuf::new(),
        criterion: PathBuf::new(),
        localstack_log: PathBuf::new(),
        out: PathBuf::from("bench"),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag}: {v:?} is not a whole number above 0"))
        };
        match flag.as_str() {
            "--stack" => o.stack = value.clone(),
            "--floor-stack" => o.floor_stack = value.clone(),
            "--changes" => o.changes = number(value)?,
            "--cold-runs" => o.cold_runs = number(value)?,
            "--binaries" => o.binaries = PathBuf::from(value),
            "--python" => o.python = PathBuf::from(value),
            "--criterion" => o.criterion = PathBuf::from(value),
            "--localstack-log" => o.localstack_log = PathBuf::from(value),
            "--out" => o.out = PathBuf::from(value),
            other => return Err(format!("unknown option {other}")),
        }
    }
    for (flag, path) in [
        ("--binaries", &o.binaries),
        ("--python", &o.python),
        ("--localstack-log", &o.localstack_log),
    ] {
        if path.as_os_str().is_empty() || !path.exists() {
            return Err(format!(
                "{flag}: {:?} does not exist",
                path.display().to_string()
            ));
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let results = match bench::run(&options).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let written = std::fs::create_dir_all(&options.out)
        .and_then(|()| {
            let json = serde_json::to_string_pretty(&results.json).unwrap_or_default();
            std::fs::write(options.out.join("results.json"), json + "\n")
        })
        .and_then(|()| std::fs::write(options.out.join("latency.svg"), &results.svg));
    if let Err(e) = written {
        eprintln!("bench: {}: {e}", options.out.display());
        return std::process::ExitCode::FAILURE;
    }
    println!("{}", results.table);
    println!(
        "results: {}/results.json, picture: {}/latency.svg",
        options.out.display(),
        options.out.display()
    );
    std::process::ExitCode::SUCCESS
}
