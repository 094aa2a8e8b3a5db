"""The conversation pieces the parse tests share: a weather tool, a question, and the
assistant turns rendered and parsed back (plain, reasoning, one call, text beside a call, two
calls)."""

from __future__ import annotations

import json
from typing import Any

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather of a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "days": {"type": "integer", "description": "How many days"},
            },
            "required": ["city"],
        },
    },
}
TOOLS = [WEATHER]
HISTORY = [{"role": "user", "content": "What is the weather in Paris?"}]


def weather_call(k: int, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"abcdefgh{k}",  # 9 alphanumerics: valid for Mistral too
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps(args)},
    }


TURNS: dict[str, dict[str, Any]] = {
    "plain": {"role": "assistant", "content": "It is sunny, 22 °C.\nEnjoy Paris!"},
    "reasoning": {
        "role": "assistant",
        "content": "It is sunny.",
        "reasoning_content": "The user asks about Paris.",
    },
    "call": {
        "role": "assistant",
        "content": None,
        "tool_calls": [weather_call(0, {"city": "Paris"})],
    },
    "text+call": {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [weather_call(0, {"city": "Paris", "days": 2})],
    },
    "two calls": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            weather_call(0, {"city": "Paris"}),
            weather_call(1, {"city": "Lyon", "days": 3}),
        ],
    },
}
