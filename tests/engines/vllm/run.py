"""vLLM's own parser tests, run twice: with vLLM's parsers and with chatfmt's adapters.

    bash tests/engines/vllm/setup.sh        # once: the venv and vLLM's tests
    python tests/engines/vllm/run.py        # both passes, the table, the gate
    python tests/engines/vllm/run.py -k hermes tests/tool_parsers/test_hermes_tool_parser.py

Prints one row per test file (passed / failed / skipped with each parser; cases only chatfmt
fails; cases only chatfmt passes) and exits 1 when a case vLLM's own parser passes fails with
chatfmt's (the gate), unless the case is listed in ``differences.txt`` with its reason. Then
runs chatfmt's own adapter tests (``test_adapter_*.py``) in the same environment.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ENV = ROOT / ".engines" / "vllm"
SRC = ROOT / ".engines" / "vllm-src"
PYTHON = ENV / "bin" / "python"
DEFAULT_PATHS = ["tests/tool_parsers", "tests/reasoning"]


def _pass(swap: bool, paths: list[str], extra: list[str], out: Path) -> dict[str, str]:
    """Run one pass; test id → outcome (passed, failed, skipped)."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        CHATFMT_VLLM_SWAP="1" if swap else "0",
        PYTHONPATH=os.pathsep.join([str(HERE), str(SRC), str(ROOT / "src")]),
    )
    env.setdefault("CHATFMT_SHARED", str(ROOT.parent.parent / "shared"))
    if not Path(env["CHATFMT_SHARED"]).exists():
        env["CHATFMT_SHARED"] = str(ROOT.parent / "shared")
    cmd = [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "vllm_swap"]
    cmd += ["-o", "asyncio_default_fixture_loop_scope=function", "--continue-on-collection-errors"]
    cmd += [f"--junitxml={out}", *extra]
    subprocess.run([*cmd, *paths], cwd=SRC, env=env, stdout=subprocess.DEVNULL, check=False)
    results: dict[str, str] = {}
    if not out.exists():
        return results
    for case in ET.parse(out).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        results[name] = outcome
    return results


def _file_of(test_id: str) -> str:
    """The test module of a junit ``classname::name`` id (a class inside it is dropped)."""
    parts = test_id.split("::", 1)[0].split(".")
    modules = [p for p in parts if p.startswith("test_")]
    return modules[-1] if modules else parts[-1]


def _allowed() -> dict[str, str]:
    path = HERE / "differences.txt"
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                case, _, reason = line.partition("  # ")
                out[case.strip()] = reason.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=DEFAULT_PATHS, help="test files/folders")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression")
    ap.add_argument("--no-adapter-tests", action="store_true")
    args = ap.parse_args(argv)
    if not PYTHON.exists() or not (SRC / "tests").exists():
        print("run tests/engines/vllm/setup.sh first", file=sys.stderr)
        return 2
    extra = ["-k", args.keyword] if args.keyword else []
    tmp = ENV / "results"
    tmp.mkdir(exist_ok=True)
    # the two passes are independent processes: run them side by side (one per core)
    with ThreadPoolExecutor(max_workers=2) as pool:
        own_run = pool.submit(_pass, False, args.paths, extra, tmp / "vllm.xml")
        ours_run = pool.submit(_pass, True, args.paths, extra, tmp / "chatfmt.xml")
        own, ours = own_run.result(), ours_run.result()
    allowed = _allowed()

    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    regressions: list[str] = []
    documented: list[str] = []
    improvements: list[str] = []
    for case in sorted(set(own) | set(ours)):
        a, b = own.get(case, "missing"), ours.get(case, "missing")
        row = rows[_file_of(case)]
        row[f"vllm_{a}"] += 1
        row[f"chatfmt_{b}"] += 1
        if a == "passed" and b != "passed":
            short = case.split("::", 1)[1]
            key = f"{_file_of(case)}::{short}"
            (documented if key in allowed else regressions).append(key)
            row["documented" if key in allowed else "regressions"] += 1
        elif b == "passed" and a != "passed":
            improvements.append(f"{_file_of(case)}::{case.split('::', 1)[1]}")
            row["improvements"] += 1

    head = f"{'file':48} {'vLLM p/f/s':>12} {'chatfmt p/f/s':>14} {'worse':>6} {'doc':>4} {'better':>7}"
    print(head)
    print("-" * len(head))
    for file in sorted(rows):
        r = rows[file]
        print(
            f"{file:48} {r['vllm_passed']:>4}/{r['vllm_failed']}/{r['vllm_skipped']:<5}"
            f" {r['chatfmt_passed']:>5}/{r['chatfmt_failed']}/{r['chatfmt_skipped']:<6}"
            f" {r['regressions']:>6} {r['documented']:>4} {r['improvements']:>7}"
        )
    total = {k: sum(r[k] for r in rows.values()) for k in ("vllm_passed", "chatfmt_passed")}
    print(f"\npassed: vLLM {total['vllm_passed']}, chatfmt {total['chatfmt_passed']}")
    for title, cases in (
        ("chatfmt passes, vLLM fails", improvements),
        ("documented differences (vLLM passes, chatfmt differs on purpose)", documented),
        ("GATE FAILURES (vLLM passes, chatfmt fails)", regressions),
    ):
        if cases:
            print(f"\n{title}:")
            for case in cases:
                reason = allowed.get(case)
                print(f"  {case}" + (f"  — {reason}" if reason else ""))
    status = 1 if regressions else 0
    if not total["vllm_passed"]:
        print("\nno case passed with vLLM's own parsers: the environment is broken")
        status = 2
    if not args.no_adapter_tests:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        env.setdefault("CHATFMT_SHARED", str(ROOT.parent.parent / "shared"))
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
        done = subprocess.run(
            [
                str(PYTHON),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--confcutdir={HERE}",
                str(HERE),
            ],
            cwd=ROOT,
            env=env,
            check=False,
        )
        status = status or done.returncode
    print("\ngate:", "FAILED" if status else "passed")
    return status


if __name__ == "__main__":
    sys.exit(main())
