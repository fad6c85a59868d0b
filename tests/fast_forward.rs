//! Fast-forward decoding changes no decision of its own: greedy, with the
//! forced tokens evaluated one at a time (`forced_one_by_one`: the same
//! kernels as sampled tokens, so the same logits), a generation with it on
//! writes exactly what one without it writes whenever the model's own greedy
//! choice through each forced run is the tokenizer's split of it. Where the
//! model splits a forced run otherwise, the two part at that forced token
//! and are not compared (that is fast-forward's nature: it writes the
//! canonical split). The judge is the same model without fast-forward.
#![cfg(feature = "engine")]

use serde_json::{json, Value};

use crate::common;

use infer::backend::params::Constraint;
use infer::backend::Backend;
use infer::engine::{FinishReason, GenerateParams, Generation, LoadParams, Message, Model, Role};
use infer::grammar::CheckedGbnf;
use infer::schema;

fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "person",
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}),
        ),
        (
            "city",
            json!({"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "country": {"type": "string", "maxLength": 20}}, "required": ["city", "country"]}),
        ),
        (
            "status",
            json!({"type": "object", "properties": {"status": {"enum": ["active", "inactive", "suspended"]}, "id": {"type": "integer"}}, "required": ["status", "id"]}),
        ),
        (
            "flag",
            json!({"type": "object", "properties": {"enabled": {"type": "boolean"}, "count": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["enabled", "count"]}),
        ),
        (
            "tags",
            json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}}, "required": ["tags"]}),
        ),
        (
            "address",
            json!({"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["street", "zip"]}),
        ),
        (
            "order",
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string", "maxLength": 8}, "qty": {"type": "integer"}}, "required": ["sku", "qty"]}, "maxItems": 2}}, "required": ["items"]}),
        ),
        ("color", json!({"enum": ["red", "green", "blue", "yellow"]})),
        (
            "point",
            json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}),
        ),
        (
            "event",
            json!({"type": "object", "properties": {"title": {"type": "string", "maxLength": 30}, "date": {"type": "string", "format": "date"}}, "required": ["title", "date"]}),
        ),
        (
            "book",
            json!({"type": "object", "properties": {"title": {"type": "string"}, "author": {"type": "string"}, "year": {"type": "integer"}}, "required": ["title", "author", "year"]}),
        ),
        (
            "rating",
            json!({"type": "object", "properties": {"stars": {"enum": [1, 2, 3, 4, 5]}, "comment": {"type": "string", "maxLength": 40}}, "required": ["stars", "comment"]}),
        ),
    ]
}

/// The greedy answers to `prompt` under `gbnf` without fast-forward and
/// with it (forced tokens evaluated one at a time: the same logits).
fn off_and_on(
    model: &Model,
    prompt: &[Message],
    gbnf: &CheckedGbnf,
    max_tokens: u32,
) -> (Generation, Generation) {
    let run = |fast_forward| {
        model
            .chat(
                prompt,
                &GenerateParams {
                    max_tokens,
                    n_ctx: 1024,
                    constraint: Some(Constraint::Grammar(gbnf.clone())),
                    fast_forward,
                    forced_one_by_one: true,
                    cache_prompt: false,
                    ..GenerateParams::default()
                },
            )
            .expect("generate")
    };
    (run(false), run(true))
}

#[test]
fn greedy_outputs_with_fast_forward_equal_those_without_where_the_model_takes_the_canonical_split()
{
    let model = Model::load(&common::model_path(), &LoadParams::default()).expect("load the model");
    let (mut followed, mut forced_in_followed) = (0, 0u32);
    for (name, schema_value) in schemas() {
        let gbnf = schema::compile(&schema_value).expect("converts").gbnf;
        let prompt = [
            Message::new(Role::System, "Output one JSON value only."),
            Message::new(Role::User, format!("Give an example of a {name}.")),
        ];
        let (off, on) = off_and_on(&model, &prompt, &gbnf, 96);
        assert!(
            off.trace.iter().all(|t| !t.1) && !off.timings.forced_end,
            "{name}: nothing is forced without it"
        );
        match off.parts_from(&on) {
            // The model split a forced run its own way: not comparable.
            Some((_, true)) => {}
            Some((i, false)) => panic!(
                "{name}: with the same {i} tokens before it, a sampled token differs:\n off `{}`\n on  `{}`",
                off.text, on.text
            ),
            None => {
                assert_eq!(off.text, on.text, "{name}");
                assert_eq!(off.finish, on.finish, "{name}");
                assert_eq!(off.tokens_generated, on.tokens_generated, "{name}");
                // Each of these grammars ends with a closing bracket or
                // quote after which only the end is allowed: it is not
                // sampled (and `finish` above shows it is still `Eos`).
                assert_eq!(
                    on.timings.forced_end,
                    on.finish == FinishReason::Eos,
                    "{name}: `{}`",
                    on.text
                );
                followed += 1;
                forced_in_followed += on.timings.forced_tokens;
            }
        }
    }
    // The comparison must have had something to compare.
    assert!(
        followed >= 4,
        "only {followed} schemas followed the canonical split"
    );
    assert!(
        forced_in_followed >= 10,
        "only {forced_in_followed} forced tokens among them"
    );
}

/// Where the grammar allows the end or more, the model decides and the end
/// is sampled; only where nothing but the end is allowed is it not.
#[test]
fn the_end_is_left_to_the_model_where_the_grammar_allows_more() {
    let model = Model::load(&common::model_path(), &LoadParams::default()).expect("load the model");
    for (question, gbnf) in [
        ("Answer yes.", r#"root ::= "yes" | "yes!""#),
        ("Name a colour.", r#"root ::= [a-z]+"#),
        ("Name a colour.", r#"root ::= [a-z]{1,6}"#),
    ] {
        let checked = CheckedGbnf::new(gbnf).expect("grammar");
        let prompt = [Message::new(Role::User, question)];
        let (off, on) = off_and_on(&model, &prompt, &checked, 24);
        assert_eq!((&off.text, off.finish), (&on.text, on.finish), "{gbnf}");
        // Nothing but the end after "yes!" or six letters; after "yes" or
        // fewer letters the model may go on.
        let must_end = on.text == "yes!" || (gbnf.ends_with("{1,6}") && on.text.len() == 6);
        assert_eq!(
            on.timings.forced_end,
            must_end && on.finish == FinishReason::Eos,
            "{gbnf}: `{}` {:?}",
            on.text,
            on.finish
        );
    }
}
