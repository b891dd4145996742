//! libFuzzer targets (issue 7).
