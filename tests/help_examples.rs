//! Every command's `--help` ends with examples (`src/cli/examples.rs`) and the exit codes; each
//! example is a real invocation that the command line parses, and is quoted in README.md or
//! docs/ (the single source of the docs' invocations); every command line in the docs' shell
//! blocks (and every `$ ` line of their transcripts) parses too, so no flag that does not exist
//! can stay in the docs.

use std::path::{Path, PathBuf};

use rankprof::cli::examples::examples;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every command path: "" (rankprof), "ls", …, "capture run", … (clap's own `help` left out).
fn paths(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    out.push(path.to_string());
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let p = match path {
            "" => sub.get_name().to_string(),
            p => format!("{p} {}", sub.get_name()),
        };
        paths(sub, &p, out);
    }
}

fn all_paths() -> Vec<String> {
    let mut out = Vec::new();
    paths(&rankprof::cli::command_at(None), "", &mut out);
    out
}

/// The words a shell would pass: ` \`-newline continuations joined, `'…'` and `"…"` quoting,
/// and nothing from an unquoted `#` comment or a redirection (`>`, `>>`, `|`, `<`) on.
fn shell_words(line: &str) -> Vec<String> {
    let joined = line.replace("\\\n", " ");
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    cur.push(q);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' | '>' | '|' | '<' if !in_word => break,
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// The argv of `rankprof` for a command line of rankprof, merge-traces or analyze-profile;
/// `None` for any other program.
fn rankprof_argv(line: &str) -> Option<Vec<String>> {
    let words = shell_words(line);
    let (first, rest) = words.split_first()?;
    let mut argv = vec!["rankprof".to_string()];
    match first.as_str() {
        "rankprof" => {}
        "merge-traces" => argv.push("merge".into()),
        "analyze-profile" => argv.push("analyze".into()),
        _ => return None,
    }
    argv.extend(rest.iter().cloned());
    Some(argv)
}

/// The subcommand path the arguments select ("capture run").
fn parse(argv: &[String]) -> Result<String, String> {
    let m = rankprof::cli::command_at(None)
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let mut path = Vec::new();
    let mut cur = &m;
    while let Some((name, sub)) = cur.subcommand() {
        path.push(name.to_string());
        cur = sub;
    }
    Ok(path.join(" "))
}

fn help_of(path: &str) -> String {
    let mut argv = vec!["rankprof".to_string()];
    argv.extend(path.split_whitespace().map(str::to_string));
    argv.push("--help".into());
    let err = rankprof::cli::command_at(None)
        .try_get_matches_from(&argv)
        .expect_err("--help stops parsing");
    assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{argv:?}");
    err.to_string()
}

#[test]
fn every_help_ends_with_examples_then_the_exit_codes() {
    let paths = all_paths();
    assert!(paths.len() >= 19, "{paths:?}");
    for path in &paths {
        let help = help_of(path);
        let list = examples(path);
        assert!(!list.is_empty(), "`rankprof {path}` has no examples");
        let at = help
            .find("\nExamples:\n")
            .unwrap_or_else(|| panic!("`rankprof {path} --help` has no Examples section:\n{help}"));
        let tail = &help[at..];
        for e in list {
            assert!(
                tail.contains(&format!("  # {}\n", e.what)),
                "{path}: {}",
                e.what
            );
            for line in e.line.lines() {
                assert!(
                    tail.contains(&format!("  {line}\n")),
                    "{path}: {line}\n{help}"
                );
            }
        }
        assert!(
            tail.trim_end().ends_with(rankprof::exit::HELP),
            "`rankprof {path} --help` does not end with the exit codes:\n{help}"
        );
    }
}

#[test]
fn every_example_is_an_invocation_that_parses() {
    for path in all_paths() {
        for e in examples(&path) {
            let argv = rankprof_argv(e.line).unwrap_or_else(|| {
                panic!(
                    "{path}: {:?} is not a rankprof / merge-traces / analyze-profile invocation",
                    e.line
                )
            });
            let got = parse(&argv).unwrap_or_else(|err| {
                panic!("{path}: {:?} does not parse ({argv:?}):\n{err}", e.line)
            });
            assert!(
                got == path || path.is_empty() || got.starts_with(&format!("{path} ")),
                "{path}: {:?} runs `rankprof {got}`",
                e.line
            );
        }
    }
}

fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_example_is_quoted_in_the_docs() {
    let text: String = doc_files().iter().map(|p| read(p)).collect();
    for path in all_paths() {
        for e in examples(&path) {
            assert!(
                text.contains(e.line),
                "`rankprof {path}`'s example is not in README.md or docs/:\n{}",
                e.line
            );
        }
    }
}

/// The command lines of a markdown file: in ```sh / ```bash blocks every line (with its
/// continuations) that runs rankprof, merge-traces or analyze-profile; in any block every
/// `$ ` line that does. Each with its line number.
fn doc_command_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        if let Some((n, mut acc)) = pending.take() {
            acc.push_str(raw);
            if raw.ends_with('\\') {
                acc.push('\n');
                pending = Some((n, acc));
            } else {
                out.push((n, acc));
            }
            continue;
        }
        if let Some(tag) = raw.trim_start().strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(tag.trim().to_string()),
            };
            continue;
        }
        let Some(tag) = &block else { continue };
        let cmd = if let Some(c) = raw.strip_prefix("$ ") {
            c
        } else if tag == "sh" || tag == "bash" {
            raw
        } else {
            continue;
        };
        if rankprof_argv(cmd).is_none() {
            continue;
        }
        if cmd.ends_with('\\') {
            pending = Some((i + 1, format!("{cmd}\n")));
        } else {
            out.push((i + 1, cmd.to_string()));
        }
    }
    out
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let mut checked = 0;
    for file in doc_files() {
        for (n, line) in doc_command_lines(&read(&file)) {
            let argv = rankprof_argv(&line).expect("selected as an invocation");
            if let Err(err) = parse(&argv) {
                panic!("{}:{n}: {line:?} does not parse:\n{err}", file.display());
            }
            checked += 1;
        }
    }
    assert!(
        checked > 60,
        "only {checked} command lines found in the docs"
    );
}

#[test]
fn shell_words_split_as_a_shell_would() {
    assert_eq!(
        shell_words("rankprof watch --trigger 'waiting spread > 32' \\\n    --json > x.jsonl"),
        [
            "rankprof",
            "watch",
            "--trigger",
            "waiting spread > 32",
            "--json"
        ]
    );
    assert_eq!(
        shell_words("rankprof ls DIR   # a comment"),
        ["rankprof", "ls", "DIR"]
    );
    assert_eq!(
        rankprof_argv("merge-traces --profile-dir D").unwrap(),
        ["rankprof", "merge", "--profile-dir", "D"]
    );
    assert!(rankprof_argv("cargo run --release -- demo").is_none());
}
