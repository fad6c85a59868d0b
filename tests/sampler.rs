//! The lazy grammar check picks exactly what masking the whole vocabulary
//! first would pick (greedy), and never a token the grammar refuses
//! (sampling). Driven with synthetic logits, so every path is exercised.
#![cfg(feature = "engine")]

use crate::common;

use infer::backend::params::GenerateParams;
use std::sync::Arc;

use infer::engine::decode::sampler::{GrammarSampler, Sampler};
use infer::engine::decode::think::Phase;
use infer::grammar::CheckedGbnf;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

/// A small deterministic generator (xorshift), for logits.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Random logits where the tokens the grammar allows are boosted by `boost`
/// with probability `favour`, so that they sometimes rank first, sometimes in
/// the shortlist and sometimes far below.
fn logits(rng: &mut Rng, allowed: &[bool], boost: f32, favour: f32) -> Vec<f32> {
    allowed
        .iter()
        .map(|&ok| {
            let base = rng.next() * 10.0;
            if ok && rng.next() < favour {
                base + boost
            } else {
                base
            }
        })
        .collect()
}

/// The tokens `grammar` allows next.
fn allowed_mask(grammar: &mut GrammarSampler, n_vocab: usize) -> Vec<bool> {
    let mut all = LlamaTokenDataArray::new(
        (0..n_vocab)
            .map(|i| LlamaTokenData::new(LlamaToken(i as i32), 0.0, 0.0))
            .collect(),
        false,
    );
    grammar.apply(&mut all);
    all.data.iter().map(|t| t.logit().is_finite()).collect()
}

/// The best allowed token, by masking everything first.
fn reference_pick(logits: &[f32], allowed: &[bool]) -> Option<LlamaToken> {
    logits
        .iter()
        .enumerate()
        .filter(|(i, _)| allowed[*i])
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| LlamaToken(i as i32))
}

/// The most tokens one run samples.
const MAX_STEPS: usize = 24;

/// What one run did.
struct Run {
    /// How often the grammar refused the first pick, and how often the
    /// shortlist held nothing allowed either.
    refused: u32,
    wide_shortlists: u32,
    full_masks: u32,
    /// The tokens sampled, the end-of-generation token included.
    tokens: Vec<LlamaToken>,
}

impl Run {
    fn steps(&self) -> usize {
        self.tokens.len()
    }
}

/// Sample up to [`MAX_STEPS`] tokens under `gbnf` from synthetic logits,
/// checking every token against the grammar's full mask. A run ends at the
/// step limit or with an end-of-generation token (which the grammar allows
/// only once it is complete); anything else fails.
fn run(model: &Arc<LlamaModel>, gbnf: &str, params: &GenerateParams, seed: u64) -> Run {
    let n_vocab = model.n_vocab() as usize;
    let gbnf = CheckedGbnf::new(gbnf).expect("grammar passes the checker");
    let grammar = GrammarSampler::parse(model, &gbnf).expect("grammar loads");
    let mut reference = grammar.clone();
    let mut sampler = Sampler::new(model, params, Some(grammar));
    let mut rng = Rng(seed);
    let mut tokens = Vec::new();
    for step in 0..MAX_STEPS {
        let allowed = allowed_mask(&mut reference, n_vocab);
        assert!(
            allowed.iter().any(|&a| a),
            "step {step}: the grammar allows no token (not even end of generation)"
        );
        // Alternate: allowed tokens usually on top, sometimes mid-ranked, sometimes buried.
        let (boost, favour) = [(12.0, 1.0), (8.5, 0.02), (0.0, 0.0)][step % 3];
        let l = logits(&mut rng, &allowed, boost, favour);
        let token = sampler.sample(&l, Phase::Constrained).expect("a token");
        assert!(
            allowed[token.0 as usize],
            "step {step}: token {token:?} is not allowed"
        );
        if params.is_greedy() && params.repeat_penalty == 1.0 {
            assert_eq!(Some(token), reference_pick(&l, &allowed), "step {step}");
        }
        reference
            .accept(token)
            .expect("the reference accepts the pick");
        tokens.push(token);
        if model.vocab().is_eog(token) {
            break;
        }
    }
    assert!(
        tokens.len() == MAX_STEPS || tokens.last().is_some_and(|&t| model.vocab().is_eog(t)),
        "the run stopped after {} tokens without ending the generation",
        tokens.len()
    );
    Run {
        refused: sampler.refused,
        wide_shortlists: sampler.wide_shortlists,
        full_masks: sampler.full_masks,
        tokens,
    }
}

const GRAMMARS: &[&str] = &[
    r#"root ::= "{" "\"n\": " [0-9]{1,6} ", \"s\": \"" [a-z ]{0,40} "\"}""#,
    r#"root ::= ("yes" | "no" | "maybe") ("." | "!")"#,
    r#"root ::= [^"\\]{3,30}"#,
];

#[test]
fn greedy_picks_the_best_allowed_token_on_every_path() {
    let probe = common::probe();
    let model = probe.model();
    let (mut refused, mut wide, mut full, mut steps) = (0, 0, 0, 0);
    for gbnf in GRAMMARS {
        for seed in 1..=6 {
            let r = run(model, gbnf, &GenerateParams::default(), seed);
            refused += r.refused;
            wide += r.wide_shortlists;
            full += r.full_masks;
            steps += r.steps();
        }
    }
    assert!(steps > 100, "only {steps} steps ran");
    // Every path ran and picked (each pick checked against the full mask in
    // `run`): the first pick refused and the shortlist's pick taken
    // (refused > wide), the wide shortlist's pick taken (wide > full), and
    // the full mask (full > 0).
    assert!(
        refused > wide && wide > full && full > 0,
        "refused {refused}, wide shortlists {wide}, full masks {full}"
    );
}

#[test]
fn sampling_never_emits_a_refused_token() {
    let probe = common::probe();
    let model = probe.model();
    let (mut refused, mut steps, mut runs) = (0, 0, 0);
    for (top_k, seed) in [(40, 1u32), (0, 2), (5, 3)] {
        let params = GenerateParams {
            temperature: 1.0,
            top_k,
            top_p: if top_k == 0 { 1.0 } else { 0.95 },
            min_p: if top_k == 0 { 0.0 } else { 0.05 },
            seed,
            ..GenerateParams::default()
        };
        for (i, gbnf) in GRAMMARS.iter().enumerate() {
            let r = run(model, gbnf, &params, 100 + i as u64);
            // At least one token of the grammar, then its end or the limit.
            assert!(
                r.steps() >= 2,
                "top_k {top_k}, grammar {i}: {} steps",
                r.steps()
            );
            refused += r.refused;
            steps += r.steps();
            runs += 1;
        }
    }
    assert_eq!(runs, 9);
    assert!(steps > 50, "only {steps} tokens sampled in {runs} runs");
    // Sampled tokens were refused and drawn again: the checked path ran.
    assert!(refused > 0, "the grammar never refused a sampled token");
}

#[test]
fn repeat_penalty_with_a_grammar_stays_inside_it() {
    let probe = common::probe();
    let model = probe.model();
    let params = GenerateParams {
        repeat_penalty: 1.5,
        ..GenerateParams::default()
    };
    let mut changed = 0;
    let mut steps = 0;
    for (i, gbnf) in GRAMMARS.iter().enumerate() {
        for seed in 50..53 {
            let penalised = run(model, gbnf, &params, seed + 10 * i as u64);
            let plain = run(
                model,
                gbnf,
                &GenerateParams::default(),
                seed + 10 * i as u64,
            );
            assert!(
                penalised.steps() >= 2,
                "grammar {i}: {} steps",
                penalised.steps()
            );
            steps += penalised.steps();
            changed += usize::from(penalised.tokens != plain.tokens);
        }
    }
    assert!(steps > 50, "only {steps} tokens sampled");
    // The penalty was applied: on the same logits it picked other tokens.
    assert!(changed > 0, "the repeat penalty never changed a pick");
}
