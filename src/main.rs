fn main() {
    let cli = rankprof::cli::parse();
    std::process::exit(rankprof::commands::main(cli.command));
}
