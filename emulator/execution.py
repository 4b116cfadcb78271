"""Command recording and execution: ``CommandList``, ``CommandQueue`` and the dispatch commands.

``RecordDispatch`` snapshots the binding table into a command. ``ExecuteCommandLists`` first checks
every command of every list (initialization state included, in order) and only then runs them, so
a failing call changes no buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .binding import Bound
from .cvalues import as_list
from .errors import E_OUTOFMEMORY, DMLError, invalid_arg

if TYPE_CHECKING:
    from .device import IDMLDevice, IDMLOperatorInitializer
    from .dispatchable import Command, CompiledDispatchable


@dataclass(frozen=True)
class OperatorDispatch:
    """Execute a compiled operator or graph with these bindings (None: not bound)."""

    operator: CompiledDispatchable
    inputs: tuple[Bound | None, ...]
    outputs: tuple[Bound | None, ...]
    temporary: Bound | None = None
    # What the dispatchable works out once for these bindings (a graph's byte regions): it lives
    # and dies with the recorded command.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def device(self) -> IDMLDevice:
        return self.operator._device

    def compiled(self) -> tuple[CompiledDispatchable, ...]:
        return (self.operator,)

    def check(self, initialized: set[int]) -> None:
        _check_covers(self.operator, "input", self.inputs)
        _check_covers(self.operator, "output", self.outputs)
        need = self.operator.GetBindingProperties().TemporaryResourceSize
        t = self.temporary
        if need and (t is None or t.size < need or t.offset + t.size > t.resource.size):
            raise invalid_arg(f"{self.operator.name}: the recorded temporary resource no longer "
                              f"covers the {need} bytes the dispatchable needs; bind and record "
                              "the dispatch again")
        if id(self.operator) not in initialized:
            raise invalid_arg(f"{self.operator.name}: the compiled operator was dispatched before "
                              "it was initialized; dispatch an IDMLOperatorInitializer for it "
                              "first")

    def reserve(self) -> Any:
        return self.operator.reserve()

    def run(self, reserved: Any = None) -> None:
        self.operator.execute(self.inputs, self.outputs, self.temporary, reserved, self.memo)


@dataclass(frozen=True)
class InitializerDispatch:
    """Initialize these compiled operators, capturing their OWNED_BY_DML inputs."""

    initializer: IDMLOperatorInitializer
    operators: tuple[CompiledDispatchable, ...]
    owned: tuple[tuple[Bound | None, ...], ...]

    @property
    def device(self) -> IDMLDevice:
        return self.initializer._device

    def compiled(self) -> tuple[CompiledDispatchable, ...]:
        return self.operators

    def check(self, initialized: set[int]) -> None:
        if len(self.owned) != len(self.operators):
            raise invalid_arg("operator initializer: the recorded bindings do not match its "
                              "operators; record the dispatch again")
        for op, owned in zip(self.operators, self.owned):
            _check_covers(op, "input", owned, owned=True)
        for op in self.operators:
            if id(op) in initialized:
                raise invalid_arg(f"{op.name}: the compiled operator is already initialized; "
                                  "every operator is initialized exactly once")
            initialized.add(id(op))

    def reserve(self) -> Any:
        return None

    def run(self, reserved: Any = None) -> None:
        for op, owned in zip(self.operators, self.owned):
            op.initialize(owned)


class CommandList:
    """Stand-in for ID3D12GraphicsCommandList: records dispatches until ``Close()``."""

    def __init__(self) -> None:
        self._commands: list[Command] = []
        self._closed = False

    def Close(self) -> None:
        if self._closed:
            raise invalid_arg("CommandList::Close: the command list is already closed")
        self._closed = True

    def Reset(self, *_allocator_and_state: Any) -> None:
        """Reopen for recording, dropping what was recorded (D3D12's allocator args are ignored)."""
        self._commands = []
        self._closed = False

    def _record(self, command: Command) -> None:
        if self._closed:
            raise invalid_arg("RecordDispatch: the command list is closed; Reset it first")
        self._commands.append(command)


class CommandQueue:
    """Stand-in for ID3D12CommandQueue: runs lists in order and returns when the work is done."""

    def ExecuteCommandLists(self, command_lists: Sequence[CommandList]) -> None:
        lists = as_list(command_lists, "ExecuteCommandLists: command_lists",
                        "a list of CommandList")
        for cl in lists:
            if not isinstance(cl, CommandList):
                raise invalid_arg(f"ExecuteCommandLists: {type(cl).__name__} is not a CommandList")
            if not cl._closed:
                raise invalid_arg("ExecuteCommandLists: a command list must be closed (Close()) "
                                  "before it is executed")
        commands: list[Command] = [c for cl in lists for c in cl._commands]
        initialized: set[int] = set()
        for c in commands:  # the state every compiled operator is in before this call
            for op in c.compiled():
                if op.initialized:
                    initialized.add(id(op))
        for c in commands:
            device = c.device
            try:
                device._check_alive()
                c.check(initialized)
            except DMLError as e:
                device._remove(e)
                raise
        # Scratch memory that grows with the data, for every command, before any buffer changes.
        reserved = []
        for c in commands:
            try:
                reserved.append(c.reserve())
            except DMLError as e:
                c.device._remove(e)
                raise
        for c, r in zip(commands, reserved):
            try:
                c.run(r)
            except MemoryError:  # a dispatch-time table of a huge index tensor (the gathers')
                error = DMLError(E_OUTOFMEMORY, "ExecuteCommandLists: a kernel's scratch memory "
                                 "cannot be allocated on this machine")
                c.device._remove(error)
                raise error from None


def _check_covers(op: CompiledDispatchable, kind: str, bound: tuple[Any, ...],
                  owned: bool = False) -> None:
    """Re-validated when a command runs, whatever happened since it was recorded: one binding per
    bind point, each covering its tensor (a kernel never reads or writes past a bound range), and
    every tensor the kernel needs bound (``owned``: an initializer's OWNED_BY_DML entries)."""
    slots = op.bind_points(kind)

    def needed(t: Any) -> bool:
        return t is not None and not owned and not (kind == "input" and t.owned_by_dml)

    ok = len(bound) == len(slots) and all(
        (b is None and not needed(t)) or
        (b is not None and t is not None and b.size >= t.total_bytes
         and b.offset + b.size <= b.resource.size)
        for b, (_, t) in zip(bound, slots))
    if not ok:
        raise invalid_arg(f"{op.name}: the recorded {kind} bindings no longer match the "
                          "operator's tensors; bind and record the dispatch again")
