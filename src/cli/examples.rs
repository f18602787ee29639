//! The examples at the end of every command's `--help` and man page, one list per command path
//! (`""` for `rankprof` itself, `"capture run"` for a nested subcommand).
//!
//! They are the single source of the invocations README.md and docs/ show: the docs quote these
//! lines verbatim, and `tests/help_examples.rs` checks that every command has examples, that each
//! one parses with [`super::command`] and that each is quoted in README.md or docs/.

/// One example: what it does, and the command line as a shell takes it (`'…'` quotes an
/// argument holding spaces; a long line goes on after ` \` and a newline, indented by four).
#[derive(Debug, Clone, Copy)]
pub struct Example {
    pub what: &'static str,
    pub line: &'static str,
}

const fn ex(what: &'static str, line: &'static str) -> Example {
    Example { what, line }
}

const TOP: &[Example] = &[
    ex(
        "What is in a folder of traces",
        "rankprof ls fixtures/sglang-tp4",
    ),
    ex(
        "Which rank is slow, from when and why",
        "rankprof analyze --profile-dir fixtures/sglang-tp4",
    ),
    ex(
        "One Perfetto-ready trace of every rank",
        "rankprof merge --profile-dir fixtures/sglang-tp4 -o /tmp/",
    ),
    ex(
        "ls, merge and analyze on the bundled fixtures",
        "rankprof demo",
    ),
];

const LS: &[Example] = &[
    ex(
        "Profiles, stages, ranks found and missing, sizes",
        "rankprof ls fixtures/sglang-tp4",
    ),
    ex(
        "Every profile below a folder (per-step folders too), with event counts",
        "rankprof ls -r --count fixtures",
    ),
    ex(
        "The listing as JSON (also csv, markdown)",
        "rankprof ls fixtures/vllm-tp2 --format json",
    ),
];

const MERGE: &[Example] = &[
    ex(
        "One merged trace per profile, written into /tmp/ (without -o: beside the rank files)",
        "rankprof merge --profile-dir fixtures/sglang-tp4 -o /tmp/",
    ),
    ex(
        "A smaller trace for Perfetto: some ranks, three steps, GPU events only",
        "rankprof merge --profile-dir /data/prof --ranks 0,3-5 --steps 5:8 --gpu-only \\\n    -o small.trace.json.gz",
    ),
    ex(
        "Per-step folders, ranks aligned on their first step (merge-traces = rankprof merge)",
        "merge-traces --profile-dir /data/prof -r --align first-step",
    ),
    ex(
        "With a track per rank of the collectives it arrived last at (analyzes the ranks first)",
        "rankprof merge --profile-dir /data/prof --critical-path",
    ),
    ex(
        "Beside each rank, its steps as they would run with every rank typical, and the critical path",
        "rankprof merge --profile-dir /data/prof --what-if --critical-path",
    ),
];

const ANALYZE: &[Example] = &[
    ex(
        "Which rank is slow, from when and why (every rank compared)",
        "rankprof analyze --profile-dir fixtures/sglang-tp4",
    ),
    ex(
        "One rank in depth (its index as ls lists it)",
        "rankprof analyze --profile-dir fixtures/sglang-tp4 --rank 2",
    ),
    ex(
        "A merged trace; an HTML report and the summary compare reads (analyze-profile = rankprof analyze)",
        "analyze-profile merged.trace.json.gz --html report.html --save-summary base.summary.json",
    ),
];

const COMPARE: &[Example] = &[
    ex(
        "A profile folder against a saved summary (exit 1 on a regression)",
        "rankprof compare base.summary.json fixtures/sglang-tp4",
    ),
    ex(
        "The CI gate: 5 % per row, imbalance and re-simulated slowdown at most 1.10, rows under 50 µs not judged",
        "rankprof compare base.summary.json /tmp/profile \\\n    --max-regression 5% --max-imbalance 1.10 --max-slowdown 1.10 --min-time-us 50 --normalize",
    ),
    ex(
        "Markdown for a pull-request comment or $GITHUB_STEP_SUMMARY",
        "rankprof compare base.summary.json /tmp/profile --format markdown -o compare.md",
    ),
    ex(
        "Several baselines (their run-to-run spread is the noise floor); inconclusive passes",
        "rankprof compare /tmp/profile --baseline perf/baselines/ --inconclusive pass",
    ),
    ex(
        "What the gate can detect with this baseline's steps",
        "rankprof compare --power base.summary.json",
    ),
];

const CAPTURE_RUN: &[Example] = &[
    ex(
        "The servers behind a router: profile 5 steps under 64 requests, merge, analyze",
        "rankprof capture run --router-url http://10.0.0.1:3521 --output-dir /shared/prof \\\n    --num-steps 5 --requests 64",
    ),
    ex(
        "The router from a verl/slime log, one folder per global step, stop after 20 s",
        "rankprof capture run --from-log train.log --output-dir /shared/prof --step 12 --duration 20",
    ),
    ex(
        "Two servers by url, prefill and decode profiled apart",
        "rankprof capture run --worker-url http://h1:30000 http://h2:30000 --output-dir /shared/prof \\\n    --num-steps 5 --profile-by-stage",
    ),
    ex(
        "A server under `nsys profile --capture-range=cudaProfilerApi -o /shared/nsys/…`: its report",
        "rankprof capture run --worker-url http://h1:30000 --profiler nsys --output-dir /shared/nsys \\\n    --requests 64",
    ),
];

const CAPTURE_START: &[Example] = &[
    ex(
        "Start profiling two servers (around your own benchmark; then capture stop)",
        "rankprof capture start --worker-url http://h1:30000 http://h2:30000 --output-dir /shared/prof",
    ),
    ex(
        "Every server behind a router, 5 steps, CPU and GPU (they stop by themselves)",
        "rankprof capture start --router-url http://router:30000 --output-dir /shared/prof \\\n    --num-steps 5 --activities CPU,GPU",
    ),
    ex(
        "Only the prefill workers of a PD-disaggregated deployment",
        "rankprof capture start --router-url http://router:30000 --worker-type prefill \\\n    --output-dir /shared/prof",
    ),
];

const CAPTURE_STOP: &[Example] = &[
    ex(
        "Stop the two servers (the traces are written now)",
        "rankprof capture stop --worker-url http://h1:30000 http://h2:30000",
    ),
    ex(
        "Every server behind a router",
        "rankprof capture stop --router-url http://router:30000",
    ),
    ex(
        "Read the session record capture start left in the output folder",
        "rankprof capture stop --router-url http://router:30000 --output-dir /shared/prof",
    ),
];

const CAPTURE: &[Example] = &[CAPTURE_RUN[0], CAPTURE_START[0], CAPTURE_STOP[0]];

const WATCH: &[Example] = &[
    ex(
        "When one DP rank's queue stays 1.5× the mean for 10 s: profile 5 steps, merge, analyze",
        "rankprof watch --router-url http://router:30000 --output-dir /shared/prof \\\n    --trigger 'waiting max/mean > 1.5 for 10s' --num-steps 5",
    ),
    ex(
        "Two rules (either fires), at most 3 captures 10 min apart",
        "rankprof watch --worker-url http://h1:30000 http://h2:30000 --output-dir /shared/prof \\\n    --trigger 'token_usage max/mean > 1.5 for 10s' --trigger 'waiting spread > 32' \\\n    --max-captures 3 --cooldown 600",
    ),
    ex(
        "No trigger: one JSON line per poll for an hour",
        "rankprof watch --router-url http://router:30000 --json --duration 3600 > loads.jsonl",
    ),
];

const NSYS_LIST: &[Example] = &[
    ex(
        "The sessions of nsys launch / nsys profile",
        "rankprof nsys list",
    ),
    ex("The same as JSON", "rankprof nsys list --json"),
    ex(
        "Another nsys binary (else $RANKPROF_NSYS, else nsys on PATH)",
        "rankprof nsys list --nsys /opt/nvidia/nsight-systems/bin/nsys",
    ),
];

const NSYS_START: &[Example] = &[
    ex(
        "Start collecting in one session, by ID or NAME",
        "rankprof nsys start --session 4190",
    ),
    ex(
        "Every session not collecting yet",
        "rankprof nsys start --all",
    ),
    ex(
        "Extra nsys arguments after --",
        "rankprof nsys start --session 4190 -- --sample=none",
    ),
];

const NSYS_STOP: &[Example] = &[
    ex(
        "Stop one session and write its report",
        "rankprof nsys stop --session 4190",
    ),
    ex("Every collecting session", "rankprof nsys stop --all"),
    ex(
        "Give a large report 30 min to be written",
        "rankprof nsys stop --all --stop-timeout 1800",
    ),
    ex(
        "Then analyze the reports nsys wrote",
        "rankprof nsys stop --all --analyze",
    ),
    ex(
        "Analyze the sessions' -o folder, keeping the exports",
        "rankprof nsys stop --all --analyze --profile-dir run --keep-sqlite",
    ),
];

const NSYS: &[Example] = &[NSYS_LIST[0], NSYS_START[0], NSYS_STOP[1]];

const SYNTH: &[Example] = &[
    ex(
        "Eight balanced SGLang ranks (8 steps × 4 layers)",
        "rankprof synth -o /tmp/tp8 --tp 8",
    ),
    ex(
        "Plant a slow rank: rank 2's compute kernels 1.5× slower from step 3 on",
        "rankprof synth -o /tmp/slow --tp 4 --slow-rank 2 --factor 1.5 --from-step 3",
    ),
    ex(
        "Plant a host stall: rank 2's CPU holds up its second collective 2 ms every step",
        "rankprof synth -o /tmp/stall --tp 4 --host-delay-rank 2 --delay-us 2000",
    ),
    ex(
        "MoE: hot experts on rank 2 (2× the routed tokens), Input Dims recorded",
        "rankprof synth -o /tmp/moe --tp 4 --ep 4 --record-shapes --hot-expert-rank 2 --work-factor 2",
    ),
    ex(
        "Training: 4 pipeline stages, 8 micro-batches a step on 1F1B, stage 2 at 2× its kernel time",
        "rankprof synth -o /tmp/1f1b --tp 1 --pp 4 --microbatches 8 --slow-rank 2 --factor 2",
    ),
    ex(
        "Training: a whole stage slow (both TP ranks of stage 2, on both DP replicas)",
        "rankprof synth -o /tmp/stage --tp 2 --dp 2 --pp 4 --microbatches 8 --slow-rank 4 --slow-stage --factor 1.5",
    ),
];

const DEMO: &[Example] = &[
    ex(
        "ls, merge and analyze on the bundled fixtures/ (outputs under target/demo)",
        "rankprof demo",
    ),
    ex(
        "The same, outputs in another folder",
        "rankprof demo --out /tmp/demo",
    ),
    ex(
        "On other traces",
        "rankprof demo --fixtures ../shared/fixtures/sglang-cpu --out /tmp/demo",
    ),
];

const COMPLETIONS: &[Example] = &[
    ex(
        "bash",
        "rankprof completions bash > ~/.local/share/bash-completion/completions/rankprof",
    ),
    ex("zsh", "rankprof completions zsh > ~/.zfunc/_rankprof"),
    ex(
        "fish",
        "rankprof completions fish > ~/.config/fish/completions/rankprof.fish",
    ),
];

const MAN: &[Example] = &[
    ex(
        "rankprof.1 and one page per subcommand (rankprof-capture-run.1, …)",
        "rankprof man /usr/local/share/man/man1",
    ),
    ex(
        "For one user (with ~/.local/share/man in MANPATH)",
        "rankprof man ~/.local/share/man/man1",
    ),
];

const INFLATE: &[Example] = &[
    ex(
        "The reading floor of ./bench: inflate every file, bytes discarded",
        "rankprof inflate -j 2 bench-data/sglang-tp8/*.gz",
    ),
    ex(
        "merge's floor: inflate, then gzip level 1 again",
        "rankprof inflate --deflate 1 -j 2 bench-data/sglang-tp8/*.gz",
    ),
];

/// The examples of a command path: `""` (rankprof itself), `"merge"`, `"capture run"`, …;
/// empty for a path that has none.
pub fn examples(path: &str) -> &'static [Example] {
    match path {
        "" => TOP,
        "ls" => LS,
        "merge" => MERGE,
        "analyze" => ANALYZE,
        "compare" => COMPARE,
        "capture" => CAPTURE,
        "capture run" => CAPTURE_RUN,
        "capture start" => CAPTURE_START,
        "capture stop" => CAPTURE_STOP,
        "watch" => WATCH,
        "nsys" => NSYS,
        "nsys list" => NSYS_LIST,
        "nsys start" => NSYS_START,
        "nsys stop" => NSYS_STOP,
        "synth" => SYNTH,
        "demo" => DEMO,
        "completions" => COMPLETIONS,
        "man" => MAN,
        "inflate" => INFLATE,
        _ => &[],
    }
}

/// The text after a command's `--help`: its examples, then the exit codes
/// ([`crate::exit::HELP`]).
pub fn after_help(path: &str) -> String {
    after_help_at(path, None)
}

/// [`after_help`] fitted to `width` columns where one is given: a long comment goes on under
/// `# `, a long command on continuation lines ending in ` \` (still one command to paste).
pub fn after_help_at(path: &str, width: Option<usize>) -> String {
    use crate::report::text::wrap;
    let mut s = String::new();
    let list = examples(path);
    if !list.is_empty() {
        s.push_str("Examples:\n");
        for e in list {
            let what = match width {
                Some(w) => wrap(e.what, w.saturating_sub(4), "  # "),
                None => e.what.to_string(),
            };
            s.push_str(&format!("  # {what}\n"));
            for line in e.line.lines() {
                let line = match width {
                    Some(w) => wrap(line, w.saturating_sub(4), "    ").replace('\n', " \\\n"),
                    None => line.to_string(),
                };
                s.push_str(&format!("  {line}\n"));
            }
        }
        s.push('\n');
    }
    s.push_str(crate::exit::HELP);
    s
}
