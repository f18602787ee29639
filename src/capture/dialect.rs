//! What SGLang and vLLM servers expect and what their answers mean — pure functions, no I/O.
//!
//! - SGLang: `POST /start_profile` with a `ProfileReqInput` JSON body (only the fields given are
//!   sent, so the server's defaults apply to the rest); `POST /stop_profile` (`/end_profile`
//!   after a 404: no release read from 0.3.6 on has it, a second try for forks). With
//!   `num_steps` the profiler stops by itself, and a later stop answers **500** ("Profiling is
//!   not in progress. Call /start_profile first."): that is success.
//! - vLLM: `POST /start_profile` / `/stop_profile`, which only exist when the server was started
//!   with `--profiler-config` (older: `VLLM_TORCH_PROFILER_DIR`); otherwise **404**. The start
//!   takes an optional body of per-session overrides (`StartProfileRequest`,
//!   `vllm/entrypoints/serve/profile/api_router.py`): `max_iterations` (the profiler stops by
//!   itself after that many engine iterations; a later stop is ignored, 200) and
//!   `profile_prefix`; older vLLM ignores a body. A start while profiling answers **409**.
//! - Detection (`--backend auto`): SGLang answers `GET /model_info` (newer releases: 0.5.23
//!   has it, 0.5.3 not) or, older, `GET /get_model_info` (later releases keep it but log it as
//!   deprecated at each call, so it is asked second); vLLM answers neither, and its
//!   `GET /v1/models` entries say `"owned_by": "vllm"`.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::options::{Activity, ProfileSettings};
use super::workers::excerpt;

/// A server dialect.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    Sglang,
    Vllm,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sglang => "sglang",
            Dialect::Vllm => "vllm",
        }
    }
}

pub(crate) const START: &str = "/start_profile";
pub(crate) const STOP: &str = "/stop_profile";
/// Tried when `/stop_profile` answers 404. No SGLang release read (0.3.6 to 0.5.23) has it;
/// kept as a harmless second try for forks and builds that name the stop this way.
pub(crate) const STOP_OLD: &str = "/end_profile";
/// Probed first by `--backend auto`: only SGLang has them, the current name first (the old
/// one logs a deprecation warning on the server at each call), the old one on a 404.
pub(crate) const PROBE_SGLANG: [&str; 2] = ["/model_info", "/get_model_info"];
/// Probed last: both have it, the `owned_by` field tells them apart.
pub(crate) const PROBE_MODELS: &str = "/v1/models";

/// What the two probes say. `models` is `None` when it was not asked.
pub(crate) fn detect(
    model_info_status: Option<u16>,
    models: Option<(Option<u16>, &str)>,
) -> Option<Dialect> {
    if matches!(model_info_status, Some(200..=299)) {
        return Some(Dialect::Sglang);
    }
    let (status, body) = models?;
    if !matches!(status, Some(200..=299)) {
        return None;
    }
    let v: Value = serde_json::from_str(body).ok()?;
    let owner = v
        .get("data")
        .and_then(Value::as_array)
        .and_then(|d| d.first())
        .and_then(|m| m.get("owned_by"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if owner.eq_ignore_ascii_case("sglang") {
        Some(Dialect::Sglang)
    } else {
        Some(Dialect::Vllm)
    }
}

fn activity_name(a: Activity) -> &'static str {
    match a {
        Activity::Cpu => "CPU",
        Activity::Gpu => "GPU",
        Activity::Mem => "MEM",
        Activity::Rpd => "RPD",
        Activity::CudaProfiler => "CUDA_PROFILER",
    }
}

/// A stage as SGLang's per-stage profiler matches it: `prefill` or `decode`
/// (`utils/profile_utils.py`, `_get_stage_from_forward_mode`), so `EXTEND` (the stage the file
/// names carry) is sent as `prefill` and `DECODE` as `decode`; any other name as given.
fn stage_name(s: &str) -> String {
    match s.to_ascii_lowercase().as_str() {
        "extend" | "prefill" => "prefill".into(),
        "decode" => "decode".into(),
        _ => s.to_string(),
    }
}

/// SGLang's `ProfileReqInput` body: only the fields given. `output_dir` is passed separately
/// because `capture` decides it (absolute, `step_N/`).
pub(crate) fn sglang_start_body(p: &ProfileSettings, output_dir: Option<&Path>) -> Value {
    let mut m = Map::new();
    if let Some(d) = output_dir {
        m.insert("output_dir".into(), json!(d.to_string_lossy()));
    }
    if let Some(v) = p.start_step {
        m.insert("start_step".into(), json!(v));
    }
    if let Some(v) = p.num_steps {
        m.insert("num_steps".into(), json!(v));
    }
    if !p.activities.is_empty() {
        let names: Vec<&str> = p.activities.iter().map(|a| activity_name(*a)).collect();
        m.insert("activities".into(), json!(names));
    }
    if p.profile_by_stage {
        m.insert("profile_by_stage".into(), json!(true));
    }
    if let Some(v) = p.with_stack {
        m.insert("with_stack".into(), json!(v));
    }
    if let Some(v) = p.record_shapes {
        m.insert("record_shapes".into(), json!(v));
    }
    if p.merge_profiles {
        m.insert("merge_profiles".into(), json!(true));
    }
    if let Some(v) = &p.profile_prefix {
        m.insert("profile_prefix".into(), json!(v));
    }
    if !p.profile_stages.is_empty() {
        let stages: Vec<String> = p.profile_stages.iter().map(|s| stage_name(s)).collect();
        m.insert("profile_stages".into(), json!(stages));
    }
    Value::Object(m)
}

/// vLLM's `StartProfileRequest` body: `--num-steps` as `max_iterations` and
/// `--profile-prefix`; `None` (an empty body) when neither is given. `--start-step` is not
/// sent: vLLM's `delay_iterations` counts from the start request, SGLang's `start_step` from
/// the server's first forward step.
pub(crate) fn vllm_start_body(p: &ProfileSettings) -> Option<Value> {
    let mut m = Map::new();
    if let Some(v) = p.num_steps {
        m.insert("max_iterations".into(), json!(v));
    }
    if let Some(v) = &p.profile_prefix {
        m.insert("profile_prefix".into(), json!(v));
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// The body of a start request (`None`: an empty body).
pub(crate) fn start_body(
    d: Dialect,
    p: &ProfileSettings,
    output_dir: Option<&Path>,
) -> Option<Value> {
    match d {
        Dialect::Sglang => Some(sglang_start_body(p, output_dir)),
        Dialect::Vllm => vllm_start_body(p),
    }
}

/// What one answer means for the worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) ok: bool,
    /// Empty when there is nothing to say.
    pub(crate) note: String,
}

impl Verdict {
    fn ok(note: impl Into<String>) -> Self {
        Verdict {
            ok: true,
            note: note.into(),
        }
    }
    fn failed(note: impl Into<String>) -> Self {
        Verdict {
            ok: false,
            note: note.into(),
        }
    }
}

/// The hint for vLLM's 404: its profiling routes exist only with a profiler configured.
pub(crate) fn vllm_no_profiler_hint(dir: Option<&Path>) -> String {
    let dir = dir.map_or_else(
        || "/path/to/traces".to_string(),
        |d| d.to_string_lossy().into_owned(),
    );
    format!(
        "vLLM was started without --profiler-config, so it has no profiling routes: restart it with \
         --profiler-config '{{\"profiler\":\"torch\",\"torch_profiler_dir\":\"{dir}\"}}' \
         (older vLLM: VLLM_TORCH_PROFILER_DIR={dir})"
    )
}

fn body_says(body: &str) -> String {
    let b = body.trim();
    if b.is_empty() || b.eq_ignore_ascii_case("Internal Server Error") {
        String::new()
    } else {
        format!(": {}", excerpt(b, 160))
    }
}

fn common(status: u16, body: &str) -> Verdict {
    match status {
        401 | 403 => Verdict::failed(format!(
            "HTTP {status}: the server wants an (admin) API key{}",
            body_says(body)
        )),
        503 => Verdict::failed(format!(
            "HTTP 503: the server is not ready (starting, overloaded or shutting down){}",
            body_says(body)
        )),
        _ => Verdict::failed(format!("HTTP {status}{}", body_says(body))),
    }
}

/// What to check when servers that answered stop wrote no trace where rankprof looks: appended
/// to the flush-timeout note. vLLM's `--profiler-config` also opens the routes for its `cuda`
/// (nsys ranges) and `proton` profilers, which answer start and stop alike but write no Kineto
/// trace (`vllm/config/profiler.py`'s `ProfilerKind`; Proton writes `proton_*` files into a
/// directory of its own), and it writes into its own `torch_profiler_dir`, which rankprof only
/// knows as `--output-dir`.
pub(crate) fn missing_traces_hint(d: Dialect) -> &'static str {
    match d {
        Dialect::Vllm => {
            "; vLLM writes its traces into --profiler-config's torch_profiler_dir (give that \
             directory as --output-dir), and only with \"profiler\": \"torch\" (\"cuda\" and \
             \"proton\" answer the same routes but write no Kineto trace)"
        }
        Dialect::Sglang => "",
    }
}

/// The answer to a start request.
pub(crate) fn start_verdict(d: Dialect, status: u16, body: &str, dir: Option<&Path>) -> Verdict {
    match (d, status) {
        (_, 200..=299) => Verdict::ok(""),
        (Dialect::Vllm, 404) => Verdict::failed(vllm_no_profiler_hint(dir)),
        (Dialect::Vllm, 409) => Verdict::failed(format!(
            "HTTP 409: vLLM is already profiling (run `rankprof capture stop` first){}",
            body_says(body)
        )),
        (Dialect::Vllm, 400 | 422) => Verdict::failed(format!(
            "HTTP {status}: the server rejected the profile settings (vLLM's profile_prefix \
             takes letters, digits, '.', '_' and '-'){}",
            body_says(body)
        )),
        (Dialect::Sglang, 404) => Verdict::failed(
            "no /start_profile here: not an SGLang worker (a router has no profiling routes: \
             pass it as --router-url)",
        ),
        (Dialect::Sglang, 500) => Verdict::failed(format!(
            "HTTP 500: profiling already in progress (run `rankprof capture stop` first), an \
             activity this server cannot record (MEM without CUDA), or settings the per-stage \
             profiler (SGLANG_PROFILE_V2) refuses: it takes --profile-by-stage, without \
             --start-step or --merge-profiles; see the server log{}",
            body_says(body)
        )),
        (Dialect::Sglang, 400 | 422) => Verdict::failed(format!(
            "HTTP {status}: the server rejected the profile settings{}",
            body_says(body)
        )),
        _ => common(status, body),
    }
}

/// True when a stop answered 404 and SGLang's older route should be tried.
pub(crate) fn retry_stop_on_old_route(d: Dialect, path: &str, status: u16) -> bool {
    d == Dialect::Sglang && status == 404 && path == STOP
}

/// The answer to a stop request. `auto_stop`: the capture was started with these `num_steps`,
/// so the profiler may have stopped by itself.
pub(crate) fn stop_verdict(
    d: Dialect,
    status: u16,
    body: &str,
    auto_stop: Option<u64>,
    dir: Option<&Path>,
) -> Verdict {
    let not_running = body.contains("not in progress");
    match (d, status) {
        (_, 200..=299) => Verdict::ok(""),
        (Dialect::Sglang, 500) if auto_stop.is_some() => Verdict::ok(format!(
            "had already stopped by itself after {} steps (num_steps)",
            auto_stop.unwrap_or_default()
        )),
        (Dialect::Sglang, 500) if not_running => {
            Verdict::ok("was not profiling: already stopped (after num_steps?) or never started")
        }
        (Dialect::Sglang, 500) => Verdict::failed(
            "HTTP 500: SGLang answers so when profiling is not in progress (never started, or already \
             stopped after num_steps: pass --num-steps to say so), when writing the trace failed, \
             or when its per-stage profiler (SGLANG_PROFILE_V2) is asked to stop by hand (it \
             stops by itself after --num-steps): see the server log",
        ),
        (Dialect::Sglang, 404) => Verdict::failed(
            "no /stop_profile nor /end_profile here: not an SGLang worker (a router has no profiling \
             routes: pass it as --router-url)",
        ),
        (Dialect::Vllm, 404) => Verdict::failed(vllm_no_profiler_hint(dir)),
        (Dialect::Vllm, 500) => Verdict::failed(format!(
            "HTTP 500 while stopping: writing the trace failed? see the server log{}",
            body_says(body)
        )),
        _ => common(status, body),
    }
}

/// One load request: the route and its body.
pub(crate) fn load_request(
    d: Dialect,
    prompt: &str,
    max_tokens: u64,
    model: Option<&str>,
) -> (&'static str, Value) {
    match d {
        Dialect::Sglang => (
            "/generate",
            json!({"text": prompt, "sampling_params": {"max_new_tokens": max_tokens, "ignore_eos": true}}),
        ),
        Dialect::Vllm => (
            "/v1/completions",
            json!({"model": model.unwrap_or("default"), "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true}),
        ),
    }
}

/// The first model id in a `GET /v1/models` answer.
pub(crate) fn first_model(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.get("data")?
        .as_array()?
        .first()?
        .get("id")?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_body_has_only_what_was_given() {
        let p = ProfileSettings::default();
        assert_eq!(sglang_start_body(&p, None), json!({}));
        let p = ProfileSettings {
            start_step: Some(3),
            num_steps: Some(5),
            activities: vec![Activity::Cpu, Activity::Gpu, Activity::CudaProfiler],
            profile_by_stage: true,
            with_stack: Some(false),
            record_shapes: Some(true),
            merge_profiles: true,
            profile_prefix: Some("exp1".into()),
            profile_stages: vec!["EXTEND".into(), "Decode".into(), "mixed".into()],
            ..Default::default()
        };
        assert_eq!(
            sglang_start_body(&p, Some(Path::new("/data/prof/step_3"))),
            json!({"output_dir": "/data/prof/step_3", "start_step": 3, "num_steps": 5,
                   "activities": ["CPU", "GPU", "CUDA_PROFILER"], "profile_by_stage": true,
                   "with_stack": false, "record_shapes": true, "merge_profiles": true,
                   "profile_prefix": "exp1", "profile_stages": ["prefill", "decode", "mixed"]})
        );
        // vLLM takes only num_steps (as max_iterations) and the prefix of these.
        assert_eq!(
            start_body(Dialect::Vllm, &p, None),
            Some(json!({"max_iterations": 5, "profile_prefix": "exp1"}))
        );
    }

    #[test]
    fn detection() {
        assert_eq!(detect(Some(200), None), Some(Dialect::Sglang));
        let vllm = r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm"}]}"#;
        assert_eq!(
            detect(Some(404), Some((Some(200), vllm))),
            Some(Dialect::Vllm)
        );
        let sgl = r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"sglang"}]}"#;
        assert_eq!(
            detect(Some(404), Some((Some(200), sgl))),
            Some(Dialect::Sglang)
        );
        assert_eq!(detect(Some(404), Some((Some(404), ""))), None);
        assert_eq!(detect(None, Some((None, ""))), None);
    }

    #[test]
    fn sglang_500_after_num_steps_is_success() {
        let v = stop_verdict(Dialect::Sglang, 500, "Internal Server Error", Some(3), None);
        assert!(v.ok);
        assert_eq!(
            v.note,
            "had already stopped by itself after 3 steps (num_steps)"
        );
        let v = stop_verdict(
            Dialect::Sglang,
            500,
            "Profiling is not in progress. Call /start_profile first.",
            None,
            None,
        );
        assert!(v.ok);
        let v = stop_verdict(Dialect::Sglang, 500, "Internal Server Error", None, None);
        assert!(!v.ok);
        assert!(v.note.contains("--num-steps"));
        // vLLM has no num_steps: a 500 is a failure
        assert!(!stop_verdict(Dialect::Vllm, 500, "", Some(3), None).ok);
    }

    #[test]
    fn vllm_start_body_carries_num_steps_and_prefix_only() {
        let mut p = ProfileSettings {
            start_step: Some(3),
            ..ProfileSettings::default()
        };
        assert_eq!(start_body(Dialect::Vllm, &p, None), None);
        p.num_steps = Some(5);
        p.profile_prefix = Some("run7".into());
        assert_eq!(
            start_body(Dialect::Vllm, &p, None),
            Some(json!({"max_iterations": 5, "profile_prefix": "run7"}))
        );
        let v = start_verdict(Dialect::Vllm, 409, "{\"detail\":\"already active\"}", None);
        assert!(!v.ok && v.note.contains("capture stop"), "{}", v.note);
    }

    #[test]
    fn vllm_404_says_how_to_restart() {
        let v = start_verdict(
            Dialect::Vllm,
            404,
            r#"{"detail":"Not Found"}"#,
            Some(Path::new("/tmp/tr")),
        );
        assert!(!v.ok);
        assert!(
            v.note.contains(
                r#"--profiler-config '{"profiler":"torch","torch_profiler_dir":"/tmp/tr"}'"#
            ),
            "{}",
            v.note
        );
        assert!(!stop_verdict(Dialect::Vllm, 404, "", None, None).ok);
    }

    #[test]
    fn other_statuses() {
        assert!(start_verdict(Dialect::Sglang, 200, "Start profiling.\n", None).ok);
        let v = start_verdict(Dialect::Sglang, 503, "", None);
        assert!(!v.ok && v.note.contains("503"));
        let v = start_verdict(Dialect::Sglang, 500, "Internal Server Error", None);
        assert!(!v.ok && v.note.contains("already in progress"));
        assert!(retry_stop_on_old_route(Dialect::Sglang, STOP, 404));
        assert!(!retry_stop_on_old_route(Dialect::Sglang, STOP_OLD, 404));
        assert!(!retry_stop_on_old_route(Dialect::Vllm, STOP, 404));
    }

    #[test]
    fn load_bodies() {
        let (path, body) = load_request(Dialect::Sglang, "hi", 8, None);
        assert_eq!(path, "/generate");
        assert_eq!(body["sampling_params"]["max_new_tokens"], 8);
        let (path, body) = load_request(Dialect::Vllm, "hi", 8, Some("llama"));
        assert_eq!(path, "/v1/completions");
        assert_eq!(body["model"], "llama");
        assert_eq!(
            first_model(r#"{"data":[{"id":"a"},{"id":"b"}]}"#).as_deref(),
            Some("a")
        );
    }
}
