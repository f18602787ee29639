//! The pick memo (#14): what [`super::want::Want::peek_into`] made of a `cat` or a `name` it
//! has read before. A rank's events carry a few categories and a few hundred names, each
//! thousands of times (`cuda_runtime` / `cudaLaunchKernel`, `cpu_op` / `aten::empty`), and
//! the peek read each one to its closing quote and tested it against the consumer's lists
//! ([`super::want::Want::pick`]) every time. The memo keeps, per slot, a value seen before
//! (at most 31 bytes, a plain string: no backslash, no control byte) with its closing quote,
//! and what the lists made of it. When the bytes where a value starts are those 31-or-fewer
//! bytes and then the quote, the value is that one (a plain string ends at its first quote),
//! so its length and its pick are the remembered ones: two 16-byte compares under a mask
//! stand for the string scan and the list tests.
//!
//! Why this is exact: for one [`super::want::Want`] (a memo serves one: the reader makes one
//! per read), a category's pick depends on its bytes alone, a name's on its bytes, its
//! category and whether the header lists a device; a name slot also holds its category's slot
//! and that slot's generation (a 64-bit count, bumped whenever the slot takes another
//! category) and the `devices` flag, and matches only when all three are the current ones.
//! Names of 32 to 255 bytes (`cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags`,
//! `autograd::engine::evaluate_function: …`: a sixth of a real rank's runtime calls and CPU
//! ops) are kept whole, with their quote, one per slot of a table of their own, chosen by a
//! hash of their first 16 bytes and of bytes 32 to 47 (after a name shorter than 48 bytes,
//! what Kineto writes next: its quote, `, "pid": ` and the pid's first digits, the same bytes
//! for the same name in one process), and their category, and matched by comparing those
//! bytes where the value starts: the same argument, over more bytes. Bytes 32 to 47 because
//! long names share long beginnings: chosen by the first 16 alone, the autograd engine's names
//! of a training step (`autograd::engine::evaluate_function: ReluBackward0`, `…:
//! AddBackward0`, …) all took one slot and put each other out: 12,492 of a real rank's 300,118
//! name lookups missed, 1,364 with bytes 32 to 47 (`benches/sim_pickmemo.py` models the
//! tables; callgrind counts the misses); each costs the name's scan and the lists' tests,
//! ~780 instructions.
//! Anything else — fewer bytes left in the window than the compare needs, a longer value, a
//! value with an escape — takes the plain path ([`super::swar::plain_string_len`] and the
//! lists), which then records what it found. Slots are chosen by a hash of the value's first
//! 16 bytes; a collision only costs a miss. A name's two ways are both tested and the hit
//! selected without a branch: which way holds a name depends on the order names were first
//! seen, which no branch predictor learns (the loop over the ways this replaced cost 3 % of
//! analyze's CPU on the real set; CONTRIBUTING.md, "Tried and not kept").

use super::memo::Memo;
use super::want::Pick;

/// Category slots (a power of two): a trace has a dozen categories.
const SLOTS: usize = 32;
/// Name slots: two ways in each of `NAME_SETS` sets, for the hundred-odd names of a rank's
/// runtime calls and CPU ops (names alike in their first 16 bytes, `cudaLaunchKernel` and
/// `cudaLaunchKernelExC`, share a set and keep a way each).
const NAME_SETS: usize = 64;

/// Slots for names of 32 bytes or more (direct-mapped), and the longest name kept.
const LONG_SLOTS: usize = 64;
const LONG_MAX: usize = 255;

/// A remembered name of 32 to [`LONG_MAX`] bytes.
#[derive(Clone, Default)]
struct LongSlot {
    /// The name and its closing quote; empty while the slot is unused.
    bytes: Vec<u8>,
    pick: Option<Pick>,
    cat: (u8, u64),
    devices: bool,
}

/// One remembered value: its bytes and closing quote, compared under a mask.
#[derive(Clone, Copy, Default)]
struct Slot {
    lo: u128,
    hi: u128,
    mask_lo: u128,
    mask_hi: u128,
    /// The value's length; the slot is empty when `used` is false.
    len: u8,
    used: bool,
    /// For a category: `Want::by_cat`'s answer; for a name: `Want::by_name`'s.
    pick: Option<Pick>,
    /// For a category: the prefix its names must start with (`Want::prefix_of`).
    prefix: Option<&'static [u8]>,
    /// For a name: its category's slot and that slot's generation, and `devices`.
    cat: (u8, u64),
    devices: bool,
}

/// What is remembered of a category: `Want::by_cat`'s answer and, when its names decide,
/// the prefix they must start with (`Want::prefix_of`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CatMemo {
    pub(crate) pick: Option<Pick>,
    pub(crate) prefix: Option<&'static [u8]>,
}

/// A category found in the memo or just recorded: its slot and generation, which a name
/// read after it is remembered under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CatId(u8, u64);

/// The memo of one reader.
pub(crate) struct PickMemo {
    cats: Box<[Slot; SLOTS]>,
    names: Box<[[Slot; 2]; NAME_SETS]>,
    /// Per name set, the way the next record takes (the other one was filled or hit last).
    next_way: [u8; NAME_SETS],
    gens: [u64; SLOTS],
    long: Vec<LongSlot>,
    /// The key stretches before `ph`, `cat` and `name`, as [`super::memo`] keeps the
    /// scanner's (`peek.rs` says how the peek uses them).
    pub(super) keys: Memo,
}

impl Default for PickMemo {
    fn default() -> Self {
        PickMemo {
            cats: Box::new([Slot::default(); SLOTS]),
            names: Box::new([[Slot::default(); 2]; NAME_SETS]),
            next_way: [0; NAME_SETS],
            gens: [0; SLOTS],
            long: vec![LongSlot::default(); LONG_SLOTS],
            keys: Memo::default(),
        }
    }
}

#[inline(always)]
fn word(w: &[u8]) -> u128 {
    let mut x = [0u8; 16];
    x.copy_from_slice(&w[..16]);
    u128::from_le_bytes(x)
}

/// The 32 bytes from `b[at]`, as two words (`None` when fewer are left).
#[inline(always)]
fn window(b: &[u8], at: usize) -> Option<(u128, u128)> {
    let w = b.get(at..at + 32)?;
    Some((word(&w[..16]), word(&w[16..])))
}

/// A slot among `n` (a power of two up to 64) for the value whose first 16 bytes (and what
/// follows a shorter value: the same bytes for the same value in one writer's layout) are
/// `lo`. Only 16: the bytes after a short value run on into the event's `ts`.
#[inline(always)]
fn slot_of(lo: u128, salt: u64, n: usize) -> usize {
    let x = (lo as u64) ^ ((lo >> 64) as u64).rotate_left(29) ^ salt;
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % n
}

/// The slot of the long-name table for the name at `b[at]` under `cat` (`lo`: its first 16
/// bytes), by those and bytes 32 to 47 from `at` (`None` when fewer are left: a miss).
#[inline(always)]
fn long_slot(b: &[u8], at: usize, lo: u128, cat: CatId) -> Option<usize> {
    let x = lo ^ word(b.get(at + 32..at + 48)?).rotate_left(17);
    Some(slot_of(x, u64::from(cat.0) + 1, LONG_SLOTS))
}

impl Slot {
    #[inline(always)]
    fn matches(&self, (lo, hi): (u128, u128)) -> bool {
        self.used & (((lo ^ self.lo) & self.mask_lo) | ((hi ^ self.hi) & self.mask_hi) == 0)
    }

    /// Whether this name slot holds the value in `w` under category `cat` and `devices`.
    #[inline(always)]
    fn hit(&self, w: (u128, u128), cat: CatId, devices: bool) -> bool {
        self.matches(w) & (self.cat == (cat.0, cat.1)) & (self.devices == devices)
    }

    /// The slot for the plain string body `b[at..at + len]` (its quote at `b[at + len]`),
    /// when it fits.
    fn of(b: &[u8], at: usize, len: usize, pick: Option<Pick>) -> Option<Slot> {
        if len >= 32 || b.get(at + len) != Some(&b'"') {
            return None;
        }
        let mut bytes = [0u8; 32];
        bytes[..=len].copy_from_slice(&b[at..=at + len]);
        let mut mask = [0u8; 32];
        mask[..=len].fill(0xFF);
        Some(Slot {
            lo: word(&bytes[..16]),
            hi: word(&bytes[16..]),
            mask_lo: word(&mask[..16]),
            mask_hi: word(&mask[16..]),
            len: len as u8,
            used: true,
            pick,
            prefix: None,
            cat: (0, 0),
            devices: false,
        })
    }
}

impl PickMemo {
    /// The category whose body starts at `b[at]`, if remembered: its length, what
    /// `Want::by_cat` made of it, the prefix its names must start with, and its id.
    #[inline(always)]
    pub(crate) fn cat(&self, b: &[u8], at: usize) -> Option<(usize, CatMemo, CatId)> {
        let w = window(b, at)?;
        let i = slot_of(w.0, 0, SLOTS);
        let s = &self.cats[i];
        s.matches(w).then(|| {
            let memo = CatMemo {
                pick: s.pick,
                prefix: s.prefix,
            };
            (usize::from(s.len), memo, CatId(i as u8, self.gens[i]))
        })
    }

    /// Remembers the category `b[at..at + len]` (a plain string) and what `Want::by_cat` made
    /// of it; its id, or `None` when it cannot be remembered (then no name is remembered
    /// under it either).
    pub(crate) fn record_cat(
        &mut self,
        b: &[u8],
        at: usize,
        len: usize,
        memo: CatMemo,
    ) -> Option<CatId> {
        let w = window(b, at)?;
        let slot = Slot {
            prefix: memo.prefix,
            ..Slot::of(b, at, len, memo.pick)?
        };
        let i = slot_of(w.0, 0, SLOTS);
        self.gens[i] = self.gens[i].wrapping_add(1);
        self.cats[i] = slot;
        Some(CatId(i as u8, self.gens[i]))
    }

    /// The name whose body starts at `b[at]`, if remembered under category `cat` and this
    /// `devices`: its length and what `Want::by_name` made of it.
    #[inline(always)]
    pub(crate) fn name(
        &self,
        b: &[u8],
        at: usize,
        cat: CatId,
        devices: bool,
    ) -> Option<(usize, Pick)> {
        let w = window(b, at)?;
        let [way0, way1] = &self.names[slot_of(w.0, u64::from(cat.0) + 1, NAME_SETS)];
        // Both ways tested, the hit selected without a branch: which way holds a name is
        // as good as random, and a branch on it mispredicts. (At most one way holds a given
        // name under one category and `devices`: a name is recorded only when both missed.)
        let (h0, h1) = (way0.hit(w, cat, devices), way1.hit(w, cat, devices));
        let s = if h1 { way1 } else { way0 };
        if h0 | h1 {
            s.pick.map(|p| (usize::from(s.len), p))
        } else {
            self.long_name(b, at, w.0, cat, devices)
        }
    }

    /// [`PickMemo::name`] for a name of 32 bytes or more (`lo`: its first 16 bytes).
    #[inline(never)]
    fn long_name(
        &self,
        b: &[u8],
        at: usize,
        lo: u128,
        cat: CatId,
        devices: bool,
    ) -> Option<(usize, Pick)> {
        let s = &self.long[long_slot(b, at, lo, cat)?];
        let n = s.bytes.len();
        let hit = n > 0
            && s.cat == (cat.0, cat.1)
            && s.devices == devices
            && b.get(at..at + n) == Some(&s.bytes[..]);
        if hit {
            s.pick.map(|p| (n - 1, p))
        } else {
            None
        }
    }

    /// Remembers the name `b[at..at + len]` (a plain string) under category `cat` and
    /// `devices`, with what `Want::by_name` made of it.
    pub(crate) fn record_name(
        &mut self,
        b: &[u8],
        at: usize,
        len: usize,
        cat: CatId,
        devices: bool,
        pick: Pick,
    ) {
        let Some(w) = window(b, at) else {
            return;
        };
        if (32..=LONG_MAX).contains(&len) && b.get(at + len) == Some(&b'"') {
            let Some(k) = long_slot(b, at, w.0, cat) else {
                return;
            };
            let s = &mut self.long[k];
            s.bytes.clear();
            s.bytes.extend_from_slice(&b[at..=at + len]);
            (s.pick, s.cat, s.devices) = (Some(pick), (cat.0, cat.1), devices);
            return;
        }
        let Some(mut slot) = Slot::of(b, at, len, Some(pick)) else {
            return;
        };
        slot.cat = (cat.0, cat.1);
        slot.devices = devices;
        let i = slot_of(w.0, u64::from(cat.0) + 1, NAME_SETS);
        let way = usize::from(self.next_way[i] & 1);
        self.names[i][way] = slot;
        self.next_way[i] = 1 - self.next_way[i];
    }
}

#[cfg(test)]
mod tests {
    use super::super::want::{Pick, Want};
    use super::PickMemo;

    /// Keeps CPU ops named `keep…` always and `gpu…` only when no device is listed, and
    /// runtime calls named `…Launch…`.
    fn names(cat: &[u8], name: &[u8], devices: bool) -> bool {
        if cat == b"cuda_runtime" {
            return name.windows(6).any(|w| w == b"Launch");
        }
        name.starts_with(b"keep") || (!devices && name.starts_with(b"gpu"))
    }

    const W: Want = Want {
        ph: b"XM",
        complete_cats: &[
            "kernel",
            "cpu_op",
            "cuda_runtime",
            "a_category_longer_than_thirty_one_bytes",
        ],
        named_cats: &[
            "cpu_op",
            "cuda_runtime",
            "a_category_longer_than_thirty_one_bytes",
        ],
        every_cat_named: false,
        names,
        trust_devices: true,
        name_prefixes: &[],
        needs: crate::trace::read::want::no_needs,
    };

    /// A peek through one memo kept over a long run of events answers as a peek with none
    /// (a fresh memo each time): the same pick, end and fields. The events mix categories
    /// and names that share prefixes or differ in one byte or in length, values longer than
    /// the memo holds, escapes, both `devices`, and events cut short near the end of the
    /// bytes (where the memo cannot compare 32 bytes).
    #[test]
    fn a_peek_through_the_memo_answers_as_one_without() {
        const CATS: [&str; 9] = [
            "kernel",
            "kernels",
            "kerne",
            "cpu_op",
            "cpu_oq",
            "cuda_runtime",
            "python_function",
            "a_category_longer_than_thirty_one_bytes",
            "cpu\\u005fop",
        ];
        const NAMES: [&str; 18] = [
            "keep",
            "keep me",
            "kee",
            "gpu only",
            "gpu",
            "aten::empty",
            "aten::empty_strided",
            "cudaLaunchKernel",
            "cudaLaunchKernelExC",
            "cudaEventRecord",
            "keep a name that is longer than the thirty-one bytes",
            "keep a name that is longer than the thirty-one bytes, longer",
            "keep\\u0020x",
            // Long names alike in their first 32 bytes or more, picked apart later on.
            "cudaStreamGetPriority_a_long_tail_beyond_32",
            "cudaStreamGetPriority_a_long_tail_beyond_32_Launch",
            "cudaStreamGetPriority_a_long_tail_beyond_32_Launcx",
            "gpu only, a name of exactly 32 b",
            "gpu only, a name of exactly 32 by",
        ];
        // Also with every category's names tested (merge's steps scan): each category is
        // then remembered as one whose names decide.
        let every = Want {
            every_cat_named: true,
            ..W
        };
        for w in [W, every] {
            peek_through_the_memo(&w, &CATS, &NAMES);
        }
        let (mut memo, mut f1) = (PickMemo::default(), Vec::new());
        // And the memo is used: an event peeked once has its category and name in it.
        let text = format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "keep me"}}{:40}"#,
            ""
        );
        let b = text.as_bytes();
        W.peek_into(b, 0, true, &mut f1, &mut memo);
        let at = |s: &str| text.find(s).unwrap_or(0);
        let (len, pick, id) = memo
            .cat(b, at("cpu_op"))
            .expect("the category is remembered");
        assert_eq!((len, pick.pick, pick.prefix), (6, None, None));
        let name = memo.name(b, at("keep me"), id, true);
        assert_eq!(name, Some((7, Pick::Keep)));
        assert_eq!(memo.name(b, at("keep me"), id, false), None);
        // So is a long name, kept whole.
        let long = "keep a name that is longer than the thirty-one bytes";
        let text = format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "{long}"}}{:40}"#,
            ""
        );
        let b = text.as_bytes();
        W.peek_into(b, 0, false, &mut f1, &mut memo);
        let at = text.find(long).unwrap_or(0);
        let id = memo.cat(b, text.find("cpu_op").unwrap_or(0)).map(|c| c.2);
        let id = id.expect("the category is remembered");
        assert_eq!(memo.name(b, at, id, false), Some((long.len(), Pick::Keep)));
        assert_eq!(memo.name(b, at, id, true), None);
    }

    /// [`a_peek_through_the_memo_answers_as_one_without`] for one `Want`.
    fn peek_through_the_memo(w: &Want, cats: &[&str], names: &[&str]) {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || crate::testrng::xorshift(&mut x);
        let (mut memo, mut f1, mut f2) = (PickMemo::default(), Vec::new(), Vec::new());
        let mut count = [0usize; 4];
        for _ in 0..100_000 {
            // Layouts vary too, so that the key stretches (`PickMemo::keys`) are met, missed
            // and replaced: spacing (a stretch over 32 bytes is not kept), keys near the
            // peek's ones, `ph` values that are not one plain byte.
            let ph = ["X", "X", "X", "f", "M", "X", "XX", "", "\\u0058"][(next() % 9) as usize];
            let cat = cats[(next() % cats.len() as u64) as usize];
            let name = names[(next() % names.len() as u64) as usize];
            let sp = [
                " ",
                "",
                "  ",
                " ",
                "\n    ",
                "\n                              ",
            ][(next() % 6) as usize];
            let cat_key = ["cat", "cat", "cat", "cat", "cot", "cats"][(next() % 6) as usize];
            let name_key = ["name", "name", "name", "nome"][(next() % 4) as usize];
            let (ck, nk) = (cat_key, name_key);
            let text = format!(
                r#"{{"ph":{sp}"{ph}",{sp}"{ck}":{sp}"{cat}",{sp}"{nk}":{sp}"{name}", "pid": 1}}"#
            );
            let mut b = text.into_bytes();
            // Cut short now and then, padded with what may follow in a window.
            if next().is_multiple_of(5) {
                b.truncate((next() as usize) % b.len() + 1);
            }
            let pad = (next() % 40) as usize;
            b.extend(std::iter::repeat_n(b' ', pad));
            let devices = next().is_multiple_of(2);
            let with = w.peek_into(&b, 0, devices, &mut f1, &mut memo);
            let without = w.peek_into(&b, 0, devices, &mut f2, &mut PickMemo::default());
            let shown = String::from_utf8_lossy(&b);
            assert_eq!(with, without, "{shown} devices {devices}");
            if with.is_some() {
                assert_eq!(f1, f2, "{shown}");
            }
            count[match with {
                None => 0,
                // This test's `Want` needs no key.
                Some((Pick::Keep | Pick::Needs(_), _)) => 1,
                Some((Pick::Skip, _)) => 2,
                Some((Pick::Narrowed, _)) => 3,
            }] += 1;
        }
        // Every answer comes up (`Narrowed` takes a CPU op named `gpu…` with devices
        // listed), so a memo that always said one thing would fail.
        assert!(count[..3].iter().all(|&n| n > 2_000), "{count:?}");
        assert!(count[3] > 300, "{count:?}");
    }
}
