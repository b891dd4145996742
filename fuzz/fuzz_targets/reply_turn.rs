#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| normfuzz_fuzz::reply_turn(data));
