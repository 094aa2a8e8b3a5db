"""The playground: a page that shows what a template does, and the API it calls.

``GET /`` serves one static page (``chatfmt/data/playground``: plain HTML, JS and CSS, no
build step, nothing from a CDN). The page calls:

* ``GET /v1/templates`` — every registered template with its options and parsers;
* ``POST /v1/render`` with ``template`` (a registered name) or ``chat_template`` (Jinja
  source) instead of ``model`` — the prompt as segments (kind, trained, message), and the
  tokens with their decoded pieces when the server has a tokenizer;
* ``POST /v1/parse`` — raw model output parsed as the template's parser reads it;
* ``POST /v1/chat/completions`` for a model answer when the server has a backend.

A template from a request is a stranger's code: it is accepted only when the server was
started with ``--trust-request-chat-template``, and it is rendered (and parsed, since a
parser derived from it renders probes) in worker processes with time, memory and output
limits (:mod:`chatfmt.jinja.untrusted`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from pydantic import Field

from ..errors import ChatFmtError
from ..jinja.untrusted import SandboxLimits, TemplateSandbox, message_view
from ..registry import REGISTRY
from ..segments import Kind
from ..template import Template
from .errors import APIError, api_error
from .schema import _Body

#: Shown when a request brings its own template and the server does not accept that.
UNTRUSTED_REFUSED = (
    "this server does not accept chat templates from requests; start it with "
    "--trust-request-chat-template to allow them (they run sandboxed, with time and size limits)"
)


class PlaygroundRenderBody(_Body):
    """``POST /v1/render`` without a model: a registered template, or a template's source."""

    template: str | None = None
    chat_template: str | None = None
    variables: dict[str, Any] | None = None  # special tokens for chat_template (bos_token, …)
    messages: list[Any]
    tools: list[Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    add_generation_prompt: bool = True


class ParseBody(_Body):
    """``POST /v1/parse``: model output and the template (or model) whose parser reads it."""

    output: str
    model: str | None = None
    template: str | None = None
    chat_template: str | None = None
    variables: dict[str, Any] | None = None
    tools: list[Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    truncated: bool = False
    parser: str | None = Field(default=None, min_length=1)


@dataclass
class Playground:
    """Playground settings of a gateway: trust, sandbox and the tokenizer for token views."""

    trust_request_templates: bool = False
    tokenizer: Any = None
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    _sandbox: TemplateSandbox | None = None

    @property
    def sandbox(self) -> TemplateSandbox:
        if self._sandbox is None:
            self._sandbox = TemplateSandbox(self.limits)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def check_trusted(self) -> None:
        if not self.trust_request_templates:
            raise APIError(403, UNTRUSTED_REFUSED, param="chat_template", code="untrusted_template")


def page() -> bytes:
    """The playground page."""
    return static_file("index.html")


def static_file(name: str) -> bytes:
    """A file of the playground (``KeyError`` if there is none of that name)."""
    if "/" in name or "\\" in name or name.startswith("."):
        raise KeyError(name)
    try:
        return (resources.files("chatfmt") / "data" / "playground" / name).read_bytes()
    except (FileNotFoundError, OSError):
        raise KeyError(name) from None


def registered(name: str) -> Template:
    """A registered template by name or alias — never a path (requests don't read files)."""
    if name in REGISTRY:  # names and aliases only: a path is never looked up
        return REGISTRY.get(name)
    raise APIError(
        404, f"no registered template {name!r}", param="template", code="template_not_found"
    )


def template_list() -> list[dict[str, Any]]:
    """Every registered template, for the page's picker."""
    out = []
    for tpl in REGISTRY:  # sorted by name
        out.append(
            {
                "name": tpl.name,
                "aliases": list(tpl.aliases),
                "description": tpl.description,
                "options": {k: _plain(v) for k, v in (tpl.default_options or {}).items()},
                "supports_tools": bool(tpl.supports_tools),
                "supports_reasoning": bool(tpl.supports_reasoning),
                "tool_parser": tpl.tool_parser,
                "reasoning_parser": tpl.reasoning_parser,
                "stop_words": list(tpl.generation_config.all_stop_words),
            }
        )
    return out


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def segments_view(segments: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "text": s.text,
            "kind": "control" if s.kind is Kind.CONTROL else "content",
            "trained": bool(s.trained),
            "message": s.message,
        }
        for s in segments
    ]


def tokens_view(encoding: Any) -> list[dict[str, Any]]:
    """The tokens of an :class:`~chatfmt.tokens.Encoding`: id, decoded piece, control, trained."""
    return [
        {
            "id": r["id"],
            "text": r["text"],
            "control": r["kind"] == "control",
            "trained": r["trained"],
        }
        for r in encoding.to_table()
    ]


async def render(playground: Playground, body: PlaygroundRenderBody) -> dict[str, Any]:
    """``/v1/render`` for a registered template or a request's template source."""
    options = dict(body.chat_template_kwargs or {})
    try:
        if body.chat_template is not None:
            playground.check_trusted()
            segments = await playground.sandbox.asegments(
                body.chat_template,
                body.messages,
                tools=body.tools,
                variables=body.variables,
                add_generation_prompt=body.add_generation_prompt,
                **options,
            )
            name = "chat_template"
        elif body.template is not None:
            tpl = registered(body.template)
            segments = await asyncio.to_thread(
                tpl.segments,
                body.messages,
                tools=body.tools,
                add_generation_prompt=body.add_generation_prompt,
                **options,
            )
            name = tpl.name
        else:
            raise APIError(400, "give model, template or chat_template", param="template")
        out: dict[str, Any] = {
            "template": name,
            "prompt": "".join(s.text for s in segments),
            "segments": segments_view(segments),
        }
        if playground.tokenizer is not None:
            from ..tokens import encode_segments

            out["tokens"] = tokens_view(encode_segments(segments, playground.tokenizer))
        return out
    except ChatFmtError as exc:
        raise api_error(exc) from None


async def parse_output(
    playground: Playground, body: ParseBody, model_template: Template | None
) -> dict[str, Any]:
    """``/v1/parse``: the assistant message the template's parser reads from ``output``."""
    from ..parsing import parse

    options = dict(body.chat_template_kwargs or {})
    try:
        if body.chat_template is not None:
            playground.check_trusted()
            return dict(
                await asyncio.to_thread(
                    playground.sandbox.run,
                    "parse",
                    source=body.chat_template,
                    variables=dict(body.variables or {}),
                    output=body.output,
                    tools=body.tools,
                    options=options,
                    truncated=body.truncated,
                    parser=body.parser,
                )
            )
        tpl = model_template
        if tpl is None:
            if body.template is None:
                raise APIError(400, "give model, template or chat_template", param="template")
            tpl = registered(body.template)
        msg = parse(
            body.output,
            tpl,
            tools=body.tools,
            truncated=body.truncated,
            parser=body.parser,
            **options,
        )
        return message_view(msg)
    except ChatFmtError as exc:
        raise api_error(exc) from None
