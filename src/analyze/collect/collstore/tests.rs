//! Unit tests of the collective store: in memory and spilled, read back in order.

use super::*;

fn ev(key: u32, name: u32, seq: u32, start: i64) -> CollEv {
    CollEv {
        key,
        name,
        seq,
        start,
        end: start + 5,
        prev_end: 0,
        busy: 0,
        pre: 0,
        bytes: 7,
        from_step: false,
        waited: crate::analyze::collect::collector::BLOCKING,
        overlapped: false,
    }
}

fn read_all(c: &RankColls) -> Vec<(String, String, i64)> {
    let mut cur = c.cursor();
    let mut out = Vec::new();
    for (k, &n) in c.keys.iter().zip(&c.counts) {
        for _ in 0..n {
            let r = cur.next_of(k).unwrap();
            assert_eq!(c.keys[r.key as usize], *k);
            out.push((k.clone(), c.name(r.name).to_string(), r.start));
        }
    }
    assert!(cur.next_rec().unwrap().is_none());
    out
}

/// Out-of-order records of three collector keys (two share a label, one has none), stored
/// in memory and spilled: the same lists, sorted by label then start, ties by arrival.
#[test]
fn spilled_and_in_memory_stores_read_back_the_same() {
    let labels: Vec<String> = ["b", "a", "b", "unused"].map(String::from).to_vec();
    let names: Vec<String> = ["x", "y"].map(String::from).to_vec();
    let mut raw = Vec::new();
    for i in 0..3000u32 {
        let key = [0, 1, 2][(i * 7 % 3) as usize];
        let start = i64::from((i * 7919) % 1000);
        raw.push(ev(key, i % 2, i, start));
    }
    let mut want: Vec<(String, String, i64, u32)> = raw
        .iter()
        .map(|e| {
            (
                labels[e.key as usize].clone(),
                names[e.name as usize].clone(),
                e.start + 100,
                e.seq,
            )
        })
        .collect();
    want.sort_by(|a, b| (&a.0, a.2, a.3).cmp(&(&b.0, b.2, b.3)));
    let want: Vec<(String, String, i64)> = want.into_iter().map(|(k, n, s, _)| (k, n, s)).collect();
    let mut results = Vec::new();
    for cap in [1 << 20, 7] {
        let mut sp = Spool::with_cap(cap);
        raw.iter().for_each(|e| sp.push(*e));
        let c = RankColls::build_in(sp, &labels, names.clone(), 100, cap).unwrap();
        assert_eq!(c.spilled(), cap < 3000);
        assert_eq!(c.keys(), ["a", "b"]);
        assert_eq!(c.count(), 3000);
        assert_eq!(c.len_of("a") + c.len_of("b"), 3000);
        assert_eq!(c.len_of("unused"), 0);
        assert_eq!(c.earliest(), Some(100));
        results.push(read_all(&c));
        // Through a partial's form and back.
        let text = serde_json::to_string(&c).unwrap();
        let back: RankColls = serde_json::from_str(&text).unwrap();
        assert_eq!(read_all(&back), read_all(&c));
    }
    assert_eq!(results[0], want);
    assert_eq!(results[1], want);
}

#[test]
fn a_spilled_store_spans_segments_and_buffers() {
    let mut sp = Spool::with_cap(1 << 20);
    let n = (SEGMENT * 2 + 77) as u32;
    for i in (0..n).rev() {
        sp.push(ev(0, 0, i, i64::from(i)));
    }
    let mut w = Writer::new();
    w.mem = 10;
    for e in sp.sorted_by(|e: &CollEv| e.start).unwrap() {
        w.push(e.unwrap()).unwrap();
    }
    let store = w.finish().unwrap();
    let c = RankColls {
        keys: vec!["k".into()],
        counts: vec![n as usize],
        names: vec!["x".into()],
        store,
        shift: 3,
        earliest: Some(0),
    };
    assert!(c.spilled());
    let got: Vec<i64> = read_all(&c).into_iter().map(|r| r.2).collect();
    assert_eq!(got, (0..i64::from(n)).map(|t| t + 3).collect::<Vec<_>>());
}

#[test]
fn gpu_labels_pair_nccl_transfers_and_number_the_other_streams() {
    let keys: Vec<String> = vec![
        "0\u{1f}16".into(),
        super::super::p2p::gpu_key(true, 2),
        "0\u{1f}20".into(),
        super::super::p2p::gpu_key(false, 0),
    ];
    assert_eq!(
        labels(&keys, true, Some(1)),
        vec!["pg 0 stream #0", "p2p 1>2", "pg 0 stream #1", "p2p 0>1"]
    );
}
