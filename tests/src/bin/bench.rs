//! `make bench`: heard latency of push and follow against the floor stack, the cost of a
//! heard change and of an idle hour, cold starts against Python, the push receiver's CPU
//! against its floor. Run by `scripts/bench`, which deploys both stacks and runs the
//! receiver's criterion benchmark first.

use std::path::PathBuf;

use standin_integration::bench::{self, Options};

const USAGE: &str =
    "usage: bench --binaries DIR --python PATH --criterion DIR --localstack-log FILE
             [--stack NAME] [--floor-stack NAME] [--changes N] [--cold-runs N] [--out DIR]
             [--cold-only FILE | --cold-from FILE]
       bench --reprice FILE
  --changes N     WORKING changes heard per watch, one final per five (default 50)
  --cold-runs N   starts per function for the cold-start medians (default 20)
  --out DIR       where results.json and latency.svg go (default bench)
  --cold-only FILE  measure only the cold starts and write them to FILE (run it
                  before LocalStack starts: a busy machine starts processes slower)
  --cold-from FILE  take the cold starts from FILE instead of measuring them
  --reprice FILE  compute FILE's idle hours, fleet and prices again from its measured
                  watches (the model or a price changed since it ran), measuring nothing";

/// The options, and the file of `--cold-only` when only cold starts are wanted.
fn parse(args: &[String]) -> Result<(Options, Option<PathBuf>), String> {
    let mut cold_only = None;
    let mut o = Options {
        stack: "standin".into(),
        floor_stack: "standin-floor".into(),
        changes: 50,
        cold_runs: 20,
        cold_from: None,
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
            "--cold-from" => o.cold_from = Some(PathBuf::from(value)),
            "--cold-only" => cold_only = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let mut needed = vec![("--binaries", &o.binaries), ("--python", &o.python)];
    if cold_only.is_none() {
        needed.push(("--localstack-log", &o.localstack_log));
    }
    for (flag, path) in needed {
        if path.as_os_str().is_empty() || !path.exists() {
            return Err(format!(
                "{flag}: {:?} does not exist",
                path.display().to_string()
            ));
        }
    }
    Ok((o, cold_only))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file] = args.as_slice()
        && flag == "--reprice"
    {
        return reprice(&PathBuf::from(file));
    }
    let (options, cold_only) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(file) = cold_only {
        let written = match bench::cold_starts(&options).await {
            Ok(cold) => std::fs::write(&file, cold.to_string()).map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        return match written {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench: {}: {e}", file.display());
                std::process::ExitCode::FAILURE
            }
        };
    }
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

/// Prices a results file again in place.
fn reprice(file: &std::path::Path) -> std::process::ExitCode {
    let priced = std::fs::read_to_string(file)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}")))
        .and_then(|mut results: serde_json::Value| {
            if !results["watches"].is_object() {
                return Err("no measured watches in it".to_owned());
            }
            bench::price(&mut results);
            let json = serde_json::to_string_pretty(&results).unwrap_or_default();
            std::fs::write(file, json + "\n").map_err(|e| e.to_string())
        });
    match priced {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench --reprice: {}: {e}", file.display());
            std::process::ExitCode::FAILURE
        }
    }
}
