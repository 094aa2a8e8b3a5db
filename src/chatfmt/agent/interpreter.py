"""A code interpreter on a real Jupyter kernel (``jupyter_client`` + ``ipykernel``).

The kernel is stateful within a session and runs in its own working directory.
Each execution has a timeout: the kernel is interrupted, and restarted if the
interrupt does not take. A kernel that dies is restarted and the next result says
so. Output (stdout, stderr, results, tracebacks) is collected and cut at
``max_output`` characters with a marker; ``image/png`` output is saved into the
working directory and referenced as ``![image](path.png)``.

A kernel is **not a sandbox**: the code runs as your user, with your files and
network. ``memory_limit_mb`` and ``cpu_time_limit`` bound the kernel process
(``setrlimit``), nothing more.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import queue
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InterpreterError

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class ExecutionResult:
    """What one execution produced. ``text`` is the observation for the model."""

    text: str
    stdout: str = ""
    stderr: str = ""
    results: list[str] = field(default_factory=list)
    error: str | None = None
    images: list[Path] = field(default_factory=list)
    timed_out: bool = False
    restarted: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


class CodeInterpreter:
    """A stateful Python kernel for the model's code.

    ``workdir`` (default: a new temporary folder) is the kernel's working directory;
    images are saved there. ``timeout`` bounds each execution (seconds);
    ``max_output`` bounds the text returned. ``memory_limit_mb`` and
    ``cpu_time_limit`` (CPU seconds per execution) limit the kernel process. The
    kernel starts on first use; call :meth:`close` (or use ``with``) to stop it.
    Thread-safe: executions are serialized.
    """

    def __init__(
        self,
        workdir: str | Path | None = None,
        *,
        timeout: float = 60.0,
        max_output: int = 4000,
        memory_limit_mb: int | None = None,
        cpu_time_limit: int | None = None,
        kernel_name: str = "python3",
        startup_timeout: float = 60.0,
    ) -> None:
        self._tmp = None if workdir is not None else tempfile.TemporaryDirectory(prefix="chatfmt-")
        self.workdir = Path(workdir if workdir is not None else self._tmp.name).resolve()  # type: ignore[union-attr]
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.timeout = timeout
        self.max_output = max_output
        self.memory_limit_mb = memory_limit_mb
        self.cpu_time_limit = cpu_time_limit
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self._km: Any = None
        self._kc: Any = None
        self._lock = threading.Lock()
        self._images = 0
        self._note = ""  # said once in the next result (e.g. "the kernel was restarted")

    # ------------------------------------------------------------------ lifecycle
    def _start(self) -> None:
        from jupyter_client.manager import KernelManager

        try:
            km = KernelManager(kernel_name=self.kernel_name)
            # errors only: the kernel's startup warnings (e.g. ipykernel's notice that its local
            # TCP ports are unencrypted) would print into the chat the kernel serves
            km.start_kernel(cwd=str(self.workdir), extra_arguments=["--log-level=ERROR"])
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=self.startup_timeout)
        except Exception as exc:
            raise InterpreterError(f"cannot start the {self.kernel_name!r} kernel: {exc}") from exc
        self._km, self._kc = km, kc
        self._setup()

    def _setup(self) -> None:
        """Per-kernel settings: inline plots as PNG, and the resource limits."""
        lines = ["%matplotlib inline"] if _has_matplotlib() else []
        if self.memory_limit_mb is not None:
            size = self.memory_limit_mb * 1024 * 1024
            lines += [
                "import resource as _r",
                f"_r.setrlimit(_r.RLIMIT_DATA, ({size}, {size}))",
                "del _r",
            ]
        if lines:
            self._execute("\n".join(lines), self.startup_timeout, silent=True)

    def _restart(self, why: str) -> None:
        """Restart the kernel (its state is lost) and say so in the next result."""
        try:
            self._km.restart_kernel(now=True)
            self._kc.wait_for_ready(timeout=self.startup_timeout)
        except Exception:  # a broken manager: start from scratch
            self._shutdown()
            self._start()
        else:
            self._setup()
        self._note = f"[{why}; the kernel was restarted and its state (variables, imports) is lost]"

    def _shutdown(self) -> None:
        if self._kc is not None:
            self._kc.stop_channels()
        if self._km is not None:
            with contextlib.suppress(Exception):  # already dead: nothing left to stop
                self._km.shutdown_kernel(now=True)
        self._km = self._kc = None

    def close(self) -> None:
        """Stop the kernel and remove the temporary working directory (if one was made)."""
        with self._lock:
            self._shutdown()
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None

    def __enter__(self) -> CodeInterpreter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ execution
    def run(self, code: str) -> ExecutionResult:
        """Execute ``code`` and return what it printed, returned, raised and drew."""
        with self._lock:
            if self._km is None:
                self._start()
            elif not self._km.is_alive():
                self._restart("the kernel had died")
            if self.cpu_time_limit is not None:
                self._execute(
                    # whole seconds, rounded up: at least the full budget is left for the code
                    "import math as _m, resource as _r, time as _t\n"
                    "_r.setrlimit(_r.RLIMIT_CPU, "
                    f"(_m.ceil(_t.process_time()) + {self.cpu_time_limit}, "
                    "_r.getrlimit(_r.RLIMIT_CPU)[1]))\ndel _m, _r, _t",
                    self.timeout,
                    silent=True,
                )
            result = self._execute(code, self.timeout)
            if not self._km.is_alive():
                self._restart("the kernel died while running this code")
                result.restarted = True
                result.error = result.error or "the kernel died"
            elif result.timed_out:
                self._recover_from_timeout()
                result.restarted = bool(self._note)
            note, self._note = self._note, ""
            result.text = self._observation(result, note)
            return result

    async def arun(self, code: str) -> ExecutionResult:
        """:meth:`run` without blocking the event loop."""
        return await asyncio.to_thread(self.run, code)

    def _recover_from_timeout(self) -> None:
        """Interrupt the running code; restart the kernel if the interrupt does not take."""
        self._km.interrupt_kernel()
        if self._drain_until_idle(5.0):
            return
        self._restart(f"the code did not stop when interrupted after {self.timeout} s")

    def _drain_until_idle(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                msg = self._kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return True
        return False

    def _execute(self, code: str, timeout: float, *, silent: bool = False) -> ExecutionResult:
        kc = self._kc
        msg_id = kc.execute(code, silent=silent, store_history=not silent, allow_stdin=False)
        out = ExecutionResult("")
        stdout: list[str] = []
        stderr: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                out.timed_out = True
                break
            try:
                msg = kc.get_iopub_msg(timeout=min(left, 0.5))
            except queue.Empty:
                if not self._km.is_alive():
                    break
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind == "stream":
                (stdout if content["name"] == "stdout" else stderr).append(content["text"])
            elif kind in ("execute_result", "display_data"):
                self._collect(content.get("data", {}), out)
            elif kind == "error":
                out.error = _ANSI.sub("", "\n".join(content.get("traceback", [])))
                out.error = out.error or f"{content.get('ename')}: {content.get('evalue')}"
        out.stdout, out.stderr = "".join(stdout), "".join(stderr)
        return out

    def _collect(self, data: dict[str, Any], out: ExecutionResult) -> None:
        png = data.get("image/png")
        if isinstance(png, str):
            self._images += 1
            path = self.workdir / f"image_{self._images}.png"
            path.write_bytes(base64.b64decode(png))
            out.images.append(path)
        elif "text/plain" in data:
            out.results.append(str(data["text/plain"]))

    def _observation(self, result: ExecutionResult, note: str) -> str:
        parts = [note] if note else []
        parts += [p for p in (result.stdout, result.stderr) if p]
        parts += result.results
        if result.error:
            parts.append(result.error)
        if result.timed_out:
            parts.append(f"[execution timed out after {self.timeout} s and was interrupted]")
        parts += [f"![image]({p.name})" for p in result.images]
        text = "\n".join(p.rstrip("\n") for p in parts) or "[the code ran and printed nothing]"
        if len(text) > self.max_output:
            cut = len(text) - self.max_output
            text = text[: self.max_output] + f"\n... [output truncated: {cut} more characters]"
        return text


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None
