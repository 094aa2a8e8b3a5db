"""Stream ≡ whole: the chunkings every parsing test feeds, and the check itself.

Short outputs are cut at *every* single point (all two-chunk splits), so a case
that only breaks when a marker, a whitespace run or an escape is cut at one
particular place cannot survive; every output is also fed whole, one character
at a time, four at a time and at a few random points.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from chatfmt.parsing import Delta, ParsedMessage, StreamParser, merge_deltas, parse
from chatfmt.parsing.openai_wire import delta_dicts

#: Outputs up to this length are cut at every point (longer ones get the cheap chunkings only).
EVERY_CUT_MAX = 200


def chunkings(text: str, *, every_cut_max: int = EVERY_CUT_MAX) -> Iterator[list[str]]:
    """The chunkings of ``text`` to stream: whole, 1- and 4-character, random cuts, every single cut."""
    yield [text]
    yield [text[i : i + 1] for i in range(len(text))]
    yield [text[i : i + 4] for i in range(0, len(text), 4)]
    if len(text) > 1:
        rnd = random.Random(text)  # deterministic per text
        cuts = sorted(rnd.sample(range(1, len(text)), min(len(text) - 1, 7)))
        yield [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    if len(text) <= every_cut_max:
        for cut in range(1, len(text)):
            yield [text[:cut], text[cut:]]


def wire(deltas: list[Delta]) -> list[dict[str, Any]]:
    """Typed parser deltas as OpenAI ``chat.completion.chunk`` deltas (error flags kept):
    what tests compare with the expected wire shapes."""
    return delta_dicts(deltas)


def stream_deltas(chunks: list[str], template: Any = None, **kwargs: Any) -> list[Delta]:
    """The deltas a :class:`StreamParser` fed ``chunks`` emits."""
    sp = StreamParser(template, **kwargs)
    deltas = [d for chunk in chunks for d in sp.feed(chunk)]
    return deltas + sp.finish()


def streamed(chunks: list[str], template: Any = None, **kwargs: Any) -> ParsedMessage:
    """The message a :class:`StreamParser` fed ``chunks`` gives (deltas merged)."""
    return merge_deltas(stream_deltas(chunks, template, **kwargs))


def sent_text(deltas: list[Delta], key: str) -> str:
    """What a client that concatenates the ``key`` deltas (e.g. ``content``) ends up with."""
    return "".join(d.get(key) or "" for d in wire(deltas))


def call_ids(index: int) -> str:
    """Deterministic call ids, so that streamed and whole messages compare equal."""
    return f"call_{index}"


def assert_stream_equals_whole(
    text: str, template: Any = None, *, extra: Sequence[list[str]] = (), **kwargs: Any
) -> ParsedMessage:
    """Check every chunking of ``text`` (and the ``extra`` ones) against ``parse(text)``.

    The merged stream must equal the whole message, and a client that only
    concatenates the content / reasoning deltas must get the same text (nothing
    sent that the whole parse drops). ``kwargs`` go to both (``tools=``,
    ``parser=``, options); ``id_factory`` defaults to :func:`call_ids`. Returns
    the whole message.
    """
    kwargs.setdefault("id_factory", call_ids)
    whole = parse(text, template, **kwargs)
    for chunks in [*chunkings(text), *extra]:
        deltas = stream_deltas(chunks, template, **kwargs)
        assert merge_deltas(deltas) == whole, chunks
        assert sent_text(deltas, "content") == (whole["content"] or ""), chunks
        assert sent_text(deltas, "reasoning_content") == whole.get("reasoning_content", ""), chunks
    return whole


def decoded_calls(msg: Mapping[str, Any]) -> list[tuple[str, Any, str | None]]:
    """(name, arguments decoded from JSON — or the raw text when they are not JSON — and the
    error flag) of each tool call of a parsed message."""
    import json

    out = []
    for call in msg.get("tool_calls") or ():
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"])
        except ValueError:
            args = fn["arguments"]
        out.append((fn["name"], args, call.get("error")))
    return out
