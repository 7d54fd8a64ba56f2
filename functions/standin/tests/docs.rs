//! The README is the front door and stays one: under 300 lines, and every link in it and
//! in `docs/` leads somewhere (a file of the repository, a heading of that file).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    docs
}

/// The targets of `[text](target)` links, fenced code left out.
fn links(markdown: &str) -> Vec<String> {
    let mut out = vec![];
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    markdown
        .lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            !fenced && line.starts_with('#')
        })
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

#[test]
fn the_readme_is_under_300_lines() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(lines < 300, "README.md has {lines} lines");
}

#[test]
fn every_link_in_the_readme_and_the_docs_resolves() {
    let mut broken = vec![];
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") {
                continue;
            }
            checked += 1;
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                doc.clone()
            } else {
                dir.join(path)
            };
            let shown = format!("{}: {link}", doc.file_name().unwrap().to_string_lossy());
            if !target.exists() {
                broken.push(format!("{shown} (no such file)"));
                continue;
            }
            if !fragment.is_empty() {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap_or_default());
                if !headings.iter().any(|h| h == fragment) {
                    broken.push(format!("{shown} (no such heading)"));
                }
            }
        }
    }
    assert!(checked > 20, "the links were found ({checked})");
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

#[test]
fn the_link_reader_finds_what_it_must() {
    let text = "see [a](docs/a.md) and ![b](b.svg#x)\n```\n[not](a link)\n```\n";
    assert_eq!(links(text), ["docs/a.md", "b.svg#x"]);
    assert_eq!(anchor(" The parent's interface"), "the-parents-interface");
    assert_eq!(anchor("D7. The `standin` CLI"), "d7-the-standin-cli");
}

/// The README's Performance section states the benchmark as `bench/results.json` has
/// it: heard latency per watch and its ratio to the floor, the idle cost of each watch,
/// and the fleet the scale table gives. A new `make bench` that moves them fails this
/// until the README says so.
#[test]
fn the_readme_states_the_benchmark_results_it_ships_with() {
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("bench/results.json")).unwrap())
            .unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("## Performance")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Performance section");
    let w = &results["watches"];
    let p50 = |watch: &str| w[watch]["heard_ms"]["p50"].as_f64().unwrap();
    let floor = p50("floor");
    let mut stated = vec![format!("{:.0} ms", floor)];
    for watch in ["push", "follow"] {
        stated.push(format!("{:.0} ms", p50(watch)));
        stated.push(format!("{:.1}×", p50(watch) / floor));
    }
    for watch in ["push", "follow"] {
        let day = results["idle_hour"][watch]["dollars_per_1000_standins_a_day"]
            .as_f64()
            .unwrap();
        stated.push(format!("${day:.2}"));
    }
    let fleet = &results["scale"]["fleet"][0];
    stated.push(thousands(fleet["standins"].as_f64().unwrap() as u64));
    stated.push(fleet["quota"].as_str().unwrap().to_owned());
    for figure in stated {
        assert!(
            section.contains(&figure),
            "README's Performance does not state {figure} (bench/results.json)"
        );
    }
}

/// 12345 as "12,345".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
