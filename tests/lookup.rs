//! Prompt lookup changes no decision: with every generated token evaluated
//! one at a time (`forced_one_by_one`: the kernels of a single decode step,
//! so the logits a token is picked from are the same with and without
//! lookup), a generation with lookup writes exactly what one without it
//! writes: the same text, the same number of tokens, the same finish,
//! greedy and at temperature > 0 with the same seed. The judge is the same
//! model without lookup.
//!
//! At temperature > 0 that equality is what the acceptance rule must give.
//! A proposed token is kept when the seeded draw from the model's
//! distribution at its place picks it (for a proposal that is one token,
//! not a distribution, this is the speculative-sampling rule: kept with
//! probability p(token), else a draw from the rest renormalised), and every
//! draw is the one the generation without lookup makes at that place. A
//! version that kept a proposed token because it is likely (the greedy
//! choice, or above a threshold) or that spent extra draws on the check
//! would write other text for some seed here.
#![cfg(feature = "engine")]

use serde_json::json;

use crate::common;

use infer::backend::params::{Constraint, LookupParams};
use infer::backend::Backend;
use infer::engine::{GenerateParams, Generation, LoadParams, Message, Model, Role};
use infer::schema;

/// Texts to extract from, and what to extract (copy-heavy: names,
/// addresses, amounts and dates come back as they are).
fn extractions() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "Maria Fernanda Oliveira is 31 years old and lives at Rua das Flores 45, 1200-195 Lisbon, Portugal.",
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "street": {"type": "string"}, "city": {"type": "string"}, "country": {"type": "string"}}, "required": ["name", "age", "street", "city", "country"]}),
        ),
        (
            "Invoice INV-2024-0117 from Acme Office Supplies GmbH, Hauptstrasse 12, 10115 Berlin. 2 x Ergonomic office chair at 249.00 EUR; 1 x Standing desk frame at 389.50 EUR. Total: 887.50 EUR.",
            json!({"type": "object", "properties": {"number": {"type": "string"}, "seller": {"type": "string"}, "items": {"type": "array", "items": {"type": "object", "properties": {"quantity": {"type": "integer"}, "description": {"type": "string"}, "price": {"type": "number"}}, "required": ["quantity", "description", "price"]}, "maxItems": 3}, "total": {"type": "number"}}, "required": ["number", "seller", "items", "total"]}),
        ),
        (
            "Meeting notes, 2025-02-11: Jonathan Pemberton-Smith agreed to send the signed contract for the Riverside Logistics Centre project to Ana Beatriz Carvalho by Friday.",
            json!({"type": "object", "properties": {"date": {"type": "string"}, "from": {"type": "string"}, "to": {"type": "string"}, "project": {"type": "string"}}, "required": ["date", "from", "to", "project"]}),
        ),
    ]
}

fn prompt(text: &str) -> [Message; 2] {
    [
        Message::new(
            Role::System,
            "Extract the fields from the user's text as JSON. Copy names, addresses and amounts exactly.",
        ),
        Message::new(Role::User, text),
    ]
}

/// Lookup that proposes often and long, so that most of its paths run:
/// one-token n-grams, long proposals cut by the grammar and the limits.
const EAGER: LookupParams = LookupParams {
    ngram_min: 1,
    ngram_max: 3,
    tokens: 10,
    adaptive: false,
};

fn generate(model: &Model, messages: &[Message], params: &GenerateParams) -> Generation {
    model.chat(messages, params).expect("generate")
}

/// The generations without lookup and with it, tokens evaluated one by one.
fn off_and_on(
    model: &Model,
    messages: &[Message],
    base: &GenerateParams,
) -> (Generation, Generation) {
    let params = |lookup| GenerateParams {
        lookup,
        forced_one_by_one: true,
        cache_prompt: false,
        ..base.clone()
    };
    (
        generate(model, messages, &params(None)),
        generate(model, messages, &params(Some(EAGER))),
    )
}

fn assert_same(off: &Generation, on: &Generation, what: &str) {
    assert_eq!(off.text, on.text, "{what}");
    assert_eq!(off.finish, on.finish, "{what}");
    assert_eq!(off.tokens_generated, on.tokens_generated, "{what}");
    assert_eq!(
        off.timings.forced_tokens, on.timings.forced_tokens,
        "{what}"
    );
    assert_eq!(
        off.timings.lookup_proposed, 0,
        "{what}: nothing proposed when off"
    );
}

/// Greedy, under each schema and as free text, on `model`; returns the
/// proposed tokens kept over all runs.
fn greedy_equal(model: &Model, name: &str) -> u32 {
    let mut accepted = 0;
    for (text, schema_value) in extractions() {
        let gbnf = schema::compile(&schema_value).expect("converts").gbnf;
        for constraint in [Some(Constraint::Grammar(gbnf)), None] {
            let free = constraint.is_none();
            let base = GenerateParams {
                max_tokens: 96,
                n_ctx: 1024,
                constraint,
                ..GenerateParams::default()
            };
            let (off, on) = off_and_on(model, &prompt(text), &base);
            assert_same(&off, &on, &format!("{name}, free {free}: {text}"));
            assert!(on.timings.steps < off.timings.steps || on.timings.lookup_accepted == 0);
            accepted += on.timings.lookup_accepted;
        }
    }
    accepted
}

#[test]
fn greedy_outputs_with_lookup_equal_those_without_smollm2() {
    let model = Model::load(&common::model_path(), &LoadParams::default()).expect("load");
    let accepted = greedy_equal(&model, "SmolLM2");
    // The comparison must have kept proposals to mean anything.
    assert!(accepted >= 20, "only {accepted} proposed tokens kept");
}

#[test]
fn greedy_outputs_with_lookup_equal_those_without_qwen() {
    let model = Model::load(&common::qwen_path(), &LoadParams::default()).expect("load");
    let accepted = greedy_equal(&model, "Qwen");
    assert!(accepted >= 20, "only {accepted} proposed tokens kept");
}

#[test]
fn greedy_outputs_with_lookup_equal_those_without_gemma() {
    let model = Model::load(&common::gemma_path(), &LoadParams::default()).expect("load");
    let accepted = greedy_equal(&model, "Gemma 3");
    assert!(accepted >= 20, "only {accepted} proposed tokens kept");
}

#[test]
fn sampled_outputs_with_lookup_equal_those_without_for_the_same_seed() {
    let model = Model::load(&common::model_path(), &LoadParams::default()).expect("load");
    let (text, schema_value) = &extractions()[0];
    let gbnf = schema::compile(schema_value).expect("converts").gbnf;
    let mut accepted = 0;
    let mut rejected = 0;
    for seed in 1..=12 {
        for constraint in [Some(Constraint::Grammar(gbnf.clone())), None] {
            let base = GenerateParams {
                max_tokens: 64,
                n_ctx: 1024,
                temperature: 0.9,
                seed,
                constraint,
                ..GenerateParams::default()
            };
            let (off, on) = off_and_on(&model, &prompt(text), &base);
            assert_same(&off, &on, &format!("seed {seed}"));
            accepted += on.timings.lookup_accepted;
            rejected += on.timings.lookup_proposed - on.timings.lookup_accepted;
        }
    }
    // Both sides of the rule ran: proposals kept by the draw, and refused.
    assert!(
        accepted >= 20 && rejected >= 20,
        "kept {accepted}, refused {rejected}"
    );
}
