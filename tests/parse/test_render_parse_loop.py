"""Parsing closes the loop with rendering, for every registered template.

The property: ``parse(render(history + [turn])[len(render(history)):]) == turn``
(``render(history)`` with the generation prompt, the turn without), with and
without the end-of-turn marker, whole and streamed (whole, every single cut
point, random cuts), and with a hallucinated next turn after the marker, which
must land in ``trailing_text``. Also: ``finish_reason``, ``ParsedMessage`` and
the per-template table in ``docs/parsing.md``.
"""

from __future__ import annotations

import itertools
import json
import pickle
import random
from dataclasses import dataclass
from typing import Any

import pytest

import chatfmt
from _parser_table import REGISTRY_BLOCK, docs_block, registry_table_markdown
from _streaming import wire
from _turns import HISTORY, TOOLS, TURNS
from chatfmt.errors import ChatFmtError, ParseError
from chatfmt.parsing import (
    Delta,
    ParsedMessage,
    StreamParser,
    end_of_turn_markers,
    merge_deltas,
    parse,
)
from chatfmt.parsing import base as parsing_base

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

TRAILING = "Hallucinated next turn: what about Rome?"

_CALLS = ("call", "text+call", "two calls")
#: (template, turn kinds, option variants, reason): the rendered turn does not start with the
#: generation prompt, so a model prompted that way never writes it and the property is undefined.
_NOT_A_CONTINUATION = [
    ("command-r", _CALLS, ("",), "tool calls are rendered with the tool instructions after them"),
    (
        "command-r7b-tool-use",
        ("plain",),  # a reply with reasoning and no calls is refused (its template drops it)
        ("", "enable_thinking=False"),
        "the generation prompt opens an empty thinking block that the rendered answer has not",
    ),
    (
        "glm4.7",
        ("plain", *_CALLS),
        ("", "enable_thinking=True"),
        "the prompt ends with <think>; a turn without reasoning is rendered with '</think>' only",
    ),
    (
        "deepseek-v3.2",
        ("plain", *_CALLS),
        ("", "enable_thinking=False"),
        "thinking off: the prompt ends with '<think></think>', the rendered turn with '</think>' only"
        " (round trip tested in tests/parse/test_invoke_calls.py)",
    ),
    (
        "spark-x2.5",
        ("plain", *_CALLS),
        ("",),
        "the prompt ends with <think>; a turn without reasoning is rendered with '</think>' only",
    ),
    *(
        (
            name,
            ("reasoning",),
            ("",),
            "thinking is off by default: the prompt prefills '</think>'; a turn with reasoning is "
            "rendered with its <think> block",
        )
        for name in ("laguna-xs.2", "laguna-xs-2.1")
    ),
    (
        "nemotron-nano-v2",
        ("plain", "text+call"),
        ("",),
        "the final reply is rendered inside the <think> block the prompt opened (never closed), "
        "and its calls as a second assistant turn",
    ),
    (
        "nemotron3-nano",
        ("plain", *_CALLS),
        ("",),
        "the prompt opens <think>; a turn without reasoning is rendered with '<think></think>'",
    ),
    *(
        (
            name,
            ("reasoning",),
            ("enable_thinking=False",),
            "thinking off prefills an empty block; a turn with reasoning is rendered with it",
        )
        for name in ("glm4.5", "glm4.7", "qwen3", "qwen3.5")
    ),
    (
        "hy3",
        ("reasoning",),
        ("",),
        "reasoning_effort no_think (the default) prefills an empty block; a turn with reasoning "
        "is rendered with it",
    ),
]
NOT_A_CONTINUATION: dict[tuple[str, str, str], str] = {
    (name, kind, opts): reason
    for name, kinds, variants, reason in _NOT_A_CONTINUATION
    for kind in kinds
    for opts in variants
}

#: Templates whose official format writes the text of a tool-call message as reasoning, with the
#: reason: parsing gives it back as ``reasoning_content``.
TEXT_WITH_CALLS_AS_REASONING = {
    "gpt-oss": "Harmony writes the text next to a tool call on the analysis channel",
}

#: Templates with a tool parser whose official format renders no assistant tool calls (chatfmt
#: refuses them), so there is no rendered turn to parse back; their parsers are tested on model
#: output in tests/parse/test_family_parser_edge_cases.py.
PARSE_ONLY_TOOLS = {
    "smollm3": "the official template drops assistant tool calls; chatfmt refuses to render them",
}

#: Templates whose official form writes Python's ``None`` for ``content: null`` (as transformers
#: renders it): the rendered turn's text is "None", so that is what parses back.
RENDERS_NULL_CONTENT_AS_NONE = {
    "minimax-m2": "visible_text(None) renders 'None' before the tool calls",
}

#: Templates whose official form renders only the first tool call of a turn (the others are
#: dropped), so a turn with several calls has no rendered form to parse back.
FIRST_CALL_ONLY = {
    "gigachat3": "one call per turn: the template renders tool_calls[0]",
    "gigachat3.1": "one call per turn: the template renders tool_calls[0]",
}

#: Templates with a tool parser whose rendering writes no assistant tool calls: there is no
#: rendered call to parse back. Empty: LFM2's and LFM2.5-Instruct's official files write an
#: assistant message's content only, and chatfmt writes the calls into it as the model does.
TOOLS_DROPPED_BY_TEMPLATE: dict[str, str] = {
    name: "ERNIE 4.5's template (transformers') has no tool calls or tool messages: refused"
    for name in ("ernie-4.5", "ernie-4.5-thinking")
}

#: Parse options for templates whose rendered reply is not what their model writes, with the
#: reason. ERNIE 4.5 Thinking's output always starts inside its reasoning (vLLM's ernie45
#: parser), but the family's template it renders with writes a reply without that block.
PARSE_OPTIONS: dict[str, dict[str, Any]] = {"ernie-4.5-thinking": {"thinking_prefilled": False}}

#: (template, turn kind, "whole" | "stream") failing because of a family parser bug that another
#: branch fixes, with the reason "fixed on h/<branch>". Empty: none of the bugs being fixed on
#: h/parser-fixes (GLM-4.5 stray "\n" delta, smollm3 tool parser, granite3 thinking, GLM-4.5 cut
#: closing tag, duplicate <think>) shows in this property today.
KNOWN_PARSER_BUGS: dict[tuple[str, str, str], str] = {}


def _option_variants(tpl: Any) -> list[dict[str, Any]]:
    opts = getattr(tpl, "default_options", {}) or {}
    variants: list[dict[str, Any]] = [{}]
    if "enable_thinking" in opts:
        variants += [{"enable_thinking": True}, {"enable_thinking": False}]
    if "thinking" in opts:
        variants.append({"thinking": True})
    return variants


def _opts_id(opts: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(opts.items()))


@dataclass
class Case:
    name: str
    kind: str
    opts: dict[str, Any]
    output: str  # what the template writes for the turn (up to where the model stops)
    with_stop: str
    without_stop: str
    expected: tuple[Any, ...]


def _normalized(msg: dict[str, Any]) -> tuple[Any, ...]:
    """Content and reasoning modulo surrounding whitespace; calls as (name, parsed arguments)."""
    calls = []
    for c in msg.get("tool_calls") or ():
        assert "error" not in c, c
        calls.append((c["function"]["name"], json.loads(c["function"]["arguments"])))
    return (
        (msg.get("content") or "").strip() or None,
        (msg.get("reasoning_content") or "").strip() or None,
        calls,
    )


#: What a model writes after a generation prompt that prefills a thinking block.
_AFTER_PREFILL = (
    ("<think>\n</think>", "\n\n", ""),  # thinking off: an empty block
    ("<think>\n", "I should answer.\n</think>\n\n", "I should answer."),
    # Apriel 1.6: the prompt opens the reasoning, which ends at [BEGIN FINAL RESPONSE]
    (
        "Here are my reasoning steps:\n",
        "I should answer.\n[BEGIN FINAL RESPONSE]\n",
        "I should answer.",
    ),
    # Cohere2MoE (North): the prompt opens <|START_THINKING|>
    ("<|START_THINKING|>", "I should answer.<|END_THINKING|>", "I should answer."),
    ("<|channel>thought\n<channel|>", "", ""),  # Gemma 4, thinking off: the turn as rendered
)


def _after_think_prefill(
    prompt: str, full: str, reasoning: str | None = None
) -> tuple[str, str | None] | None:
    """(model output, its reasoning) where the prompt prefills a reasoning block and the rendered
    turn drops the opener (DeepSeek-R1 distills, QwQ, Apriel 1.6): the model's reasoning, the
    closer, then the turn — or the turn alone when it starts with its own ``reasoning``
    (after the opener, dropped: the prompt wrote it)."""
    for prefill, writes, thought in _AFTER_PREFILL:
        base = prompt.removesuffix(prefill)
        if base != prompt and full.startswith(base):
            rest = full[len(base) :]
            if reasoning and rest.startswith(reasoning):
                return rest, None
            if reasoning and rest.startswith(prefill + reasoning):  # the opener written again
                return rest[len(prefill) :], None
            if rest.startswith("<think>"):
                continue  # the turn opens its own block: not a continuation
            return writes + rest, thought
    return None


def _leaves_think_open(prompt: str, out: str) -> bool:
    """Whether the prompt opens ``<think>`` and the rendered turn never closes it (the answer
    is written inside the block the prompt opened: a model never writes that)."""
    return prompt.rstrip().endswith("<think>") and "</think>" not in out


def _cases() -> tuple[list[Case], set[tuple[str, str, str]]]:
    """The cases, and the (template, kind, options) whose turn does not continue the prompt."""
    cases, not_continuations = [], set()
    for tpl in chatfmt.list_templates():
        for opts in _option_variants(tpl):
            words = end_of_turn_markers(tpl, **opts)
            for kind, turn in TURNS.items():
                tools = TOOLS if "tool_calls" in turn else None
                if (
                    (len(turn.get("tool_calls") or ()) > 1 and tpl.name in FIRST_CALL_ONLY)
                    or (tools and tpl.name in TOOLS_DROPPED_BY_TEMPLATE)
                    or (tools and not tpl.tool_parser)  # no tool-call syntax to parse back
                ):
                    continue
                try:
                    prompt = tpl.render(HISTORY, add_generation_prompt=True, tools=tools, **opts)
                    full = tpl.render(
                        [*HISTORY, turn], add_generation_prompt=False, tools=tools, **opts
                    )
                except ChatFmtError:
                    continue  # the format cannot express this turn
                key = (tpl.name, kind, _opts_id(opts))
                if full.startswith(prompt) and _leaves_think_open(prompt, full[len(prompt) :]):
                    not_continuations.add(key)
                    continue
                if full.startswith(prompt):
                    out, thought = full[len(prompt) :], None
                else:
                    prefilled = _after_think_prefill(prompt, full, turn.get("reasoning_content"))
                    if prefilled is None:
                        not_continuations.add(key)
                        continue
                    out, thought = prefilled
                hits = [(i, w) for w in words if (i := out.find(w)) >= 0]
                if hits:  # the model stops at the first marker
                    at, word = min(hits, key=lambda h: (h[0], -len(h[1])))
                    tail = out[at + len(word) :]
                    after = tail[: len(tail) - len(tail.lstrip(" \t\r\n"))]
                    with_stop, without_stop = out[: at + len(word)] + after, out[:at]
                else:  # the template writes no marker (ChatGLM): the model does, then stops
                    with_stop, without_stop = out + words[0] if words else out, out
                content = turn["content"]
                if content and content not in without_stop:
                    continue  # the template does not render the text next to calls
                reasoning = turn.get("reasoning_content")
                if reasoning and reasoning not in without_stop:
                    if kind == "reasoning" and thought is None:
                        continue  # not rendered for the final turn: same as "plain"
                    reasoning = None
                if thought:
                    reasoning = thought
                if content is None and tpl.name in RENDERS_NULL_CONTENT_AS_NONE:
                    content = "None"
                if content and turn.get("tool_calls") and tpl.name in TEXT_WITH_CALLS_AS_REASONING:
                    content, reasoning = None, content
                expected = _normalized({**turn, "content": content, "reasoning_content": reasoning})
                cases.append(Case(tpl.name, kind, opts, out, with_stop, without_stop, expected))
    return cases, not_continuations


CASES, NOT_CONTINUATIONS = _cases()


def _ids(case: Case) -> str:
    return "-".join(filter(None, (case.name, case.kind.replace(" ", "_"), _opts_id(case.opts))))


def _stream(case: Case, text: str, cuts: list[int], truncated: bool = False) -> ParsedMessage:
    sp = StreamParser(
        case.name,
        tools=TOOLS,
        id_factory=lambda i: f"c{i}",
        **case.opts,
        **PARSE_OPTIONS.get(case.name, {}),
    )
    deltas: list[Delta] = []
    bounds = [0, *cuts, len(text)]
    for a, b in itertools.pairwise(bounds):
        deltas += sp.feed(text[a:b])
    deltas += sp.finish(truncated=truncated)
    return merge_deltas(deltas, finish_reason=sp.finish_reason, trailing_text=sp.trailing_text)


def _check(case: Case, check: str, msg: ParsedMessage, trailing: str = "") -> None:
    bug = KNOWN_PARSER_BUGS.get((case.name, case.kind, check))
    if bug is not None:
        pytest.xfail(bug)
    assert _normalized(msg) == case.expected, (check, msg)
    assert msg.trailing_text == trailing, check
    assert msg.finish_reason == ("tool_calls" if case.expected[2] else "stop"), check


def test_not_a_continuation_list_is_exact() -> None:
    assert sorted(NOT_CONTINUATIONS) == sorted(NOT_A_CONTINUATION)


CALL_PROBE = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_every_template_is_covered() -> None:
    """Every chat template has cases; those with a tool parser have tool-call cases."""
    covered = {c.name for c in CASES}
    chat = {t.name for t in chatfmt.list_templates() if t.generation_config.capability == "chat"}
    not_continued = {name for name, _, _ in NOT_A_CONTINUATION}
    assert chat - covered <= not_continued  # only templates listed there, each with its reason
    with_calls = {c.name for c in CASES if c.expected[2]}
    tool_templates = {t.name for t in chatfmt.list_templates() if t.tool_parser}
    assert tool_templates - with_calls <= not_continued | set(PARSE_ONLY_TOOLS) | set(
        TOOLS_DROPPED_BY_TEMPLATE
    )
    for name in TOOLS_DROPPED_BY_TEMPLATE:  # each really refuses them (the file drops them)
        turn = {"role": "assistant", "content": None, "tool_calls": [CALL_PROBE]}
        with pytest.raises(chatfmt.UnsupportedFeatureError) as dropped:  # pragma: no cover
            chatfmt.render([{"role": "user", "content": "q"}, turn], name, tools=TOOLS)
        assert (dropped.value.index, dropped.value.field) == (1, "tool_calls[0]"), name
    for name in PARSE_ONLY_TOOLS:  # each really renders no tool calls
        with pytest.raises(chatfmt.UnsupportedFeatureError, match="no tool-call format") as err:
            chatfmt.render(
                [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": None, "tool_calls": [CALL_PROBE]},
                ],
                name,
                add_generation_prompt=False,
            )
        assert (err.value.index, err.value.field) == (1, "tool_calls")
    assert {c.kind for c in CASES} == set(TURNS)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_parse_inverts_render_whole(case: Case) -> None:
    extra = PARSE_OPTIONS.get(case.name, {})
    for text in (case.with_stop, case.without_stop):
        _check(case, "whole", parse(text, case.name, tools=TOOLS, **case.opts, **extra))
    msg = parse(case.with_stop + TRAILING, case.name, tools=TOOLS, **case.opts, **extra)
    words = end_of_turn_markers(case.name, **case.opts)
    _check(case, "whole", msg, TRAILING if words else "")


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_parse_inverts_render_streamed(case: Case) -> None:
    rng = random.Random(_ids(case))
    for text in (case.with_stop, case.without_stop):
        whole = parse(
            text,
            case.name,
            tools=TOOLS,
            id_factory=lambda i: f"c{i}",
            **case.opts,
            **PARSE_OPTIONS.get(case.name, {}),
        )
        for cut in range(1, len(text)):  # every single cut point
            got = _stream(case, text, [cut])
            _check(case, "stream", got)
            assert got == whole, cut
        for _ in range(3):  # random chunkings
            cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, 8)))
            got = _stream(case, text, cuts)
            _check(case, "stream", got)
            assert got == whole
    if end_of_turn_markers(case.name, **case.opts):
        text = case.with_stop + TRAILING
        cuts = sorted(rng.sample(range(1, len(text)), k=6))
        _check(case, "stream", _stream(case, text, cuts), TRAILING)


@pytest.mark.parametrize("case", CASES[::7], ids=_ids)
def test_finish_reason_length_only_without_the_marker(case: Case) -> None:
    extra = PARSE_OPTIONS.get(case.name, {})
    cut = parse(case.without_stop, case.name, tools=TOOLS, truncated=True, **case.opts, **extra)
    assert cut.finish_reason == "length"
    if end_of_turn_markers(case.name, **case.opts):
        ended = parse(case.with_stop, case.name, tools=TOOLS, truncated=True, **case.opts, **extra)
        assert ended.finish_reason == ("tool_calls" if case.expected[2] else "stop")


# ------------------------------------------------------------------ the contract, by example
@pytest.mark.parametrize(
    ("template", "text", "content"),
    [
        ("qwen2.5", "Hello there<|im_end|>\n", "Hello there"),
        ("llama3.1", "Hello there<|eot_id|>", "Hello there"),
        ("gemma3", "Hello there<end_of_turn>\n", "Hello there"),
        ("mistral-v7", "Hello there</s>", "Hello there"),
        ("deepseek-v3", "Hello there<｜end▁of▁sentence｜>", "Hello there"),
        (
            "command-r7b",
            "<|START_RESPONSE|>Hello there<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
            "Hello there",
        ),
        ("phi3", "Hello there<|end|>\n", "Hello there"),
        ("human-assistant", "Hello there\nHuman: and then?", "Hello there"),
    ],
)
def test_end_of_turn_marker_is_never_content(template: str, text: str, content: str) -> None:
    msg = parse(text, template)
    assert msg["content"] == content
    assert msg.finish_reason == "stop"


def test_hallucinated_next_turn_goes_to_trailing_text() -> None:
    text = "Hi!<|im_end|>\n<|im_start|>user\nAnd Rome?<|im_end|>\n"
    msg = parse(text, "qwen2.5")
    assert msg == {"role": "assistant", "content": "Hi!"}
    assert msg.trailing_text == "<|im_start|>user\nAnd Rome?<|im_end|>\n"
    sp = StreamParser("qwen2.5")
    assert sp.finish_reason is None and sp.trailing_text == ""
    deltas = [d for ch in (text[:5], text[5:9], text[9:]) for d in sp.feed(ch)]
    deltas += sp.finish()
    assert wire(deltas) == [{"content": "Hi!"}]
    assert (sp.finish_reason, sp.trailing_text) == ("stop", msg.trailing_text)
    with pytest.raises(ParseError, match="after finish"):
        sp.feed("x")


def test_family_markup_is_not_an_end_of_turn() -> None:
    # InternLM2: <|action_end|> ends the call, <|im_end|> the turn.
    text = '<|action_start|><|plugin|>\n{"name": "f", "parameters": {}}<|action_end|><|im_end|>\nX'
    msg = parse(text, "internlm2")
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["f"]
    assert (msg.finish_reason, msg.trailing_text) == ("tool_calls", "X")
    # Llama 3.1: <|eom_id|> after <|python_tag|> ends the call (markup, not content).
    msg = parse('<|python_tag|>brave_search.call(query="x")<|eom_id|>', "llama3.1")
    assert msg["content"] is None
    assert msg["tool_calls"][0]["function"] == {
        "name": "brave_search",
        "arguments": '{"query": "x"}',
    }
    # ChatGLM3: <|assistant|> separates segments of one turn; <|observation|> ends it.
    msg = parse("\nLet me see<|assistant|>f\n tool_call(a=1)<|observation|>", "chatglm3")
    assert (msg["content"], msg["tool_calls"][0]["function"]["arguments"]) == (
        "Let me see",
        '{"a": 1}',
    )
    assert "<|assistant|>" not in end_of_turn_markers("chatglm3")
    assert "<|action_end|>" not in end_of_turn_markers("internlm2")
    assert end_of_turn_markers("hermes") == ()  # a bare parser name knows no turn markers


def test_look_alike_end_marker_is_text_with_token_ids() -> None:
    ids = {"<|im_end|>": 151645}
    prose = parse(
        "Quote <|im_end|> ok", "qwen2.5", token_ids=[1, 2, 3, 4, 5], special_token_ids=ids
    )
    assert (prose["content"], prose.trailing_text) == ("Quote <|im_end|> ok", "")
    real = parse(
        "Done<|im_end|>\nmore", "qwen2.5", token_ids=[7, 151645, 8, 9], special_token_ids=ids
    )
    assert (real["content"], real.trailing_text) == ("Done", "more")
    sp = StreamParser("qwen2.5", special_token_ids=ids)  # the marker cut across chunks
    deltas = sp.feed("A<|im_", token_ids=[1, 2]) + sp.feed("end|> B", token_ids=[3, 4])
    deltas += sp.finish()
    assert merge_deltas(deltas)["content"] == "A<|im_end|> B"


def test_finish_reason() -> None:
    assert parse("Hello", "qwen2.5").finish_reason == "stop"
    assert parse("Hello", "qwen2.5", truncated=True).finish_reason == "length"
    assert parse("Hello<|im_end|>", "qwen2.5", truncated=True).finish_reason == "stop"
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert parse(call, "qwen2.5").finish_reason == "tool_calls"
    assert parse(call + "<|im_end|>", "qwen2.5", truncated=True).finish_reason == "tool_calls"
    assert parse('<tool_call>\n{"name": "f", "argu', "qwen2.5", truncated=True).finish_reason == (
        "length"
    )


def test_parsed_message_is_the_plain_message() -> None:
    msg = parse("Hi<|im_end|>\nnext", "qwen2.5")
    assert isinstance(msg, dict) and isinstance(msg, ParsedMessage)
    assert msg == {"role": "assistant", "content": "Hi"} and msg == {
        "content": "Hi",
        "role": "assistant",
    }
    assert msg != {"role": "assistant", "content": "Hi", "extra": 1}
    assert (msg.content, msg.reasoning_content, msg.tool_calls) == ("Hi", None, ())
    plain = msg.to_openai()
    assert type(plain) is dict and plain == dict(msg) == {"role": "assistant", "content": "Hi"}
    assert json.loads(json.dumps(msg)) == plain
    with pytest.raises(TypeError):
        msg["content"] = "changed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        msg.finish_reason = "length"  # type: ignore[misc]
    copy = pickle.loads(pickle.dumps(msg))
    assert (copy, copy.finish_reason, copy.trailing_text) == (msg, "stop", "next")
    assert chatfmt.ParsedMessage is ParsedMessage


# ------------------------------------------------------------------ parser plans are cached
def test_stream_parser_probes_the_template_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing_base, "_PLANS", type(parsing_base._PLANS)())
    tpl = chatfmt.get_template("qwen3")
    calls: list[dict[str, Any]] = []
    render = type(tpl).render

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return render(self, *args, **kwargs)

    monkeypatch.setattr(type(tpl), "render", counting)
    for _ in range(5):
        StreamParser(tpl)
    first = len(calls)
    assert first > 0
    for _ in range(5):
        StreamParser("qwen3")
    assert len(calls) == first
    StreamParser(tpl, enable_thinking=False)  # other options: probed anew, not the cached plan
    assert len(calls) > first


def test_cached_plans_follow_the_options() -> None:
    # DeepSeek-R1-Distill-Qwen prefills <think> unless thinking is off: never a stale plan.
    on = parse("r</think>a", "deepseek-r1-distill-qwen", enable_thinking=True)
    off = parse("r</think>a", "deepseek-r1-distill-qwen", enable_thinking=False)
    again = parse("r</think>a", "deepseek-r1-distill-qwen", enable_thinking=True)
    assert on == again
    assert on != off


# ------------------------------------------------------------------ the per-template table in the docs
def test_docs_parser_table_matches_the_registry() -> None:
    assert docs_block(REGISTRY_BLOCK) == registry_table_markdown(), (
        "docs/parsing.md is stale: run `python tests/_parser_table.py` to regenerate the table"
    )
