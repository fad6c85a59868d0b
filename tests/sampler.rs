//! The lazy grammar check picks exactly what masking the whole vocabulary
//! first would pick (greedy), and never a token the grammar refuses
//! (sampling). Driven with synthetic logits, so every path is exercised.
#![cfg(feature = "engine")]

use crate::common;

use infer::backend::params::GenerateParams;
use infer::backend::sampling::{BiasTarget, Dry, LogitBias, Mirostat, Sampling};
use std::sync::Arc;

use infer::engine::decode::sampler::{Biases, GrammarSampler, Sampler};
use infer::engine::decode::think::Phase;
use infer::grammar::CheckedGbnf;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
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
    let biases = Biases::of(model, &params.sampling).expect("biases resolve");
    let mut sampler = Sampler::new(model, params, Some(grammar), &biases, &[]);
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
        if params.is_greedy() && params.sampling.greedy_is_argmax() {
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
            sampling: Sampling {
                top_k,
                top_p: if top_k == 0 { 1.0 } else { 0.95 },
                min_p: if top_k == 0 { 0.0 } else { 0.05 },
                ..Sampling::default()
            },
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
        sampling: Sampling {
            repeat_penalty: 1.5,
            ..Sampling::default()
        },
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

/// llama-server's common sampler, written out from llama.cpp's
/// `common_sampler_init` and `common_sampler_sample` (common/sampling.cpp)
/// with the plainest calls: the whole chain in its order, every sampler
/// included, applied to all candidates; when the grammar refuses the pick,
/// the grammar's mask on all candidates and the chain again.
struct Reference {
    chain: LlamaSampler,
    grammar: GrammarSampler,
}

impl Reference {
    fn new(model: &LlamaModel, params: &GenerateParams, grammar: GrammarSampler) -> Self {
        let s = &params.sampling;
        let n_vocab = model.n_vocab();
        let mut list = Vec::new();
        let biases: Vec<LlamaLogitBias> = s
            .logit_bias
            .iter()
            .map(|b| match b.target {
                BiasTarget::Token(id) => LlamaLogitBias::new(LlamaToken(id), b.bias),
                BiasTarget::Text(_) => unreachable!("the test biases ids"),
            })
            .collect();
        if !biases.is_empty() {
            list.push(LlamaSampler::logit_bias(n_vocab, &biases));
        }
        let keep = s.min_keep as usize;
        match s.mirostat {
            Mirostat::Off => {
                list.push(LlamaSampler::penalties(
                    n_vocab,
                    s.repeat_last_n as i32,
                    s.repeat_penalty,
                    s.frequency_penalty,
                    s.presence_penalty,
                ));
                list.push(LlamaSampler::dry(
                    model,
                    s.dry.multiplier,
                    s.dry.base,
                    s.dry.allowed_length as i32,
                    s.dry.penalty_last_n as i32,
                    s.dry.sequence_breakers.iter().map(String::as_bytes),
                ));
                list.push(LlamaSampler::top_n_sigma(s.top_n_sigma));
                list.push(LlamaSampler::top_k(s.top_k));
                list.push(LlamaSampler::typical(s.typical_p, keep));
                list.push(LlamaSampler::top_p(s.top_p, keep));
                list.push(LlamaSampler::min_p(s.min_p, keep));
                list.push(LlamaSampler::xtc(
                    s.xtc_probability,
                    s.xtc_threshold,
                    keep,
                    params.seed,
                ));
                list.push(LlamaSampler::temp_ext(
                    params.temperature,
                    s.dynatemp_range,
                    s.dynatemp_exponent,
                ));
                list.push(LlamaSampler::dist(params.seed));
            }
            Mirostat::V1 { tau, eta } => {
                list.push(LlamaSampler::temp(params.temperature));
                list.push(LlamaSampler::mirostat(n_vocab, params.seed, tau, eta, 100));
            }
            Mirostat::V2 { tau, eta } => {
                list.push(LlamaSampler::temp(params.temperature));
                list.push(LlamaSampler::mirostat_v2(params.seed, tau, eta));
            }
        }
        Self {
            chain: LlamaSampler::chain_simple(list),
            grammar,
        }
    }

    fn all(logits: &[f32]) -> LlamaTokenDataArray {
        LlamaTokenDataArray::new(
            logits
                .iter()
                .enumerate()
                .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0))
                .collect(),
            false,
        )
    }

    fn sample(&mut self, logits: &[f32]) -> LlamaToken {
        let mut cur = Self::all(logits);
        self.chain.apply(&mut cur);
        let mut id = cur.selected_token().expect("a pick");
        if !self.grammar.allows(id) {
            let mut cur = Self::all(logits);
            self.grammar.apply(&mut cur);
            self.chain.apply(&mut cur);
            id = cur.selected_token().expect("a pick");
        }
        self.grammar.accept(id).expect("the grammar takes it");
        self.chain.accept(id);
        id
    }
}

/// The engine's sampler picks what llama-server's would, token for token,
/// for every sampler on its own and in combination, greedy and drawing,
/// with the prompt's tokens counted by the penalties: the cheap paths
/// (argmax, the shortlist) and the chain built once must give the
/// reference's picks on logits where the grammar refuses the first pick a
/// third of the time.
#[test]
fn the_chain_picks_what_llama_servers_common_sampler_picks() {
    let probe = common::probe();
    let model = probe.model();
    let n_vocab = model.n_vocab() as usize;
    let base = Sampling::default();
    let settings: Vec<(&str, f32, Sampling)> = vec![
        ("defaults", 0.0, base.clone()),
        ("defaults", 0.9, base.clone()),
        (
            "penalties",
            0.0,
            Sampling {
                repeat_penalty: 1.3,
                presence_penalty: 0.6,
                frequency_penalty: 0.4,
                ..base.clone()
            },
        ),
        (
            "penalties",
            1.0,
            Sampling {
                repeat_penalty: 1.3,
                presence_penalty: 0.6,
                frequency_penalty: 0.4,
                repeat_last_n: 16,
                ..base.clone()
            },
        ),
        (
            "dry",
            0.0,
            Sampling {
                dry: Dry {
                    multiplier: 0.8,
                    ..Dry::default()
                },
                ..base.clone()
            },
        ),
        (
            "dry",
            1.0,
            Sampling {
                dry: Dry {
                    multiplier: 0.8,
                    allowed_length: 1,
                    ..Dry::default()
                },
                ..base.clone()
            },
        ),
        (
            "typical",
            0.0,
            Sampling {
                typical_p: 0.5,
                ..base.clone()
            },
        ),
        (
            "typical",
            1.0,
            Sampling {
                typical_p: 0.7,
                ..base.clone()
            },
        ),
        (
            "xtc",
            0.0,
            Sampling {
                xtc_probability: 0.9,
                xtc_threshold: 0.05,
                ..base.clone()
            },
        ),
        (
            "xtc",
            1.0,
            Sampling {
                xtc_probability: 0.5,
                xtc_threshold: 0.1,
                ..base.clone()
            },
        ),
        (
            "top_n_sigma",
            1.0,
            Sampling {
                top_n_sigma: 1.0,
                ..base.clone()
            },
        ),
        (
            "dynatemp",
            1.0,
            Sampling {
                dynatemp_range: 0.5,
                dynatemp_exponent: 1.5,
                ..base.clone()
            },
        ),
        (
            "min_keep",
            1.0,
            Sampling {
                top_p: 0.2,
                min_keep: 5,
                ..base.clone()
            },
        ),
        (
            "mirostat 1",
            1.0,
            Sampling {
                mirostat: Mirostat::V1 { tau: 3.0, eta: 0.2 },
                ..base.clone()
            },
        ),
        (
            "mirostat 2",
            0.8,
            Sampling {
                mirostat: Mirostat::V2 { tau: 4.0, eta: 0.1 },
                ..base.clone()
            },
        ),
        (
            "bias",
            0.0,
            Sampling {
                logit_bias: vec![
                    LogitBias {
                        target: BiasTarget::Token(120),
                        bias: 30.0,
                    },
                    LogitBias {
                        target: BiasTarget::Token(64),
                        bias: f32::NEG_INFINITY,
                    },
                ],
                ..base.clone()
            },
        ),
        (
            "bias",
            1.0,
            Sampling {
                logit_bias: vec![LogitBias {
                    target: BiasTarget::Token(120),
                    bias: 5.0,
                }],
                ..base.clone()
            },
        ),
        (
            "everything",
            0.7,
            Sampling {
                repeat_penalty: 1.1,
                presence_penalty: 0.2,
                typical_p: 0.9,
                xtc_probability: 0.3,
                top_n_sigma: 2.0,
                dry: Dry {
                    multiplier: 0.5,
                    ..Dry::default()
                },
                logit_bias: vec![LogitBias {
                    target: BiasTarget::Token(99),
                    bias: 2.0,
                }],
                ..base.clone()
            },
        ),
    ];
    let prompt: Vec<LlamaToken> = (0..40).map(|i| LlamaToken(32 + (i * 7) % 90)).collect();
    let mut compared = 0;
    for (name, temperature, sampling) in settings {
        for (g, gbnf) in GRAMMARS.iter().enumerate() {
            for seed in [3u32, 4] {
                let params = GenerateParams {
                    temperature,
                    seed,
                    sampling: sampling.clone(),
                    ..GenerateParams::default()
                };
                let checked = CheckedGbnf::new(*gbnf).expect("grammar passes the checker");
                let grammar = GrammarSampler::parse(model, &checked).expect("grammar loads");
                let mut mask = grammar.clone();
                let mut reference = Reference::new(model, &params, grammar.clone());
                for &t in &prompt {
                    reference.chain.accept(t);
                }
                let biases = Biases::of(model, &params.sampling).expect("biases resolve");
                let mut sampler = Sampler::new(model, &params, Some(grammar), &biases, &prompt);
                let mut rng = Rng(u64::from(seed) * 31 + g as u64);
                for step in 0..MAX_STEPS {
                    let allowed = allowed_mask(&mut mask, n_vocab);
                    let (boost, favour) = [(12.0, 1.0), (8.5, 0.02), (0.0, 0.0)][step % 3];
                    let l = logits(&mut rng, &allowed, boost, favour);
                    let want = reference.sample(&l);
                    let got = sampler.sample(&l, Phase::Constrained).expect("a token");
                    assert_eq!(got, want, "{name} at temperature {temperature}, grammar {g}, seed {seed}, step {step}");
                    mask.accept(got).expect("allowed");
                    compared += 1;
                    if model.vocab().is_eog(got) {
                        break;
                    }
                }
            }
        }
    }
    assert!(compared > 1000, "only {compared} picks compared");
}
