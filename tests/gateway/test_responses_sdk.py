"""The official clients of the Responses API, unchanged, against the gateway: the ``openai``
SDK's ``client.responses.create`` / ``.stream`` / ``.parse`` (function tools, ``text.format``)
and openai-agents with its default model class (``OpenAIResponsesModel``): a function tool
round trip, plain and streamed. (The embedded SmolLM2-135M answers through the Responses
API in ``test_openai_gateway.py``'s embedded-model test.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")

import chatfmt  # noqa: E402
from _fake_server import gateway  # noqa: E402
from chatfmt.backends.scripted import ScriptedBackend  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

# The SDKs' first call (loading their response types) and openai-agents' import take seconds.
pytestmark = pytest.mark.slow

QWEN = chatfmt.get_template("qwen2.5")
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


class CityWeather(pydantic.BaseModel):
    city: str
    sunny: bool


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, ScriptedBackend]]:
    scripted = ScriptedBackend([])
    with gateway(create_app({"qwen": ModelEntry("qwen", scripted, QWEN)})) as base:
        yield base + "/v1", scripted


@pytest.fixture
def backend(served: tuple[str, ScriptedBackend]) -> ScriptedBackend:
    scripted = served[1]
    scripted._replies.clear()
    scripted._next = 0
    scripted.requests.clear()
    return scripted


@pytest.fixture
def base_url(served: tuple[str, ScriptedBackend]) -> str:
    return served[0]


@pytest.fixture
def client(base_url: str) -> Iterator[Any]:
    with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=30) as c:
        yield c


def script(backend: ScriptedBackend, *replies: str) -> None:
    backend._replies.extend(
        chatfmt.backends.scripted.ScriptedReply(r, chunk_size=3) for r in replies
    )


def test_create_with_a_function_tool_round_trip(client: Any, backend: ScriptedBackend) -> None:
    script(backend, CALL, "It is sunny in Paris.")
    first = client.responses.create(model="qwen", input="Weather in Paris?", tools=[TOOL])
    (call,) = first.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris"}
    second = client.responses.create(
        model="qwen",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[TOOL],
    )
    assert second.output_text == "It is sunny in Paris."
    assert second.usage is not None and second.usage.output_tokens > 0


def test_stream_gives_typed_events_and_the_final_response(
    client: Any, backend: ScriptedBackend
) -> None:
    script(backend, CALL)
    with client.responses.stream(model="qwen", input="Weather in Paris?", tools=[TOOL]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert json.loads("".join(deltas)) == {"city": "Paris"}
    assert final.output[0].type == "function_call"
    assert final.output[0].arguments == "".join(deltas)


def test_text_format_parses_into_the_pydantic_model(client: Any, backend: ScriptedBackend) -> None:
    script(backend, '{"city": "Paris", "sunny": true}', '{"city": "Oslo", "sunny": false}')
    parsed = client.responses.parse(model="qwen", input="Paris?", text_format=CityWeather)
    assert parsed.output_parsed == CityWeather(city="Paris", sunny=True)
    assert backend.requests[-1].constraint is not None  # the schema reached the constraint
    with client.responses.stream(model="qwen", input="Oslo?", text_format=CityWeather) as stream:
        final = stream.get_final_response()
    assert final.output_parsed == CityWeather(city="Oslo", sunny=False)


def test_an_invalid_reply_raises_in_the_sdk(client: Any, backend: ScriptedBackend) -> None:
    script(backend, "not json", "not json")
    with pytest.raises(openai.InternalServerError, match="not valid"):
        client.responses.parse(model="qwen", input="Paris?", text_format=CityWeather)
    stream = client.responses.stream(model="qwen", input="?", text_format=CityWeather)
    with pytest.raises(openai.APIError, match="not valid"), stream as events:
        list(events)


@pytest.mark.parametrize("streamed", [False, True])
def test_openai_agents_default_model_runs_a_function_tool(
    base_url: str, backend: ScriptedBackend, streamed: bool
) -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    script(backend, CALL, "It is sunny in Paris.")
    asked: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        asked.append(city)
        return f"sunny in {city}"

    async def run() -> Any:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=30)
        # The default provider: its models are OpenAIResponsesModel (POST /v1/responses).
        config = agents.RunConfig(model_provider=agents.OpenAIProvider(openai_client=client))
        agent = agents.Agent(
            name="weather", instructions="Use tools.", model="qwen", tools=[get_weather]
        )
        try:
            if not streamed:
                return await agents.Runner.run(agent, "Weather in Paris?", run_config=config)
            result = agents.Runner.run_streamed(agent, "Weather in Paris?", run_config=config)
            async for _event in result.stream_events():
                pass
            return result
        finally:
            await client.close()

    result = asyncio.run(run())
    assert result.final_output == "It is sunny in Paris."
    assert asked == ["Paris"]
    # the second turn sent the call and its output back: rendered as the model wrote it
    assert backend.prompts[1].startswith(backend.prompts[0] + CALL + "<|im_end|>")
    assert "sunny in Paris" in backend.prompts[1]
