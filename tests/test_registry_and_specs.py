"""Registry lookups (names, aliases, model ids, paths) and declarative template files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chatfmt
from chatfmt import TemplateError, TemplateNotFoundError
from chatfmt.registry import Registry

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
    with pytest.raises(TemplateNotFoundError):
        chatfmt.get_template("acme/totally-unknown-model-xyz")


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
    from chatfmt import RoleFormat, SpecTemplate, TemplateSpec, UnsupportedFeatureError

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
