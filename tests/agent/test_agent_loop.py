"""The agent loop: the seeds' tool flows with a scripted backend, other families, failures."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import chatfmt
from _seed_examples import (
    SEED_CHATGLM3_CODE,
    SEED_CHATGLM3_CODE_MESSAGES,
    SEED_CHATGLM3_TOOLS,
    SEED_CHATGLM3_TOOLS_MESSAGES,
    SEED_INTERNLM2_FUNCTION_CALL,
    WEATHER_TOOL,
    glm3_actual,
)
from chatfmt.agent import Agent, FunctionTool
from chatfmt.agent.events import Final, TextDelta, ToolCallDelta, ToolResult, ToolStart
from chatfmt.backends import ScriptedBackend, ScriptedReply
from chatfmt.errors import UnsupportedFeatureError, ValidationError

CALLS: list[dict[str, Any]] = []


def get_current_weather(location: str, unit: str | None = None) -> dict[str, int]:
    """Get the current weather in a given location."""
    CALLS.append({"location": location, "unit": unit})
    return {"temperature": 22}


#: The seed's tool, published with the seed's own schema.
SEED_WEATHER = FunctionTool(
    get_current_weather,
    description=WEATHER_TOOL["function"]["description"],
    parameters=WEATHER_TOOL["function"]["parameters"],
)


def _assistant_header_prefixes(text: str, header: str) -> list[str]:
    """The text up to and including each occurrence of ``header``."""
    out, pos = [], 0
    while (at := text.find(header, pos)) >= 0:
        out.append(text[: at + len(header)])
        pos = at + len(header)
    return out


# --------------------------------------------------------------------------- InternLM2 (seed 000)
def test_internlm2_seed_weather_flow_prompts_are_the_seed() -> None:
    """Plugin call → environment → answer; every prompt is the seed's text up to that turn."""
    CALLS.clear()
    turn1 = (
        "Sure, I will search for the weather of Shanghai.<|action_start|><|plugin|>\n"
        '{"name": "get_current_weather", "parameters": {"location": "Shanghai"}}<|action_end|>'
    )
    turn2 = "The weather in Shanghai is 22 celsius<|im_end|>"
    backend = ScriptedBackend([turn1, turn2])  # the engine stops at <|action_end|> / <|im_end|>
    agent = Agent(backend, template="internlm2", tools=[SEED_WEATHER], options={"bos_token": ""})
    messages = [
        {"role": "system", "content": "You are InternLM2-Chat, a harmless AI assistant"},
        {"role": "user", "content": "I want to know today's weather in Shanghai"},
    ]
    result = agent.chat(messages)

    seed = SEED_INTERNLM2_FUNCTION_CALL + "\n"
    assert backend.prompts == _assistant_header_prefixes(seed, "<|im_start|>assistant\n")
    assert "<|action_end|>" in backend.requests[0].stop  # tool stop word sent to the engine
    assert "<|im_end|>" in backend.requests[0].stop
    assert CALLS == [{"location": "Shanghai", "unit": None}]
    assert result.finish_reason == "stop"
    assert result.answer == "The weather in Shanghai is 22 celsius"
    assert [len(s.observations) for s in result.steps] == [1, 0]
    assert result.steps[0].observations[0].content == '{"temperature": 22}'
    # the returned conversation is valid input again, and renders as the whole seed
    again = chatfmt.render(
        result.messages,
        "internlm2",
        tools=[SEED_WEATHER.openai()],
        add_generation_prompt=False,
        bos_token="",
    )
    assert again == seed


def test_internlm2_stop_word_returned_by_the_engine_or_not() -> None:
    """The same flow when the engine includes its stop words in the output."""
    turn1 = (
        '<|action_start|><|plugin|>\n{"name": "get_current_weather", '
        '"parameters": {"location": "Paris"}}<|action_end|>'
    )
    answer = "Sunny.<|im_end|>\n<|im_start|>user\nhallucinated"
    backend = ScriptedBackend([turn1, answer], honor_stop=False)
    result = Agent(backend, template="internlm2", tools=[get_current_weather]).chat(
        [{"role": "user", "content": "Paris?"}]
    )
    assert result.answer == "Sunny."
    assert result.steps[-1].trailing_text == "<|im_start|>user\nhallucinated"
    assert "hallucinated" not in json.dumps(result.messages)


# --------------------------------------------------------------------------- ChatGLM3 (seed 001)
def _turns(seed: str, opener: str, ends: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(prompts, model outputs) of a seed text: a prompt ends at each generation ``opener``
    that follows one of ``ends`` (the roles after which the model speaks); the model's output
    runs to the next stop word."""
    prompts, outputs, pos = [], [], 0
    while True:
        starts = [seed.find(e + "\n", pos) for e in ends]
        starts = [i for i in starts if i >= 0]
        if not starts:
            return prompts, outputs
        at = seed.find(opener, min(starts))
        if at < 0:
            return prompts, outputs
        cut = at + len(opener)
        stops = [i for w in ("<|observation|>", "<|user|>") if (i := seed.find(w, cut)) >= 0]
        end = min(stops) if stops else len(seed)
        prompts.append(seed[:cut])
        outputs.append(seed[cut:end])
        pos = end


def test_chatglm3_seed_tool_flow_prompts_are_the_seed() -> None:
    """Tool call (<|observation|>) → answer; each prompt is the seed's text up to that turn."""
    CALLS.clear()
    seed = "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_TOOLS)
    prompts, outputs = _turns(seed, "<|assistant|>", ("<|user|>", "<|observation|>"))
    assert len(prompts) == 2
    backend = ScriptedBackend(outputs)
    agent = Agent(
        backend, template="chatglm3", tools=[SEED_WEATHER], options={"prefix_space": False}
    )
    result = agent.chat(SEED_CHATGLM3_TOOLS_MESSAGES[:1])
    assert backend.prompts == prompts
    assert "<|observation|>" in backend.requests[0].stop
    assert CALLS == [{"location": "beijing", "unit": "celsius"}]
    assert result.answer == SEED_CHATGLM3_TOOLS_MESSAGES[3]["content"]


@pytest.mark.slow
def test_chatglm3_seed_code_execution_through_the_kernel(tmp_path: Any) -> None:
    """The seed's code turn runs in a real kernel; the prompts hold the seed's text exactly
    (up to the observation, which is the kernel's real output here)."""
    from chatfmt.agent.interpreter import CodeInterpreter

    seed = "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_CODE.removesuffix(" # End"))
    prompts, outputs = _turns(seed, "<|assistant|>", ("<|user|>", "<|observation|>"))
    backend = ScriptedBackend([outputs[0], "The file could not be read."])
    with CodeInterpreter(tmp_path, timeout=30) as interp:
        agent = Agent(
            backend, template="chatglm3", interpreter=interp, options={"prefix_space": False}
        )
        result = agent.chat(SEED_CHATGLM3_CODE_MESSAGES[:1])
    assert backend.prompts[0] == prompts[0]
    call_end = seed.index("<|observation|>") + len("<|observation|>\n")
    assert backend.prompts[1].startswith(seed[:call_end])  # the call, byte for byte
    observation = result.steps[0].observations[0]
    # it really ran: the seed's page copy lost the code's indentation, and Python says so
    assert observation.error and "IndentationError" in observation.content
    assert backend.prompts[1] == seed[:call_end] + observation.content + "<|assistant|>"
    assert result.answer == "The file could not be read."


@pytest.mark.slow
def test_internlm2_data_csv_plot_through_the_kernel(tmp_path: Any) -> None:
    """The seed's data analysis flow: the interpreter system prompt, a plot saved as PNG."""
    pytest.importorskip("matplotlib")
    from chatfmt.agent.interpreter import CodeInterpreter

    (tmp_path / "data.csv").write_text("Rainfall,WindDir9am\n1.0,N\n3.5,S\n0.2,E\n", "utf-8")
    code = (
        "import pandas as pd\nimport matplotlib.pyplot as plt\n"
        "df = pd.read_csv('data.csv')\n"
        "df.plot(x='WindDir9am', y='Rainfall', kind='bar')\nplt.show()\nprint(len(df))"
    )
    turn1 = (
        "I have processed the data and visualized it for you.\n\n"
        f"<|action_start|><|interpreter|>\n```python\n{code}\n```<|action_end|>"
    )
    backend = ScriptedBackend([turn1, "The chart shows rainfall by wind direction.<|im_end|>"])
    with CodeInterpreter(tmp_path, timeout=60) as interp:
        agent = Agent(backend, template="internlm2", interpreter=interp)
        result = agent.chat(
            [
                {"role": "user", "content": "Please help me process and visualize this dataset."},
                {
                    "role": "user",
                    "name": "file",
                    "content": '[{"path": "data.csv", "size": "10K"}]',
                },
            ]
        )
    first = backend.prompts[0]
    assert "<|im_start|>system name=<|interpreter|>\nYou now have access to a Jupyter" in first
    observation = result.steps[0].observations[0]
    assert not observation.error and len(observation.images) == 1
    png = observation.images[0]
    assert png.exists() and png.read_bytes().startswith(b"\x89PNG")
    assert f"![image]({png.name})" in observation.content
    assert (
        f"<|im_start|>environment name=<|interpreter|>\n3\n![image]({png.name})"
        in (backend.prompts[1])
    )


# --------------------------------------------------------------------------- other families
@pytest.mark.parametrize(
    ("template", "call_text"),
    [
        (
            "qwen2.5",
            '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Oslo"}}\n'
            "</tool_call><|im_end|>",
        ),
        (
            "llama3.1",
            '{"name": "get_current_weather", "parameters": {"location": "Oslo"}}<|eot_id|>',
        ),
        (
            "qwen3",
            "<think>\nI should call the tool.\n</think>\n\n<tool_call>\n"
            '{"name": "get_current_weather", "arguments": {"location": "Oslo"}}\n</tool_call>',
        ),
    ],
)
def test_same_loop_for_other_families(template: str, call_text: str) -> None:
    CALLS.clear()
    backend = ScriptedBackend([call_text, "It is 22 degrees in Oslo."])
    result = Agent(backend, template=template, tools=[get_current_weather]).chat(
        [{"role": "user", "content": "Weather in Oslo?"}]
    )
    assert CALLS == [{"location": "Oslo", "unit": None}]
    assert result.answer == "It is 22 degrees in Oslo."
    tool_msg = result.messages[-2]
    assert tool_msg["role"] == "tool" and tool_msg["content"] == '{"temperature": 22}'
    chatfmt.validate_conversation(result.messages)  # valid input for the next call
    result_text = '{"temperature": 22}'
    # Llama 3.1's official template writes a tool result as JSON (a string is JSON-quoted)
    assert result_text in backend.prompts[1] or json.dumps(result_text) in backend.prompts[1]


def test_a_reply_with_text_beside_its_call_goes_back_as_written_unless_strict() -> None:
    """Llama 3.1's template writes only the calls of a message: the agent's history holds the
    reply as the model wrote it (the next prompt continues the previous one and the reply);
    with ``strict_history=True`` the official bytes or an error."""
    reply = 'Let me check.\n\n{"name": "get_current_weather", "parameters": {"location": "Oslo"}}'
    ask = [{"role": "user", "content": "Weather in Oslo?"}]
    backend = ScriptedBackend([reply, "It is 22 degrees in Oslo."])
    result = Agent(backend, template="llama3.1", tools=[get_current_weather]).chat(ask)
    assert result.answer == "It is 22 degrees in Oslo."
    assert backend.prompts[1].startswith(backend.prompts[0] + reply)
    strict = Agent(
        ScriptedBackend([reply, "unused"]),
        template="llama3.1",
        tools=[get_current_weather],
        strict_history=True,
    )
    with pytest.raises(UnsupportedFeatureError) as err:
        strict.chat(ask)
    assert (err.value.index, err.value.field) == (1, "content")


@pytest.mark.parametrize("template", ["qwq", "deepseek-r1-distill-qwen"])
def test_reasoning_that_the_format_never_shows_again_stays_on_the_step(template: str) -> None:
    """These formats refuse reasoning after the last user message (their official templates
    drop it): the agent sends the reply back without it and keeps it on the step."""
    tpl = chatfmt.get_template(template)
    call = "I should look it up.\n</think>\n\n" + (
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Oslo"}}\n'
        "</tool_call>"
        if tpl.tool_parser == "hermes"
        else "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
        'get_current_weather\n```json\n{"location": "Oslo"}\n```<｜tool▁call▁end｜>'
        "<｜tool▁calls▁end｜>"
    )
    backend = ScriptedBackend([call, "Checked.\n</think>\n\nIt is 22 degrees."])
    thinking = {"enable_thinking": True} if "enable_thinking" in tpl.default_options else {}
    agent = Agent(backend, template=template, tools=[get_current_weather], options=thinking)
    result = agent.chat([{"role": "user", "content": "Weather in Oslo?"}])
    assert backend.prompts[0].endswith("<think>\n")  # the prompt opens the reasoning
    assert result.steps[0].message["reasoning_content"] == "I should look it up."
    assert "reasoning_content" not in result.messages[1]
    assert result.answer == "It is 22 degrees." and result.reasoning == "Checked."


def test_python_tool_stands_for_the_interpreter_in_families_without_code_calls() -> None:
    class FakeInterpreter:
        async def arun(self, code: str) -> Any:
            from chatfmt.agent.interpreter import ExecutionResult

            return ExecutionResult(text=f"ran {len(code)} chars", stdout="")

    call = '<tool_call>\n{"name": "python", "arguments": {"code": "print(1)"}}\n</tool_call>'
    backend = ScriptedBackend([call, "done"])
    agent = Agent(backend, template="qwen2.5", interpreter=FakeInterpreter())  # type: ignore[arg-type]
    result = agent.chat([{"role": "user", "content": "run"}])
    assert result.steps[0].observations[0].content == "ran 8 chars"
    assert '"name": "python"' in backend.prompts[0]


# --------------------------------------------------------------------------- failures
def _boom(x: int) -> int:
    raise RuntimeError("kaput")


async def _slow() -> str:
    await asyncio.sleep(10)
    return "late"


def test_tool_errors_timeouts_and_unknown_names_reach_the_model() -> None:
    calls = (
        "<tool_call>\n"
        + '{"name": "_boom", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n'
        + '{"name": "_slow", "arguments": {}}\n</tool_call>\n<tool_call>\n'
        + '{"name": "nope", "arguments": {}}\n</tool_call>'
    )
    backend = ScriptedBackend([calls, "Sorry, the tools failed."])
    agent = Agent(backend, template="qwen2.5", tools=[_boom, _slow], tool_timeout=0.2)
    result = agent.chat([{"role": "user", "content": "go"}])
    obs = [(o.name, o.content, o.error) for o in result.steps[0].observations]
    assert obs[0] == ("_boom", "Error: RuntimeError: kaput", True)
    assert obs[1] == ("_slow", "Error: _slow timed out after 0.2 s", True)
    assert obs[2][0] == "nope" and obs[2][2]
    assert (
        obs[2][1]
        == "Error: the call was not run: 'nope' is not an offered tool (offered: _boom, _slow)"
    )
    assert "Error: RuntimeError: kaput" in backend.prompts[1]
    assert result.answer == "Sorry, the tools failed."


def test_the_backend_gets_the_tools_constraint_and_a_call_against_the_schema_is_not_run() -> None:
    CALLS.clear()
    wrong = (
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": 7}}\n</tool_call>'
    )
    backend = ScriptedBackend([wrong, "I could not check."])
    agent = Agent(backend, template="qwen2.5", tools=[get_current_weather])
    result = agent.chat([{"role": "user", "content": "Weather?"}])
    constraint = backend.requests[0].constraint
    assert constraint is not None and constraint.trigger == "<tool_call>"  # auto: lazy
    assert CALLS == []
    (observation,) = result.steps[0].observations
    assert observation.error and observation.content.startswith("Error: the call was not run: ")
    assert "7 is not of type 'string'" in observation.content
    assert observation.content in backend.prompts[1]
    assert result.answer == "I could not check."


def test_malformed_call_is_kept_as_written_answered_once_then_the_loop_stops() -> None:
    bad = (
        'Let me check.<tool_call>\n{"name": "get_current_weather", "arguments": '
        '{"location": Oslo}}\n</tool_call>'
    )
    backend = ScriptedBackend([bad + "<|im_end|>", bad, "never used"], honor_stop=False)
    agent = Agent(backend, template="qwen2.5", tools=[get_current_weather])
    result = agent.chat([{"role": "user", "content": "Weather?"}])
    assert result.finish_reason == "invalid_call"
    assert len(backend.prompts) == 2
    feedback = result.steps[0].observations[0]
    assert feedback.error and "was not run" in feedback.content
    # the turn is in the conversation exactly as the model wrote it (the stop word cut off),
    # followed by the error; the next prompt shows both
    assert result.messages[1] == {"role": "assistant", "content": bad}
    assert result.messages[2]["role"] == "user" and "was not run" in result.messages[2]["content"]
    assert f"<|im_start|>assistant\n{bad}<|im_end|>\n" in backend.prompts[1]
    chatfmt.validate_conversation(result.messages)


def test_a_malformed_call_beside_a_valid_one_runs_neither() -> None:
    CALLS.clear()
    turn = (
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "A"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_current_weather", "arguments": {"loc'
        "</tool_call>"
    )
    backend = ScriptedBackend([turn, "ok"])
    result = Agent(backend, template="qwen2.5", tools=[get_current_weather]).chat(
        [{"role": "user", "content": "two"}]
    )
    assert CALLS == []
    assert "None of the calls of that reply was run" in result.messages[2]["content"]
    assert result.answer == "ok"


def test_max_turn_ends_a_run_that_keeps_calling_tools() -> None:
    call = (
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "X"}}\n</tool_call>'
    )
    backend = ScriptedBackend([call] * 3)
    result = Agent(backend, template="qwen2.5", tools=[get_current_weather], max_turn=3).chat(
        [{"role": "user", "content": "loop"}]
    )
    assert result.finish_reason == "max_turn" and result.answer is None
    assert len(result.steps) == 3 and backend.remaining == 0


def test_length_finish_is_reported() -> None:
    backend = ScriptedBackend([ScriptedReply("A long answer that was cu", "length")])
    result = Agent(backend, template="qwen2.5").chat([{"role": "user", "content": "hi"}])
    assert result.finish_reason == "length" and result.answer == "A long answer that was cu"


def test_stream_chat_events_in_order() -> None:
    call = '<tool_call>\n{"name": "get_current_weather", "arguments": {"location": "Rome"}}\n</tool_call>'
    backend = ScriptedBackend([ScriptedReply(call, chunk_size=5), "Warm."])
    agent = Agent(backend, template="qwen2.5", tools=[get_current_weather])
    events = list(agent.stream_chat([{"role": "user", "content": "Rome?"}]))
    kinds = [type(e) for e in events]
    assert kinds.index(ToolCallDelta) < kinds.index(ToolStart) < kinds.index(ToolResult)
    assert kinds.index(ToolResult) < kinds.index(TextDelta) and kinds[-1] is Final
    first_call = next(e for e in events if isinstance(e, ToolCallDelta))
    assert first_call.name == "get_current_weather" and first_call.id
    args = "".join(e.text for e in events if isinstance(e, ToolCallDelta))
    assert json.loads(args) == {"location": "Rome"}
    start = next(e for e in events if isinstance(e, ToolStart))
    assert start.arguments == {"location": "Rome"}
    assert next(e for e in events if isinstance(e, ToolResult)).content == '{"temperature": 22}'
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Warm."
    final = events[-1]
    assert isinstance(final, Final) and final.result.answer == "Warm."
    assert json.loads(json.dumps(final.result.to_dict()))["finish_reason"] == "stop"


def test_agent_refuses_bad_setups() -> None:
    with pytest.raises(ValidationError, match="has no tool-call format"):
        Agent(ScriptedBackend([]), template="gemma", tools=[get_current_weather])
    with pytest.raises(ValidationError, match="max_turn"):
        Agent(ScriptedBackend([]), template="qwen2.5", max_turn=0)
    with pytest.raises(ValidationError, match="unknown request field"):
        Agent(ScriptedBackend([]), template="qwen2.5", sampling={"max_new_tokens": 3})


def test_an_unreachable_backend_is_a_clear_error_and_leaves_no_open_session() -> None:
    import gc
    import socket
    import warnings

    from chatfmt.backends import OpenAICompletionsBackend
    from chatfmt.errors import BackendConnectionError

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    agent = Agent(
        OpenAICompletionsBackend(f"http://127.0.0.1:{port}/v1", model="m"), template="qwen2.5"
    )
    gc.collect()  # what earlier tests left behind is not this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hi = [{"role": "user", "content": "hi"}]
        with pytest.raises(BackendConnectionError, match=f"cannot reach .*:{port}"):
            agent.chat(hi)
        with pytest.raises(BackendConnectionError, match=f"cannot reach .*:{port}"):
            list(agent.stream_chat(hi))
        del agent
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not [m for m in unclosed if "client session" in m or "connector" in m], unclosed
