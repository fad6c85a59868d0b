//! Deterministic automata: built from a description by derivatives, cut to
//! the states from which a string can still be accepted, and minimised.

use std::collections::VecDeque;

use super::alphabet::{Alphabet, Bits};
use super::terms::{Terms, NOTHING};
use crate::hashing::Map;

use super::{LangError, Re, NUMERAL_CHARS};
use crate::schema::strings::CharSet;

/// One state: whether it accepts, and its transitions (disjoint class sets,
/// each to one state). Characters without a transition reject.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct State {
    pub(super) accepting: bool,
    pub(super) next: Vec<(Bits, usize)>,
}

/// A minimal deterministic automaton without dead states; state 0 starts.
/// No state at all: the empty language.
#[derive(Debug, Clone)]
pub struct Dfa {
    pub(super) alphabet: Alphabet,
    pub(super) states: Vec<State>,
}

impl Dfa {
    /// Compile a description.
    pub fn new(re: &Re) -> Result<Dfa, LangError> {
        let mut sets = Vec::new();
        re.sets(&mut sets);
        let numerals = NUMERAL_CHARS.map(CharSet::single);
        // Numerals are read digit by digit, each its own class.
        if re.reads_numerals() {
            sets.extend(numerals.iter());
        }
        let limit = re.state_limit();
        let alphabet = Alphabet::of(&sets);
        let mut terms = Terms::new(&alphabet);
        let root = terms.of(re, &alphabet);
        let mut ids: Map<u32, usize> = Map::default();
        let mut order = vec![root];
        ids.insert(root, 0);
        let mut states = Vec::new();
        let mut queue = VecDeque::from([root]);
        while let Some(term) = queue.pop_front() {
            let mut next: Vec<(Bits, usize)> = Vec::new();
            for block in terms.partition(term).iter() {
                let Some(class) = block.first() else { continue };
                let d = terms.derive(term, class);
                if d == NOTHING {
                    continue;
                }
                let target = match ids.get(&d) {
                    Some(&t) => t,
                    None => {
                        let t = order.len();
                        if t >= limit {
                            return Err(LangError::TooManyStates { limit });
                        }
                        ids.insert(d, t);
                        order.push(d);
                        queue.push_back(d);
                        t
                    }
                };
                match next.iter_mut().find(|(_, t)| *t == target) {
                    Some((bits, _)) => *bits = bits.or(block),
                    None => next.push((block.clone(), target)),
                }
            }
            states.push(State {
                accepting: terms.nullable(term),
                next,
            });
        }
        let dfa = Dfa { alphabet, states };
        Ok(dfa.trimmed().minimised())
    }

    /// The automaton of the strings every operand accepts, an operand
    /// marked `true` read as its complement: the reachable tuples of the
    /// operands' states over the common refinement of their alphabets,
    /// trimmed and minimised. The operands are minimal already, so this
    /// explores no more states than derivatives of the conjunction would
    /// (each derivative names one tuple), and an operand's automaton comes
    /// from the cache when formats and patterns recur. More than `limit`
    /// tuples: [`LangError::TooManyStates`].
    pub(super) fn intersection(operands: &[(&Dfa, bool)], limit: usize) -> Result<Dfa, LangError> {
        /// A component that has left its automaton: no string from here is in
        /// its language.
        const GONE: usize = usize::MAX;
        let alphabets: Vec<&Alphabet> = operands.iter().map(|(d, _)| &d.alphabet).collect();
        let (alphabet, maps) = Alphabet::refinement(&alphabets);
        let k = alphabet.len();
        // Dense transition tables over each operand's own classes.
        let tables: Vec<Vec<usize>> = operands
            .iter()
            .map(|(d, _)| {
                let own = d.alphabet.len();
                let mut table = vec![GONE; d.states.len() * own];
                for (s, st) in d.states.iter().enumerate() {
                    for (bits, t) in &st.next {
                        for c in bits.iter() {
                            if let Some(slot) = table.get_mut(s * own + c) {
                                *slot = *t;
                            }
                        }
                    }
                }
                table
            })
            .collect();
        let step = |i: usize, state: usize, class: usize| -> usize {
            let (d, _) = operands[i];
            match maps[i].get(class).copied().flatten() {
                Some(own) if state != GONE => tables[i]
                    .get(state * d.alphabet.len() + own)
                    .copied()
                    .unwrap_or(GONE),
                _ => GONE,
            }
        };
        // A tuple is alive while no operand read positively has been left.
        let alive = |tuple: &[usize]| {
            tuple
                .iter()
                .zip(operands)
                .all(|(&q, (_, negated))| *negated || q != GONE)
        };
        let accepting = |tuple: &[usize]| {
            tuple.iter().zip(operands).all(|(&q, (d, negated))| {
                let inside = q != GONE && d.states.get(q).is_some_and(|st| st.accepting);
                inside != *negated
            })
        };
        let start: Vec<usize> = operands
            .iter()
            .map(|(d, _)| if d.states.is_empty() { GONE } else { 0 })
            .collect();
        if !alive(&start) {
            return Ok(Dfa {
                alphabet,
                states: Vec::new(),
            });
        }
        let mut ids: Map<Vec<usize>, usize> = Map::default();
        ids.insert(start.clone(), 0);
        let mut order = vec![start];
        let mut states = Vec::new();
        let mut i = 0;
        let mut target: Vec<usize> = Vec::with_capacity(operands.len());
        while let Some(tuple) = order.get(i).cloned() {
            i += 1;
            let mut next: Vec<(Bits, usize)> = Vec::new();
            for class in 0..k {
                target.clear();
                target.extend(tuple.iter().enumerate().map(|(j, &q)| step(j, q, class)));
                if !alive(&target) {
                    continue;
                }
                let t = match ids.get(target.as_slice()) {
                    Some(&t) => t,
                    None => {
                        let t = order.len();
                        if t >= limit {
                            return Err(LangError::TooManyStates { limit });
                        }
                        ids.insert(target.clone(), t);
                        order.push(target.clone());
                        t
                    }
                };
                match next.iter_mut().find(|(_, x)| *x == t) {
                    Some((bits, _)) => bits.insert(class),
                    None => {
                        let mut bits = Bits::empty(k);
                        bits.insert(class);
                        next.push((bits, t));
                    }
                }
            }
            states.push(State {
                accepting: accepting(&tuple),
                next,
            });
        }
        Ok(Dfa { alphabet, states }.trimmed().minimised())
    }

    /// Whether every string is in the language: one accepting state that
    /// every class leads back to.
    pub(super) fn is_universal(&self) -> bool {
        let full = Bits::full(self.alphabet.len());
        match self.states.as_slice() {
            [only] => {
                only.accepting
                    && only.next.iter().all(|(_, t)| *t == 0)
                    && only
                        .next
                        .iter()
                        .fold(Bits::empty(self.alphabet.len()), |acc, (b, _)| acc.or(b))
                        == full
            }
            _ => false,
        }
    }

    /// Whether no string is in the language.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Whether `s` is in the language.
    pub fn matches(&self, s: &str) -> bool {
        let mut state = 0;
        if self.states.is_empty() {
            return false;
        }
        for c in s.chars() {
            let Some(class) = self.alphabet.class_of(c) else {
                return false;
            };
            let Some(next) = self
                .states
                .get(state)
                .and_then(|st| st.next.iter().find(|(b, _)| b.has(class)))
            else {
                return false;
            };
            state = next.1;
        }
        self.states.get(state).is_some_and(|s| s.accepting)
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// The shortest and longest accepted lengths (`None`: unbounded). `None`
    /// for the empty language.
    pub fn length_bounds(&self) -> Option<(u64, Option<u64>)> {
        if self.states.is_empty() {
            return None;
        }
        // Shortest: breadth-first.
        let mut dist = vec![u64::MAX; self.states.len()];
        dist[0] = 0;
        let mut queue = VecDeque::from([0usize]);
        let mut shortest = None;
        while let Some(s) = queue.pop_front() {
            if self.states[s].accepting && shortest.is_none() {
                shortest = Some(dist[s]);
            }
            for (_, t) in &self.states[s].next {
                if dist[*t] == u64::MAX {
                    dist[*t] = dist[s] + 1;
                    queue.push_back(*t);
                }
            }
        }
        // Longest: unbounded if any cycle (every state is live), else the
        // longest path in the acyclic graph.
        let order = self.topological()?;
        let mut longest = vec![0u64; self.states.len()];
        for &s in order.iter().rev() {
            let mut best = 0;
            for (_, t) in &self.states[s].next {
                best = best.max(longest[*t] + 1);
            }
            longest[s] = best;
        }
        Some((shortest.unwrap_or(0), self.acyclic().then(|| longest[0])))
    }

    fn acyclic(&self) -> bool {
        self.topological()
            .is_some_and(|o| o.len() == self.states.len())
    }

    /// States in topological order, as far as the graph allows (Kahn).
    fn topological(&self) -> Option<Vec<usize>> {
        let n = self.states.len();
        let mut indegree = vec![0usize; n];
        for s in &self.states {
            for (_, t) in &s.next {
                indegree[*t] += 1;
            }
        }
        let mut queue: VecDeque<usize> = (0..n).filter(|&s| indegree[s] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(s) = queue.pop_front() {
            order.push(s);
            for (_, t) in &self.states[s].next {
                indegree[*t] -= 1;
                if indegree[*t] == 0 {
                    queue.push_back(*t);
                }
            }
        }
        Some(order)
    }

    /// Without the states from which no string is accepted.
    fn trimmed(self) -> Dfa {
        let Some(numbers) = live_numbers(&self.states, |st| st.accepting, |st| &st.next) else {
            return Dfa {
                alphabet: self.alphabet,
                states: Vec::new(),
            };
        };
        let states = self
            .states
            .into_iter()
            .zip(&numbers)
            .filter(|(_, number)| number.is_some())
            .map(|(st, _)| State {
                accepting: st.accepting,
                next: renumbered(st.next, &numbers),
            })
            .collect();
        Dfa {
            alphabet: self.alphabet,
            states,
        }
    }

    /// The minimal automaton (Hopcroft's partition refinement, with a dead
    /// state completing the transition function).
    fn minimised(self) -> Dfa {
        let n = self.states.len();
        if n <= 1 {
            return self;
        }
        let k = self.alphabet.len();
        let dead = n;
        let total = n + 1;
        // Predecessors of each state on each class.
        let mut target = vec![dead; n * k];
        for (s, st) in self.states.iter().enumerate() {
            for (bits, t) in &st.next {
                for c in bits.iter() {
                    if c < k {
                        target[s * k + c] = *t;
                    }
                }
            }
        }
        // Predecessors in one array: those of (state t, class c) at
        // `preds[offsets[t * k + c]..offsets[t * k + c + 1]]` (one allocation
        // where a list per pair made `total * k` of them).
        let step = |s: usize, c: usize| if s == dead { dead } else { target[s * k + c] };
        let mut offsets = vec![0usize; total * k + 1];
        for s in 0..total {
            for c in 0..k {
                offsets[step(s, c) * k + c + 1] += 1;
            }
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut preds = vec![0usize; total * k];
        let mut filled = offsets.clone();
        for s in 0..total {
            for c in 0..k {
                let slot = &mut filled[step(s, c) * k + c];
                preds[*slot] = s;
                *slot += 1;
            }
        }
        let preds_of = |t: usize, c: usize| &preds[offsets[t * k + c]..offsets[t * k + c + 1]];
        let mut partition = Partition::new(total, |s| s < n && self.states[s].accepting);
        let mut pending: Vec<(usize, usize)> = Vec::new();
        // Whether (block, class) waits in `pending`: `queued[block * k + class]`.
        let mut queued: Vec<bool> = Vec::new();
        for b in 0..partition.blocks() {
            queued.extend(std::iter::repeat_n(true, k));
            for c in 0..k {
                pending.push((b, c));
            }
        }
        let mut marked: Vec<usize> = Vec::new();
        while let Some((splitter, c)) = pending.pop() {
            queued[splitter * k + c] = false;
            marked.clear();
            for &t in partition.members(splitter) {
                marked.extend_from_slice(preds_of(t, c));
            }
            for (old, new) in partition.split(&marked) {
                queued.extend(std::iter::repeat_n(false, k));
                let smaller = if partition.size(new) < partition.size(old) {
                    new
                } else {
                    old
                };
                for d in 0..k {
                    // A block still waiting on `d` passes the wait to both halves;
                    // otherwise the smaller half suffices (Hopcroft's trick).
                    let target = if queued[old * k + d] { new } else { smaller };
                    queued[target * k + d] = true;
                    pending.push((target, d));
                }
            }
        }
        let block: Vec<usize> = (0..n).map(|s| partition.block_of(s)).collect();
        let count = partition.blocks();
        // Renumber blocks so that the start's block is 0, in first-seen order.
        let mut number = vec![usize::MAX; count];
        let mut reps = Vec::with_capacity(count);
        let mut queue = VecDeque::from([0usize]);
        number[block[0]] = 0;
        reps.push(0);
        while let Some(s) = queue.pop_front() {
            for (_, t) in &self.states[s].next {
                let b = block[*t];
                if number[b] == usize::MAX {
                    number[b] = reps.len();
                    reps.push(*t);
                    queue.push_back(*t);
                }
            }
        }
        let states = reps
            .iter()
            .map(|&s| {
                let mut next: Vec<(Bits, usize)> = Vec::new();
                for (bits, t) in &self.states[s].next {
                    let target = number[block[*t]];
                    match next.iter_mut().find(|(_, x)| *x == target) {
                        Some((b, _)) => *b = b.or(bits),
                        None => next.push((bits.clone(), target)),
                    }
                }
                State {
                    accepting: self.states[s].accepting,
                    next,
                }
            })
            .collect();
        Dfa {
            alphabet: self.alphabet,
            states,
        }
    }
}

/// A partition of `0..n` that blocks can be split in, in time proportional
/// to the elements marked (Valmari and Lehtinen's refinable partition).
struct Partition {
    elements: Vec<usize>,
    location: Vec<usize>,
    block: Vec<usize>,
    start: Vec<usize>,
    end: Vec<usize>,
    /// Elements marked in each block, at the block's start.
    marks: Vec<usize>,
}

impl Partition {
    /// Two blocks (or one): the elements where `first` holds, the others.
    fn new(n: usize, first: impl Fn(usize) -> bool) -> Partition {
        let mut elements: Vec<usize> = (0..n).filter(|&e| first(e)).collect();
        let cut = elements.len();
        elements.extend((0..n).filter(|&e| !first(e)));
        let mut p = Partition {
            location: vec![0; n],
            block: vec![0; n],
            start: Vec::new(),
            end: Vec::new(),
            marks: Vec::new(),
            elements,
        };
        for (i, &e) in p.elements.iter().enumerate() {
            p.location[e] = i;
        }
        for (a, b) in [(0, cut), (cut, n)] {
            if a < b {
                let id = p.start.len();
                p.start.push(a);
                p.end.push(b);
                p.marks.push(0);
                for i in a..b {
                    p.block[p.elements[i]] = id;
                }
            }
        }
        p
    }

    fn blocks(&self) -> usize {
        self.start.len()
    }

    fn size(&self, b: usize) -> usize {
        self.end[b] - self.start[b]
    }

    fn block_of(&self, e: usize) -> usize {
        self.block[e]
    }

    fn members(&self, b: usize) -> &[usize] {
        &self.elements[self.start[b]..self.end[b]]
    }

    /// Split every block into its marked and unmarked elements; returns
    /// (old block, new block) for each block split. The marked part keeps
    /// the old id unless it is the whole block (then nothing happens).
    fn split(&mut self, marked: &[usize]) -> Vec<(usize, usize)> {
        let mut touched = Vec::new();
        for &e in marked {
            let b = self.block[e];
            let i = self.location[e];
            let first_unmarked = self.start[b] + self.marks[b];
            if i < first_unmarked {
                continue; // already marked
            }
            // Swap e into the marked prefix of its block.
            let other = self.elements[first_unmarked];
            self.elements.swap(i, first_unmarked);
            self.location[other] = i;
            self.location[e] = first_unmarked;
            if self.marks[b] == 0 {
                touched.push(b);
            }
            self.marks[b] += 1;
        }
        let mut out = Vec::new();
        for b in touched {
            let m = self.marks[b];
            self.marks[b] = 0;
            if m == self.size(b) {
                continue;
            }
            // The marked prefix becomes a new block.
            let id = self.start.len();
            let (a, cut) = (self.start[b], self.start[b] + m);
            self.start.push(a);
            self.end.push(cut);
            self.marks.push(0);
            self.start[b] = cut;
            for i in a..cut {
                let e = self.elements[i];
                self.block[e] = id;
            }
            out.push((b, id));
        }
        out
    }
}

/// The new number of each state from which a string is accepted (`None` for
/// the others, which are dropped), given which states end a string
/// (`accepting`) and each state's transitions; `None` when the start, state
/// 0, is not one of them. The automata and the nodes of the grammar writer
/// (`rules`) are cut alike.
pub(super) fn live_numbers<T>(
    states: &[T],
    accepting: impl Fn(&T) -> bool,
    next: impl Fn(&T) -> &[(Bits, usize)],
) -> Option<Vec<Option<usize>>> {
    let n = states.len();
    let mut back: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (s, st) in states.iter().enumerate() {
        for (_, t) in next(st) {
            back[*t].push(s);
        }
    }
    let mut live = vec![false; n];
    let mut stack: Vec<usize> = (0..n).filter(|&s| accepting(&states[s])).collect();
    for &s in &stack {
        live[s] = true;
    }
    while let Some(s) = stack.pop() {
        for &p in &back[s] {
            if !live[p] {
                live[p] = true;
                stack.push(p);
            }
        }
    }
    if !live.first().copied().unwrap_or(false) {
        return None;
    }
    let mut kept = 0;
    Some(
        live.into_iter()
            .map(|l| {
                l.then(|| {
                    let number = kept;
                    kept += 1;
                    number
                })
            })
            .collect(),
    )
}

/// The transitions to live states, renumbered by [`live_numbers`].
pub(super) fn renumbered(
    next: Vec<(Bits, usize)>,
    numbers: &[Option<usize>],
) -> Vec<(Bits, usize)> {
    next.into_iter()
        .filter_map(|(b, t)| numbers[t].map(|t| (b, t)))
        .collect()
}
