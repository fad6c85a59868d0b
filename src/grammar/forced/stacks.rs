//! Parse stacks as llama.cpp keeps them, in flat buffers: a stack is a list
//! of element positions (its top last), a set of stacks is one `Vec<u32>`
//! with spans, deduplicated by content as llama.cpp deduplicates its
//! `llama_grammar_stacks`. Buffers are cleared and reused between steps, so
//! a step allocates only while the sets grow past their largest size yet.

use crate::grammar::check::Kind;
use crate::hashing::Map;

use super::rules::ForcedRules;

/// "No entry" in `SliceSet`'s chains.
const NIL: u32 = u32::MAX;

/// A list of stacks in one buffer: a recognizer's live stacks.
#[derive(Debug, Clone, Default)]
pub(super) struct Stacks {
    data: Vec<u32>,
    spans: Vec<(u32, u32)>,
}

impl Stacks {
    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    pub(super) fn get(&self, i: usize) -> &[u32] {
        self.spans
            .get(i)
            .and_then(|&(start, end)| self.data.get(start as usize..end as usize))
            .unwrap_or_default()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    fn push(&mut self, stack: &[u32]) {
        let start = to_u32(self.data.len());
        self.data.extend_from_slice(stack);
        self.spans.push((start, to_u32(self.data.len())));
    }
}

/// A set of stacks, in insertion order: [`Stacks`] with an index that
/// finds equal stacks. Only the stacks a step is building need the index,
/// so a recognizer's live stacks (and its clones) go without it.
#[derive(Debug, Default)]
pub(super) struct SliceSet {
    pub(super) stacks: Stacks,
    /// Per stack: the next stack with the same hash.
    chain: Vec<u32>,
    /// First stack per hash.
    heads: Map<u64, u32>,
}

impl SliceSet {
    pub(super) fn clear(&mut self) {
        self.stacks.clear();
        self.chain.clear();
        self.heads.clear();
    }

    /// Add `stack` unless an equal one is in the set; whether it was added.
    pub(super) fn insert(&mut self, stack: &[u32]) -> bool {
        let hash = hash_stack(stack);
        let head = self.heads.get(&hash).copied().unwrap_or(NIL);
        let mut at = head;
        while at != NIL {
            if self.stacks.get(at as usize) == stack {
                return false;
            }
            at = self.chain.get(at as usize).copied().unwrap_or(NIL);
        }
        let index = to_u32(self.stacks.len());
        self.stacks.push(stack);
        self.chain.push(head);
        self.heads.insert(hash, index);
        true
    }
}

/// A stack of stacks still to expand (llama.cpp's `todo`).
#[derive(Debug, Default)]
struct Todo {
    data: Vec<u32>,
    spans: Vec<(u32, u32)>,
}

impl Todo {
    fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    /// Push `base` followed by `extra`.
    fn push(&mut self, base: &[u32], extra: [Option<u32>; 2]) {
        let start = to_u32(self.data.len());
        self.data.extend_from_slice(base);
        self.data.extend(extra.into_iter().flatten());
        self.spans.push((start, to_u32(self.data.len())));
    }

    /// Move the last stack into `into`.
    fn pop_into(&mut self, into: &mut Vec<u32>) -> bool {
        let Some((start, end)) = self.spans.pop() else {
            return false;
        };
        into.clear();
        into.extend_from_slice(
            self.data
                .get(start as usize..end as usize)
                .unwrap_or_default(),
        );
        self.data.truncate(start as usize);
        true
    }
}

/// The work an expansion did ran over its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OverBudget;

/// Scratch buffers for one step of the recognizer: never part of its state
/// (a clone starts with empty ones).
#[derive(Debug, Default)]
pub(super) struct Work {
    /// The stacks the step produces.
    pub(super) next: SliceSet,
    /// Stacks whose top is a rule reference, already expanded this step
    /// (llama.cpp's `seen`; shared by every expansion of one step, which
    /// yields the same set of stacks and skips repeated work).
    seen: SliceSet,
    todo: Todo,
    current: Vec<u32>,
    /// The stack the caller asks to expand.
    pub(super) start: Vec<u32>,
    /// Stack elements copied this step, against `limit`.
    spent: usize,
    limit: usize,
}

impl Clone for Work {
    fn clone(&self) -> Self {
        Work::default()
    }
}

impl Work {
    /// Start a step: empty `next`, forget what was seen, allow `limit`
    /// copied stack elements.
    pub(super) fn begin(&mut self, limit: usize) {
        self.next.clear();
        self.seen.clear();
        self.spent = 0;
        self.limit = limit;
    }

    /// Stack elements copied in this step so far.
    pub(super) fn spent(&self) -> usize {
        self.spent
    }

    /// llama.cpp's `llama_grammar_advance_stack` on `self.start`: every
    /// stack it leads to whose top is a character or token item (or that is
    /// empty) is added to `next`.
    pub(super) fn advance(&mut self, rules: &ForcedRules) -> Result<(), OverBudget> {
        self.todo.clear();
        self.todo.push(&self.start, [None, None]);
        while self.todo.pop_into(&mut self.current) {
            self.spent = self.spent.saturating_add(self.current.len() + 1);
            if self.spent > self.limit {
                return Err(OverBudget);
            }
            let Some((&top, below)) = self.current.split_last() else {
                self.next.insert(&[]);
                continue;
            };
            match rules.kind(top) {
                Kind::Ref => {
                    if !self.seen.insert(&self.current) {
                        continue;
                    }
                    let after = top.saturating_add(1);
                    let after = (!rules.ends_sequence(after)).then_some(after);
                    let target = rules.elems.get(top as usize).map_or(u32::MAX, |e| e.value);
                    let Some(mut alt) = rules.rule_start(target) else {
                        continue;
                    };
                    loop {
                        let first = (!rules.ends_sequence(alt)).then_some(alt);
                        self.todo.push(below, [after, first]);
                        while !rules.ends_sequence(alt) {
                            alt += 1;
                        }
                        if rules.kind(alt) != Kind::Alt {
                            break;
                        }
                        alt += 1;
                    }
                }
                Kind::Char
                | Kind::CharNot
                | Kind::Any
                | Kind::Token
                | Kind::TokenNot
                | Kind::Dead => {
                    self.next.insert(&self.current);
                }
                // llama.cpp aborts here; a checked grammar never gets here.
                Kind::End | Kind::Alt | Kind::CharAlt | Kind::RangeUpper => {}
            }
        }
        Ok(())
    }
}

/// A fast hash of a stack's positions (FxHash's mixing), only for bucketing
/// before an exact comparison.
fn hash_stack(stack: &[u32]) -> u64 {
    let mut hash = stack.len() as u64;
    for &pos in stack {
        hash = (hash.rotate_left(5) ^ u64::from(pos)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    hash
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_keeps_each_stack_once_and_in_order() {
        let mut set = SliceSet::default();
        assert!(set.insert(&[1, 2, 3]));
        assert!(set.insert(&[]));
        assert!(set.insert(&[1, 2]));
        assert!(!set.insert(&[1, 2, 3]));
        assert!(!set.insert(&[]));
        assert_eq!(set.stacks.len(), 3);
        let all: Vec<&[u32]> = set.stacks.iter().collect();
        assert_eq!(all, vec![&[1, 2, 3][..], &[][..], &[1, 2][..]]);
        set.clear();
        assert!(set.stacks.is_empty());
        assert!(set.insert(&[1, 2, 3]));
    }
}
