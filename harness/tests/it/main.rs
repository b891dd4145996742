//! normfuzz's integration tests, one test binary: each module was a test binary of its own, and
//! each of those linked the whole dependency tree. Fixtures stay in `tests/fixtures`,
//! `tests/runtimes` and `tests/suts`; a property-test module's regressions are in
//! `<module>.proptest-regressions` next to it.

mod action;
mod baselines;
mod coerce_rules;
mod conform_runs;
mod corpus_replay;
mod e2e_fake;
mod e2e_vision;
mod hangs;
mod html_report;
mod judges;
mod kill_safety;
mod layout;
mod mcp_schema;
mod properties;
mod reply_rules;
mod report_formats;
mod report_fuzz;
mod report_schemas;
mod report_timeline;
mod retry_rules;
mod runtime_coverage;
mod stream_cli;
mod stream_rules;
mod tutorial;
mod upstream;
mod wpt_url;

use proptest::test_runner::{Config, FileFailurePersistence};

/// Runs `test` on a campaign job's stack: a finding's minimal input can be nested hundreds deep
/// (a SUT that crashes on depth, as the echo SUT does), and dropping, cloning or validating it
/// recurses. Which campaign draws such a case depends on the generators' random stream.
fn on_job_stack<T: Send>(test: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(normfuzz::generate::corners::nesting::JOB_STACK)
            .spawn_scoped(scope, test)
            .expect("a thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// proptest's default settings, with failures persisted in `<source file>.proptest-regressions`
/// next to the property test's module. (proptest's default takes the nearest folder holding a
/// `main.rs`, this one, for a crate root and would use `tests/proptest-regressions/<module>.txt`.)
fn regressions_next_to_source() -> Config {
    Config {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}
