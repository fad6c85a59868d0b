//! Templates written here (no copies of other projects' templates), each
//! exercising Jinja features that published chat templates rely on, against
//! renderings written out by hand.

use super::*;
use crate::chat::{Message, Role};

fn render(
    source: &str,
    messages: &[Message],
    vars: Map<String, Json>,
) -> Result<String, TemplateError> {
    ChatTemplate::new(source)?.render(&RenderInput {
        messages,
        add_generation_prompt: true,
        bos_token: "<s>",
        eos_token: "</s>",
        vars: &vars,
        tools: None,
    })
}

fn vars(pairs: &[(&str, Json)]) -> Map<String, Json> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn chat() -> Vec<Message> {
    vec![
        Message::new(Role::System, "Be brief."),
        Message::new(Role::User, "  Hi there  "),
        Message::new(Role::Assistant, "Hello."),
        Message::new(Role::User, "Bye"),
    ]
}

/// A ChatML-style template with a default system turn, trimmed blocks and
/// the generation prompt.
const TURNS: &str = "{% for m in messages %}{% if loop.first and m.role != 'system' %}<|im_start|>system\nDefault.<|im_end|>\n{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\n{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

#[test]
fn turns_render_with_trimmed_blocks() {
    let got = render(TURNS, &chat(), Map::new()).expect("renders");
    assert_eq!(
        got,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n  Hi there  <|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"
    );
    let alone = [Message::new(Role::User, "Q")];
    assert_eq!(
        render(TURNS, &alone, Map::new()).expect("renders"),
        "<|im_start|>system\nDefault.<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn loop_variables_namespace_and_string_methods() {
    // Gemma-like: the system text folded into the first user turn, roles
    // renamed, contents stripped; a namespace carries state out of the loop.
    let source = "{{ bos_token }}{% set ns = namespace(system='', users=0) %}\
{% for m in messages %}{% if m.role == 'system' %}{% set ns.system = m.content | trim %}\
{% else %}{% if m.role == 'user' %}{% set ns.users = ns.users + 1 %}{% endif %}\
<turn {{ 'model' if m.role == 'assistant' else m.role }} {{ loop.index0 }}/{{ loop.length }}{{ ' last' if loop.last }}>\
{% if loop.index0 == 1 and ns.system %}{{ ns.system }}\n\n{% endif %}{{ m.content.strip() }}</turn>\n{% endif %}{% endfor %}\
users={{ ns.users }}{% if messages[0].content.startswith('Be') %} brief{% endif %}";
    let got = render(source, &chat(), Map::new()).expect("renders");
    assert_eq!(
        got,
        "<s><turn user 1/4>Be brief.\n\nHi there</turn>\n<turn model 2/4>Hello.</turn>\n<turn user 3/4 last>Bye</turn>\nusers=2 brief"
    );
}

#[test]
fn template_variables_reach_the_template() {
    let source = "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n{% endif %}{{ messages[-1].content }}|{{ extra.n if extra is defined }}";
    let off = vars(&[
        ("enable_thinking", Json::Bool(false)),
        ("extra", serde_json::json!({"n": 3})),
    ]);
    assert_eq!(
        render(source, &chat(), off).expect("renders"),
        "<think>\n\n</think>\nBye|3"
    );
    let on = vars(&[("enable_thinking", Json::Bool(true))]);
    assert_eq!(render(source, &chat(), on).expect("renders"), "Bye|");
}

#[test]
fn raise_exception_is_the_templates_refusal() {
    let source = "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% endfor %}";
    assert_eq!(
        render(source, &chat(), Map::new()),
        Err(TemplateError::Raised(
            "System role not supported".to_owned()
        ))
    );
}

#[test]
fn tojson_writes_as_pythons_json_dumps() {
    let value =
        serde_json::json!({"name": "get_weather", "b": [1, 2.5, true, null], "a": "é<&>\"\n"});
    let v = vars(&[("tool", value)]);
    let plain = render("{{ tool | tojson }}", &[], v.clone()).expect("renders");
    assert_eq!(
        plain,
        r#"{"name": "get_weather", "b": [1, 2.5, true, null], "a": "é<&>\"\n"}"#
    );
    let indented = render("{{ tool | tojson(indent=2) }}", &[], v.clone()).expect("renders");
    assert_eq!(
        indented,
        "{\n  \"name\": \"get_weather\",\n  \"b\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"a\": \"é<&>\\\"\\n\"\n}"
    );
    let sorted = render(
        "{{ tool | tojson(sort_keys=true, ensure_ascii=true) }}",
        &[],
        v,
    )
    .expect("renders");
    assert_eq!(
        sorted,
        r#"{"a": "\u00e9<&>\"\n", "b": [1, 2.5, true, null], "name": "get_weather"}"#
    );
}

#[test]
fn generation_markers_render_nothing() {
    let source = "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}[{{ m.content }}]{%- endgeneration %}{% endif %}{% endfor %}";
    assert_eq!(
        render(source, &chat(), Map::new()).expect("renders"),
        "[Hello.]"
    );
}

#[test]
fn strftime_now_formats_the_local_date() {
    let got = render("{{ strftime_now('%Y') }}", &[], Map::new()).expect("renders");
    let year: i32 = got.parse().expect("a year");
    assert!((2024..3000).contains(&year), "{got}");
}

#[test]
fn failures_are_reported_with_their_kind() {
    assert!(matches!(
        ChatTemplate::new("{% for m in messages %}"),
        Err(TemplateError::Syntax(m)) if m.contains("syntax error")
    ));
    assert!(matches!(
        render("{{ messages[0].content.no_such_method() }}", &chat(), Map::new()),
        Err(TemplateError::Failed(m)) if m.contains("no_such_method")
    ));
    assert_eq!(
        render("x", &chat(), vars(&[("messages", Json::Null)])),
        Err(TemplateError::Reserved("messages".to_owned()))
    );
    // A template that would run for minutes stops at its fuel.
    let endless = "{% for a in range(20000) %}{% for b in range(20000) %}{% endfor %}{% endfor %}";
    assert!(matches!(
        render(endless, &[], Map::new()),
        Err(TemplateError::Failed(m)) if m.contains("fuel")
    ));
}
