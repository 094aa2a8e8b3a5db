"""Engine dialects: the exact ``/v1/completions`` body each engine gets for each kind of
constraint, engine detection, and the emulated lazy grammar (free text, then the call
re-generated under the grammar), against the fake engine of ``_fake_server.py``.

Field names as the engines document them: llama.cpp server (``tools/server``, b5000+:
``grammar``, ``grammar_lazy``, ``grammar_triggers`` with type 1 = word, ``repeat_penalty``),
llama-cpp-python 0.3.36 ``llama_cpp.server`` (``grammar``, ``repeat_penalty``, string prompt),
vLLM ≥ 0.12 (``structured_outputs`` ``json``/``grammar``, ``response_format``
``structural_tag``), SGLang 0.5 ``CompletionRequest`` (``json_schema`` as a JSON string,
``ebnf``, ``response_format`` ``structural_tag``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("aiohttp")

from _fake_server import FakeCompletionsServer, serve
from chatfmt.backends import CompletionRequest
from chatfmt.backends.openai import OpenAICompletionsBackend
from chatfmt.constraints import Constraint
from chatfmt.errors import ChatFmtError

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
CALL_GRAMMAR = 'root ::= "{\\"name\\": \\"f\\", \\"arguments\\": {}}\\n</tool_call>"'
LAZY_GRAMMAR = 'root ::= "<tool_call>\\n{\\"name\\": \\"f\\", \\"arguments\\": {}}\\n</tool_call>"'
TAG = {
    "type": "structural_tag",
    "format": {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": []},
}


def constraint(**fields: Any) -> Constraint:
    base: dict[str, Any] = {
        "prefill": "",
        "gbnf": "",
        "trigger": None,
        "json_schema": None,
        "structural_tag": None,
        "ebnf": None,
    }
    return Constraint(**{**base, **fields})


JSON_ONLY = constraint(gbnf='root ::= "{\\"a\\": 1}"', json_schema=SCHEMA)
REQUIRED = constraint(prefill="<tool_call>\n", gbnf=CALL_GRAMMAR)
LAZY = constraint(gbnf=LAZY_GRAMMAR, trigger="<tool_call>", structural_tag=TAG)
LAZY_UNTAGGED = constraint(gbnf=LAZY_GRAMMAR, trigger="<tool_call>")


@pytest.fixture(scope="module")
def running() -> Iterator[FakeCompletionsServer]:
    with serve(FakeCompletionsServer()) as server:
        yield server


@pytest.fixture
def engine(running: FakeCompletionsServer) -> FakeCompletionsServer:
    running.replies.clear()
    running.requests.clear()
    running.owned_by = None
    running.root_json = {}
    return running


def request(c: Constraint | None, **more: Any) -> CompletionRequest:
    return CompletionRequest(
        "PROMPT" + (c.prefill if c else ""), max_tokens=200, repetition_penalty=1.1,
        prompt_token_ids=(1, 2, 3), constraint=c, **more,
    )  # fmt: skip


def complete(engine: FakeCompletionsServer, kind: str, req: CompletionRequest) -> str:
    async def run() -> str:
        backend = OpenAICompletionsBackend(
            engine.base_url, model="m", kind=kind, send_token_ids=True
        )
        async with backend:
            return (await backend.complete(req)).text

    return asyncio.run(run())


ENGINE_FIELDS = {"grammar", "grammar_lazy", "grammar_triggers", "structured_outputs"}
ENGINE_FIELDS |= {"response_format", "json_schema", "ebnf"}


def sent(engine: FakeCompletionsServer) -> dict[str, Any]:
    """The constraint fields and the prompt of the one request the engine got."""
    (body,) = engine.requests
    out = {k: v for k, v in body.items() if k in ENGINE_FIELDS}
    out["prompt"] = body["prompt"]
    out["penalty"] = {k: body[k] for k in ("repeat_penalty", "repetition_penalty") if k in body}
    return out


# ---------------------------------------------------------------------- bodies per engine
@pytest.mark.parametrize(
    ("kind", "c", "expected"),
    [
        ("llama.cpp", REQUIRED, {"grammar": CALL_GRAMMAR}),
        ("llama.cpp", JSON_ONLY, {"grammar": JSON_ONLY.gbnf}),
        (
            "llama.cpp",
            LAZY,
            {
                "grammar": LAZY_GRAMMAR,
                "grammar_lazy": True,
                "grammar_triggers": [{"type": 1, "value": "<tool_call>"}],
            },
        ),
        ("llama-cpp-python", REQUIRED, {"grammar": CALL_GRAMMAR}),
        ("llama-cpp-python", JSON_ONLY, {"grammar": JSON_ONLY.gbnf}),
        ("vllm", JSON_ONLY, {"structured_outputs": {"json": SCHEMA}}),
        ("vllm", REQUIRED, {"structured_outputs": {"grammar": CALL_GRAMMAR}}),
        ("vllm", LAZY, {"response_format": TAG}),
        ("sglang", JSON_ONLY, {"json_schema": json.dumps(SCHEMA)}),
        ("sglang", REQUIRED, {"ebnf": CALL_GRAMMAR}),
        ("sglang", LAZY, {"response_format": TAG}),
        ("generic", REQUIRED, {}),
        ("generic", LAZY, {}),
    ],
)
def test_each_engine_gets_the_constraint_in_its_own_fields(
    engine: FakeCompletionsServer, kind: str, c: Constraint, expected: dict[str, Any]
) -> None:
    engine.replies.append("x")
    complete(engine, kind, request(c))
    body = sent(engine)
    assert {k: v for k, v in body.items() if k in ENGINE_FIELDS} == expected
    penalty = "repeat_penalty" if kind.startswith("llama") else "repetition_penalty"
    assert body["penalty"] == {penalty: 1.1}
    # llama-cpp-python's server takes a string prompt only; the others take the ids
    assert body["prompt"] == ("PROMPT<tool_call>\n" if c is REQUIRED else "PROMPT") or (
        kind != "llama-cpp-python" and body["prompt"] == [1, 2, 3]
    )


def test_an_ebnf_of_its_own_goes_to_vllm_and_sglang(engine: FakeCompletionsServer) -> None:
    c = constraint(prefill="<tool_call>\n", gbnf=CALL_GRAMMAR, ebnf='root ::= "x"')
    engine.replies += ["x", "x"]
    complete(engine, "vllm", request(c))
    complete(engine, "sglang", request(c))
    assert engine.requests[0]["structured_outputs"] == {"grammar": 'root ::= "x"'}
    assert engine.requests[1]["ebnf"] == 'root ::= "x"'


def test_without_a_tag_vllm_and_sglang_get_the_whole_reply_as_one_grammar(
    engine: FakeCompletionsServer,
) -> None:
    c = constraint(gbnf=LAZY_GRAMMAR, trigger="<tool_call>", ebnf="root ::= text? call")
    engine.replies += ["x", "x"]
    complete(engine, "vllm", request(c))
    complete(engine, "sglang", request(c))
    assert engine.requests[0]["structured_outputs"] == {"grammar": "root ::= text? call"}
    assert engine.requests[1]["ebnf"] == "root ::= text? call"


def test_a_structural_tag_without_its_type_is_wrapped(engine: FakeCompletionsServer) -> None:
    inner = {"structures": [], "triggers": ["<tool_call>"]}
    c = constraint(gbnf=LAZY_GRAMMAR, trigger="<tool_call>", structural_tag=inner)
    engine.replies.append("x")
    complete(engine, "sglang", request(c))
    assert engine.requests[0]["response_format"] == {"type": "structural_tag", **inner}


# ---------------------------------------------------------------------- lazy grammars emulated
@pytest.mark.parametrize("kind", ["llama-cpp-python", "vllm", "sglang"])
def test_a_lazy_constraint_is_emulated_where_the_engine_has_no_lazy_grammar(
    engine: FakeCompletionsServer, kind: str
) -> None:
    """Free text first; at the call's opening that generation stops and the call is
    generated again, from the text before it, under the strict grammar."""
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    engine.replies += ["Let me look.<tool_call>\n{"+'"name": "wrong', call]  # fmt: skip
    text = complete(engine, kind, request(LAZY_UNTAGGED))
    assert text == "Let me look." + call
    free, strict = engine.requests
    assert not ENGINE_FIELDS & set(free)
    assert strict["prompt"] == "PROMPTLet me look."  # the continuation goes as text
    grammar = {
        "llama-cpp-python": {"grammar": LAZY_GRAMMAR},
        "vllm": {"structured_outputs": {"grammar": LAZY_GRAMMAR}},
        "sglang": {"ebnf": LAZY_GRAMMAR},
    }[kind]
    assert {k: v for k, v in strict.items() if k in ENGINE_FIELDS} == grammar
    assert strict["max_tokens"] < 200


@pytest.mark.parametrize("one_write", [False, True])
def test_the_free_part_counts_the_engines_events_however_they_are_read(
    engine: FakeCompletionsServer, one_write: bool
) -> None:
    """The call gets what is left of ``max_tokens``: the free part is counted in the
    engine's events (3 characters each here), whether each came in its own read or all
    in one."""
    free = 'Let me look.<tool_call>\n{"name": "wrong'
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    engine.replies += [free, call]
    engine.one_write = one_write
    engine.chunk_delay = 0.0 if one_write else 0.005  # else: each event in its own read
    try:
        complete(engine, "vllm", request(LAZY_UNTAGGED))
    finally:
        engine.one_write, engine.chunk_delay = False, 0.0
    events = len(range(0, len(free), engine.chunk_size))
    read = free.index("<tool_call>") + len("<tool_call>")  # where a piece-by-piece read stops
    counted = events if one_write else -(-read // engine.chunk_size)
    assert engine.requests[1]["max_tokens"] == 200 - (counted - 1)


def test_a_lazy_constraint_without_a_call_is_one_free_generation(
    engine: FakeCompletionsServer,
) -> None:
    engine.replies.append("Just text, no <tool_ call.")
    assert complete(engine, "llama-cpp-python", request(LAZY)) == "Just text, no <tool_ call."
    assert len(engine.requests) == 1 and "grammar" not in engine.requests[0]


def test_a_trigger_split_across_streamed_pieces_is_held_back(
    engine: FakeCompletionsServer,
) -> None:
    """The fake engine streams 3 characters per event: '<tool_call>' arrives in pieces,
    none of which reaches the client before the call is known."""
    engine.replies += ["Hi <tool_call>{", "<tool_call>\n{}\n</tool_call>"]

    async def run() -> list[str]:
        backend = OpenAICompletionsBackend(engine.base_url, model="m", kind="llama-cpp-python")
        async with backend:
            return [c.text async for c in backend.stream(request(LAZY))]

    pieces = asyncio.run(run())
    assert pieces[0] == "Hi "  # sent at once: it cannot start the trigger
    assert "".join(pieces) == "Hi <tool_call>\n{}\n</tool_call>"  # no piece twice
    assert len(engine.requests) == 2


# ---------------------------------------------------------------------- detection
@pytest.mark.parametrize(
    ("owned_by", "root_json", "kind"),
    [
        ("vllm", {}, "vllm"),
        ("sglang", {}, "sglang"),
        ("llamacpp", {}, "llama.cpp"),
        (
            "me",
            {"/openapi.json": {"info": {"title": "🦙 llama.cpp Python API"}}},
            "llama-cpp-python",
        ),
        (None, {"/props": {"default_generation_settings": {}}}, "llama.cpp"),
        (None, {"/version": {"version": "0.12.0"}}, "vllm"),
        (None, {"/server_info": {"model_path": "m"}}, "sglang"),
        (None, {"/get_server_info": {"model_path": "m"}}, "sglang"),
        ("me", {}, "generic"),
        (None, {}, "generic"),
    ],
)
def test_the_engine_is_detected_once_from_its_own_endpoints(
    engine: FakeCompletionsServer, owned_by: str | None, root_json: dict[str, Any], kind: str
) -> None:
    engine.owned_by = owned_by
    engine.root_json = root_json

    async def run() -> tuple[str, str]:
        async with OpenAICompletionsBackend(engine.base_url) as backend:
            found = await backend.engine_kind()
            engine.root_json = {}  # asked once: the answer is kept
            return found, await backend.engine_kind()

    assert asyncio.run(run()) == (kind, kind)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ChatFmtError, match="unknown backend kind 'tgi'"):
        OpenAICompletionsBackend("http://127.0.0.1:1/v1", kind="tgi")


def test_the_kind_is_configured_per_model_in_the_config_file(tmp_path: Any) -> None:
    from chatfmt.gateway.config import load_config

    config = tmp_path / "serve.toml"
    config.write_text('[models.a]\nbackend = "http://127.0.0.1:1/v1"\nbackend_kind = "sglang"\n')
    (spec,), _limits = load_config(config)
    assert spec.backend_kind == "sglang"
    config.write_text('[models.a]\nbackend = "http://127.0.0.1:1/v1"\nbackend_kind = "tgi"\n')
    with pytest.raises(ChatFmtError, match=r"models\.a\.backend_kind: unknown backend kind 'tgi'"):
        load_config(config)
