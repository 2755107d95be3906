//! The one-pass scanner against the first implementation, its fast paths
//! against the standard library, and the sample of a long answer.

use super::*;

#[test]
fn the_fast_paths_agree_with_the_standard_library() {
    for b in 0u8..128 {
        let c = char::from(b);
        let class = ASCII[usize::from(b)];
        assert_eq!(class & SPACE != 0, c.is_whitespace(), "{c:?}");
        assert_eq!(class & WORD != 0, c.is_alphanumeric(), "{c:?}");
        assert_eq!(class & LATIN != 0, super::super::Script::of(c) == Some(super::super::Script::Latin), "{c:?}");
    }
    for cp in 0x400u32..0x480 {
        let c = char::from_u32(cp).unwrap();
        assert!(c.is_alphanumeric() && !c.is_whitespace(), "{c:?}");
        assert_eq!(super::super::Script::of(c), Some(super::super::Script::Cyrillic));
        assert_eq!(cyrillic_lower(cp), u32::from(c.to_lowercase().next().unwrap()), "{c:?}");
        let mut utf8 = [0u8; 4];
        let lead = c.encode_utf8(&mut utf8).as_bytes()[0];
        assert!(lead == 0xD0 || lead == 0xD1, "{c:?}");
    }
}

#[test]
fn a_long_answer_is_read_at_its_head_and_its_tail() {
    let middle = "word ".repeat(2_000);
    let text = format!("{}{middle}{}", "а".repeat(HEAD), "b".repeat(TAIL));
    let s = scan(&text, 0);
    // The middle's repeated words are never read; both ends are.
    assert!(!s.repeated);
    assert_eq!((s.letters.cyrillic, s.letters.latin), (HEAD as u32 / 2, TAIL as u32));
    // A loop that runs to the end of a long answer is found.
    let looping = format!("{}{}", "Обычный текст ответа. ".repeat(200), "и снова ".repeat(400));
    assert!(scan(&looping, 0).repeated);
    // A cut in the middle of a character moves to a boundary.
    let odd = format!("x{}", "я".repeat(HEAD + TAIL));
    assert_eq!(scan(&odd, 0).visible as usize, (HEAD - 1) / 2 + 1 + TAIL / 2);
    // The middle's visible characters count when the samples have too few.
    assert_eq!(scan(&odd, u32::MAX).visible as usize, 1 + HEAD + TAIL);
}

#[test]
fn code_opened_or_closed_in_a_skipped_middle_is_followed_exactly() {
    let prose = |n: usize| "слово ".repeat(n / 12 + 1);
    let code = "let x = y;\n".repeat(100);
    // Opened and closed in the middle: the tail is prose.
    let text = format!("{}{}```\n{code}```\n{}{}", prose(HEAD), prose(2000), prose(2000), "tail ".repeat(TAIL / 5 + 1));
    let s = scan(&text, 0);
    assert!(s.letters.latin as usize >= TAIL / 2, "{:?}", s.letters);
    // Opened in the middle, closed in the tail: only what follows is read.
    let text = format!("{}{}```\n{code}```\n{}", prose(HEAD), prose(2000), "после ".repeat(10));
    let s = scan(&text, 0);
    assert_eq!(s.letters.latin, 0, "the code's tail is skipped");
    assert!(s.letters.cyrillic > (HEAD / 2) as u32, "{:?}", s.letters);
    // Inline code opened in the head and closed in the middle.
    let text = format!("{}`{}`{}", prose(HEAD), "x".repeat(3000), "tail ".repeat(TAIL / 5 + 1));
    assert!(scan(&text, 0).letters.latin as usize >= TAIL / 2);
}

/// The judge's pass as it was first written — char by char with the
/// standard library's tables, every word kept in a list, each n-gram
/// length checked over the list — to hold the one-pass scanner to.
fn reference(text: &str) -> (u32, Letters, u32, bool) {
    use super::super::Script;
    let (mut visible, mut letters, mut marks) = (0u32, Letters::default(), 0u32);
    let (mut fence, mut inline, mut ticks, mut word, mut words) = (false, false, 0, None, Vec::new());
    let end = |word: &mut Option<u64>, words: &mut Vec<u64>| words.extend(word.take());
    for c in text.chars() {
        if c == '`' {
            ticks += 1;
            end(&mut word, &mut words);
            continue;
        }
        if ticks > 0 {
            if ticks >= 3 {
                fence = !fence;
            } else if !fence {
                inline = !inline;
            }
            ticks = 0;
        }
        visible += u32::from(!c.is_whitespace());
        if fence || inline {
            continue;
        }
        marks += u32::from("{};=<>()[]".contains(c));
        let script = Script::of(c);
        if let Some(s) = script {
            letters.add(s);
        }
        if script == Some(Script::Cjk) {
            end(&mut word, &mut words);
            words.push(u64::from(u32::from(c)));
        } else if c.is_alphanumeric() {
            let lower = c.to_lowercase().next().unwrap();
            word = Some((word.unwrap_or(FNV_OFFSET) ^ u64::from(u32::from(lower))).wrapping_mul(FNV_PRIME));
        } else {
            end(&mut word, &mut words);
        }
    }
    end(&mut word, &mut words);
    let repeated = (1..=MAX_NGRAM).any(|n| {
        let mut run = 0;
        (n..words.len()).any(|i| {
            run = if words[i] == words[i - n] { run + 1 } else { 0 };
            run + n >= NEED[n - 1]
        })
    });
    (visible, letters, marks, repeated)
}

#[test]
fn the_one_pass_scanner_agrees_with_the_reference_on_random_text() {
    let pieces = [
        "Привет",
        "мир",
        "ЁЛКА",
        "Ѣ",
        "word",
        "Word",
        "x",
        "42",
        " ",
        "  ",
        "\n",
        "\t",
        ",",
        ".",
        "`",
        "```",
        "{",
        "}",
        ";",
        "=",
        "(",
        "]",
        "é",
        "Straße",
        "İ",
        "好",
        "的",
        "한",
        "ー",
        "\u{00A0}",
        "\u{2003}",
        "🙂",
        "ҕ",
        "Ӂ",
        "\u{0483}",
        "a a a a",
        "и снова и снова",
    ];
    let mut rng = fastrand::Rng::with_seed(27);
    for round in 0..3_000 {
        let n = rng.usize(0..if round % 10 == 0 { 400 } else { 60 });
        let mut text = String::new();
        let mut last = 0;
        for _ in 0..n {
            // Runs of the same piece now and then, so loops occur.
            let p = if rng.u8(..) < 80 { last } else { rng.usize(..pieces.len()) };
            text.push_str(pieces[p]);
            last = p;
        }
        if text.len() > HEAD + TAIL {
            continue;
        }
        let s = scan(&text, 0);
        assert_eq!((s.visible, s.letters, s.code_marks, s.repeated), reference(&text), "{text:?}");
    }
}
