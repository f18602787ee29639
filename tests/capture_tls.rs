//! `capture --ca-cert PEM` / `RANKPROF_CA_CERT` (#12 item 6) against a fake SGLang worker
//! served over https by Python's `http.server` + `ssl` (tests/tls_worker.py), with a private
//! certificate authority made at test time by the `openssl` command: without the CA the
//! capture fails with a certificate error that names `--ca-cert` and no request arrives; with
//! it (option or environment) the start succeeds and the API key arrives as
//! `Authorization: Bearer`. Skips loudly without `openssl`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const KEY: &str = "tls-test-key-42";

/// The fake worker process, killed when dropped.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A CA (ca.pem) and a server certificate for 127.0.0.1 and localhost signed by it (srv.pem,
/// srv.key), all P-256.
fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=rankprof test CA",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "srv.key", "-out", "srv.csr"]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "srv.pem",
        ],
    );
}

fn start_worker(dir: &Path) -> (Worker, u16) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .arg(root.join("tests/tls_worker.py"))
        .arg(dir.join("srv.pem"))
        .arg(dir.join("srv.key"))
        .arg(root.join("../shared/fixtures/router/sglang_get_model_info.json"))
        .arg(dir.join("requests.jsonl"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    let out = child.stdout.take().expect("stdout");
    BufReader::new(out).read_line(&mut line).unwrap();
    let worker = Worker(child);
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("port: {line:?}"));
    (worker, port)
}

fn requests(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn capture_start(url: &str, out: &Path, extra: &[&str], ca_env: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rankprof"));
    c.args(["capture", "start", "--backend", "sglang", "--timeout", "10"])
        .args(["--worker-url", url, "--output-dir"])
        .arg(out)
        .args(extra)
        .env("RANKPROF_API_KEY", KEY)
        .env_remove("RANKPROF_CA_CERT");
    if let Some(p) = ca_env {
        c.env("RANKPROF_CA_CERT", p);
    }
    c.output().expect("rankprof runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn https_worker_behind_a_private_ca_needs_ca_cert() {
    if !Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!(
            "\n**** SKIPPED https_worker_behind_a_private_ca_needs_ca_cert: no `openssl` command \
             to make the test certificates (apt-get install openssl) ****\n"
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    make_certificates(d.path());
    let (_worker, port) = start_worker(d.path());
    let url = format!("https://127.0.0.1:{port}");
    let out = d.path().join("traces");

    // 1. the Mozilla roots only: the certificate is refused, said plainly; nothing arrives
    let o = capture_start(&url, &out, &[], None);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(
        all.contains("certificate is not trusted") && all.contains("--ca-cert"),
        "{all}"
    );
    assert!(requests(d.path()).is_empty(), "{:?}", requests(d.path()));
    assert!(!all.contains(KEY), "the key was printed: {all}");

    // 2. --ca-cert: the start succeeds and the key arrives with it
    let ca = d.path().join("ca.pem");
    let o = capture_start(&url, &out, &["--ca-cert", ca.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let starts: Vec<_> = requests(d.path())
        .into_iter()
        .filter(|r| r["method"] == "POST" && r["path"] == "/start_profile")
        .collect();
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["authorization"], format!("Bearer {KEY}"));

    // 3. the same from RANKPROF_CA_CERT (the worker's profiler is "running": SGLang's
    //    second start would fail, this fake accepts it)
    let o = capture_start(&url, &out, &[], Some(&ca));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // 4. a file that is not PEM: refused when the option is read (usage error), saying why
    let o = capture_start(&url, &out, &["--ca-cert", "srv.csr-missing.pem"], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot read"), "{}", text(&o));
    let key = d.path().join("srv.key");
    let o = capture_start(&url, &out, &["--ca-cert", key.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("holds no certificate"), "{}", text(&o));
}
