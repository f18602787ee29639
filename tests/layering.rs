//! The layering guard: `cli` → `commands` → libraries → `trace`, one way.
//!
//! - no library module (`src/{trace,merge,analyze,compare,capture,watch,report,synth}`,
//!   `src/pipeline.rs`, `src/exit.rs`) names `crate::cli` or `crate::commands`;
//! - the graph of `crate::<top-level module>` references between library modules has no cycle;
//! - `trace`, `exit` and `progress` are leaves (they use no other top-level module of the crate).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LIBRARIES: &[&str] = &[
    "trace", "merge", "analyze", "compare", "capture", "watch", "report", "synth", "pipeline",
    "exit", "progress", "load",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The files of a top-level module: `src/NAME.rs` or everything under `src/NAME/`.
fn files_of(name: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut v = Vec::new();
    let single = src.join(format!("{name}.rs"));
    if single.is_file() {
        v.push(single);
    }
    rust_files(&src.join(name), &mut v);
    v
}

/// Code without `//` comments (doc comments may name any module).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Top-level modules that `text` refers to as `crate::NAME` or `rankprof::NAME`.
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for prefix in ["crate::", "rankprof::"] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            let after = &rest[i + prefix.len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

#[test]
fn no_library_module_imports_cli_or_commands() {
    let mut bad = Vec::new();
    for lib in LIBRARIES {
        for f in files_of(lib) {
            let u = uses(&code(&f));
            for forbidden in ["cli", "commands"] {
                if u.contains(forbidden) {
                    bad.push(format!("{} uses crate::{forbidden}", f.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for lib in LIBRARIES {
        let mut deps = BTreeSet::new();
        for f in files_of(lib) {
            deps.extend(
                uses(&code(&f))
                    .into_iter()
                    .filter(|d| d != lib && LIBRARIES.contains(&d.as_str())),
            );
        }
        g.insert(lib.to_string(), deps);
    }
    g
}

#[test]
fn library_modules_form_no_cycle() {
    if let Some(c) = find_cycle(&graph()) {
        panic!("import cycle between modules: {}", c.join(" -> "));
    }
}

#[test]
fn trace_and_exit_are_leaves() {
    let g = graph();
    for leaf in ["trace", "exit", "progress"] {
        let deps = &g[leaf];
        assert!(deps.is_empty(), "{leaf} uses {deps:?}");
    }
}

#[test]
fn the_guard_sees_a_violation() {
    // The scanner itself: a library line naming the command layer is found, a comment is not.
    let u = uses(&["use crate::commands::exit;", "x"].join("\n"));
    assert!(u.contains("commands"));
    let tmp = std::env::temp_dir().join(format!("layering-{}.rs", std::process::id()));
    std::fs::write(&tmp, "// see crate::cli\nuse crate::trace::Ns;\n").unwrap();
    let u = uses(&code(&tmp));
    let _ = std::fs::remove_file(&tmp);
    assert!(!u.contains("cli") && u.contains("trace"));
}

// ---- Inside a folder: the files (and sub-folders) of one module form no import cycle. ----
//
// The nodes of a folder are its files (`x.rs`) and its sub-folders (`x/`, everything under
// it); its `mod.rs` is the folder's facade and is left out (it declares every child). A file
// uses a sibling when a path it names (`super::x::…`, `crate::a::b::x::…`, also inside a
// `use` with braces) resolves into that sibling. Test code (`#[cfg(test)]` modules and
// `*_tests.rs` files) is left out: a test may reach anywhere.

/// The module path (`["analyze", "collect", "rank"]`) of a file under `src/`.
fn module_of(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).unwrap_or(f);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" && stem != "lib" && stem != "main" {
            parts.push(stem);
        }
    }
    parts
}

/// Expands `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(path: &str) -> Vec<String> {
    let path = path.trim();
    let Some(open) = path.find('{') else {
        return vec![path.to_string()];
    };
    let Some(close) = path.rfind('}') else {
        return vec![path.to_string()];
    };
    let head = &path[..open];
    let inner = &path[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(&format!("{head}{}", p.trim())))
        .collect()
}

/// Every `crate::…`/`super::…` path a file names, resolved to an absolute module path.
fn paths_of(text: &str, module: &[String]) -> Vec<Vec<String>> {
    // Test modules reach anywhere: cut them.
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut raw: Vec<String> = Vec::new();
    // `use` statements, braces expanded.
    let mut rest = text;
    while let Some(i) = rest.find("use ") {
        let before_ok = i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric();
        let after = &rest[i + 4..];
        let end = after.find(';').unwrap_or(after.len());
        if before_ok {
            let stmt: String = after[..end].split_whitespace().collect();
            raw.extend(expand(&stmt));
        }
        rest = &after[end.min(after.len())..];
    }
    // Paths anywhere in the code.
    for prefix in ["crate::", "super::"] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            let tail: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            rest = &rest[i + tail.len().max(prefix.len())..];
            raw.push(tail);
        }
    }
    let mut out = Vec::new();
    for p in raw {
        let segs: Vec<&str> = p.split("::").filter(|s| !s.is_empty()).collect();
        let mut abs: Vec<String> = match segs.first() {
            Some(&"crate") => Vec::new(),
            Some(&"super") => module.to_vec(),
            _ => continue,
        };
        // The first `crate` or `super` is where `abs` starts; each further `super` goes up.
        let mut it = segs.iter().peekable();
        it.next();
        while it.peek() == Some(&&"super") {
            it.next();
            abs.pop();
        }
        abs.extend(it.map(|s| s.to_string()));
        out.push(abs);
    }
    out
}

/// For every folder under `src/` with a `mod.rs`: the edges between its children.
fn folder_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &files {
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        if name.ends_with("_tests.rs") || name == "mod.rs" {
            continue;
        }
        let module = module_of(&src, f);
        let text = code(f);
        // Every ancestor folder of the file: the file counts as that folder's child on its way.
        for depth in 1..module.len() {
            let folder = &module[..depth];
            let node = &module[depth];
            let g = out.entry(folder.join("/")).or_default();
            g.entry(node.clone()).or_default();
            for p in paths_of(&text, &module[..module.len() - 1]) {
                if p.len() > depth && p[..depth] == *folder && p[depth] != *node {
                    let sibling = &p[depth];
                    let exists = src
                        .join(folder.join("/"))
                        .join(format!("{sibling}.rs"))
                        .is_file()
                        || src.join(folder.join("/")).join(sibling).is_dir();
                    if exists {
                        g.entry(node.clone()).or_default().insert(sibling.clone());
                    }
                }
            }
        }
    }
    out
}

/// A cycle in `g`, if any.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        colour: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        colour.insert(n.to_string(), 1);
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            match colour.get(d.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == d).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(d, g, colour, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        colour.insert(n.to_string(), 2);
        None
    }
    let mut colour = BTreeMap::new();
    for n in g.keys() {
        if colour.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, g, &mut colour, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn files_inside_a_folder_form_no_cycle() {
    let mut bad = Vec::new();
    for (folder, g) in folder_graphs() {
        if let Some(c) = find_cycle(&g) {
            bad.push(format!("src/{folder}/: {}", c.join(" -> ")));
        }
    }
    assert!(
        bad.is_empty(),
        "import cycles between the files of a folder (move what both use into a file below \
         them):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_folder_guard_sees_a_cycle() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Vec<_>>();
    let p = paths_of(
        "use super::{a::X, b::{Y, c::Z}};\nfn f() { crate::x::y::w(); super::super::q::r(); }\n\
         #[cfg(test)]\nmod tests { use super::t::T; }",
        &m("x/y"),
    );
    for want in ["x/y/a/X", "x/y/b/Y", "x/y/b/c/Z", "x/y/w", "x/q/r"] {
        assert!(p.contains(&m(want)), "{want} not in {p:?}");
    }
    assert!(!p.contains(&m("x/y/t/T")), "test code counted: {p:?}");
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["a".to_string()])),
    ]
    .into();
    assert!(find_cycle(&g).is_some());
    let g: BTreeMap<String, BTreeSet<String>> =
        [("a".to_string(), BTreeSet::from(["b".to_string()]))].into();
    assert!(find_cycle(&g).is_none());
}

/// `report/` formats what a result holds: it reads no input and runs no library.
#[test]
fn report_computes_nothing() {
    let mut bad = Vec::new();
    for f in files_of("report") {
        let text = code(&f);
        for forbidden in [
            "read_trace",
            "discover(",
            "analyze::analyze",
            "merge_group",
            "compare::compare(",
            "File::open",
            "fs::read(",
            "fs::read_to_string",
            "crate::capture::session::run",
            "crate::watch::watch",
        ] {
            if text.contains(forbidden) {
                bad.push(format!("{} names {forbidden}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "report/ must only format results:\n{}",
        bad.join("\n")
    );
}
