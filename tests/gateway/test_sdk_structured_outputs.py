"""The official SDKs' structured-output helpers, unchanged, against the gateway over the
embedded SmolLM2-135M: openai's ``chat.completions.parse``, openai-agents' ``output_type``
(through ``OpenAIChatCompletionsModel``) and langchain-openai's ``with_structured_output``.
Each sends a strict ``json_schema`` response_format; the gateway constrains the model to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("llama_cpp")
openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")

import chatfmt  # noqa: E402
from _fake_server import gateway  # noqa: E402
from chatfmt.gateway import ModelEntry, create_app  # noqa: E402

pytestmark = pytest.mark.slow

QUESTION = "What is the weather in Paris? Answer in JSON."


class CityWeather(pydantic.BaseModel):
    city: str = pydantic.Field(max_length=16)
    sunny: bool


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    from chatfmt.backends.llamacpp import LlamaCppBackend

    try:
        backend = LlamaCppBackend()
    except chatfmt.ChatFmtError as exc:
        pytest.skip(str(exc))
    entry = ModelEntry("smol", backend, chatfmt.get_template(backend.model_path))
    with gateway(create_app({"smol": entry})) as base:
        yield base + "/v1"


def test_openai_parse_returns_the_pydantic_model(base_url: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=120) as client:
        for seed in (1, 2):
            completion = client.chat.completions.parse(
                model="smol",
                messages=[{"role": "user", "content": QUESTION}],
                response_format=CityWeather,
                max_tokens=60,
                seed=seed,
            )
            parsed = completion.choices[0].message.parsed
            assert isinstance(parsed, CityWeather) and len(parsed.city) <= 16


def test_openai_agents_output_type(base_url: str) -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=120)
    model = agents.OpenAIChatCompletionsModel(model="smol", openai_client=client)
    agent = agents.Agent(
        name="weather",
        instructions="You report the weather.",
        model=model,
        output_type=CityWeather,
        model_settings=agents.ModelSettings(max_tokens=60, extra_args={"seed": 1}),
    )

    async def run() -> Any:
        try:
            return await agents.Runner.run(agent, QUESTION)
        finally:
            await client.close()

    result = asyncio.run(run())
    assert isinstance(result.final_output, CityWeather)


def test_langchain_with_structured_output(base_url: str) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    llm = langchain_openai.ChatOpenAI(
        model="smol", base_url=base_url, api_key="x", max_tokens=60, seed=1, max_retries=0
    )
    answer = llm.with_structured_output(CityWeather).invoke(QUESTION)
    assert isinstance(answer, CityWeather)
