"""The family table: every family folder listed once, lazily loaded, no name collisions."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import chatfmt
from chatfmt import _moved, families
from chatfmt.errors import ChatFmtError
from chatfmt.parsing import ToolCallFormat
from chatfmt.parsing.base import TOOL_PARSERS, FormatParser, PlainParser
from chatfmt.parsing.derived_probe import PROBE_TOOLS as PROBE_TOOLS_ARG
from chatfmt.parsing.tables import ParserTable
from chatfmt.registry import Registry
from chatfmt.template import Template

FAMILY_DIR = Path(families.__file__).parent


def test_every_family_folder_is_listed_and_every_listed_module_exists() -> None:
    folders = {m.name for m in pkgutil.iter_modules([str(FAMILY_DIR)]) if m.ispkg}
    assert folders == set(families.FAMILIES)
    for name, path in families.FAMILIES.items():
        assert path == f"{families.__name__}.{name}"
        module = importlib.import_module(path)
        assert all(isinstance(t, Template) for t in module.TEMPLATES), name
        for attr in ("TOOL_PARSERS", "REASONING_PARSERS"):
            for parser, aliases in getattr(module, attr).items():
                assert parser.name and all(isinstance(a, str) and a for a in aliases), name
        assert module.TEMPLATES or module.TOOL_PARSERS, f"family {name} exports nothing"


def test_no_family_registers_anything_when_imported() -> None:
    for source in FAMILY_DIR.glob("*/*.py"):
        text = source.read_text(encoding="utf-8")
        for word in (
            "register_tool_parser(",
            "register_reasoning_parser(",
            "REGISTRY",
            "replace=True",
        ):
            assert word not in text, (source, word)


def test_importing_chatfmt_imports_no_family() -> None:
    code = (
        "import sys, chatfmt, chatfmt.parsing, chatfmt.families; "
        "print(sorted(m for m in sys.modules if m.startswith('chatfmt.families.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_table_loads_into_a_fresh_registry_without_collisions() -> None:
    builtins = families.builtin_templates()
    assert len({t.name for t in builtins}) == len(builtins)
    assert chatfmt.REGISTRY.names() == sorted(t.name for t in builtins)
    assert Registry().names() == chatfmt.REGISTRY.names()
    fresh = ParserTable("tool", lambda: [(PlainParser, ())])
    assert dict(fresh) == {k: v for k, v in TOOL_PARSERS.items() if ":" not in k}  # no derived


def test_templates_name_the_parser_classes_registered_under_their_names() -> None:
    from chatfmt.parsing import REASONING_PARSERS

    for tpl in families.builtin_templates():
        for cls, name, table in (
            (tpl.tool_parser_class, tpl.tool_parser, TOOL_PARSERS),
            (tpl.reasoning_parser_class, tpl.reasoning_parser, REASONING_PARSERS),
        ):
            if name is not None:
                assert cls is not None and table[name] is cls, (tpl.name, name)
                assert tpl.info()["tool_parser"] == tpl.tool_parser  # names stay the public handle


@pytest.mark.parametrize("kind", ["tool", "reasoning"])
def test_a_name_or_alias_of_another_parser_is_refused(kind: str) -> None:
    table = ParserTable(kind, lambda: [])
    taken = next(iter(table))

    class Impostor(FormatParser):
        name = "impostor-test-parser"

    with pytest.raises(ChatFmtError, match=f"{kind} parser name {taken!r} is taken by"):
        table.add(Impostor, taken)
    with pytest.raises(ChatFmtError, match="is taken by"):
        table.add(type("Twin", (FormatParser,), {"name": taken}))
    assert Impostor.name not in table  # a refused parser leaves no name behind
    assert table.add(table[taken], taken) is table[taken]  # the same parser again is fine


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_old_module_paths_still_import_with_a_warning(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is an old module path"):
        module = importlib.import_module(old)
    new = importlib.import_module(_moved.MOVED[old])
    assert module is new and new.__spec__ is not None and new.__spec__.name == new.__name__


def test_the_old_formats_package_still_lists_the_builtin_templates() -> None:
    for name in [m for m in sys.modules if m == "chatfmt.formats"]:
        del sys.modules[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("chatfmt.formats")
        from chatfmt.formats import misc  # type: ignore[import-not-found]
    assert [t.name for t in old.builtin_templates()] == [
        t.name for t in families.builtin_templates()
    ]
    assert misc.STARCHAT is chatfmt.get_template("starchat")


# ---------------------------------------------------------------- tool-call formats as data
def _declared_formats() -> list[tuple[str, type[FormatParser], tuple[ToolCallFormat, ...]]]:
    return [
        (name, parser, forms)
        for name in families.FAMILIES
        for parser, forms in getattr(families.family(name), "TOOL_CALL_FORMATS", {}).items()
    ]


def _templates_of(parser: type[FormatParser]) -> list[Template]:
    return [t for t in chatfmt.REGISTRY if t.tool_parser_class is parser]


def _official_jinja(tpl: Template) -> Template | None:
    """The template's own Jinja (packaged) or the official Jinja it reproduces."""
    from chatfmt.jinja.recognize import official_source
    from chatfmt.jinja.template import JinjaTemplate

    if hasattr(tpl, "jinja_source"):
        return tpl
    for file in tpl.official_templates:
        source = official_source(file)
        if source is not None:
            return JinjaTemplate(source, name=tpl.name)
    return None


def _call_turn(tpl: Template) -> str | None:
    """The text the template writes for an assistant turn with one probe call (None: the
    template has no tool-call format of its own, e.g. SmolLM3's drops calls, LFM2's leaves
    them to the content, Command R's refuses the probe tools)."""
    from chatfmt.parsing.derived_probe import _TURNS, _USER, PROBE_NAME, PROBE_TOOLS, _shared_head

    try:
        prompt = tpl.render(_USER, add_generation_prompt=True, tools=PROBE_TOOLS)
    except chatfmt.ChatFmtError:
        return None
    for turn in (_TURNS["one"], {**_TURNS["one"], "content": None}):
        try:
            full = tpl.render([*_USER, turn], add_generation_prompt=False, tools=PROBE_TOOLS)
        except chatfmt.ChatFmtError:
            continue
        text = full[_shared_head(prompt, full) :]
        return text if PROBE_NAME in text else None
    return None


@pytest.mark.parametrize(
    ("family", "parser", "forms"),
    _declared_formats(),
    ids=[f"{f}-{p.name}" for f, p, _ in _declared_formats()],
)
def test_declared_tool_call_formats_describe_the_family_templates(
    family: str, parser: type[FormatParser], forms: tuple[ToolCallFormat, ...]
) -> None:
    """Each template using the parser writes its calls in a declared form, with the declared
    markers in order, the official Jinja derives to a declared form, and the parser reads
    the native rendering back."""
    from chatfmt.parsing import derive_parser
    from chatfmt.parsing.derived_probe import PROBE_ARGS, PROBE_NAME

    templates = _templates_of(parser)
    if parser.name in NO_TEMPLATE:  # checked by its grammar and parse-back instead
        assert not templates, f"{parser.name} has a template now: drop it from NO_TEMPLATE"
        return
    assert templates, f"no template uses {parser.name}"
    derived_any = False
    for tpl in templates:
        jinja = _official_jinja(tpl)
        if jinja is not None:
            try:
                derived = derive_parser(jinja)
            except chatfmt.ParseError:
                derived = None  # the probe cannot classify this template; the render check stays
            if derived is not None and derived.encoding is not None:
                assert any(f.same_calls(derived) for f in forms), (tpl.name, derived)
                derived_any = True
        text = _call_turn(tpl)
        if text is None:
            continue
        # DeepSeek V3's template leaves the calls block open after a single call
        assert any(
            _in_order(text, f.markers()) or _in_order(text + f.calls_end, f.markers())
            for f in forms
        ), (tpl.name, text)
        msg = chatfmt.parse(text, tpl, tools=PROBE_TOOLS_ARG, thinking_prefilled=False)
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in msg.get("tool_calls") or ()
        ]
        if parser.name == "minimax_m3":  # nested XML values without a schema are read as text
            calls = [(n, {**a, "opts": PROBE_ARGS["opts"]}) for n, a in calls]
        assert calls == [(PROBE_NAME, PROBE_ARGS)], (tpl.name, text)
    if parser.name in NOT_DERIVED:  # declared for the constraints; the probe cannot read it
        assert not derived_any, f"{parser.name} derives now: drop it from NOT_DERIVED"
    else:
        assert derived_any, f"no template of {parser.name} derives to a declared form"


#: Parsers that no registered template uses (paired by name, ``chatfmt.with_tool_parser``):
#: their declared form is checked by tests/core/test_constraints_formats.py
#: (``test_a_template_paired_with_a_named_parser_gets_its_grammar``), on the call the peer's
#: parser reads.
NO_TEMPLATE = {
    "pythonic": "vLLM's pythonic parser, for Llama 3.2 prompted with a pythonic template",
    "phi4": "vLLM's phi4_mini_json parser (Phi-4-mini's functools[…])",
}

#: Parsers whose declared form the derived-parser probe does not find in any of their
#: templates' Jinja (the form is checked by rendering and parsing only), and why.
NOT_DERIVED = {
    "apertus": "calls are {NAME: arguments} objects, an encoding the probe does not classify",
    "command_r": "Command R renders no calls from its Jinja; R7B's id-first objects are not classified",
    "deepseek_v32": "DSML parameters carry a type attribute (string=true|false)",
    "functionary_v32": "no marker before the first call's name (it is in the prompt)",
    "gemma4": 'bare keys with <|"|>-delimited strings',
    "functiongemma": "no official Jinja (the template is built from Ollama's renderer)",
    "glm4": "the official Jinja renders no assistant calls",
    "chatglm3": "the official Jinja renders no assistant calls",
    "harmony": "the call's header is written in several orders",
    "glimmer": "the function's name is written twice (message header and invoke)",
    "hunyuan": "a separator marker between the name and the parameters",
    "internlm2": "the official Jinja renders no assistant calls",
    "kimi_k3": "arguments carry a type attribute and calls an index",
    "minicpm5": "name and keys are attributes (<function name=…>, <param name=…>)",
    "minimax_m2": "name and keys are attributes (<invoke name=…>, <parameter name=…>)",
    "minimax_m3": "each value is closed by its own key (</KEY>)",
    "ernie45": "the ERNIE 4.5 template renders no calls (the Thinking model's own is not shipped)",
}


def _in_order(text: str, markers: tuple[str, ...]) -> bool:
    pos = 0
    for marker in markers:
        pos = text.find(marker, pos)
        if pos < 0:
            return False
        pos += len(marker)
    return True


@pytest.mark.parametrize(("old", "name"), sorted(_moved.MOVED_NAMES))
def test_names_moved_to_a_family_still_import_from_the_old_module(old: str, name: str) -> None:
    new = importlib.import_module(_moved.MOVED_NAMES[(old, name)])
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to"):
        found = getattr(importlib.import_module(old), name)
    assert found is getattr(new, name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        importlib.import_module(old).no_such_name  # noqa: B018


def test_templates_and_their_parser_classes_pickle() -> None:
    import pickle

    for tpl in families.builtin_templates():
        copy = pickle.loads(pickle.dumps(tpl))
        assert copy.tool_parser_class is tpl.tool_parser_class, tpl.name
        assert copy.reasoning_parser_class is tpl.reasoning_parser_class, tpl.name
