// mimalloc returns freed pages to the OS within milliseconds, so a burst of requests in flight
// (a server stall) does not leave the client's resident memory raised for the rest of the run,
// as glibc's malloc does; it is also cheaper per allocation on the request path.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(infermeter::cli::main());
}
