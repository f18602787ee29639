//! `merge-traces`: the same as `rankprof merge`.
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "merge-traces",
    version,
    after_help = rankprof::cli::examples::after_help("merge"),
    about = "Merge every rank's trace into one Perfetto-ready trace"
)]
struct Cli {
    #[command(flatten)]
    args: rankprof::cli::MergeArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(rankprof::commands::main(rankprof::cli::Command::Merge(
        cli.args,
    )));
}
