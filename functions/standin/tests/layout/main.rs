//! The house's rules, checked on the workspace's own files (docs/architecture.md shows
//! them): only the remote crate knows A2A, each crate depends only on the crates its
//! layer may, no file is longer than a reader holds in mind, and no files import each
//! other (`imports.rs`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

mod imports;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, build output left out.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The code of a Rust file without its comments and string literals, so a word in a doc
/// comment or a protocol method's name in a string does not count as a use.
fn code_of(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A char literal ('"', '\'') is not a string's start; a lifetime is kept.
            '\'' => {
                let mut ahead = chars.clone();
                let literal = match ahead.next() {
                    Some('\\') => ahead.nth(1) == Some('\''),
                    Some(_) => ahead.next() == Some('\''),
                    None => false,
                };
                if literal {
                    let skip = if chars.peek() == Some(&'\\') { 3 } else { 2 };
                    for _ in 0..skip {
                        chars.next();
                    }
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            // A raw string, r#"…"#: its quotes do not end it.
            'r' if chars.peek() == Some(&'#') => {
                chars.next();
                if chars.peek() != Some(&'"') {
                    out.push_str("r#");
                    continue;
                }
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '"' && c == '#' {
                        break;
                    }
                    last = c;
                }
                out.push_str("\"\"");
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            c => out.push(c),
        }
    }
    out
}

fn words(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The wire types only A2A has (the generic names, `Task` or `Message`, are common words
/// elsewhere and are caught by the path rule instead).
const A2A_TYPES: [&str; 10] = [
    "StreamResponse",
    "TaskStatusUpdateEvent",
    "TaskArtifactUpdateEvent",
    "SendMessageResult",
    "TaskPushNotificationConfig",
    "AuthenticationInfo",
    "AgentInterface",
    "AgentExtension",
    "AgentCapabilities",
    "AgentCard",
];

#[test]
fn no_code_outside_the_remote_crate_names_an_a2a_type() {
    let root = root();
    let mut files = vec![];
    rust_files(&root, &mut files);
    let remote = root.join("remote");
    let mut offenders = vec![];
    let mut checked = 0;
    for file in files.iter().filter(|f| !f.starts_with(&remote)) {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        checked += 1;
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        if code.contains("a2a::") {
            offenders.push(format!("{shown}: a path into an a2a module"));
        }
        let used = words(&code);
        for name in A2A_TYPES.iter().filter(|n| used.contains(**n)) {
            offenders.push(format!("{shown}: {name}"));
        }
    }
    assert!(
        checked > 50,
        "the walk found the workspace ({checked} files)"
    );
    assert!(
        offenders.is_empty(),
        "A2A outside the remote crate: {offenders:#?}"
    );
}

#[test]
fn the_remote_crate_keeps_its_a2a_module_private() {
    let lib = code_of(&std::fs::read_to_string(root().join("remote/src/lib.rs")).unwrap());
    assert!(lib.contains("\nmod a2a;"), "a2a is declared private");
    assert!(!lib.contains("pub mod a2a"), "a2a is not public");
    let reexports: Vec<&str> = lib
        .lines()
        .filter(|l| l.trim_start().starts_with("pub use a2a::"))
        .collect();
    assert_eq!(
        reexports,
        ["pub use a2a::client::{AgentClient, Timeouts};"],
        "only the client (behind the port) leaves the A2A module"
    );
}

#[test]
fn the_rule_catches_what_it_is_for() {
    let sample = "use standin_remote::a2a::types::StreamResponse;\n// StreamResponse in a comment\nlet m = \"TaskPushNotificationConfig\";";
    let code = code_of(sample);
    assert!(code.contains("a2a::"));
    let used = words(&code);
    assert!(used.contains("StreamResponse"), "the use is seen");
    assert!(
        !used.contains("TaskPushNotificationConfig"),
        "a string is not a use"
    );
    let raw = code_of("let body = r#\"{\"error\":\"not an A2A StreamResponse\"}\"#; let x = 1;");
    assert!(!words(&raw).contains("StreamResponse"), "{raw}");
    assert!(
        words(&raw).contains("x"),
        "code after a raw string is read: {raw}"
    );
    let quote = code_of("if c == '\"' { AgentCard }");
    assert!(
        words(&quote).contains("AgentCard"),
        "a char literal opens no string: {quote}"
    );
    let comment_only = code_of("// AgentCard\n");
    assert!(!words(&comment_only).contains("AgentCard"));
}

/// The path dependencies of each crate of the workspace, by manifest.
fn path_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let root = root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members: Vec<String> = manifest
        .split("members = [")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap()
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect();
    let mut graph = BTreeMap::new();
    for member in members {
        let text = std::fs::read_to_string(root.join(&member).join("Cargo.toml")).unwrap();
        let deps = text
            .lines()
            .filter(|l| l.contains("path = \"..") || l.contains("path = \"../"))
            .filter_map(|l| l.split('=').next())
            .map(|name| name.trim().to_owned())
            .collect();
        graph.insert(member, deps);
    }
    graph
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let graph = path_dependencies();
    assert!(graph.len() >= 10, "{graph:?}");
    for (member, deps) in &graph {
        let allowed: &[&str] = match member.as_str() {
            "wire" | "bench/floor" | "localstack/smoke/functions" => &[],
            "remote" | "scripted-agent" | "mcp" => &["standin-wire"],
            "functions/standin" => &["standin-wire", "standin-remote"],
            "control-plane" => &["standin", "standin-wire", "standin-remote", "standin-mcp"],
            "functions/control" => &["standin-control-plane"],
            m if m.starts_with("functions/") => &["standin"],
            "cli" => &["standin-wire", "standin-mcp", "standin-scripted-agent"],
            "tests" => &[
                "standin-wire",
                "standin-scripted-agent",
                "standin",
                "standin-control-plane",
            ],
            other => panic!("{other} has no layer in this test: give it one"),
        };
        let extra: Vec<&String> = deps
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{member} depends on {extra:?}; its layer allows {allowed:?}"
        );
    }
}

/// A source file is one a reader can hold in mind: at most this many lines. Test code
/// (the integration crate `tests/`, each crate's `tests/`, a module's `tests.rs`) is
/// split by rule at 1,000.
const MAX_SOURCE_LINES: usize = 700;
const MAX_TEST_LINES: usize = 1000;

#[test]
fn no_file_is_longer_than_a_reader_holds_in_mind() {
    let root = root();
    let mut files = Vec::new();
    for member in path_dependencies().keys() {
        rust_files(&root.join(member), &mut files);
    }
    assert!(files.len() > 100, "{} files", files.len());
    let mut long = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap_or(file);
        let is_test = relative.components().any(|c| c.as_os_str() == "tests")
            || relative.file_name().is_some_and(|n| n == "tests.rs");
        let most = if is_test {
            MAX_TEST_LINES
        } else {
            MAX_SOURCE_LINES
        };
        let lines = std::fs::read_to_string(file).unwrap().lines().count();
        if lines > most {
            long.push(format!(
                "{} ({lines} lines, at most {most})",
                relative.display()
            ));
        }
    }
    assert!(long.is_empty(), "split these by what they do: {long:?}");
}
