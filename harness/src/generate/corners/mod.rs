//! The corners of the input space, described once for both generators.
//!
//! Every corner family is data (tables of strings, address blocks, limits) and a builder that
//! reads its decisions from a [`Choices`] source. The proptest strategies of `cases.rs` (what
//! `normfuzz conform` runs and shrinks) drive a builder with a recorded [`Tape`] of numbers, and
//! the libFuzzer targets of `fuzz/` drive the same builder with `arbitrary::Unstructured`
//! (wrapped in the fuzz crate): a corner added here reaches both.
//!
//! A source that runs dry answers 0, so the first entry of every table is the plainest one and a
//! shrunk tape (fewer or smaller numbers) gives a plainer value.
//!
//! - [`text`]: directive texts (every disguise of `MEDIA:`, every line terminator) and streams
//!   cut from one text at the places that matter (inside the word, inside `\r\n`, around
//!   terminators, anywhere, empty chunks).
//! - [`urls`]: media URLs from every U-rule family, and public controls.
//! - [`nesting`]: arrays and objects nested 1 to [`nesting::MAX_NESTING`] deep in every place a
//!   block can stand.
//! - [`dates`]: `lastModified` date-times in every ISO 8601 spelling servers write.
//! - [`limits`]: every size limit at limit − 1, limit and limit + 1.
//! - [`calls`]: the model's tool calls in an end-to-end turn: hostile ids, names, arguments
//!   and send-style calls naming canaries and refused URLs, each value marked by its field.

pub mod calls;
pub mod dates;
pub mod limits;
pub mod nesting;
pub mod text;
pub mod urls;

use proptest::prelude::*;

/// Where a corner builder takes its decisions from.
pub trait Choices {
    /// A number in `0..n`, for `n` ≥ 1; 0 once the source is exhausted.
    fn below(&mut self, n: usize) -> usize;
}

/// An entry of `items` (not empty).
pub fn pick<T: Copy>(c: &mut dyn Choices, items: &[T]) -> T {
    items[c.below(items.len())]
}

/// A number in `lo..=hi`.
pub fn between(c: &mut dyn Choices, lo: usize, hi: usize) -> usize {
    lo + c.below(hi - lo + 1)
}

/// True once in `n` draws (never from an exhausted source).
pub fn one_in(c: &mut dyn Choices, n: usize) -> bool {
    c.below(n) == n - 1
}

/// An index into `weights`, each drawn in proportion to its weight (index 0 when exhausted).
pub fn weighted(c: &mut dyn Choices, weights: &[usize]) -> usize {
    let mut at = c.below(weights.iter().sum());
    for (i, &w) in weights.iter().enumerate() {
        if at < w {
            return i;
        }
        at -= w;
    }
    0
}

/// A recorded sequence of numbers read as choices: what proptest generates and shrinks.
pub struct Tape<'a> {
    values: &'a [u16],
    at: usize,
}

impl<'a> Tape<'a> {
    pub fn new(values: &'a [u16]) -> Self {
        Tape { values, at: 0 }
    }

    fn next(&mut self) -> usize {
        let v = self.values.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        usize::from(v)
    }
}

impl Choices for Tape<'_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let mut v = self.next();
        if n > 1 << 16 {
            v = v << 16 | self.next();
        }
        v % n
    }
}

/// Numbers on a tape: enough for the longest builder here (a stream of ten pieces with their
/// targets and cuts reads about a hundred).
pub const TAPE_LEN: usize = 160;

/// A proptest strategy for the corner `build` makes: a tape of numbers, read by `build`. Shrinking
/// the tape moves every choice towards the first entry of its table.
pub fn strategy<T: std::fmt::Debug + 'static>(
    build: fn(&mut dyn Choices) -> T,
) -> BoxedStrategy<T> {
    strategy_with(TAPE_LEN, build)
}

/// [`strategy`] with a tape of `len` numbers, for builders that read few (a piece of a text
/// that proptest assembles itself).
pub fn strategy_with<T: std::fmt::Debug + 'static>(
    len: usize,
    build: fn(&mut dyn Choices) -> T,
) -> BoxedStrategy<T> {
    proptest::collection::vec(any::<u16>(), len)
        .prop_map(move |tape| build(&mut Tape::new(&tape)))
        .boxed()
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// `n` values of `build`, each from its own pseudo-random tape (deterministic).
    pub fn sample<T>(n: usize, build: impl Fn(&mut dyn Choices) -> T) -> Vec<T> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut tape = vec![0u16; TAPE_LEN];
        (0..n)
            .map(|_| {
                for v in &mut tape {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    *v = (state >> 24) as u16;
                }
                build(&mut Tape::new(&tape))
            })
            .collect()
    }

    #[test]
    fn an_exhausted_tape_picks_first_entries() {
        let mut tape = Tape::new(&[]);
        assert_eq!(tape.below(10), 0);
        assert!(!one_in(&mut tape, 3));
        assert_eq!(weighted(&mut tape, &[2, 5]), 0);
        assert_eq!(between(&mut tape, 4, 9), 4);
    }

    #[test]
    fn large_ranges_are_reachable() {
        let big = sample(200, |c| c.below(100_000));
        assert!(big.iter().any(|&v| v > 70_000), "{big:?}");
        assert!(big.iter().all(|&v| v < 100_000));
    }
}
