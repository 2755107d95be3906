//! The `date` header of every response (RFC 9110, section 6.6.1), made
//! once a second per serving thread instead of once a response.

use bytes::{BufMut, BytesMut};
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// `date: Thu, 03 Dec 2026 17:02:19 GMT\r\n`: 37 bytes.
const LINE: usize = 37;

thread_local! {
    /// The second it was made for, and the line.
    static CACHED: RefCell<(u64, [u8; LINE])> = const { RefCell::new((u64::MAX, [0; LINE])) };
}

/// Writes the `date` header line of now.
pub(super) fn put(out: &mut BytesMut) {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHED.with_borrow_mut(|(at, line)| {
        if *at != second {
            let text = format!("date: {}\r\n", httpdate::fmt_http_date(now));
            if let Some(bytes) = text.as_bytes().get(..LINE) {
                line.copy_from_slice(bytes);
                *at = second;
            }
        }
        if *at == second {
            out.put_slice(line);
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_is_an_http_date() {
        let mut out = bytes::BytesMut::new();
        super::put(&mut out);
        let text = std::str::from_utf8(&out).unwrap();
        let value = text.strip_prefix("date: ").unwrap().strip_suffix("\r\n").unwrap();
        assert!(httpdate::parse_http_date(value).is_ok(), "{text}");
    }
}
