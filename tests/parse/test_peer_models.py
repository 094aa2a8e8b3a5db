"""Models the peers parse, resolved by their Hugging Face ids and parsed as the peers do.

Every case is the peer's own (file cited per block); each is parsed whole and streamed in
every chunking (``_streaming.assert_stream_equals_whole``) through the template the model id
resolves to, so the end-of-turn and reasoning layers of that template take part too.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

import chatfmt
from _pythonic_cases import PEER_CASES, Calls
from _streaming import assert_stream_equals_whole, stream_deltas
from chatfmt.backends import ScriptedBackend
from chatfmt.cli import app
from chatfmt.errors import ChatFmtError
from chatfmt.gateway import ModelEntry, create_app
from chatfmt.gateway.config import ModelSpec, build_model, load_config
from chatfmt.parsing import merge_deltas

DATA = Path(__file__).resolve().parents[1] / "data" / "peer_templates"


def _calls(msg: Any) -> Calls:
    out = []
    for call in msg.get("tool_calls") or ():
        assert "error" not in call, call
        out.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    return out


def _tool(name: str, **props: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": t} for k, t in props.items()},
                "required": list(props),
            },
        },
    }


# ------------------------------------------------------------------ GLM-4.6: a cut close tag
# Ollama model/parsers/glm46_test.go, TestGLM46ParserFinalizesCompleteToolCallOnDone
GLM46_BODY = (
    "grep\n<arg_key>pattern</arg_key>\n<arg_value>needle</arg_value>\n"
    "<arg_key>path</arg_key>\n<arg_value>.</arg_value>"
)
GLM46_TOOLS = [_tool("grep", pattern="string", path="string"), _tool("write", path="string")]


@pytest.mark.parametrize(
    "chunks",
    [
        ["<tool_call>" + GLM46_BODY, ""],  # empty final chunk
        ["<tool_call>" + GLM46_BODY],  # tool body in final chunk
        ["<tool_call>" + GLM46_BODY + "</tool_"],  # partial outer close in final chunk
    ],
    ids=["empty_final_chunk", "body_in_final_chunk", "partial_outer_close"],
)
def test_glm46_finalizes_a_complete_call_cut_in_its_close_tag(chunks: list[str]) -> None:
    for model in ("zai-org/GLM-4.6", "zai-org/GLM-4.5"):
        msg = merge_deltas(stream_deltas(chunks, model, tools=GLM46_TOOLS))
        assert msg["content"] is None and msg.get("reasoning_content") is None
        assert _calls(msg) == [("grep", {"pattern": "needle", "path": "."})]
        whole = assert_stream_equals_whole("".join(chunks), model, tools=GLM46_TOOLS)
        assert _calls(whole) == _calls(msg) and whole["content"] is None


# ------------------------------------------------------ Nemotron Nano v2: a call after </think>
# llama.cpp tests/test-chat.cpp (NVIDIA-Nemotron-Nano-v2.jinja, COMMON_CHAT_FORMAT_NEMOTRON_V2)
NEMOTRON_CALL = '<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>'
HELLO = "Hello, world!\nWhat's up?"
THOUGHT = "<think>I'm\nthinking</think>"
SPECIAL = ("special_function", {"arg1": 1})


@pytest.mark.parametrize(
    ("text", "content", "reasoning", "calls"),
    [
        (HELLO, HELLO, None, []),
        (THOUGHT + HELLO, HELLO, "I'm\nthinking", []),
        (NEMOTRON_CALL, None, None, [SPECIAL]),
        (THOUGHT + NEMOTRON_CALL, None, "I'm\nthinking", [SPECIAL]),
        (NEMOTRON_CALL + HELLO, HELLO, None, [SPECIAL]),
        (THOUGHT + NEMOTRON_CALL + HELLO, HELLO, "I'm\nthinking", [SPECIAL]),
    ],
)
def test_nemotron_nano_v2_llamacpp_cases(
    text: str, content: str | None, reasoning: str | None, calls: Calls
) -> None:
    # llama.cpp parses these with the reasoning block not forced open
    for model in ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nvidia/NVIDIA-Nemotron-Nano-12B-v2"):
        msg = assert_stream_equals_whole(text, model, thinking_prefilled=False)
        assert (msg["content"], msg.get("reasoning_content"), _calls(msg)) == (
            content,
            reasoning,
            calls,
        )


@pytest.mark.parametrize("after", ["", HELLO, "\n\n"])
def test_nemotron_nano_v2_call_after_prefilled_reasoning(after: str) -> None:
    # the template's generation prompt opens <think>: the model closes it, then calls
    text = "I'm\nthinking\n</think>\n\n" + NEMOTRON_CALL + after
    msg = assert_stream_equals_whole(text, "nvidia/NVIDIA-Nemotron-Nano-9B-v2")
    assert msg.get("reasoning_content") == "I'm\nthinking"
    assert _calls(msg) == [SPECIAL]
    assert (msg["content"] or "").strip() == after.strip()
    assert "TOOLCALL" not in (msg.get("reasoning_content") or "")


# llama.cpp tests/chat-parsers/test-nemotron-v2.cpp, test_templates(message_assist_call): the
# model's whole output after the template's generation prompt (which opens <think>) is the bare
# call; it parses as message_assist_call (no reasoning)
@pytest.mark.parametrize("after", ["", HELLO])
def test_nemotron_nano_v2_bare_call_after_the_prompts_open_think(after: str) -> None:
    model = "nvidia/NVIDIA-Nemotron-Nano-9B-v2"
    prompt = chatfmt.render([{"role": "user", "content": "Hey there!"}], model)
    assert prompt.endswith("<think>\n")  # the prompt prefilled the reasoning block
    msg = assert_stream_equals_whole(NEMOTRON_CALL + after, model)
    assert (msg.get("reasoning_content"), _calls(msg)) == (None, [SPECIAL])
    assert msg["content"] == (after or None)
    # a call inside reasoning text is still reasoning (only a leading marker skips it)
    inside = assert_stream_equals_whole("Let me call " + NEMOTRON_CALL, model)
    assert _calls(inside) == [] and "TOOLCALL" in inside["reasoning_content"]


# ------------------------------------------------------------------ LFM2 / LFM2.5 by model id
LFM2_IDS = [
    "LiquidAI/LFM2-350M",
    "LiquidAI/LFM2-700M",
    "LiquidAI/LFM2-1.2B",
    "LiquidAI/LFM2-2.6B",
    "LiquidAI/LFM2-1.2B-Tool",
    "LiquidAI/LFM2-8B-A1B",
]
LFM25_IDS = ["LiquidAI/LFM2.5-1.2B-Instruct", "LiquidAI/LFM2.5-1.2B-Thinking"]


def test_lfm2_ids_resolve() -> None:
    for model in LFM2_IDS:
        assert chatfmt.get_template(model).name == "lfm2", model
    for model in LFM25_IDS:
        assert chatfmt.get_template(model).name == "lfm2.5", model
    assert chatfmt.get_template("LiquidAI/LFM2.5-8B-A1B").name == "lfm2.5-moe"


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [c[2:] for c in PEER_CASES if c[1] == "lfm2"],
    ids=[c[0] for c in PEER_CASES if c[1] == "lfm2"],
)
def test_lfm2_vllm_cases_by_model_id(text: str, calls: Calls, content: str | None) -> None:
    # vLLM tests/tool_parsers/test_lfm2_tool_parser.py (the cases in _pythonic_cases.py)
    for model in ("LiquidAI/LFM2-1.2B", "LiquidAI/LFM2.5-1.2B-Thinking"):
        msg = assert_stream_equals_whole(text + "<|im_end|>", model)
        assert _calls(msg) == calls
        assert msg["content"] == content


def test_lfm2_prompt_with_tools_matches_llamacpp() -> None:
    # llama.cpp tests/test-chat.cpp, "LFM2 format tests": the prompt with tools (its
    # template writes no BOS; LFM2's writes <|startoftext|> first)
    tool = {
        "type": "function",
        "function": {
            "name": "special_function",
            "description": "I'm special",
            "parameters": {
                "type": "object",
                "properties": {"arg1": {"type": "integer", "description": "The arg."}},
                "required": ["arg1"],
            },
        },
    }
    got = chatfmt.render(
        [{"role": "user", "content": "Hey there!"}], "LiquidAI/LFM2-1.2B", tools=[tool]
    )
    assert got == (
        "<|startoftext|><|im_start|>system\nList of tools: <|tool_list_start|>"
        + json.dumps([tool])
        + "<|tool_list_end|><|im_end|>\n<|im_start|>user\nHey there!<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


# ------------------------------------------- any template with any parser (--tool-call-parser)
LLAMA32 = ("meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B-Instruct")
VLLM_PYTHONIC = DATA / "vllm-tool_chat_template_llama3.2_pythonic.jinja"


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [c[2:] for c in PEER_CASES if c[1] == "pythonic"],
    ids=[c[0] for c in PEER_CASES if c[1] == "pythonic"],
)
def test_llama32_pythonic_vllm_cases(text: str, calls: Calls, content: str | None) -> None:
    # vLLM tests/tool_parsers/test_pythonic_tool_parser.py, run as vLLM serves Llama 3.2 with
    # --tool-call-parser pythonic: the model's template, the named parser
    for model in LLAMA32:
        msg = assert_stream_equals_whole(text + "<|eot_id|>", model, parser="pythonic")
        assert (_calls(msg), msg["content"]) == (calls, content)
        assert msg.finish_reason == ("tool_calls" if calls else "stop")
        paired = chatfmt.with_tool_parser(model, "pythonic")
        assert assert_stream_equals_whole(text + "<|eot_id|>", paired) == msg


def test_with_tool_parser_pairs_vllms_pythonic_template() -> None:
    # vLLM examples/tool_chat_template_llama3.2_pythonic.jinja + --tool-call-parser pythonic
    tpl = chatfmt.with_tool_parser(VLLM_PYTHONIC, "pythonic")
    assert tpl.tool_parser == "pythonic" and tpl.name.endswith("+pythonic")
    assert chatfmt.with_tool_parser(tpl, "pythonic") is tpl
    weather = _tool("get_weather", city="string")
    prompt = tpl.render([{"role": "user", "content": "Weather in Paris?"}], tools=[weather])
    base = chatfmt.get_template(VLLM_PYTHONIC)
    assert prompt == base.render(
        [{"role": "user", "content": "Weather in Paris?"}], tools=[weather]
    )
    assert "respond with a python list of the calls" in prompt
    # what the template writes for a call, the parser reads back (numbers: the template
    # writes a string argument without quotes, ``city=Paris``, which no parser reads)
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_forecast", "arguments": '{"days": 3}'},
    }
    conv = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    written = tpl.render(conv, add_generation_prompt=False)
    reply = written.rsplit("<|end_header_id|>\n\n", 1)[1]
    assert reply == "[get_forecast(days=3)]<|eot_id|>"
    msg = assert_stream_equals_whole(reply, tpl)
    assert _calls(msg) == [("get_forecast", {"days": 3})]
    with pytest.raises(ChatFmtError, match="unknown tool parser 'nope'"):
        chatfmt.with_tool_parser(VLLM_PYTHONIC, "nope")


runner = CliRunner()


def test_cli_parse_with_a_named_parser(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text("[get_weather(city='Paris')]<|eot_id|>", encoding="utf-8")
    args = ["parse", "-t", "meta-llama/Llama-3.2-3B-Instruct", "--parser", "pythonic", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["finish_reason"] == "tool_calls"
    (call,) = got["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    streamed = runner.invoke(app, [*args, "--stream"])
    assert streamed.exit_code == 0, streamed.output
    assert json.loads(streamed.stdout.splitlines()[-1])["finish_reason"] == "tool_calls"
    bad = runner.invoke(app, [*args[:-1], "--parser", "nope", str(out)])
    assert bad.exit_code != 0 and "unknown tool parser 'nope'" in bad.output


def _template_of(spec: ModelSpec) -> chatfmt.Template:
    async def build() -> chatfmt.Template:
        entry = await build_model(spec)
        await entry.backend.aclose()
        return entry.template

    return asyncio.run(build())


def test_serve_pairs_a_tool_parser(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"  # never contacted: the template is given
    spec = ModelSpec("l", url, template=str(VLLM_PYTHONIC), tool_parser="pythonic")
    assert _template_of(spec).tool_parser == "pythonic"
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[models.l]\nbackend = "{url}"\ntemplate = "{LLAMA32[1]}"\ntool_parser = "pythonic"\n'
    )
    (spec,), _limits = load_config(config)
    assert spec.tool_parser == "pythonic"
    paired = _template_of(spec)
    assert paired.name == "llama3.2+pythonic"
    with pytest.raises(ChatFmtError, match="model 'l': unknown tool parser"):
        _template_of(ModelSpec("l", url, template=LLAMA32[1], tool_parser="nope"))
    engine = ScriptedBackend(["[get_weather(city='Paris')]"])
    served = create_app({"l": ModelEntry("l", engine, paired)})
    body = {
        "model": "l",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [_tool("get_weather", city="string")],
    }
    with TestClient(served) as http:
        res = http.post("/v1/chat/completions", json=body)
    assert res.status_code == 200, res.text
    choice = res.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}


# ----------------------------------------------------------- Granite 3.2 thinking (phrases)
# vLLM tests/reasoning/test_granite_reasoning_parser.py (the ``granite`` reasoning parser)
START_REASONING, START_RESPONSE = "Here is my thought process:", "Here is my response:"


@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        (
            f"{START_REASONING}This is a reasoning section{START_RESPONSE}This is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        (
            f"{START_REASONING}This is a reasoning section{START_RESPONSE}",
            "This is a reasoning section",
            None,
        ),
        ("This is content", None, "This is content"),
        (
            f"{START_REASONING}This\nThat{START_RESPONSE}This is the rest\nThat",
            "This\nThat",
            "This is the rest\nThat",
        ),
        # the streaming subcases' texts: the phrases and the spaces around them are markup
        (f"{START_REASONING} foo {START_RESPONSE} bar", "foo", "bar"),
        (f"{START_REASONING} foo Here is Here was", "foo Here is Here was", None),
        ("Here is my thought failure", None, "Here is my thought failure"),
        # the short forms some quantized models write (vLLM accepts them too)
        ("Here's my thought process:\n\nx\n\nHere's my response:\n\ny", "x", "y"),
    ],
)
def test_granite32_thinking_vllm_cases(
    text: str, reasoning: str | None, content: str | None
) -> None:
    model = "ibm-granite/granite-3.2-8b-instruct"
    assert chatfmt.get_template(model).name == "granite3.2"
    msg = assert_stream_equals_whole(text + "<|end_of_text|>", model, thinking=True)
    assert (msg.get("reasoning_content"), msg["content"]) == (reasoning, content)
    assert msg.finish_reason == "stop"


# -------------------------------------------------------------------- Llama 4 (pythonic calls)
LLAMA4 = (
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
)


def test_llama4_template_is_the_official_one() -> None:
    from _official import ollama_source

    tpl = chatfmt.get_template(LLAMA4[0])
    assert tpl is chatfmt.get_template(LLAMA4[1]) and tpl.name == "llama4"
    # the chat template of the models' GGUF (Ollama's llama4, ../shared/reference)
    assert tpl.jinja_source == ollama_source("library/llama4:latest")
    assert chatfmt.get_template(tpl.jinja_source).name == "llama4"


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [c[2:] for c in PEER_CASES if c[1] in ("pythonic", "llama4_pythonic")],
    ids=[c[0] for c in PEER_CASES if c[1] in ("pythonic", "llama4_pythonic")],
)
def test_llama4_vllm_cases_by_model_id(text: str, calls: Calls, content: str | None) -> None:
    # vLLM tests/tool_parsers/test_llama4_pythonic_tool_parser.py (and the pythonic cases it
    # shares), parsed through the template the model id resolves to
    for model in LLAMA4:
        msg = assert_stream_equals_whole(text + "<|eot|>", model)
        assert (_calls(msg), msg["content"]) == (calls, content)
        assert msg.finish_reason == ("tool_calls" if calls else "stop")


# ------------------------------------------------------------------------------- FunctionGemma
FG = "google/functiongemma-270m-it"
FG_CALL, FG_END = "<start_function_call>", "<end_function_call>"


def _fg(body: str) -> str:
    return FG_CALL + body + FG_END


@pytest.mark.parametrize(
    ("text", "calls", "content", "tools"),
    [
        # vLLM tests/tool_parsers/test_functiongemma_tool_parser.py (TestExtractToolCalls)
        ("Hello, how can I help you today?", [], "Hello, how can I help you today?", None),
        (
            _fg("call:get_weather{location:<escape>London<escape>}"),
            [("get_weather", {"location": "London"})],
            None,
            None,
        ),
        (
            _fg(
                "call:get_weather{location:<escape>San Francisco<escape>,unit:<escape>celsius<escape>}"
            ),
            [("get_weather", {"location": "San Francisco", "unit": "celsius"})],
            None,
            None,
        ),
        (
            "Let me check the weather for you. "
            + _fg("call:get_weather{location:<escape>Paris<escape>}"),
            [("get_weather", {"location": "Paris"})],
            "Let me check the weather for you. ",  # vLLM strips the space; chatfmt keeps the bytes
            None,
        ),
        (
            _fg("call:get_weather{location:<escape>London<escape>}")
            + _fg("call:get_time{timezone:<escape>UTC<escape>}"),
            [("get_weather", {"location": "London"}), ("get_time", {"timezone": "UTC"})],
            None,
            None,
        ),
        # TestExtractToolCallsStreaming (its chunks joined; every chunking is streamed here):
        # no comma between the arguments, numbers typed by the tool's schema
        (
            _fg("call:get_weather{city:<escape>NYC<escape>unit:<escape>celsius<escape>}"),
            [("get_weather", {"city": "NYC", "unit": "celsius"})],
            None,
            None,
        ),
        (
            _fg(
                "call:search{query:<escape>python<escape>limit:<escape>10<escape>sort:<escape>relevance<escape>}"
            ),
            [("search", {"query": "python", "limit": 10, "sort": "relevance"})],
            None,
            [_tool("search", query="string", limit="integer", sort="string")],
        ),
        # Ollama model/parsers/functiongemma_test.go (TestFunctionGemmaParser)
        ("Hello, world!", [], "Hello, world!", None),
        (
            "Let me check." + _fg("call:get_weather{city:<escape>Paris<escape>}"),
            [("get_weather", {"city": "Paris"})],
            "Let me check.",
            None,
        ),
        (_fg("call:add{a:1,b:2}"), [("add", {"a": 1, "b": 2})], None, None),
        (
            _fg("call:set_flag{enabled:true,verbose:false}"),
            [("set_flag", {"enabled": True, "verbose": False})],
            None,
            None,
        ),
        (
            _fg("call:process{items:[<escape>a<escape>,<escape>b<escape>,<escape>c<escape>]}"),
            [("process", {"items": ["a", "b", "c"]})],
            None,
            None,
        ),
        (
            _fg("call:update{data:{name:<escape>test<escape>,value:42}}"),
            [("update", {"data": {"name": "test", "value": 42}})],
            None,
            None,
        ),
        (_fg("call:get_time{}"), [("get_time", {})], None, None),
        ("The result is a <value> tag", [], "The result is a <value> tag", None),
        (_fg("call:set_temp{value:3.14}"), [("set_temp", {"value": 3.14})], None, None),
        (_fg("call:test{}") + "Done!", [("test", {})], "Done!", None),
    ],
)
def test_functiongemma_peer_cases(
    text: str, calls: Calls, content: str | None, tools: list[dict[str, Any]] | None
) -> None:
    assert chatfmt.get_template(FG).name == "functiongemma"
    msg = assert_stream_equals_whole(text + "<end_of_turn>", FG, tools=tools)
    assert (_calls(msg), msg["content"]) == (calls, content)


def _fg_tool(name: str, description: str, **props: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()},
            },
        },
    }


FG_WEATHER = _fg_tool("get_weather", "Get weather", city=("string", "City"))
FG_TIME = _fg_tool("get_time", "Get current time", timezone=("string", "Timezone"))
FG_DECL_WEATHER = (
    "<start_function_declaration>declaration:get_weather{description:<escape>Get weather<escape>,"
    "parameters:{properties:{city:{description:<escape>City<escape>,type:<escape>STRING<escape>}},"
    "type:<escape>OBJECT<escape>}}<end_function_declaration>"
)
FG_DECL_TIME = (
    "<start_function_declaration>declaration:get_time{description:<escape>Get current time<escape>,"
    "parameters:{properties:{timezone:{description:<escape>Timezone<escape>,type:<escape>STRING"
    "<escape>}},type:<escape>OBJECT<escape>}}<end_function_declaration>"
)
FG_DEV = "<bos><start_of_turn>developer\nYou can do function calling with the following functions:"


def _fg_call(name: str, args: str, call_id: str = "c0") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


@pytest.mark.parametrize(
    ("messages", "tools", "expected"),
    [
        # Ollama model/renderers/functiongemma_test.go (TestFunctionGemmaRenderer)
        (
            [{"role": "user", "content": "Hello!"}],
            None,
            "<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n",
        ),
        (
            [
                {"role": "system", "content": "You are helpful"},
                {"role": "user", "content": "Hello!"},
            ],
            None,
            "<bos><start_of_turn>developer\nYou are helpful<end_of_turn>\n<start_of_turn>user\n"
            "Hello!<end_of_turn>\n<start_of_turn>model\n",
        ),
        (
            [
                {"role": "developer", "content": "Be concise."},
                {"role": "user", "content": "Weather?"},
            ],
            [FG_WEATHER],
            "<bos><start_of_turn>developer\nBe concise.\nYou can do function calling with the "
            "following functions:" + FG_DECL_WEATHER + "<end_of_turn>\n<start_of_turn>user\n"
            "Weather?<end_of_turn>\n<start_of_turn>model\n",
        ),
        (
            [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "More"},
            ],
            None,
            "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nMore<end_of_turn>\n<start_of_turn>model\n",
        ),
        (
            [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": "Let me check.",
                    "tool_calls": [_fg_call("get_weather", '{"city": "Paris"}')],
                },
                {"role": "tool", "tool_call_id": "c0", "content": "Sunny"},
            ],
            [FG_WEATHER],
            FG_DEV + FG_DECL_WEATHER + "<end_of_turn>\n<start_of_turn>user\nWeather?<end_of_turn>\n"
            "<start_of_turn>model\nLet me check.<start_function_call>call:get_weather{city:<escape>"
            "Paris<escape>}<end_function_call><start_function_response>response:get_weather{<escape>"
            "Sunny<escape>}<end_function_response>",
        ),
        (
            [
                {"role": "user", "content": "Weather and time?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        _fg_call("get_weather", '{"city": "Paris"}'),
                        _fg_call("get_time", '{"timezone": "UTC"}', "c1"),
                    ],
                },
                {"role": "tool", "tool_call_id": "c0", "content": "Sunny"},
                {"role": "tool", "tool_call_id": "c1", "content": "12:00"},
            ],
            [FG_WEATHER, FG_TIME],
            FG_DEV + FG_DECL_WEATHER + FG_DECL_TIME + "<end_of_turn>\n<start_of_turn>user\nWeather "
            "and time?<end_of_turn>\n<start_of_turn>model\n<start_function_call>call:get_weather{city:"
            "<escape>Paris<escape>}<end_function_call><start_function_call>call:get_time{timezone:"
            "<escape>UTC<escape>}<end_function_call><start_function_response>response:get_weather{"
            "<escape>Sunny<escape>}<end_function_response><start_function_response>response:get_time{"
            "<escape>12:00<escape>}<end_function_response>",
        ),
        (
            [
                {"role": "user", "content": "Add"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_fg_call("add", '{"a": 1, "b": 2}')],
                },
                {"role": "tool", "tool_call_id": "c0", "content": "3"},
            ],
            [
                {
                    "type": "function",
                    "function": {
                        "name": "add",
                        "description": "Add numbers",
                        "parameters": {
                            "type": "object",
                            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                        },
                    },
                }
            ],
            FG_DEV + "<start_function_declaration>declaration:add{description:<escape>Add numbers"
            "<escape>,parameters:{properties:{a:{description:<escape><escape>,type:<escape>NUMBER"
            "<escape>},b:{description:<escape><escape>,type:<escape>NUMBER<escape>}},type:<escape>"
            "OBJECT<escape>}}<end_function_declaration><end_of_turn>\n<start_of_turn>user\nAdd"
            "<end_of_turn>\n<start_of_turn>model\n<start_function_call>call:add{a:1,b:2}"
            "<end_function_call><start_function_response>response:add{<escape>3<escape>}"
            "<end_function_response>",
        ),
        (
            [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_fg_call("get_weather", '{"city": "Paris"}')],
                },
                {"role": "tool", "tool_call_id": "c0", "content": "Sunny"},
                {"role": "user", "content": "Thanks! What about London?"},
            ],
            [FG_WEATHER],
            FG_DEV + FG_DECL_WEATHER + "<end_of_turn>\n<start_of_turn>user\nWeather?<end_of_turn>\n"
            "<start_of_turn>model\n<start_function_call>call:get_weather{city:<escape>Paris<escape>}"
            "<end_function_call><start_function_response>response:get_weather{<escape>Sunny<escape>}"
            "<end_function_response>Thanks! What about London?<end_of_turn>\n<start_of_turn>model\n",
        ),
    ],
)
def test_functiongemma_prompts_match_ollama(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, expected: str
) -> None:
    tpl = chatfmt.get_template(FG)
    assert tpl.render(messages, tools=tools) == expected
    assert "".join(s.text for s in tpl.segments(messages, tools=tools)) == expected


def test_functiongemma_required_parameters_and_calls_parse_back() -> None:
    # Ollama's tool_with_required_params case: required names are <escape>-quoted
    tool = _fg_tool(
        "get_weather",
        "Gets the weather for a given city",
        city=("string", "City Name"),
        country=("string", "Country Name"),
    )
    tool["function"]["parameters"]["required"] = ["city"]
    got = chatfmt.render([{"role": "user", "content": "Weather?"}], FG, tools=[tool])
    assert (
        "country:{description:<escape>Country Name<escape>,type:<escape>STRING<escape>}},"
        "required:[<escape>city<escape>],type:<escape>OBJECT<escape>}}" in got
    )
    # what the template writes for a call, the parser reads back
    args = {"city": "Paris", "days": 3, "opts": {"unit": "C", "alerts": [True, None]}}
    conv = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_fg_call("get_weather", json.dumps(args))],
        },
    ]
    written = chatfmt.render(conv, FG, add_generation_prompt=False)
    reply = written.rsplit("<start_of_turn>model\n", 1)[1]
    msg = assert_stream_equals_whole(reply, FG)
    assert _calls(msg) == [("get_weather", args)]


# ---------------------------------------------------------------------------------- ERNIE 4.5
# vLLM tests/tool_parsers/test_ernie45_moe_tool_parser.py
ERNIE_TEMP = '<tool_call>\n{"name": "get_current_temperature", "arguments": {"location": "Beijing"}}\n</tool_call>\n'
ERNIE_UNIT = (
    '<tool_call>\n{"name": "get_temperature_unit", "arguments": {"location": "Guangzhou", "unit": "c"}}\n'
    "</tool_call>\n"
)
TEMP_CALL = ("get_current_temperature", {"location": "Beijing"})
UNIT_CALL = ("get_temperature_unit", {"location": "Guangzhou", "unit": "c"})
ERNIE_THOUGHT = "I need to call two tools to handle these two issues separately.\n</think>\n\n"


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ("This is a test", [], "This is a test"),
        (ERNIE_TEMP, [TEMP_CALL], None),
        (ERNIE_TEMP + ERNIE_UNIT, [TEMP_CALL, UNIT_CALL], None),
        # the tool parser alone: vLLM's content is the text before the calls, stripped
        (ERNIE_THOUGHT + ERNIE_TEMP + ERNIE_UNIT, [TEMP_CALL, UNIT_CALL], ERNIE_THOUGHT),
    ],
)
def test_ernie45_tool_parser_vllm_cases(text: str, calls: Calls, content: str | None) -> None:
    msg = assert_stream_equals_whole(text, "ernie45")
    assert _calls(msg) == calls
    assert (msg["content"] or "").strip() == (content or "").strip()
    # with the reasoning parser, as vLLM serves ERNIE-4.5-21B-A3B-Thinking (the prompt opens
    # the reasoning): the text before </think> is reasoning, the calls stay calls
    if "</think>" in text:
        both = assert_stream_equals_whole(
            text, parser="ernie45", reasoning_parser="ernie45", thinking_prefilled=True
        )
        assert both.get("reasoning_content") == ERNIE_THOUGHT.split("\n</think>")[0]
        assert _calls(both) == calls and both["content"] is None


# vLLM tests/reasoning/test_ernie45_reasoning_parser.py
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("abc</think>def", "abc", "def"),
        ("abc", "abc", None),
        ("abc</think>", "abc", None),
        ("abc\nABC</think>def\nDEF", "abc\nABC", "def\nDEF"),
        # the answer in <response> tags (markup), as the model writes it
        ("abc\n</think>\n\n<response>\ndef\n</response>\n", "abc", "def"),
    ],
)
def test_ernie45_reasoning_vllm_cases(text: str, reasoning: str, content: str | None) -> None:
    msg = assert_stream_equals_whole(
        text, parser="ernie45", reasoning_parser="ernie45", thinking_prefilled=True
    )
    assert (msg.get("reasoning_content"), msg["content"]) == (reasoning, content)


ERNIE_PT = ("baidu/ERNIE-4.5-0.3B-PT", "baidu/ERNIE-4.5-21B-A3B-PT", "baidu/ERNIE-4.5-300B-A47B-PT")
ERNIE_THINKING = "baidu/ERNIE-4.5-21B-A3B-Thinking"
#: The ERNIE 4.5 chat template as transformers publishes it (DEFAULT_CHAT_TEMPLATE of
#: src/transformers/models/ernie4_5/convert_ernie4_5_tokenizer.py), copied byte for byte
ERNIE_OFFICIAL = DATA / "transformers-ernie4_5-DEFAULT_CHAT_TEMPLATE.jinja"


def test_ernie45_ids_resolve_and_render_the_official_template() -> None:
    from _support import official_render

    source = ERNIE_OFFICIAL.read_text(encoding="utf-8")
    assert chatfmt.get_template(ERNIE_OFFICIAL).name == "ernie-4.5"  # the shipped file
    convs = [
        [{"role": "user", "content": "hi"}],
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Weather?"},
        ],
    ]
    for model in (*ERNIE_PT, ERNIE_THINKING):
        tpl = chatfmt.get_template(model)
        assert tpl.name == ("ernie-4.5-thinking" if "Thinking" in model else "ernie-4.5")
        for conv in convs:
            for gen in (True, False):
                assert tpl.render(conv, add_generation_prompt=gen) == official_render(
                    source, conv, add_generation_prompt=gen
                )
    thinking = chatfmt.get_template(ERNIE_THINKING)
    assert (thinking.tool_parser, thinking.reasoning_parser) == ("ernie45", "ernie45")
    # no tool-definition section in the family's template: declared, and refused on request
    assert thinking.info()["history"]["tool_definitions"] is False


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ("This is a test", [], "This is a test"),
        (ERNIE_TEMP, [TEMP_CALL], None),
        (ERNIE_TEMP + ERNIE_UNIT, [TEMP_CALL, UNIT_CALL], None),
    ],
)
def test_ernie45_vllm_tool_cases_by_model_id(text: str, calls: Calls, content: str | None) -> None:
    # vLLM tests/tool_parsers/test_ernie45_moe_tool_parser.py, through the template the ids
    # resolve to (its end-of-turn marker closes the reply)
    for model in ERNIE_PT:
        msg = assert_stream_equals_whole(text + "<|end_of_sentence|>", model)
        assert (_calls(msg), msg["content"]) == (calls, content)
    # the Thinking model: its reasoning comes first and </think> closes it (vLLM's ernie45
    # reasoning parser reads the output as starting inside it)
    msg = assert_stream_equals_whole(ERNIE_THOUGHT + text + "<|end_of_sentence|>", ERNIE_THINKING)
    assert msg.get("reasoning_content") == ERNIE_THOUGHT.split("\n</think>")[0]
    assert (_calls(msg), msg["content"]) == (calls, content)


# vLLM tests/reasoning/test_ernie45_reasoning_parser.py, by the Thinking model's id
@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        ("abc</think>def", "abc", "def"),
        ("abc", "abc", None),
        ("abc\nABC</think>def\nDEF", "abc\nABC", "def\nDEF"),
        ("abc\n</think>\n\n<response>\ndef\n</response>\n", "abc", "def"),
    ],
)
def test_ernie45_thinking_reasoning_cases_by_model_id(
    text: str, reasoning: str, content: str | None
) -> None:
    msg = assert_stream_equals_whole(text, ERNIE_THINKING)
    assert (msg.get("reasoning_content"), msg["content"]) == (reasoning, content)


# ---------------------------------------------------------------------------------- Magistral
MAGISTRAL = ("mistralai/Magistral-Small-2509", "mistralai/Magistral-Medium-2509")


def test_magistral_ids_resolve_to_mistrals_reasoning_format() -> None:
    for model in MAGISTRAL:
        tpl = chatfmt.get_template(model)
        assert tpl.name == "magistral"
        assert (tpl.tool_parser, tpl.reasoning_parser) == ("mistral", "mistral_think")
    # no default system prompt: the caller passes the model card's
    ask = [{"role": "user", "content": "hi"}]
    assert chatfmt.render(ask, MAGISTRAL[0]) == "<s>[INST]hi[/INST]"
    system = [{"role": "system", "content": "Think first."}, *ask]
    assert chatfmt.render(system, MAGISTRAL[0]) == (
        "<s>[SYSTEM_PROMPT]Think first.[/SYSTEM_PROMPT][INST]hi[/INST]"
    )


# vLLM tests/reasoning/test_mistral_reasoning_parser.py (tokenizer: Magistral-Small-2509); the
# cases whose output starts inside the block are parsed as vLLM does, with the block open
@pytest.mark.parametrize(
    ("text", "reasoning", "content", "prefilled"),
    [
        (
            "[THINK]This is a reasoning section[/THINK]This is the rest",
            "This is a reasoning section",
            "This is the rest",
            False,
        ),
        ("[THINK]This is a reasoning section[/THINK]", "This is a reasoning section", None, False),
        (
            "[THINK]This\nThat[/THINK]This is the rest\nThat",
            "This\nThat",
            "This is the rest\nThat",
            False,
        ),
        ("[THINK]This is a reasoning section", "This is a reasoning section", None, False),
        (
            "\n[THINK]This is a reasoning section[/THINK]\nThis is the rest",
            "This is a reasoning section",
            "This is the rest",
            False,
        ),
        (
            "This is a reasoning section[/THINK]This is the rest",
            "This is a reasoning section",
            "This is the rest",
            True,
        ),
        ("This is a reasoning section[/THINK]", "This is a reasoning section", None, True),
        ("This is content", "This is content", None, True),
        ("This\nThat[/THINK]This is the rest\nThat", "This\nThat", "This is the rest\nThat", True),
        ("[/THINK]This is the rest", None, "This is the rest", True),
    ],
)
def test_magistral_reasoning_vllm_cases(
    text: str, reasoning: str | None, content: str | None, prefilled: bool
) -> None:
    for model in MAGISTRAL:
        msg = assert_stream_equals_whole(text + "</s>", model, thinking_prefilled=prefilled)
        assert (msg.get("reasoning_content") or None, msg["content"]) == (reasoning, content)


# vLLM tests/tool_parsers/test_mistral_tool_parser.py (the v11+ form with [ARGS])
@pytest.mark.parametrize(
    ("text", "calls"),
    [
        (
            '[TOOL_CALLS]add_this_and_that[ARGS]{"a": 3.5, "b": 4}',
            [("add_this_and_that", {"a": 3.5, "b": 4})],
        ),
        (
            '[TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}[TOOL_CALLS]multiply[ARGS]{"a": 3, "b": 6}',
            [("add", {"a": 3.5, "b": 4}), ("multiply", {"a": 3, "b": 6})],
        ),
    ],
)
def test_magistral_calls_after_reasoning(text: str, calls: Calls) -> None:
    for model in MAGISTRAL:
        msg = assert_stream_equals_whole("[THINK]Add them.[/THINK]" + text + "</s>", model)
        assert msg.get("reasoning_content") == "Add them."
        assert _calls(msg) == calls and msg["content"] is None


def test_llama4_reads_the_calls_its_template_writes() -> None:
    # the official template writes a past call as <|python_start|>TEXT<|python_end|> + JSON
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    conv = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": " Let me check.", "tool_calls": [call]},
    ]
    written = chatfmt.render(conv, LLAMA4[0], add_generation_prompt=False)
    reply = written.rsplit("<|header_end|>\n\n", 1)[1]
    assert reply.startswith("<|python_start|> Let me check.<|python_end|>{")
    msg = assert_stream_equals_whole(reply, LLAMA4[0])
    assert msg["content"] == " Let me check."
    assert _calls(msg) == [("get_weather", {"city": "Paris"})]
    # a JSON object that is not a call stays prose
    prose = assert_stream_equals_whole('I think {"a": 1} is JSON.<|eot|>', LLAMA4[0])
    assert prose["content"] == 'I think {"a": 1} is JSON.' and not prose.get("tool_calls")


# ---------------------------------------------------------------------------------- Jamba 1.7
JAMBA = ("ai21labs/AI21-Jamba-Mini-1.7", "ai21labs/AI21-Jamba-Large-1.7")
DALLAS = ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})
ORLANDO = ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})
_DALLAS_JSON = '{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}'
_ORLANDO_JSON = '{"name": "get_current_weather", "arguments": {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}}'


def test_jamba_template_resolves() -> None:
    tpl = chatfmt.get_template(JAMBA[0])
    assert tpl is chatfmt.get_template(JAMBA[1]) and tpl.name == "jamba-1.7"
    # what r-rojo/rampipe checks its copy of the GGUF template renders (plus the BOS the
    # tokenizer config gives)
    assert tpl.render([{"role": "user", "content": "Hello, how are you?"}]) == (
        "<|startoftext|><|bom|><|system|> <|eom|><|bom|><|user|> Hello, how are you?<|eom|>"
        "<|bom|><|assistant|>"
    )


#: The GGUF chat template of AI21-Jamba-Mini-1.7 as the public repository r-rojo/rampipe keeps
#: it (tests/fixtures/jamba_mini_1_7_chat_template.jinja, commit 66b8273a9662), byte for byte
JAMBA_OFFICIAL = DATA / "rampipe-jamba_mini_1_7_chat_template.jinja"


def test_jamba_template_is_byte_identical_to_the_official_file() -> None:
    from _support import official_render

    source = JAMBA_OFFICIAL.read_text(encoding="utf-8")
    tpl = chatfmt.get_template(JAMBA[0])
    assert tpl.jinja_source == source
    assert chatfmt.get_template(JAMBA_OFFICIAL) is tpl  # the same file is the same template
    weather = _tool("get_current_weather", city="string", state="string")
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_current_weather", "arguments": '{"city": "Dallas"}'},
    }
    convs: list[tuple[list[dict[str, Any]], Any]] = [
        ([{"role": "user", "content": "Hello, how are you?"}], None),
        (
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Dallas?"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "assistant", "content": "It is sunny."},
            ],
            [weather],
        ),
    ]
    for conv, tools in convs:
        for gen in (True, False):
            expected = official_render(
                source, conv, tools=tools, add_generation_prompt=gen, bos_token="<|startoftext|>"
            )
            assert tpl.render(conv, tools=tools, add_generation_prompt=gen) == expected


# vLLM tests/tool_parsers/test_jamba_tool_parser.py
@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ("This is a test", [], "This is a test"),
        (" <tool_calls>[\n    " + _DALLAS_JSON + "\n]</tool_calls>", [DALLAS], None),
        (
            " Sure! let me call the tool for you.<tool_calls>[\n    "
            + _DALLAS_JSON
            + "\n]</tool_calls>",
            [DALLAS],
            "Sure! let me call the tool for you.",
        ),
        (
            " <tool_calls>[\n    " + _DALLAS_JSON + ",\n    " + _ORLANDO_JSON + "\n]</tool_calls>",
            [DALLAS, ORLANDO],
            None,
        ),
        (
            '<tool_calls>[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX"}}]</tool_calls>',
            [("get_current_weather", {"city": "Dallas", "state": "TX"})],
            None,
        ),
    ],
)
def test_jamba_vllm_cases_by_model_id(text: str, calls: Calls, content: str | None) -> None:
    # vLLM's content keeps the space after <|assistant|>; the template writes that space
    # itself before every reply, so chatfmt reads it as the template's (it renders back)
    for model in JAMBA:
        msg = assert_stream_equals_whole(text + "<|eom|>", model)
        assert (_calls(msg), msg["content"]) == (calls, content)
