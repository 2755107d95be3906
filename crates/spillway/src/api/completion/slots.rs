//! A checked answer or stream chunk cut into *slots* — the values that
//! change from one answer of an upstream to the next — and the bytes
//! between them: what [`super::shape`] (whole answers) and
//! [`super::chunk_shape`] (stream chunks) compare the next answers with.
//!
//! Why a text equal to a checked one outside its slots passes the same
//! check: JSON's structure lies outside its scalar values. Each slot holds
//! a value the check accepts whatever it is, as long as it is of the
//! slot's kind (a string, or an integer that fits a `u64`): `id`, `model`,
//! `created`, `system_fingerprint`, `obfuscation` (OpenAI's per-chunk
//! padding), choice 0's content, and `usage`'s counts (the details'
//! counts too: the check asks only that the details be objects). Anything
//! else — a field added or moved, another finish reason, a second choice,
//! tool calls — differs outside the slots.

use crate::api::lex::{self, Lex, Str};
use bytes::Bytes;
use std::ops::Range;

/// At most this many slots: the keys that make slots appear once each in
/// a checked text (five at the top, the content, three counts and the
/// details' counts).
pub(super) const MAX_SLOTS: usize = 16;

/// What a slot holds, and what of it the check reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Any string.
    Text,
    /// Any integer (`created`, `total_tokens`, the details' counts).
    Integer,
    /// Choice 0's content.
    Content,
    /// `usage.prompt_tokens`.
    Input,
    /// `usage.completion_tokens`.
    Output,
}

/// A text cut into its slots and the bytes between them.
pub(super) struct Slotted {
    /// The text it was made of.
    text: Box<str>,
    /// Where its slots are in `text` (strings with their quotes), in order.
    slots: Vec<(Range<usize>, Slot)>,
    /// Its top-level entries that follow the stamp (all but `id`,
    /// `object`, `created` and `model`), each from its key's quote to the
    /// end of its value: the runs of its tail. When they lie in one run
    /// (compact JSON, the stamp's entries first: most upstreams), that run
    /// alone, from the comma before it, and `run` is set: a filled text's
    /// tail is then a slice of it. With each end, how many slots come
    /// before it.
    entries: Vec<(Range<usize>, [usize; 2])>,
    run: bool,
    /// Choice 0's refusal has text.
    pub(super) refusal: bool,
    /// Where `usage`'s value is in `text`, when it is an object.
    usage: Option<Range<usize>>,
}

/// What [`Slotted::fill`] read of a new text.
pub(super) struct Filled<'a> {
    /// How far the new text's bytes have moved from the shape's after each
    /// slot (none before the first).
    moved: [i32; MAX_SLOTS + 1],
    /// The content's string: where its body starts in the new text (after
    /// the quote), and what it says.
    pub(super) content: Option<(usize, Str<'a>)>,
    /// `usage.prompt_tokens` and `usage.completion_tokens`, when slotted.
    pub(super) input: Option<u64>,
    pub(super) output: Option<u64>,
}

impl Slotted {
    /// `text` (which passed the whole check and cut out `tail`) cut into
    /// its slots; `chunk` reads choices' `delta`, not `message`. `None`
    /// when it has more than one choice, too many slots, or its tail is
    /// not its entries.
    pub(super) fn of(text: &str, tail: &[u8], chunk: bool) -> Option<Self> {
        let mut walk = Walk { chunk, slots: Vec::with_capacity(8), entries: Vec::with_capacity(8), ..Walk::default() };
        walk.top(text)?;
        if walk.slots.len() > MAX_SLOTS {
            return None;
        }
        let mut entries = walk.entries;
        let run = match (entries.first(), entries.last()) {
            (Some(first), Some(last)) => {
                let comma = first.start.checked_sub(1)?;
                let joined = text.get(comma..last.end)?.as_bytes();
                (joined == tail).then_some(comma..last.end)
            }
            _ => None,
        };
        if let Some(run) = &run {
            entries = vec![run.clone()];
        }
        let before = |at: usize| walk.slots.iter().take_while(|(slot, _)| slot.end <= at).count();
        let entries = entries.into_iter().map(|e| (e.clone(), [before(e.start), before(e.end)])).collect();
        Some(Self {
            text: text.into(),
            slots: walk.slots,
            entries,
            run: run.is_some(),
            refusal: walk.refusal,
            usage: walk.usage,
        })
    }

    /// It has a slot for choice 0's content.
    pub(super) fn has_content(&self) -> bool {
        self.slots.iter().any(|(_, slot)| *slot == Slot::Content)
    }

    /// `new` read against the shape: `None` when it differs outside the
    /// slots or a slot does not hold a value of its kind. Only the slots'
    /// strings are checked to be UTF-8: the bytes between them are the
    /// shape's own text, and a slot starts and ends at an ASCII byte.
    ///
    /// The two texts are compared a word at a time up to their first
    /// difference; a slot before it holds the shape's own value and is
    /// not read again (an `id`, a `model`, most of a stream's values), and
    /// only the slot the difference is in is read, the comparison going on
    /// after it.
    pub(super) fn fill<'a>(&self, new: &'a [u8]) -> Option<Filled<'a>> {
        let old = self.text.as_bytes();
        let mut filled = Filled { moved: [0; MAX_SLOTS + 1], content: None, input: None, output: None };
        // After the last slot read, `new` is `old` moved by `by`, up to
        // `old[differs]`.
        let mut by = 0isize;
        let mut differs = common(old, new);
        for (i, (range, slot)) in self.slots.iter().enumerate() {
            if differs < range.start {
                return None;
            }
            // A string is the same when its closing quote is; an integer
            // when the byte after it is too.
            let same = match slot {
                Slot::Text | Slot::Content => differs >= range.end,
                Slot::Integer | Slot::Input | Slot::Output => differs > range.end,
            };
            let at = range.start.checked_add_signed(by)?;
            let end = match slot {
                Slot::Text | Slot::Integer if same => at + range.len(),
                Slot::Text => lex::string_at(new, at)?.0,
                Slot::Integer => lex::integer_at(new, at)?.0,
                Slot::Content => {
                    let (end, content) = lex::string_at(new, at)?;
                    filled.content = Some((at + 1, content));
                    end
                }
                Slot::Input | Slot::Output => {
                    let (end, n) = lex::integer_at(new, at)?;
                    *(if *slot == Slot::Input { &mut filled.input } else { &mut filled.output }) = Some(n);
                    end
                }
            };
            by = end as isize - range.end as isize;
            *filled.moved.get_mut(i + 1)? = i32::try_from(by).ok()?;
            if !same {
                differs = range.end + common(old.get(range.end..)?, new.get(end..)?);
            }
        }
        (differs == old.len() && new.len() == old.len().checked_add_signed(by)?).then_some(filled)
    }

    /// Where byte `at` of the shape's text is in a text filled as
    /// `filled`, `slots` being how many slots end before it.
    fn place(filled: &Filled<'_>, at: usize, slots: usize) -> Option<usize> {
        at.checked_add_signed(isize::try_from(*filled.moved.get(slots)?).ok()?)
    }

    /// The tail of `new`, filled as `filled`: its entries after the
    /// stamp's, as `,"key":value` runs — a slice of `whole` (which `new`
    /// is a slice of, if it is) when they lie in one run, else put
    /// together.
    pub(super) fn tail(&self, new: &[u8], whole: Option<&Bytes>, filled: &Filled<'_>) -> Option<Bytes> {
        match &self.entries[..] {
            [(run, [s, e])] if self.run => {
                let (start, end) = (Self::place(filled, run.start, *s)?, Self::place(filled, run.end, *e)?);
                let slice = new.get(start..end)?;
                Some(match whole.and_then(|w| Some(w).zip(offset_in(w, new))) {
                    Some((whole, at)) => whole.slice(at + start..at + end),
                    None => Bytes::copy_from_slice(slice),
                })
            }
            entries => {
                let mut own = Vec::with_capacity(new.len());
                for (entry, [s, e]) in entries {
                    own.push(b',');
                    own.extend_from_slice(
                        new.get(Self::place(filled, entry.start, *s)?..Self::place(filled, entry.end, *e)?)?,
                    );
                }
                Some(Bytes::from(own))
            }
        }
    }

    /// Where byte `at` of a text filled as `filled` is in its tail
    /// ([`Self::tail`]), when it is in an entry of it.
    pub(super) fn in_tail(&self, filled: &Filled<'_>, at: usize) -> Option<usize> {
        let mut tail = 0;
        for (entry, [s, e]) in &self.entries {
            let (start, end) = (Self::place(filled, entry.start, *s)?, Self::place(filled, entry.end, *e)?);
            let comma = usize::from(!self.run);
            if (start..end).contains(&at) {
                return Some(tail + comma + at - start);
            }
            tail += comma + end - start;
        }
        None
    }

    /// Where `usage`'s value is in the tail of a text filled as `filled`.
    pub(super) fn usage_in_tail(&self, filled: &Filled<'_>) -> Option<Range<usize>> {
        let usage = self.usage.as_ref()?;
        let slots = |at: usize| self.slots.iter().take_while(|(slot, _)| slot.end <= at).count();
        let start = Self::place(filled, usage.start, slots(usage.start))?;
        let end = Self::place(filled, usage.end, slots(usage.end))?;
        let at = self.in_tail(filled, start)?;
        Some(at..at + end - start)
    }
}

/// How many bytes `a` and `b` begin with alike: 32 at a time (one
/// comparison the compiler makes of vector loads), then the 32 that
/// differ eight at a time, then one by one.
fn common(a: &[u8], b: &[u8]) -> usize {
    let mut at = 0;
    while let (Some(x), Some(y)) = (a.get(at..at + 32), b.get(at..at + 32)) {
        if x != y {
            break;
        }
        at += 32;
    }
    while let (Some(x), Some(y)) = (a.get(at..at + 8), b.get(at..at + 8)) {
        let (Ok(x), Ok(y)) = (<[u8; 8]>::try_from(x), <[u8; 8]>::try_from(y)) else { break };
        let diff = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
        if diff != 0 {
            return at + (diff.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while a.get(at).is_some_and(|x| b.get(at) == Some(x)) {
        at += 1;
    }
    at
}

/// Where `data` starts in `piece`, when it is a slice of it.
pub(super) fn offset_in(piece: &Bytes, data: &[u8]) -> Option<usize> {
    let (base, at) = (piece.as_ptr() as usize, data.as_ptr() as usize);
    (at >= base && at + data.len() <= base + piece.len()).then(|| at - base)
}

/// One walk over a text that passed the whole check, finding its slots
/// and its tail's entries (as `scan::split` cuts them).
#[derive(Default)]
struct Walk {
    /// A stream chunk: choices have a `delta`.
    chunk: bool,
    slots: Vec<(Range<usize>, Slot)>,
    entries: Vec<Range<usize>>,
    refusal: bool,
    usage: Option<Range<usize>>,
}

impl Walk {
    fn top(&mut self, text: &str) -> Option<()> {
        let mut lx = Lex::new(text);
        let mut keys = Vec::with_capacity(8);
        if !lx.open(b'{', b'}')? {
            loop {
                let (start, key) = lx.key()?;
                keys.push((start, !matches!(key, "id" | "object" | "created" | "model")));
                match key {
                    "id" | "model" | "system_fingerprint" | "obfuscation" => self.string(&mut lx, Slot::Text)?,
                    "created" => self.integer(&mut lx, Slot::Integer)?,
                    "choices" => self.choices(&mut lx)?,
                    "usage" if lx.peek()? == b'{' => {
                        let from = lx.pos();
                        lx.members(|key, lx| match key {
                            "prompt_tokens" => self.integer(lx, Slot::Input),
                            "completion_tokens" => self.integer(lx, Slot::Output),
                            "total_tokens" => self.integer(lx, Slot::Integer),
                            "prompt_tokens_details" | "completion_tokens_details" if lx.peek()? == b'{' => {
                                lx.members(|_, lx| self.integer(lx, Slot::Integer))
                            }
                            _ => lx.skip(0),
                        })?;
                        self.usage = Some(from..lx.pos());
                    }
                    _ => lx.skip(0)?,
                }
                if !lx.more(b'}')? {
                    break;
                }
            }
        }
        // Each entry runs from its key's quote to the next key's (or the
        // closing brace), less the comma and blanks between.
        let close = text.trim_ascii_end().len().checked_sub(1)?;
        for (i, &(start, kept)) in keys.iter().enumerate() {
            let end = keys.get(i + 1).map_or(close, |&(next, _)| next);
            let entry = text.get(start..end)?.trim_ascii_end();
            let entry = entry.strip_suffix(',').unwrap_or(entry).trim_ascii_end();
            if kept {
                self.entries.push(start..start + entry.len());
            }
        }
        Some(())
    }

    /// At most one choice, an object whose `message` (or a chunk's
    /// `delta`) is one (anything else, and more choices, make no shape).
    fn choices(&mut self, lx: &mut Lex<'_>) -> Option<()> {
        if lx.open(b'[', b']')? {
            return Some(());
        }
        if lx.peek()? != b'{' {
            return None;
        }
        let inner = if self.chunk { "delta" } else { "message" };
        lx.members(|key, lx| match key {
            _ if key == inner && lx.peek()? == b'{' => lx.members(|key, lx| match key {
                "content" => self.string(lx, Slot::Content),
                "refusal" => {
                    if let Some(b'"') = lx.peek() {
                        let (_, refusal) = lx.string()?;
                        self.refusal = !refusal.is_empty();
                        return Some(());
                    }
                    lx.skip(0)
                }
                _ => lx.skip(0),
            }),
            _ if key == inner => None,
            _ => lx.skip(0),
        })?;
        (!lx.more(b']')?).then_some(())
    }

    /// A string's slot, when the value is a string.
    fn string(&mut self, lx: &mut Lex<'_>, slot: Slot) -> Option<()> {
        if lx.peek()? != b'"' {
            return lx.skip(0);
        }
        let (open, _) = lx.string()?;
        self.slots.push((open..lx.pos(), slot));
        Some(())
    }

    /// An integer's slot, when the value is one that fits a `u64`.
    fn integer(&mut self, lx: &mut Lex<'_>, slot: Slot) -> Option<()> {
        if !lx.peek()?.is_ascii_digit() {
            return lx.skip(0);
        }
        let from = lx.pos();
        if let (_, Some(_)) = lx.number_text()? {
            self.slots.push((from..lx.pos(), slot));
        }
        Some(())
    }
}
