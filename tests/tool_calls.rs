//! Tool calls, judged independently of the code under test: the grammar of
//! the calls by llama.cpp's own grammar engine (which texts it accepts), and
//! the calls Qwen2.5-Coder-0.5B writes under it, sampled at temperature 1
//! with several seeds, by the `jsonschema` crate against each tool's schema.
#![cfg(feature = "engine")]

use crate::common;

use infer::backend::Backend;
use infer::chat::tools::{ToolChoice, ToolFormat, ToolSpec, Tools};
use infer::engine::{FinishReason, GenerateParams, LoadParams, Message, Model, Role};
use serde_json::{json, Value};

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    let arguments = infer::schema::compile(&parameters)
        .expect("the schema converts")
        .gbnf;
    ToolSpec {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        parameters,
        arguments,
    }
}

fn weather_tools(choice: ToolChoice) -> Tools {
    Tools {
        specs: vec![
            spec(
                "get_weather",
                "Current weather in a city",
                json!({"type": "object", "properties": {
                    "city": {"type": "string", "minLength": 1, "maxLength": 40},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7}
                }, "required": ["city", "unit"], "additionalProperties": false}),
            ),
            spec(
                "get_time",
                "Current local time in a city",
                json!({"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"], "additionalProperties": false}),
            ),
        ],
        choice,
    }
}

#[test]
fn llama_cpp_accepts_exactly_the_calls_of_declared_tools_with_valid_arguments() {
    let probe = common::probe();
    let hermes = ToolFormat::Hermes
        .grammar(&weather_tools(ToolChoice::Required))
        .expect("checks")
        .expect("a grammar");
    let mut grammar = probe.load(&hermes).expect("llama.cpp loads it");
    let call =
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let weather = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"celsius\", \"days\": 3}}\n</tool_call>";
    for good in [
        call.to_owned(),
        weather.to_owned(),
        format!("{call}\n{weather}"),
        "{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}".to_owned(),
        "```json\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n```".to_owned(),
    ] {
        assert!(grammar.accepts(&good), "refused {good:?}");
    }
    for bad in [
        // An undeclared tool, a missing required argument, an argument
        // outside its enum or range, an undeclared argument, text after the
        // call, a call without its closing tag.
        "<tool_call>\n{\"name\": \"get_date\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"kelvin\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"celsius\", \"days\": 9}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\", \"tz\": \"UTC\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call> Done.",
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}",
        "It is sunny.",
    ] {
        assert!(!grammar.accepts(bad), "accepted {bad:?}");
    }

    let named = ToolFormat::Hermes
        .grammar(&weather_tools(ToolChoice::Named("get_weather".into())))
        .expect("checks")
        .expect("a grammar");
    let mut named = probe.load(&named).expect("llama.cpp loads it");
    assert!(named.accepts(weather));
    assert!(!named.accepts(call), "a named choice allows that tool only");

    let llama3 = ToolFormat::Llama3
        .grammar(&weather_tools(ToolChoice::Required))
        .expect("checks")
        .expect("a grammar");
    let mut llama3 = probe.load(&llama3).expect("llama.cpp loads it");
    assert!(llama3.accepts("{\"name\": \"get_time\", \"parameters\": {\"city\": \"Paris\"}}"));
    assert!(!llama3.accepts("{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}"));
    assert!(!llama3.accepts(call));
}

/// Qwen2.5-Coder-0.5B-Instruct.
fn qwen() -> Model {
    Model::load(&common::qwen_path(), &LoadParams::default()).expect("load Qwen2.5-Coder")
}

#[test]
fn every_sampled_call_is_valid_against_its_tools_schema() {
    let model = qwen();
    let requests = [
        "What is the weather in Paris right now, in celsius?",
        "What time is it in Tokyo? And the weather there for the next 3 days in fahrenheit?",
    ];
    let mut calls = 0;
    let mut runs = 0;
    for choice in [ToolChoice::Auto, ToolChoice::Required] {
        let tools = weather_tools(choice.clone());
        let validators: Vec<_> = tools
            .specs
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    jsonschema::validator_for(&t.parameters).expect("a schema"),
                )
            })
            .collect();
        for request in requests {
            for seed in 1..=3 {
                let params = GenerateParams {
                    max_tokens: 96,
                    temperature: 1.0,
                    seed,
                    tools: Some(tools.clone()),
                    ..GenerateParams::default()
                };
                let messages = [
                    Message::new(Role::System, "You are a helpful assistant."),
                    Message::new(Role::User, request),
                ];
                let g = model.chat(&messages, &params).expect("generates");
                runs += 1;
                if choice == ToolChoice::Required {
                    assert_ne!(
                        g.finish,
                        FinishReason::Eos,
                        "{choice:?} {request} {seed}: {}",
                        g.text
                    );
                }
                if g.finish == FinishReason::ToolCalls {
                    assert!(!g.tool_calls.is_empty(), "{}", g.text);
                }
                for call in &g.tool_calls {
                    let (_, validator) = validators
                        .iter()
                        .find(|(name, _)| *name == call.name)
                        .unwrap_or_else(|| {
                            panic!("{} is not a declared tool: {}", call.name, g.text)
                        });
                    assert!(
                        validator.is_valid(&call.arguments),
                        "{} {}: {}",
                        call.name,
                        call.arguments,
                        g.text
                    );
                    let reread: Value =
                        serde_json::from_str(&call.arguments_json).expect("argument text is JSON");
                    assert_eq!(reread, call.arguments);
                    calls += 1;
                }
            }
        }
    }
    eprintln!("{calls} calls in {runs} runs, all valid");
    assert!(
        calls >= runs / 2,
        "too few calls ({calls} in {runs} runs) to judge"
    );
}
