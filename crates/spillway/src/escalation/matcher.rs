//! The phrase tables of [`super::phrases`], compiled once into an index so
//! the frustration detector scans a message in one pass.
//!
//! Trying every phrase at every word costs phrases × words (about 40 µs for
//! a short chat, milliseconds for a pasted log); indexing the phrases by
//! their first word makes it one hash lookup per word plus the handful of
//! phrases that start with a prefix (`оператор*`). Built on first use and
//! shared for the life of the process.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::phrases::{AGAIN, NOT_WORKING, STOP_WORDS, USELESS, WANTS_HUMAN};

/// The phrase kinds a message contains.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hits {
    pub(super) not_working: bool,
    pub(super) useless: bool,
    pub(super) wants_human: bool,
    pub(super) again: bool,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    NotWorking,
    Useless,
    WantsHuman,
    Again,
}

/// One word of a phrase: a whole token, or a prefix when written with `*`.
#[derive(Debug)]
struct Word {
    text: &'static str,
    prefix: bool,
}

impl Word {
    fn parse(word: &'static str) -> Self {
        match word.strip_suffix('*') {
            Some(stem) => Word { text: stem, prefix: true },
            None => Word { text: word, prefix: false },
        }
    }

    fn matches(&self, token: &str) -> bool {
        if self.prefix {
            token.starts_with(self.text)
        } else {
            token == self.text
        }
    }
}

/// The compiled tables.
#[derive(Debug)]
pub(super) struct Matcher {
    /// Every distinct run of consecutive words ("part") of every phrase.
    parts: Vec<Vec<Word>>,
    /// Parts by their first word, when that word is whole.
    by_first: HashMap<&'static str, Vec<usize>>,
    /// Parts whose first word is a prefix; tried at every token.
    prefix_first: Vec<usize>,
    /// Each phrase: its kind and the parts that must all occur.
    phrases: Vec<(Kind, Vec<usize>)>,
    stop_words: HashSet<&'static str>,
}

/// The process-wide matcher.
pub(super) fn matcher() -> &'static Matcher {
    static MATCHER: OnceLock<Matcher> = OnceLock::new();
    MATCHER.get_or_init(Matcher::build)
}

impl Matcher {
    fn build() -> Self {
        let mut m = Matcher {
            parts: Vec::new(),
            by_first: HashMap::new(),
            prefix_first: Vec::new(),
            phrases: Vec::new(),
            stop_words: STOP_WORDS.iter().copied().collect(),
        };
        let mut part_ids: HashMap<&'static str, usize> = HashMap::new();
        let tables = [
            (Kind::NotWorking, NOT_WORKING),
            (Kind::Useless, USELESS),
            (Kind::WantsHuman, WANTS_HUMAN),
            (Kind::Again, AGAIN),
        ];
        for (kind, table) in tables {
            for phrase in table {
                let mut ids = Vec::new();
                for part in phrase.split(" + ") {
                    let id = *part_ids.entry(part).or_insert_with(|| {
                        let words: Vec<Word> = part.split(' ').map(Word::parse).collect();
                        let id = m.parts.len();
                        match words.first() {
                            Some(w) if !w.prefix => m.by_first.entry(w.text).or_default().push(id),
                            Some(_) => m.prefix_first.push(id),
                            None => {}
                        }
                        m.parts.push(words);
                        id
                    });
                    ids.push(id);
                }
                m.phrases.push((kind, ids));
            }
        }
        m
    }

    /// Which kinds of phrase occur in `tokens` (normalized words, in order).
    pub(super) fn scan(&self, tokens: &[&str]) -> Hits {
        let mut found = vec![false; self.parts.len()];
        for (at, token) in tokens.iter().enumerate() {
            let exact = self.by_first.get(token).map_or(&[][..], Vec::as_slice);
            for &id in exact.iter().chain(&self.prefix_first) {
                if found[id] {
                    continue;
                }
                let words = &self.parts[id];
                found[id] =
                    tokens.len() - at >= words.len() && words.iter().zip(&tokens[at..]).all(|(w, t)| w.matches(t));
            }
        }
        let mut hits = Hits::default();
        for (kind, ids) in &self.phrases {
            if ids.iter().all(|&id| found[id]) {
                match kind {
                    Kind::NotWorking => hits.not_working = true,
                    Kind::Useless => hits.useless = true,
                    Kind::WantsHuman => hits.wants_human = true,
                    Kind::Again => hits.again = true,
                }
            }
        }
        hits
    }

    /// Whether `word` carries no topic (see [`STOP_WORDS`]).
    pub(super) fn is_stop_word(&self, word: &str) -> bool {
        self.stop_words.contains(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Hits {
        let tokens: Vec<&str> = text.split(' ').collect();
        matcher().scan(&tokens)
    }

    #[test]
    fn sequences_prefixes_and_free_order() {
        assert!(scan("it doesnt work").not_working);
        assert!(scan("doesnt working").not_working); // `work*`
        assert!(!scan("doesnt").not_working); // runs past the end
        assert!(!scan("work doesnt").not_working);
        assert!(scan("соедините меня с оператором").wants_human);
        assert!(scan("оператора позовите").wants_human);
        assert!(!scan("оператор if").wants_human);
        assert!(scan("все еще не работает").again);
        assert_eq!(scan("hello there"), Hits::default());
        assert_eq!(scan(""), Hits::default());
    }

    #[test]
    fn every_phrase_matches_itself() {
        // Catches typos such as a stray double space or an empty part.
        let tables = [NOT_WORKING, USELESS, WANTS_HUMAN, AGAIN];
        for phrase in tables.iter().flat_map(|t| t.iter()) {
            let text = phrase.replace(" + ", " x ").replace('*', "");
            let tokens: Vec<&str> = text.split(' ').collect();
            assert_ne!(matcher().scan(&tokens), Hits::default(), "{phrase}");
        }
        assert!(matcher().is_stop_word("how") && !matcher().is_stop_word("password"));
    }
}
