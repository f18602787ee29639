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
    let g = graph();
    // Depth-first search with colours; a grey node reached again closes a cycle.
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
            if let Some(c) = visit(n, &g, &mut colour, &mut Vec::new()) {
                panic!("import cycle between modules: {}", c.join(" -> "));
            }
        }
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
