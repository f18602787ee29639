//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures")
        .join(rel)
}

pub fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs a Python checker from tests/ and parses the JSON it prints.
pub fn python(script: &str, args: &[&Path], extra: &[&str]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(manifest("tests").join(script))
        .args(args)
        .args(extra)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("checker prints JSON")
}

pub fn write_gz(path: &Path, text: &[u8]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    w.write_all(text).unwrap();
    w.finish().unwrap();
}

/// A small Kineto-shaped trace: `n` kernels on GPU 0 (each with a launch, a flow pair and a
/// correlation), one ProfilerStep per kernel, and `baseTimeNanoseconds` after the events as
/// Kineto writes it.
pub fn kineto(base_ns: Option<i64>, n: usize, ts0_us: f64) -> String {
    let mut ev = vec![
        r#"{"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python3"}}"#
            .to_string(),
        r#"{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}}"#.to_string(),
        r#"{"ph":"M","name":"process_sort_index","pid":0,"tid":0,"args":{"sort_index":0}}"#
            .to_string(),
    ];
    for i in 0..n {
        let t = ts0_us + 100.0 * i as f64;
        let c = 1000 + i;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}","pid":100,"tid":1,"ts":{t:.3},"dur":90}}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":1,"ts":{:.3},"dur":5,"args":{{"correlation":{c},"External id":{}}}}}"#, t + 1.0, 50 + i));
        ev.push(format!(
            r#"{{"ph":"s","cat":"ac2g","name":"ac2g","id":{c},"pid":100,"tid":1,"ts":{:.3}}}"#,
            t + 1.0
        ));
        ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":{:.3},"dur":40.5,"args":{{"device":0,"stream":7,"correlation":{c},"External id":{}}}}}"#, t + 10.0, 50 + i));
        ev.push(format!(r#"{{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{c},"pid":0,"tid":7,"ts":{:.3}}}"#, t + 10.0));
        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"forward","pid":100,"tid":1,"ts":{:.3},"dur":3}}"#, t + 0.5));
    }
    let mut doc = format!(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100\"}}],\n\"traceEvents\": [\n{}\n]",
        ev.join(",\n")
    );
    doc.push_str(", \"traceName\": \"x\", \"displayTimeUnit\": \"ms\"");
    if let Some(b) = base_ns {
        doc.push_str(&format!(", \"baseTimeNanoseconds\": {b}"));
    }
    doc.push_str("}\n");
    doc
}
