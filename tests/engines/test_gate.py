"""The engine gate's comparison (``tests/engines/_gate.py``): keys, documented differences."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gate import case_keys, compare

A = "tests.reasoning.test_x.TestA::test_init"
B = "tests.reasoning.test_x.TestB::test_init"
C = "tests.reasoning.test_x::test_other"


def test_case_names_shared_by_classes_get_the_class() -> None:
    assert case_keys({A, B, C}) == {
        A: "test_x::TestA::test_init",
        B: "test_x::TestB::test_init",
        C: "test_x::test_other",
    }


def test_gate_counts_only_unlisted_cases_as_failures() -> None:
    own = dict.fromkeys((A, B, C), "passed")
    ours = {A: "failed", B: "failed", C: "passed"}
    listed = compare(own, ours, {"test_x::TestA::test_init": "why"})
    assert (listed.documented, listed.regressions) == (
        ["test_x::TestA::test_init"],
        ["test_x::TestB::test_init"],
    )
    # a case listed without its class covers it in every class
    assert not compare(own, ours, {"test_x::test_init": "why"}).regressions
    better = compare({C: "failed"}, {C: "passed"}, {})
    assert (better.improvements, better.rows["test_x"]["improvements"]) == (
        ["test_x::test_other"],
        1,
    )
