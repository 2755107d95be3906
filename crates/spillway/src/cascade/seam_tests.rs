use super::*;

/// A partial answer of about `chars` characters, in sentences that differ.
fn answer(chars: usize) -> String {
    const WORDS: [&str; 7] = ["river", "lantern", "orchard", "signal", "harbor", "meadow", "engine"];
    let mut s = String::new();
    let mut i = 0;
    while s.len() < chars {
        s.push_str(&format!("Point {i} is about the {} of item {}. ", WORDS[i % 7], i * 7 + 3));
        i += 1;
    }
    s.truncate(chars);
    s
}

/// Feeds `new` in pieces of about `piece` bytes; what the client gets and
/// the most the seam held back at once.
fn run(partial: &str, new: &str, piece: usize) -> (String, usize) {
    let mut seam = Seam::default();
    let (mut out, mut most, mut open) = (String::new(), 0, true);
    let mut rest = new;
    while !rest.is_empty() {
        let mut n = piece.min(rest.len());
        while !rest.is_char_boundary(n) {
            n += 1;
        }
        let (chunk, after) = rest.split_at(n);
        rest = after;
        if !open {
            out.push_str(chunk);
            continue;
        }
        if let Some(sent) = seam.feed(partial, chunk) {
            out.push_str(&sent);
            open = false;
        }
        most = most.max(seam.held());
    }
    if open {
        out.push_str(&seam.finish(partial));
    }
    (out, most)
}

const MORE: &str = "And that is where the answer goes on.";

#[test]
fn a_restart_from_the_first_word_is_dropped_for_any_length_and_pace() {
    for chars in [600, 5_000, 100_000] {
        let partial = answer(chars);
        let new = format!("{partial}{MORE}");
        for piece in [1, 7, 100, new.len()] {
            let (out, most) = run(&partial, &new, piece);
            assert_eq!(out, MORE, "partial {chars}, pieces of {piece}");
            assert!(most <= HOLD + piece, "held {most} bytes");
        }
    }
}

#[test]
fn a_restart_from_a_middle_sentence_is_dropped() {
    for chars in [600, 5_000, 100_000] {
        let partial = answer(chars);
        let middle = partial[chars / 2..].find("Point ").map(|i| chars / 2 + i).unwrap();
        let new = format!("{}{MORE}", &partial[middle..]);
        for piece in [3, 50] {
            assert_eq!(run(&partial, &new, piece).0, MORE, "partial {chars}, pieces of {piece}");
        }
    }
}

#[test]
fn leading_whitespace_before_a_restart_goes_with_it() {
    let partial = answer(5_000);
    let new = format!("\n\n{partial}{MORE}");
    assert_eq!(run(&partial, &new, 5).0, MORE);
}

#[test]
fn a_restart_that_departs_is_sent_from_where_it_departs() {
    let partial = answer(5_000);
    let new = format!("{}But then it says something else.", &partial[..1_000]);
    assert_eq!(run(&partial, &new, 9).0, "But then it says something else.");
    // Inside a character: what is sent starts at that character.
    let partial = format!("{} Кафе «Ёлка» открыто.", answer(600));
    let new = format!("{} Кафе «Ёжик» рядом.", answer(600));
    assert_eq!(run(&partial, &new, 4).0, "жик» рядом.");
}

#[test]
fn the_repeated_end_is_cut_as_before() {
    let cases = [
        ("The quick brown fox ", "brown fox jumps over", "jumps over"),
        ("The quick brown fox", " jumps over", " jumps over"),
        ("The quick brown fox", "x jumps", "x jumps"),
        ("The quick brown fox", "fox", ""),
        ("Привет, мир", "т, мир и всё", " и всё"),
        ("Half an ", "an answer", "answer"),
        ("He said no", "o way", "o way"),
    ];
    for (partial, new, sent) in cases {
        for piece in [1, 2, 100] {
            assert_eq!(run(partial, new, piece).0, sent, "{partial:?} + {new:?} in pieces of {piece}");
        }
    }
    // A long repeated end, longer than what is held: cut all the same.
    let partial = answer(5_000);
    let new = format!("{}{MORE}", &partial[partial.len() - 400..]);
    assert_eq!(run(&partial, &new, 10).0, MORE);
}

#[test]
fn new_text_that_only_begins_like_a_sentence_is_sent_whole_and_soon() {
    let partial = answer(5_000);
    let new = "Point 3 is different from what came before, and it goes on at length.";
    let (out, most) = run(&partial, new, 4);
    assert_eq!(out, new, "nothing of it was lost");
    assert!(most < 32, "held {most} bytes");
    // A continuation that repeats nothing passes at its first text.
    let mut seam = Seam::default();
    assert_eq!(seam.feed(&partial, "zebra crossing").as_deref(), Some("zebra crossing"));
}

#[test]
fn whitespace_alone_waits_for_text() {
    let mut seam = Seam::default();
    assert_eq!(seam.feed("The fox.", "\n"), None);
    assert_eq!(seam.feed("The fox.", "Then it ran.").as_deref(), Some("\nThen it ran."));
}
