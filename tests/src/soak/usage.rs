//! What each part of the soak's machine used: resident memory at its peak and CPU-seconds,
//! per component (LocalStack, DynamoDB Local, the stack's functions, the fault proxy, the
//! soak itself with its in-process agents), read from /proc every two seconds, so that
//! "LocalStack is the limit" is a measurement.
//!
//! CPU is summed per process over its life as last seen: a process that ends between two
//! samples loses at most its last two seconds, and one born and gone between two samples
//! is missed (the functions' processes live as long as LocalStack keeps them warm). A
//! process that was running before the soak counts only what it used after it was first
//! seen.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The parts of the machine the soak tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    LocalStack,
    DynamoDbLocal,
    Functions,
    FaultProxy,
    /// The soak's driver and its agents (they run in the soak's own process).
    SoakAndAgents,
}

impl Component {
    pub const ALL: [Component; 5] = [
        Component::LocalStack,
        Component::DynamoDbLocal,
        Component::Functions,
        Component::FaultProxy,
        Component::SoakAndAgents,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Component::LocalStack => "localstack",
            Component::DynamoDbLocal => "dynamodb_local",
            Component::Functions => "functions",
            Component::FaultProxy => "fault_proxy",
            Component::SoakAndAgents => "soak_and_agents",
        }
    }
}

/// What the sampler saw over the run.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    /// LocalStack's own processes, DynamoDB Local's JVM included.
    pub localstack_peak_mib: f64,
    pub functions_peak_mib: f64,
    pub function_process_peak_mib: f64,
    pub function_processes_peak: usize,
    pub cpu_seconds: HashMap<Component, f64>,
    /// Every core's busy time over the run (all processes, ours or not).
    pub machine_busy_seconds: f64,
    pub wall_seconds: f64,
    /// The cores /proc/stat counts, the same ones its busy time covers.
    pub cores: usize,
}

impl Usage {
    /// The share of the machine's cores the run kept busy (0..=1).
    pub fn machine_busy_share(&self) -> f64 {
        let capacity = self.wall_seconds * self.cores.max(1) as f64;
        if capacity <= 0.0 {
            0.0
        } else {
            self.machine_busy_seconds / capacity
        }
    }
}

/// Which component a process belongs to, if any. The stack's functions are named
/// `<stack>-<LogicalId>-<suffix>`, and logical ids start with a capital: `standin-smoke-…`
/// is another stack's.
pub fn classify(environ: &[u8], cmdline: &[u8], stack: &str, own: bool) -> Option<Component> {
    if own {
        return Some(Component::SoakAndAgents);
    }
    let function = format!("AWS_LAMBDA_FUNCTION_NAME={stack}-");
    let mut is_function = false;
    let mut is_localstack = false;
    for kv in environ.split(|b| *b == 0) {
        is_function |= kv.starts_with(function.as_bytes())
            && kv.get(function.len()).is_some_and(u8::is_ascii_uppercase);
        is_localstack |= kv.starts_with(b"STANDIN_LS_RUN=");
    }
    let mentions = |needle: &[u8]| cmdline.windows(needle.len()).any(|w| w == needle);
    let runs_fault_proxy = cmdline
        .split(|b| *b == 0)
        .any(|arg| arg == b"fault_proxy.py" || arg.ends_with(b"/fault_proxy.py"));
    if is_function {
        Some(Component::Functions)
    } else if runs_fault_proxy {
        Some(Component::FaultProxy)
    } else if is_localstack && mentions(b"DynamoDBLocal") {
        Some(Component::DynamoDbLocal)
    } else if is_localstack {
        Some(Component::LocalStack)
    } else {
        None
    }
}

/// (start time, CPU ticks used so far) from a /proc/<pid>/stat line; the start time
/// tells a reused pid from the process that had it before.
pub fn stat_ticks(stat: &str) -> Option<(u64, u64)> {
    // The command name (field 2) may hold spaces and parentheses: fields count from the
    // last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let start: u64 = fields.get(19)?.parse().ok()?;
    Some((start, utime + stime))
}

/// The cores /proc/stat counts (its `cpuN` lines).
pub fn machine_cores(proc_stat: &str) -> usize {
    proc_stat
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

/// Busy ticks of every core from /proc/stat's first line (all but idle and iowait).
pub fn machine_busy_ticks(proc_stat: &str) -> Option<u64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    let busy = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|i| ticks.get(*i))
        .sum();
    Some(busy)
}

fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| t.trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

fn rss_mib(status: &str) -> f64 {
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The running total: each process's ticks as last seen, and what it had when first seen
/// if it was already running when the sampler started (it counts only what it used
/// since).
#[derive(Default)]
struct Ledger {
    /// The sampler's start, in ticks since boot (a process's start time's unit).
    began: u64,
    seen: HashMap<(u32, u64), (Component, u64, u64)>,
}

impl Ledger {
    fn record(&mut self, pid: u32, start: u64, component: Component, ticks: u64) {
        let before_us = start < self.began;
        let entry = self.seen.entry((pid, start)).or_insert((
            component,
            if before_us { ticks } else { 0 },
            ticks,
        ));
        entry.2 = entry.2.max(ticks);
    }

    fn seconds(&self, per_second: f64) -> HashMap<Component, f64> {
        let mut out: HashMap<Component, f64> = Component::ALL.iter().map(|c| (*c, 0.0)).collect();
        for (component, at_start, last) in self.seen.values() {
            *out.entry(*component).or_default() +=
                last.saturating_sub(*at_start) as f64 / per_second;
        }
        out
    }
}

pub struct Sampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Usage>,
}

/// Seconds since boot, from /proc/uptime.
fn uptime_seconds() -> Option<f64> {
    std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Sampler {
    pub fn start(stack: String) -> Self {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let per_second = clock_ticks_per_second();
            let own = std::process::id();
            let began = Instant::now();
            let proc_stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
            let busy_at_start = machine_busy_ticks(&proc_stat);
            let mut usage = Usage {
                cores: machine_cores(&proc_stat).max(1),
                ..Usage::default()
            };
            let mut ledger = Ledger {
                began: uptime_seconds().map_or(0, |s| (s * per_second) as u64),
                ..Ledger::default()
            };
            loop {
                // Reading /proc is blocking work: off the runtime's workers.
                let scanning = stack.clone();
                let scanned = tokio::task::spawn_blocking(move || {
                    sample(&scanning, own, &mut ledger, &mut usage);
                    (ledger, usage)
                })
                .await;
                let Ok(scanned) = scanned else {
                    return Usage::default();
                };
                (ledger, usage) = scanned;
                let stop_now = tokio::select! {
                    _ = &mut stopped => true,
                    () = tokio::time::sleep(Duration::from_secs(2)) => false,
                };
                if stop_now {
                    sample(&stack, own, &mut ledger, &mut usage);
                    usage.cpu_seconds = ledger.seconds(per_second);
                    usage.wall_seconds = began.elapsed().as_secs_f64();
                    usage.machine_busy_seconds = read_machine_busy()
                        .zip(busy_at_start)
                        .map_or(0.0, |(now, then)| {
                            now.saturating_sub(then) as f64 / per_second
                        });
                    return usage;
                }
            }
        });
        Self { stop, task }
    }

    pub async fn stop(self) -> Usage {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

fn read_machine_busy() -> Option<u64> {
    machine_busy_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn sample(stack: &str, own: u32, ledger: &mut Ledger, usage: &mut Usage) {
    let (mut localstack, mut functions, mut count) = (0.0, 0.0, 0usize);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let Some(component) = classify(&environ, &cmdline, stack, pid == own) else {
            continue;
        };
        if let Some((start, ticks)) = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .as_deref()
            .and_then(stat_ticks)
        {
            ledger.record(pid, start, component, ticks);
        }
        let rss = std::fs::read_to_string(entry.path().join("status")).map_or(0.0, |s| rss_mib(&s));
        match component {
            Component::Functions => {
                functions += rss;
                count += 1;
                usage.function_process_peak_mib = usage.function_process_peak_mib.max(rss);
            }
            Component::LocalStack | Component::DynamoDbLocal => localstack += rss,
            Component::FaultProxy | Component::SoakAndAgents => {}
        }
    }
    usage.localstack_peak_mib = usage.localstack_peak_mib.max(localstack);
    usage.functions_peak_mib = usage.functions_peak_mib.max(functions);
    usage.function_processes_peak = usage.function_processes_peak.max(count);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_of_the_stack_is_told_from_another_stacks_and_from_localstack() {
        let env = |s: &str| s.replace(' ', "\0").into_bytes();
        let java = b"java\0-jar\0DynamoDBLocal.jar".to_vec();
        let ours = env("STANDIN_LS_RUN=1 AWS_LAMBDA_FUNCTION_NAME=standin-FollowFunction-x");
        // LocalStack hands its functions only the variables Lambda sets, not its own.
        let theirs = env("AWS_LAMBDA_FUNCTION_NAME=standin-smoke-Follow-x");
        let ls = env("STANDIN_LS_RUN=1 HOME=/h");
        assert_eq!(
            classify(&ours, b"bootstrap", "standin", false),
            Some(Component::Functions)
        );
        assert_eq!(classify(&theirs, b"bootstrap", "standin", false), None);
        assert_eq!(
            classify(&ls, &java, "standin", false),
            Some(Component::DynamoDbLocal)
        );
        assert_eq!(
            classify(&ls, b"python\0-m\0localstack", "standin", false),
            Some(Component::LocalStack)
        );
        assert_eq!(
            classify(&env("HOME=/h"), b"python\0fault_proxy.py", "standin", false),
            Some(Component::FaultProxy)
        );
        assert_eq!(
            classify(
                &env("HOME=/h"),
                b"python\0/w/localstack/fault_proxy.py",
                "standin",
                false
            ),
            Some(Component::FaultProxy)
        );
        assert_eq!(
            classify(
                &env("HOME=/h"),
                b"pytest\0test_fault_proxy.py",
                "standin",
                false
            ),
            None
        );
        assert_eq!(classify(&env("HOME=/h"), b"bash", "standin", false), None);
        assert_eq!(
            classify(&env("HOME=/h"), b"soak", "standin", true),
            Some(Component::SoakAndAgents)
        );
    }

    #[test]
    fn a_stat_line_gives_its_start_and_ticks_even_with_a_parenthesis_in_its_name() {
        let stat = "4242 (we (ird) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 9 0 123456 0 0";
        assert_eq!(stat_ticks(stat), Some((123_456, 300)));
        assert_eq!(stat_ticks("garbage"), None);
    }

    #[test]
    fn the_machine_busy_time_leaves_out_idle_and_iowait_over_the_cores_it_counts() {
        let proc_stat = "cpu  100 10 50 1000 70 5 5 2 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\ncpu1 1 1 1 1 1 1 1 1 0 0\nintr 5\n";
        assert_eq!(machine_busy_ticks(proc_stat), Some(172));
        assert_eq!(machine_cores(proc_stat), 2);
    }

    #[test]
    fn a_process_older_than_the_sampler_counts_only_what_it_used_after_it_was_seen() {
        let mut ledger = Ledger {
            began: 5,
            ..Ledger::default()
        };
        // Started before the sampler (at tick 1), first seen with 1,000 ticks used.
        ledger.record(7, 1, Component::LocalStack, 1_000);
        ledger.record(7, 1, Component::LocalStack, 1_250);
        // Started after it: all it used counts.
        ledger.record(8, 6, Component::Functions, 40);
        ledger.record(8, 6, Component::Functions, 90);
        // pid 7 reused by a new process: its own count from zero.
        ledger.record(7, 9, Component::Functions, 10);
        let seconds = ledger.seconds(100.0);
        assert_eq!(seconds[&Component::LocalStack], 2.5);
        assert_eq!(seconds[&Component::Functions], 1.0);
        assert_eq!(seconds[&Component::FaultProxy], 0.0);
    }
}
