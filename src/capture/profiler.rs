//! What `capture run --profiler` changes: with `nsys` the servers run under Nsight Systems
//! (`nsys profile --capture-range=cudaProfilerApi --capture-range-end=repeat -o DIR/NAME`), so
//! the start and stop requests open and close nsys's capture instead of writing Kineto traces
//! — SGLang is sent the `CUDA_PROFILER` activity (its scheduler then calls
//! `cudaProfilerStart`/`cudaProfilerStop`), vLLM is started with `--profiler-config
//! '{"profiler": "cuda"}'` (its `CudaProfilerWrapper` does the same) — and the files waited
//! for are the reports nsys writes into `--output-dir` (`*.nsys-rep`), one per server (one
//! `nsys` per server: its processes, one per GPU, in one report). Those are then merged and
//! analyzed as any rank files are (a report of several GPUs is one rank per GPU). Also where
//! each dialect's files go ([`Dirs`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::calls::WorkerRow;
use super::dialect::Dialect;
use super::flush::{self, Files};
use super::options::{Activity, ProfileSettings, Profiler};
use super::window::Watch;

/// Where each dialect writes: SGLang where it is told (`sglang`), vLLM in its own
/// `torch_profiler_dir` (`vllm`, = `--output-dir`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Dirs {
    pub(crate) sglang: Option<PathBuf>,
    pub(crate) vllm: Option<PathBuf>,
    /// `OUTPUT_DIR/step_N` when `--step` is given.
    pub(crate) step: Option<PathBuf>,
}

impl Dirs {
    pub(crate) fn new(p: &ProfileSettings) -> Result<Dirs> {
        let Some(base) = &p.output_dir else {
            if p.step.is_some() {
                bail!("--step needs --output-dir");
            }
            return Ok(Dirs::default());
        };
        let base = std::path::absolute(base)
            .with_context(|| format!("bad --output-dir {}", base.display()))?;
        let step = p.step.map(|n| base.join(format!("step_{n}")));
        Ok(Dirs {
            sglang: Some(step.clone().unwrap_or_else(|| base.clone())),
            vllm: Some(base),
            step,
        })
    }

    pub(super) fn of(&self, d: Dialect) -> Option<&Path> {
        match d {
            Dialect::Sglang => self.sglang.as_deref(),
            Dialect::Vllm => self.vllm.as_deref(),
        }
    }
}

/// The settings sent to the servers: with nsys, the `CUDA_PROFILER` activity (SGLang), no
/// `--step` folders (nsys names its reports).
pub(super) fn settings(profiler: Profiler, p: &ProfileSettings) -> Result<ProfileSettings> {
    let mut p = p.clone();
    if profiler == Profiler::Torch {
        return Ok(p);
    }
    if p.step.is_some() {
        bail!(
            "--step is for torch traces: with --profiler nsys the reports go where nsys's -o \
             says (give that folder as --output-dir)"
        );
    }
    if p.activities.is_empty() {
        p.activities = vec![Activity::CudaProfiler];
    } else if !p.activities.contains(&Activity::CudaProfiler) {
        bail!(
            "--profiler nsys needs the CUDA_PROFILER activity (it opens nsys's capture): drop \
             --activities, or add CUDA_PROFILER to it"
        );
    }
    Ok(p)
}

/// The folders given in the start requests: with nsys none (SGLang would otherwise make its
/// torch profiler's folder there; the reports go where nsys's `-o` says).
pub(super) fn request_dirs(profiler: Profiler, dirs: &Dirs) -> Dirs {
    match profiler {
        Profiler::Torch => dirs.clone(),
        Profiler::Nsys => Dirs {
            sglang: None,
            ..dirs.clone()
        },
    }
}

/// The folders watched for this capture's files, snapshotted now (files already there are
/// not this capture's).
pub(super) fn watches(profiler: Profiler, dirs: &Dirs) -> Vec<Watch> {
    match profiler {
        Profiler::Torch => [Dialect::Sglang, Dialect::Vllm]
            .into_iter()
            .filter_map(|d| {
                dirs.of(d).map(|dir| Watch {
                    dir: dir.to_path_buf(),
                    before: flush::snapshot(dir),
                    dialect: Some(d),
                    files: Files::Traces,
                })
            })
            .collect(),
        Profiler::Nsys => dirs
            .vllm
            .iter()
            .map(|dir| Watch {
                dir: dir.clone(),
                before: flush::snapshot_of(dir, Files::NsysReports),
                dialect: None,
                files: Files::NsysReports,
            })
            .collect(),
    }
}

/// Where the capture's files are: the step folder with `--step`, else `--output-dir`.
pub(crate) fn trace_dir(profiler: Profiler, dirs: &Dirs) -> Option<PathBuf> {
    match profiler {
        Profiler::Torch => dirs.step.clone().or_else(|| dirs.sglang.clone()),
        Profiler::Nsys => dirs.vllm.clone(),
    }
}

/// Notes on the starts: a vLLM without profiling routes needs the `cuda` profiler here.
pub(super) fn start_notes(profiler: Profiler, rows: &[WorkerRow]) -> Vec<String> {
    let no_routes = rows.iter().any(|r| {
        r.backend == Some(Dialect::Vllm) && r.start.as_ref().is_some_and(|c| c.status == Some(404))
    });
    if profiler == Profiler::Nsys && no_routes {
        vec![
            "with --profiler nsys, start vLLM with --profiler-config '{\"profiler\": \"cuda\"}' \
             under `nsys profile --capture-range=cudaProfilerApi --capture-range-end=repeat`: \
             its /start_profile then opens nsys's capture"
                .into(),
        ]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsys_sends_the_cuda_profiler_activity_and_refuses_steps() {
        let p = ProfileSettings::default();
        let n = settings(Profiler::Nsys, &p).unwrap();
        assert_eq!(n.activities, [Activity::CudaProfiler]);
        assert!(settings(Profiler::Torch, &p).unwrap().activities.is_empty());
        let cpu = ProfileSettings {
            activities: vec![Activity::Cpu],
            ..Default::default()
        };
        let e = settings(Profiler::Nsys, &cpu).unwrap_err().to_string();
        assert!(e.contains("CUDA_PROFILER"), "{e}");
        let step = ProfileSettings {
            step: Some(3),
            ..Default::default()
        };
        assert!(settings(Profiler::Nsys, &step).is_err());
        assert!(settings(Profiler::Torch, &step).is_ok());
    }

    #[test]
    fn dirs_follow_output_dir_and_step() {
        let p = ProfileSettings {
            output_dir: Some("rel/prof".into()),
            step: Some(4),
            ..Default::default()
        };
        let d = Dirs::new(&p).unwrap();
        let base = std::env::current_dir().unwrap().join("rel/prof");
        assert_eq!(d.vllm.as_deref(), Some(base.as_path()));
        assert_eq!(d.sglang.as_deref(), Some(base.join("step_4").as_path()));
        let p = ProfileSettings {
            step: Some(4),
            ..Default::default()
        };
        assert!(Dirs::new(&p).is_err());
    }
}
