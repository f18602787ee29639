//! Calling many servers at once: [`fan_out_with`] runs one call per worker on its own thread, so a
//! slow, dead or failing worker never holds up the others (each call has its own timeout, see
//! [`super::http`]).
//!
//! A long wait is never silent: on a terminal the progress bar names the servers still
//! awaited; otherwise (logs, CI) a line `stop: waiting for 3 of 64 servers (12 s): http://…`
//! goes to stderr once the wait passes the notice delay (5 s by default), then at growing intervals of
//! at most [`MAX_NOTICE_GAP`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// Most threads a fan-out runs at once.
pub(crate) const MAX_PARALLEL: usize = 256;

#[cfg(test)]
/// How long a fan-out runs before it says what it is waiting for.
pub(crate) const DEFAULT_NOTICE_AFTER: Duration = Duration::from_secs(5);

/// The longest gap between two "waiting for" lines (the gap doubles up to this).
pub(crate) const MAX_NOTICE_GAP: Duration = Duration::from_secs(60);

/// Most server names one "waiting for" line lists.
const NAMES_SHOWN: usize = 5;

#[cfg(test)]
/// Runs `f` on every item, all at once (up to [`MAX_PARALLEL`] threads), and returns the results
/// in item order. Shows a progress bar labelled `label` on stderr when stderr is a terminal.
pub(crate) fn fan_out<T, R, F>(items: &[T], label: &str, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    fan_out_with(items, label, DEFAULT_NOTICE_AFTER, |_| String::new(), f)
}

/// Runs `f` on every item, all at once (up to [`MAX_PARALLEL`] threads), and returns the results
/// in item order; says which items (named by `name`) it still waits for once the wait passes
/// `notice_after`: in the progress bar on a terminal, else in a line on stderr.
pub(crate) fn fan_out_with<T, R, F, N>(
    items: &[T],
    label: &str,
    notice_after: Duration,
    name: N,
    f: F,
) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
    N: Fn(&T) -> String + Sync,
{
    let bar = crate::progress::bar(items.len() as u64, label);
    let tell = |line: &str, waiting: &str| {
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.set_message(format!("waiting for {waiting}"));
        }
    };
    let out = run_all(items, label, notice_after, &name, &tell, &|| bar.inc(1), &f);
    bar.finish_and_clear();
    out
}

/// The fan-out itself: `tell(line, names)` is called for each notice, `tick` per finished item.
fn run_all<T, R, F, N>(
    items: &[T],
    label: &str,
    notice_after: Duration,
    name: &N,
    tell: &(dyn Fn(&str, &str) + Sync),
    tick: &(dyn Fn() + Sync),
    f: &F,
) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
    N: Fn(&T) -> String + Sync,
{
    let n = items.len();
    if n == 0 {
        return Vec::new();
    }
    let next = AtomicUsize::new(0);
    let done: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<()>();
        for _ in 0..n.min(MAX_PARALLEL) {
            let (tx, next, done, slots) = (tx.clone(), &next, &done, &slots);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(&items[i]);
                if let Ok(mut g) = slots.lock() {
                    g[i] = Some(r);
                }
                done[i].store(true, Ordering::Release);
                tick();
                let _ = tx.send(());
            });
        }
        drop(tx);
        // Wait for every item (each call is bounded by its own timeout), with notices.
        let mut finished = 0;
        let mut gap = notice_after.max(Duration::from_millis(10));
        let mut notice_at = t0 + gap;
        while finished < n {
            let wait = notice_at.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(()) => finished += 1,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let pending: Vec<String> = (0..n)
                        .filter(|&i| !done[i].load(Ordering::Acquire))
                        .map(|i| name(&items[i]))
                        .collect();
                    let names = listed(&pending);
                    let line = format!(
                        "{label}: waiting for {} of {n} servers ({} s){}",
                        pending.len(),
                        t0.elapsed().as_secs(),
                        if names.is_empty() {
                            String::new()
                        } else {
                            format!(": {names}")
                        }
                    );
                    tell(&line, &names);
                    gap = (gap * 2).min(MAX_NOTICE_GAP);
                    notice_at = Instant::now() + gap;
                }
            }
        }
    });
    let slots = match slots.into_inner() {
        Ok(v) => v,
        Err(poisoned) => poisoned.into_inner(),
    };
    // Every slot is filled unless `f` panicked, and then the scope above re-raised the panic.
    slots.into_iter().flatten().collect()
}

/// `a, b, c, d, e and 3 more` (empty names are left out).
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    let mut s = shown
        .iter()
        .take(NAMES_SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if shown.len() > NAMES_SHOWN {
        s.push_str(&format!(" and {} more", shown.len() - NAMES_SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fan_out_keeps_order_and_runs_at_once() {
        let items: Vec<u64> = (0..40).collect();
        let t0 = Instant::now();
        let out = fan_out(&items, "test", |i| {
            std::thread::sleep(Duration::from_millis(50));
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        // 40 sequential sleeps would be 2 s; all at once is ~50 ms.
        assert!(
            t0.elapsed() < Duration::from_millis(1500),
            "{:?}",
            t0.elapsed()
        );
    }

    #[test]
    fn a_long_wait_names_what_it_waits_for_at_a_bounded_rate() {
        let items: Vec<u64> = (0..9).collect();
        let lines = Mutex::new(Vec::new());
        let tell = |line: &str, _: &str| lines.lock().unwrap().push(line.to_string());
        let out = run_all(
            &items,
            "stop",
            Duration::from_millis(100),
            &|i: &u64| format!("http://w{i}"),
            &tell,
            &|| {},
            &|i: &u64| {
                // two slow items, the rest quick
                let ms = if *i < 7 { 0 } else { 750 };
                std::thread::sleep(Duration::from_millis(ms));
                *i
            },
        );
        assert_eq!(out, items);
        let lines = lines.into_inner().unwrap();
        // at ~100, ~300 and ~700 ms: the gap doubles, so never one line per poll
        assert!((2..=4).contains(&lines.len()), "{lines:?}");
        assert!(
            lines[0].starts_with("stop: waiting for 2 of 9 servers (0 s): http://w7, http://w8"),
            "{lines:?}"
        );
    }

    #[test]
    fn quick_fan_outs_say_nothing_and_long_lists_are_cut() {
        let lines = Mutex::new(Vec::<String>::new());
        let tell = |line: &str, _: &str| lines.lock().unwrap().push(line.to_string());
        let items: Vec<u64> = (0..3).collect();
        run_all(
            &items,
            "start",
            Duration::from_secs(5),
            &|i: &u64| i.to_string(),
            &tell,
            &|| {},
            &|i: &u64| *i,
        );
        assert!(lines.lock().unwrap().is_empty());
        let names: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
        assert_eq!(listed(&names), "w0, w1, w2, w3, w4 and 3 more");
        assert_eq!(listed(&[String::new()]), "");
    }
}
