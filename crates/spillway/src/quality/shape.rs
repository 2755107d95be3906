//! A request's shape, for the refusal signal's base rates: whether it
//! offers tools, asks for JSON, how long its prompt is and in which
//! script. Some shapes are refused often and rightly (a moderation
//! prompt, a question about weapons); a refusal only counts against a
//! model where the same shape is usually answered
//! ([`crate::health::refusals`]).

use super::text::{PromptFacts, Script};

/// Shapes there are: tools (2) × JSON (2) × prompt length (4) × script (4).
pub const SHAPES: usize = 64;

/// A request's shape, one of [`SHAPES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Shape(u8);

impl Shape {
    /// The shape of a request: its prompt's facts, whether the content
    /// must be JSON, and whether it offers tools.
    pub fn of(prompt: PromptFacts, json: bool, tools: bool) -> Self {
        let length: u8 = match prompt.chars {
            0..=99 => 0,
            100..=999 => 1,
            1_000..=9_999 => 2,
            _ => 3,
        };
        let script: u8 = match prompt.script {
            None => 0,
            Some(Script::Latin) => 1,
            Some(Script::Cyrillic) => 2,
            Some(Script::Cjk) => 3,
        };
        Self(u8::from(tools) | u8::from(json) << 1 | length << 2 | script << 4)
    }

    /// Its position in a table of [`SHAPES`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_differ_by_tools_json_length_and_script() {
        let short_ru = PromptFacts::of("Как дела?");
        let long_ru = PromptFacts::of(&"Расскажи подробно. ".repeat(10));
        let en = PromptFacts::of("How are you?");
        let shapes = [
            Shape::of(short_ru, false, false),
            Shape::of(short_ru, true, false),
            Shape::of(short_ru, false, true),
            Shape::of(long_ru, false, false),
            Shape::of(en, false, false),
            Shape::of(PromptFacts::default(), true, true),
        ];
        for (i, a) in shapes.iter().enumerate() {
            assert!(a.index() < SHAPES);
            for b in &shapes[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(Shape::of(PromptFacts { script: Some(Script::Cjk), chars: 50_000 }, true, true).index(), SHAPES - 1);
    }
}
