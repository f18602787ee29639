//! CUDA memory snapshots (#53): `tests/make_snapshot.py` writes what
//! `torch.cuda.memory._dump_snapshot` writes (one per rank, SGLang's `…-TP-<tp>-memory.pickle`
//! names, rank 1 planted with 2 GiB from `model.py:42 load_weights`) beside the 4 ranks of
//! `fixtures/sglang-tp4`; every figure of `analyze --format json`'s `snapshots` list must
//! equal `tests/truth_snapshot.py`'s (stdlib `pickle.load` of the whole file), the plant must
//! be the top frame of rank 1's peak, and a damaged snapshot must be reported with its byte
//! offset and what came before kept.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{have_python, manifest};
use rankprof::trace::snapshot::read_snapshot;
use serde_json::Value;

const PLANT: i64 = 2 << 30;

fn python(args: &[&str]) -> Vec<u8> {
    let out = Command::new("python3")
        .args(args)
        .current_dir(manifest(""))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A temporary profile: the 4 SGLang TP ranks and a snapshot per rank (another time stamp, as
/// SGLang writes: the rank comes from `TP-<tp>`).
fn profile(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rankprof-snap-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for e in std::fs::read_dir(manifest("fixtures/sglang-tp4")).expect("fixture") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, dir.join(p.file_name().expect("name"))).expect("copy");
    }
    let d = dir.to_str().expect("utf-8");
    let plant = format!("1:{PLANT}");
    python(&[
        "tests/make_snapshot.py",
        d,
        "--ranks",
        "4",
        "--prefix",
        "1790857109.25",
        "--plant",
        &plant,
        "--check",
    ]);
    dir
}

fn truth(path: &Path) -> Value {
    let out = python(&["tests/truth_snapshot.py", path.to_str().expect("utf-8")]);
    serde_json::from_slice(&out).expect("truth prints JSON")
}

fn analyze_json(dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["analyze", "--profile-dir", dir.to_str().expect("utf-8")])
        .args(["--format", "json"])
        .output()
        .expect("rankprof runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("analyze prints JSON")
}

const FIELDS: [&str; 12] = [
    "device",
    "segments",
    "allocated_bytes",
    "reserved_bytes",
    "trace_entries",
    "peak_allocated_bytes",
    "peak_entry",
    "peak_time_us",
    "before_trace_bytes",
    "oom_entries",
    "top_frames_at",
    "top_frames",
];

#[test]
fn snapshot_figures_equal_the_truth_and_the_plant() {
    if !have_python("the snapshot truth") {
        return;
    }
    let dir = profile("truth");
    let want = truth(&dir);
    let got = analyze_json(&dir);
    let rows = got["snapshots"].as_array().expect("a snapshots list");
    assert_eq!(rows.len(), 4, "{rows:#?}");
    for (k, g) in rows.iter().enumerate() {
        let file = g["file"].as_str().expect("file");
        assert_eq!(file, format!("1790857109.25-TP-{k}-memory.pickle"));
        assert_eq!(g["rank"], format!("TP{k:02}"), "attached by TP rank: {g}");
        let t = &want[file][0];
        for f in FIELDS {
            assert_eq!(g[f], t[f], "{file} {f}");
        }
    }
    // The plant: 2 GiB from model.py:42 load_weights, the largest group at rank 1's peak, and
    // rank 1's peak 2 GiB above the others'.
    let top = &rows[1]["top_frames"][0];
    assert_eq!(top["frame"], "/srv/app/model.py:42 load_weights");
    assert_eq!(top["bytes"], PLANT);
    let peak = |k: usize| rows[k]["peak_allocated_bytes"].as_i64().expect("peak");
    assert_eq!(
        peak(1) - peak(2),
        PLANT,
        "rank 2 has the same program, no plant"
    );
    let line = got["verdict"]["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(Value::as_str)
        .find(|l| l.starts_with("Memory (snapshot):"))
        .expect("a snapshot line")
        .to_string();
    assert!(
        line.contains("rank TP01") && line.contains("model.py:42 load_weights"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_snapshot_is_reported_at_its_offset_and_salvaged() {
    if !have_python("the snapshot truth") {
        return;
    }
    let dir = profile("damage");
    let path = dir.join("1790857109.25-TP-1-memory.pickle");
    let whole = std::fs::read(&path).expect("snapshot");
    let want = truth(&path);
    let want = &want["1790857109.25-TP-1-memory.pickle"][0];
    // Cut in the traces (after the segments): the segments' figures are whole.
    let cut = whole.len() * 3 / 4;
    std::fs::write(&path, &whole[..cut]).expect("write");
    let r = read_snapshot(&path).expect("opens");
    assert_eq!(r.damage, Some(format!("truncated at byte {cut}")));
    let d = &r.devices[0];
    assert_eq!(d.allocated_bytes, want["allocated_bytes"].as_i64().unwrap());
    assert_eq!(d.reserved_bytes, want["reserved_bytes"].as_i64().unwrap());
    assert!(d.trace_entries > 0 && d.trace_entries < want["trace_entries"].as_u64().unwrap());
    // An opcode the reader does not know, at an opcode's place.
    let at: usize = String::from_utf8(python(&[
        "-c",
        "import pickletools,sys; d=open(sys.argv[1],'rb').read(); \
         p=[q for o,a,q in pickletools.genops(d) if o.name=='EMPTY_DICT']; print(p[len(p)//2])",
        dir.join("1790857109.25-TP-2-memory.pickle")
            .to_str()
            .unwrap(),
    ]))
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    let mut bad = whole.clone();
    bad[at] = 0xff;
    std::fs::write(&path, &bad).expect("write");
    let r = read_snapshot(&path).expect("opens");
    assert_eq!(
        r.damage,
        Some(format!("unknown pickle opcode 0xff at byte {at}"))
    );
    // analyze names the file and the offset in its notes, and still shows the rank.
    let got = analyze_json(&dir);
    let notes: Vec<&str> = got["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("TP-1-memory.pickle") && n.contains(&format!("byte {at}"))),
        "{notes:?}"
    );
    assert_eq!(got["snapshots"].as_array().unwrap().len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gzipped_snapshot_reads_the_same() {
    if !have_python("the snapshot truth") {
        return;
    }
    let dir = profile("gzip");
    let path = dir.join("1790857109.25-TP-1-memory.pickle");
    let plain = read_snapshot(&path).expect("opens");
    python(&["-c", "import gzip,sys; p=sys.argv[1]; open(p+'.gz','wb').write(gzip.compress(open(p,'rb').read()))", path.to_str().unwrap()]);
    let gz = read_snapshot(&dir.join("1790857109.25-TP-1-memory.pickle.gz")).expect("opens");
    assert!(gz.gzip && gz.damage.is_none());
    assert_eq!(gz.devices, plain.devices);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_profile_without_snapshots_has_no_snapshot_list() {
    let got = analyze_json(&manifest("fixtures/sglang-tp4"));
    assert!(got.get("snapshots").is_none());
}
