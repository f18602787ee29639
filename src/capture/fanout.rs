//! Calling many servers at once: [`fan_out`] runs one call per worker on its own thread, so a
//! slow, dead or failing worker never holds up the others (each call has its own timeout, see
//! [`super::http`], whose client is re-exported here).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub use super::http::{Answer, Failure, Http, DNS_TIMEOUT, MAX_BODY_BYTES};

/// Most threads [`fan_out`] runs at once.
pub const MAX_PARALLEL: usize = 256;

/// Runs `f` on every item, all at once (up to [`MAX_PARALLEL`] threads), and returns the results
/// in item order. Shows a progress bar labelled `label` on stderr when stderr is a terminal.
pub fn fan_out<T, R, F>(items: &[T], label: &str, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let n = items.len();
    if n == 0 {
        return Vec::new();
    }
    let bar = crate::report::progress::bar(n as u64, label);
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..n.min(MAX_PARALLEL) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(&items[i]);
                if let Ok(mut g) = slots.lock() {
                    g[i] = Some(r);
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let slots = match slots.into_inner() {
        Ok(v) => v,
        Err(poisoned) => poisoned.into_inner(),
    };
    // Every slot is filled unless `f` panicked, and then the scope above re-raised the panic.
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

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
}
