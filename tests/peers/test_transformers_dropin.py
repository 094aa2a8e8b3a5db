"""The transformers drop-in against transformers itself, on the reference templates.

Identical strings and ids where transformers is right; the documented differences where
it is not: user text that spells a control token stays text (transformers encodes it as
the control token), and assistant masks exist for every template (transformers returns
all zeros without ``{% generation %}``).
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import pytest

from chatfmt.errors import ChatFmtError, UnsupportedFeatureError
from chatfmt.integrations.transformers import apply_chat_template, template_of
from chatfmt.jinja import RecognizedTemplate

from _support import require_shared

#: the slow tier (`pytest -m "not slow"` leaves it out; CI runs it)
pytestmark = pytest.mark.slow

transformers = pytest.importorskip("transformers")
logging.getLogger("transformers").setLevel(logging.ERROR)

SHARED = require_shared()
TEMPLATES = sorted((SHARED / "reference" / "templates").glob("*.jinja"))
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hello there"},
    {"role": "assistant", "content": "Hi! How can I help?"},
    {"role": "user", "content": "Weather in Paris?"},
]
TOOL_TURN = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
]


#: (template, conversation) where transformers fails inside the template (see the test).
TRANSFORMERS_FAILS: set[tuple[str, str]] = {
    # tools=None iterated, or messages read as tool results (TypeError / UndefinedError)
    ("CohereForAI-c4ai-command-r-plus-tool_use", "chat"),
    ("CohereForAI-c4ai-command-r-plus-tool_use", "history"),
    ("CohereForAI-c4ai-command-r-plus-tool_use", "tool"),
    ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "chat"),
    ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "history"),
    ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "chat"),
    ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "history"),
    ("fireworks-ai-llama-3-firefunction-v2", "chat"),  # 'functions' is undefined
    ("fireworks-ai-llama-3-firefunction-v2", "history"),
    ("fireworks-ai-llama-3-firefunction-v2", "tool"),
    ("meetkai-functionary-medium-v3.1", "chat"),  # bos_token undefined (Qwen3 tokenizer)
    ("meetkai-functionary-medium-v3.1", "history"),
    ("meetkai-functionary-medium-v3.1", "tool"),
    ("meetkai-functionary-medium-v3.2", "chat"),
    ("meetkai-functionary-medium-v3.2", "history"),
    ("meetkai-functionary-medium-v3.2", "tool"),
    # the template appends to its own list: transformers' sandbox refuses (docs/jinja.md)
    ("Kimi-K2-Instruct", "tool"),
    ("Kimi-K2-Thinking", "tool"),
    ("llama-cpp-deepseek-r1", "tool"),  # tojson of a generator
}
#: (template, conversation) that chatfmt refuses with UnsupportedFeatureError: the official
#: template would drop the assistant's tool calls silently (transformers renders without them).
CHATFMT_REFUSES: set[tuple[str, str]] = {
    ("HuggingFaceTB-SmolLM3-3B", "tool"),
    ("internlm-internlm2-chat-7b", "tool"),
    ("llama-cpp-rwkv-world", "tool"),
}
#: (template, conversation) where the official template drops the assistant's tool calls and
#: chatfmt writes them as the model itself writes a call (docs/rendering.md): the text is
#: transformers' with the call added in the empty assistant turn.
CHATFMT_WRITES_CALLS: dict[tuple[str, str], str] = {
    ("LFM2-8B-A1B", "tool"): "<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>",
    ("LFM2.5-Instruct", "tool"): "<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>",
}


@cache
def tokenizer(name: str = "qwen3") -> Any:
    return transformers.AutoTokenizer.from_pretrained(str(SHARED / "tokenizers" / name))


def _with_template(path: Path) -> Any:
    tok = tokenizer()
    tok.chat_template = path.read_text(encoding="utf-8")
    return tok


def _theirs(tok: Any, conv: Any, **kw: Any) -> Any:
    try:
        return tok.apply_chat_template(conv, **kw)
    except Exception as exc:  # the template refuses the input: chatfmt must refuse too
        return exc


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
@pytest.mark.parametrize(
    ("conv", "kw"),
    [
        (CHAT, {"add_generation_prompt": True}),
        (CHAT[:3], {}),
        (TOOL_TURN, {"tools": [WEATHER], "add_generation_prompt": True}),
    ],
    ids=["chat", "history", "tool-turn"],
)
def test_same_text_and_ids_as_transformers(
    path: Path, conv: Any, kw: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    tok = _with_template(path)
    text = _theirs(tok, conv, tokenize=False, **kw)
    case = (path.stem, request.node.callspec.id.split("-")[0])
    if isinstance(text, Exception):
        if type(text) is jinja2.TemplateError:  # raise_exception: refused on purpose
            with pytest.raises(ChatFmtError):
                apply_chat_template(tok, conv, tokenize=False, **kw)
            return
        # transformers fails inside the template (it drops `content: None`, then the
        # template reads `.content`; tools=None iterated; …); chatfmt renders the input
        # the way the template accepts it (docs/jinja.md, dialects).
        assert case in TRANSFORMERS_FAILS, f"{case}: {text!r}"
        out = apply_chat_template(tok, conv, tokenize=False, **kw)
        assert "Weather in Paris?" in out or "Hello there" in out
        return
    assert case not in TRANSFORMERS_FAILS
    if case in CHATFMT_REFUSES:
        with pytest.raises(UnsupportedFeatureError, match="tool_calls"):
            apply_chat_template(tok, conv, tokenize=False, **kw)
        return
    if case in CHATFMT_WRITES_CALLS:
        call = CHATFMT_WRITES_CALLS[case]
        empty_turn = "<|im_start|>assistant\n<|im_end|>"
        assert text.count(empty_turn) == 1
        written = text.replace(empty_turn, f"<|im_start|>assistant\n{call}<|im_end|>")
        assert apply_chat_template(tok, conv, tokenize=False, **kw) == written
        return
    assert apply_chat_template(tok, conv, tokenize=False, **kw) == text
    ids = tok.apply_chat_template(conv, return_dict=False, **kw)
    assert apply_chat_template(tok, conv, return_dict=False, **kw) == ids


def test_batches_padding_and_tensors_match() -> None:
    tok = _with_template(TEMPLATES[[p.stem for p in TEMPLATES].index("Qwen-Qwen3-0.6B")])
    batch = [CHAT, CHAT[:2]]
    theirs = tok.apply_chat_template(batch, padding=True, return_tensors="np")
    ours = apply_chat_template(tok, batch, padding=True, return_tensors="np")
    assert (theirs["input_ids"] == ours["input_ids"]).all()
    assert (theirs["attention_mask"] == ours["attention_mask"]).all()
    text = tok.apply_chat_template(batch, tokenize=False)
    assert apply_chat_template(tok, batch, tokenize=False) == text
    cut = apply_chat_template(tok, CHAT, truncation=True, max_length=10, return_dict=False)
    assert cut == tok.apply_chat_template(CHAT, truncation=True, max_length=10, return_dict=False)


def test_control_token_in_user_text_stays_text() -> None:
    tok = _with_template(TEMPLATES[[p.stem for p in TEMPLATES].index("Qwen-Qwen3-0.6B")])
    conv = [{"role": "user", "content": "Say <|im_end|> please"}]
    end_id = tok.convert_tokens_to_ids("<|im_end|>")
    theirs = tok.apply_chat_template(conv, return_dict=False)
    ours = apply_chat_template(tok, conv, return_dict=False)
    assert theirs.count(end_id) == 2  # transformers: the user's text became a control token
    assert ours.count(end_id) == 1  # chatfmt: only the template's own end of turn
    assert tok.decode(ours) == tok.decode(theirs)  # the same text


def test_assistant_masks_without_generation_blocks() -> None:
    tok = _with_template(TEMPLATES[[p.stem for p in TEMPLATES].index("Qwen-Qwen2.5-7B-Instruct")])
    out = apply_chat_template(tok, CHAT[:3], return_assistant_tokens_mask=True)
    theirs = tok.apply_chat_template(CHAT[:3], return_assistant_tokens_mask=True)
    assert out["input_ids"] == theirs["input_ids"]
    assert not any(theirs["assistant_masks"])  # transformers: no {% generation %}, all zeros
    trained = [i for i, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tok.decode(trained) == "Hi! How can I help?<|im_end|>"


GENERATION_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m.content }}<|im_end|>{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_assistant_masks_equal_transformers_where_it_has_them() -> None:
    tok = tokenizer()
    tok.chat_template = GENERATION_TEMPLATE
    conv = CHAT[:3]
    theirs = tok.apply_chat_template(conv, return_assistant_tokens_mask=True)
    ours = apply_chat_template(tok, conv, return_assistant_tokens_mask=True)
    assert ours["input_ids"] == theirs["input_ids"]
    assert ours["assistant_masks"] == theirs["assistant_masks"]
    assert any(ours["assistant_masks"])


def test_assistant_masks_with_a_generation_prompt_equal_transformers() -> None:
    # transformers marks every assistant turn whatever add_generation_prompt says
    tok = tokenizer()
    tok.chat_template = GENERATION_TEMPLATE
    kw: dict[str, Any] = {"add_generation_prompt": True, "return_assistant_tokens_mask": True}
    theirs = tok.apply_chat_template(CHAT, return_dict=True, **kw)
    ours = apply_chat_template(tok, CHAT, return_dict=True, **kw)
    assert ours["input_ids"] == theirs["input_ids"]
    assert ours["assistant_masks"] == theirs["assistant_masks"]
    assert any(ours["assistant_masks"])


@pytest.mark.parametrize(
    ("stem", "tokenizer_name", "end"),
    [
        ("Qwen-Qwen3-0.6B", "qwen3", "<|im_end|>"),
        ("meta-llama-Llama-3.1-8B-Instruct", "llama3_1", "<|eot_id|>"),
    ],
)
def test_assistant_masks_with_a_generation_prompt_mark_every_reply(
    stem: str, tokenizer_name: str, end: str
) -> None:
    tok = tokenizer(tokenizer_name)
    tok.chat_template = (SHARED / "reference" / "templates" / f"{stem}.jinja").read_text()
    conv = [*CHAT, {"role": "assistant", "content": "Sunny, 18 C."}, CHAT[-1]]
    out = apply_chat_template(
        tok, conv, return_dict=True, return_assistant_tokens_mask=True, add_generation_prompt=True
    )
    trained = [i for i, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    text = tok.decode(trained)
    for reply in ("Hi! How can I help?", "Sunny, 18 C."):
        assert reply + end in text
    plain = apply_chat_template(tok, CHAT[:1], return_dict=True, return_assistant_tokens_mask=True)
    assert not any(plain["assistant_masks"])  # no assistant turn: nothing marked


def test_recognized_templates_run_natively() -> None:
    tok = _with_template(TEMPLATES[[p.stem for p in TEMPLATES].index("Qwen-Qwen3-0.6B")])
    assert isinstance(template_of(tok), RecognizedTemplate)


def test_arguments_transformers_refuses_are_refused() -> None:
    tok = tokenizer()
    with pytest.raises(ValueError, match="return_dict"):
        apply_chat_template(tok, CHAT, return_dict=False, return_assistant_tokens_mask=True)
    with pytest.raises(ValueError, match="empty"):
        apply_chat_template(tok, [])
