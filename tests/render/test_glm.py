"""ChatGLM3, GLM-4 and GLM-4.5/4.6 templates.

Differential tests against the official Jinja templates (ChatGLM3: plain chat; GLM-4:
tools, calls and results in the message form GLM-4's own API server builds; GLM-4.5:
tools, parallel calls, results, reasoning, enable_thinking), role-order errors,
``sequence_start=False``, and LMDeploy's recorded outputs with documented deviations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from _official import glm4_server_messages, null_content_as_absent
from chatfmt.errors import RoleOrderError, UnsupportedFeatureError, ValidationError
from chatfmt.families.glm.templates import python_literal
from chatfmt.segments import Kind, join

from _support import TOOLS, WEATHER_TOOL, conversations, official_render, official_source, texts

CHATGLM3 = "THUDM-chatglm3-6b.jinja"
GLM4 = "THUDM-glm-4-9b-chat.jinja"
GLM46 = "GLM-4.6.jinja"

#: Where LMDeploy's chatglm3/glm4 templates differ from the official ones, and why.
LMDEPLOY_DEVIATIONS = {
    "generation_prompt": "LMDeploy's prompt ends '<|assistant|>\\n' (ChatGLM3: '<|assistant|>\\n '); the official "
    "templates end at '<|assistant|>' and the model writes the metadata line itself.",
    "later_turn": "LMDeploy's follow-up turn starts with '<|user|>'; in chatfmt that token is the stop token "
    "that ended the previous reply (held by the engine), so the follow-up starts after it.",
    "continuation": "LMDeploy's chatglm3/glm4 append a new assistant prefix after a final assistant message; "
    "chatfmt's continue_final_message leaves that message open.",
    "tools": "LMDeploy's chatglm3/glm4 drop tools and tool calls and write tool results as assistant turns; "
    "chatfmt renders the official tool formats.",
    "chatglm3_stop_words": "LMDeploy lists '<eos>' (not a ChatGLM3 token); ChatGLM3 stops on <|user|>, "
    "<|observation|> and </s> (its generation_config eos ids).",
}


def _lmdeploy(shared_dir: Path) -> dict[str, Any]:
    return json.loads(
        (shared_dir / "reference" / "lmdeploy_template_cases.json").read_text(encoding="utf-8")
    )


def _follow_up_property(
    name: str, prev: list[dict[str, Any]], reply: str, new: list[dict[str, Any]], **kw: Any
) -> None:
    """Engine-held prefix: prompt + generated reply (with its stop token) + follow-up == whole render."""
    full_msgs = [*prev, {"role": "assistant", "content": reply}, *new]
    segs = chatfmt.render_segments(full_msgs, name, **kw)
    generated = join(s for s in segs if s.message == len(prev) and s.trained)
    prefix = chatfmt.render(prev, name, **kw)
    follow = chatfmt.render(new, name, sequence_start=False, **kw)
    full = join(segs)
    assert (
        full.startswith(prefix) and full.endswith(follow) and len(prefix) + len(follow) <= len(full)
    )
    middle = full[len(prefix) : len(full) - len(follow)]
    # what the model generated after the prompt: the reply's trained text, less what the
    # generation prompt pre-filled (GLM-4.5 with enable_thinking=False: "\n<think></think>")
    assert generated.endswith(middle) and middle.endswith("<|user|>")
    assert generated[: len(generated) - len(middle)] == (
        "\n<think></think>" if not kw.get("enable_thinking", True) else ""
    )


# --------------------------------------------------------------------------- ChatGLM3
@given(conv=conversations(end_with="any", max_turns=4), gp=st.booleans())
def test_chatglm3_plain_chat_matches_official(conv: dict[str, Any], gp: bool) -> None:
    msgs = conv["messages"]
    ours = chatfmt.render(msgs, "chatglm3", add_generation_prompt=gp)
    assert ours == official_render(official_source(CHATGLM3), msgs, add_generation_prompt=gp)


@given(prev=conversations(end_with="user", max_turns=2), reply=texts(), new=texts())
def test_chatglm3_sequence_start_false(prev: dict[str, Any], reply: str, new: str) -> None:
    _follow_up_property("chatglm3", prev["messages"], reply, [{"role": "user", "content": new}])


def test_chatglm3_follow_up_after_tool_call() -> None:
    prev = [{"role": "user", "content": "weather?"}]
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {"name": "get_current_weather", "arguments": '{"location": "x"}'},
            }
        ],
    }
    result = {"role": "tool", "tool_call_id": "c", "content": "22"}
    full = chatfmt.render([*prev, call, result], "chatglm3", tools=[WEATHER_TOOL])
    prefix = chatfmt.render(prev, "chatglm3", tools=[WEATHER_TOOL])
    generated = 'get_current_weather\n ```python\ntool_call(location="x")\n```<|observation|>'
    follow = chatfmt.render([result], "chatglm3", tools=[WEATHER_TOOL], sequence_start=False)
    assert follow == "\n 22<|assistant|>"
    assert full == prefix + generated + follow


@pytest.mark.parametrize(
    ("msgs", "index"),
    [
        ([{"role": "user", "content": "a"}, {"role": "system", "content": "s"}], 1),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], 1),
        ([{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}], 1),
        ([{"role": "assistant", "content": "a"}], 0),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "user", "content": "b"},
                {"role": "tool", "tool_call_id": "c", "content": "r"},
            ],
            3,
        ),
    ],
)
def test_chatglm3_role_order_errors(msgs: list[dict[str, Any]], index: int) -> None:
    with pytest.raises(RoleOrderError) as err:
        chatfmt.render(msgs, "chatglm3")
    assert err.value.index == index


def test_chatglm3_role_order_accepts_seed_shapes() -> None:
    msgs = [
        {"role": "system", "content": "s1"},
        {"role": "system", "content": "s2"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a1"},
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u2"},
    ]
    assert chatfmt.render(msgs, "chatglm3", prefix_space=False) == (
        "[gMASK]sop<|system|>\ns1<|system|>\ns2<|user|>\nu<|assistant|>\na1<|assistant|>\na2<|user|>\nu2<|assistant|>"
    )


def test_chatglm3_parallel_calls_and_code() -> None:
    msgs = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {
                        "name": "search",
                        "arguments": {
                            "query": '天气 "x"',
                            "n": 3,
                            "exact": False,
                            "tags": ["a", None],
                            "opts": {"k": 1.5},
                        },
                    },
                },
                {"id": "2", "type": "code_interpreter", "code_interpreter": {"input": "print(1)"}},
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "r1"},
        {"role": "tool", "tool_call_id": "2", "content": "```result\n1\n```"},
    ]
    out = chatfmt.render(msgs, "chatglm3", prefix_space=False, add_generation_prompt=False)
    assert out == (
        "[gMASK]sop<|user|>\ngo<|assistant|>search\n```python\n"
        'tool_call(query="天气 \\"x\\"", n=3, exact=False, tags=["a", None], opts={"k": 1.5})\n```'
        "<|assistant|>interpreter\n```python\nprint(1)\n```<|observation|>\nr1<|observation|>\n```result\n1\n```"
    )
    segs = chatfmt.render_segments(msgs, "chatglm3")
    assert [s.text for s in segs if s.message == 1 and not s.trained] == ["<|assistant|>"]
    assert any(s.text == "search" and s.kind is Kind.CONTENT for s in segs)


def test_chatglm3_bad_arguments() -> None:
    def call(args: Any) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": args}}],
            },
        ]

    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(call({"not-ident": 1}), "chatglm3")
    assert err.value.index == 1
    with pytest.raises(UnsupportedFeatureError, match="'class' is not a Python identifier") as err:
        chatfmt.render(call({"class": 1}), "chatglm3")
    assert (err.value.index, err.value.field) == (1, "tool_calls")
    with pytest.raises(ValidationError, match="arguments must be a JSON object") as err:
        chatfmt.render(call("[1, 2]"), "chatglm3")
    assert (err.value.index, err.value.field) == (1, "tool_calls")


def test_python_literal() -> None:
    value = {"a": [True, None, 1, 2.5, "é\n"]}
    assert python_literal(value) == '{"a": [True, None, 1, 2.5, "é\\n"]}'
    assert eval(python_literal(value)) == value  # ChatGLM3 evaluates this text


def test_chatglm3_tools_json_options() -> None:
    msgs = [{"role": "user", "content": "q"}]
    out = chatfmt.render(msgs, "chatglm3", tools=[WEATHER_TOOL], tools_json="indent4")
    body = json.dumps([WEATHER_TOOL["function"]], ensure_ascii=False, indent=4)
    assert out == (
        "[gMASK]sop<|system|>\n Answer the following questions as best as you can. You have access to the "
        f"following tools:\n{body}<|user|>\n q<|assistant|>"
    )


# --------------------------------------------------------------------------- GLM-4
@given(conv=conversations(tools=True, end_with="any", max_turns=3), gp=st.booleans())
def test_glm4_matches_official(conv: dict[str, Any], gp: bool) -> None:
    ours = chatfmt.render(conv["messages"], "glm4", tools=conv["tools"], add_generation_prompt=gp)
    official = official_render(
        official_source(GLM4), glm4_server_messages(conv), add_generation_prompt=gp
    )
    assert ours == official


@given(conv=conversations(end_with="any", max_turns=3), gp=st.booleans())
def test_glm4_plain_chat_matches_official(conv: dict[str, Any], gp: bool) -> None:
    msgs = conv["messages"]
    assert chatfmt.render(msgs, "glm4", add_generation_prompt=gp) == official_render(
        official_source(GLM4), msgs, add_generation_prompt=gp
    )


@given(
    prev=conversations(end_with="user", max_turns=2),
    reply=texts(min_size=1).filter(bool),
    new=texts(min_size=1).filter(bool),  # GLM-4's template leaves out empty turns
)
def test_glm4_sequence_start_false(prev: dict[str, Any], reply: str, new: str) -> None:
    _follow_up_property("glm4", prev["messages"], reply, [{"role": "user", "content": new}])


def test_glm4_code_interpreter_tool_and_call() -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "code_interpreter", "code_interpreter": {"input": "print(1)"}}],
        },
        {"role": "tool", "content": "1"},
    ]
    out = chatfmt.render(msgs, "glm4", tools=[{"type": "code_interpreter"}])
    official = official_render(
        official_source(GLM4),
        [
            {"role": "user", "content": "q", "tools": [{"type": "python"}]},
            {"role": "assistant", "metadata": "python", "content": "print(1)"},
            {"role": "observation", "content": "1"},
        ],
    )
    assert out == official


# --------------------------------------------------------------------------- GLM-4.5 / 4.6
_THINKING = st.sampled_from([None, True, False])


@given(
    conv=conversations(tools=True, reasoning=True, end_with="any", max_turns=3),
    gp=st.booleans(),
    thinking=_THINKING,
    with_tools=st.booleans(),
)
def test_glm45_matches_official(
    conv: dict[str, Any], gp: bool, thinking: bool | None, with_tools: bool
) -> None:
    kw = {} if thinking is None else {"enable_thinking": thinking}
    tools = conv["tools"] if with_tools else None
    ours = chatfmt.render(conv["messages"], "glm4.5", tools=tools, add_generation_prompt=gp, **kw)
    official = official_render(
        official_source(GLM46),
        null_content_as_absent(conv["messages"]),
        tools=tools,
        add_generation_prompt=gp,
        **kw,
    )
    assert ours == official


@given(content=texts(), reasoning=st.one_of(st.none(), texts()), thinking=_THINKING)
def test_glm45_reasoning_extraction(
    content: str, reasoning: str | None, thinking: bool | None
) -> None:
    content = f"<think>{content}</think>\n{content}" if reasoning is None else content
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    msgs = [{"role": "user", "content": "q"}, msg]
    kw = {} if thinking is None else {"enable_thinking": thinking}
    for gp in (True, False):
        assert chatfmt.render(msgs, "glm4.6", add_generation_prompt=gp, **kw) == official_render(
            official_source(GLM46), msgs, add_generation_prompt=gp, **kw
        )


@given(
    prev=conversations(end_with="user", max_turns=2, reasoning=True),
    reply=texts(),
    new=texts(),
    thinking=st.booleans(),
)
def test_glm45_sequence_start_false(
    prev: dict[str, Any], reply: str, new: str, thinking: bool
) -> None:
    _follow_up_property(
        "glm4.5",
        prev["messages"],
        reply,
        [{"role": "user", "content": new}],
        enable_thinking=thinking,
    )


def test_glm45_errors_where_official_raises() -> None:
    bad = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "[1]"}}],
        },
    ]
    with pytest.raises(ValidationError) as err:
        chatfmt.render(bad, "glm4.5")
    assert err.value.index == 1
    with pytest.raises(Exception, match="Invalid tool call arguments"):
        official_render(official_source(GLM46), bad)


def test_glm45_lists_a_code_interpreter_tool_like_the_official_template() -> None:
    msgs = [{"role": "user", "content": "q"}]
    tools = [{"type": "code_interpreter"}, *TOOLS]
    out = chatfmt.render(msgs, "glm4.5", tools=tools)
    assert out == official_render(official_source(GLM46), msgs, tools=tools)
    assert '<tools>\n{"type": "code_interpreter"}\n' in out
    code_call = {"type": "code_interpreter", "code_interpreter": {"input": "print(1)"}}
    with pytest.raises(UnsupportedFeatureError) as err:  # a call still has no format
        chatfmt.render([*msgs, {"role": "assistant", "tool_calls": [code_call]}], "glm4.5")
    assert err.value.index == 1


def test_glm45_segments() -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "a",
            "reasoning_content": "r",
            "tool_calls": [
                {"type": "function", "function": {"name": "search", "arguments": {"query": "x"}}}
            ],
        },
        {"role": "tool", "content": "res"},
    ]
    segs = chatfmt.render_segments(msgs, "glm4.5", tools=TOOLS)
    trained = join(s for s in segs if s.trained)
    assert trained == (
        "\n<think>r</think>\na\n<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x"
        "</arg_value>\n</tool_call><|observation|>"
    )
    assert {s.text for s in segs if s.kind is Kind.CONTENT and s.message == 1} >= {
        "r",
        "a",
        "search",
        "query",
        "x",
    }


# --------------------------------------------------------------------------- registry / config / LMDeploy
@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("THUDM/chatglm3-6b", "chatglm3"),
        ("chatglm3-6b-32k-4bit", "chatglm3"),
        ("THUDM/glm-4-9b-chat", "glm4"),
        ("THUDM/glm-4-9b-chat-1m", "glm4"),
        ("zai-org/GLM-4.5-Air", "glm4.5"),
        ("zai-org/GLM-4.6", "glm4.5"),
        ("glm4.6", "glm4.5"),
        ("/models/GLM-4.5-Air-AWQ", "glm4.5"),
    ],
)
def test_lookup(query: str, name: str) -> None:
    assert chatfmt.get_template(query).name == name


def test_configs() -> None:
    c3, g4, g45 = (chatfmt.get_template(n) for n in ("chatglm3", "glm4", "glm4.5"))
    assert c3.generation_config.stop_words == ("<|user|>", "<|observation|>", "</s>")
    assert (
        g4.generation_config.stop_words
        == g45.generation_config.stop_words
        == ("<|user|>", "<|observation|>", "<|endoftext|>")
    )
    assert (c3.tool_parser, g4.tool_parser, g45.tool_parser) == ("chatglm3", "glm4", "glm45")
    assert g45.reasoning_parser == "think" and g45.supports_reasoning
    assert g45.official_templates == (GLM46,) and c3.official_templates == (CHATGLM3,)


def test_lmdeploy_chatglm3_and_glm4(shared_dir: Path) -> None:
    data = _lmdeploy(shared_dir)
    inputs = data["registry_matrix_inputs"]
    matrix = {c["template"]: c for c in data["registry_matrix"]}
    for name, header_tail in (("chatglm3", "\n "), ("glm4", "\n")):
        r = matrix[name]["renders"]
        for key in ("llamacpp_conversation", "no_system_conversation"):
            # LMDEPLOY_DEVIATIONS["generation_prompt"]
            assert chatfmt.render(inputs[key], name) + header_tail == r[key]
        prompt = [{"role": "user", "content": inputs["get_prompt"]}]
        assert chatfmt.render(prompt, name) + header_tail == r["get_prompt_first_turn"]
        # LMDEPLOY_DEVIATIONS["later_turn"]
        assert (
            "<|user|>" + chatfmt.render(prompt, name, sequence_start=False) + header_tail
            == (r["get_prompt_later_turn"])
        )
        # LMDEPLOY_DEVIATIONS["continuation"]
        continued = chatfmt.render(
            inputs["assistant_last_prefix"], name, continue_final_message=True
        )
        assert r["assistant_last_prefix"] == continued + "<|assistant|>" + header_tail
    assert matrix["chatglm3"]["attributes"]["stop_words"] == [
        "<eos>"
    ]  # LMDEPLOY_DEVIATIONS["chatglm3_stop_words"]
    assert set(matrix["glm4"]["attributes"]["stop_words"]) == set(
        chatfmt.get_template("glm4").generation_config.stop_words
    )


def test_null_content_renders_like_absent_content() -> None:
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "search", "arguments": {"query": "x"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": None},
    ]
    for name, src in (("glm4.5", GLM46), ("chatglm3", None), ("glm4", None)):
        out = chatfmt.render(msgs, name, tools=TOOLS)
        assert "None" not in out
        if src:
            assert out == official_render(
                official_source(src), null_content_as_absent(msgs), tools=TOOLS
            )
    plain = [{"role": "user", "content": None}]
    assert chatfmt.render(plain, "chatglm3") == official_render(
        official_source(CHATGLM3), null_content_as_absent(plain)
    )
