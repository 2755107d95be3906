//! Token counts: the figures an upstream's `usage` gives, and the one
//! estimate the gateway makes when it gives none.
//!
//! At the bottom of the layering (it imports nothing of the crate): the
//! wire types read counts into [`Tokens`]; cost, budgets, the
//! `token_velocity` load source and the context-size gate use
//! [`estimate_tokens`] where no count came.

use serde_json::Value;

/// Token counts of an answer's `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// `prompt_tokens`.
    pub input: u64,
    /// `completion_tokens`.
    pub output: u64,
}

impl Tokens {
    /// Reads a `usage` object; missing or non-integer counts are 0.
    pub fn of(usage: &Value) -> Self {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        Self { input: n("prompt_tokens"), output: n("completion_tokens") }
    }
}

/// Tokens in `chars` characters of text: one per four, rounded up.
///
/// Why four: it is the usual figure for English text with the BPE
/// tokenizers of current models (OpenAI quotes "about 4 characters per
/// token"), and without the model's own tokenizer — which the gateway does
/// not have for most upstreams — any estimate is rough. It only matters
/// where no upstream gave a count: cost and budgets of answers without
/// `usage`, the `token_velocity` load, and skipping models whose context
/// clearly cannot hold a prompt (the upstream's own error covers the rest).
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_characters_a_token_rounded_up() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(8), 2);
        assert_eq!(estimate_tokens(9), 3);
    }

    #[test]
    fn missing_counts_read_as_zero() {
        let t = Tokens::of(&serde_json::json!({"prompt_tokens": 3, "completion_tokens": "x"}));
        assert_eq!(t, Tokens { input: 3, output: 0 });
    }
}
