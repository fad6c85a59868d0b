//! The graph of left edges between rules and the (iterative) graph
//! algorithms run on it: cycles, strongly connected components, orders.

use super::elements::to_u32;
use super::UNSET;

/// Left edges: for each rule, the rules referenced at the start of its
/// alternatives (past rules that may match empty), with whether the
/// reference ends its alternative.
pub(super) struct Graph {
    pub(super) offsets: Vec<u32>,
    pub(super) targets: Vec<u32>,
    pub(super) tails: Vec<bool>,
}

impl Graph {
    pub(super) fn edges(&self, node: usize) -> std::ops::Range<usize> {
        let start = self.offsets.get(node).copied().unwrap_or(0) as usize;
        let end = self.offsets.get(node + 1).copied().unwrap_or(0) as usize;
        start..end.max(start)
    }

    pub(super) fn target(&self, edge: usize) -> usize {
        self.targets.get(edge).copied().unwrap_or(0) as usize
    }
}

/// Any cycle, as the list of its nodes.
pub(super) fn find_cycle(graph: &Graph, n: usize) -> Option<Vec<usize>> {
    const WHITE: u8 = 0;
    const GRAY: u8 = 1;
    const BLACK: u8 = 2;
    let mut color = vec![WHITE; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if color.get(start) != Some(&WHITE) {
            continue;
        }
        color[start] = GRAY;
        stack.push((start, graph.edges(start).start));
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next >= graph.edges(node).end {
                color[node] = BLACK;
                stack.pop();
                continue;
            }
            let target = graph.target(*next);
            *next += 1;
            match color.get(target).copied() {
                Some(WHITE) => {
                    color[target] = GRAY;
                    stack.push((target, graph.edges(target).start));
                }
                Some(GRAY) => {
                    let from = stack.iter().rposition(|&(id, _)| id == target).unwrap_or(0);
                    return Some(
                        stack
                            .get(from..)
                            .unwrap_or_default()
                            .iter()
                            .map(|&(id, _)| id)
                            .collect(),
                    );
                }
                _ => {}
            }
        }
    }
    None
}

/// A cycle through an edge whose reference does not end its alternative: in
/// llama.cpp's stack machine each turn of such a cycle pushes the rest of
/// the alternative, so the stack grows without end. (Cycles made only of
/// alternative-ending references revisit the same stack and terminate.)
pub(super) fn growing_cycle(
    graph: &Graph,
    component: &[u32],
    reachable: &[bool],
) -> Option<Vec<usize>> {
    let comp = |id: usize| component.get(id).copied().unwrap_or(UNSET);
    let n = component.len();
    for node in (0..n).filter(|&id| reachable.get(id).copied().unwrap_or(false)) {
        for edge in graph.edges(node) {
            let target = graph.target(edge);
            let tail = graph.tails.get(edge).copied().unwrap_or(true);
            if !tail && comp(node) == comp(target) {
                return Some(path_within(graph, target, node, component));
            }
        }
    }
    None
}

/// Nodes on a shortest path from `from` to `to` staying inside their
/// component, starting with `to` (so that `to -> from -> ... -> to` is the
/// cycle).
fn path_within(graph: &Graph, from: usize, to: usize, component: &[u32]) -> Vec<usize> {
    if from == to {
        return vec![to];
    }
    let comp = component.get(from).copied();
    let mut parent = vec![UNSET; component.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    if let Some(p) = parent.get_mut(from) {
        *p = to_u32(from);
    }
    while let Some(node) = queue.pop_front() {
        if node == to {
            break;
        }
        for edge in graph.edges(node) {
            let target = graph.target(edge);
            if component.get(target).copied() != comp {
                continue;
            }
            if let Some(p) = parent.get_mut(target) {
                if *p == UNSET {
                    *p = to_u32(node);
                    queue.push_back(target);
                }
            }
        }
    }
    let mut path = Vec::new();
    let mut node = to;
    while node != from && path.len() <= component.len() {
        path.push(node);
        node = parent.get(node).copied().unwrap_or(UNSET) as usize;
    }
    path.push(from);
    path.reverse();
    path.rotate_right(1);
    path
}

/// Tarjan's strongly connected components, iteratively. Returns each node's
/// component number.
pub(super) fn strongly_connected(graph: &Graph, n: usize) -> Vec<u32> {
    let mut t = Tarjan {
        index: vec![UNSET; n],
        low: vec![0u32; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        calls: Vec::new(),
        counter: 0,
    };
    let mut component = vec![UNSET; n];
    let mut components = 0u32;
    for root in 0..n {
        if t.index[root] != UNSET {
            continue;
        }
        t.enter(graph, root);
        while let Some(&mut (node, ref mut next)) = t.calls.last_mut() {
            if *next < graph.edges(node).end {
                let target = graph.target(*next);
                *next += 1;
                if t.index[target] == UNSET {
                    t.enter(graph, target);
                } else if t.on_stack[target] {
                    t.low[node] = t.low[node].min(t.index[target]);
                }
                continue;
            }
            t.calls.pop();
            if let Some(&(parent, _)) = t.calls.last() {
                t.low[parent] = t.low[parent].min(t.low[node]);
            }
            if t.low[node] == t.index[node] {
                while let Some(member) = t.stack.pop() {
                    t.on_stack[member] = false;
                    component[member] = components;
                    if member == node {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    component
}

/// The state of [`strongly_connected`]'s search.
struct Tarjan {
    /// Each node's number in visit order (`UNSET`: not visited yet).
    index: Vec<u32>,
    /// The least number reachable from each node's subtree.
    low: Vec<u32>,
    /// Whether each node is on `stack`.
    on_stack: Vec<bool>,
    /// The visited nodes whose component is not known yet.
    stack: Vec<usize>,
    /// The nodes being visited, each with its next edge to follow (the
    /// recursion of the textbook version, kept off the thread's stack).
    calls: Vec<(usize, usize)>,
    /// The number the next node visited gets.
    counter: u32,
}

impl Tarjan {
    /// Visit `node`: number it and start on its edges (the same for a root
    /// and for a node reached by an edge).
    fn enter(&mut self, graph: &Graph, node: usize) {
        self.index[node] = self.counter;
        self.low[node] = self.counter;
        self.counter += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
        self.calls.push((node, graph.edges(node).start));
    }
}

/// Nodes of an acyclic graph, each after all its successors.
pub(super) fn postorder(graph: &Graph, n: usize) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push((start, graph.edges(start).start));
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next < graph.edges(node).end {
                let target = graph.target(*next);
                *next += 1;
                if let Some(flag) = seen.get_mut(target) {
                    if !*flag {
                        *flag = true;
                        stack.push((target, graph.edges(target).start));
                    }
                }
            } else {
                order.push(node);
                stack.pop();
            }
        }
    }
    order
}

/// llama.cpp runs its (memoryless) check from every rule not yet visited, in
/// id order; a run visits everything reachable from its start.
pub(super) fn outer_loop_work(graph: &Graph, work: &[u64], n: usize) -> u64 {
    let mut visited = vec![false; n];
    let mut total = 0u64;
    let mut todo: Vec<usize> = Vec::new();
    for start in 0..n {
        if visited[start] {
            continue;
        }
        total = total.saturating_add(work.get(start).copied().unwrap_or(0));
        visited[start] = true;
        todo.push(start);
        while let Some(node) = todo.pop() {
            for edge in graph.edges(node) {
                let target = graph.target(edge);
                if let Some(flag) = visited.get_mut(target) {
                    if !*flag {
                        *flag = true;
                        todo.push(target);
                    }
                }
            }
        }
    }
    total
}
