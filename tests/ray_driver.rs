//! The Ray driver (examples/ray/rankprof_ray.py, #11) on a local two-node Ray cluster on
//! 127.0.0.1: each node holds half of the ranks' files in its own directory; the driver
//! places one map task on each node (node affinity through the node's custom resource),
//! gathers the partials and reduces them; the report equals a direct `analyze` of all the
//! files. Needs `RANKPROF_RAY_PYTHON` (a python with `ray`; .ci/run installs one): without it
//! the test prints `SKIPPED: …` and passes. The cluster is always stopped (`ray stop --force`),
//! and every wait is bounded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rankprof");

/// Runs `cmd` for at most `limit`; killed past it (then `None`).
fn bounded(cmd: &mut Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // Drain the pipes in threads so that a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take()?;
    let mut err = child.stderr.take()?;
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Some(Output {
                    status,
                    stdout: t_out.join().unwrap_or_default(),
                    stderr: t_err.join().unwrap_or_default(),
                })
            }
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(200)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                eprintln!("killed after {limit:?}: {cmd:?}");
                return None;
            }
        }
    }
}

/// Stops the local cluster when dropped, whatever happened.
struct Cluster {
    ray: PathBuf,
    env_tmp: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let r = bounded(
            Command::new(&self.ray)
                .args(["stop", "--force"])
                .env("RAY_TMPDIR", &self.env_tmp),
            Duration::from_secs(60),
        );
        eprintln!("ray stop --force: {:?}", r.map(|o| o.status));
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The report with each file path reduced to its name (the driver's copies sit elsewhere).
fn normalized(json: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(json).expect("JSON report");
    if let Some(files) = v["files"].as_array_mut() {
        for f in files {
            let name = Path::new(f["path"].as_str().unwrap_or(""))
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            f["path"] = name.into();
        }
    }
    if let Some(dims) = v["groups"]["dims"].as_array_mut() {
        dims.retain(|g| g["dim"] != "node");
    }
    v
}

#[test]
fn the_ray_driver_reduces_the_partials_of_two_nodes_as_one_run() {
    let Ok(python) = std::env::var("RANKPROF_RAY_PYTHON") else {
        println!(
            "SKIPPED: RANKPROF_RAY_PYTHON is not set (a python with `ray`; .ci/run installs one)"
        );
        return;
    };
    let ok = bounded(
        Command::new(&python).args(["-c", "import ray"]),
        Duration::from_secs(60),
    );
    if !ok.as_ref().is_some_and(|o| o.status.success()) {
        println!(
            "SKIPPED: {python} cannot import ray: {:?}",
            ok.map(|o| text(&o))
        );
        return;
    }
    let ray = Path::new(&python).with_file_name("ray");
    assert!(ray.exists(), "no ray CLI beside {python}");

    // Half of the ranks on each node.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sglang-tp2dp2");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4);
    // A short temp dir: Ray's socket paths must stay under 107 bytes.
    let t = tempfile::Builder::new()
        .prefix("rp")
        .tempdir_in("/tmp")
        .unwrap();
    let (a, b) = (t.path().join("nodeA"), t.path().join("nodeB"));
    for (dir, part) in [(&a, &files[..2]), (&b, &files[2..])] {
        std::fs::create_dir(dir).unwrap();
        for f in part {
            std::fs::copy(f, dir.join(f.file_name().unwrap())).unwrap();
        }
    }

    let port = free_port().to_string();
    let ray_tmp = t.path().join("r");
    std::fs::create_dir(&ray_tmp).unwrap();
    let _cluster = Cluster {
        ray: ray.clone(),
        env_tmp: ray_tmp.clone(),
    };
    let start = |args: &[&str]| {
        let o = bounded(
            Command::new(&ray)
                .args(args)
                .env("RAY_TMPDIR", &ray_tmp)
                .env("RAY_USAGE_STATS_ENABLED", "0"),
            Duration::from_secs(180),
        )
        .expect("ray start within 180 s");
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    };
    let temp = ray_tmp.display().to_string();
    start(&[
        "start",
        "--head",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        &port,
        "--num-cpus",
        "1",
        "--resources",
        r#"{"nodeA": 1}"#,
        "--temp-dir",
        &temp,
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]);
    let address = format!("127.0.0.1:{port}");
    start(&[
        "start",
        "--address",
        &address,
        "--node-ip-address",
        "127.0.0.1",
        "--num-cpus",
        "1",
        "--resources",
        r#"{"nodeB": 1}"#,
    ]);

    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ray/rankprof_ray.py");
    let o = bounded(
        Command::new(&python)
            .arg(&driver)
            .args(["--address", &address, "--rankprof", BIN, "--timeout", "240"])
            .arg("--node")
            .arg(format!("nodeA={}", a.display()))
            .arg("--node")
            .arg(format!("nodeB={}", b.display()))
            .args(["--", "--format", "json"])
            .env("RAY_TMPDIR", &ray_tmp),
        Duration::from_secs(300),
    )
    .expect("the driver finishes within 300 s");
    let log = text(&o);
    assert!(o.status.success(), "driver: {log}");
    // One map task ran on each node (the driver names each task's node).
    let nodes: std::collections::BTreeSet<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("rankprof_ray: map on node "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(nodes.len(), 2, "two nodes ran a map task: {log}");

    let direct = Command::new(BIN)
        .args(["analyze", "--format", "json", "--profile-dir"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(direct.status.success(), "{}", text(&direct));
    // The reduce knows the two nodes (one per directory the ranks came from, docs/analysis.md,
    // "Map and reduce"); a direct run over one directory has no node groups. All else is equal.
    let nodes = |json: &[u8]| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(json).expect("JSON report");
        v["groups"]["dims"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter(|g| g["dim"] == "node")
                    .map(|g| g["group"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (n_ray, n_direct) = (nodes(&o.stdout), nodes(&direct.stdout));
    assert_eq!(n_ray.len(), 2, "{n_ray:?}");
    assert!(n_ray.iter().any(|n| n.ends_with("nodeA")), "{n_ray:?}");
    assert!(n_direct.is_empty(), "{n_direct:?}");
    assert_eq!(normalized(&o.stdout), normalized(&direct.stdout));
    // The same files named where they lie, in the two node directories: one profile (its
    // ranks are distinct), with the same node groups as the reduce.
    let mut split = Command::new(BIN);
    split.args(["analyze", "--format", "json"]);
    for dir in [&a, &b] {
        let mut fs: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        fs.sort();
        split.args(fs);
    }
    let split = split.output().unwrap();
    assert!(split.status.success(), "{}", text(&split));
    assert_eq!(nodes(&split.stdout), n_ray);
    assert_eq!(normalized(&split.stdout), normalized(&o.stdout));
}
