"""InternLM2/2.5, InternLM3 and LMDeploy's InternLM v1 templates.

Differential tests against the official InternLM2 Jinja template (plain chat), tool
and interpreter rendering, ``sequence_start=False``, and LMDeploy's recorded outputs
with its known deviations (documented in ``LMDEPLOY_DEVIATIONS``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatfmt
from chatfmt.errors import TemplateError, UnsupportedFeatureError, ValidationError
from chatfmt.families.internlm.templates import (
    INTERNLM_META_INSTRUCTION,
    SEED_INTERPRETER_CN,
    SEED_PLUGIN_CN,
    seed_json,
)
from chatfmt.segments import Kind, join

from _support import WEATHER_TOOL, conversations, official_render, official_source, texts

OFFICIAL = "internlm-internlm2-chat-7b.jinja"

#: Where LMDeploy's hand-written templates differ from the official/seed format, and why.
LMDEPLOY_DEVIATIONS = {
    "default_system": "LMDeploy's internlm2/internlm3 add their meta_instruction as a system turn when "
    "the first message is not a system one; the official HF template has no default system prompt.",
    "environment_name": "LMDeploy writes plugin results as '<|im_start|>environment\\n'; the InternLM2 "
    "seed writes 'environment name=<|plugin|>' (chatfmt follows the seed).",
    "tools_json": "LMDeploy dumps tools with json.dumps (one line, the objects as given); chatfmt's "
    "default is the seed's layout of the function objects (tools_json='compact' gives one line).",
    "raw_actions": "LMDeploy's test puts the raw '<|action_start|><|interpreter|>\\ncode<|action_end|>\\n' "
    "text into the assistant content; chatfmt renders structured code calls in the seed's "
    "```python fence.",
    "unanswered_results": "LMDeploy renders environment messages that answer no call; chatfmt requires a "
    "tool result to follow an assistant tool call (validation).",
    "v1_tools": "LMDeploy's InternLM v1 template writes tool messages as plain turns; the v1 format has "
    "no tool protocol, so chatfmt raises UnsupportedFeatureError.",
}


def _lmdeploy(shared_dir: Path) -> dict[str, Any]:
    return json.loads(
        (shared_dir / "reference" / "lmdeploy_template_cases.json").read_text(encoding="utf-8")
    )


def _matrix(shared_dir: Path, name: str) -> dict[str, Any]:
    data = _lmdeploy(shared_dir)
    return next(c for c in data["registry_matrix"] if c["template"] == name)


def _wrap(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": t} for t in tools]


def _follow_up_property(
    name: str, prev: list[dict[str, Any]], reply: str, new: list[dict[str, Any]], **kw: Any
) -> None:
    """Engine-held prefix: prompt + generated reply (with stop token) + follow-up == whole render."""
    full_msgs = [*prev, {"role": "assistant", "content": reply}, *new]
    segs = chatfmt.render_segments(full_msgs, name, **kw)
    generated = join(s for s in segs if s.message == len(prev) and s.trained)
    prefix = chatfmt.render(prev, name, **kw)
    follow = chatfmt.render(new, name, sequence_start=False, **kw)
    assert join(segs) == prefix + generated + follow


# --------------------------------------------------------------------------- differential
@given(
    conv=conversations(end_with="any", max_turns=4),
    gp=st.booleans(),
    bos=st.sampled_from(["<s>", ""]),
)
def test_internlm2_plain_chat_matches_official(conv: dict[str, Any], gp: bool, bos: str) -> None:
    msgs = conv["messages"]
    ours = chatfmt.render(msgs, "internlm2", add_generation_prompt=gp, bos_token=bos)
    assert ours == official_render(
        official_source(OFFICIAL), msgs, add_generation_prompt=gp, bos_token=bos
    )


@given(sys_texts=st.lists(texts(), min_size=1, max_size=3), conv=conversations(system=False))
def test_internlm2_multiple_and_inner_system_prompts(
    sys_texts: list[str], conv: dict[str, Any]
) -> None:
    msgs = [{"role": "system", "content": t} for t in sys_texts] + conv["messages"]
    msgs.insert(len(msgs) - 1, {"role": "system", "content": "late system"})
    ours = chatfmt.render(msgs, "internlm2")
    assert ours == official_render(official_source(OFFICIAL), msgs, bos_token="<s>")


@given(conv=conversations(tools=True, end_with="any"))
def test_internlm2_segments_invariants(conv: dict[str, Any]) -> None:
    segs = chatfmt.render_segments(conv["messages"], "internlm2", tools=conv["tools"])
    assert join(segs) == chatfmt.render(conv["messages"], "internlm2", tools=conv["tools"])
    for i, m in enumerate(conv["messages"]):
        if m.get("content"):
            content = "".join(s.text for s in segs if s.message == i and s.kind is Kind.CONTENT)
            assert m["content"] in content
    for s in segs:
        if s.kind is Kind.CONTENT:
            continue
        assert s.trained == (
            s.message is not None
            and conv["messages"][s.message]["role"] == "assistant"
            and s.text != "\n"
            and not s.text.startswith("<|im_start|>")
        )


@given(prev=conversations(end_with="user", max_turns=2), reply=texts(), new=texts())
def test_internlm2_sequence_start_false(prev: dict[str, Any], reply: str, new: str) -> None:
    _follow_up_property("internlm2", prev["messages"], reply, [{"role": "user", "content": new}])
    assert chatfmt.render(
        [{"role": "user", "content": "Hello"}], "internlm2", sequence_start=False
    ) == ("\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n")


@given(prev=conversations(end_with="user", max_turns=2, system=False), reply=texts(), new=texts())
def test_internlm_v1_sequence_start_false(prev: dict[str, Any], reply: str, new: str) -> None:
    _follow_up_property(
        "internlm-chat-7b", prev["messages"], reply, [{"role": "user", "content": new}]
    )


# --------------------------------------------------------------------------- tools
def _tool_conv() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Plot and look up"},
        {
            "role": "assistant",
            "content": "Two calls.",
            "tool_calls": [
                {"id": "a", "type": "code_interpreter", "code_interpreter": {"input": "print(1)"}},
                {
                    "id": "b",
                    "type": "function",
                    "function": {
                        "name": "get_current_weather",
                        "arguments": '{"location": "上海"}',
                    },
                },
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "22"},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "content": "latest"},
    ]


def test_internlm2_parallel_calls_and_result_names() -> None:
    out = chatfmt.render(
        _tool_conv(), "internlm2", tools=[WEATHER_TOOL, {"type": "code_interpreter"}], bos_token=""
    )
    assert (
        "<|im_start|>assistant\nTwo calls.<|action_start|><|interpreter|>\n```python\nprint(1)\n```<|action_end|>\n"
        '<|action_start|><|plugin|>\n{"name": "get_current_weather", "parameters": {"location": "上海"}}'
        "<|action_end|><|im_end|>\n"
    ) in out
    assert "<|im_start|>environment name=<|plugin|>\n22<|im_end|>\n" in out
    assert "<|im_start|>environment name=<|interpreter|>\n1<|im_end|>\n" in out
    # no tool_call_id: answers the latest call (the plugin call)
    assert out.endswith(
        "<|im_start|>environment name=<|plugin|>\nlatest<|im_end|>\n<|im_start|>assistant\n"
    )


def test_internlm2_explicit_names_and_file_attachment() -> None:
    msgs = [
        {"role": "system", "name": "interpreter", "content": "You have access to python."},
        {"role": "user", "content": "analyse"},
        {"role": "user", "name": "file", "content": '[{"path": "a.csv"}]'},
        {"role": "user", "name": "alice", "content": "hi"},
    ]
    out = chatfmt.render(msgs, "internlm2", bos_token="")
    assert out == (
        "<|im_start|>system name=<|interpreter|>\nYou have access to python.<|im_end|>\n"
        "<|im_start|>user\nanalyse<|im_end|>\n"
        '<|im_start|>user name=file\n[{"path": "a.csv"}]<|im_end|>\n'
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_internlm2_tool_turns_follow_leading_system_messages() -> None:
    msgs = [
        {"role": "system", "content": "A"},
        {"role": "system", "content": "B"},
        {"role": "user", "content": "q"},
    ]
    out = chatfmt.render(
        msgs,
        "internlm2",
        tools=[WEATHER_TOOL],
        bos_token="",
        tools_json="compact",
        plugin_prompt="{prompt}",
    )
    fn = json.dumps([WEATHER_TOOL["function"]], ensure_ascii=False)
    assert out == (
        "<|im_start|>system\nA<|im_end|>\n<|im_start|>system\nB<|im_end|>\n"
        f"<|im_start|>system name=<|plugin|>\n{fn}<|im_end|>\n<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"
    )


def test_internlm2_lagent_prompts_as_options() -> None:
    out = chatfmt.render(
        [{"role": "user", "content": "q"}],
        "internlm2",
        tools=[WEATHER_TOOL, {"type": "code_interpreter"}],
        bos_token="",
        interpreter_prompt=SEED_INTERPRETER_CN,
        plugin_prompt=SEED_PLUGIN_CN,
        tools_json="indent4",
    )
    tools = json.dumps([WEATHER_TOOL["function"]], ensure_ascii=False, indent=4)
    assert out.startswith(
        f"<|im_start|>system name=<|interpreter|>\n{SEED_INTERPRETER_CN}<|im_end|>\n"
    )
    assert (
        f"<|im_start|>system name=<|plugin|>\n你可以使用如下工具:\n{tools}\n当你需要使用工具时"
        in out
    )
    assert '<|action_start|><|plugin|>{"name": "工具名称", "parameters": {参数}}\n' in out
    segs = chatfmt.render_segments(
        [{"role": "user", "content": "q"}], "internlm2", tools=[WEATHER_TOOL]
    )
    assert any(s.kind is Kind.CONTENT and s.text.startswith("[\n    {") for s in segs)


#: Model outputs (issue 22 items 1 and 2): text, then an interpreter call with the newline the
#: template writes after it, or a plugin call laid out spaced, compact, or with an empty
#: argument object; with ``plugin_newline`` (lagent 0.2.4) the newline after a plugin call.
MODEL_OUTPUTS = [
    (
        "I will compute it.<|action_start|><|interpreter|>\n```python\nprint(1)\n```<|action_end|>\n",
        {},
    ),
    (
        'Let me check.<|action_start|><|plugin|>\n{"name": "get_current_weather", "parameters": {"location": "Paris", "unit": "celsius"}}<|action_end|>',
        {},
    ),
    (
        'Let me check.<|action_start|><|plugin|>\n{"name":"get_current_weather","parameters":{"location":"Paris","unit":"celsius"}}<|action_end|>',
        {},
    ),
    (
        '<|action_start|><|plugin|>\n{"name": "get_current_weather", "parameters": {}}<|action_end|>',
        {},
    ),
    (
        'Sure.<|action_start|><|plugin|>\n{"name":"get_current_weather","parameters":{"location":"Paris"}}<|action_end|>\n',
        {"plugin_newline": True},
    ),
]


@pytest.mark.parametrize(("output", "options"), MODEL_OUTPUTS)
def test_internlm2_parsed_reply_renders_back_as_written(
    output: str, options: dict[str, Any]
) -> None:
    """Parse the model's output and render it back: the model's bytes, nothing more or less
    (no newline turned into text, no call re-laid out)."""
    history = [{"role": "user", "content": "q"}]
    tools = [WEATHER_TOOL, {"type": "code_interpreter"}]
    prompt = chatfmt.render(history, "internlm2", tools=tools, **options)
    msg = chatfmt.parse(output, "internlm2", tools=tools).to_openai()
    assert "\n" not in (msg["content"] or "")
    back = chatfmt.render(
        [*history, msg], "internlm2", tools=tools, add_generation_prompt=False, **options
    )
    assert back == prompt + output + "<|im_end|>\n"


def test_internlm2_lagent_tool_descriptions() -> None:
    """``tools_json="lagent"``: lagent 0.2.4's description of each tool (tests/peers compares
    whole prompts with lagent's own)."""
    from chatfmt.families.internlm.lagent import LAGENT_0_2_4_API_PREFIX

    out = chatfmt.render(
        [{"role": "user", "content": "q"}], "internlm2", tools=[WEATHER_TOOL], tools_json="lagent"
    )
    fn = WEATHER_TOOL["function"]
    props = fn["parameters"]["properties"]
    described = json.loads(out.split("name=<|plugin|>\n", 1)[1].split("\n<|im_end|>", 1)[0])
    assert described == [
        {
            "name": fn["name"],
            "description": LAGENT_0_2_4_API_PREFIX.format(
                tool_name=fn["name"], description=fn["description"]
            ),
            "parameters": [
                {"name": k, "type": "STRING", "description": props[k].get("description", "")}
                for k in fn["parameters"]["required"]
            ],
            "required": fn["parameters"]["required"],
            "parameter_description": described[0]["parameter_description"],
        }
    ]


def test_internlm2_bad_options() -> None:
    with pytest.raises(TemplateError, match=r"plugin_prompt must contain the field \{prompt\}"):
        chatfmt.render(
            [{"role": "user", "content": "q"}],
            "internlm2",
            tools=[WEATHER_TOOL],
            plugin_prompt="no field",
        )
    with pytest.raises(TemplateError, match=r"tools_json must be .* got 'yaml'"):
        chatfmt.render(
            [{"role": "user", "content": "q"}], "internlm2", tools=[WEATHER_TOOL], tools_json="yaml"
        )
    with pytest.raises(TemplateError, match=r"'internlm2' has no option.s. enable_thinking"):
        chatfmt.render([{"role": "user", "content": "q"}], "internlm2", enable_thinking=True)


def test_seed_json_layout() -> None:
    assert seed_json([]) == "[]"
    assert seed_json({"a": [1, 2]}) == '{"a": [1, 2]}'
    long = {"k": "x" * 100}
    assert seed_json(long) == '{\n    "k": "' + "x" * 100 + '"\n}'


# --------------------------------------------------------------------------- registry / config
@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("internlm/internlm2-chat-7b", "internlm2"),
        ("internlm/internlm2_5-7b-chat", "internlm2"),
        ("internlm2_5-20b-chat-4bit", "internlm2"),
        ("internlm2.5", "internlm2"),
        ("internlm/internlm3-8b-instruct", "internlm3"),
        ("internlm/internlm-chat-7b", "internlm-chat-7b"),
        ("models--internlm--internlm-chat-7b/snapshots/1234567", "internlm-chat-7b"),
        ("internlm/internlm-chat-7b-8k", "internlm-chat-7b-8k"),
        ("internlm-chat-20b-w4", "internlm-chat-20b"),
        ("internlm/internlm-7b", "internlm-7b"),
        ("internlm/internlm-20b", "internlm-20b"),
        ("internlm", "internlm-chat-7b"),
    ],
)
def test_lookup(query: str, name: str) -> None:
    assert chatfmt.get_template(query).name == name


def test_generation_configs() -> None:
    t = chatfmt.get_template("internlm2")
    assert t.generation_config.session_len == 32768
    assert t.generation_config.stop_words == ("<|im_end|>",)
    assert t.generation_config.all_stop_words == ("<|im_end|>", "<|action_end|>")
    assert t.tool_parser == "internlm2" and t.official_templates == (OFFICIAL,)
    assert set(t.control_tokens) >= {
        "<|im_start|>",
        "<|im_end|>",
        "<|action_start|>",
        "<|action_end|>",
        "<|interpreter|>",
        "<|plugin|>",
        "<s>",
        "</s>",
    }
    expected = {
        "internlm-chat-7b": 2048,
        "internlm-chat-7b-8k": 8192,
        "internlm-chat-20b": 8192,
        "internlm-7b": 2048,
        "internlm-20b": 4096,
    }
    for name, session in expected.items():
        cfg = chatfmt.get_template(name).generation_config
        assert cfg.session_len == session
        assert cfg.capability == (
            "completion" if name in ("internlm-7b", "internlm-20b") else "chat"
        )
    assert chatfmt.get_template("internlm-chat-20b").generation_config.stop_words == ("<eoa>",)


def test_internlm3_uses_internlm2_format() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    assert chatfmt.render(msgs, "internlm3") == chatfmt.render(msgs, "internlm2")


def test_internlm_v1_rejects_tools() -> None:
    with pytest.raises(UnsupportedFeatureError, match="has no tool format") as no_tools:
        chatfmt.render([{"role": "user", "content": "q"}], "internlm-chat-7b", tools=[WEATHER_TOOL])
    assert (no_tools.value.index, no_tools.value.field) == (None, "tools")
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
    ]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(msgs, "internlm-chat-7b")
    assert err.value.index == 1


# --------------------------------------------------------------------------- LMDeploy cases
def test_lmdeploy_internlm_v1_matrix(shared_dir: Path) -> None:
    case = _matrix(shared_dir, "internlm")
    inputs = _lmdeploy(shared_dir)["registry_matrix_inputs"]
    renders = case["renders"]
    assert case["attributes"]["stop_words"] == ["<eoa>"]
    for key in ("llamacpp_conversation", "no_system_conversation"):
        assert chatfmt.render(inputs[key], "internlm") == renders[key]
    assert (
        chatfmt.render(inputs["assistant_last_prefix"], "internlm", continue_final_message=True)
        == (renders["assistant_last_prefix"])
    )
    prompt = [{"role": "user", "content": inputs["get_prompt"]}]
    assert chatfmt.render(prompt, "internlm") == renders["get_prompt_first_turn"]
    assert (
        chatfmt.render(prompt, "internlm", sequence_start=False) == renders["get_prompt_later_turn"]
    )
    tools = inputs["tools_conversation"]
    # LMDEPLOY_DEVIATIONS["v1_tools"]
    with pytest.raises(UnsupportedFeatureError, match="has no tool format") as err:
        chatfmt.render(tools["messages"], "internlm", tools=_wrap(tools["tools"]))
    assert (err.value.index, err.value.field) == (None, "tools")


def test_lmdeploy_internlm_completion_cases(shared_dir: Path) -> None:
    cases = [
        c
        for c in _lmdeploy(shared_dir)["expected_output_cases"]
        if c["template"] == "internlm" and c["init_kwargs"].get("capability") == "completion"
    ]
    assert len(cases) == 4
    for (
        c
    ) in cases:  # LMDeploy's 'internlm' with capability=completion is chatfmt's base 'internlm-7b'
        start = c.get("sequence_start", True)
        assert (
            chatfmt.render(c["prompt"], "internlm-7b", sequence_start=start) == c["expected_prompt"]
        )
        assert chatfmt.render(c["prompt"], "internlm-20b") == c["expected_prompt"]


@pytest.mark.parametrize("name", ["internlm2", "internlm3"])
def test_lmdeploy_internlm2_matrix(shared_dir: Path, name: str) -> None:
    case = _matrix(shared_dir, name)
    inputs = _lmdeploy(shared_dir)["registry_matrix_inputs"]
    r = case["renders"]
    assert case["attributes"]["stop_words"] == ["<|im_end|>", "<|action_end|>"]
    meta_turn = f"<|im_start|>system\n{INTERNLM_META_INSTRUCTION}<|im_end|>\n"
    kw: dict[str, Any] = {"bos_token": ""}
    assert chatfmt.render(inputs["llamacpp_conversation"], name, **kw) == r["llamacpp_conversation"]
    # LMDEPLOY_DEVIATIONS["default_system"]
    assert (
        meta_turn + chatfmt.render(inputs["no_system_conversation"], name, **kw)
        == r["no_system_conversation"]
    )
    assert (
        meta_turn
        + chatfmt.render(inputs["assistant_last_prefix"], name, continue_final_message=True, **kw)
        == r["assistant_last_prefix"]
    )
    prompt = [{"role": "user", "content": inputs["get_prompt"]}]
    assert meta_turn + chatfmt.render(prompt, name, **kw) == r["get_prompt_first_turn"]
    assert chatfmt.render(prompt, name, sequence_start=False, **kw) == r["get_prompt_later_turn"]
    tools = inputs["tools_conversation"]
    ours = chatfmt.render(
        tools["messages"],
        name,
        tools=_wrap(tools["tools"]),
        tools_json="compact",
        plugin_prompt="{prompt}",
        **kw,
    )
    # LMDEPLOY_DEVIATIONS["default_system"], ["environment_name"]
    expected = (
        r["tools_conversation"]
        .replace(meta_turn, "", 1)
        .replace("<|im_start|>environment\n", "<|im_start|>environment name=<|plugin|>\n")
    )
    assert ours == expected


def test_lmdeploy_internlm2_expected_cases(shared_dir: Path) -> None:
    cases = [
        c for c in _lmdeploy(shared_dir)["expected_output_cases"] if c["template"] == "internlm2"
    ]
    assert len(cases) == 3
    tool_call, interpreter, invalid_name = cases
    # 1. plugin call: identical except LMDEPLOY_DEVIATIONS["environment_name"]
    ours = chatfmt.render(tool_call["messages"], "internlm2", bos_token="")
    assert ours == tool_call["expected_prompt"].replace(
        "<|im_start|>environment\n", "<|im_start|>environment name=<|plugin|>\n"
    )
    # 2. interpreter: LMDEPLOY_DEVIATIONS["raw_actions"] and ["tools_json"]
    msgs = [dict(m) for m in interpreter["messages"]]
    msgs[2] = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "code_interpreter", "code_interpreter": {"input": "code"}}],
    }
    ours = chatfmt.render(
        msgs,
        "internlm2",
        tools=interpreter["tools"],
        bos_token="",
        tools_json="compact",
        plugin_prompt="{prompt}",
    )
    lmdeploy_tools = json.dumps(interpreter["tools"], ensure_ascii=False)
    our_tools = json.dumps([t["function"] for t in interpreter["tools"]], ensure_ascii=False)
    expected = (
        interpreter["expected_prompt"]
        .replace(lmdeploy_tools, our_tools)
        .replace("\ncode<|action_end|>", "\n```python\ncode\n```<|action_end|>")
    )
    assert ours == expected
    # 3. unknown names render as plain turns; LMDEPLOY_DEVIATIONS["unanswered_results"] for the result
    ours = chatfmt.render(
        invalid_name["messages"][:3], "internlm2", bos_token="", add_generation_prompt=False
    )
    assert invalid_name["expected_prompt"].startswith(ours)
    with pytest.raises(ValidationError) as err:
        chatfmt.render(invalid_name["messages"], "internlm2")
    assert err.value.index == 3
