//! `capture run`'s profiling window when it drives no load and has no `--duration`: waiting
//! for the servers to profile their `num_steps` by themselves (their trace files, watched
//! where this machine can see them), interruptible by Ctrl-C.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::calls::WorkerRow;
use super::dialect::{self, Dialect};
use super::flush::{self, Awaited, Files, Snapshot};

/// A directory that will be watched for this capture's trace files.
pub(super) struct Watch {
    pub(super) dir: PathBuf,
    pub(super) before: Snapshot,
    /// The servers that write here (`None`: every server, whatever its dialect: nsys
    /// reports).
    pub(super) dialect: Option<Dialect>,
    pub(super) files: Files,
}

impl Watch {
    /// Whether the server of `row` writes into this folder.
    pub(super) fn serves(&self, row: &WorkerRow) -> bool {
        self.dialect.is_none_or(|d| row.backend == Some(d))
    }

    /// Waits for at least `expect` of this capture's files here ([`flush::wait_until`]), the
    /// ones `counts` takes.
    pub(super) fn wait(
        &self,
        expect: usize,
        (settle, timeout): (Duration, Duration),
        counts: impl Fn(&std::path::Path) -> bool,
        interrupted: &dyn Fn() -> bool,
    ) -> flush::Flushed {
        let awaited = Awaited {
            files: self.files,
            counts,
        };
        flush::wait_until(
            &self.dir,
            &self.before,
            expect,
            settle,
            timeout,
            &awaited,
            interrupted,
        )
    }

    /// What to check when the files do not come (`; …`, or empty).
    pub(super) fn missing_hint(&self) -> String {
        match (self.files, self.dialect) {
            (Files::NsysReports, _) => format!(
                "; are the servers running under `nsys profile --capture-range=cudaProfilerApi \
                 --capture-range-end=repeat -o {}/NAME …` (SGLang takes the CUDA_PROFILER \
                 activity it is sent; vLLM needs --profiler-config '{{\"profiler\": \"cuda\"}}'), \
                 and does --flush-timeout leave nsys the time to write its reports?",
                self.dir.display()
            ),
            (Files::Traces, Some(d)) => dialect::missing_traces_hint(d).to_string(),
            (Files::Traces, None) => String::new(),
        }
    }
}

/// Sleeps `d`, or until `interrupted` answers true (polled every 200 ms).
pub(super) fn sleep_for(d: Duration, interrupted: &dyn Fn() -> bool) {
    let end = Instant::now() + d;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if interrupted() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(200)));
    }
}

/// How `capture run` waits for servers to profile their `num_steps` by themselves.
pub(super) struct NumSteps {
    pub(super) by_stage: bool,
    pub(super) all_local: bool,
    pub(super) settle: Duration,
    pub(super) flush_timeout: Duration,
}

impl NumSteps {
    /// Waits until the started servers have written their traces (the last stage's, by
    /// stage), each folder at most `--flush-timeout`; servers whose folder cannot be watched
    /// from here are given `--flush-timeout`. Ends early on `interrupted`. The notes to add.
    pub(super) fn wait(
        &self,
        watches: &[Watch],
        rows: &[WorkerRow],
        interrupted: &dyn Fn() -> bool,
    ) -> Vec<String> {
        let (settle, flush_timeout, all_local) = (self.settle, self.flush_timeout, self.all_local);
        let mut notes = Vec::new();
        let mut watched = Vec::new();
        for w in watches {
            let expect = rows
                .iter()
                .filter(|r| r.start.as_ref().is_some_and(|c| c.ok) && w.serves(r))
                .count();
            if expect > 0 && (w.dir.is_dir() || all_local) {
                watched.push(w.dialect);
                let by_stage =
                    self.by_stage && w.dialect == Some(Dialect::Sglang) && w.files == Files::Traces;
                let f = w.wait(
                    expect,
                    (settle, flush_timeout),
                    flush::ends_profile(by_stage),
                    interrupted,
                );
                if !f.complete && !interrupted() {
                    let older = if w.dialect == Some(Dialect::Vllm) {
                        "; vLLM before per-request profile settings ignores \
                         max_iterations: set it in --profiler-config"
                    } else {
                        ""
                    };
                    let hint = w.missing_hint();
                    notes.push(format!(
                        "num_steps not reached within --flush-timeout ({} of {expect} servers wrote traces{older}{hint})",
                        f.rank_files()
                    ));
                }
            }
        }
        // Servers whose traces cannot be watched from here (no --output-dir, or a
        // folder not on this machine): sent at once, the stop would end their profile
        // after ~0 steps. They get --flush-timeout to profile num_steps.
        let blind = rows
            .iter()
            .filter(|r| r.start.as_ref().is_some_and(|c| c.ok))
            .filter(|r| {
                !watched.contains(&None) && r.backend.is_none_or(|b| !watched.contains(&Some(b)))
            })
            .count();
        if blind > 0 && !interrupted() {
            notes.push(format!(
                "{blind} server(s) write their traces where this machine cannot see \
                 them: waited --flush-timeout ({:.0} s) for num_steps before sending \
                 the stop",
                flush_timeout.as_secs_f64()
            ));
            sleep_for(flush_timeout, interrupted);
        }
        notes
    }
}
