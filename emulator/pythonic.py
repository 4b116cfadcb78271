"""``IDMLDevice.execute`` (one operator) and ``IDMLDevice.execute_graph`` (a DML_GRAPH_DESC), run
through the faithful API (same validation, same bindings, same kernels) with buffers made from
numpy arrays."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from descriptors import (
    DML_BINDING_TABLE_DESC,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    NUMPY_DTYPE,
)

from . import nibbles
from .cvalues import as_list, show
from .errors import invalid_arg
from .execution import CommandList, CommandQueue
from .resources import Buffer, resource_bytes
from .validation import Tensor

if TYPE_CHECKING:
    from .device import IDMLCompiledOperator, IDMLDevice


def _per_field(values: Any, names: list[str], what: str, op_name: str,
               absent: frozenset[str] = frozenset()) -> list[Any]:
    """One value per bind point (a tensor array's tensors each have one, ``Field[i]``). Trailing
    bind points whose tensor is absent (null) in the desc may be left out."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, Mapping):
        # A tensor array may be given under its field name as a list: one entry per tensor.
        values = {f"{k}[{i}]" if f"{k}[{i}]" in names else k: x
                  for k, v in values.items()
                  for i, x in (enumerate(v) if f"{k}[0]" in names and isinstance(v, (list, tuple))
                               else [(0, v)])}
        unknown = set(values) - set(names)
        if unknown:
            raise invalid_arg(f"execute ({op_name}): {what} {sorted(unknown)} are not bind points "
                              f"(expected {names})")
        return [values.get(n) for n in names]
    if isinstance(values, (np.ndarray, Buffer)):
        values = [values]
    values = as_list(values, f"execute ({op_name}): {what}",
                     "a list (one entry per bind point), a mapping by bind point, or one array")
    if len(values) < len(names) and all(n in absent for n in names[len(values):]):
        values += [None] * (len(names) - len(values))
    if len(values) != len(names):
        raise invalid_arg(f"execute ({op_name}): {len(values)} {what} given; the operator has "
                          f"{len(names)} ({', '.join(names)}), optional ones included (pass None "
                          "for an absent one)")
    return values


def _dtype_name(t: Tensor) -> str:
    return t.data_type.name.removeprefix("DML_TENSOR_DATA_TYPE_")


def _as_resource(x: Any, t: Tensor, point: str, op_name: str, output: bool) -> Any:
    """What a user passed for one tensor, as a buffer resource holding that tensor's bytes.

    A ``Buffer`` or a uint8 array are bytes (at least the tensor's TotalTensorSizeInBytes; for a
    UINT8 tensor, a 1-D uint8 array not shaped like it). A numpy array of another dtype must be of
    the tensor's DataType and, for a packed desc, of its Sizes.
    A Python number or (nested) list is converted to the tensor's type and Sizes (inputs only).
    A 4-bit (UINT4/INT4) input takes its values as integers, packed here two per byte."""
    where = f"execute ({op_name}): {'output' if output else 'input'} {point}"
    need = t.total_bytes
    four = t.data_type in nibbles.FOUR_BIT
    dtype = nibbles.LOGICAL[t.data_type] if four else \
        t.dtype if t.data_type in NUMPY_DTYPE else None
    # uint8 arrays are raw bytes, but for a UINT8 tensor only when 1-D and not shaped like it.
    # A 4-bit output can only be bytes.
    raw = isinstance(x, np.ndarray) and x.dtype == np.uint8 and (
        dtype != np.uint8 or (x.ndim == 1 and tuple(x.shape) != t.sizes) or (four and output))
    if isinstance(x, Buffer) or raw:
        size = x.size_in_bytes if isinstance(x, Buffer) else x.nbytes
        extent = t.extent * t.element_size
        if size < need and (output or size < extent):
            raise invalid_arg(f"{where}: {size} bytes given; the tensor needs {need} "
                              "(TotalTensorSizeInBytes)")
        return x if size >= need else Buffer.from_array(x)  # pad the last word of an input
    if isinstance(x, np.ndarray) and not (four and not output):
        if dtype is None or x.dtype != dtype or four:
            raise invalid_arg(
                f"{where}: a {x.dtype} array was given for a {_dtype_name(t)} tensor (pass "
                f"{dtype or 'uint8 bytes'} data, or the raw bytes as a uint8 array)")
        if not t.explicit_strides and tuple(x.shape) != t.sizes:
            raise invalid_arg(f"{where}: an array of shape {tuple(x.shape)} was given; the "
                              f"tensor's Sizes are {t.sizes}")
        if output:
            return x  # the resource itself (resource_bytes checks it is writable, contiguous)
        if x.flags.c_contiguous and x.flags.writeable and x.nbytes >= need \
                and type(x) is np.ndarray:
            return x
        if t.explicit_strides:
            return Buffer.from_array(x)  # its bytes, as the strides address them
        return Buffer.from_array(np.ascontiguousarray(x))
    if output:
        raise invalid_arg(f"{where}: {type(x).__name__} given; an output is a numpy array or "
                          "an emulator.Buffer")
    if dtype is None:
        raise invalid_arg(f"{where}: {type(x).__name__} given; a {_dtype_name(t)} tensor's data "
                          "is passed as raw bytes (a uint8 array or an emulator.Buffer)")
    try:
        with np.errstate(all="raise"):
            arr = np.asarray(x, dtype=None if four else dtype)
    except (TypeError, ValueError, OverflowError, FloatingPointError) as e:
        shown = repr(x) if isinstance(x, str) and len(x) <= 40 else show(x)
        raise invalid_arg(f"{where}: {shown} cannot be converted to {_dtype_name(t)}: "
                          f"{e}") from None
    if arr.ndim == 0:
        arr = np.full(t.sizes, arr, dtype=None if four else dtype)
    elif arr.size == t.element_count:
        arr = arr.reshape(t.sizes)
    else:
        raise invalid_arg(f"{where}: {arr.size} values given; the tensor's Sizes {t.sizes} hold "
                          f"{t.element_count}")
    buf = Buffer(need)
    if four:
        lo, hi = nibbles.RANGE[t.data_type]
        if arr.dtype.kind not in "iub" or arr.min() < lo or arr.max() > hi:
            raise invalid_arg(f"{where}: {show(x)} given; a {_dtype_name(t)} tensor holds the "
                              f"integers {lo} to {hi}")
        nibbles.write(t.data_type, t.sizes, t.strides, resource_bytes(buf, where), arr)
        return buf
    t.view(resource_bytes(buf, where))[...] = arr
    return buf


def execute(device: IDMLDevice, operator_desc: Any, inputs: Any, outputs: Any = None
            ) -> list[np.ndarray]:
    op = device.CreateOperator(operator_desc)
    return run(device, device.CompileOperator(op), inputs, outputs, op.name)


def execute_graph(device: IDMLDevice, graph_desc: Any, inputs: Any, outputs: Any = None
                  ) -> list[np.ndarray]:
    return run(device, device.CompileGraph(graph_desc), inputs, outputs, "compiled graph")


def run(device: IDMLDevice, compiled: IDMLCompiledOperator, inputs: Any, outputs: Any,
        name: str) -> list[np.ndarray]:
    """Initialize, bind (a temporary resource too, if it needs one) and dispatch a compiled
    operator or graph; return its outputs as arrays."""
    ins, outs = compiled.bind_points("input"), compiled.bind_points("output")
    in_values = _per_field(inputs, [n for n, _ in ins], "inputs", name,
                           frozenset(n for n, t in ins if t is None))
    out_values = _per_field(outputs, [n for n, _ in outs], "outputs", name)

    for x, (point, t) in zip(in_values, ins):
        if x is None and t is not None:
            raise invalid_arg(f"execute ({name}): input {point} is None, but the operator desc "
                              "has this tensor (pass an array, or make the tensor null)")
    in_buffers = [None if x is None or t is None else _as_resource(x, t, point, name, False)
                  for x, (point, t) in zip(in_values, ins)]
    # One entry per output bind point: None for an optional output the desc leaves null (bound
    # as None, as BindOutputs expects a binding for every output, RANDOM_GENERATOR's state).
    out_buffers = [None if t is None else Buffer(t.total_bytes) if x is None else
                   _as_resource(x, t, point, name, True)
                   for x, (point, t) in zip(out_values, outs)]

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
    props = compiled.GetBindingProperties()
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=compiled, SizeInDescriptors=props.RequiredDescriptorCount))
    table.BindInputs([None if b is None or t is None or t.owned_by_dml else buffer_binding(b)
                      for b, (_, t) in zip(in_buffers, ins)])
    table.BindOutputs([None if b is None else buffer_binding(b) for b in out_buffers])
    if props.TemporaryResourceSize:
        table.BindTemporaryResource(buffer_binding(Buffer(props.TemporaryResourceSize)))
    commands = CommandList()
    recorder.RecordDispatch(commands, initializer, init_table)
    recorder.RecordDispatch(commands, compiled, table)
    commands.Close()
    queue.ExecuteCommandLists([commands])
    return [nibbles.read(t.data_type, t.sizes, t.strides, resource_bytes(b, "execute"))
            if t.data_type in nibbles.FOUR_BIT else t.view(resource_bytes(b, "execute"))
            for b, (_, t) in zip(out_buffers, outs) if t is not None]
