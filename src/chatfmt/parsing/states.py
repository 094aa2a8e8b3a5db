"""Parser states: one ``Enum`` per state machine, one dispatch table per class.

A machine names its states in an enum derived from :class:`State`, given as the
class attribute ``states``; a subclass that adds states gives its own enum, and
the machine's states are those of every ``states`` along its bases. The step of
state ``X`` is the method ``_s_x``. :class:`StateMachine` maps every state to its
step once, when the class is created, and raises :class:`TypeError` there if a
state has no step or a ``_s_`` method no state — so a misspelt step fails at
import, and mypy checks every ``S.NAME`` written in the code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Any, ClassVar

#: Prefix of step methods: state ``X`` is stepped by ``_s_x``.
STEP_PREFIX = "_s_"


class State(Enum):
    """Base of the machines' state enums.

    Members hash by identity (they are singletons), so the table lookup of every
    step is a plain dict lookup instead of a call to ``Enum.__hash__``.
    """

    __hash__ = object.__hash__


def machine_states(cls: type) -> Iterator[type[State]]:
    """The state enums of a machine class, from its own back to its bases'."""
    seen: list[type[State]] = []
    for klass in cls.__mro__:
        enum = vars(klass).get("states")
        if enum is not None and enum not in seen:
            seen.append(enum)
            yield enum


def build_steps(cls: type) -> dict[State, Callable[[Any], bool]]:
    """State → step function of ``cls``; raises :class:`TypeError` if incomplete."""
    steps: dict[State, Callable[[Any], bool]] = {}
    names: dict[str, State] = {}
    for enum in machine_states(cls):
        if not (isinstance(enum, type) and issubclass(enum, State)):
            raise TypeError(f"{cls.__name__}.states must be a State enum, got {enum!r}")
        for member in enum:
            method = STEP_PREFIX + member.name.lower()
            if method in names:
                raise TypeError(
                    f"{cls.__name__}: states {names[method]} and {member} share the step {method}"
                )
            step = getattr(cls, method, None)
            if not callable(step):
                raise TypeError(f"{cls.__name__}: state {member} has no step method {method}")
            names[method] = member
            steps[member] = step
    if not steps:
        raise TypeError(f"{cls.__name__} declares no states")
    stray = sorted(name for name in dir(cls) if name.startswith(STEP_PREFIX) and name not in names)
    if stray:
        raise TypeError(f"{cls.__name__}: step methods without a state: {', '.join(stray)}")
    return steps


class StateMachine:
    """Mixin of the parser state machines: :meth:`step` runs the step of ``self.state``.

    Put it before :class:`~.base.FormatParser` in the bases. Subclasses give their
    states as ``states`` (see module doc) and set ``self.state`` in ``__init__``.
    """

    #: This class's own state enum (the machine's states also include its bases').
    states: ClassVar[type[State] | None] = None
    #: State → step function, built once per class (see :func:`build_steps`).
    step_table: ClassVar[Mapping[State, Callable[[Any], bool]]] = {}
    #: The current state.
    state: State

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.step_table = build_steps(cls)
        for state in cls.configured_states():
            if state not in cls.step_table:
                raise TypeError(
                    f"{cls.__name__} is configured with {state!r}, not one of its states"
                )

    @classmethod
    def configured_states(cls) -> Iterable[Any]:
        """The states the class's configuration (marker tables) enters: checked at class creation."""
        return ()

    @classmethod
    def state_named(cls, name: str) -> State:
        """The state called ``name`` (any case): for machines loaded by name at run time."""
        for enum in machine_states(cls):
            member = enum.__members__.get(name.upper())
            if member is not None:
                return member
        raise KeyError(f"{cls.__name__} has no state {name!r}")

    def step(self) -> bool:
        """Run the step of the current state (see :class:`~.base.FormatParser`)."""
        return self.step_table[self.state](self)
