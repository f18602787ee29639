//! Unit tests of the collective matching: skews, waits, last arrivals and ties by hand.

use std::collections::BTreeMap;

use super::*;
use crate::analyze::collect::collstore::Coll;

fn colls(key: &str, starts: &[i64]) -> RankColls {
    let mut by_key = BTreeMap::new();
    by_key.insert(
        key.to_string(),
        starts
            .iter()
            .map(|&s| Coll {
                name: "allreduce".into(),
                start: s,
                end: s + 100,
                prev_end: None,
                busy: 0,
                pre: 0,
                bytes: None,
                from_step: false,
                waited: None,
                overlapped: false,
            })
            .collect(),
    );
    RankColls::from_map(by_key).unwrap()
}

/// µs -> ns, so the hand figures stay readable and above the tie tolerance.
fn us(v: &[i64]) -> Vec<i64> {
    v.iter().map(|x| x * 1000).collect()
}

#[test]
fn skew_wait_and_straggler_by_hand() {
    let ranks: Vec<String> = vec!["A".into(), "B".into(), "C".into()];
    // Three collectives (µs): C arrives last twice (by 30 and 50), A once (by 10, with
    // C 5 µs behind it: well above the tolerance).
    let per = vec![
        colls("pg 0 stream #0", &us(&[0, 1000, 2010])),
        colls("pg 0 stream #0", &us(&[5, 1010, 2000])),
        colls("pg 0 stream #0", &us(&[30, 1050, 2005])),
    ];
    let rep = analyze(&ranks, &[vec![0, 1, 2]], &per, "gpu", 2).unwrap();
    assert_eq!(rep.matched, 3);
    let g = &rep.groups[0];
    assert_eq!(
        (g.max_skew_ns.get(), g.last_most.as_str(), g.last_most_count),
        (50_000, "C", 2)
    );
    assert_eq!((g.ties, rep.ties), (0, 0));
    assert!((g.mean_skew_ns - (30.0 + 50.0 + 10.0) * 1000.0 / 3.0).abs() < 1e-6);
    // waits: A: 30 + 50 + 0 = 80; B: 25 + 40 + 10 = 75; C: 0 + 0 + 5 = 5
    let w: Vec<i64> = rep.ranks.iter().map(|r| r.wait_ns.get()).collect();
    assert_eq!(w, us(&[80, 75, 5]));
    let last: Vec<usize> = rep.ranks.iter().map(|r| r.arrived_last).collect();
    assert_eq!(last, vec![1, 0, 2]);
    assert_eq!(rep.straggler.as_deref(), Some("C"));
    assert_eq!(rep.worst.len(), 2);
    assert_eq!(
        (rep.worst[0].skew_ns.get(), rep.worst[0].index),
        (50_000, 1)
    );
    assert_eq!((rep.worst[0].last.as_str(), rep.worst[0].tie), ("C", false));
}

/// `n` collectives per rank, 1 ms apart, each rank's start shifted by `late[r]` ns.
fn world(late: &[i64], n: i64) -> (Vec<String>, Vec<RankColls>, Vec<Vec<usize>>) {
    let ranks = ranks_of(late.len());
    let per = late
        .iter()
        .map(|&d| {
            let starts: Vec<i64> = (0..n).map(|i| i * 1_000_000 + d).collect();
            colls("pg 0 stream #0", &starts)
        })
        .collect();
    (ranks, per, vec![(0..late.len()).collect()])
}

fn ranks_of(n: usize) -> Vec<String> {
    (0..n).map(|r| format!("TP{r:02}")).collect()
}

#[test]
fn identical_ranks_tie_and_name_no_straggler() {
    let (ranks, per, worlds) = world(&[0; 8], 5);
    let rep = analyze(&ranks, &worlds, &per, "gpu", 3).unwrap();
    assert_eq!((rep.matched, rep.ties), (5, 5));
    assert!(rep
        .ranks
        .iter()
        .all(|r| r.arrived_last == 0 && r.matched == 5));
    assert_eq!(rep.straggler, None);
    let g = &rep.groups[0];
    assert_eq!(
        (g.ties, g.last_most.as_str(), g.last_most_count),
        (5, "", 0)
    );
    assert!(rep
        .worst
        .iter()
        .all(|w| w.tie && w.last.split(" = ").count() == 8));
    // Jitter below the tolerance is still a tie: 0.999 µs and 1 ns apart at the top.
    let (ranks, per, worlds) = world(&[0, 999, 1000, 500], 4);
    let rep = analyze(&ranks, &worlds, &per, "gpu", 3).unwrap();
    assert_eq!((rep.ties, rep.straggler.as_deref()), (4, None));
    // 8 ranks, 8 collectives: TP01 last once by 5 µs, the rest ties. One of 8 is what an
    // even split gives: no straggler, though TP01 is the only rank ever last.
    let mut per = world(&[0; 8], 8).1;
    let starts: Vec<i64> = (0..8)
        .map(|i| i * 1_000_000 + if i == 3 { 5_000 } else { 0 })
        .collect();
    per[1] = colls("pg 0 stream #0", &starts);
    let rep = analyze(&ranks_of(8), &[(0..8).collect()], &per, "gpu", 3).unwrap();
    assert_eq!((rep.ties, rep.ranks[1].arrived_last), (7, 1));
    assert_eq!(rep.straggler, None);
}

#[test]
fn one_late_rank_is_last_two_late_ranks_tie() {
    // TP03 starts 50 µs after the seven others.
    let mut late = [0i64; 8];
    late[3] = 50_000;
    let (ranks, per, worlds) = world(&late, 6);
    let rep = analyze(&ranks, &worlds, &per, "gpu", 3).unwrap();
    assert_eq!(rep.ties, 0);
    assert_eq!(rep.ranks[3].arrived_last, 6);
    assert_eq!(rep.straggler.as_deref(), Some("TP03"));
    assert!((rep.straggler_pct - 100.0).abs() < 1e-9);
    assert_eq!(
        (rep.groups[0].last_most.as_str(), rep.groups[0].ties),
        ("TP03", 0)
    );
    assert_eq!(rep.ranks[0].wait_ns.get(), 6 * 50_000);
    // 1 µs (the tolerance) ahead of the others is a last arrival.
    let (ranks, per, worlds) = world(&[0, 1000, 0, 0], 2);
    let rep = analyze(&ranks, &worlds, &per, "gpu", 3).unwrap();
    assert_eq!((rep.ties, rep.ranks[1].arrived_last), (0, 2));

    // TP02 and TP05 both 50 µs late, 0.4 µs apart: a tie, no last arrival.
    late[3] = 0;
    late[2] = 50_000;
    late[5] = 50_400;
    let (ranks, per, worlds) = world(&late, 6);
    let rep = analyze(&ranks, &worlds, &per, "gpu", 3).unwrap();
    assert_eq!((rep.matched, rep.ties), (6, 6));
    assert!(rep.ranks.iter().all(|r| r.arrived_last == 0));
    assert_eq!(rep.straggler, None);
    assert_eq!(rep.worst[0].last, "TP05 = TP02");
    assert!(rep.worst[0].tie);
    // The waits still count: the others waited 50.4 µs for the pair each time.
    assert_eq!(rep.ranks[0].wait_ns.get(), 6 * 50_400);
    assert_eq!(rep.ranks[2].wait_ns.get(), 6 * 400);
}

#[test]
fn uneven_counts_are_noted_and_worlds_do_not_mix() {
    let ranks: Vec<String> = (0..4).map(|i| format!("R{i}")).collect();
    let per = vec![
        colls("k", &us(&[0, 10])),
        colls("k", &us(&[1])),
        colls("k", &us(&[100, 200])),
        colls("k", &us(&[150, 260])),
    ];
    let rep = analyze(&ranks, &[vec![0, 1], vec![2, 3]], &per, "cpu", 5).unwrap();
    assert_eq!(rep.matched, 1 + 2);
    assert!(
        rep.notes.iter().any(|n| n.contains("different numbers")),
        "{:?}",
        rep.notes
    );
    assert_eq!(rep.ranks[3].arrived_last, 2);
    assert_eq!(rep.ranks[2].wait_ns.get(), (50 + 60) * 1000);
}

/// Several keys, uneven counts and a key one rank lacks, one rank's records spilled (more than
/// a rank keeps in memory): each key's n-th collectives still meet, the surplus is skipped.
#[test]
fn lockstep_reading_skips_surplus_and_missing_keys() {
    let mk = |lists: &[(&str, Vec<i64>)]| {
        let by_key: BTreeMap<String, Vec<Coll>> = lists
            .iter()
            .map(|(k, starts)| {
                let v = starts
                    .iter()
                    .map(|&s| Coll {
                        name: format!("{k}-op"),
                        start: s,
                        end: s + 10,
                        prev_end: None,
                        busy: 0,
                        pre: 0,
                        bytes: None,
                        from_step: false,
                        waited: None,
                        overlapped: false,
                    })
                    .collect();
                (k.to_string(), v)
            })
            .collect();
        RankColls::from_map(by_key).unwrap()
    };
    let many: Vec<i64> = (0..300).map(|i| i * 10_000).collect();
    let a = mk(&[("a", many), ("b", us(&[0, 100])), ("c", us(&[5]))]);
    let b = mk(&[("a", us(&[7])), ("b", us(&[20, 130])), ("d", us(&[1, 2]))]);
    assert!(a.spilled() && !b.spilled());
    let ranks: Vec<String> = vec!["A".into(), "B".into()];
    let rep = analyze(&ranks, &[vec![0, 1]], &[a, b], "gpu", 10).unwrap();
    let g: Vec<(&str, usize, i64, &str)> = rep
        .groups
        .iter()
        .map(|g| {
            (
                g.key.as_str(),
                g.matched,
                g.max_skew_ns.get(),
                g.name.as_str(),
            )
        })
        .collect();
    assert_eq!(g, vec![("a", 1, 7_000, "a-op"), ("b", 2, 30_000, "b-op")]);
    // B waits 0 at a, 0 and 0 at b; A waits 7 + 20 + 30 µs.
    assert_eq!(rep.ranks[0].wait_ns.get(), 57_000);
    assert_eq!(rep.ranks[1].wait_ns.get(), 0);
    assert_eq!(
        (rep.ranks[0].collectives, rep.ranks[1].collectives),
        (303, 5)
    );
    assert_eq!(rep.matched, 3);
}

/// A process group on only some ranks of the world (DP attention's attention-TP groups):
/// matched among the ranks that have it, not left unmatched for the ranks that do not.
#[test]
fn a_group_of_a_subset_is_matched_among_its_ranks() {
    let ranks: Vec<String> = (0..4).map(|i| format!("R{i}")).collect();
    let per = vec![
        colls("a", &us(&[0, 10])),
        colls("a", &us(&[3, 10])),
        colls("b", &us(&[100])),
        colls("b", &us(&[107])),
    ];
    let rep = analyze(&ranks, &[vec![0, 1, 2, 3]], &per, "gpu", 5).unwrap();
    assert_eq!(rep.matched, 2 + 1);
    assert_eq!(rep.groups.len(), 2);
    // R1 last in a's first (3 µs), a tie in its second; R3 last in b's (7 µs).
    assert_eq!(rep.ranks[1].arrived_last, 1);
    assert_eq!(rep.ranks[3].arrived_last, 1);
    assert_eq!(rep.ranks[0].wait_ns.get(), 3_000);
    assert_eq!(rep.ranks[2].wait_ns.get(), 7_000);
    assert!(
        rep.notes
            .iter()
            .any(|n| n.contains("2 process group(s) are on only some")),
        "{:?}",
        rep.notes
    );
    assert!(
        !rep.notes.iter().any(|n| n.contains("different numbers")),
        "{:?}",
        rep.notes
    );
}
