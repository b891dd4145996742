//! Case generators: the typed MCP model, sample images, the proptest strategies that draw op
//! inputs (valid, near-valid and hostile) for campaigns and property tests, and the corner
//! families (`corners`) that both those strategies and the fuzz targets draw from, and the real
//! servers' results (`real_servers`) they start from.

pub mod bench_docs;
pub mod cases;
pub mod corners;
pub mod mcp;
pub mod mcp_results;
pub mod real_servers;
pub mod sample_images;
pub mod tool_output;

/// Strings matching `pattern`, as proptest's `impl Strategy for str` draws them (the same
/// strings from the same random stream), but with the pattern compiled once per process: that
/// impl parses and compiles the regex again on every draw, which cost more than the rest of a
/// `sanitize_tool_names` case, and `valid_result` (built anew per case under `prop_flat_map`)
/// paid it per case too.
pub fn matching(
    pattern: &'static str,
) -> std::sync::Arc<proptest::string::RegexGeneratorStrategy<String>> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, Mutex};
    type Compiled = Arc<proptest::string::RegexGeneratorStrategy<String>>;
    static COMPILED: LazyLock<Mutex<HashMap<&'static str, Compiled>>> =
        LazyLock::new(Mutex::default);
    let mut compiled = COMPILED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    compiled
        .entry(pattern)
        .or_insert_with(|| {
            // The patterns are literals in this crate; a test draws from each.
            Arc::new(
                proptest::string::string_regex(pattern)
                    .unwrap_or_else(|e| panic!("generator pattern {pattern:?}: {e}")),
            )
        })
        .clone()
}

/// What `any::<String>()` draws (proptest's `"\\PC*"` pattern, the same strings), compiled once.
pub fn any_string() -> std::sync::Arc<proptest::string::RegexGeneratorStrategy<String>> {
    matching("\\PC*")
}

#[cfg(test)]
mod tests {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    #[test]
    fn matching_draws_what_the_str_strategy_draws() {
        for pattern in ["[A-Za-z0-9_ .:/-]{0,12}", "[a-z_]{95,110}", "[a-z]{1,8}"] {
            let (mut a, mut b) = (TestRunner::deterministic(), TestRunner::deterministic());
            for _ in 0..200 {
                let want = pattern.new_tree(&mut a).unwrap().current();
                let got = super::matching(pattern).new_tree(&mut b).unwrap().current();
                assert_eq!(got, want, "{pattern}");
            }
        }
        let (mut a, mut b) = (TestRunner::deterministic(), TestRunner::deterministic());
        for _ in 0..200 {
            let want = proptest::arbitrary::any::<String>()
                .new_tree(&mut a)
                .unwrap()
                .current();
            let got = super::any_string().new_tree(&mut b).unwrap().current();
            assert_eq!(got, want);
        }
    }
}
