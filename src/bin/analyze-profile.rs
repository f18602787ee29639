//! `analyze-profile`: the same as `rankprof analyze`.
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "analyze-profile",
    version,
    after_help = rankprof::cli::examples::after_help("analyze"),
    about = "Per-rank kernel tables: which rank is slow, where, since when"
)]
struct Cli {
    #[command(flatten)]
    args: rankprof::cli::AnalyzeArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(rankprof::commands::main(rankprof::cli::Command::Analyze(
        cli.args,
    )));
}
