"""Parser states are enums with a dispatch table per class, checked when the class is made."""

from __future__ import annotations

from enum import auto
from typing import Any, ClassVar

import pytest

from chatfmt.parsing import StreamParser
from chatfmt.parsing.base import REASONING_PARSERS, TOOL_PARSERS, PlainParser
from chatfmt.parsing.blocks import Block, BlockParser
from chatfmt.parsing.reasoning import ThinkParser
from chatfmt.parsing.states import State, StateMachine, machine_states


def _machines() -> dict[str, type]:
    found: dict[str, type] = {}
    for name, cls in TOOL_PARSERS.items():
        if cls is not PlainParser:  # no syntax, no states: everything is content
            found[f"tool:{name}"] = cls
    for name, factory in REASONING_PARSERS.items():
        found[f"reasoning:{name}"] = factory  # type: ignore[assignment]
    return found


MACHINES = _machines()


@pytest.mark.parametrize("key", sorted(MACHINES))
def test_every_registered_parser_has_a_complete_dispatch_table(key: str) -> None:
    cls = MACHINES[key]
    assert isinstance(cls, type) and issubclass(cls, StateMachine)
    states = {member for enum in machine_states(cls) for member in enum}
    assert states and set(cls.step_table) == states
    for state, step in cls.step_table.items():
        assert isinstance(state, State)
        assert step is getattr(cls, "_s_" + state.name.lower())


@pytest.mark.parametrize("key", sorted(MACHINES))
def test_a_new_parser_starts_in_one_of_its_states(key: str) -> None:
    kind, name = key.split(":", 1)
    if kind == "tool":
        sp = StreamParser(parser=name)
    else:
        sp = StreamParser(parser="plain", reasoning_parser=name)
    machine: Any = sp._parser
    assert type(machine) is MACHINES[key]
    assert machine.state in type(machine).step_table


def test_a_state_without_a_step_fails_when_the_class_is_made() -> None:
    class _Extra(State):
        EXTRA = auto()

    with pytest.raises(TypeError, match="EXTRA has no step method _s_extra"):

        class _Broken(BlockParser):
            states = _Extra

            def _s_exra(self) -> bool:  # misspelt
                return False


def test_a_step_without_a_state_fails_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="step methods without a state: _s_orphan"):

        class _Broken(BlockParser):
            def _s_orphan(self) -> bool:
                return False


def test_a_start_marker_must_enter_a_state_of_the_machine() -> None:
    class _Other(State):
        ELSEWHERE = auto()

    with pytest.raises(TypeError, match="configured with"):

        class _Broken(BlockParser):
            starts: ClassVar[Any] = {"<x>": _Other.ELSEWHERE}

    with pytest.raises(TypeError, match="configured with 'gap'"):

        class _Stringly(BlockParser):
            starts: ClassVar[Any] = {"<x>": "gap"}

    with pytest.raises(TypeError, match="configured with"):

        class _BrokenThink(ThinkParser):
            openers: ClassVar[Any] = (("<x>", Block.GAP),)
