"""The one interface that binding, recording and execution depend on.

Three kinds of object are dispatched: compiled operators, compiled graphs (both
``IDMLCompiledOperator`` to the user, as in DirectML) and operator initializers. Each is a
``Dispatchable``: it reports its binding properties, checks Bind* calls against its bind points and
turns a binding table into a recorded ``Command``. A command is what ``CommandQueue`` runs: it is
checked against the state before the call (``check``), takes its scratch memory (``reserve``)
and only then runs (``run``), so a failing call changes no buffer.

A compiled dispatchable (operator or graph) also has bind points (``bind_points``), is initialized
once with its OWNED_BY_DML inputs (``initialize``) and executes with bound buffers
(``execute``): the initializer and the commands reach it only through these methods.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from descriptors import DML_BINDING_PROPERTIES

    from .binding import Bound, IDMLBindingTable
    from .device import IDMLDevice
    from .validation import Tensor


class Command(Protocol):
    """One recorded dispatch."""

    @property
    def device(self) -> IDMLDevice: ...

    def compiled(self) -> Sequence[CompiledDispatchable]:
        """The compiled operators and graphs the command initializes or executes."""
        ...

    def check(self, initialized: set[int]) -> None:
        """Raise DMLError if the command cannot run after the commands before it (``initialized``:
        ids of the compiled dispatchables initialized by then; an initializer adds to it)."""
        ...

    def reserve(self) -> Any:
        """Scratch memory that grows with the data, taken before any command runs."""
        ...

    def run(self, reserved: Any = None) -> None: ...


class Dispatchable(abc.ABC):
    """What a binding table and RecordDispatch accept."""

    _device: IDMLDevice
    # Counts Reset calls (an initializer's): a binding table made before one is invalid.
    generation: int = 0

    @abc.abstractmethod
    def GetBindingProperties(self) -> DML_BINDING_PROPERTIES: ...

    @abc.abstractmethod
    def _bind_inputs(self, bindings: list[Any]) -> list[Any]:
        """Check BindInputs' bindings; return what the table keeps."""

    @abc.abstractmethod
    def _bind_outputs(self, bindings: list[Any]) -> list[Any]:
        """Check BindOutputs' bindings; return what the table keeps."""

    @abc.abstractmethod
    def _dispatch_command(self, table: IDMLBindingTable) -> Command:
        """RecordDispatch: the command for the table's current bindings (or DMLError)."""


class CompiledDispatchable(Dispatchable):
    """A compiled operator or graph: bind points, one initialization, execution."""

    @property
    @abc.abstractmethod
    def name(self) -> str: ...

    @property
    @abc.abstractmethod
    def initialized(self) -> bool: ...

    @abc.abstractmethod
    def bind_points(self, kind: str) -> list[tuple[str, Tensor | None]]:
        """The ``"input"`` or ``"output"`` bind points in binding order: (label, tensor), the
        tensor None where nothing may be bound (an absent optional tensor)."""

    @abc.abstractmethod
    def initialize(self, owned: Sequence[Bound | None]) -> None:
        """Capture the OWNED_BY_DML inputs (one entry per input bind point)."""

    @abc.abstractmethod
    def reserve(self) -> Any:
        """Scratch memory for one dispatch, taken before a command list runs."""

    @abc.abstractmethod
    def execute(self, inputs: Sequence[Bound | None], outputs: Sequence[Bound | None],
                temporary: Bound | None, reserved: Any = None,
                memo: dict[str, Any] | None = None) -> None:
        """Run with these bindings. ``memo``: the recorded command's own dict, where work that
        depends only on the bindings (a graph's byte regions) is kept between executions."""
