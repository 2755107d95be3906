//! The OpenAI-compatible endpoints of well-known providers: a `kind:
//! openai` provider named after one (`groq`, or `groq-free`: the name up
//! to its first `-` or `_`) needs no `base_url`.

/// Name and base URL, the name as LiteLLM's prefixes spell it where they differ.
pub(crate) const KNOWN: [(&str, &str); 15] = [
    ("openai", "https://api.openai.com/v1"),
    ("groq", "https://api.groq.com/openai/v1"),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("mistral", "https://api.mistral.ai/v1"),
    ("deepseek", "https://api.deepseek.com/v1"),
    ("together", "https://api.together.xyz/v1"),
    ("fireworks", "https://api.fireworks.ai/inference/v1"),
    ("gemini", "https://generativelanguage.googleapis.com/v1beta/openai"),
    ("xai", "https://api.x.ai/v1"),
    ("perplexity", "https://api.perplexity.ai"),
    ("cerebras", "https://api.cerebras.ai/v1"),
    ("deepinfra", "https://api.deepinfra.com/v1/openai"),
    ("nvidia", "https://integrate.api.nvidia.com/v1"),
    ("sambanova", "https://api.sambanova.ai/v1"),
    ("ollama", "http://127.0.0.1:11434/v1"),
];

/// The base URL of the well-known provider `name` stands for, if any.
pub(crate) fn base_url(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let stem = name.split(['-', '_']).next().unwrap_or_default();
    KNOWN.iter().find(|(n, _)| *n == name || *n == stem).map(|(_, url)| *url)
}

/// The names, for the error that asks for a `base_url`.
pub(crate) fn names() -> String {
    KNOWN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_their_stems_find_the_endpoint() {
        assert_eq!(base_url("groq"), Some("https://api.groq.com/openai/v1"));
        assert_eq!(base_url("Groq-free"), Some("https://api.groq.com/openai/v1"));
        assert_eq!(base_url("together_ai"), Some("https://api.together.xyz/v1"));
        assert_eq!(base_url("local"), None);
        assert_eq!(base_url("openaix"), None);
    }
}
