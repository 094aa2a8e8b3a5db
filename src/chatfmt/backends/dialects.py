"""What each completions engine calls things: sampling fields and constraint fields.

chatfmt sends the same :class:`~chatfmt.backends.CompletionRequest` to every
OpenAI-compatible ``/v1/completions`` server; the engine kind decides the body's
engine-specific fields. The kind is configured per backend (``backend_kind``,
``--backend-kind``) or detected once from the engine's own endpoints (:func:`detect_kind`).

Constraint fields per kind (one constraint per request):

- ``llama.cpp`` (llama-server, ``tools/server``, b5000+): ``grammar`` (GBNF); lazy:
  ``grammar_lazy: true`` and ``grammar_triggers: [{"type": 1, "value": trigger}]`` (type 1
  is ``COMMON_GRAMMAR_TRIGGER_TYPE_WORD``). Sampling: ``repeat_penalty``.
- ``llama-cpp-python`` (0.3.36, ``python -m llama_cpp.server``): ``grammar`` only, a string
  prompt only, ``repeat_penalty``; lazy: emulated (:mod:`.lazy`).
- ``vllm`` (≥ 0.12, where the ``guided_*`` fields were removed): ``structured_outputs``
  ``{"json": schema}`` or ``{"grammar": ebnf}``; lazy: ``response_format`` ``{"type":
  "structural_tag", …}``, else the constraint's ``ebnf`` (free text included) as the
  grammar, else emulated.
- ``sglang`` (0.5, its ``CompletionRequest``): ``json_schema`` (a JSON string) or ``ebnf``;
  lazy: ``response_format`` ``structural_tag``, else ``ebnf`` (free text included), else
  emulated.
- ``generic``: none; the prompt's prefill only, and the reply is validated.

llama.cpp kinds get a JSON answer as the compiled ``grammar`` too, not as ``json_schema``:
the grammar was made by llama.cpp's own schema converter and validated, and one field for
every constraint keeps the two servers alike.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from ..errors import ChatFmtError

if TYPE_CHECKING:
    from ..constraints import Constraint

#: The engines whose request fields chatfmt knows.
EngineKind = Literal["llama.cpp", "llama-cpp-python", "vllm", "sglang", "generic"]
ENGINE_KINDS: tuple[str, ...] = get_args(EngineKind)

#: ``owned_by`` of ``/v1/models`` per engine (llama-cpp-python's "me" is confirmed by its
#: OpenAPI title, being too common a word to trust alone).
_OWNERS: dict[str, EngineKind] = {"llamacpp": "llama.cpp", "vllm": "vllm", "sglang": "sglang"}
_LLAMA_CPP_PYTHON_TITLE = "llama.cpp Python API"
#: GBNF trigger type "word" of llama.cpp's ``common_grammar_trigger_type``.
_TRIGGER_WORD = 1


def engine_kind(value: str) -> EngineKind:
    """``value`` checked as an engine kind (``auto`` is not one: it means "detect")."""
    if value not in ENGINE_KINDS:
        raise ChatFmtError(
            f"unknown backend kind {value!r} (known: auto, {', '.join(ENGINE_KINDS)})"
        )
    return cast(EngineKind, value)


async def detect_kind(
    models: Mapping[str, Any] | None, get_json: Callable[[str], Awaitable[Any]]
) -> EngineKind:
    """The engine behind a server, from its ``/v1/models`` answer and its own endpoints.

    ``get_json(path)`` fetches a path from the server's root (``None`` when it fails).
    Tried in order: ``owned_by`` of the first model (vLLM ``vllm``, SGLang ``sglang``,
    llama.cpp ``llamacpp``); llama-cpp-python's OpenAPI title; llama.cpp's ``/props``
    (``default_generation_settings``); vLLM's ``/version``; SGLang's ``/server_info``
    (``/get_server_info`` before 0.5). ``generic`` when nothing matches.
    """
    owner = ""
    with contextlib.suppress(KeyError, IndexError, TypeError, AttributeError):
        owner = str((models or {})["data"][0].get("owned_by", ""))
    if owner in _OWNERS:
        return _OWNERS[owner]
    openapi = await get_json("/openapi.json")
    title = str(((openapi or {}).get("info") or {}).get("title", ""))
    if _LLAMA_CPP_PYTHON_TITLE in title:
        return "llama-cpp-python"
    props = await get_json("/props")
    if isinstance(props, dict) and "default_generation_settings" in props:
        return "llama.cpp"
    version = await get_json("/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        return "vllm"
    for path in ("/server_info", "/get_server_info"):
        info = await get_json(path)
        if isinstance(info, dict) and info:
            return "sglang"
    return "generic"


def sampling_name(kind: EngineKind, field: str) -> str:
    """The body field for one of chatfmt's sampling fields."""
    if field == "repetition_penalty" and kind in ("llama.cpp", "llama-cpp-python"):
        return "repeat_penalty"
    return field


def takes_token_ids(kind: EngineKind) -> bool:
    """Whether the engine accepts a list of token ids as the prompt."""
    return kind != "llama-cpp-python"


def takes_lazy(kind: EngineKind, constraint: Constraint) -> bool:
    """Whether the engine applies ``constraint``'s lazy grammar itself (else: emulated)."""
    if not constraint.gbnf:  # no grammar: nothing to emulate either
        return True
    if kind == "llama.cpp":
        return True
    return kind in ("vllm", "sglang") and (
        constraint.structural_tag is not None or constraint.ebnf is not None
    )


def takes_constraints(kind: EngineKind) -> bool:
    """Whether the engine takes any constraint (``generic``: prefill and validation only)."""
    return kind != "generic"


def constraint_fields(kind: EngineKind, constraint: Constraint) -> dict[str, Any]:
    """The body fields that send ``constraint`` to a ``kind`` engine ({} for ``generic``).

    A lazy constraint is sent lazily only where :func:`takes_lazy`; otherwise the caller
    emulates it and sends the strict form (``trigger`` None) here.
    """
    lazy = bool(constraint.trigger)
    grammar = constraint.gbnf
    tagged = lazy and kind in ("vllm", "sglang") and constraint.structural_tag is not None
    if not grammar and not tagged:  # a format not described as data: the prefill alone
        return {}
    only_json = constraint.json_schema is not None and not constraint.prefill and not lazy
    if kind == "llama.cpp":
        fields: dict[str, Any] = {"grammar": grammar}
        if lazy:
            fields["grammar_lazy"] = True
            fields["grammar_triggers"] = [{"type": _TRIGGER_WORD, "value": constraint.trigger}]
        return fields
    if kind == "llama-cpp-python":
        return {"grammar": grammar}
    if lazy and kind in ("vllm", "sglang") and constraint.structural_tag is None:
        # the whole reply under one grammar: the free text before a call is part of it
        ebnf = constraint.ebnf or grammar
        return {"structured_outputs": {"grammar": ebnf}} if kind == "vllm" else {"ebnf": ebnf}
    if kind == "vllm":
        if lazy:
            return {"response_format": structural_tag_format(constraint)}
        if only_json:
            return {"structured_outputs": {"json": dict(constraint.json_schema or {})}}
        return {"structured_outputs": {"grammar": constraint.ebnf or grammar}}
    if kind == "sglang":
        if lazy:
            return {"response_format": structural_tag_format(constraint)}
        if only_json:
            return {"json_schema": json.dumps(constraint.json_schema, ensure_ascii=False)}
        return {"ebnf": constraint.ebnf or grammar}
    return {}


def structural_tag_format(constraint: Constraint) -> dict[str, Any]:
    """The ``response_format`` of type ``structural_tag`` carrying the constraint's tag."""
    tag = dict(constraint.structural_tag or {})
    return tag if tag.get("type") == "structural_tag" else {"type": "structural_tag", **tag}
