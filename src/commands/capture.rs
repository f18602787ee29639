//! `rankprof capture start|stop|run`: arguments → the capture options, the capture, a table
//! (or JSON) on stdout, the exit code the outcome carries.

use anyhow::Result;

use crate::capture::session::{self, RunOutcome};
use crate::capture::startstop::{self, Outcome};
use crate::capture::{CaptureOptions, ProfileSettings, StartOptions, StopOptions, Targets};
use crate::report::Format;

use crate::cli::capture::{
    CaptureCommand, CaptureRunArgs, CaptureStartArgs, CaptureStopArgs, CaptureTargets,
    ProfileSettingsArgs,
};

/// Runs one `capture` subcommand, prints its table (or JSON) and returns the exit code.
pub(crate) fn run(c: &CaptureCommand) -> Result<i32> {
    match c {
        CaptureCommand::Start(a) => {
            print_outcome(&startstop::start(&start_options(a))?, a.targets.json)
        }
        CaptureCommand::Stop(a) => {
            print_outcome(&startstop::stop(&stop_options(a))?, a.targets.json)
        }
        CaptureCommand::Run(a) => {
            let opts = CaptureOptions {
                interrupt: super::interrupt::ctrl_c("stopping: the servers are sent the stop now"),
                ..run_options(a)
            };
            print_run(&session::run(&opts)?, a.targets.json)
        }
    }
}

/// `--with-stack` / `--no-with-stack` / neither.
fn tri(yes: bool, no: bool) -> Option<bool> {
    match (yes, no) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

/// Overrides the seconds before a long wait is reported (tests; default 5).
pub const NOTICE_AFTER_ENV: &str = "RANKPROF_NOTICE_AFTER";

fn notice_after() -> f64 {
    std::env::var(NOTICE_AFTER_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or_else(|| Targets::default().notice_after)
}

pub(crate) fn targets(t: &CaptureTargets) -> Targets {
    Targets {
        router_url: t.router_url.clone(),
        worker_urls: t.worker_urls.clone(),
        from_log: t.from_log.clone(),
        worker_type: t.worker_type.clone(),
        backend: t.backend,
        timeout: t.timeout,
        notice_after: notice_after(),
        api_key: t.api_key.clone(),
        ca_cert: t.ca_cert.clone(),
    }
}

pub(crate) fn profile(p: &ProfileSettingsArgs) -> ProfileSettings {
    ProfileSettings {
        output_dir: p.output_dir.clone(),
        step: p.step,
        start_step: p.start_step,
        num_steps: p.num_steps,
        activities: p.activities.clone(),
        profile_by_stage: p.profile_by_stage,
        profile_stages: p.profile_stages.clone(),
        with_stack: tri(p.with_stack, p.no_with_stack),
        record_shapes: tri(p.record_shapes, p.no_record_shapes),
        merge_profiles: p.merge_profiles,
        profile_prefix: p.profile_prefix.clone(),
    }
}

pub fn start_options(a: &CaptureStartArgs) -> StartOptions {
    StartOptions {
        targets: targets(&a.targets),
        profile: profile(&a.profile),
        state_dir: crate::capture::record::default_state_dir(),
    }
}

pub fn stop_options(a: &CaptureStopArgs) -> StopOptions {
    StopOptions {
        targets: targets(&a.targets),
        num_steps: a.num_steps,
        output_dir: a.output_dir.clone(),
        state_dir: crate::capture::record::default_state_dir(),
        stop_timeout: a.stop_timeout,
    }
}

pub fn run_options(a: &CaptureRunArgs) -> CaptureOptions {
    CaptureOptions {
        targets: targets(&a.targets),
        profile: profile(&a.profile),
        requests: a.requests,
        prompt: a.prompt.clone(),
        max_tokens: a.max_tokens,
        concurrency: a.concurrency,
        model: a.model.clone(),
        duration: a.duration,
        flush_timeout: a.flush_timeout,
        settle: a.settle,
        stop_timeout: a.stop_timeout,
        no_merge: a.no_merge,
        profiler: a.profiler,
        interrupt: None,
    }
}

/// The notes of what merge and analyze did with the capture's traces, on stderr (as `merge`
/// and `analyze` print them).
fn post_notes(o: &RunOutcome) {
    let Some(pp) = &o.post else {
        return;
    };
    for n in &pp.discovery_notes {
        eprintln!("note: {n}");
    }
    for a in pp.analyses() {
        for n in &a.notes {
            eprintln!("note: {n}");
        }
    }
}

fn format(json: bool) -> Format {
    if json {
        Format::Json
    } else {
        Format::Terminal
    }
}

/// Prints a `capture start`/`stop` outcome (table or JSON) and returns its exit code.
pub(crate) fn print_outcome(o: &Outcome, as_json: bool) -> Result<i32> {
    crate::report::print(o, format(as_json))?;
    Ok(o.outcome.code())
}

/// Prints a `capture run` outcome and returns its exit code.
pub(crate) fn print_run(o: &RunOutcome, as_json: bool) -> Result<i32> {
    if !as_json {
        post_notes(o);
    }
    crate::report::print(o, format(as_json))?;
    Ok(o.outcome.code())
}
