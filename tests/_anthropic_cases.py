"""What the Anthropic Messages tests share: a tool in both API shapes, a question, a tokenizer."""

from __future__ import annotations

import chatfmt
from chatfmt.tokens import load_tokenizer

from _support import require_shared

QWEN3 = chatfmt.get_template("qwen3")
TOKENIZER = load_tokenizer(require_shared() / "tokenizers" / "qwen3")
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
#: The same tool in chat form (what the template renders).
WEATHER_FUNCTION = {
    "type": "function",
    "function": {
        "name": WEATHER["name"],
        "description": WEATHER["description"],
        "parameters": WEATHER["input_schema"],
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
