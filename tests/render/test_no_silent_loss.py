"""No silent data loss: every registered template renders the data it is given or refuses it.

For generated conversations (system/user/assistant/tool messages, tool calls with argument
values, text next to calls, several system messages, any final role, with and without
``tools=``, with and without a generation prompt) every message's text, reasoning, tool-call
name and argument key/value appears in the render, or the render raises a
:class:`chatfmt.errors.ChatFmtError` naming the message (``index``) and the field.

Packaged official Jinja files are held to the same property as native templates (they refuse
what their file would drop, ``chatfmt.jinja.packaged.dropped``). The only drops allowed are
the ones the template itself declares as its format's rules (``Template.history``, asked
through ``Template.drops``; the test keeps no list): reasoning the format never shows again
(that of earlier turns), and tool definitions a format has no section for. With
``lossless=True`` not even those: the render refuses them. Every text in a generated conversation is a unique marker word (``zq<n>v``) that no
template writes on its own and that no other marker contains, so "appears in the render" is
a real check.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatfmt
from chatfmt.errors import ChatFmtError, UnsupportedFeatureError
from chatfmt.history_rules import HistoryRules, Shown
from chatfmt.jinja import TemplateRejected

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

#: Every registered template: native ones refuse by their own rules; packaged official Jinja
#: templates render the official output and refuse what it leaves out (``packaged.dropped``).
TEMPLATES = [t.name for t in chatfmt.list_templates()]


# ----------------------------------------------------------------------------- generated data
#: Field path of reasoning written into ``content`` as ``<think>…</think>`` (it is content).
THINK_IN_CONTENT = "content<think>"


@dataclass
class Case:
    """A generated conversation and what the render must contain."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    add_generation_prompt: bool
    #: (message index or None for tools, field path, marker word) for every piece of data.
    pieces: list[tuple[int | None, str, str]] = field(default_factory=list)

    def last_user(self) -> int:
        """Index of the last user message (-1 when there is none)."""
        users = [i for i, m in enumerate(self.messages) if m["role"] == "user"]
        return users[-1] if users else -1


class _Words:
    """Unique marker words: ``zq<n>v`` never contains another marker (``z`` starts each one)."""

    def __init__(self) -> None:
        self._n = itertools.count()

    def word(self) -> str:
        return f"zq{next(self._n)}v"

    def number(self) -> int:
        return 7300019 + 1000 * next(self._n)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    words = _Words()
    msgs: list[dict[str, Any]] = []
    pieces: list[tuple[int | None, str, str]] = []
    names: list[str] = []

    def text(index: int, key: str = "content") -> str:
        first, second = words.word(), words.word()
        pieces.extend([(index, key, first), (index, key, second)])
        return first + draw(st.sampled_from([" ", "\n", ", "])) + second

    def plain(role: str) -> None:
        msgs.append({"role": role, "content": text(len(msgs))})

    def assistant(with_calls: bool) -> None:
        i = len(msgs)
        msg: dict[str, Any] = {"role": "assistant"}
        shape = draw(st.sampled_from(["text", "none", "empty"] if with_calls else ["text"]))
        msg["content"] = text(i) if shape == "text" else (None if shape == "none" else "")
        if shape == "text" and draw(st.sampled_from([False, False, False, True])):
            # reasoning written into the content, as R1-style models output it
            msg["content"] = f"<think>\n{text(i, THINK_IN_CONTENT)}\n</think>\n\n{msg['content']}"
        if draw(st.sampled_from([False, False, False, True])):
            msg["reasoning_content"] = text(i, "reasoning_content")
        calls = []
        for j in range(draw(st.integers(1, 2)) if with_calls else 0):
            name = words.word()
            names.append(name)
            pieces.append((i, f"tool_calls[{j}].function.name", name))
            args: dict[str, Any] = {}
            for _ in range(draw(st.integers(0, 2))):
                key = words.word()
                value: Any = draw(st.sampled_from([words.word(), words.number()]))
                args[key] = value
                where = f"tool_calls[{j}].function.arguments"
                pieces.extend([(i, where, key), (i, where, str(value))])
            calls.append(
                {
                    "id": f"c{i:04d}x{j:03d}",  # 9 alphanumerics (Mistral's rule)
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
        if calls:
            msg["tool_calls"] = calls
        msgs.append(msg)
        for call in calls:
            k = len(msgs)
            msgs.append({"role": "tool", "tool_call_id": call["id"], "content": text(k)})

    for _ in range(draw(st.integers(0, 2))):
        plain("system")
    for _ in range(draw(st.integers(1, 3))):
        if msgs and draw(st.integers(0, 4)) == 0:
            plain("system")  # a system message later in the conversation
        plain("user")
        if draw(st.booleans()):
            assistant(with_calls=True)
        assistant(with_calls=False)
    end = len(msgs) - draw(st.integers(0, len(msgs) - 1))  # it may end on any role
    msgs = msgs[:end]
    pieces = [p for p in pieces if p[0] is not None and p[0] < end]
    tools = None
    if draw(st.booleans()):
        tool_names = [*names, words.word()]
        tools = [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": "A generated tool.",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for n in tool_names
        ]
        pieces.extend((None, f"tools[{k}]", n) for k, n in enumerate(tool_names))
    return Case(msgs, tools, draw(st.booleans()), pieces)


# ----------------------------------------------------------------------------- the format's rules
def declared_drops(
    template: chatfmt.Template, case: Case, options: dict[str, Any]
) -> set[tuple[int | None, str]]:
    """The (message index, field path) pieces the template itself declares it leaves out
    (``Template.history``, asked through ``Template.drops``): no list in this test."""
    out: set[tuple[int | None, str]] = set()
    drops = template.drops(
        case.messages,
        tools=case.tools,
        add_generation_prompt=case.add_generation_prompt,
        **options,
    )
    for d in drops:
        out.add((d.index, THINK_IN_CONTENT if d.field == "content" else d.field))
    return out


def exempt(covered: set[tuple[int | None, str]], index: int | None, path: str) -> bool:
    if path.startswith("tools["):
        path = "tools"
    return (index, path) in covered


# ----------------------------------------------------------------------------- the property
def switch_options(template: chatfmt.Template) -> list[str]:
    """The template's on/off options (``enable_thinking``, ``clear_thinking``, …)."""
    return [
        key
        for key, value in template.default_options.items()
        if isinstance(value, bool) or (value is None and "thinking" in key)
    ]


def check_no_silent_loss(
    template: chatfmt.Template, case: Case, options: dict[str, Any] | None = None
) -> None:
    try:
        out = template.render(
            case.messages,
            tools=case.tools,
            add_generation_prompt=case.add_generation_prompt,
            **(options or {}),
        )
    except ChatFmtError as exc:
        index = getattr(exc, "index", "missing")
        where = getattr(exc, "field", None)
        if isinstance(exc, TemplateRejected):  # the official template's own raise_exception:
            where = "(the template's own check)"  # its message says what; the index says where
            assert isinstance(index, int), f"{template.name}: error names no message: {exc!r}"
        assert where, f"{template.name}: error names no field: {exc!r}"
        if index is None:
            assert where.split("[")[0] in ("tools", "messages"), (
                f"{template.name}: error names no message: {exc!r}"
            )
        else:
            assert isinstance(index, int) and 0 <= index < len(case.messages), (
                f"{template.name}: error names no message of the conversation: {exc!r}"
            )
        return
    # with lossless=True nothing may be left out (the render raises instead)
    covered = (
        set() if (options or {}).get("lossless") else declared_drops(template, case, options or {})
    )
    lost = [
        (index, path, word)
        for index, path, word in case.pieces
        if word not in out and not exempt(covered, index, path)
    ]
    assert not lost, (
        f"{template.name} silently dropped {lost}\noptions={options}\nmessages={case.messages}\n"
        f"tools={case.tools}\nadd_generation_prompt={case.add_generation_prompt}\n"
        f"render={out!r}"
    )


@pytest.mark.parametrize("name", TEMPLATES)
@settings(max_examples=25)  # per template (the whole registry): a fresh set each run outside CI
@given(case=cases(), data=st.data())
def test_every_template_renders_or_refuses_with_index_and_field(
    name: str, case: Case, data: st.DataObject
) -> None:
    template = chatfmt.get_template(name)
    switches = switch_options(template)
    options = {key: data.draw(st.booleans(), label=key) for key in switches}
    # strict_history: the official bytes or an error (by default text beside tool calls that
    # the official template would drop is written as the model writes it)
    options["strict_history"] = data.draw(st.booleans(), label="strict_history")
    # lossless: what the format's own rules leave out is refused instead
    options["lossless"] = data.draw(st.booleans(), label="lossless")
    check_no_silent_loss(template, case, options)


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_property_is_not_vacuous(name: str) -> None:
    """Every template renders a plain exchange with all its text (the check above can pass)."""
    tpl = chatfmt.get_template(name)
    if tpl.generation_config.capability == "completion":
        msgs = [{"role": "user", "content": "zq1v zq2v"}]
    else:
        msgs = [
            {"role": "user", "content": "zq1v zq2v"},
            {"role": "assistant", "content": "zq3v zq4v"},
        ]
    out = tpl.render(msgs, add_generation_prompt=False)
    assert all(f"zq{n}v" in out for n in range(1, len(msgs) * 2 + 1))


def _declaring(pick: Callable[[HistoryRules], bool]) -> list[str]:
    return [t.name for t in chatfmt.list_templates() if pick(t.history)]


#: A reply with reasoning (field and form drawn below) before a later user turn and reply:
#: every rule but ``Shown.ALL`` leaves message 1's reasoning out.
def _history(field: str) -> list[dict[str, Any]]:
    reply: dict[str, Any] = {"role": "assistant", "content": "zq2v"}
    if field == "reasoning_content":
        reply["reasoning_content"] = "zq3v"
    else:
        reply["content"] = "<think>\nzq3v\n</think>\n\nzq2v"
    return [
        {"role": "user", "content": "zq1v"},
        reply,
        {"role": "user", "content": "zq4v"},
        {"role": "assistant", "content": "zq5v"},
    ]


@pytest.mark.parametrize(
    ("name", "field"),
    [(n, "reasoning_content") for n in _declaring(lambda h: h.reasoning is not Shown.ALL)]
    + [(n, "content") for n in _declaring(lambda h: h.think_in_content is not Shown.ALL)],
)
def test_declared_reasoning_rules_are_exact_and_lossless_refuses_them(
    name: str, field: str
) -> None:
    """What a template declares it leaves out it really leaves out (the declaration is not a
    blanket excuse), ``drops`` names it, ``lossless=True`` refuses it, and the option that
    keeps it (``kept_by``) keeps it."""
    tpl = chatfmt.get_template(name)
    msgs = _history(field)
    out = tpl.render(msgs, add_generation_prompt=False)
    assert all(w in out for w in ("zq1v", "zq2v", "zq4v", "zq5v")) and "zq3v" not in out
    drops = tpl.drops(msgs, add_generation_prompt=False)
    assert [(d.index, d.field) for d in drops] == [(1, field)] and drops[0].reason
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs, add_generation_prompt=False, lossless=True)
    assert (err.value.index, err.value.field) == (1, field)
    if tpl.history.kept_by is not None:
        option, value = tpl.history.kept_by
        kept = tpl.render(msgs, add_generation_prompt=False, lossless=True, **{option: value})
        assert "zq3v" in kept


#: one chat template without tool support (it has no tool-definition section either)
NO_TOOLS = next(
    t.name
    for t in chatfmt.list_templates()
    if not t.supports_tools and t.generation_config.capability != "completion"
)


@pytest.mark.parametrize("name", [*_declaring(lambda h: not h.tool_definitions), NO_TOOLS])
def test_templates_without_a_tool_definition_section_say_so(name: str) -> None:
    tpl = chatfmt.get_template(name)
    assert not tpl.info()["history"]["tool_definitions"]
    tool = {"type": "function", "function": {"name": "zq9v", "parameters": {"type": "object"}}}
    ask = [{"role": "user", "content": "hi"}]
    assert "zq9v" not in tpl.render(ask, tools=[tool])
    assert [(d.index, d.field) for d in tpl.drops(ask, tools=[tool])] == [(None, "tools")]
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(ask, tools=[tool], lossless=True)
    assert (err.value.index, err.value.field) == (None, "tools")


def test_harmony_keeps_the_analysis_of_a_pending_call_only() -> None:
    """gpt-oss: the declared rule follows openai-harmony (tests/render/test_gpt_oss.py)."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    pending = [
        {"role": "user", "content": "zq1v"},
        {"role": "assistant", "content": None, "reasoning_content": "zq3v", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "zq4v"},
    ]
    tpl = chatfmt.get_template("gpt-oss")
    assert "zq3v" in tpl.render(pending) and tpl.drops(pending) == []
    answered = [*pending, {"role": "assistant", "content": "zq5v"}]
    assert "zq3v" not in tpl.render(answered, add_generation_prompt=False)
    assert [(d.index, d.field) for d in tpl.drops(answered, add_generation_prompt=False)] == [
        (1, "reasoning_content")
    ]


# ----------------------------------------------------------------------------- the reported cases
WEATHER_CALL = {
    "id": "callweath",  # 9 alphanumerics, valid for every template
    "type": "function",
    "function": {"name": "get_current_weather", "arguments": '{"location": "Shanghai"}'},
}
TEXT_BESIDE_CALL = [
    {"role": "system", "content": "You are InternLM2-Chat, a harmless AI assistant"},
    {"role": "user", "content": "I want to know today's weather in Shanghai"},
    {
        "role": "assistant",
        "content": "Sure, I will search for the weather of Shanghai.",
        "tool_calls": [WEATHER_CALL],
    },
    {"role": "tool", "tool_call_id": "callweath", "content": '{"temperature": 22}'},
    {"role": "assistant", "content": "The weather in Shanghai is 22 celsius"},
]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}


@pytest.mark.parametrize(
    "name",
    [
        "llama3.1",
        "llama3.2",
        "llama3.3",
        "mistral-v3",
        "mistral-v3-tekken",
        "mistral-v7",
        "command-r7b",
        "command-r7b-tool-use",
    ],
)
def test_text_beside_a_tool_call_is_refused_where_the_official_template_drops_it(
    name: str,
) -> None:
    """examples/function_call_internlm2.json lost its text with exit 0 (issue 11). With
    ``strict_history=True`` it is refused; by default it is written as the model writes it,
    right before the call (tests/render/test_reply_history.py)."""
    tpl = chatfmt.get_template(name)
    msgs = TEXT_BESIDE_CALL if not name.startswith("mistral-v3") else TEXT_BESIDE_CALL[1:]
    shift = len(TEXT_BESIDE_CALL) - len(msgs)
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs, tools=[WEATHER_TOOL], strict_history=True)
    assert (err.value.index, err.value.field) == (2 - shift, "content")
    out = tpl.render(msgs, tools=[WEATHER_TOOL])
    text = msgs[2 - shift]["content"]
    assert "get_current_weather" in out[out.index(text) :]  # the call follows the text
    # The documented way: the text as its own message and the call with content null.
    split = [
        *msgs[: 2 - shift],
        {"role": "assistant", "content": None, "tool_calls": [WEATHER_CALL]},
        *msgs[3 - shift :],
    ]
    out = tpl.render(split, tools=[WEATHER_TOOL])
    assert "get_current_weather" in out and "Shanghai is 22 celsius" in out


@pytest.mark.parametrize("name", ["mistral-v3", "mistral-v3-tekken"])
def test_mistral_v3_refuses_a_system_prompt_it_would_drop(name: str) -> None:
    """The system text goes into the final user turn: ending on an assistant turn lost it."""
    tpl = chatfmt.get_template(name)
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render(msgs, add_generation_prompt=False)
    assert (err.value.index, err.value.field) == (0, "content")
    assert "Be brief." in tpl.render(msgs[:2])


def test_packaged_templates_refuse_what_their_official_file_drops() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    turn = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    # LFM2's official template writes an assistant message's content only: the calls are
    # written into it as the model writes them, or refused with strict_history.
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(turn, "lfm2", add_generation_prompt=False, strict_history=True)
    assert (err.value.index, err.value.field) == (1, "tool_calls[0]")
    assert chatfmt.render(turn, "lfm2", add_generation_prompt=False).endswith(
        "<|im_start|>assistant\n<|tool_call_start|>[get_weather()]<|tool_call_end|><|im_end|>\n"
    )
    # The same turn where the official file writes it renders exactly the official output.
    assert "get_weather" in chatfmt.render(turn, "lfm2.5-moe", add_generation_prompt=False)


PARIS = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
ROME = {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
TOOLS_PAIR = [
    {"type": "function", "function": {"name": n, "description": "A tool.", "parameters": {}}}
    for n in ("get_weather", "get_time")
]


@pytest.mark.parametrize("name", ["gigachat3", "gigachat3.1"])
def test_gigachat3_refuses_the_second_of_two_parallel_calls(name: str) -> None:
    """Its official file writes the first call of a message only; the second call's name is
    still in the tool list, which hid the drop (issue 22: the last silent drops)."""
    msgs = [
        {"role": "user", "content": "Weather and time?"},
        {"role": "assistant", "content": "", "tool_calls": [PARIS, ROME]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "noon"},
    ]
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(msgs, name, tools=TOOLS_PAIR)
    assert (err.value.index, err.value.field) == (1, "tool_calls[1]")
    one = [msgs[0], {**msgs[1], "tool_calls": [PARIS]}, msgs[2]]
    assert "get_weather" in chatfmt.render(one, name, tools=TOOLS_PAIR)


@pytest.mark.parametrize("name", ["lfm2", "lfm2.5"])
def test_lfm2_writes_tool_calls_of_earlier_turns_as_the_model_does(name: str) -> None:
    """Its official file writes an assistant message's content only; with tools given, the
    call's name in the tool list hid the drop of an earlier turn's call. The model writes its
    calls as text in its reply: that is where they go (the form LFM2.5-8B-A1B's file renders,
    which the ``lfm2`` parser reads back); ``strict_history=True`` refuses them."""
    call = {**PARIS, "function": {"name": "get_weather", "arguments": '{"city": "Paris", "n": 2}'}}
    msgs = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks!"},
    ]
    written = "Checking.<|tool_call_start|>[get_weather(city='Paris', n=2)]<|tool_call_end|>"
    out = chatfmt.render(msgs, name, tools=TOOLS_PAIR)
    assert f"<|im_start|>assistant\n{written}<|im_end|>\n" in out
    back = chatfmt.parse(written, name, tools=TOOLS_PAIR)
    assert (back.content, [(c.name, json.loads(c.arguments)) for c in back.tool_calls]) == (
        "Checking.",
        [("get_weather", {"city": "Paris", "n": 2})],
    )
    with pytest.raises(UnsupportedFeatureError) as err:
        chatfmt.render(msgs, name, tools=TOOLS_PAIR, strict_history=True)
    assert (err.value.index, err.value.field) == (1, "tool_calls[0]")


def test_a_recognized_official_file_keeps_its_formats_rules() -> None:
    """Qwen3's official Jinja, loaded from a file, is recognized as the native ``qwen3``: its
    declared rules are the native template's, whichever of the two renders a call."""
    from _support import TEMPLATES as REFERENCE
    from _support import require_shared

    require_shared()
    tpl = chatfmt.get_template(REFERENCE / "Qwen-Qwen3-0.6B.jinja")
    assert tpl.history == chatfmt.get_template("qwen3").history
    msgs = _history("reasoning_content")
    for options in ({}, {"enable_thinking": False}):  # native and Jinja backends
        with pytest.raises(UnsupportedFeatureError) as err:
            tpl.render(msgs, add_generation_prompt=False, lossless=True, **options)
        assert (err.value.index, err.value.field) == (1, "reasoning_content")
