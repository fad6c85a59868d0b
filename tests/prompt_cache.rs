//! Reusing the KV cache between calls on one model evaluates only new tokens
//! and never changes what is generated.
#![cfg(feature = "engine")]

use crate::common;

use infer::backend::params::Constraint;
use infer::backend::Backend;
use infer::engine::{GenerateParams, LoadParams, Message, Model, Role};
use infer::grammar::CheckedGbnf;

fn load() -> Model {
    Model::load(&common::model_path(), &LoadParams::default()).expect("load the model")
}

fn params(max_tokens: u32, n_ctx: u32) -> GenerateParams {
    GenerateParams {
        max_tokens,
        n_ctx,
        ..GenerateParams::default()
    }
}

fn transcript(system: &str, user: &str) -> Vec<Message> {
    vec![
        Message::new(Role::System, system),
        Message::new(Role::User, user),
    ]
}

const SYSTEM: &str =
    "You are a meticulous assistant for a bookshop. Answer briefly, in one sentence, \
and never invent titles that the customer did not mention.";

/// The same call on a model that has never run anything: the reference.
fn fresh(messages: &[Message], params: &GenerateParams) -> String {
    load().chat(messages, params).expect("generate").text
}

#[test]
fn a_shared_system_prompt_is_evaluated_once() {
    let model = load();
    let p = params(12, 1024);
    let first = model
        .chat(&transcript(SYSTEM, "Do you sell maps?"), &p)
        .unwrap();
    assert_eq!(first.reused_tokens, 0);
    let second_prompt = transcript(SYSTEM, "What time do you open?");
    let second = model.chat(&second_prompt, &p).unwrap();
    let system_tokens = model.count_tokens(SYSTEM, true).expect("count") as u32;
    assert!(
        second.reused_tokens > system_tokens && second.reused_tokens < second.prompt_tokens,
        "reused {} of {} prompt tokens; the system prompt alone is {system_tokens}",
        second.reused_tokens,
        second.prompt_tokens
    );
    assert_eq!(second.text, fresh(&second_prompt, &p));
}

#[test]
fn continuing_a_conversation_reuses_the_previous_reply() {
    let model = load();
    let p = params(16, 1024);
    let opening = transcript(SYSTEM, "Name a colour.");
    let reply = model.chat(&opening, &p).unwrap();
    let mut follow_up = opening.clone();
    follow_up.push(Message::new(Role::Assistant, reply.text.clone()));
    follow_up.push(Message::new(Role::User, "Another one?"));
    let next = model.chat(&follow_up, &p).unwrap();
    assert!(
        next.reused_tokens > reply.prompt_tokens,
        "reused {}, the first prompt alone was {}",
        next.reused_tokens,
        reply.prompt_tokens
    );
    assert_eq!(next.text, fresh(&follow_up, &p));
}

#[test]
fn repeating_a_call_reuses_the_whole_prompt_and_answers_as_before() {
    let model = load();
    let p = params(24, 512);
    // "Say hello." answered otherwise the second time when its last token
    // was evaluated again alone (other kernels, other numbers).
    for m in [
        transcript(SYSTEM, "Hello!"),
        vec![Message::new(Role::User, "Say hello.")],
        vec![Message::new(Role::User, "Name three colours.")],
    ] {
        let a = model.chat(&m, &p).unwrap();
        let b = model.chat(&m, &p).unwrap();
        assert_eq!(b.reused_tokens, b.prompt_tokens, "{m:?}");
        assert_eq!(a.text, b.text, "{m:?}");
        assert_eq!(a.text, fresh(&m, &p), "{m:?}");
    }
}

#[test]
fn turning_the_cache_off_evaluates_everything() {
    let model = load();
    let m = transcript(SYSTEM, "Hello!");
    model.chat(&m, &params(4, 512)).unwrap();
    let off = GenerateParams {
        cache_prompt: false,
        ..params(4, 512)
    };
    let again = model.chat(&m, &off).unwrap();
    assert_eq!(again.reused_tokens, 0);
}

#[test]
fn outputs_match_fresh_models_across_contexts_prompts_and_grammars() {
    let model = load();
    let checked = |gbnf: &str| CheckedGbnf::new(gbnf).expect("grammar passes the checker");
    let yes_no = Constraint::Grammar(checked("root ::= \"yes\" | \"no\""));
    let digits = Constraint::Grammar(checked("root ::= [0-9]{1,3}"));
    let calls: Vec<(Vec<Message>, GenerateParams)> = vec![
        (transcript(SYSTEM, "Is the sky blue?"), params(10, 1024)),
        (transcript(SYSTEM, "Is the sky blue?"), params(10, 512)),
        (
            transcript(SYSTEM, "Is the sky blue?"),
            GenerateParams {
                constraint: Some(yes_no.clone()),
                ..params(10, 512)
            },
        ),
        (
            transcript(SYSTEM, "How many legs has a spider?"),
            GenerateParams {
                constraint: Some(digits),
                ..params(10, 512)
            },
        ),
        (
            transcript(SYSTEM, "Is the sky blue?"),
            GenerateParams {
                constraint: Some(yes_no),
                ..params(10, 512)
            },
        ),
        (transcript("Be terse.", "Is the sky blue?"), params(10, 512)),
        (
            transcript(SYSTEM, "How many legs has a spider?"),
            GenerateParams {
                temperature: 0.9,
                seed: 7,
                ..params(10, 512)
            },
        ),
        (transcript(SYSTEM, "Is the sky blue?"), params(10, 1024)),
    ];
    let mut previous_n_ctx = 0;
    for (i, (messages, p)) in calls.iter().enumerate() {
        let reused = model.chat(messages, p).unwrap();
        let reference = load().chat(messages, p).unwrap();
        assert_eq!(reused.text, reference.text, "call {i}");
        assert_eq!(reused.finish, reference.finish, "call {i}");
        // A new nCtx means a new context, which starts from the prefix the
        // process saved (every prompt but the fifth has the same system
        // prompt); in the same context the template's start at least is
        // shared.
        let same_context = p.n_ctx == previous_n_ctx;
        let same_system = messages[0] == calls[0].0[0];
        assert_eq!(
            reused.reused_tokens > 0,
            i > 0 && (same_context || same_system),
            "call {i}"
        );
        previous_n_ctx = p.n_ctx;
    }
}

#[test]
fn raw_completions_share_the_cache_with_chat() {
    let model = load();
    let p = params(8, 512);
    let text = "The three primary colours are";
    let a = model.raw(text, true, &p).unwrap();
    model.chat(&transcript(SYSTEM, "Hi"), &p).unwrap();
    let b = model.raw(text, true, &p).unwrap();
    assert_eq!(a.text, b.text);
    assert_eq!(b.reused_tokens, 0, "nothing in common with the chat prompt");
    let c = model.raw(text, true, &p).unwrap();
    assert_eq!(c.reused_tokens, c.prompt_tokens);
    assert_eq!(a.text, c.text);
}
