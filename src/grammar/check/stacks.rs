//! Parse stacks: an estimate of how many stacks llama.cpp keeps at one step,
//! per strongly connected component of the left-edge graph.

use super::elements::Kind;
use super::errors::Fail;
use super::left_recursion::LeftEdges;
use super::rules::Grammar;
use super::{MAX_PARSE_STACKS, UNSET};

/// An item at the start of an alternative.
#[derive(Clone, Copy)]
enum LeftItem {
    /// A character or token: one parse stack.
    Terminal,
    /// A rule reference; `tail` when it ends its alternative (llama.cpp
    /// then pushes nothing for the rest of the alternative).
    Ref { target: usize, tail: bool },
}

/// Parse-stack estimates per left-edge component, computed in order so that
/// the components a component starts with are done first.
struct Fanout<'g, 'a> {
    grammar: &'g Grammar<'a>,
    left: &'g LeftEdges,
    /// Rules of each component: `rules[starts[c]..starts[c + 1]]`.
    starts: Vec<usize>,
    rules: Vec<usize>,
    values: Vec<u64>,
    /// Per component: the last search that counted it.
    mark: Vec<u32>,
    searches: u32,
    /// Elements the exact counts may still look at.
    budget: u64,
    /// The first items of every rule, found once (the counts visit a rule
    /// once per component that reaches it): rule `id`'s are
    /// `items[item_starts[id]..item_starts[id + 1]]`.
    items: Vec<LeftItem>,
    item_starts: Vec<usize>,
}

impl<'g, 'a> Fanout<'g, 'a> {
    /// Elements the exact counts may look at in total.
    const BUDGET: u64 = 20_000_000;

    pub(super) fn new(grammar: &'g Grammar<'a>, left: &'g LeftEdges) -> Self {
        let count = left
            .component
            .iter()
            .filter(|&&c| c != UNSET)
            .map(|&c| c as usize + 1)
            .max()
            .unwrap_or(0);
        let mut starts = vec![0usize; count + 1];
        for &comp in &left.component {
            if let Some(slot) = starts.get_mut(comp as usize + 1) {
                *slot += 1;
            }
        }
        for i in 1..starts.len() {
            let before = starts.get(i - 1).copied().unwrap_or(0);
            if let Some(slot) = starts.get_mut(i) {
                *slot += before;
            }
        }
        let mut fill = starts.clone();
        let mut rules = vec![0usize; left.component.len()];
        for (id, &comp) in left.component.iter().enumerate() {
            if let Some(next) = fill.get_mut(comp as usize) {
                if let Some(slot) = rules.get_mut(*next) {
                    *slot = id;
                }
                *next += 1;
            }
        }
        let mut items = Vec::new();
        let mut item_starts = Vec::with_capacity(left.component.len() + 1);
        for id in 0..left.component.len() {
            item_starts.push(items.len());
            grammar.walk_left(id, &left.nullable, &mut |item| items.push(item));
        }
        item_starts.push(items.len());
        Fanout {
            grammar,
            left,
            starts,
            rules,
            values: vec![0; count],
            mark: vec![0; count],
            searches: 0,
            budget: Self::BUDGET,
            items,
            item_starts,
        }
    }

    /// The first items of rule `id`.
    fn first_items(&self, id: usize) -> &[LeftItem] {
        let start = self.item_starts.get(id).copied().unwrap_or(0);
        let end = self.item_starts.get(id + 1).copied().unwrap_or(0);
        self.items.get(start..end).unwrap_or_default()
    }

    /// The first item `i` of rule `id`.
    fn first_item(&self, id: usize, i: usize) -> Option<LeftItem> {
        self.first_items(id).get(i).copied()
    }

    fn comp(&self, id: usize) -> usize {
        self.left.component.get(id).copied().unwrap_or(UNSET) as usize
    }

    fn value(&self, comp: usize) -> u64 {
        self.values.get(comp).copied().unwrap_or(0)
    }

    fn members(&self, comp: usize) -> &[usize] {
        let start = self.starts.get(comp).copied().unwrap_or(0);
        let end = self.starts.get(comp + 1).copied().unwrap_or(0);
        self.rules.get(start..end).unwrap_or_default()
    }

    /// A new search: components marked before count as unvisited.
    fn next_search(&mut self) -> u32 {
        self.searches = self.searches.wrapping_add(1).max(1);
        self.searches
    }

    /// Mark `comp` for search `search`; false when it already was.
    fn visit(&mut self, comp: usize, search: u32) -> bool {
        match self.mark.get_mut(comp) {
            Some(mark) if *mark != search => {
                *mark = search;
                true
            }
            _ => false,
        }
    }

    /// An upper bound: the component's own first items plus the estimates
    /// of the components it starts with (components reached at the end of
    /// alternatives counted once each, but not merged further down).
    fn upper(&mut self, comp: usize) -> u64 {
        let search = self.next_search();
        self.visit(comp, search);
        let mut total = 0u64;
        for i in 0..self.members(comp).len() {
            let id = self.members(comp).get(i).copied().unwrap_or(0);
            let mut i = 0;
            while let Some(item) = self.first_item(id, i) {
                total = total.saturating_add(self.item_stacks(item, search));
                i += 1;
            }
        }
        total
    }

    /// Stacks one first item adds; a reference that ends its alternative
    /// adds nothing when its component was already counted in this search.
    fn item_stacks(&mut self, item: LeftItem, search: u32) -> u64 {
        match item {
            LeftItem::Terminal => 1,
            LeftItem::Ref { target, tail } => {
                let comp = self.comp(target);
                if tail && !self.visit(comp, search) {
                    0
                } else {
                    self.value(comp)
                }
            }
        }
    }

    /// The count with every component reached at the end of alternatives
    /// merged, as llama.cpp merges the stacks (the upper bound counts a
    /// component reached along two paths twice); stops above the limit or
    /// when the budget runs out (then `upper` stands).
    fn exact(&mut self, comp: usize, upper: u64) -> u64 {
        let search = self.next_search();
        self.visit(comp, search);
        let mut todo = vec![comp];
        let mut total = 0u64;
        while let Some(current) = todo.pop() {
            for i in 0..self.members(current).len() {
                let id = self.members(current).get(i).copied().unwrap_or(0);
                self.budget = self
                    .budget
                    .saturating_sub(self.grammar.elems(id).len() as u64);
                let mut i = 0;
                while let Some(item) = self.first_item(id, i) {
                    total = total.saturating_add(self.exact_item(item, search, &mut todo));
                    i += 1;
                }
                if total > MAX_PARSE_STACKS || self.budget == 0 {
                    return if total > MAX_PARSE_STACKS {
                        total
                    } else {
                        upper
                    };
                }
            }
        }
        total
    }

    fn exact_item(&mut self, item: LeftItem, search: u32, todo: &mut Vec<usize>) -> u64 {
        match item {
            LeftItem::Terminal => 1,
            LeftItem::Ref {
                target,
                tail: false,
            } => self.value(self.comp(target)),
            LeftItem::Ref { target, tail: true } => {
                let comp = self.comp(target);
                if self.visit(comp, search) {
                    todo.push(comp);
                }
                0
            }
        }
    }
}

impl Grammar<'_> {
    /// Estimate how many stacks llama.cpp builds at once: at the start
    /// (expanding `root`) and when it resumes at any position of a rule.
    pub(super) fn check_stacks(
        &self,
        root: usize,
        reachable: &[bool],
        left: &LeftEdges,
    ) -> Result<u64, Fail> {
        let fanout = self.component_fanout(left);
        let of_rule = |id: usize| {
            let comp = left.component.get(id).copied().unwrap_or(UNSET) as usize;
            fanout.get(comp).copied().unwrap_or(0)
        };
        let mut worst = (of_rule(root), root);
        for id in (0..self.n).filter(|&id| reachable.get(id).copied().unwrap_or(false)) {
            let from_here = self.max_resume_fanout(id, &of_rule, &left.nullable);
            if from_here > worst.0 {
                worst = (from_here, id);
            }
        }
        let (count, id) = worst;
        if count <= MAX_PARSE_STACKS {
            return Ok(count);
        }
        Err(Fail::new(
            self.pos(id),
            format!(
                "rule \"{}\" makes llama.cpp track about {count} parse stacks at once \
                 (limit {MAX_PARSE_STACKS}); group alternatives by common prefix and avoid \
                 nesting optional items",
                self.name(id)
            ),
        ))
    }

    /// Visit the items the alternatives of rule `id` can start with (past
    /// references to rules that may match the empty string).
    fn walk_left(&self, id: usize, nullable: &[bool], visit: &mut dyn FnMut(LeftItem)) {
        let elems = self.elems(id);
        let mut active = true;
        for (i, elem) in elems.iter().enumerate() {
            match elem.kind {
                Kind::Alt | Kind::End => active = true,
                _ if !active => {}
                Kind::Ref => {
                    let target = elem.value as usize;
                    let tail = elems.get(i + 1).is_none_or(|e| e.ends_alternative());
                    visit(LeftItem::Ref { target, tail });
                    active = nullable.get(target).copied().unwrap_or(false);
                }
                _ => {
                    visit(LeftItem::Terminal);
                    active = false;
                }
            }
        }
    }

    /// Stacks created by expanding any rule of each component, with the
    /// stack below fixed. Rules of one component reach each other through
    /// references that end their alternative, so they share that stack and
    /// llama.cpp merges their duplicates.
    fn component_fanout(&self, left: &LeftEdges) -> Vec<u64> {
        let mut fanout = Fanout::new(self, left);
        for comp in 0..fanout.values.len() {
            let upper = fanout.upper(comp);
            let value = if upper > 1 {
                fanout.exact(comp, upper)
            } else {
                upper
            };
            if let Some(slot) = fanout.values.get_mut(comp) {
                *slot = value;
            }
        }
        fanout.values
    }

    /// The largest number of stacks created when llama.cpp resumes inside
    /// rule `id` (after a character, or after a rule it references ends).
    fn max_resume_fanout(
        &self,
        id: usize,
        of_rule: &dyn Fn(usize) -> u64,
        nullable: &[bool],
    ) -> u64 {
        let mut best = 0u64;
        let mut from_here = 0u64;
        for elem in self.elems(id).iter().rev() {
            from_here = match elem.kind {
                Kind::Alt | Kind::End => 0,
                Kind::CharAlt | Kind::RangeUpper => from_here,
                Kind::Ref => {
                    let target = elem.value as usize;
                    let rest = if nullable.get(target).copied().unwrap_or(false) {
                        from_here
                    } else {
                        0
                    };
                    of_rule(target).saturating_add(rest)
                }
                _ => 1,
            };
            best = best.max(from_here);
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use crate::grammar::check::cases::JSON;
    use crate::grammar::check::check;
    use crate::grammar::check::tests::{expect_message, short, timed};

    #[test]
    fn hostile_many_alternatives() {
        let alts: Vec<String> = (0..100_000).map(|i| format!("\"{i}\"")).collect();
        let text = format!("root ::= {}", alts.join(" | "));
        expect_message(
            timed("100k alternatives", &text),
            "rule \"root\" makes llama.cpp track about 100000 parse stacks at once (limit 10000)",
        );
        let text = format!("root ::= \"<\" (\"x\" | {})", alts.join(" | "));
        expect_message(
            timed("100k alternatives after a character", &text),
            "100001 parse stacks",
        );
        let alts: Vec<String> = (0..10_000).map(|i| format!("\"{i}\"")).collect();
        let text = format!("root ::= {}", alts.join(" | "));
        assert!(timed("10k alternatives", &text).is_ok());
        let alts: Vec<String> = (0..100_000).map(|i| short(i % 20_000)).collect();
        let mut text = format!("root::={}\n", alts.join("|"));
        for i in 0..10_000 {
            text.push_str(&format!("{}::=.\n", short(i)));
        }
        for i in 10_000..20_000 {
            text.push_str(&format!("{}::=\"\"\n", short(i)));
        }
        let result = timed("100k alternatives of rules", &text);
        assert!(result.is_ok(), "{result:?}");
    }

    #[test]
    fn parse_stack_estimates() {
        // Each level starts with two optional copies of the next: 2^levels
        // stacks (llama.cpp builds 8193 for 13 levels, 16385 for 14).
        let levels = |n: usize| {
            let mut text = String::from("root ::= n0\n");
            for i in 0..n {
                text.push_str(&format!(
                    "n{i} ::= a{i} a{i}\na{i} ::= b{i}\nb{i} ::= | n{}\n",
                    i + 1
                ));
            }
            text + &format!("n{n} ::= \"x\"\n")
        };
        assert_eq!(check(&levels(13)).map(|g| g.parse_stacks()), Ok(8192));
        expect_message(
            check(&levels(14)),
            "about 16384 parse stacks at once (limit 10000)",
        );
        // Rules reached along several paths are counted once, as llama.cpp
        // merges the stacks (it builds 3000 here).
        let alts: Vec<String> = (0..3000).map(|i| format!("\"w{i}\"")).collect();
        let mut text = format!("root ::= d0\nbig ::= {}\n", alts.join(" | "));
        for i in 0..6 {
            text.push_str(&format!(
                "d{i} ::= x{i} | y{i}\nx{i} ::= d{}\ny{i} ::= d{}\n",
                i + 1,
                i + 1
            ));
        }
        text.push_str("d6 ::= big\n");
        assert_eq!(check(&text).map(|g| g.parse_stacks()), Ok(3000));
        assert_eq!(check(JSON).map(|g| g.parse_stacks()), Ok(12));
    }
}
