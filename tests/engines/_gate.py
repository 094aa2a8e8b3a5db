"""Run an engine's own test files twice — its parsers, then chatfmt's — and compare.

Used by ``tests/engines/<engine>/run.py`` (a plain script run with the main Python; the
passes run in the engine's venv). One pass is a pytest run in the engine's source folder
with a pytest plugin module from ``tests/engines/<engine>/`` that, when ``CHATFMT_SWAP=1``,
points the engine's built-in parser names at chatfmt's adapters. The gate: no case the
engine's own parser passes fails with chatfmt's, except those listed with a reason in
``differences.txt`` (``file::case  # reason`` lines).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Engine:
    """Where an engine's venv, sources and swap plugin are, and its default test folders."""

    label: str
    env: Path
    src: Path
    plugin: str
    here: Path
    #: The engine's own test folders/files (relative to ``src``) the gate runs by default.
    tests: Sequence[str] = ()
    #: Extra ``[pytest]`` settings for the engine's own tests (``key = value`` lines).
    ini: str = ""
    #: Whether the engine's tests must be there (``setup.sh`` always gets them): missing
    #: tests are then a broken set-up (exit 2), not "gate not run".
    tests_required: bool = False

    @property
    def python(self) -> Path:
        return self.env / "bin" / "python"


def engine(name: str, label: str, *tests: str, ini: str = "", required: bool = False) -> Engine:
    """The :class:`Engine` of ``tests/engines/<name>/`` with its venv and sources in ``.engines``."""
    return Engine(
        label=label,
        env=ROOT / ".engines" / name,
        src=ROOT / ".engines" / f"{name}-src",
        plugin=f"{name}_swap",
        here=ROOT / "tests" / "engines" / name,
        tests=tests,
        ini=ini,
        tests_required=required,
    )


def shared_dir() -> str:
    """The shared reference folder (``CHATFMT_SHARED`` or ``../shared`` of the checkout)."""
    given = os.environ.get("CHATFMT_SHARED")
    if given:
        return given
    for candidate in (ROOT.parent / "shared", ROOT.parent.parent / "shared"):
        if candidate.exists():
            return str(candidate)
    return str(ROOT.parent / "shared")


def run_pass(
    engine: Engine, swap: bool, paths: Sequence[str], extra: Sequence[str], work: Path
) -> dict[str, str]:
    """One pytest pass: test id → ``passed``/``failed``/``skipped`` (files kept in ``work``)."""
    out = work / ("chatfmt.xml" if swap else "engine.xml")
    ini = work / ("chatfmt.ini" if swap else "engine.ini")
    # none of chatfmt's settings, none of a parent folder's
    ini.write_text(f"[pytest]\n{engine.ini}\n")
    src = engine.src.resolve()  # test ids are paths below the rootdir: no symlink in between
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        CHATFMT_SWAP="1" if swap else "0",
        CHATFMT_SHARED=shared_dir(),
        PYTHONPATH=os.pathsep.join([str(engine.here), str(src), str(ROOT / "src")]),
    )
    cmd = [str(engine.python), "-m", "pytest", "-q", "-c", str(ini), f"--rootdir={src}"]
    cmd += ["-p", "no:cacheprovider", "-p", engine.plugin, "--continue-on-collection-errors"]
    cmd += [f"--junitxml={out}", *extra, *paths]
    subprocess.run(cmd, cwd=src, env=env, stdout=subprocess.DEVNULL, check=False)
    results: dict[str, str] = {}
    if not out.exists():
        return results
    for case in ET.parse(out).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        results[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return results


def file_of(test_id: str) -> str:
    """The test module of a junit ``classname::name`` id."""
    parts = test_id.split("::", 1)[0].split(".")
    modules = [p for p in parts if p.startswith("test_")]
    return modules[-1] if modules else parts[-1]


def short_id(test_id: str) -> str:
    """``module::case`` (a class inside the module dropped from the classname)."""
    return f"{file_of(test_id)}::{test_id.split('::', 1)[1]}"


def case_keys(test_ids: set[str]) -> dict[str, str]:
    """Each test id's key in the report and in ``differences.txt``: :func:`short_id`, or
    ``module::Class::case`` where test classes of one module share a case name."""
    from collections import Counter

    shorts = Counter(short_id(t) for t in test_ids)
    keys = {}
    for test_id in test_ids:
        key = short_id(test_id)
        if shorts[key] > 1:
            owner = test_id.split("::", 1)[0].rsplit(".", 1)[-1]
            module, _, case = key.partition("::")
            key = f"{module}::{owner}::{case}"
        keys[test_id] = key
    return keys


def allowed_differences(here: Path) -> dict[str, str]:
    """The documented differences: case → reason."""
    path = here / "differences.txt"
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                case, _, reason = line.partition("  # ")
                out[case.strip()] = reason.strip()
    return out


@dataclass
class Comparison:
    """Per-file counts and the cases that differ."""

    rows: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    regressions: list[str] = field(default_factory=list)
    documented: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)


def compare(own: dict[str, str], ours: dict[str, str], allowed: dict[str, str]) -> Comparison:
    """Count outcomes per file; list regressions, documented differences, improvements."""
    result = Comparison()
    keys = case_keys(set(own) | set(ours))
    for case in sorted(keys):
        a, b = own.get(case, "missing"), ours.get(case, "missing")
        row = result.rows[file_of(case)]
        row[f"engine_{a}"] += 1
        row[f"chatfmt_{b}"] += 1
        key = keys[case]
        if a == "passed" and b != "passed":
            if key not in allowed and short_id(case) in allowed:
                key = short_id(case)  # listed without its class: it covers the case too
            kind = "documented" if key in allowed else "regressions"
            getattr(result, kind).append(key)
            row[kind] += 1
        elif b == "passed" and a != "passed":
            result.improvements.append(key)
            row["improvements"] += 1
    return result


def report(engine: Engine, result: Comparison, allowed: dict[str, str]) -> int:
    """Print the table and the differing cases; 1 when the gate fails, 2 when nothing ran."""
    label = engine.label
    head = f"{'file':44} {label + ' p/f/s':>16} {'chatfmt p/f/s':>14} {'worse':>6} {'doc':>4} {'better':>7}"
    print(head)
    print("-" * len(head))
    for name in sorted(result.rows):
        r = result.rows[name]
        print(
            f"{name:44} {r['engine_passed']:>8}/{r['engine_failed']}/{r['engine_skipped']:<5}"
            f" {r['chatfmt_passed']:>6}/{r['chatfmt_failed']}/{r['chatfmt_skipped']:<5}"
            f" {r['regressions']:>6} {r['documented']:>4} {r['improvements']:>7}"
        )
    engine_passed = sum(r["engine_passed"] for r in result.rows.values())
    chatfmt_passed = sum(r["chatfmt_passed"] for r in result.rows.values())
    print(f"\npassed: {label} {engine_passed}, chatfmt {chatfmt_passed}")
    for title, cases in (
        (f"chatfmt passes, {label} fails", result.improvements),
        (f"documented differences ({label} passes, chatfmt differs)", result.documented),
        (f"GATE FAILURES ({label} passes, chatfmt fails)", result.regressions),
    ):
        if cases:
            print(f"\n{title}:")
            for case in cases:
                reason = allowed.get(case)
                print(f"  {case}" + (f"  — {reason}" if reason else ""))
    if not engine_passed:
        print(f"\nno case passed with {label}'s own parsers: the environment is broken")
        return 2
    return 1 if result.regressions else 0


def adapter_tests(engine: Engine) -> int:
    """chatfmt's own adapter tests (``test_*.py`` beside run.py), in the engine's venv."""
    env = dict(
        os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", CHATFMT_SHARED=shared_dir()
    )
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), str(ROOT / "tests" / "engines"), str(engine.here)]
    )
    with tempfile.TemporaryDirectory(prefix="chatfmt-adapter-") as work:
        ini = Path(work) / "adapter.ini"
        ini.write_text(f"[pytest]\nmarkers =\n    slow: slower than ~2 s\n{engine.ini}\n")
        cmd = [str(engine.python), "-m", "pytest", "-q", "-c", str(ini), f"--rootdir={ROOT}"]
        cmd += ["-p", "no:cacheprovider", f"--confcutdir={engine.here}", str(engine.here)]
        return subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode


def main(
    engine: Engine, paths: Sequence[str], keyword: str | None, own_tests: bool, gate: bool = True
) -> int:
    """Both passes, the table, the gate, then chatfmt's adapter tests (``gate=False``: only
    those)."""
    if not engine.python.exists():
        print(f"run {setup_script(engine)} first", file=sys.stderr)
        return 2
    extra = ["-k", keyword] if keyword else []
    status = 0
    if gate and paths:
        # the two passes are independent processes: side by side (one per core); their files
        # in a folder of this run's own (several checkouts may share one venv)
        with (
            tempfile.TemporaryDirectory(prefix="chatfmt-gate-") as work,
            ThreadPoolExecutor(max_workers=2) as pool,
        ):
            own_run = pool.submit(run_pass, engine, False, paths, extra, Path(work))
            ours_run = pool.submit(run_pass, engine, True, paths, extra, Path(work))
            own, ours = own_run.result(), ours_run.result()
        allowed = allowed_differences(engine.here)
        status = report(engine, compare(own, ours, allowed), allowed)
    elif gate and engine.tests_required:
        print(f"{engine.label}'s tests are not in {engine.src}: run {setup_script(engine)} first")
        return 2
    elif gate:
        print(
            f"{engine.label}'s own test files are not in {engine.src}: gate not run (see setup.sh)"
        )
    if own_tests:  # run even when the gate failed: their result is worth seeing too
        adapter_status = adapter_tests(engine)
        status = status or adapter_status
    print("\ngate:", "FAILED" if status else "passed")
    return status


def setup_script(engine: Engine) -> str:
    """The ``setup.sh`` that builds ``engine``'s venv, relative to the checkout."""
    return str((engine.here / "setup.sh").relative_to(ROOT))


def cli(engine: Engine, doc: str, argv: Sequence[str] | None = None) -> int:
    """The command line of ``tests/engines/<engine>/run.py``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument(
        "paths", nargs="*", help=f"test files/folders (default: {' '.join(engine.tests)})"
    )
    ap.add_argument("-k", dest="keyword", help="pytest -k expression")
    ap.add_argument("--no-adapter-tests", action="store_true")
    ap.add_argument("--no-gate", action="store_true", help="only chatfmt's adapter tests")
    args = ap.parse_args(argv)
    paths = args.paths or [t for t in engine.tests if (engine.src / t).exists()]
    return main(engine, paths, args.keyword, not args.no_adapter_tests, not args.no_gate)
