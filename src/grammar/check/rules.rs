//! The parsed rules as llama.cpp will build them, the order the checks run
//! in, and the checks for undefined rules, `root`, and rules or characters
//! that match nothing.

use crate::hashing::Map;

use super::elements::{to_u32, DeadSite, Elem, Kind, RuleArena, Sym};
use super::errors::Fail;
use super::{CheckedGrammar, TokenUse, ROOT, UNSET};

/// The rules as llama.cpp will build them; ids `0..n` are its rules.
pub(super) struct Grammar<'a> {
    pub(super) src: &'a str,
    pub(super) syms: Vec<Sym>,
    pub(super) names: Map<&'a str, u32>,
    pub(super) arena: Vec<Elem>,
    pub(super) dead_sites: Vec<DeadSite>,
    pub(super) n: usize,
    pub(super) def_order: Vec<u32>,
    pub(super) redefined: Vec<u32>,
    pub(super) tokens: TokenUse,
}

/// How an element counts in a fixpoint over alternatives.
pub(super) enum Item {
    /// Structure or a continuation of a character item.
    Skip,
    /// Always satisfied.
    Yes,
    /// Never satisfied.
    No,
    /// Satisfied when the rule is.
    Rule(u32),
}

impl<'a> Grammar<'a> {
    pub(super) fn sym(&self, id: usize) -> Option<&Sym> {
        self.syms.get(id)
    }

    pub(super) fn name(&self, id: usize) -> &'a str {
        self.sym(id)
            .and_then(|s| self.src.get(s.name_start as usize..s.name_end as usize))
            .unwrap_or_default()
    }

    pub(super) fn pos(&self, id: usize) -> usize {
        self.sym(id).map_or(0, |s| s.pos as usize)
    }

    pub(super) fn elems(&self, id: usize) -> &[Elem] {
        self.sym(id)
            .and_then(|s| self.arena.get(s.start as usize..s.end as usize))
            .unwrap_or_default()
    }

    /// Run the checks after parsing; returns the parse-stack estimate.
    pub(super) fn validate(&self) -> Result<u64, Fail> {
        self.check_defined()?;
        let root = self.root()?;
        let reachable = self.reachable(root);
        let left = self.check_left_recursion(&reachable)?;
        self.check_productive(root, &reachable)?;
        self.check_stacks(root, &reachable, &left)
    }

    pub(super) fn summary(&self, parse_stacks: u64) -> CheckedGrammar {
        let names = |ids: &[u32]| {
            ids.iter()
                .map(|&id| self.name(id as usize).to_owned())
                .collect()
        };
        CheckedGrammar {
            rule_names: names(&self.def_order),
            redefined: names(&self.redefined),
            llama_rules: self.n,
            elements: (0..self.n).map(|id| self.elems(id).len()).sum(),
            parse_stacks,
            tokens: self.tokens.clone(),
        }
    }

    /// Rules `0..n` in one arena, each closed by its `End`, with `root`'s
    /// id.
    pub(super) fn arena(&self, root: usize) -> RuleArena {
        let mut arena = RuleArena {
            root: to_u32(root),
            ..RuleArena::default()
        };
        for id in 0..self.n {
            arena.starts.push(to_u32(arena.elems.len()));
            let elems = self.elems(id);
            arena.elems.extend_from_slice(elems);
            if elems.last().map(|e| e.kind) != Some(Kind::End) {
                arena.elems.push(Elem::new(Kind::End, 0));
            }
        }
        arena
    }

    // -- undefined rules and root -----------------------------------------------

    /// llama.cpp rejects a reference to an undefined rule from any rule it
    /// keeps, and an undefined symbol whose id is below its rule count.
    fn check_defined(&self) -> Result<(), Fail> {
        let mut fatal: Vec<bool> = self
            .syms
            .iter()
            .enumerate()
            .map(|(id, sym)| !sym.defined() && id < self.n)
            .collect();
        for id in 0..self.n {
            for elem in self.elems(id).iter().filter(|e| e.kind == Kind::Ref) {
                let target = elem.value as usize;
                if self.sym(target).is_some_and(|s| !s.defined()) {
                    if let Some(flag) = fatal.get_mut(target) {
                        *flag = true;
                    }
                }
            }
        }
        let first = (0..self.syms.len())
            .filter(|&id| fatal.get(id).copied().unwrap_or(false))
            .min_by_key(|&id| self.sym(id).map_or(UNSET, |s| s.first_ref));
        match first {
            Some(id) => Err(Fail::new(
                self.sym(id).map_or(0, |s| s.first_ref as usize),
                format!("undefined rule \"{}\"", self.name(id)),
            )),
            None => Ok(()),
        }
    }

    pub(super) fn root(&self) -> Result<usize, Fail> {
        match self.names.get(ROOT) {
            Some(&id) if self.sym(id as usize).is_some_and(Sym::defined) => Ok(id as usize),
            _ => Err(Fail::new(0, "grammar has no \"root\" rule")),
        }
    }

    // -- rules that match nothing -----------------------------------------------

    fn check_productive(&self, root: usize, reachable: &[bool]) -> Result<(), Fail> {
        let productive = self.fixpoint(|elem| match elem.kind {
            Kind::Ref => Item::Rule(elem.value),
            Kind::Alt | Kind::End | Kind::CharAlt | Kind::RangeUpper => Item::Skip,
            Kind::Dead => Item::No,
            _ => Item::Yes,
        });
        let is_productive = |id: usize| productive.get(id).copied().unwrap_or(false);
        if !is_productive(root) {
            return Err(Fail::new(self.pos(root), "rule \"root\" matches nothing"));
        }
        let is_reachable = |id: usize| reachable.get(id).copied().unwrap_or(false);
        let barren = self
            .def_order
            .iter()
            .map(|&id| id as usize)
            .find(|&id| is_reachable(id) && !is_productive(id));
        if let Some(id) = barren {
            return Err(Fail::new(
                self.pos(id),
                format!("rule \"{}\" matches nothing", self.name(id)),
            ));
        }
        self.check_dead_chars(reachable)
    }

    fn check_dead_chars(&self, reachable: &[bool]) -> Result<(), Fail> {
        let site = (0..self.n)
            .filter(|&id| reachable.get(id).copied().unwrap_or(false))
            .flat_map(|id| self.elems(id).iter())
            .filter(|elem| elem.kind == Kind::Dead)
            .filter_map(|elem| self.dead_sites.get(elem.value as usize))
            .min_by_key(|site| site.pos);
        match site {
            Some(site) if site.is_class => Err(Fail::new(
                site.pos,
                "character class matches no character a model can generate, so the sampler \
                 would get stuck here",
            )),
            Some(site) => Err(Fail::new(
                site.pos,
                "\"\\x00\" can never be generated (token text cannot contain NUL), so the \
                 sampler would get stuck here",
            )),
            None => Ok(()),
        }
    }

    fn reachable(&self, root: usize) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        let mut todo = vec![root];
        if let Some(flag) = seen.get_mut(root) {
            *flag = true;
        }
        while let Some(id) = todo.pop() {
            for elem in self.elems(id).iter().filter(|e| e.kind == Kind::Ref) {
                if let Some(flag) = seen.get_mut(elem.value as usize) {
                    if !*flag {
                        *flag = true;
                        todo.push(elem.value as usize);
                    }
                }
            }
        }
        seen
    }

    /// Least fixpoint "some alternative has all its items satisfied", where
    /// `item` says how each element counts. Linear in the grammar size.
    pub(super) fn fixpoint(&self, item: impl Fn(Elem) -> Item) -> Vec<bool> {
        let mut alt_rule: Vec<u32> = Vec::new();
        let mut pending: Vec<u32> = Vec::new();
        let mut uses: Vec<(u32, u32)> = Vec::new();
        for id in 0..self.n {
            let mut open = false;
            for &elem in self.elems(id) {
                if !open {
                    alt_rule.push(to_u32(id));
                    pending.push(0);
                    open = true;
                }
                let alt = alt_rule.len() - 1;
                let Some(count) = pending.get_mut(alt) else {
                    continue;
                };
                match item(elem) {
                    Item::Rule(target) => {
                        *count = count.saturating_add(1);
                        uses.push((target, to_u32(alt)));
                    }
                    Item::No => *count = UNSET,
                    Item::Skip | Item::Yes => {}
                }
                if elem.ends_alternative() {
                    open = false;
                }
            }
        }
        solve_fixpoint(self.n, &alt_rule, pending, &uses)
    }
}

/// Mark `rule` satisfied and queue it, once.
fn satisfy(rule: u32, done: &mut [bool], todo: &mut Vec<usize>) {
    if let Some(flag) = done.get_mut(rule as usize) {
        if !*flag {
            *flag = true;
            todo.push(rule as usize);
        }
    }
}

/// Propagate satisfied rules through the alternatives that use them.
fn solve_fixpoint(
    n: usize,
    alt_rule: &[u32],
    mut pending: Vec<u32>,
    uses: &[(u32, u32)],
) -> Vec<bool> {
    // Alternatives grouped by the rule they use (a counting sort).
    let mut first_use = vec![0usize; n + 1];
    for &(target, _) in uses {
        if let Some(slot) = first_use.get_mut(target as usize + 1) {
            *slot += 1;
        }
    }
    for i in 1..first_use.len() {
        let before = first_use.get(i - 1).copied().unwrap_or(0);
        if let Some(slot) = first_use.get_mut(i) {
            *slot += before;
        }
    }
    let mut fill = first_use.clone();
    let mut users = vec![0u32; uses.len()];
    for &(target, alt) in uses {
        if let Some(next) = fill.get_mut(target as usize) {
            if let Some(slot) = users.get_mut(*next) {
                *slot = alt;
            }
            *next += 1;
        }
    }
    let mut done = vec![false; n];
    let mut todo: Vec<usize> = Vec::new();
    for (alt, &count) in pending.iter().enumerate() {
        if count == 0 {
            satisfy(
                alt_rule.get(alt).copied().unwrap_or(UNSET),
                &mut done,
                &mut todo,
            );
        }
    }
    while let Some(rule) = todo.pop() {
        let start = first_use.get(rule).copied().unwrap_or(0);
        let end = first_use.get(rule + 1).copied().unwrap_or(0);
        for &alt in users.get(start..end).unwrap_or_default() {
            let Some(count) = pending.get_mut(alt as usize) else {
                continue;
            };
            if *count == UNSET || *count == 0 {
                continue;
            }
            *count -= 1;
            if *count == 0 {
                satisfy(
                    alt_rule.get(alt as usize).copied().unwrap_or(UNSET),
                    &mut done,
                    &mut todo,
                );
            }
        }
    }
    done
}
