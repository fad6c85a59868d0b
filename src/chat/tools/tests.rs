use super::*;
use serde_json::json;

fn spec(name: &str, gbnf: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: Some(format!("{name} things")),
        parameters: json!({"type": "object"}),
        arguments: CheckedGbnf::new(gbnf).expect("valid grammar"),
    }
}

fn tools(choice: ToolChoice) -> Tools {
    Tools {
        specs: vec![
            spec(
                "get_weather",
                "root ::= \"{\\\"city\\\": \\\"\" [a-z]+ \"\\\"}\"\n",
            ),
            spec("get_time", "root ::= \"{}\"\n"),
        ],
        choice,
    }
}

#[test]
fn the_format_is_read_from_the_template() {
    assert_eq!(
        ToolFormat::of_template("{% if tools %}<tool_call>{% endif %}"),
        Ok(ToolFormat::Hermes)
    );
    assert_eq!(
        ToolFormat::of_template(
            "{% for t in tools %}<|start_header_id|>{{ t.function.parameters }}{% endfor %}"
        ),
        Ok(ToolFormat::Llama3)
    );
    assert_eq!(
        ToolFormat::of_template("{{ messages }}"),
        Err(ToolFormatError::NoSupport)
    );
    assert_eq!(
        ToolFormat::of_template("{{ tools | tojson }}[CALL]"),
        Err(ToolFormatError::UnknownFormat)
    );
}

#[test]
fn the_template_sees_tools_as_hugging_face_passes_them() {
    assert_eq!(
        tools(ToolChoice::Auto).template_value()[0],
        json!({"type": "function", "function": {
            "name": "get_weather", "description": "get_weather things", "parameters": {"type": "object"}
        }})
    );
}

#[test]
fn grammars_check_for_every_choice_and_format() {
    for format in [ToolFormat::Hermes, ToolFormat::Llama3] {
        for choice in [
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::Named("get_time".into()),
        ] {
            let gbnf = format.grammar(&tools(choice.clone())).expect("checks");
            let text = gbnf.expect("a grammar").as_str().to_owned();
            assert!(text.contains("t1-root ::= \"{}\""), "{text}");
            let named = matches!(choice, ToolChoice::Named(_));
            assert_eq!(
                !named,
                text.contains("get_weather"),
                "{format:?} {choice:?}: {text}"
            );
        }
        assert_eq!(format.grammar(&tools(ToolChoice::None)), Ok(None));
    }
}

#[test]
fn hermes_calls_are_read_with_their_argument_text() {
    let text = "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"paris\", \"arguments\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let (rest, calls) = ToolFormat::Hermes.parse(text);
    assert_eq!(rest, "Let me look.");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].arguments, json!({"city": "paris", "arguments": 1}));
    assert_eq!(
        calls[0].arguments_json,
        "{\"city\": \"paris\", \"arguments\": 1}"
    );
    assert_eq!(calls[1].name, "get_time");
    assert_eq!(calls[1].arguments_json, "{}");
    assert_ne!(calls[0].id, calls[1].id);
    assert!(
        calls[0].id.starts_with("call_") && calls[0].id.len() == 29,
        "{}",
        calls[0].id
    );
}

#[test]
fn a_cut_off_or_broken_call_is_left_as_text() {
    let cut = "<tool_call>\n{\"name\": \"get_time\", \"argu";
    assert_eq!(ToolFormat::Hermes.parse(cut), (cut.to_owned(), vec![]));
    let broken = "<tool_call>\nnot json\n</tool_call>";
    assert_eq!(
        ToolFormat::Hermes.parse(broken),
        (broken.to_owned(), vec![])
    );
}

#[test]
fn a_llama3_reply_is_one_call_or_text() {
    let (rest, calls) =
        ToolFormat::Llama3.parse(" {\"name\": \"get_time\", \"parameters\": {\"tz\": \"UTC\"}}");
    assert_eq!(rest, "");
    assert_eq!(calls[0].name, "get_time");
    assert_eq!(calls[0].arguments_json, "{\"tz\": \"UTC\"}");
    let (rest, calls) = ToolFormat::Llama3.parse("It is noon.");
    assert_eq!((rest.as_str(), calls.len()), ("It is noon.", 0));
}
