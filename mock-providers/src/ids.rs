//! Request ids in each provider's format. Unique per process; not cryptographic.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 pseudo-random bits: splitmix64 over a counter seeded once from the clock.
fn next() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let mut z = seed.wrapping_add(
        COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn alnum(n: usize) -> String {
    const ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let mut out = String::with_capacity(n);
    let mut bits = next();
    for i in 0..n {
        if i % 8 == 7 {
            bits = next();
        }
        out.push(char::from(
            ALPHABET[(bits % ALPHABET.len() as u64) as usize],
        ));
        bits /= ALPHABET.len() as u64;
    }
    out
}

/// Anthropic: `req_011C…` (header `request-id` and body `request_id`).
pub fn anthropic() -> String {
    format!("req_011C{}", alnum(20))
}

/// OpenAI: `req_` + 32 hex digits (header `x-request-id`).
pub fn openai() -> String {
    format!("req_{:016x}{:016x}", next(), next())
}

/// AWS: a UUID-shaped id (header `x-amzn-RequestId`).
pub fn aws() -> String {
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFF,
        (b >> 48) & 0x3FFF | 0x8000,
        b & 0xFFFF_FFFF_FFFF
    )
}

/// A short alphanumeric suffix for message, call and response ids in scripted answers.
pub fn short() -> String {
    alnum(16)
}
