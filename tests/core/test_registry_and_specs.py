"""Registry lookups (names, aliases, model ids, paths) and declarative template files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import chatfmt
from chatfmt import TemplateError, TemplateNotFoundError, UnsupportedFeatureError
from chatfmt.config import GenerationConfig
from chatfmt.registry import Registry
from chatfmt.spec import spec_from_dict

SPEC = {
    "name": "my-chat",
    "aliases": ["mine"],
    "bos": "<s>",
    "default_system": "Be brief.",
    "roles": {
        "system": {"prefix": "[SYS] ", "suffix": "", "separator": "\n"},
        "user": {"prefix": "[U] ", "separator": "\n"},
        "assistant": {"prefix": "[A] ", "suffix": "</s>", "separator": "\n"},
    },
    "generation": {"stop_words": ["</s>"], "session_len": 4096, "temperature": 0.3},
}
EXPECTED = "<s>[SYS] Be brief.\n[U] hi\n[A] yo</s>\n[U] again\n[A] "
MESSAGES = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "yo"},
    {"role": "user", "content": "again"},
]


def test_lookup_by_name_alias_and_case() -> None:
    assert chatfmt.get_template("chatml") is chatfmt.get_template("OpenAI-ChatML")
    assert (
        chatfmt.get_template("zephyr").name
        == chatfmt.get_template("HuggingFaceH4/zephyr-7b-beta").name
    )


def test_lookup_by_hf_cache_and_local_path(tmp_path: Path) -> None:
    model_dir = tmp_path / "models--HuggingFaceH4--zephyr-7b-beta" / "snapshots" / "123abc"
    model_dir.mkdir(parents=True)
    assert chatfmt.get_template(str(model_dir)).name == chatfmt.get_template("zephyr").name
    local = tmp_path / "zephyr-7b-beta"
    local.mkdir()
    assert chatfmt.get_template(str(local)).name == chatfmt.get_template("zephyr").name


def test_miss_lists_close_names_and_never_falls_back() -> None:
    with pytest.raises(TemplateNotFoundError) as info:
        chatfmt.get_template("chatmll")
    assert "chatml" in info.value.suggestions
    assert "chatml" in str(info.value)
    with pytest.raises(TemplateNotFoundError, match="no chat template matches") as info:
        chatfmt.get_template("acme/totally-unknown-model-xyz")
    assert info.value.query == "acme/totally-unknown-model-xyz"


@pytest.mark.parametrize("suffix", [".json", ".toml", ".yaml"])
def test_spec_file_formats(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"tpl{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(SPEC))
    elif suffix == ".yaml":
        import yaml

        path.write_text(yaml.safe_dump(SPEC))
    else:
        path.write_text(
            'name = "my-chat"\naliases = ["mine"]\nbos = "<s>"\ndefault_system = "Be brief."\n'
            '[roles.system]\nprefix = "[SYS] "\nseparator = "\\n"\n'
            '[roles.user]\nprefix = "[U] "\nseparator = "\\n"\n'
            '[roles.assistant]\nprefix = "[A] "\nsuffix = "</s>"\nseparator = "\\n"\n'
            '[generation]\nstop_words = ["</s>"]\nsession_len = 4096\ntemperature = 0.3\n'
        )
    # a path is accepted everywhere a template name is
    assert chatfmt.render(MESSAGES, str(path)) == EXPECTED
    tpl = chatfmt.get_template(path)
    assert tpl.generation_config.stop_words == ("</s>",)
    assert tpl.generation_config.session_len == 4096
    assert tpl.generation_config.temperature == 0.3
    assert (
        tpl.render([{"role": "user", "content": "more"}], sequence_start=False)
        == "\n[U] more\n[A] "
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"roles": {"user": {"prefix": "u"}}}, "needs a format for role 'assistant'"),
        ({"colour": "blue"}, "unknown key"),
        ({"system_mode": "sideways"}, "system_mode"),
        ({"generation": {"stop": ["x"]}}, "generation takes only"),
        ({"roles": {"user": {"prefix": "u", "postfix": "x"}, "assistant": {}}}, "roles.user"),
    ],
)
def test_bad_spec_files_are_clear(tmp_path: Path, change: dict, needle: str) -> None:  # type: ignore[type-arg]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**SPEC, **change}))
    with pytest.raises(TemplateError, match=needle):
        chatfmt.get_template(str(path))


def test_first_user_system_mode_and_unsupported_system() -> None:
    from chatfmt import RoleFormat, SpecTemplate, TemplateSpec

    tpl = SpecTemplate(
        TemplateSpec(
            name="merge-test",
            roles={
                "user": RoleFormat("[INST] ", " [/INST]"),
                "assistant": RoleFormat(" ", " </s>"),
            },
            system_mode="first_user",
            system_in_user="<<SYS>>\n{system}\n<</SYS>>\n\n",
        )
    )
    out = tpl.render([{"role": "system", "content": "S"}, *MESSAGES], add_generation_prompt=False)
    assert out == "[INST] <<SYS>>\nS\n<</SYS>>\n\nhi [/INST] yo </s>[INST] again [/INST]"
    # No user turn to hold the system prompt: refused, not dropped.
    with pytest.raises(UnsupportedFeatureError) as err:
        tpl.render([{"role": "system", "content": "S"}])
    assert (err.value.index, err.value.field) == (0, "content")
    strict = SpecTemplate(
        TemplateSpec(
            name="nosys",
            roles={"user": RoleFormat("u:"), "assistant": RoleFormat("a:", "|")},
            system_mode="unsupported",
        )
    )
    with pytest.raises(UnsupportedFeatureError, match=r"messages\[0\]"):
        strict.render([{"role": "system", "content": "S"}, *MESSAGES])


def test_registry_rejects_duplicates() -> None:
    reg = Registry()
    reg._loaded = True  # an empty, private registry
    reg.register(chatfmt.get_template("chatml"))
    with pytest.raises(TemplateError, match="already registered"):
        reg.register(chatfmt.get_template("chatml"))


def test_generation_config_bundled() -> None:
    cfg = chatfmt.get_template("chatml").generation_config
    assert cfg.capability == "chat" and "<|im_end|>" in cfg.stop_words
    assert set(cfg.to_dict()) >= {
        "session_len",
        "stop_words",
        "tool_stop_words",
        "top_p",
        "top_k",
        "temperature",
        "repetition_penalty",
        "capability",
    }


def test_unknown_option_rejected() -> None:
    with pytest.raises(TemplateError, match="no option"):
        chatfmt.render(MESSAGES, "chatml", enable_thinking=True)


# ---------------------------------------------------------------------- collisions and the built-in list
def _spec(name: str, aliases: tuple[str, ...] = (), model_ids: tuple[str, ...] = ()) -> Any:
    from chatfmt import RoleFormat, TemplateSpec

    return TemplateSpec(
        name=name,
        aliases=aliases,
        model_ids=model_ids,
        roles={"user": RoleFormat("u:"), "assistant": RoleFormat("a:", "|")},
    )


@pytest.mark.parametrize(
    ("second", "needle"),
    [
        (("first",), "template name 'first' is already registered"),
        (("FIRST-ALIAS",), "template name 'FIRST-ALIAS' is already an alias of 'first'"),
        (("second", ("first",)), "alias 'first' of 'second' is the name of template 'first'"),
        (("second", ("first-alias",)), "alias 'first-alias' of 'second' is already an alias"),
        (("second", (), ("Org/Model",)), "model id 'org/model' of 'second' already names"),
    ],
)
def test_registry_refuses_name_alias_and_model_id_collisions(
    second: tuple[Any, ...], needle: str
) -> None:
    reg = Registry(builtins=False)
    first = reg.register(_spec("first", ("first-alias",), ("org/model",)))
    with pytest.raises(TemplateError, match=re.escape(needle)):
        reg.register(_spec(*second))
    assert reg.get("first-alias") is first and reg.get("org/model") is first


def test_replace_is_explicit_and_leaves_no_stale_alias() -> None:
    reg = Registry(builtins=False)
    reg.register(_spec("first", ("old-alias",), ("org/model",)))
    new = reg.register(_spec("first", ("new-alias",)), replace=True)
    assert reg.get("first") is new and reg.get("new-alias") is new
    with pytest.raises(TemplateNotFoundError) as info:
        reg.get("old-alias")  # the replaced template's alias went with it
    assert info.value.query == "old-alias"
    with pytest.raises(TemplateNotFoundError) as info:
        reg.get("org/model")
    assert info.value.query == "org/model"
    taker = reg.register(_spec("other", ("new-alias",)), replace=True)  # takes the alias over
    assert reg.get("new-alias") is taker and reg.get("first") is new
    with pytest.raises(TemplateError, match="is the name of template"):
        reg.register(_spec("third", ("first",)), replace=True)  # never hides a name


def test_every_alias_and_model_id_names_the_template_that_declares_it() -> None:
    """No stale alias: the seed's ``<|end|>`` format is ``starchat``, ``zephyr`` the official one."""
    from chatfmt.families.misc import templates as misc

    reg = chatfmt.REGISTRY
    reg.names()
    for alias, key in reg._aliases.items():
        assert alias in {a.lower() for a in reg._templates[key].aliases}, alias
    for tpl in reg:
        for word in (*tpl.aliases, *tpl.model_ids):
            assert chatfmt.get_template(word) is tpl, (word, tpl.name)
    assert chatfmt.get_template("starchat") is misc.STARCHAT
    assert chatfmt.get_template("zephyr") is misc.ZEPHYR
    assert "starchat" not in misc.ZEPHYR.aliases


def test_resolution_is_cached_and_register_invalidates_it() -> None:
    reg = Registry(builtins=False)
    first = reg.register(_spec("first", ("alias-one",), ("org/first-7b",)))
    for query in ("first", "Alias-One", "org/first-7b"):
        assert reg.get(query) is first
        assert reg._resolved[query] is first  # remembered under the exact query
        assert reg.get(query) is first
    with pytest.raises(TemplateNotFoundError) as info:
        reg.get("late")  # a miss is not remembered ...
    assert info.value.query == "late"
    late = reg.register(_spec("late"))
    assert reg.get("late") is late  # ... so a later registration is found
    again = reg.register(_spec("first", ("alias-one",)), replace=True)
    assert reg.get("first") is again and reg.get("Alias-One") is again


def test_paths_are_not_remembered(tmp_path: Path) -> None:
    reg = Registry()
    path = tmp_path / "tpl.json"
    path.write_text(json.dumps(SPEC))
    assert reg.get(str(path)).name == "my-chat"
    assert str(path) not in reg._resolved
    path.write_text(json.dumps({**SPEC, "name": "edited"}))
    assert reg.get(str(path)).name == "edited"


def test_tool_parser_names_cannot_collide() -> None:
    from chatfmt.errors import ChatFmtError
    from chatfmt.parsing.base import TOOL_PARSERS, FormatParser, register_tool_parser

    hermes = TOOL_PARSERS["hermes"]
    assert register_tool_parser(hermes, "hermes") is hermes  # the same parser again is fine

    class Impostor(FormatParser):
        name = "impostor-test-parser"

    try:
        with pytest.raises(ChatFmtError, match="tool parser name 'hermes' is taken by"):
            register_tool_parser(Impostor, "hermes")
    finally:
        TOOL_PARSERS.pop(Impostor.name, None)
    assert TOOL_PARSERS["hermes"] is hermes


# ------------------------------------------------------------------ spec files
_ROLES = {"user": {"prefix": "U:"}, "assistant": {"prefix": "A:", "suffix": "</s>"}}


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"aliases": "myalias"}, "aliases"),
        ({"model_ids": "org/name"}, "model_ids"),
        ({"model_patterns": "x.*"}, "model_patterns"),
        ({"control_tokens": "</s>"}, "control_tokens"),
        ({"generation": {"stop_words": "</s>"}}, "stop_words"),
        ({"generation": {"tool_stop_words": "</s>"}}, "tool_stop_words"),
        ({"generation": {"session_len": "big"}}, "session_len"),
        ({"generation": {"top_k": 1.5}}, "top_k"),
        ({"generation": {"top_p": "high"}}, "top_p"),
        ({"generation": {"temperature": True}}, "temperature"),
        ({"generation": {"repetition_penalty": None}}, "repetition_penalty"),
        ({"generation": {"capability": "voice"}}, "capability"),
        ({"roles": {**_ROLES, "user": {"prefix": 5}}}, "roles.user.prefix"),
        ({"bos": 1}, "bos"),
    ],
)
def test_spec_type_errors_name_the_key(extra: dict[str, Any], key: str) -> None:
    data = {"name": "x", "roles": _ROLES, **extra}
    with pytest.raises(TemplateError) as err:
        spec_from_dict(data, origin="my.toml")
    assert key in str(err.value) and "my.toml" in str(err.value)


def test_spec_lists_and_generation_replace() -> None:
    spec = spec_from_dict(
        {"name": "x", "roles": _ROLES, "aliases": ["y"], "generation": {"stop_words": ["</s>"]}}
    )
    assert spec.aliases == ("y",) and spec.generation_config.stop_words == ("</s>",)
    assert GenerationConfig().replace(stop_words=["a", "b"]).stop_words == ("a", "b")
    with pytest.raises(TemplateError, match="stop_words must be a list of strings, got str"):
        GenerationConfig().replace(stop_words="</s>")
