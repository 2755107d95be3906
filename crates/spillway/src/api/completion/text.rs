//! Text put together from a stream's content pieces, checked to be UTF-8
//! once as a whole rather than once a piece.

/// What the first piece makes room for: a short answer's whole text.
const FIRST_ROOM: usize = 1024;

/// Text appended to from pieces already checked to be UTF-8 (a checked
/// chunk's content: [`super::RawChunk::content_bytes`]), or from `&str`s.
///
/// The pieces wait as bytes and are checked together when the text is
/// read: one pass over many pieces instead of one call per piece, which
/// for a stream's 16-byte pieces cost more than the piece's own check.
/// Pieces that are each UTF-8 are UTF-8 together; should one not be, it is
/// read with the replacement character, never a panic.
#[derive(Debug, Default, Clone)]
pub struct TextBuf {
    text: String,
    waiting: Vec<u8>,
}

impl TextBuf {
    /// Appends a piece checked to be UTF-8.
    pub fn push_checked(&mut self, piece: &[u8]) {
        self.room_for(piece.len());
        self.waiting.extend_from_slice(piece);
    }

    /// Appends text.
    pub fn push_str(&mut self, text: &str) {
        self.room_for(text.len());
        self.waiting.extend_from_slice(text.as_bytes());
    }

    /// The first piece gets room for [`FIRST_ROOM`] bytes: a stream's
    /// pieces are a few bytes each, and grown from nothing by doubling the
    /// buffer was moved six times for a 20-event answer.
    fn room_for(&mut self, len: usize) {
        if self.waiting.capacity() == 0 {
            self.waiting.reserve(len.max(FIRST_ROOM));
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.text.len() + self.waiting.len()
    }

    /// Nothing has been appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text so far.
    pub fn as_str(&mut self) -> &str {
        if !self.waiting.is_empty() {
            match std::str::from_utf8(&self.waiting) {
                Ok(text) => self.text.push_str(text),
                Err(_) => self.text.push_str(&String::from_utf8_lossy(&self.waiting)),
            }
            self.waiting.clear();
        }
        &self.text
    }

    /// The text, whole.
    pub fn into_string(mut self) -> String {
        self.as_str();
        self.text
    }
}

impl From<String> for TextBuf {
    fn from(text: String) -> Self {
        Self { text, waiting: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_back_in_order_whatever_the_reads_between_them() {
        let mut t = TextBuf::default();
        t.push_checked("Привет".as_bytes());
        assert_eq!(t.len(), "Привет".len());
        assert_eq!(t.as_str(), "Привет");
        t.push_str(", ");
        t.push_checked(b"world");
        assert!(!t.is_empty());
        assert_eq!(t.as_str(), "Привет, world");
        assert_eq!(t.clone().into_string(), "Привет, world");
        assert_eq!(t.len(), "Привет, world".len());
        let mut from = TextBuf::from("a".to_string());
        from.push_checked(b"b");
        assert_eq!(from.into_string(), "ab");
    }

    #[test]
    fn a_piece_that_is_not_utf8_reads_as_the_replacement_character() {
        let mut t = TextBuf::default();
        t.push_checked(b"ok ");
        t.push_checked(&[0xff]);
        assert_eq!(t.into_string(), "ok \u{fffd}");
    }

    #[test]
    fn the_first_piece_makes_room_for_a_short_answer() {
        let mut t = TextBuf::default();
        t.push_checked(b"Hi");
        assert!(t.waiting.capacity() >= FIRST_ROOM);
        let room = t.waiting.capacity();
        for _ in 0..(FIRST_ROOM / 16 - 1) {
            t.push_checked(b"sixteen bytes ok");
        }
        assert_eq!(t.waiting.capacity(), room, "a 1 KiB answer is kept without growing the buffer");
        let long = "x".repeat(4 * FIRST_ROOM);
        let mut t = TextBuf::default();
        t.push_str(&long);
        assert_eq!(t.as_str(), long);
    }

    #[test]
    fn empty_is_empty() {
        let mut t = TextBuf::default();
        assert!(t.is_empty());
        assert_eq!(t.as_str(), "");
    }
}
