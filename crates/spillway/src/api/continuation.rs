//! The wire side of continuing a stream another model broke off (SPEC §6):
//! how the partial answer goes into the next model's request, and how the
//! seam between the two answers is found.
//!
//! Two ways to continue (see `cascade::continuation` for who uses which):
//! - **prefill**: the partial answer is the final assistant message and
//!   the API continues it token by token; per API a flag says so
//!   ([`Prefill`]);
//! - **instruct**: the partial answer is the assistant's message, followed
//!   by a user message asking to continue exactly where it stops; the model
//!   may repeat the end of it, which [`overlap`] finds so it can be cut.

use serde_json::{json, Map, Value};

/// The instruction that follows the partial answer in instruct mode.
pub const INSTRUCTION: &str = "Your previous reply was cut off after the text above. Continue exactly where it \
stopped, mid-word if it stopped mid-word; do not repeat anything and do not comment on the interruption.";

/// How an API is told to continue a final assistant message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefill {
    /// A plain trailing assistant message (Groq, Ollama, llama.cpp, the
    /// mock; Anthropic through its adapter, with trailing whitespace cut).
    Plain,
    /// `"prefix": true` on the message (DeepSeek beta, Mistral).
    Prefix,
    /// vLLM's `continue_final_message: true` with `add_generation_prompt: false`.
    Vllm,
    /// Anthropic: a trailing assistant turn whose text may not end with
    /// whitespace (the API answers 400 otherwise).
    Anthropic,
}

/// How one target continues a partial answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The API continues a final assistant message.
    Prefill(Prefill),
    /// The partial answer and an instruction; the seam is trimmed.
    Instruct,
}

impl Mode {
    /// The `mode` label of `spillway_continuations_total`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Prefill(_) => "prefill",
            Self::Instruct => "instruct",
        }
    }

    /// Puts `partial` into a request body.
    pub fn apply(self, body: &mut serde_json::Map<String, serde_json::Value>, partial: &str) {
        match self {
            Self::Prefill(style) => {
                prefill(body, partial, style);
            }
            Self::Instruct => instruct(body, partial),
        }
    }
}

fn push(body: &mut Map<String, Value>, new: impl IntoIterator<Item = Value>) {
    match body.get_mut("messages") {
        Some(Value::Array(list)) => list.extend(new),
        _ => {
            body.insert("messages".into(), Value::Array(new.into_iter().collect()));
        }
    }
}

/// Adds `partial` as the final assistant message for `style`. Returns the
/// whitespace cut off its end (Anthropic): the continuation may or may
/// not send it again, which the caller checks at the seam.
pub fn prefill(body: &mut Map<String, Value>, partial: &str, style: Prefill) -> String {
    let (text, cut) = match style {
        Prefill::Anthropic => {
            let kept = partial.trim_end();
            (kept, partial[kept.len()..].to_string())
        }
        _ => (partial, String::new()),
    };
    let mut message = json!({"role": "assistant", "content": text});
    if style == Prefill::Prefix {
        message["prefix"] = Value::Bool(true);
    }
    push(body, [message]);
    if style == Prefill::Vllm {
        body.insert("continue_final_message".into(), Value::Bool(true));
        body.insert("add_generation_prompt".into(), Value::Bool(false));
    }
    cut
}

/// Adds `partial` as the assistant's message and the [`INSTRUCTION`].
pub fn instruct(body: &mut Map<String, Value>, partial: &str) {
    push(body, [json!({"role": "assistant", "content": partial}), json!({"role": "user", "content": INSTRUCTION})]);
}

/// A continuation request as a model sees it: the partial answer it must
/// continue, and whether it came with the instruction (else it is a
/// prefill). `None` when the request is not a continuation.
pub fn read(body: &Map<String, Value>) -> Option<(&str, bool)> {
    fn text(m: &Value) -> Option<&str> {
        m.get("content").and_then(Value::as_str)
    }
    let list = body.get("messages")?.as_array()?;
    let last = list.last()?;
    match last.get("role").and_then(Value::as_str)? {
        "assistant" => text(last).map(|t| (t, false)),
        "user" if text(last) == Some(INSTRUCTION) => {
            let before = list.get(list.len().checked_sub(2)?)?;
            (before.get("role").and_then(Value::as_str) == Some("assistant")).then_some(())?;
            text(before).map(|t| (t, true))
        }
        _ => None,
    }
}

/// How much of `held` — the start of an instructed continuation — repeats
/// the end of `partial`: the longest prefix of `held` that is a suffix of
/// `partial`, counted when it is four characters or more, when it is made
/// of whole words (it starts where a word of `partial` starts and ends at
/// a space), or when all of `held` is such a suffix. A shorter match inside
/// a word is as likely chance as repetition. In bytes of `held`, on a char
/// boundary.
pub fn overlap(partial: &str, held: &str) -> usize {
    let mut best = 0;
    for (i, _) in held.char_indices().skip(1).chain(std::iter::once((held.len(), ' '))) {
        if partial.ends_with(&held[..i]) {
            best = i;
        }
    }
    if best == 0 {
        return 0;
    }
    let repeated = &held[..best];
    let starts_word = partial[..partial.len() - best].chars().next_back().is_none_or(char::is_whitespace);
    let whole_words = starts_word && repeated.ends_with(char::is_whitespace);
    if best == held.len() || repeated.chars().count() >= 4 || whole_words {
        best
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Map<String, Value> {
        json!({"model": "m", "messages": [{"role": "user", "content": "Q"}]}).as_object().cloned().unwrap()
    }

    #[test]
    fn each_prefill_style_shapes_the_request_as_its_api_wants() {
        let mut b = body();
        assert_eq!(prefill(&mut b, "The fox ", Prefill::Plain), "");
        assert_eq!(b["messages"][1], json!({"role": "assistant", "content": "The fox "}));
        let mut b = body();
        prefill(&mut b, "The fox", Prefill::Prefix);
        assert_eq!(b["messages"][1], json!({"role": "assistant", "content": "The fox", "prefix": true}));
        let mut b = body();
        prefill(&mut b, "The fox", Prefill::Vllm);
        assert_eq!(
            (b["continue_final_message"].clone(), b["add_generation_prompt"].clone()),
            (json!(true), json!(false))
        );
        let mut b = body();
        assert_eq!(prefill(&mut b, "The fox \n", Prefill::Anthropic), " \n");
        assert_eq!(b["messages"][1]["content"], "The fox");
        assert_eq!(read(&b), Some(("The fox", false)));
    }

    #[test]
    fn instruct_appends_the_answer_and_the_instruction() {
        let mut b = body();
        instruct(&mut b, "The fox");
        assert_eq!(b["messages"][2]["content"], INSTRUCTION);
        assert_eq!(read(&b), Some(("The fox", true)));
        assert_eq!(read(&body()), None);
    }

    #[test]
    fn the_seam_cuts_what_the_next_model_repeats() {
        assert_eq!(overlap("The quick brown fox", "brown fox jumps"), "brown fox".len());
        assert_eq!(overlap("The quick brown fox", " jumps over"), 0, "nothing repeated");
        assert_eq!(overlap("The quick brown fox", "x jumps"), 0, "one letter may be chance");
        assert_eq!(overlap("The quick brown fox", "fox"), 3, "all that is held repeats");
        assert_eq!(overlap("Привет, мир", "т, мир и всё"), "т, мир".len());
        assert_eq!(overlap("abc", ""), 0);
        assert_eq!(overlap("Half an ", "an answer"), 3, "a short whole word repeated");
        assert_eq!(overlap("He said no", "o way"), 0, "a letter inside a word is chance");
    }
}
