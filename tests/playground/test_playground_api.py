"""The playground's API: templates, render by template or by a request's template, parse.

The app runs under uvicorn on 127.0.0.1 (as ``chatfmt playground`` runs it: no model); a
template from a request is accepted only with the trust option, and runs sandboxed.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import chatfmt
from _fake_server import gateway
from chatfmt.gateway import Limits, create_app
from chatfmt.gateway.playground import Playground
from chatfmt.jinja.untrusted import SandboxLimits
from chatfmt.tokens import load_tokenizer

from _support import SHARED

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris? <|im_end|>"},
    {"role": "assistant", "content": "Let me check."},
]
ENDLESS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
JINJA = "{% for m in messages %}[{{ m.role }}]{{ m.content }}[/]{% endfor %}"


def call(base: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            kind = resp.headers.get("content-type", "")
            return resp.status, json.loads(raw) if "json" in kind else raw.decode()
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


#: The sandbox's time limit here: what an endless template is stopped after, and room enough
#: for a real template's first use (deriving its parser) on a loaded 2-core machine.
_LIMIT_S = 3


@pytest.fixture(scope="module")
def trusted() -> Iterator[str]:
    tokenizer = load_tokenizer(SHARED / "tokenizers" / "qwen3")
    playground = Playground(
        trust_request_templates=True,
        tokenizer=tokenizer,
        limits=SandboxLimits(seconds=float(_LIMIT_S)),
    )
    with gateway(create_app({}, limits=Limits(), playground=playground)) as url:
        yield url


@pytest.fixture(scope="module")
def untrusted() -> Iterator[str]:
    with gateway(create_app({}, playground=Playground())) as url:
        yield url


def test_the_page_and_its_files_are_served(untrusted: str) -> None:
    status, html = call(untrusted, "/")
    assert status == 200 and "chatfmt playground" in html and "/playground/app.js" in html
    for name in ("app.js", "style.css", "examples.json"):
        assert call(untrusted, f"/playground/{name}")[0] == 200
    assert call(untrusted, "/playground/..%2Fpyproject.toml")[0] == 404


def test_a_chat_request_without_served_models_says_so(untrusted: str) -> None:
    body = {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]}
    status, answer = call(untrusted, "/v1/chat/completions", body)
    assert status == 404
    assert answer["error"]["message"] == "the model 'qwen3' does not exist (no model is served)"


def test_templates_lists_the_registry_and_the_trust_setting(untrusted: str) -> None:
    status, body = call(untrusted, "/v1/templates")
    assert status == 200 and body["trust_request_chat_template"] is False
    names = {t["name"] for t in body["data"]}
    assert names == {t.name for t in chatfmt.list_templates()}
    qwen3 = next(t for t in body["data"] if t["name"] == "qwen3")
    assert qwen3["options"]["enable_thinking"] is True and qwen3["tool_parser"] == "hermes"


def test_render_by_template_gives_the_segments_and_tokens(trusted: str) -> None:
    status, body = call(
        trusted,
        "/v1/render",
        {
            "template": "qwen3",
            "messages": MESSAGES,
            "tools": [WEATHER],
            "add_generation_prompt": False,
        },
    )
    assert status == 200
    expected = chatfmt.render_segments(
        MESSAGES, "qwen3", tools=[WEATHER], add_generation_prompt=False
    )
    assert [(s["text"], s["kind"], s["trained"], s["message"]) for s in body["segments"]] == [
        (s.text, s.kind.value, s.trained, s.message) for s in expected
    ]
    assert body["prompt"] == "".join(s.text for s in expected)
    tokens = body["tokens"]
    enc = chatfmt.tokens.encode(
        MESSAGES, "qwen3", load_tokenizer(SHARED / "tokenizers" / "qwen3"), tools=[WEATHER]
    )
    assert [t["id"] for t in tokens] == list(enc.input_ids)
    im_end = [t for t in tokens if t["text"] == "<|im_end|>"]
    assert sum(t["control"] for t in im_end) == 3  # the user's <|im_end|> is text, not control


def test_render_errors_name_the_field(trusted: str) -> None:
    bad = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 5}]
    status, body = call(trusted, "/v1/render", {"template": "qwen3", "messages": bad})
    assert status == 400 and body["error"]["param"] == "messages[1].content"
    status, body = call(trusted, "/v1/render", {"template": "../etc/passwd", "messages": MESSAGES})
    assert status == 404 and body["error"]["code"] == "template_not_found"


def test_request_templates_need_the_trust_option(untrusted: str) -> None:
    status, body = call(untrusted, "/v1/render", {"chat_template": JINJA, "messages": MESSAGES})
    assert status == 403 and "--trust-request-chat-template" in body["error"]["message"]
    assert body["error"]["param"] == "chat_template"


def test_request_template_renders_in_the_sandbox(trusted: str) -> None:
    status, body = call(trusted, "/v1/render", {"chat_template": JINJA, "messages": MESSAGES})
    assert status == 200
    assert body["prompt"] == chatfmt.render(MESSAGES, JINJA)


def test_endless_template_is_stopped_while_a_normal_request_succeeds(trusted: str) -> None:
    results: dict[str, Any] = {}

    def endless() -> None:
        results["endless"] = call(
            trusted, "/v1/render", {"chat_template": ENDLESS, "messages": MESSAGES}
        )

    thread = threading.Thread(target=endless)
    thread.start()
    status, body = call(trusted, "/v1/render", {"template": "chatml", "messages": MESSAGES})
    normal_done_first = thread.is_alive()
    thread.join()
    assert status == 200 and body["prompt"]
    assert normal_done_first
    status, body = results["endless"]
    assert status == 400 and f"did not finish within {_LIMIT_S} s" in body["error"]["message"]


def test_huge_output_template_gets_a_clear_error(trusted: str) -> None:
    huge = "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}"
    status, body = call(trusted, "/v1/render", {"chat_template": huge, "messages": MESSAGES})
    assert status == 400 and "over the limit" in body["error"]["message"]


def test_parse_with_a_registered_template(trusted: str) -> None:
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'
    status, body = call(
        trusted, "/v1/parse", {"template": "qwen2.5", "output": output, "tools": [WEATHER]}
    )
    assert status == 200
    assert body["finish_reason"] == "tool_calls"
    assert body["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_parse_with_a_request_template_runs_in_the_sandbox(trusted: str, untrusted: str) -> None:
    source = (SHARED / "reference" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    output = "Hello!<|im_end|>\nextra"
    status, body = call(trusted, "/v1/parse", {"chat_template": source, "output": output})
    assert status == 200
    assert body["message"]["content"] == "Hello!" and body["trailing_text"] == "extra"
    assert call(untrusted, "/v1/parse", {"chat_template": source, "output": output})[0] == 403


def test_chat_completions_refuse_a_request_template_instead_of_ignoring_it() -> None:
    from chatfmt.gateway.schema import ChatBody, unsupported

    body = ChatBody.model_validate({"model": "m", "messages": MESSAGES, "chat_template": JINJA})
    error = unsupported(body)
    assert error is not None and error.param == "chat_template" and error.status == 400
