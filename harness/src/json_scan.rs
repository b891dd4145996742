//! The byte scan JSON writers and readers share: the next byte at or after a position that a
//! JSON string cannot hold as is. Written by hand because it is the hot loop of every JSON
//! string the reference reads or writes and of every request line the harness writes; no crate
//! searches for this set (`memchr` takes at most three bytes). 32 bytes a step on AVX2, eight
//! (SWAR) elsewhere.
//!
//! Two sets, one code path: [`next_json_special`] stops at what JSON escapes (C0 controls, `"`,
//! `\`); [`next_line_special`] also at DEL and at the lead bytes of the characters the SUT
//! protocol escapes so that a line stays one line (C1 controls lead with 0xC2, U+2028/U+2029
//! with 0xE2), which its caller then looks at.

/// The first byte at or after `from` that JSON escapes, or `bytes.len()`.
#[inline]
pub fn next_json_special(bytes: &[u8], from: usize) -> usize {
    next::<false>(bytes, from)
}

/// The first byte at or after `from` that JSON escapes or that is DEL, 0xC2 or 0xE2, or
/// `bytes.len()`.
#[inline]
pub fn next_line_special(bytes: &[u8], from: usize) -> usize {
    next::<true>(bytes, from)
}

/// Whether the scan stops at `b`; `LINE` adds DEL, 0xC2 and 0xE2.
fn is_special<const LINE: bool>(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || (LINE && matches!(b, 0x7F | 0xC2 | 0xE2))
}

#[inline]
fn next<const LINE: bool>(bytes: &[u8], from: usize) -> usize {
    // Keys and short values end within 16 bytes: two words looked at here, before the call to
    // the vector scan.
    let mut i = from;
    for _ in 0..2 {
        let Some(word) = bytes.get(i..i + 8) else {
            return next_portable::<LINE>(bytes, i);
        };
        match special_bytes::<LINE>(u64::from_le_bytes(word.try_into().unwrap_or_default())) {
            0 => i += 8,
            mask => return i + mask.trailing_zeros() as usize / 8,
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { next_avx2::<LINE>(bytes, i) };
    }
    next_portable::<LINE>(bytes, i)
}

/// The high bit of each byte of `word` the scan stops at. A borrow can also flag a byte above
/// a flagged one, never below: the lowest flag is exact.
fn special_bytes<const LINE: bool>(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let equal = |b: u8| zero(word ^ (ONES * u64::from(b)));
    let json = (word.wrapping_sub(ONES * 0x20) & !word & HIGH) | equal(b'"') | equal(b'\\');
    if LINE {
        json | equal(0x7F) | equal(0xC2) | equal(0xE2)
    } else {
        json
    }
}

/// [`next`] eight bytes a step (SWAR), then byte by byte.
fn next_portable<const LINE: bool>(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(chunk) = bytes
        .get(i..i + 8)
        .and_then(|c| <[u8; 8]>::try_from(c).ok())
    {
        match special_bytes::<LINE>(u64::from_le_bytes(chunk)) {
            0 => i += 8,
            mask => return i + mask.trailing_zeros() as usize / 8,
        }
    }
    bytes
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| is_special::<LINE>(b)))
        .map_or(bytes.len(), |p| i + p)
}

/// A bit for each byte of `v` that JSON escapes (C0 controls, `"`, `\\`), lowest byte lowest:
/// the classification the JSON string decoder shares with the scan.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn json_special_mask(v: std::arch::x86_64::__m256i) -> u32 {
    use std::arch::x86_64::*;
    let splat = |b: u8| _mm256_set1_epi8(b as i8);
    let control_max = splat(0x1F);
    // A control byte is one whose unsigned maximum with 0x1F is 0x1F.
    let hits = _mm256_or_si256(
        _mm256_or_si256(
            _mm256_cmpeq_epi8(v, splat(b'"')),
            _mm256_cmpeq_epi8(v, splat(b'\\')),
        ),
        _mm256_cmpeq_epi8(_mm256_max_epu8(v, control_max), control_max),
    );
    _mm256_movemask_epi8(hits) as u32
}

/// [`next`] 32 bytes a step, the rest through [`next_portable`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn next_avx2<const LINE: bool>(bytes: &[u8], from: usize) -> usize {
    use std::arch::x86_64::*;
    let mut i = from;
    let splat = |b: u8| _mm256_set1_epi8(b as i8);
    while i + 32 <= bytes.len() {
        // SAFETY: `i + 32 <= bytes.len()`, and an unaligned load reads any address.
        let v = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(i).cast()) };
        let mut mask = json_special_mask(v);
        if LINE {
            let line = _mm256_or_si256(
                _mm256_cmpeq_epi8(v, splat(0x7F)),
                _mm256_or_si256(
                    _mm256_cmpeq_epi8(v, splat(0xC2)),
                    _mm256_cmpeq_epi8(v, splat(0xE2)),
                ),
            );
            mask |= _mm256_movemask_epi8(line) as u32;
        }
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 32;
    }
    next_portable::<LINE>(bytes, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive<const LINE: bool>(bytes: &[u8], from: usize) -> usize {
        bytes[from..]
            .iter()
            .position(|&b| is_special::<LINE>(b))
            .map_or(bytes.len(), |p| from + p)
    }

    #[test]
    fn every_byte_at_every_offset() {
        for b in 0..=u8::MAX {
            for pad in 0..70 {
                let mut bytes = vec![b'x'; pad];
                bytes.push(b);
                bytes.extend_from_slice(&[b'y'; 40]);
                for from in [0, pad / 2, pad] {
                    assert_eq!(
                        next_json_special(&bytes, from),
                        naive::<false>(&bytes, from)
                    );
                    assert_eq!(next_line_special(&bytes, from), naive::<true>(&bytes, from));
                    assert_eq!(
                        next_portable::<true>(&bytes, from),
                        naive::<true>(&bytes, from)
                    );
                    assert_eq!(
                        next_portable::<false>(&bytes, from),
                        naive::<false>(&bytes, from)
                    );
                }
            }
        }
        assert!(is_special::<true>(0xE2) && !is_special::<false>(0xE2));
    }

    proptest::proptest! {
        // The SIMD scan runs on this machine; the portable one where AVX2 is missing.
        #[test]
        fn both_scans_find_the_same_byte(s in "(?s).{0,200}", from in 0usize..200) {
            let bytes = s.as_bytes();
            let from = from.min(bytes.len());
            proptest::prop_assert_eq!(next_portable::<false>(bytes, from), naive::<false>(bytes, from));
            proptest::prop_assert_eq!(next_json_special(bytes, from), naive::<false>(bytes, from));
            proptest::prop_assert_eq!(next_portable::<true>(bytes, from), naive::<true>(bytes, from));
            proptest::prop_assert_eq!(next_line_special(bytes, from), naive::<true>(bytes, from));
        }
    }
}
