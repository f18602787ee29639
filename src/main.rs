use clap::Parser;

fn main() {
    let cli = rankprof::cli::Cli::parse();
    std::process::exit(rankprof::commands::main(cli.command));
}
