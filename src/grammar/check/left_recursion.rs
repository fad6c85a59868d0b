//! Left recursion: llama.cpp's own check, the left recursion it misses and
//! that would hang it, and the cost of its (memoryless) check.

use super::elements::{to_u32, Kind, Origin};
use super::errors::Fail;
use super::graph::{
    find_cycle, growing_cycle, outer_loop_work, postorder, strongly_connected, Graph,
};
use super::rules::{Grammar, Item};
use super::{MAX_LEFT_CHAIN, MAX_LEFT_RECURSION_WORK};

/// What the left-recursion checks learn that later checks reuse.
pub(super) struct LeftEdges {
    /// Rules that can match the empty string.
    pub(super) nullable: Vec<bool>,
    /// Strongly connected component of each rule in the graph of left edges
    /// (numbered so that edges lead to equal or smaller numbers).
    pub(super) component: Vec<u32>,
}

impl Grammar<'_> {
    /// llama.cpp's own check (on every rule), then left recursion it misses
    /// and that would hang it (on rules it can reach), then its cost.
    pub(super) fn check_left_recursion(&self, reachable: &[bool]) -> Result<LeftEdges, Fail> {
        let explicit_empty: Vec<bool> = (0..self.n)
            .map(|id| self.has_empty_alternative(id))
            .collect();
        let llama_edges = self.left_graph(&explicit_empty);
        if let Some(cycle) = find_cycle(&llama_edges, self.n) {
            return Err(self.left_recursion(&cycle));
        }
        let nullable = self.fixpoint(|elem| match elem.kind {
            Kind::Ref => Item::Rule(elem.value),
            Kind::Alt | Kind::End | Kind::CharAlt | Kind::RangeUpper => Item::Skip,
            _ => Item::No,
        });
        let graph = self.left_graph(&nullable);
        let component = strongly_connected(&graph, self.n);
        if let Some(cycle) = growing_cycle(&graph, &component, reachable) {
            return Err(self.left_recursion(&cycle));
        }
        self.check_llama_cost(&llama_edges)?;
        Ok(LeftEdges {
            nullable,
            component,
        })
    }

    /// llama.cpp's notion of "may be empty": an alternative with no element.
    fn has_empty_alternative(&self, id: usize) -> bool {
        let mut at_start = true;
        for elem in self.elems(id) {
            if elem.ends_alternative() {
                if at_start {
                    return true;
                }
                at_start = true;
            } else {
                at_start = false;
            }
        }
        false
    }

    /// References at the left edge of each rule, walking past references to
    /// rules marked in `passable`.
    fn left_graph(&self, passable: &[bool]) -> Graph {
        let mut graph = Graph {
            offsets: Vec::with_capacity(self.n + 1),
            targets: Vec::new(),
            tails: Vec::new(),
        };
        graph.offsets.push(0);
        for id in 0..self.n {
            let elems = self.elems(id);
            let mut active = true;
            for (i, elem) in elems.iter().enumerate() {
                match elem.kind {
                    // Every reference is below `n` once `check_defined` passed;
                    // the guard keeps the graph algorithms' indexing in range.
                    Kind::Ref if active && (elem.value as usize) < self.n => {
                        graph.targets.push(elem.value);
                        graph
                            .tails
                            .push(elems.get(i + 1).is_none_or(|e| e.ends_alternative()));
                        active = passable.get(elem.value as usize).copied().unwrap_or(false);
                    }
                    Kind::Alt | Kind::End => active = true,
                    _ => active = false,
                }
            }
            graph.offsets.push(to_u32(graph.targets.len()));
        }
        graph
    }

    fn origin(&self, id: usize) -> Option<Origin> {
        self.sym(id).map(|s| s.origin)
    }

    /// The error for a left-recursive cycle of rules, named after its
    /// earliest-defined named rule.
    fn left_recursion(&self, cycle: &[usize]) -> Fail {
        let named = (0..cycle.len())
            .filter(|&i| cycle.get(i).and_then(|&id| self.origin(id)) == Some(Origin::Named))
            .min_by_key(|&i| cycle.get(i).map_or(0, |&id| self.pos(id)));
        let Some(start) = named else {
            return self.empty_repetition(cycle);
        };
        let mut names: Vec<&str> = Vec::new();
        for i in 0..cycle.len() {
            let id = cycle.get((start + i) % cycle.len()).copied().unwrap_or(0);
            let name = self.name(id);
            if names.last() != Some(&name) {
                names.push(name);
            }
        }
        let first = cycle.get(start).copied().unwrap_or(0);
        let name = self.name(first);
        names.push(name);
        if names.len() > 2 && names.get(names.len() - 2) == Some(&name) {
            names.pop();
        }
        Fail::new(
            self.pos(first),
            format!("rule \"{name}\" is left-recursive ({})", cycle_text(&names)),
        )
    }

    /// A cycle without named rules: a repetition of something that may
    /// match the empty string (`x?*`, `("")+`).
    fn empty_repetition(&self, cycle: &[usize]) -> Fail {
        let id = cycle
            .iter()
            .copied()
            .find(|&id| self.origin(id) == Some(Origin::Repetition))
            .or_else(|| cycle.first().copied())
            .unwrap_or(0);
        Fail::new(
            self.pos(id),
            format!(
                "the repeated item can match the empty string, which makes rule \"{}\" \
                 left-recursive for llama.cpp",
                self.name(id)
            ),
        )
    }

    /// llama.cpp checks left recursion recursively and without memory: bound
    /// its depth and its total work.
    fn check_llama_cost(&self, edges: &Graph) -> Result<(), Fail> {
        let order = postorder(edges, self.n);
        let mut work = vec![0u64; self.n];
        let mut depth = vec![0u64; self.n];
        for &id in &order {
            let mut w = self.elems(id).len() as u64;
            let mut d = 0u64;
            for edge in edges.edges(id) {
                let target = edges.target(edge);
                w = w.saturating_add(work.get(target).copied().unwrap_or(0));
                d = d.max(depth.get(target).copied().unwrap_or(0));
            }
            if let (Some(wi), Some(di)) = (work.get_mut(id), depth.get_mut(id)) {
                *wi = w;
                *di = d + 1;
            }
        }
        if let Some((id, &deepest)) = depth.iter().enumerate().max_by_key(|&(_, d)| *d) {
            if deepest > MAX_LEFT_CHAIN {
                return Err(Fail::new(
                    self.pos(id),
                    format!(
                        "rule \"{}\" starts a chain of {deepest} rules that each begin with the \
                         next one; llama.cpp follows such chains recursively (limit {MAX_LEFT_CHAIN})",
                        self.name(id)
                    ),
                ));
            }
        }
        let total = outer_loop_work(edges, &work, self.n);
        if total > MAX_LEFT_RECURSION_WORK {
            return Err(Fail::new(
                0,
                format!(
                    "llama.cpp's left-recursion check would take about {total} steps on this \
                     grammar (limit {MAX_LEFT_RECURSION_WORK}); define rules top-down, starting \
                     with root, or avoid repeating optional rules"
                ),
            ));
        }
        Ok(())
    }
}

/// A cycle of names joined by arrows, elided in the middle when long.
fn cycle_text(names: &[&str]) -> String {
    const KEEP: usize = 8;
    if names.len() <= KEEP {
        return names.join(" -> ");
    }
    let head = names.get(..KEEP - 2).unwrap_or_default().join(" -> ");
    let tail = names
        .get(names.len() - 2..)
        .unwrap_or_default()
        .join(" -> ");
    format!("{head} -> ... {} more ... -> {tail}", names.len() - KEEP)
}

#[cfg(test)]
mod tests {
    use crate::grammar::check::tests::{chain, expect_message, short, timed};

    #[test]
    fn hostile_long_chains() {
        let n = 90_000;
        let text = chain(n, |a, b| format!("{a}::=.{b}\n")) + &format!("{}::=.", short(n));
        assert!(timed("90k-rule right chain", &text).is_ok());

        let n = 100_000;
        let text = chain(n, |a, b| format!("{a}::={b}\n")) + &format!("{}::=.", short(n));
        expect_message(
            timed("100k-rule left chain", &text),
            "starts a chain of 100002 rules",
        );

        let text =
            chain(n, |a, b| format!("{a}::={b}\n")) + &format!("{}::={}", short(n), short(0));
        expect_message(
            timed("100k-rule left cycle", &text),
            "is left-recursive (aaa -> aab -> aac -> aad -> aae -> aaf -> ... 99994 more ... -> Aa4 -> aaa)",
        );

        let mut text = format!("{}::=.\n", short(n));
        for i in (0..n).rev() {
            text.push_str(&format!("{}::={}\n", short(i), short(i + 1)));
        }
        text.push_str(&format!("root::={}", short(0)));
        expect_message(
            timed("100k-rule left chain, bottom-up", &text),
            "starts a chain",
        );

        let n = 20_000;
        let text = chain(n, |a, b| {
            format!("{a}::=c{a} {b} \"x\"|.\nc{a}::=d{a}\nd{a}::=|.\n")
        }) + &format!("{}::={}", short(n), short(0));
        expect_message(
            timed("20k-level hidden left cycle", &text),
            "is left-recursive",
        );
    }

    #[test]
    fn hostile_left_recursion_check_cost() {
        // Each level starts with two copies of the next, which may be empty:
        // llama.cpp's check takes 2^depth steps.
        let mut text = String::from("root ::= n0\n");
        for i in 0..40 {
            text.push_str(&format!("n{i} ::= | n{} n{}\n", i + 1, i + 1));
        }
        text.push_str("n40 ::= \"x\"\n");
        expect_message(
            timed("exponential left-recursion check", &text),
            "left-recursion check would take",
        );
        // A bottom-up chain: llama.cpp restarts its check at every rule.
        let n = 4_900;
        let mut text = String::from("r0 ::= \"y\" \"y\" \"y\" \"y\" \"y\" \"y\" \"y\" \"y\"\n");
        for i in 1..n {
            text.push_str(&format!(
                "r{i} ::= r{} \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\"\n",
                i - 1
            ));
        }
        text.push_str(&format!("root ::= r{}\n", n - 1));
        expect_message(
            timed("quadratic left-recursion check", &text),
            "left-recursion check would take",
        );
    }
}
