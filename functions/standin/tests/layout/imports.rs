//! The files of each crate and the files they import, drawn from `use` and from paths in
//! the code (`crate::…`, `super::…`), so no two files import each other, directly or
//! through others. A re-export (`pub use`) is a module's face, not a need of its own,
//! and test code (`#[cfg(test)]`, `tests.rs`) is left out: it may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{code_of, root, rust_files};

/// The crates whose files are drawn: every product crate of the workspace.
const CRATES: [&str; 6] = [
    "wire",
    "remote",
    "functions/standin",
    "control-plane",
    "mcp",
    "cli",
];

/// A file's module path within its crate: `a/b.rs` and `a/b/mod.rs` are `a::b`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code without its test items: from `#[cfg(test)]` to the end of the item after it.
fn without_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let (mut depth, mut end) = (0usize, item.len());
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => {
                    end = i + 1;
                    break;
                }
                '}' => depth = depth.saturating_sub(1),
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path the code names from `crate`, `self` or `super`, a `use` tree's braces
/// expanded; re-exports left out.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    // `use` trees first: `use crate::a::{b::C, d};` names `a::b::C` and `a::d`.
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].trim_end();
        let tail = &rest[at + 4..];
        let Some(end) = tail.find(';') else { break };
        let re_export = before.ends_with("pub") || before.ends_with("pub(crate)");
        let a_statement = before.is_empty() || before.ends_with([';', '{', '}', ']', ')']);
        if a_statement && !re_export {
            expand(&[], &tail[..end], &mut paths);
        }
        rest = &tail[end..];
    }
    // Paths in the code itself: `crate::a::f(…)`.
    let starts = ["crate::", "super::"].map(|from| code.match_indices(from));
    for (at, _) in starts.into_iter().flatten() {
        let before = &code[..at];
        let inside_a_path = before
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        if inside_a_path || before.trim_end().ends_with("use") {
            continue;
        }
        let chain: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        paths.push(segments(&chain));
    }
    paths
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A `use` tree's paths, each with `prefix` before it.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut path = prefix.to_vec();
        path.extend(segments(tree.split(" as ").next().unwrap_or(tree)));
        out.push(path);
        return;
    };
    let mut head = prefix.to_vec();
    head.extend(segments(&tree[..open]));
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&head, &inner[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        expand(&head, &inner[start..], out);
    }
}

/// The file a path leads into: its longest prefix that is a file's module.
fn target<'a>(
    module: &[String],
    path: &[String],
    files: &'a BTreeMap<Vec<String>, PathBuf>,
) -> Option<&'a PathBuf> {
    let mut full: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => module.to_vec(),
        Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    while rest.first().is_some_and(|s| s == "super") {
        full.pop();
        rest = &rest[1..];
    }
    full.extend(rest.iter().cloned());
    (0..=full.len())
        .rev()
        .find_map(|len| files.get(&full[..len]))
}

/// The files of one crate and, for each, the files it imports.
fn imports_of(krate: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let src = krate.join("src");
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    let files: BTreeMap<Vec<String>, PathBuf> = all
        .iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&src).ok()?;
            let is_test = relative.file_name().is_some_and(|n| n == "tests.rs")
                || relative.starts_with("bin")
                || relative == Path::new("main.rs");
            (!is_test).then(|| (module_of(relative), file.clone()))
        })
        .collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let code = without_tests(&code_of(&std::fs::read_to_string(file).unwrap()));
        let targets = paths_in(&code)
            .iter()
            .filter_map(|path| target(module, path, &files))
            .filter(|to| *to != file)
            .cloned()
            .collect();
        graph.insert(file.clone(), targets);
    }
    graph
}

/// The groups of files that import each other (Tarjan's strongly connected components).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, file: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(file, n);
            self.low.insert(file, n);
            self.stack.push(file);
            self.on_stack.insert(file);
            for next in self.graph.get(file).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[file].min(self.low[next]);
                    self.low.insert(file, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[file].min(self.index[next]);
                    self.low.insert(file, low);
                }
            }
            if self.low[file] == self.index[file] {
                let mut group = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    group.push(top.clone());
                    if top == file {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for file in graph.keys() {
        if !walk.index.contains_key(file) {
            walk.visit(file);
        }
    }
    walk.found
}

#[test]
fn no_files_import_each_other() {
    let root = root();
    let (mut found, mut arrows) = (Vec::new(), 0);
    for krate in CRATES {
        let graph = imports_of(&root.join(krate));
        arrows += graph.values().map(BTreeSet::len).sum::<usize>();
        for circle in circles(&graph) {
            let names: Vec<String> = circle
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                .collect();
            found.push(names.join(" <-> "));
        }
    }
    assert!(
        arrows > 500,
        "only {arrows} imports read: the drawing misses them"
    );
    assert!(found.is_empty(), "files that import each other: {found:#?}");
}

#[test]
fn the_drawing_reads_use_trees_and_paths() {
    let code = "use crate::a::{b::C, d as e};\npub use crate::f::G;\nfn x() { crate::h::i(); }\n#[cfg(test)]\nmod tests { use crate::j; }\n";
    let paths = paths_in(&without_tests(code));
    let named: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(named, ["crate::a::b::C", "crate::a::d", "crate::h::i"]);
    let module = vec!["x".to_owned(), "y".to_owned()];
    let files = BTreeMap::from([
        (vec!["x".to_owned()], PathBuf::from("x/mod.rs")),
        (
            vec!["x".to_owned(), "z".to_owned()],
            PathBuf::from("x/z.rs"),
        ),
    ]);
    let to = |p: &str| target(&module, &segments(p), &files).cloned();
    assert_eq!(to("super::z::Thing"), Some(PathBuf::from("x/z.rs")));
    assert_eq!(to("super::Face"), Some(PathBuf::from("x/mod.rs")));
    assert_eq!(to("std::fmt"), None);
}
