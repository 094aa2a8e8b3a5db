"""The playground in a real browser: headless Chromium (Debian's chromium + chromium-driver).

Load the page, pick InternLM2, load the seed's function-call conversation, check the
coloured segments and the mask against ``chatfmt.render_segments``, switch to a Jinja
file, parse model output. Skipped, with the reason, where no Chromium is installed;
``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

import chatfmt  # noqa: E402
from _datasets import QWEN, write_dataset  # noqa: E402
from _fake_server import gateway  # noqa: E402
from chatfmt.gateway import create_app  # noqa: E402
from chatfmt.gateway.playground import Playground  # noqa: E402

from _support import ROOT, SHARED  # noqa: E402

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    if os.environ.get("CI"):
        raise RuntimeError("CI needs chromium and chromium-driver (apt-get install; see .ci/run)")
    pytest.skip(
        "no Chromium: apt-get install chromium chromium-driver to run the browser test",
        allow_module_level=True,
    )
#: Where screenshots go when CHATFMT_SCREENSHOTS=1 (docs/images, shown in the README).
SHOTS = ROOT / "docs" / "images"


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    playground = Playground(trust_request_templates=True)
    with gateway(create_app({}, playground=playground)) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, script: str, timeout: float = 20) -> Any:
    """Wait until ``script`` (a JS expression) is truthy; return its value."""
    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(f"return {script}"))


def spans(driver: Any) -> list[tuple[str, str, bool, int | None]]:
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#prompt span')].map(s => "
        "[s.textContent, s.dataset.kind, s.dataset.trained === 'true', "
        "s.dataset.message === undefined ? null : Number(s.dataset.message)])"
    )
    return [tuple(r) for r in rows]


def shot(driver: Any, name: str) -> None:
    if os.environ.get("CHATFMT_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / name))


def test_internlm2_seed_segments_and_mask_match_render_segments(site: str, browser: Any) -> None:
    browser.get(site + "/")
    wait(browser, "document.querySelectorAll('#template-list option').length > 0")
    examples = json.loads((ROOT / "src/chatfmt/data/playground/examples.json").read_text())
    seed = examples["internlm2-function-call"]
    browser.execute_script(
        "const s = document.getElementById('examples'); s.value = arguments[0];",
        "internlm2-function-call",
    )
    browser.find_element(By.ID, "load-example").click()
    assert browser.find_element(By.ID, "template-search").get_attribute("value") == "internlm2"
    expected = chatfmt.render_segments(
        seed["messages"], "internlm2", tools=seed["tools"], add_generation_prompt=True
    )
    want = [(s.text, s.kind.value, s.trained, s.message) for s in expected]
    wait(browser, f"document.querySelectorAll('#prompt span').length === {len(want)}")
    assert spans(browser) == want
    # The colours are the segment kinds and the mask.
    colours = browser.execute_script(
        "return [...document.querySelectorAll('#prompt span')].map(s => getComputedStyle(s).backgroundColor)"
    )
    by_kind = {(k, t): c for (_, k, t, _), c in zip(want, colours)}
    assert by_kind[("control", False)] != by_kind[("content", False)]
    assert by_kind[("content", True)] not in (
        by_kind[("content", False)],
        by_kind[("control", False)],
    )
    shot(browser, "playground.png")

    # A field error is shown at the field.
    browser.execute_script(
        "const m = document.getElementById('messages');"
        "const v = JSON.parse(m.value); v[1].content = 5; m.value = JSON.stringify(v);"
        "m.dispatchEvent(new Event('input'));"
    )
    error = wait(browser, "document.getElementById('messages-error').textContent")
    assert error.startswith("messages[1].content")

    # The shareable URL restores the state.
    browser.get(browser.current_url)
    wait(
        browser,
        "document.querySelectorAll('#prompt span').length > 0 || document.getElementById('messages-error').textContent",
    )
    assert "messages[1].content" in browser.find_element(By.ID, "messages-error").text


def test_jinja_file_and_parse(site: str, browser: Any) -> None:
    browser.get(site + "/")
    wait(browser, "document.querySelectorAll('#template-list option').length > 0")
    browser.execute_script("document.getElementById('examples').value = 'chat';")
    browser.find_element(By.ID, "load-example").click()
    source_file = SHARED / "reference" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"
    browser.find_element(By.ID, "mode-jinja").click()
    browser.find_element(By.ID, "jinja-file").send_keys(str(source_file))
    examples = json.loads((ROOT / "src/chatfmt/data/playground/examples.json").read_text())
    expected = chatfmt.render(examples["chat"]["messages"], source_file.read_text())
    wait(
        browser,
        "document.getElementById('prompt').textContent === arguments[0]".replace(
            "arguments[0]", json.dumps(expected)
        ),
    )
    output = browser.find_element(By.ID, "output")
    output.send_keys(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>'
    )
    browser.find_element(By.ID, "parse-btn").click()
    parsed = wait(browser, "document.getElementById('parsed').textContent")
    assert '"name": "get_weather"' in parsed and "finish_reason: tool_calls" in parsed
    shot(browser, "playground-parse.png")


def test_tokenize_report_opens_with_histogram_and_coloured_samples(
    browser: Any, tmp_path: Path
) -> None:

    from chatfmt.data_pipeline import tokenize_dataset
    from chatfmt.data_pipeline.report import write_report

    data = write_dataset(tmp_path / "in.jsonl")
    summary = tokenize_dataset(
        data, tmp_path / "out", template="chatml", tokenizer=QWEN, progress=False
    )
    page = write_report(summary, tmp_path / "out", QWEN, tmp_path / "report.html")
    browser.get(page.as_uri())
    bars = browser.execute_script(
        "return [...document.querySelectorAll('rect.bar')].map(r => r.getBBox().height)"
    )
    assert len(bars) > 0 and max(bars) > 0  # drawn, not just present
    colours = browser.execute_script(
        "const bg = s => getComputedStyle(s).backgroundColor;"
        "const first = document.querySelector('.sample');"
        "return [bg(first.querySelector('.tok.control')), bg(first.querySelector('.tok.trained')),"
        " bg(first.querySelector('.tok:not(.control):not(.trained)'))]"
    )
    assert len(set(colours)) == 3  # control, trained and other tokens look different
    shot(browser, "tokenize-report.png")


def test_generate_sends_the_prompt_shown_and_parses_the_answer(browser: Any) -> None:
    """Generate completes the prompt the page shows (chosen template and options) up to the
    visible token cap, and reads the output with the chosen template's parser."""
    from _fake_server import FakeCompletionsServer, serve
    from chatfmt.backends.openai import OpenAICompletionsBackend
    from chatfmt.gateway import ModelEntry

    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
    engine = FakeCompletionsServer(["<think>Rome is in Italy.</think>Checking." + call] * 2)
    with serve(engine) as running:
        qwen3 = chatfmt.get_template("qwen3")
        # the prompt comes from the page (its template and options), not from the model entry
        models = {"qwen3": ModelEntry("qwen3", OpenAICompletionsBackend(running.base_url), qwen3)}
        with gateway(create_app(models, playground=Playground())) as url:
            browser.get(url + "/")
            wait(browser, "document.querySelectorAll('#model-select option').length === 1")
            browser.execute_script("document.getElementById('examples').value = 'chat';")
            browser.find_element(By.ID, "load-example").click()
            shown = wait(browser, "document.getElementById('prompt').textContent")
            cap = browser.find_element(By.ID, "max-tokens")
            cap.clear()
            cap.send_keys("400")
            browser.find_element(By.ID, "generate-btn").click()
            answer = wait(
                browser,
                "document.getElementById('answer').textContent.includes('[tool call]') && "
                "document.getElementById('answer').textContent",
            )
            cap.clear()
            cap.send_keys("10")  # the engine stops at the cap: the page says so
            browser.find_element(By.ID, "generate-btn").click()
            wait(browser, "document.getElementById('answer').textContent.includes('token cap: 10')")
            template = browser.execute_script(
                "return document.getElementById('template-search').value"
            )
    assert answer.startswith("[reasoning] Rome is in Italy.")
    assert "Checking." in answer and '[tool call] get_weather({"city": "Rome"})' in answer
    sent = engine.requests[0]
    assert sent["prompt"] == shown  # exactly what the page shows
    assert sent["max_tokens"] == 400 and engine.requests[1]["max_tokens"] == 10
    assert sent["stop"] == list(chatfmt.get_template(template).generation_config.all_stop_words)
