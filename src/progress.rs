//! Progress bars on stderr (indicatif). They draw only when stderr is a terminal, so logs,
//! pipes and CI output stay clean.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps labelled `prefix`: `   merge [=====>    ] 3/8 ranks`.
pub(crate) fn bar(len: u64, prefix: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(prefix.to_string());
    bar
}
