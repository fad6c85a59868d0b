//! Hash-consed regular expressions over character classes, kept in a
//! normal form (flattened, sorted, deduplicated unions and intersections;
//! right-nested concatenations) so that the derivatives of an expression are
//! finitely many distinct terms.

use std::rc::Rc;

use super::alphabet::{Alphabet, Bits};
use crate::hashing::Map;

use super::{Re, NUMERAL_CHARS};
use crate::schema::range::times_pow10;

pub(super) type Id = u32;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Term {
    Nothing,
    Eps,
    Set(Bits),
    Cat(Id, Id),
    Or(Box<[Id]>),
    And(Box<[Id]>),
    Not(Id),
    Rep(Id, u32, Option<u32>),
    /// A [`Re::Multiple`] language after some characters.
    Mod(Numeral),
}

/// Where a numeral of a [`Re::Multiple`] language is: the value read so
/// far modulo `modulus` (fraction digits included, as if the point were
/// not there) and the part being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Numeral {
    modulus: u64,
    scale: u32,
    rest: u64,
    part: Part,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    /// Nothing read.
    Start,
    /// The minus sign read.
    Sign,
    /// Integer digits.
    Int,
    /// After the point, this many fraction digits read (up to `scale`).
    Frac(u32),
}

impl Numeral {
    /// Whether the numeral read so far is a multiple.
    fn accepts(&self) -> bool {
        let read = match self.part {
            Part::Start | Part::Sign | Part::Frac(0) => return false,
            Part::Int => 0,
            Part::Frac(c) => c,
        };
        times_pow10(
            self.rest,
            u64::from(self.scale.saturating_sub(read)),
            self.modulus,
        ) == 0
    }

    /// Whether some continuation makes it a multiple. In the fraction the
    /// digits left (at most `scale`) are few: with `j` significant digits to go, the value
    /// ends as `rest * 10^j + w` for some `w < 10^j`, so only remainders
    /// that such a `w` completes stay alive (all of them once `10^j`
    /// reaches the modulus). This keeps the automaton from exploring every
    /// remainder at every fraction position.
    fn can_accept(&self) -> bool {
        let left = match self.part {
            Part::Frac(c) => self.scale.saturating_sub(c),
            Part::Start | Part::Sign | Part::Int => return true,
        };
        let m = u128::from(self.modulus.max(1));
        let reach = match 10u128.checked_pow(left) {
            Some(p) if p < m => p,
            _ => return true,
        };
        let need = (m - u128::from(times_pow10(self.rest, u64::from(left), self.modulus))) % m;
        need < reach
    }

    /// The numeral after one more character (`symbol`: an index into
    /// [`NUMERAL_CHARS`]), or `None` when it is no longer a numeral.
    fn after(&self, symbol: u8) -> Option<Numeral> {
        let digit = (symbol < 10).then_some(u64::from(symbol));
        let with = |rest: u64, part: Part| {
            let next = Numeral {
                rest,
                part,
                ..*self
            };
            next.can_accept().then_some(next)
        };
        let push = |d: u64| (self.rest * 10 + d) % self.modulus;
        match (self.part, digit, symbol) {
            (Part::Start, None, 11) => with(0, Part::Sign),
            (Part::Start | Part::Sign | Part::Int, Some(d), _) => with(push(d), Part::Int),
            (Part::Int, None, 10) => with(self.rest, Part::Frac(0)),
            (Part::Frac(c), Some(d), _) if c < self.scale => with(push(d), Part::Frac(c + 1)),
            _ => None,
        }
    }
}

pub(super) const NOTHING: Id = 0;
const EPS: Id = 1;
/// Every string: `Not(Nothing)`.
const TOP: Id = 2;

/// The arena.
pub(super) struct Terms {
    classes: usize,
    /// For each class, the numeral character it is (an index into
    /// [`NUMERAL_CHARS`]); meaningful when the alphabet splits them.
    numeral: Vec<Option<u8>>,
    /// The classes split by numeral character, for [`Term::Mod`].
    numeral_blocks: Rc<[Bits]>,
    terms: Vec<Term>,
    nullable: Vec<bool>,
    index: Map<Term, Id>,
    derivatives: Map<(Id, usize), Id>,
    partitions: Map<Id, Rc<[Bits]>>,
}

impl Terms {
    pub(super) fn new(alphabet: &Alphabet) -> Terms {
        let classes = alphabet.len();
        let mut numeral = vec![None; classes];
        let mut blocks = Vec::new();
        let mut rest = Bits::full(classes);
        for (i, c) in (0u8..).zip(NUMERAL_CHARS) {
            if let Some(class) = alphabet.class_of(c) {
                if let Some(slot) = numeral.get_mut(class) {
                    *slot = Some(i);
                }
                let mut block = Bits::empty(classes);
                block.insert(class);
                rest = rest.minus(&block);
                blocks.push(block);
            }
        }
        if !rest.is_empty() {
            blocks.push(rest);
        }
        let mut t = Terms {
            classes,
            numeral,
            numeral_blocks: blocks.into(),
            terms: Vec::new(),
            nullable: Vec::new(),
            index: Map::default(),
            derivatives: Map::default(),
            partitions: Map::default(),
        };
        t.intern(Term::Nothing);
        t.intern(Term::Eps);
        t.intern(Term::Not(NOTHING));
        t
    }

    pub(super) fn nullable(&self, id: Id) -> bool {
        self.nullable.get(id as usize).copied().unwrap_or(false)
    }

    fn term(&self, id: Id) -> &Term {
        self.terms.get(id as usize).unwrap_or(&Term::Nothing)
    }

    fn intern(&mut self, term: Term) -> Id {
        if let Some(&id) = self.index.get(&term) {
            return id;
        }
        let nullable = match &term {
            Term::Nothing | Term::Set(_) => false,
            Term::Eps => true,
            Term::Cat(a, b) => self.nullable(*a) && self.nullable(*b),
            Term::Or(xs) => xs.iter().any(|x| self.nullable(*x)),
            Term::And(xs) => xs.iter().all(|x| self.nullable(*x)),
            Term::Not(a) => !self.nullable(*a),
            Term::Rep(a, min, _) => *min == 0 || self.nullable(*a),
            Term::Mod(n) => n.accepts(),
        };
        let id = self.terms.len() as Id;
        self.terms.push(term.clone());
        self.nullable.push(nullable);
        self.index.insert(term, id);
        id
    }

    /// The term of a description over `alphabet`.
    pub(super) fn of(&mut self, re: &Re, alphabet: &Alphabet) -> Id {
        match re {
            Re::Set(s) => self.set(alphabet.bits_of(s)),
            Re::Seq(items) => {
                let ids: Vec<Id> = items.iter().map(|x| self.of(x, alphabet)).collect();
                ids.into_iter()
                    .rev()
                    .fold(EPS, |rest, first| self.cat(first, rest))
            }
            Re::Alt(items) => {
                let ids = items.iter().map(|x| self.of(x, alphabet)).collect();
                self.or(ids)
            }
            Re::And(items) => {
                let ids = items.iter().map(|x| self.of(x, alphabet)).collect();
                self.and(ids)
            }
            Re::Not(inner) => {
                let id = self.of(inner, alphabet);
                self.not(id)
            }
            Re::Repeat(inner, min, max) => {
                let id = self.of(inner, alphabet);
                self.rep(id, *min, *max)
            }
            Re::Multiple { modulus, scale } => self.intern(Term::Mod(Numeral {
                modulus: (*modulus).max(1),
                scale: *scale,
                rest: 0,
                part: Part::Start,
            })),
        }
    }

    fn set(&mut self, bits: Bits) -> Id {
        if bits.is_empty() {
            NOTHING
        } else {
            self.intern(Term::Set(bits))
        }
    }

    fn cat(&mut self, a: Id, b: Id) -> Id {
        if a == NOTHING || b == NOTHING {
            return NOTHING;
        }
        if a == EPS {
            return b;
        }
        if b == EPS {
            return a;
        }
        if let Term::Cat(x, y) = *self.term(a) {
            let rest = self.cat(y, b);
            return self.cat(x, rest);
        }
        // Before or after every string, extra repetitions of a bounded
        // part are absorbed: `x{m,n}.*` is `x{m}.*` and `.*x{m,n}` (at the
        // end) is `.*x{m}`. Unanchored patterns with a counted part
        // (`[a-z]{1,255}`) would otherwise count to n in every state.
        let absorbing = b == TOP || matches!(*self.term(b), Term::Cat(TOP, _));
        if let Term::Rep(x, min, max) = *self.term(a) {
            if absorbing && max != Some(min) {
                let fewest = self.rep(x, min, Some(min));
                return self.cat(fewest, b);
            }
        }
        if a == TOP {
            if let Term::Rep(x, min, max) = *self.term(b) {
                if max != Some(min) {
                    let fewest = self.rep(x, min, Some(min));
                    return self.cat(TOP, fewest);
                }
            }
            if b == TOP {
                return TOP;
            }
        }
        self.intern(Term::Cat(a, b))
    }

    fn or(&mut self, items: Vec<Id>) -> Id {
        let mut flat = Vec::with_capacity(items.len());
        let mut chars: Option<Bits> = None;
        for id in items {
            match self.term(id) {
                Term::Nothing => {}
                Term::Or(inner) => flat.extend(inner.iter().copied()),
                Term::Set(b) => {
                    chars = Some(match chars {
                        Some(c) => c.or(b),
                        None => b.clone(),
                    })
                }
                _ => flat.push(id),
            }
        }
        if flat.contains(&TOP) {
            return TOP;
        }
        if let Some(c) = chars {
            let id = self.set(c);
            flat.push(id);
        }
        flat.sort_unstable();
        flat.dedup();
        match flat.len() {
            0 => NOTHING,
            1 => flat[0],
            _ => self.intern(Term::Or(flat.into_boxed_slice())),
        }
    }

    fn and(&mut self, items: Vec<Id>) -> Id {
        let mut flat = Vec::with_capacity(items.len());
        let mut chars: Option<Bits> = None;
        for id in items {
            match self.term(id) {
                Term::Nothing => return NOTHING,
                Term::And(inner) => flat.extend(inner.iter().copied()),
                Term::Set(b) => {
                    chars = Some(match chars {
                        Some(c) => c.and(b),
                        None => b.clone(),
                    })
                }
                _ if id == TOP => {}
                _ => flat.push(id),
            }
        }
        if let Some(c) = chars {
            // A one-character language meets the others in its characters
            // whose derivative the others leave nullable.
            let mut keep = Bits::empty(self.classes);
            for class in c.iter() {
                let mut ok = true;
                for &x in &flat {
                    let d = self.derive(x, class);
                    if !self.nullable(d) {
                        ok = false;
                        break;
                    }
                }
                if ok {
                    keep.insert(class);
                }
            }
            return self.set(keep);
        }
        if flat.contains(&EPS) {
            return if flat.iter().all(|x| self.nullable(*x)) {
                EPS
            } else {
                NOTHING
            };
        }
        flat.sort_unstable();
        flat.dedup();
        match flat.len() {
            0 => TOP,
            1 => flat[0],
            _ => self.intern(Term::And(flat.into_boxed_slice())),
        }
    }

    fn not(&mut self, a: Id) -> Id {
        if let Term::Not(x) = *self.term(a) {
            return x;
        }
        self.intern(Term::Not(a))
    }

    fn rep(&mut self, a: Id, min: u32, max: Option<u32>) -> Id {
        if max == Some(0) || a == EPS {
            return EPS;
        }
        if a == NOTHING {
            return if min == 0 { EPS } else { NOTHING };
        }
        if min == 1 && max == Some(1) {
            return a;
        }
        if min == 0 && max.is_none() {
            if let Term::Set(bits) = self.term(a) {
                if *bits == Bits::full(self.classes) {
                    return TOP;
                }
            }
        }
        if let Some(m) = max {
            if m < min {
                return NOTHING;
            }
        }
        self.intern(Term::Rep(a, min, max))
    }

    /// The derivative of `id` by any character of `class`.
    pub(super) fn derive(&mut self, id: Id, class: usize) -> Id {
        if let Some(&d) = self.derivatives.get(&(id, class)) {
            return d;
        }
        let d = match self.term(id).clone() {
            Term::Nothing | Term::Eps => NOTHING,
            Term::Set(b) => {
                if b.has(class) {
                    EPS
                } else {
                    NOTHING
                }
            }
            Term::Cat(a, b) => {
                let da = self.derive(a, class);
                let first = self.cat(da, b);
                if self.nullable(a) {
                    let db = self.derive(b, class);
                    self.or(vec![first, db])
                } else {
                    first
                }
            }
            Term::Or(xs) => {
                let ds = xs.iter().map(|x| self.derive(*x, class)).collect();
                self.or(ds)
            }
            Term::And(xs) => {
                let ds = xs.iter().map(|x| self.derive(*x, class)).collect();
                self.and(ds)
            }
            Term::Not(a) => {
                let da = self.derive(a, class);
                self.not(da)
            }
            Term::Rep(a, min, max) => {
                let da = self.derive(a, class);
                let rest = self.rep(a, min.saturating_sub(1), max.map(|m| m - 1));
                self.cat(da, rest)
            }
            Term::Mod(n) => {
                let symbol = self.numeral.get(class).copied().flatten();
                match symbol.and_then(|s| n.after(s)) {
                    Some(next) => self.intern(Term::Mod(next)),
                    None => NOTHING,
                }
            }
        };
        self.derivatives.insert((id, class), d);
        d
    }

    /// Classes on which `id` has the same derivative within each block.
    pub(super) fn partition(&mut self, id: Id) -> Rc<[Bits]> {
        if let Some(p) = self.partitions.get(&id) {
            return Rc::clone(p);
        }
        let full = Bits::full(self.classes);
        let blocks: Vec<Bits> = match self.term(id).clone() {
            Term::Nothing | Term::Eps => vec![full],
            Term::Set(b) => split(vec![full], &b),
            Term::Cat(a, b) => {
                let pa = self.partition(a);
                if self.nullable(a) {
                    let pb = self.partition(b);
                    refine(&pa, &pb)
                } else {
                    pa.to_vec()
                }
            }
            Term::Or(xs) | Term::And(xs) => {
                let mut acc = vec![full];
                for x in xs.iter() {
                    let px = self.partition(*x);
                    acc = refine(&acc, &px);
                }
                acc
            }
            Term::Not(a) | Term::Rep(a, _, _) => self.partition(a).to_vec(),
            Term::Mod(_) => self.numeral_blocks.to_vec(),
        };
        let blocks: Rc<[Bits]> = blocks.into();
        self.partitions.insert(id, Rc::clone(&blocks));
        blocks
    }
}

/// Every block of `blocks` split by `set`.
fn split(blocks: Vec<Bits>, set: &Bits) -> Vec<Bits> {
    let mut out = Vec::with_capacity(blocks.len() + 1);
    for b in blocks {
        let inside = b.and(set);
        let outside = b.minus(set);
        if !inside.is_empty() {
            out.push(inside);
        }
        if !outside.is_empty() {
            out.push(outside);
        }
    }
    out
}

/// The common refinement of two partitions.
fn refine(p: &[Bits], q: &[Bits]) -> Vec<Bits> {
    if p.len() == 1 {
        return q.to_vec();
    }
    if q.len() == 1 {
        return p.to_vec();
    }
    let mut out = Vec::with_capacity(p.len() + q.len());
    for a in p {
        for b in q {
            let both = a.and(b);
            if !both.is_empty() {
                out.push(both);
            }
        }
    }
    out
}
