//! `make soak`: drives hundreds of stand-ins against misbehaving agents on a deployed
//! stack, with a fault profile between the functions and AWS, and judges every one.
//! Run by `scripts/soak`, which starts LocalStack, the fault proxy and the stack first.

use std::path::PathBuf;
use std::time::Duration;

use standin_integration::soak::{Options, Soak};

const USAGE: &str = "usage: soak [--stack NAME] [--standins N] [--concurrency N] [--minutes M]
            [--gap-ms LOW-HIGH] [--starts-per-sec R] [--stack-params TEXT] [--seed S] [--profile FILE]
            [--kill-follow-every SECS] [--patience SECS] [--only I,J,…] [--out DIR]
  --standins N            stand-ins in all (default 100)
  --concurrency N         at most this many at once (default 100)
  --minutes M             no new stand-in starts after M minutes (default: all start)
  --gap-ms LOW-HIGH       pause before each change an agent makes (default 2000-12000)
  --starts-per-sec R      start at most R stand-ins a second (default: all at once)
  --stack-params TEXT     the test stack's changed parameters, as deployed (for the report)
  --seed S                names the run: the same seed, the same plans (default 1)
  --profile FILE          fault profile for the fault proxy (default: none)
  --kill-follow-every S   kill a follow process every S seconds (0: never; default 60)
  --patience SECS         how long a change may take to be heard (default 300)
  --only I,J,…            only the stand-ins of these indices, with the plans they have
                          in the whole run of the same --seed and --gap-ms (a failed
                          stand-in's id ends in its index)
  --out DIR               where soak-report.json and soak-latency.svg go (default soak-out)";

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: {v:?} is not a whole number"))
        };
        match flag.as_str() {
            "--stack" => o.stack = value.clone(),
            "--standins" => o.standins = number(value)? as usize,
            "--concurrency" => o.concurrency = number(value)?.max(1) as usize,
            "--minutes" => {
                let m: f64 = value
                    .parse()
                    .map_err(|_| format!("--minutes: {value:?} is not a number"))?;
                o.duration = Some(Duration::from_secs_f64((m * 60.0).max(0.0)));
            }
            "--gap-ms" => {
                let (low, high) = value
                    .split_once('-')
                    .ok_or_else(|| format!("--gap-ms: {value:?} is not LOW-HIGH"))?;
                let (low, high) = (number(low)?, number(high)?);
                if low > high {
                    return Err(format!("--gap-ms: {low} is more than {high}"));
                }
                o.gap = (Duration::from_millis(low), Duration::from_millis(high));
            }
            "--starts-per-sec" => {
                let rate: f64 = value
                    .parse()
                    .map_err(|_| format!("--starts-per-sec: {value:?} is not a number"))?;
                if !(rate > 0.0 && rate.is_finite()) {
                    return Err(format!("--starts-per-sec: {value} is not above 0"));
                }
                o.starts_per_sec = Some(rate);
            }
            "--stack-params" => o.stack_params = Some(value.clone()),
            "--seed" => o.seed = number(value)?,
            "--profile" => {
                let path = PathBuf::from(value);
                if !path.is_file() {
                    return Err(format!("--profile: no such file {value}"));
                }
                o.profile = Some(path);
            }
            "--kill-follow-every" => {
                let s = number(value)?;
                o.kill_follow_every = (s > 0).then(|| Duration::from_secs(s));
            }
            "--patience" => o.patience = Duration::from_secs(number(value)?),
            "--out" => o.out = PathBuf::from(value),
            "--only" => {
                let indices = value
                    .split(',')
                    .map(|i| {
                        i.trim()
                            .parse::<usize>()
                            .map_err(|_| format!("--only: {i:?} is not an index"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                o.only = Some(indices);
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if let Some(only) = &o.only {
        let mut seen = std::collections::HashSet::new();
        for &index in only {
            if index >= o.standins {
                return Err(format!(
                    "--only: {index} is not below --standins ({})",
                    o.standins
                ));
            }
            if !seen.insert(index) {
                return Err(format!("--only: {index} is named twice"));
            }
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("soak: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(if e.is_empty() { 0 } else { 2 });
        }
    };
    let out = options.out.clone();
    let report = match Soak::prepare(options).await {
        Ok(soak) => soak.run().await,
        Err(e) => Err(e),
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(1);
        }
    };
    let written = std::fs::create_dir_all(&out)
        .and_then(|()| {
            let json = serde_json::to_string_pretty(&report.json).unwrap_or_default();
            std::fs::write(out.join("soak-report.json"), json)
        })
        .and_then(|()| std::fs::write(out.join("soak-latency.svg"), &report.svg));
    if let Err(e) = written {
        eprintln!("soak: writing the report to {}: {e}", out.display());
        std::process::exit(1);
    }
    print!("{}", report.summary());
    println!(
        "report: {}/soak-report.json, picture: {}/soak-latency.svg",
        out.display(),
        out.display()
    );
    std::process::exit(if report.passed() { 0 } else { 1 });
}
