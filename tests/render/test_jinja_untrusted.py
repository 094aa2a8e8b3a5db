"""Templates from strangers: time, memory and output limits, and the caller keeps serving."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Iterator

import pytest

import chatfmt
from chatfmt.errors import TemplateRenderError, ValidationError
from chatfmt.jinja.untrusted import SandboxLimits, TemplateSandbox

MESSAGES = [{"role": "user", "content": "Hello"}]
NORMAL = "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
ENDLESS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
HUGE = "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}"
LIMITS = SandboxLimits(seconds=1.0, max_output=100_000, memory_mb=1024)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[TemplateSandbox]:
    with TemplateSandbox(LIMITS, workers=2) as box:
        box.start()
        yield box


def test_a_normal_template_renders_as_in_process(sandbox: TemplateSandbox) -> None:
    assert sandbox.render(NORMAL, MESSAGES) == "<user>Hello</user>"
    segments = sandbox.segments(NORMAL, MESSAGES)
    assert segments == chatfmt.get_template(NORMAL).segments(MESSAGES)


def test_an_endless_loop_is_stopped_at_the_time_limit(sandbox: TemplateSandbox) -> None:
    start = time.monotonic()
    with pytest.raises(TemplateRenderError, match="did not finish within 1 s"):
        sandbox.render(ENDLESS, MESSAGES)
    assert time.monotonic() - start < LIMITS.seconds + 3  # the limit, not the loop, ended it
    assert sandbox.render(NORMAL, MESSAGES) == "<user>Hello</user>"  # the worker was restored


def test_huge_output_is_refused(sandbox: TemplateSandbox) -> None:
    with pytest.raises(TemplateRenderError, match="over the limit of 100,000 characters"):
        sandbox.render(HUGE, MESSAGES)


def test_a_huge_range_is_a_clear_error(sandbox: TemplateSandbox) -> None:
    with pytest.raises(TemplateRenderError, match="range"):
        sandbox.render("{% for i in range(10**9) %}x{% endfor %}", MESSAGES)


def test_the_templates_own_errors_come_back_with_the_message_index(
    sandbox: TemplateSandbox,
) -> None:
    source = "{% for m in messages %}{% if m.role == 'user' %}{{ raise_exception('no users') }}{% endif %}{% endfor %}"
    with pytest.raises(TemplateRenderError, match="no users") as info:
        sandbox.render(source, MESSAGES)
    assert info.value.index == 0
    with pytest.raises(ValidationError) as bad:
        sandbox.render(NORMAL, [{"role": "user", "content": 3}])
    assert bad.value.index == 0 and bad.value.field == "content"


def test_a_normal_request_succeeds_while_an_endless_one_runs(sandbox: TemplateSandbox) -> None:
    failures: list[BaseException] = []
    started, ended = threading.Event(), threading.Event()

    def endless() -> None:
        started.set()
        try:
            sandbox.render(ENDLESS, MESSAGES)
        except TemplateRenderError as exc:
            failures.append(exc)
        ended.set()

    thread = threading.Thread(target=endless)
    thread.start()
    started.wait()
    time.sleep(0.2)  # the endless render now holds one worker
    assert sandbox.render(NORMAL, MESSAGES) == "<user>Hello</user>"
    assert chatfmt.render(MESSAGES, "chatml")  # and the calling process itself is free
    assert not ended.is_set()  # both finished while the endless render was still running
    thread.join()
    assert len(failures) == 1 and "did not finish" in str(failures[0])


def test_errors_pickle_with_their_location() -> None:
    err = pickle.loads(pickle.dumps(ValidationError("bad", index=2, field="content")))
    assert (err.index, err.field, str(err)) == (2, "content", "messages[2].content: bad")
    render_err = pickle.loads(pickle.dumps(TemplateRenderError("boom", index=1)))
    assert (render_err.index, str(render_err)) == (1, "messages[1]: boom")
