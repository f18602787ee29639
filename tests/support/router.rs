//! The real `sglang-router` (PyPI) as a child process, killed when the guard drops.
//!
//! The Python that has it installed comes from `RANKPROF_SGLANG_ROUTER_PYTHON` (`.ci/run` sets
//! it), else `.venv/bin/python` in the project. Tests skip loudly when neither works.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::http::dead_port;

pub const INSTALL: &str =
    "python3 -m venv .venv && .venv/bin/pip install sglang-router (or run .ci/run)";

/// A Python that can `import sglang_router`.
pub fn router_python() -> Option<PathBuf> {
    let candidates = std::env::var_os("RANKPROF_SGLANG_ROUTER_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::iter::once(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
        ));
    candidates.into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import sglang_router"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Returns the router Python or prints a loud SKIPPED line and returns from the test.
#[macro_export]
macro_rules! router_or_skip {
    () => {
        match $crate::support::router::router_python() {
            Some(py) => py,
            None => {
                eprintln!(
                    "\n**** SKIPPED {}: the real sglang-router is not installed here. Install it: {} ****\n",
                    module_path!(),
                    $crate::support::router::INSTALL
                );
                return;
            }
        }
    };
}

pub struct Router {
    child: Child,
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Router {
    /// Starts `python -m sglang_router.launch_router ARGS --host 127.0.0.1 --port P
    /// --prometheus-port Q` and waits until `GET /workers` lists `expect` healthy workers.
    pub fn launch(py: &Path, args: &[String], expect: usize) -> Router {
        Router::launch_with_key(py, args, expect, None)
    }

    /// As [`Router::launch`], with `--api-key KEY` (the router then answers 401 without it).
    pub fn launch_with_key(py: &Path, args: &[String], expect: usize, key: Option<&str>) -> Router {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("router.log");
        let port = dead_port();
        let prom = dead_port();
        let child = Command::new(py)
            .args(["-m", "sglang_router.launch_router"])
            .args(args)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--prometheus-port",
                &prom.to_string(),
            ])
            .args(["--log-level", "warn"])
            .args(key.map(|k| ["--api-key", k]).into_iter().flatten())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.path().join("router.err")).unwrap())
            .spawn()
            .expect("start sglang-router");
        let r = Router {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        };
        r.wait_for(expect, key);
        r
    }

    fn wait_for(&self, expect: usize, key: Option<&str>) {
        let t0 = Instant::now();
        let mut last = String::new();
        while t0.elapsed() < Duration::from_secs(60) {
            let mut req =
                ureq::get(&format!("{}/workers", self.url)).timeout(Duration::from_secs(2));
            if let Some(k) = key {
                req = req.set("Authorization", &format!("Bearer {k}"));
            }
            if let Ok(resp) = req.call() {
                last = resp.into_string().unwrap_or_default();
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&last) {
                    let healthy = v["workers"]
                        .as_array()
                        .map_or(0, |a| a.iter().filter(|w| w["is_healthy"] == true).count());
                    if healthy >= expect {
                        return;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let err =
            std::fs::read_to_string(self.log.with_file_name("router.err")).unwrap_or_default();
        panic!("router never listed {expect} healthy workers; last /workers: {last}\nlog: {log}\nstderr: {err}");
    }

    /// The router's own `GET /workers` answer.
    pub fn workers_answer(&self) -> serde_json::Value {
        let body = ureq::get(&format!("{}/workers", self.url))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
