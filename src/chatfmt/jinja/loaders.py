"""Load Jinja chat templates from sources, ``.jinja`` files, tokenizer configs, model dirs and GGUF files.

Every loader ends in :func:`from_source`: recognize the source as a native
template when possible (a :class:`RecognizedTemplate`), else return a (cached)
:class:`JinjaTemplate`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TemplateError
from ..template import Template
from ..textfile import read_text
from .packaged import packaged_for
from .recognize import Recognition, recognize
from .recognized import RecognizedTemplate
from .template import SPECIAL_TOKEN_NAMES, JinjaTemplate, _token_text, source_hash


@dataclass(frozen=True)
class JinjaSource:
    """A chat template source with the special tokens that came with it."""

    source: str
    variables: Mapping[str, Any] = field(default_factory=dict)
    origin: str = "Jinja source"


_TEMPLATES: dict[str, JinjaTemplate] = {}


def jinja_template(src: JinjaSource) -> JinjaTemplate:
    """The JinjaTemplate of ``src``, compiled once (cached by source hash and variables)."""
    key = json.dumps([source_hash(src.source), sorted(src.variables.items())], default=str)
    tpl = _TEMPLATES.get(key)
    if tpl is None:
        tpl = _TEMPLATES[key] = JinjaTemplate(
            src.source, variables=src.variables, origin=src.origin
        )
    return tpl


_RECOGNIZED: dict[str, RecognizedTemplate] = {}


def from_source(src: JinjaSource) -> Template:
    """The native template ``src`` is recognized as (with its Jinja backend beside it), or a Jinja-backed template.

    A source that is exactly a shipped official file (:mod:`.packaged`) is that
    packaged template, with the given special tokens.
    """
    packaged = packaged_for(src.source)
    if packaged is not None:
        return packaged.with_variables(src.variables)
    rec = recognize(src.source, src.variables)
    if rec.template is None:
        return jinja_template(src)
    # The Jinja backend gets the tokens recognition inferred, so both backends write the same ones.
    variables = {**(rec.tokens or {}), **src.variables}
    key = json.dumps(
        [source_hash(src.source), sorted(variables.items()), rec.template.name], default=str
    )
    tpl = _RECOGNIZED.get(key)
    if tpl is None:
        jinja = jinja_template(JinjaSource(src.source, variables, src.origin))
        tpl = _RECOGNIZED[key] = RecognizedTemplate(rec.template, jinja, rec, src)
    return tpl


def detect(src: JinjaSource) -> Recognition:
    """What ``src`` is recognized as (for the CLI and users)."""
    return recognize(src.source, src.variables)


# --------------------------------------------------------------------------- readers
def _special_tokens(config: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in SPECIAL_TOKEN_NAMES:
        value = config.get(name)
        if value is not None:
            out[name] = _token_text(value)
    return out


def _pick(chat_template: Any, where: str) -> str:
    """A ``chat_template`` value: a string, or a list of named templates (the ``default`` one is used)."""
    if isinstance(chat_template, str):
        return chat_template
    if isinstance(chat_template, list):
        named = {t.get("name"): t.get("template") for t in chat_template if isinstance(t, Mapping)}
        chosen = named.get("default") or next(
            (v for v in named.values() if isinstance(v, str)), None
        )
        if isinstance(chosen, str):
            return chosen
    raise TemplateError(f"{where}: no usable chat_template")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path, error=TemplateError))
    except ValueError as exc:
        raise TemplateError(f"{path}: cannot read JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: expected a JSON object")
    return data


def read_tokenizer_config(path: Path) -> JinjaSource:
    """``tokenizer_config.json``: its ``chat_template`` and special tokens."""
    config = _read_json(path)
    if "chat_template" not in config:
        # newer models keep the template beside the config
        for name in ("chat_template.jinja", "chat_template.json"):
            side = path.parent / name
            if side.is_file():
                return read_model_dir(path.parent)
        raise TemplateError(f"{path}: no chat_template in this tokenizer config")
    return JinjaSource(
        _pick(config["chat_template"], str(path)), _special_tokens(config), str(path)
    )


def read_model_dir(path: Path) -> JinjaSource:
    """A model directory: ``chat_template.jinja`` > ``chat_template.json`` > ``tokenizer_config.json``."""
    tokens: dict[str, Any] = {}
    stm = path / "special_tokens_map.json"
    if stm.is_file():
        tokens.update(_special_tokens(_read_json(stm)))
    cfg_path = path / "tokenizer_config.json"
    config = _read_json(cfg_path) if cfg_path.is_file() else {}
    tokens.update(_special_tokens(config))
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return JinjaSource(read_text(jinja, error=TemplateError), tokens, str(jinja))
    cj = path / "chat_template.json"
    if cj.is_file():
        return JinjaSource(_pick(_read_json(cj).get("chat_template"), str(cj)), tokens, str(cj))
    if "chat_template" in config:
        return JinjaSource(_pick(config["chat_template"], str(cfg_path)), tokens, str(cfg_path))
    raise TemplateError(f"{path}: no chat template found in this directory")


def read_gguf(path: Path) -> JinjaSource:
    """A GGUF file's ``tokenizer.chat_template`` and its BOS/EOS tokens."""
    from ..tokens.gguf import field_value, gguf_reader

    fields = gguf_reader(path, TemplateError).fields
    template = fields.get("tokenizer.chat_template")
    source = field_value(template) if template is not None else None
    if not isinstance(source, str):
        raise TemplateError(f"{path}: this GGUF file has no tokenizer.chat_template")
    tokens: dict[str, Any] = {}
    vocab = fields.get("tokenizer.ggml.tokens")
    for name, key in (
        ("bos_token", "tokenizer.ggml.bos_token_id"),
        ("eos_token", "tokenizer.ggml.eos_token_id"),
    ):
        field_ = fields.get(key)
        if field_ is None or vocab is None:
            continue
        token_id = field_value(field_)
        if isinstance(token_id, int) and 0 <= token_id < len(vocab.data):
            tokens[name] = bytes(vocab.parts[vocab.data[token_id]]).decode(
                "utf-8", errors="replace"
            )
    return JinjaSource(source, tokens, str(path))


def read_path(path: Path) -> JinjaSource | None:
    """The Jinja source a path holds, or ``None`` if it is not a Jinja-template file or model dir."""
    if path.is_dir():
        names = ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")
        if not any((path / n).is_file() for n in names):
            return None
        cfg = path / "tokenizer_config.json"
        if not any((path / n).is_file() for n in names[:2]) and "chat_template" not in _read_json(
            cfg
        ):
            return None
        return read_model_dir(path)
    if not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix in (".jinja", ".j2", ".jinja2"):
        return JinjaSource(read_text(path, error=TemplateError), {}, str(path))
    if suffix == ".gguf":
        return read_gguf(path)
    if path.name == "tokenizer_config.json":
        return read_tokenizer_config(path)
    if path.name == "chat_template.json":
        return JinjaSource(_pick(_read_json(path).get("chat_template"), str(path)), {}, str(path))
    return None


def load_path(path: Path) -> Template | None:
    """Registry path loader."""
    src = read_path(path)
    return None if src is None else from_source(src)


def load_source(text: str) -> Template | None:
    """Registry source loader: Jinja source text."""
    if "{%" not in text and "{{" not in text:
        return None
    return from_source(JinjaSource(text))
