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

/// The code without its test items: from `#[cfg(test)]` to the end of the item after it
/// (an item's braces or its `;`; a field's, a variant's or an arm's `,`).
fn without_tests(code: &str) -> String {
    const ITEMS: [&str; 10] = [
        "fn ", "mod ", "impl", "struct ", "enum ", "use ", "const ", "static ", "pub", "async ",
    ];
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let an_item = ITEMS.iter().any(|k| item.trim_start().starts_with(k));
        let (mut depth, mut end) = (0usize, item.len());
        for (i, c) in item.char_indices() {
            match c {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' if depth == 0 => {
                    end = i;
                    break;
                }
                '}' if depth == 1 && an_item => {
                    end = i + 1;
                    break;
                }
                '}' | ')' | ']' => depth -= 1,
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                ',' if depth == 0 && !an_item => {
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

/// The `pub use` and `pub(crate) use` statements of a file, taken out of its code: a
/// module's face, each a name it hands on and the path it names.
fn re_exports(code: &str) -> (String, Vec<(String, Vec<String>)>) {
    let (mut rest, mut own, mut faces) = (code, String::with_capacity(code.len()), Vec::new());
    loop {
        let found = ["pub use ", "pub(crate) use "]
            .iter()
            .filter_map(|start| rest.find(start).map(|at| (at, start.len())))
            .min();
        let Some((at, len)) = found else { break };
        let Some(end) = rest[at..].find(';') else {
            break;
        };
        let mut paths = Vec::new();
        expand(&[], &rest[at + len..at + end], &mut paths);
        faces.extend(paths.into_iter().filter_map(|(path, alias)| {
            let name = alias.or_else(|| path.last().cloned())?;
            (name != "*").then_some((name, path))
        }));
        own.push_str(&rest[..at]);
        rest = &rest[at + end + 1..];
    }
    own.push_str(rest);
    (own, faces)
}

/// Every path the code names: `use` trees with their braces expanded, and the paths in
/// the code itself (`crate::a::f(…)`, `child::g()`).
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].trim_end();
        let tail = &rest[at + 4..];
        let Some(end) = tail.find(';') else { break };
        if before.is_empty() || before.ends_with([';', '{', '}', ']', ')']) {
            let mut trees = Vec::new();
            expand(&[], &tail[..end], &mut trees);
            paths.extend(trees.into_iter().map(|(path, _)| path));
        }
        rest = &tail[end..];
    }
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    for (i, &(at, c)) in chars.iter().enumerate() {
        let starts = (word(c) && !c.is_numeric())
            && (i == 0 || !(word(chars[i - 1].1) || chars[i - 1].1 == ':'));
        if !starts {
            continue;
        }
        let chain: String = code[at..]
            .chars()
            .take_while(|c| word(*c) || *c == ':')
            .collect();
        // A chain that ends in `::` opens a `use` tree (`{…}`, `*`), read above.
        if chain.contains("::") && !chain.ends_with("::") {
            paths.push(segments(&chain));
        }
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

/// A `use` tree's paths, each with `prefix` before it and its `as` name if it has one.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut parts = tree.split(" as ");
        let mut path = prefix.to_vec();
        path.extend(segments(parts.next().unwrap_or(tree)));
        out.push((path, parts.next().map(|alias| alias.trim().to_owned())));
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

/// One crate's files by module, and what each hands on.
struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
    faces: BTreeMap<Vec<String>, Vec<(String, Vec<String>)>>,
}

impl Crate {
    /// The module a path from `module` names: from the crate's root, from `self` or
    /// `super`, or from one of `module`'s own children. None: another crate's.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut full: Vec<String> = match path.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("self") => module.to_vec(),
            Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
            Some(child) => {
                let mut own = module.to_vec();
                own.push(child.to_owned());
                return self.files.contains_key(&own).then(|| {
                    own.extend(path[1..].iter().cloned());
                    own
                });
            }
            None => return None,
        };
        let mut rest = &path[1..];
        while rest.first().is_some_and(|s| s == "super") {
            full.pop();
            rest = &rest[1..];
        }
        full.extend(rest.iter().cloned());
        Some(full)
    }

    /// The file that defines what an absolute path names: its longest prefix that is a
    /// file's module, followed through that file's re-exports.
    fn target(&self, full: &[String], hops: usize) -> Option<&PathBuf> {
        let len = (0..=full.len())
            .rev()
            .find(|len| self.files.contains_key(&full[..*len]))?;
        let module = &full[..len];
        let handed_on = full.get(len).and_then(|name| {
            let (_, path) = self.faces.get(module)?.iter().find(|(n, _)| n == name)?;
            let mut through = self.absolute(module, path)?;
            through.extend(full[len + 1..].iter().cloned());
            Some(through)
        });
        match handed_on {
            Some(through) if hops < 8 => self.target(&through, hops + 1),
            _ => self.files.get(module),
        }
    }
}

/// The files of one crate and, for each, the files it imports.
fn imports_of(krate: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let src = krate.join("src");
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    let mut codes = BTreeMap::new();
    let mut crate_ = Crate {
        files: BTreeMap::new(),
        faces: BTreeMap::new(),
    };
    for file in &all {
        let Ok(relative) = file.strip_prefix(&src) else {
            continue;
        };
        let is_test = relative.file_name().is_some_and(|n| n == "tests.rs")
            || relative.starts_with("bin")
            || relative == Path::new("main.rs");
        if is_test {
            continue;
        }
        let module = module_of(relative);
        let code = without_tests(&code_of(&std::fs::read_to_string(file).unwrap()));
        let (own, faces) = re_exports(&code);
        crate_.files.insert(module.clone(), file.clone());
        crate_.faces.insert(module.clone(), faces);
        codes.insert(module, own);
    }
    let mut graph = BTreeMap::new();
    for (module, own) in &codes {
        let file = &crate_.files[module];
        let targets = paths_in(own)
            .iter()
            .filter_map(|path| crate_.absolute(module, path))
            .filter_map(|full| crate_.target(&full, 0))
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
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = imports_of(&root.join(krate));
        let arrows: usize = graph.values().map(BTreeSet::len).sum();
        assert!(
            arrows >= graph.len() / 2,
            "{krate}: only {arrows} imports read among {} files",
            graph.len()
        );
        for circle in circles(&graph) {
            let names: Vec<String> = circle
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                .collect();
            found.push(names.join(" <-> "));
        }
    }
    assert!(found.is_empty(), "files that import each other: {found:#?}");
}

/// Imports the drawing must see, one of each kind.
#[test]
fn the_drawing_sees_each_kind_of_import() {
    let root = root();
    let sees = |krate: &str, from: &str, to: &str| {
        let graph = imports_of(&root.join(krate));
        let (from, to) = (root.join(krate).join(from), root.join(krate).join(to));
        assert!(
            graph.get(&from).is_some_and(|t| t.contains(&to)),
            "{krate}: {} -> {} not seen",
            from.display(),
            to.display()
        );
    };
    // A `use` tree from the crate's root, and one through a re-export (`pub use`).
    sees("control-plane", "src/http.rs", "src/http_io.rs");
    sees("functions/standin", "src/row/mod.rs", "src/digest.rs");
    // A module's own child, named without `self::`.
    sees(
        "remote",
        "src/a2a/binding/mod.rs",
        "src/a2a/binding/over_http.rs",
    );
    // A path in the code, not in a `use`.
    sees(
        "functions/standin",
        "src/lambda/handlers.rs",
        "src/steps/mod.rs",
    );
}

#[test]
fn the_drawing_reads_use_trees_paths_and_faces() {
    let code = "use crate::a::{b::C, d as e};\npub use crate::f::G;\nfn x() {\n    use super::k;\n    crate::h::i();\n}\nstruct S {\n    #[cfg(test)]\n    seen: crate::m::N,\n    kept: crate::n::O,\n}\n#[cfg(test)]\nmod tests { use crate::j; }\n";
    let (own, faces) = re_exports(&without_tests(code));
    let named: BTreeSet<String> = paths_in(&own).iter().map(|p| p.join("::")).collect();
    for path in [
        "crate::a::b::C",
        "crate::a::d",
        "super::k",
        "crate::h::i",
        "crate::n::O",
    ] {
        assert!(named.contains(path), "{path} not in {named:?}");
    }
    for path in ["crate::f::G", "crate::j", "crate::m::N"] {
        assert!(!named.contains(path), "{path} in {named:?}");
    }
    assert_eq!(faces, [("G".to_owned(), segments("crate::f::G"))]);
    let module = |m: &str| m.split('/').map(str::to_owned).collect::<Vec<_>>();
    let krate = Crate {
        files: BTreeMap::from([
            (module("x"), PathBuf::from("x/mod.rs")),
            (module("x/z"), PathBuf::from("x/z.rs")),
            (module("x/w"), PathBuf::from("x/w.rs")),
        ]),
        faces: BTreeMap::from([(
            module("x"),
            vec![("Face".into(), segments("self::w::Face"))],
        )]),
    };
    let to = |from: &str, p: &str| {
        let full = krate.absolute(&module(from), &segments(p))?;
        krate.target(&full, 0).cloned()
    };
    assert_eq!(to("x/y", "super::z::Thing"), Some(PathBuf::from("x/z.rs")));
    assert_eq!(to("x/y", "super::Face"), Some(PathBuf::from("x/w.rs")));
    assert_eq!(to("x/y", "super::Other"), Some(PathBuf::from("x/mod.rs")));
    assert_eq!(to("x", "z::Thing"), Some(PathBuf::from("x/z.rs")));
    assert_eq!(to("x/y", "std::fmt"), None);
}

#[test]
fn circles_are_found_and_only_circles() {
    let graph = |arrows: &[(&str, &str)]| {
        let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (from, to) in arrows {
            graph.entry(from.into()).or_default().insert(to.into());
            graph.entry(to.into()).or_default();
        }
        graph
    };
    let sorted = |graph| {
        let mut found: Vec<Vec<PathBuf>> = circles(&graph);
        found.iter_mut().for_each(|c| c.sort());
        found.sort();
        found
    };
    let p = |names: &[&str]| names.iter().map(PathBuf::from).collect::<Vec<_>>();
    assert_eq!(sorted(graph(&[("a", "b"), ("b", "a")])), [p(&["a", "b"])]);
    assert_eq!(
        sorted(graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        [p(&["a", "b", "c"])]
    );
    assert!(sorted(graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    assert_eq!(
        sorted(graph(&[("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")])),
        [p(&["a", "b"]), p(&["c", "d"])]
    );
}
