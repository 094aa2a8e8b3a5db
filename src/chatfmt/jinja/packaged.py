"""Official Jinja templates shipped with chatfmt and registered under their models' names.

Families that have no native template but do have an output parser are registered
as a :class:`PackagedTemplate`: the model's own Jinja file (in
``chatfmt/data/templates``, rendered by the sandboxed Jinja backend) together with
the facts the file does not carry — its name, model ids, special tokens, stop
words, sampling defaults and the names of its tool and reasoning parsers. So
``chatfmt.parse(text, "moonshotai/Kimi-K2-Instruct")`` and ``chatfmt.render(...,
"kimi-k2")`` work without a tokenizer config, and a Jinja source identical to a
shipped file (loaded from a ``.jinja`` file, a ``tokenizer_config.json``, a GGUF…)
is this template, parsers included.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ..config import GenerationConfig
from ..errors import TemplateError, UnsupportedFeatureError
from ..history_rules import KEEPS_ALL, HistoryRules
from ..protocol import Conversation, Message
from ..registry import REGISTRY
from ..template import refuse_reasoning
from .inputs import Dialect, Prepared, prepare
from .recognize import fingerprint, official_source
from .template import JinjaTemplate
from .trace import TurnInfo

if TYPE_CHECKING:
    from ..parsing.base import FormatParser


class PackagedTemplate(JinjaTemplate):
    """A shipped official Jinja template with its model facts (see module doc).

    ``file`` is a file name in ``chatfmt/data/templates``. ``variables`` are the
    tokenizer-config values the template reads (``bos_token``, …). ``generation``
    gives stop words and sampling defaults; without it they are probed from the
    template, as for any Jinja source. The source is compiled on first use. ``source``
    replaces the file's text (the twin that renders :attr:`calls_turn_text`).
    """

    compile_eagerly: ClassVar[bool] = False

    def __init__(
        self,
        file: str,
        *,
        name: str,
        model_ids: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (),
        model_patterns: tuple[str, ...] = (),
        tool_parser: type[FormatParser] | str | None = None,
        reasoning_parser: type[FormatParser] | str | None = None,
        tool_parser_name: str | None = None,
        generation: GenerationConfig | None = None,
        variables: Mapping[str, Any] | None = None,
        description: str = "",
        text_beside_calls: Mapping[str, Any] | None = None,
        calls_in_content: Callable[[Message], str] | None = None,
        calls_turn_text: tuple[str, str] | None = None,
        source: str | None = None,
        history: HistoryRules = KEEPS_ALL,
    ) -> None:
        source = source or official_source(file)
        if source is None:
            raise TemplateError(f"no shipped template file {file!r} in chatfmt/data/templates")
        super().__init__(source, name=name, variables=variables, origin=f"official Jinja: {file}")
        self.packaged_file = file
        self.model_ids = model_ids
        self.aliases = aliases
        self.model_patterns = model_patterns
        self.set_parsers(tool_parser, reasoning_parser, tool_name=tool_parser_name)
        self._generation = generation
        #: How the model writes text beside its tool calls, where the official file drops
        #: the text: as an assistant message of its own (with these extra fields, e.g.
        #: ``{"end_turn": False}``) right before the calls. ``None``: refused.
        self.text_beside_calls = text_beside_calls
        #: How the model writes text beside its tool calls within the calls' own turn, where
        #: the official file drops the text: ``(old, new)``, a passage of the official source
        #: and what replaces it in the source that renders such history (it writes the text
        #: where the model does, e.g. MiniMax-M1's before ``<tool_calls>``). ``None``: refused
        #: (unless :attr:`text_beside_calls` says otherwise).
        self.calls_turn_text = calls_turn_text
        #: Where the official file writes an assistant message's content only and the model
        #: writes its calls as text in it: the message's content with its calls written as
        #: the model writes them (history then keeps them). ``None``: the calls are refused.
        self.calls_in_content = calls_in_content
        #: What the official file leaves out of the history by the format's rules.
        self.history = history
        if description:
            self.description = description
        self._init_args: dict[str, Any] = {
            "name": name,
            "model_ids": model_ids,
            "aliases": aliases,
            "model_patterns": model_patterns,
            "tool_parser": tool_parser,
            "reasoning_parser": reasoning_parser,
            "tool_parser_name": tool_parser_name,
            "generation": generation,
            "variables": dict(variables or {}),
            "description": description,
            "text_beside_calls": text_beside_calls,
            "calls_turn_text": calls_turn_text,
            "calls_in_content": calls_in_content,
            "history": history,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.packaged_file, self._init_args))

    @cached_property
    def generation_config(self) -> GenerationConfig:  # type: ignore[override]
        """The given generation config, else stop words probed from the template."""
        if self._generation is not None:
            return self._generation
        return JinjaTemplate.generation_config.func(self)  # type: ignore[attr-defined]

    def turn_info(self, opts: Mapping[str, Any], merge: bool = False) -> TurnInfo:
        """The probed generation prompt; the end-of-turn markers are the given stop words and
        tool stop words (a probe finds the first marker-like text after a reply, e.g. Kimi-K3's
        ``<|close|>``), and the probed marker only where none of them follows a reply (a model
        whose stop word is not what its template writes after a turn, e.g. GigaChat3)."""
        info = super().turn_info(opts, merge)
        gen = self._generation
        if gen is not None and gen.stop_words:
            declared = tuple(dict.fromkeys((*gen.stop_words, *gen.tool_stop_words)))
            probed = tuple(m for m in info.end_of_turn if m not in declared)
            return dataclasses.replace(info, end_of_turn=declared, fallback_end_of_turn=probed)
        return info

    def _history_form(
        self, prep: Prepared, strict: bool
    ) -> tuple[JinjaTemplate, Prepared, tuple[int, ...] | None]:
        """Unless ``strict``: each assistant message with text beside its tool calls, which
        the official file would drop, as the model writes it: within the calls' turn
        (:attr:`calls_turn_text`: rendered by the official source so patched), or as an
        assistant message of its own with its text (and reasoning), then the calls
        (:attr:`text_beside_calls`); or, with :attr:`calls_in_content`, each message's calls
        written into its content."""
        if self.calls_in_content is not None and not strict:
            prep = self._calls_written_in_content(prep, self.calls_in_content)
        extra = self.text_beside_calls
        split = [
            m.index
            for m in prep.conv.messages
            if m.role == "assistant" and m.tool_calls and (m.content or "").strip()
        ]
        if strict or not split:
            return self, prep, None
        if self.calls_turn_text is not None:
            return self._calls_turn_twin, prep, None
        if extra is None:
            return self, prep, None
        raw: list[dict[str, Any]] = []
        origin: list[int] = []
        for i, m in enumerate(prep.raw):
            if i in split:
                said = {k: v for k, v in m.items() if k not in ("tool_calls", "tool_call_id")}
                calls = {k: v for k, v in m.items() if k not in ("reasoning_content", "reasoning")}
                raw += [{**said, **extra}, {**calls, "content": None}]
                origin += [i, i]
            else:
                raw.append(m)
                origin.append(i)
        return self, prepare(raw, prep.tools), tuple(origin)

    @cached_property
    def _calls_turn_twin(self) -> PackagedTemplate:
        """This template with :attr:`calls_turn_text` applied to its source (same facts)."""
        assert self.calls_turn_text is not None
        old, new = self.calls_turn_text
        if self.jinja_source.count(old) != 1:
            raise TemplateError(
                f"template {self.name!r}: the passage that writes text beside tool calls does "
                "not occur exactly once in its source"
            )
        args = {**self._init_args, "calls_turn_text": None}
        return type(self)(self.packaged_file, **args, source=self.jinja_source.replace(old, new))

    @staticmethod
    def _calls_written_in_content(prep: Prepared, write: Callable[[Message], str]) -> Prepared:
        """``prep`` with each assistant message's tool calls written into its content."""
        if not any(m.role == "assistant" and m.tool_calls for m in prep.conv.messages):
            return prep
        raw = [
            {**{k: v for k, v in r.items() if k != "tool_calls"}, "content": write(m)}
            if m.role == "assistant" and m.tool_calls
            else r
            for r, m in zip(prep.raw, prep.conv.messages, strict=True)
        ]
        return prepare(raw, prep.tools, require_tool_calls=False)  # the results stay

    def _render_plain(
        self,
        prep: Prepared,
        opts: Mapping[str, Any],
        add_gen: bool,
        when: _dt.datetime,
        merge: bool,
    ) -> tuple[str, Dialect]:
        """The official output — or, as for a native template, an error naming the message
        and field the official file would drop silently (see :func:`dropped`)."""
        if not self.supports_reasoning:
            for m in prep.conv.messages:
                refuse_reasoning(self.name, m)
        text, dialect = super()._render_plain(prep, opts, add_gen, when, merge)
        lost = dropped(prep.conv, text)
        if lost is not None:
            index, field = lost
            raise UnsupportedFeatureError(
                f"template {self.name!r} (its official Jinja) does not write this; "
                "chatfmt refuses rather than drop it silently",
                index=index,
                field=field,
            )
        return text, dialect

    def with_variables(self, variables: Mapping[str, Any]) -> PackagedTemplate:
        """This template with other tokenizer-config ``variables`` (same name and parsers)."""
        merged = {**self._init_args["variables"], **dict(variables)}
        if merged == self._init_args["variables"]:
            return self
        key = (self.packaged_file, self.name, repr(sorted(merged.items())))
        tpl = _VARIANTS.get(key)
        if tpl is None:
            tpl = _VARIANTS[key] = type(self)(
                self.packaged_file, **{**self._init_args, "variables": merged}
            )
        return tpl


def dropped(conv: Conversation, text: str) -> tuple[int, str] | None:
    """The first (message index, field) whose data is missing from ``text``, or None.

    Checked: every message's text (stripped; as it is or as a JSON string's body, which
    is how e.g. Cohere2MoE writes tool results), every tool call's name (after the text of
    the user message before it, so that the tool list does not count, and after the calls
    before it in its message: GigaChat 3 writes one call of two), and reasoning after
    the last user message (earlier reasoning is dropped by design in reasoning formats, as
    the native templates do). Arguments are not checked: templates re-serialize them.
    """
    users = [m.index for m in conv.messages if m.role == "user"]
    last_user = users[-1] if users else -1
    after = 0  # where the last user message's text starts (its first occurrence)
    for m in conv.messages:
        body = (m.content or "").strip()
        if body and not _written(body, text):
            return m.index, "content"
        if m.role == "user" and body:
            after = max(after, text.find(body))
        start = after
        for k, call in enumerate(m.tool_calls):
            if call.type != "function":
                continue
            # the name as a word of its own (a call named "f" is not in "of_sentence")
            found = re.compile(rf"(?<!\w){re.escape(call.name)}(?!\w)").search(text, start)
            if found is None:
                return m.index, f"tool_calls[{k}]"
            start = found.end()
        thought = (m.reasoning_content or "").strip()
        if thought and m.index > last_user and thought not in text:
            return m.index, "reasoning_content"
    return None


def _written(body: str, text: str) -> bool:
    """Whether ``body`` is in ``text``, as it is or JSON-escaped (either ASCII mode)."""
    return body in text or any(
        json.dumps(body, ensure_ascii=ascii_only)[1:-1] in text for ascii_only in (False, True)
    )


_VARIANTS: dict[tuple[str, str, str], PackagedTemplate] = {}


def _rebuild(cls: type[PackagedTemplate], file: str, args: dict[str, Any]) -> PackagedTemplate:
    return cls(file, **args)


def packaged_for(source: str) -> PackagedTemplate | None:
    """The registered packaged template whose file is exactly ``source`` (as Jinja reads it)."""
    return _index().get(fingerprint(source))


_INDEX: dict[str, PackagedTemplate] = {}
#: How many names the registry had when the index was built (rebuilt when it changes).
_INDEXED_AT = [-1]


def _index() -> dict[str, PackagedTemplate]:
    size = len(REGISTRY.names())
    if size != _INDEXED_AT[0]:
        _INDEX.clear()
        for tpl in REGISTRY:
            if isinstance(tpl, PackagedTemplate):
                _INDEX.setdefault(fingerprint(tpl.jinja_source), tpl)
        _INDEXED_AT[0] = size
    return _INDEX
