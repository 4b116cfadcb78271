"""``IDMLDevice.execute``: one operator, run through the faithful API (same validation, same
bindings, same kernels) with buffers made from numpy arrays."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from descriptors import DML_BINDING_TABLE_DESC, DML_BUFFER_ARRAY_BINDING, DML_BUFFER_BINDING

from .errors import invalid_arg
from .execution import CommandList, CommandQueue
from .resources import Buffer, resource_bytes

if TYPE_CHECKING:
    from .device import IDMLDevice


def _per_field(values: Any, names: list[str], what: str, op_name: str,
               absent: frozenset[str] = frozenset()) -> list[Any]:
    """One value per bind point. Trailing bind points whose tensor is absent (null) in the desc
    may be left out."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, Mapping):
        unknown = set(values) - set(names)
        if unknown:
            raise invalid_arg(f"execute ({op_name}): {what} {sorted(unknown)} are not bind points "
                              f"(expected {names})")
        return [values.get(n) for n in names]
    if isinstance(values, np.ndarray):
        values = [values]
    values = list(values)
    if len(values) < len(names) and all(n in absent for n in names[len(values):]):
        values += [None] * (len(names) - len(values))
    if len(values) != len(names):
        raise invalid_arg(f"execute ({op_name}): {len(values)} {what} given; the operator has "
                          f"{len(names)} ({', '.join(names)}), optional ones included (pass None "
                          "for an absent one)")
    return values


def _input_buffer(x: Any, need: int) -> Any:
    """The array itself when it can serve as the resource, else a padded copy."""
    arr = np.asarray(x)
    if arr.flags.c_contiguous and arr.flags.writeable and arr.nbytes >= need:
        return arr
    return Buffer.from_array(arr)


def execute(device: IDMLDevice, operator_desc: Any, inputs: Any, outputs: Any = None
            ) -> list[np.ndarray]:
    op = device.CreateOperator(operator_desc)
    compiled = device.CompileOperator(op)
    ins, outs = compiled._tensors("input"), compiled._tensors("output")
    in_values = _per_field(inputs, [n for n, _ in ins], "inputs", op.name,
                           frozenset(n for n, t in ins if t is None))
    out_values = _per_field(outputs, [n for n, _ in outs], "outputs", op.name)

    for x, (name, t) in zip(in_values, ins):
        if x is None and t is not None:
            raise invalid_arg(f"execute ({op.name}): input {name} is None, but the operator desc "
                              "has this tensor (pass an array, or make the tensor null)")
    in_buffers = [None if x is None or t is None else _input_buffer(x, t.total_bytes)
                  for x, (_, t) in zip(in_values, ins)]
    out_buffers = [Buffer(t.total_bytes) if x is None else x
                   for x, (_, t) in zip(out_values, outs) if t is not None]

    def buffer_binding(buf: Any) -> DML_BUFFER_BINDING:
        return DML_BUFFER_BINDING(Buffer=buf)

    queue, recorder = CommandQueue(), device.CreateCommandRecorder()
    initializer = device.CreateOperatorInitializer([compiled])
    init_table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=initializer,
        SizeInDescriptors=initializer.GetBindingProperties().RequiredDescriptorCount))
    if any(t is not None and t.owned_by_dml for _, t in ins):
        init_table.BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[
            buffer_binding(b if t is not None and t.owned_by_dml else None)
            for b, (_, t) in zip(in_buffers, ins)])])
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=compiled,
        SizeInDescriptors=compiled.GetBindingProperties().RequiredDescriptorCount))
    table.BindInputs([None if b is None or t is None or t.owned_by_dml else buffer_binding(b)
                      for b, (_, t) in zip(in_buffers, ins)])
    table.BindOutputs([buffer_binding(b) for b in out_buffers])
    commands = CommandList()
    recorder.RecordDispatch(commands, initializer, init_table)
    recorder.RecordDispatch(commands, compiled, table)
    commands.Close()
    queue.ExecuteCommandLists([commands])
    return [t.view(resource_bytes(b, "execute"))
            for b, (_, t) in zip(out_buffers, outs) if t is not None]
