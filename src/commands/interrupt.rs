//! Ctrl-C for the commands that hold servers in a state (`watch`, `capture run`): the first
//! one sets a flag the library checks between its waits, and says what happens next; a second
//! one exits at once with 130. Through the `ctrlc` crate (see `watch.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The process-wide Ctrl-C flag (the handler can be installed once per process); `first` is
/// printed on the first Ctrl-C. `None` when no handler could be installed.
pub(super) fn ctrl_c(first: &'static str) -> Option<Arc<AtomicBool>> {
    static FLAG: OnceLock<Option<Arc<AtomicBool>>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "\ninterrupted again: exiting now (servers may still be profiling: run \
                     `rankprof capture stop`)"
                );
                std::process::exit(130);
            }
            eprintln!("\n{first} (Ctrl-C again to exit at once)…");
        })
        .ok()
        .map(|_| flag)
    })
    .clone()
}
