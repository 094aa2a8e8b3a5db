"""``RecognizedTemplate``: a Jinja source recognized as a native template.

It is the native template (same name, parsers, stop words, speed) wherever
recognition showed the two render alike, and the Jinja backend for every call that
uses an input shape where they differ or that sets a variable the native template
cannot reproduce. Either way the output is what the source renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ..protocol import Conversation
from ..requests import RenderRequest
from ..segments import Segment, TextSink
from ..template import RenderContext, Template
from .recognize import Recognition
from .shapes import shapes_of
from .template import MERGE_SYSTEM, SPECIAL_TOKEN_NAMES, JinjaTemplate

_MISSING = object()


class RecognizedTemplate(Template):
    """A native template standing for a Jinja source, with the source's Jinja backend beside it.

    Options are the source's template variables, as transformers passes them (plus
    ``merge_system_into_first_user``, as for every Jinja template):

    * a variable the source never reads is ignored, as transformers ignores it (this
      includes chatfmt's own options of the native template, such as ``tools_json``);
    * a variable the native template already writes with that value (``bos_token``
      equal to the recognized one), or an option of the native template that the
      source reads and recognition probed (``enable_thinking``), keeps the native
      template for the call, if recognition probed the call's input shapes with it;
    * any other variable the source reads (``bos_token=""``, ``pad_token``, a custom
      flag) renders the call through the Jinja backend.
    """

    default_options: ClassVar[Mapping[str, Any]] = {}

    def __init__(
        self,
        native: Template,
        jinja: JinjaTemplate,
        recognition: Recognition,
        loaded_from: Any = None,
    ) -> None:
        self.native = native
        #: what the template was loaded from (a ``JinjaSource``): a pickled copy loads it again
        self.loaded_from = loaded_from
        self.jinja = jinja
        self.recognition = recognition
        for attr in (
            "name",
            "aliases",
            "model_ids",
            "model_patterns",
            "generation_config",
            "description",
            "source",
            "supports_tools",
            "supports_reasoning",
            "official_templates",
            "tool_parser",
            "tool_parser_class",
            "reasoning_parser",
            "reasoning_parser_class",
            "prefix_stable",
            "default_tool_format",
            "history",
        ):
            setattr(self, attr, getattr(native, attr))
        # the source is the native format: the same rules of what it leaves out, whichever
        # of the two renders a call
        jinja.history = native.history
        self.control_tokens = tuple(dict.fromkeys((*native.control_tokens, *jinja.control_tokens)))
        self._reads = jinja.variables_read
        self._native_options = native.default_options
        #: variable values under which recognition compared the two (tokenizer config, inferred tokens)
        self._established = dict(jinja.variables)
        self._native_for: dict[frozenset[str], bool] = {}

    def __getattr__(self, name: str) -> Any:
        # Family-specific attributes of the native template (never called for the ones set above).
        if name.startswith("__") or name in ("native", "jinja", "recognition", "loaded_from"):
            raise AttributeError(name)
        return getattr(self.native, name)

    def __reduce__(self) -> tuple[Any, ...]:
        from .loaders import from_source

        if self.loaded_from is None:
            raise TypeError(f"{self!r} does not know its source and cannot be pickled")
        return (from_source, (self.loaded_from,))

    # ------------------------------------------------------------------ routing
    def check_options(self, options: Mapping[str, Any]) -> None:
        """Any template variable is accepted, except the ones chatfmt passes itself."""
        self.jinja.check_options(options)

    def backend(
        self, messages: Any, tools: Any = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Template, dict[str, Any]]:
        """The template that renders this call exactly like the source, and its options."""
        if not options:
            return (self.native if self._native_ok(shapes_of(messages, tools)) else self.jinja), {}
        self.check_options(options)
        native_opts: dict[str, Any] = {}
        jinja_opts: dict[str, Any] = {}
        probed: list[str] = []
        unmatched = False  # a variable only the source can render
        for name, value in options.items():
            if name != MERGE_SYSTEM and name not in self._reads:
                continue  # a variable the source never reads: transformers ignores it too
            jinja_opts[name] = value
            if name != MERGE_SYSTEM and self._established.get(name, _MISSING) == value:
                continue  # the native template already writes exactly this value
            if name in self._native_options and name not in SPECIAL_TOKEN_NAMES:
                native_opts[name] = value
                probed.append(name)
            elif name != MERGE_SYSTEM or value:
                unmatched = True
        if not unmatched and self._native_ok(shapes_of(messages, tools, probed)):
            return self.native, native_opts
        return self.jinja, jinja_opts

    def _native_ok(self, shapes: frozenset[str]) -> bool:
        ok = self._native_for.get(shapes)
        if ok is None:
            ok = self._native_for[shapes] = self.recognition.native_for(shapes)
        return ok

    # ------------------------------------------------------------------ rendering
    def _render(self, messages: Any, request: RenderRequest) -> str:
        tpl, sub = self._routed(messages, request)
        return tpl._render(messages, sub)

    def _segments(self, messages: Any, request: RenderRequest) -> list[Segment]:
        tpl, sub = self._routed(messages, request)
        return tpl._segments(messages, sub)

    def _routed(self, messages: Any, request: RenderRequest) -> tuple[Template, RenderRequest]:
        """The template that renders this call (see :meth:`backend`) and its request."""
        tpl, opts = self.backend(messages, request.tools, request.options)
        if opts == request.options:
            return tpl, request
        return tpl, request._trusted(options=MappingProxyType(opts))

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        tpl, opts = self.backend(conv, None, ctx.options)
        sub = RenderContext(
            ctx.add_generation_prompt,
            ctx.datetime,
            {**tpl.default_options, **opts},
            text_only=ctx.builder is TextSink,
            strict_history=ctx.strict_history,
            lossless=ctx.lossless,
        )
        return tpl.render_conversation(conv, sub)

    def info(self) -> dict[str, Any]:
        out = self.native.info()
        out["jinja_sha256"] = self.jinja.sha256
        out["recognized"] = self.recognition.describe()
        return out

    def __repr__(self) -> str:
        return f"<RecognizedTemplate {self.name!r} ({self.recognition.method})>"
