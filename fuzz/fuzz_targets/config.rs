//! Fuzzes the config loader (`spillway::config::load_str`: YAML, `${VAR}`
//! substitution, shape checks with paths, the compile step): whatever text
//! an operator writes, it must not panic, it must report at least one
//! error when it fails, and every error must say what is wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Every `${VAR}` resolves to a fixed value, so substitution runs too.
    let lookup = |name: &str| (name.len() < 32).then(|| format!("value-of-{name}"));
    if let Err(errors) = spillway::config::load_str(text, None, &lookup) {
        assert!(!errors.0.is_empty(), "a failure without an error");
        for e in &errors.0 {
            assert!(!e.message.is_empty(), "an error without a message at `{}`", e.path);
        }
    }
});
