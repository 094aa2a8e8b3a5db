"""Declarative templates: simple families as data, also loadable from TOML/JSON/YAML files."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from .config import GenerationConfig, string_tuple
from .errors import RoleOrderError, TemplateError, UnsupportedFeatureError
from .protocol import Conversation
from .segments import Segment
from .template import RenderContext, Template
from .textfile import read_text
from .tool_format import no_tool_format

SystemMode = Literal["turn", "first_user", "unsupported"]


@dataclass(frozen=True)
class RoleFormat:
    """How one role's turn is wrapped: ``prefix`` content ``suffix`` ``separator``.

    For the assistant, ``suffix`` is the end-of-turn marker the model generates
    (trained); ``separator`` is template text after it (not trained).
    """

    prefix: str = ""
    suffix: str = ""
    separator: str = ""


@dataclass(frozen=True)
class TemplateSpec:
    """A chat format described as data.

    ``system_mode``: ``turn`` renders system messages as their own turns;
    ``first_user`` folds the system text into the first user turn with
    ``system_in_user`` (``{system}`` marks where); ``unsupported`` rejects them.
    """

    name: str
    roles: Mapping[str, RoleFormat]
    aliases: tuple[str, ...] = ()
    model_ids: tuple[str, ...] = ()
    model_patterns: tuple[str, ...] = ()
    description: str = ""
    source: str = ""
    bos: str = ""
    default_system: str | None = None
    system_mode: SystemMode = "turn"
    system_in_user: str = "{system}"
    generation_prompt: str | None = None
    strip_content: bool = False
    alternate: bool = False
    control_tokens: tuple[str, ...] = ()
    generation_config: GenerationConfig = field(default_factory=GenerationConfig)

    def __post_init__(self) -> None:
        for key in ("aliases", "model_ids", "model_patterns", "control_tokens"):
            object.__setattr__(self, key, string_tuple(getattr(self, key), key))
        for key in ("name", "description", "source", "bos", "system_in_user"):
            if not isinstance(getattr(self, key), str):
                raise TemplateError(f"{key} must be a string, got {getattr(self, key)!r}")
        for key in ("default_system", "generation_prompt"):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise TemplateError(f"{key} must be a string, got {value!r}")
        for key in ("strip_content", "alternate"):
            if not isinstance(getattr(self, key), bool):
                raise TemplateError(f"{key} must be true or false, got {getattr(self, key)!r}")
        if self.system_mode not in ("turn", "first_user", "unsupported"):
            raise TemplateError(
                f"system_mode must be turn, first_user or unsupported, got {self.system_mode!r}"
            )
        for role, fmt in self.roles.items():
            for part in ("prefix", "suffix", "separator"):
                if not isinstance(getattr(fmt, part), str):
                    raise TemplateError(
                        f"roles.{role}.{part} must be a string, got {getattr(fmt, part)!r}"
                    )
        for role in ("user", "assistant"):
            if role not in self.roles:
                raise TemplateError(f"template spec {self.name!r} needs a format for role {role!r}")
        unknown = set(self.roles) - {"system", "user", "assistant", "tool"}
        if unknown:
            raise TemplateError(f"template spec {self.name!r}: unknown role(s) {sorted(unknown)}")
        if self.system_mode == "first_user" and "{system}" not in self.system_in_user:
            raise TemplateError(
                f"template spec {self.name!r}: system_in_user needs a {{system}} placeholder"
            )


class SpecTemplate(Template):
    """A :class:`Template` driven by a :class:`TemplateSpec`."""

    def __init__(self, spec: TemplateSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.aliases = spec.aliases
        self.model_ids = spec.model_ids
        self.model_patterns = spec.model_patterns
        self.description = spec.description
        self.source = spec.source
        self.generation_config = spec.generation_config
        self.supports_tools = False
        tokens = set(spec.control_tokens)
        self.control_tokens = tuple(sorted(tokens))

    def render_conversation(self, conv: Conversation, ctx: RenderContext) -> list[Segment]:
        spec = self.spec
        roles = spec.roles
        b = ctx.builder()
        b.control(spec.bos)
        msgs = list(conv.messages)
        system_text: str | None = None
        system_index: int | None = None
        if spec.system_mode == "first_user":
            if msgs and msgs[0].role == "system":
                system_text, system_index = msgs[0].text, msgs[0].index
                msgs = msgs[1:]
            else:
                system_text = spec.default_system
        elif spec.default_system is not None and not (msgs and msgs[0].role == "system"):
            sys_fmt = roles.get("system", RoleFormat())
            b.control(sys_fmt.prefix + spec.default_system + sys_fmt.suffix + sys_fmt.separator)
        for m in msgs:
            if m.role == "system" and spec.system_mode != "turn":
                raise UnsupportedFeatureError(
                    f"template {spec.name!r} does not support a system message here",
                    index=m.index,
                    field="role",
                )
            if m.tool_calls:
                raise no_tool_format(spec.name, m.index)
            role_fmt = roles.get(m.role)
            if role_fmt is None:
                raise UnsupportedFeatureError(
                    f"template {spec.name!r} has no {m.role!r} role", index=m.index, field="role"
                )
            if spec.alternate:
                self._check_alternation(conv, m.index)
            text = m.text.strip() if spec.strip_content else m.text
            fmt = role_fmt
            trained = m.role == "assistant"
            b.control(fmt.prefix, m.index)
            if m.role == "user" and system_text is not None:
                before, after = spec.system_in_user.split("{system}", 1)
                b.control(before, m.index)
                b.content(system_text.strip() if spec.strip_content else system_text, system_index)
                b.control(after, m.index)
                system_text = None
            b.content(text, m.index, trained)
            b.control(fmt.suffix, m.index, trained)
            b.control(fmt.separator, m.index)
        if system_text and system_index is not None:
            raise UnsupportedFeatureError(
                f"template {spec.name!r} writes the system prompt into the first user turn and "
                "there is none (it would be dropped silently); add a user message",
                index=system_index,
                field="content",
            )
        if ctx.add_generation_prompt:
            gp = spec.generation_prompt
            b.control(roles["assistant"].prefix if gp is None else gp)
        return b.segments

    def _check_alternation(self, conv: Conversation, index: int) -> None:
        body = [m for m in conv.messages if m.role != "system"]
        for k, m in enumerate(body):
            if m.index == index:
                expected = "user" if k % 2 == 0 else "assistant"
                if m.role != expected:
                    raise RoleOrderError(
                        f"template {self.name!r} needs user and assistant turns to alternate "
                        f"(expected {expected!r}, got {m.role!r})",
                        index=index,
                        field="role",
                    )
                return


# ---------------------------------------------------------------------- spec files
_SPEC_KEYS = {f.name for f in fields(TemplateSpec)}
_GEN_KEYS = {f.name for f in fields(GenerationConfig)}


def spec_from_dict(data: Mapping[str, Any], *, origin: str = "<dict>") -> TemplateSpec:
    """Build a :class:`TemplateSpec` from plain data (the parsed spec file)."""
    if not isinstance(data, Mapping):
        raise TemplateError(f"{origin}: a template spec must be a table/object")
    unknown = set(data) - _SPEC_KEYS - {"generation"}
    if unknown:
        raise TemplateError(
            f"{origin}: unknown key(s) {sorted(unknown)}; known: {sorted(_SPEC_KEYS | {'generation'})}"
        )
    if "name" not in data or not isinstance(data["name"], str):
        raise TemplateError(f"{origin}: 'name' (a string) is required")
    raw_roles = data.get("roles")
    if not isinstance(raw_roles, Mapping):
        raise TemplateError(
            f"{origin}: 'roles' must map role names to {{prefix, suffix, separator}}"
        )
    roles = {}
    for role, fmt in raw_roles.items():
        if not isinstance(fmt, Mapping) or set(fmt) - {"prefix", "suffix", "separator"}:
            raise TemplateError(f"{origin}: roles.{role} takes only prefix, suffix, separator")
        roles[role] = RoleFormat(**fmt)
    gen = data.get("generation", data.get("generation_config", {})) or {}
    if not isinstance(gen, Mapping) or set(gen) - _GEN_KEYS:
        raise TemplateError(f"{origin}: generation takes only {sorted(_GEN_KEYS)}")
    kwargs: dict[str, Any] = {
        k: v for k, v in data.items() if k in _SPEC_KEYS and k not in ("roles", "generation_config")
    }
    try:
        return TemplateSpec(
            roles=roles,
            generation_config=GenerationConfig().replace(**dict(gen)),
            **kwargs,
        )
    except TemplateError as exc:
        raise TemplateError(f"{origin}: {exc}") from None
    except TypeError as exc:
        raise TemplateError(f"{origin}: {exc}") from None


def load_spec_file(path: str | Path) -> SpecTemplate:
    """Load a declarative template from a ``.toml``, ``.json``, ``.yaml`` or ``.yml`` file."""
    p = Path(path)
    text = read_text(p, error=TemplateError)
    suffix = p.suffix.lower()
    try:
        if suffix == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                import tomli as tomllib
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        elif suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ModuleNotFoundError:
                raise TemplateError(
                    f"{p}: YAML templates need PyYAML: pip install 'chatfmt[yaml]'"
                ) from None
            data = yaml.safe_load(text)
        else:
            raise TemplateError(
                f"{p}: unknown template file type {suffix!r} (use .toml, .json, .yaml)"
            )
    except TemplateError:
        raise
    except Exception as exc:  # parse errors of the three formats
        raise TemplateError(f"{p}: cannot parse template file: {exc}") from None
    return SpecTemplate(spec_from_dict(data, origin=str(p)))
