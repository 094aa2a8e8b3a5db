"""Every example of the InternLM2, ChatGLM3 and LMDeploy (InternLM v1) seeds, rendered exactly.

Expected strings are the seeds' text with two documented normalisations:

* invalid JSON in the seeds (trailing commas, ``size='10K'``) is written as valid JSON,
  otherwise identical (tool lists use :func:`chatfmt.formats.internlm.seed_json`);
* ChatGLM3 seed: it adds a readability newline before every role token ("should not
  be added in actual use") — :func:`glm3_actual` removes it — and its copy in
  ``../shared/seeds`` lost the JSON indentation, restored here (checked against the file).

InternLM2: the official template starts with ``{{ bos_token }}`` and ends every turn
with a newline; the seed shows neither, so we render with ``bos_token=""`` and the seed
text is followed by one ``"\\n"``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import chatfmt
from _seed_examples import (
    CODE_INTERPRETER,
    SEED_CHATGLM3_CHAT,
    SEED_CHATGLM3_CODE,
    SEED_CHATGLM3_CODE_MESSAGES,
    SEED_CHATGLM3_TOOLS,
    SEED_CHATGLM3_TOOLS_MESSAGES,
    SEED_INTERNLM2_COMBINED,
    SEED_INTERNLM2_COMBINED_MESSAGES,
    SEED_INTERNLM2_FUNCTION_CALL,
    SEED_INTERNLM2_FUNCTION_CALL_MESSAGES,
    SEED_INTERNLM2_INTERPRETER,
    SEED_INTERNLM2_INTERPRETER_MESSAGES,
    SEED_LMDEPLOY_INTERNLM_FIRST_TURN,
    WEATHER_TOOL,
    glm3_actual,
)
from chatfmt.families.internlm.templates import INTERNLM_META_INSTRUCTION, seed_json


# --------------------------------------------------------------------------- InternLM2 (seed 000)
def test_internlm2_seed_function_call() -> None:
    out = chatfmt.render(
        SEED_INTERNLM2_FUNCTION_CALL_MESSAGES,
        "internlm2",
        tools=[WEATHER_TOOL],
        add_generation_prompt=False,
        bos_token="",
    )
    assert out == SEED_INTERNLM2_FUNCTION_CALL + "\n"


def test_internlm2_seed_code_interpreter() -> None:
    out = chatfmt.render(
        SEED_INTERNLM2_INTERPRETER_MESSAGES,
        "internlm2",
        tools=[CODE_INTERPRETER],
        add_generation_prompt=False,
        bos_token="",
    )
    assert out == SEED_INTERNLM2_INTERPRETER + "\n"


def test_internlm2_seed_function_call_plus_interpreter() -> None:
    out = chatfmt.render(
        SEED_INTERNLM2_COMBINED_MESSAGES,
        "internlm2",
        tools=[WEATHER_TOOL, CODE_INTERPRETER],
        add_generation_prompt=False,
        bos_token="",
    )
    assert out == SEED_INTERNLM2_COMBINED + "\n"


def test_internlm2_seed_default_bos_and_generation_prompt() -> None:
    out = chatfmt.render(SEED_INTERNLM2_FUNCTION_CALL_MESSAGES, "internlm2", tools=[WEATHER_TOOL])
    assert out == "<s>" + SEED_INTERNLM2_FUNCTION_CALL + "\n<|im_start|>assistant\n"


def test_internlm2_seed_json_reproduces_seed_layout() -> None:
    block = SEED_INTERNLM2_FUNCTION_CALL.split("<|im_start|>system name=<|plugin|>\n")[1].split(
        "<|im_end|>"
    )[0]
    assert seed_json([WEATHER_TOOL["function"]]) + "\n" == block


# --------------------------------------------------------------------------- ChatGLM3 (seed 001)
def _seed001_blocks(shared_dir: Path) -> list[str]:
    """The three example blocks of seed 001, from its table-like page copy."""
    raw = next((shared_dir / "seeds").glob("001_*.txt")).read_text(encoding="utf-8")
    lines = []
    for chunk in raw.split("|||\n"):
        chunk = chunk.removeprefix("|\n").removesuffix("|\n").removesuffix("\n")
        lines.append(chunk)
    text = "\n".join(lines)
    blocks = []
    for head, fence in (
        ("#### Multi-turn Dialogue", "```"),
        ("#### Tool Calling", "````"),
        ("#### Code Execution", "````"),
    ):
        start = text.index("<|system|>\n", text.index(head))
        blocks.append(text[start : text.index(f"\n{fence}\n", start)])
    return blocks


def test_chatglm3_seed_text_matches_shared_copy(shared_dir: Path) -> None:
    chat, tools, code = _seed001_blocks(shared_dir)
    assert chat == SEED_CHATGLM3_CHAT
    assert code == SEED_CHATGLM3_CODE
    # the shared copy lost leading whitespace and keeps invalid trailing commas
    dedented = "\n".join(line.lstrip() for line in SEED_CHATGLM3_TOOLS.split("\n"))
    assert re.sub(r",\n(?=[\]}])", "\n", tools) == dedented


def test_chatglm3_seed_multi_turn() -> None:
    msgs = [
        {
            "role": "system",
            "content": "You are ChatGLM3, a large language model trained by Zhipu.AI. "
            "Follow the user's instructions carefully. Respond using markdown.",
        },
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hello, I'm ChatGLM3. What can I assist you today?"},
    ]
    out = chatfmt.render(msgs, "chatglm3", add_generation_prompt=False, prefix_space=False)
    assert out == "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_CHAT)
    # default: the official template's prefix space after each header line
    spaced = chatfmt.render(msgs, "chatglm3", add_generation_prompt=False)
    assert spaced == "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_CHAT).replace("|>\n", "|>\n ")


def test_chatglm3_seed_tool_calling() -> None:
    out = chatfmt.render(
        SEED_CHATGLM3_TOOLS_MESSAGES,
        "chatglm3",
        tools=[WEATHER_TOOL],
        add_generation_prompt=False,
        prefix_space=False,
    )
    assert out == "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_TOOLS)


def test_chatglm3_seed_code_execution() -> None:
    out = chatfmt.render(
        SEED_CHATGLM3_CODE_MESSAGES,
        "chatglm3",
        tools=[CODE_INTERPRETER],
        add_generation_prompt=False,
        prefix_space=False,
    )
    # the seed ends with the model's stop token: "<|user|> # End"
    assert SEED_CHATGLM3_CODE.endswith("\n<|user|> # End")
    assert out + "<|user|>" == "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_CODE.removesuffix(" # End"))


def test_chatglm3_seed_code_execution_with_explicit_system() -> None:
    system = SEED_CHATGLM3_CODE.split("\n")[1]
    msgs = [{"role": "system", "content": system}, *SEED_CHATGLM3_CODE_MESSAGES]
    out = chatfmt.render(msgs, "chatglm3", add_generation_prompt=False, prefix_space=False)
    assert out + "<|user|>" == "[gMASK]sop" + glm3_actual(SEED_CHATGLM3_CODE.removesuffix(" # End"))


# --------------------------------------------------------------------------- LMDeploy InternLM v1 (seed 002)
def test_lmdeploy_internlm_first_turn() -> None:
    out = chatfmt.render([{"role": "user", "content": "你叫什么名字？"}], "internlm-chat-7b")
    assert out == SEED_LMDEPLOY_INTERNLM_FIRST_TURN
    assert out.startswith("<|System|>:" + INTERNLM_META_INSTRUCTION + "\n")


def test_lmdeploy_internlm_follow_up_turn() -> None:
    prompt = "Can you write a poem?"
    for name in ("internlm-chat-7b", "internlm", "internlm-chat-7b-8k", "internlm-chat-20b"):
        out = chatfmt.render([{"role": "user", "content": prompt}], name, sequence_start=False)
        assert out == f"\n<|User|>:{prompt}\n<|Bot|>:"


def test_example_file_is_the_seed_function_call() -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "function_call_internlm2.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    out = chatfmt.render(
        data["messages"],
        "internlm2",
        tools=data["tools"],
        add_generation_prompt=False,
        bos_token="",
    )
    assert out == SEED_INTERNLM2_FUNCTION_CALL + "\n"
