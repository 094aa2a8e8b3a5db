"""Seed: the ChatML overview (OpenAI ChatML v0, StarChat/Zephyr style, Human/Assistant data)."""

from __future__ import annotations

import chatfmt

SAMPLE = [  # the seed's sample conversation (texts shortened as the seed's own example shows them)
    {"role": "user", "content": "Is it possible to imagine a society without law?"},
    {"role": "assistant", "content": "It is difficult to imagine ..."},
    {"role": "user", "content": "It seems like you ..."},
    {"role": "assistant", "content": "You are correct ..."},
    {"role": "user", "content": "Yeah, but laws are complicated .."},
]
STARCHAT_SYSTEM = "Below is a dialogue between a human and an AI assistant called StarChat."


def test_openai_chatml_v0_example() -> None:
    messages = [
        {
            "role": "system",
            "content": "You are ChatGPT, a large language model trained by OpenAI. Answer as concisely as possible.\nKnowledge cutoff: 2021-09-01\nCurrent date: 2023-03-01",
        },
        {"role": "user", "content": "How are you"},
        {"role": "assistant", "content": "I am doing well!"},
        {"role": "user", "content": "How are you now?"},
    ]
    # The seed's block; its last line ends the block, the turn's trailing newline is the separator.
    expected = (
        "<|im_start|>system\n"
        "You are ChatGPT, a large language model trained by OpenAI. Answer as concisely as possible.\n"
        "Knowledge cutoff: 2021-09-01\n"
        "Current date: 2023-03-01<|im_end|>\n"
        "<|im_start|>user\n"
        "How are you<|im_end|>\n"
        "<|im_start|>assistant\n"
        "I am doing well!<|im_end|>\n"
        "<|im_start|>user\n"
        "How are you now?<|im_end|>\n"
    )
    assert chatfmt.render(messages, "chatml", add_generation_prompt=False) == expected
    assert chatfmt.render(messages, "chatml").endswith(expected + "<|im_start|>assistant\n")


def test_starchat_chatml_prepare_dialogue() -> None:
    """The seed's `prepare_dialogue` with <|im_start|>/<|im_end|> is ChatML with a system turn."""
    expected = (
        "<|im_start|>system\n" + STARCHAT_SYSTEM + "<|im_end|>\n"
        "<|im_start|>user\nIs it possible to imagine a society without law?<|im_end|>\n"
        "<|im_start|>assistant\nIt is difficult to imagine ...<|im_end|>\n"
        "<|im_start|>user\nIt seems like you ...<|im_end|>\n"
        "<|im_start|>assistant\nYou are correct ...<|im_end|>\n"
        "<|im_start|>user\nYeah, but laws are complicated ..<|im_end|>\n"
    )
    messages = [{"role": "system", "content": STARCHAT_SYSTEM}, *SAMPLE]
    assert chatfmt.render(messages, "chatml", add_generation_prompt=False) == expected


def test_zephyr_style_end_marker() -> None:
    """The seed's second `prepare_dialogue` (<|user|>/<|assistant|>/<|end|>).

    The seed's code assigns ``system_token = "<|assistant|>"``, contradicting its own token list
    (``<|system|>`` marks system text); chatfmt follows the token list.
    """
    expected = (
        "<|system|>\n" + STARCHAT_SYSTEM + "<|end|>\n"
        "<|user|>\nIs it possible to imagine a society without law?<|end|>\n"
        "<|assistant|>\nIt is difficult to imagine ...<|end|>\n"
        "<|user|>\nIt seems like you ...<|end|>\n"
        "<|assistant|>\nYou are correct ...<|end|>\n"
        "<|user|>\nYeah, but laws are complicated ..<|end|>\n"
    )
    tpl = chatfmt.get_template("zephyr-style")
    messages = [{"role": "system", "content": STARCHAT_SYSTEM}, *SAMPLE]
    assert tpl.render(messages, add_generation_prompt=False) == expected
    assert tpl.render(messages).endswith("<|end|>\n<|assistant|>\n")
    assert "<|end|>" in tpl.generation_config.stop_words


def test_human_assistant_dialogue_data() -> None:
    """The seed's plain format; its closing ``<EOS>`` is the tokenizer's EOS token, added at tokenization."""
    messages = [
        {"role": "system", "content": "Below is a dialogue between a human and AI assistant ..."},
        *SAMPLE,
    ]
    expected = (
        "Below is a dialogue between a human and AI assistant ...\n"
        "\n"
        "Human: Is it possible to imagine a society without law?\n"
        "Assistant: It is difficult to imagine ...\n"
        "Human: It seems like you ...\n"
        "Assistant: You are correct ...\n"
        "Human: Yeah, but laws are complicated ..\n"
    )
    assert chatfmt.render(messages, "human-assistant", add_generation_prompt=False) == expected
    assert chatfmt.render(messages, "human-assistant").endswith("..\nAssistant: ")
