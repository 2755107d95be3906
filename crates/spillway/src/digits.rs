//! Numbers written as text by hand, on paths every request takes: ids in
//! hex, lengths and counts in decimal (the formatter and a string of its
//! own cost several times as much).

/// Lower-case hex of `x`, most significant digit first: its nibbles
/// spread one to a byte and turned into digits all eight at once (the
/// request and completion ids of every request: a table look-up per digit
/// cost several times as much).
pub fn hex_word(x: u64) -> [u8; 16] {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Each nibble of a 32-bit half into its own byte, in order.
    let spread = |half: u64| {
        let x = (half | half << 16) & 0x0000_FFFF_0000_FFFF;
        let x = (x | x << 8) & 0x00FF_00FF_00FF_00FF;
        (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F
    };
    // A byte of 10 or more gets the step from '9' + 1 to 'a' (39).
    let digits = |n: u64| n + ONES * u64::from(b'0') + ((n + ONES * 6) >> 4 & ONES) * 39;
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&digits(spread(x >> 32)).to_be_bytes());
    out[8..].copy_from_slice(&digits(spread(x & 0xFFFF_FFFF)).to_be_bytes());
    out
}

/// The two digits of every number under 100.
const PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};

/// `n` in decimal, written at the end of `digits`: the slice that holds
/// it. Two digits a division (a Unix time is five, not ten).
pub fn decimal(n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let (mut n, mut at) = (n, digits.len());
    while n >= 100 {
        at -= 2;
        // Under 100: the cast cannot truncate.
        digits[at..at + 2].copy_from_slice(&PAIRS[(n % 100) as usize]);
        n /= 100;
    }
    if n >= 10 {
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[n as usize]);
    } else {
        at -= 1;
        digits[at] = b'0' + n as u8;
    }
    &digits[at..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_in_hex_is_what_the_formatter_writes() {
        let mut words = vec![0, 1, 9, 10, 15, 0xFFFF_FFFF_FFFF_FFFF, 0x0123_4567_89AB_CDEF, 0xA000_0000_0000_000A];
        words.extend((0..1000).map(|_| fastrand::u64(..)));
        for x in words {
            assert_eq!(std::str::from_utf8(&hex_word(x)).unwrap(), format!("{x:016x}"));
        }
    }

    #[test]
    fn a_number_in_decimal_is_what_the_formatter_writes() {
        for n in [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12_345, 1_760_000_000, u64::MAX] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string().as_bytes());
        }
    }
}
