fn main() {
    std::process::exit(infermeter::cli::main());
}
