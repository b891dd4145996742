//! One module per subcommand of the `normfuzz` binary: its arguments and what it does.
//! `main.rs` holds the command line itself and dispatches here.

pub mod bench_anchor;
pub mod bench_check;
pub mod check_url;
pub mod coerce;
pub mod conform;
pub mod e2e;
pub mod fuzz_report;
pub mod init;
pub mod install;
pub mod io;
pub mod merge_reports;
pub mod neutralize;
pub mod parse_reply;
pub mod repro;
pub mod retry_images;
pub mod serve_reference;
pub mod stream;
pub mod upstream;
