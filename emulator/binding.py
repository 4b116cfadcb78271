"""Binding tables and every binding rule DirectML enforces (Microsoft's
IDMLBindingTable and DML_BUFFER_BINDING pages; docs/decisions.md, Bindings and execution).

Bind* calls check what they can alone (count, type, range inside the buffer, offset alignment,
SizeInBytes >= TotalTensorSizeInBytes, OWNED_BY_DML bound only at initialization);
``check_complete`` and ``check_overlaps`` run at RecordDispatch, when inputs and outputs are both
known. Bind* return nothing in C, so a failure also removes the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from descriptors import (
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    DML_PERSISTENT_BUFFER_ALIGNMENT,
    DML_TEMPORARY_BUFFER_ALIGNMENT,
)

from .cvalues import as_list, to_enum, to_int
from .errors import invalid_arg
from .resources import address, resource_bytes
from .validation import Tensor

if TYPE_CHECKING:
    from .device import IDMLDevice
    from .dispatchable import Dispatchable

BT = DML_BINDING_TYPE
NONE, BUFFER, BUFFER_ARRAY = (BT.DML_BINDING_TYPE_NONE, BT.DML_BINDING_TYPE_BUFFER,
                              BT.DML_BINDING_TYPE_BUFFER_ARRAY)


@dataclass(frozen=True)
class Bound:
    """A checked buffer binding: the whole resource's bytes, and the bound range in it."""

    resource: np.ndarray
    offset: int
    size: int
    extent: int  # bytes the bound tensor addresses from offset (its TotalTensorSizeInBytes)

    def region(self) -> np.ndarray:
        return self.resource[self.offset:self.offset + self.size]

    def span(self) -> tuple[int, int]:
        start = address(self.resource) + self.offset
        return start, start + self.extent


def as_binding(b: Any, where: str) -> tuple[DML_BINDING_TYPE, Any]:
    """Normalise a DML_BINDING_DESC (or None, a bare DML_BUFFER_BINDING / ARRAY) to (type, desc)."""
    if b is None:
        return NONE, None
    if isinstance(b, DML_BUFFER_BINDING):
        return BUFFER, b
    if isinstance(b, DML_BUFFER_ARRAY_BINDING):
        return BUFFER_ARRAY, b
    if not isinstance(b, DML_BINDING_DESC):
        raise invalid_arg(f"{where}: {type(b).__name__} is not a DML_BINDING_DESC")
    kind = to_enum(b.Type, BT, f"{where}: Type")
    expected = {BUFFER: DML_BUFFER_BINDING, BUFFER_ARRAY: DML_BUFFER_ARRAY_BINDING}.get(kind)
    if expected is not None and not isinstance(b.Desc, expected):
        raise invalid_arg(f"{where}: a {kind.name} binding needs Desc to be a "
                          f"{expected.__name__}, not {type(b.Desc).__name__}")
    return kind, b.Desc


def check_buffer(bb: DML_BUFFER_BINDING, where: str, need: int, alignment: int) -> Bound:
    """One buffer binding: non-null, aligned offset, range inside the buffer, big enough."""
    if bb.Buffer is None:
        raise invalid_arg(f"{where}: Buffer is null but this bind point needs a buffer")
    res = resource_bytes(bb.Buffer, where)
    off = to_int(bb.Offset, f"{where}: Offset", "UINT64")
    if off % alignment:
        raise invalid_arg(f"{where}: Offset = {off} is invalid: must be a multiple of "
                          f"{alignment} bytes")
    if off > res.size:
        raise invalid_arg(f"{where}: Offset = {off} is invalid: it lies past the end of the "
                          f"buffer ({res.size} bytes)")
    size = res.size - off if bb.SizeInBytes is None else \
        to_int(bb.SizeInBytes, f"{where}: SizeInBytes", "UINT64")
    if off + size > res.size:
        raise invalid_arg(f"{where}: Offset + SizeInBytes = {off} + {size} = {off + size} is "
                          f"invalid: the range must lie inside the buffer ({res.size} bytes)")
    if size < need:
        raise invalid_arg(f"{where}: SizeInBytes = {size} is invalid: must be at least "
                          f"{need} (the tensor's TotalTensorSizeInBytes)")
    return Bound(res, off, size, need)


def bind_tensor(b: Any, where: str, tensor: Tensor | None) -> Bound | None:
    """A tensor bind point at execution."""
    kind, desc = as_binding(b, where)
    if tensor is None:
        if kind != NONE:
            raise invalid_arg(f"{where}: the optional tensor is absent (null) in the operator "
                              "desc, so it must be bound as DML_BINDING_TYPE_NONE, not "
                              f"{kind.name}")
        return None
    if tensor.owned_by_dml:
        if kind != NONE:
            raise invalid_arg(f"{where}: the tensor is flagged DML_TENSOR_FLAG_OWNED_BY_DML, so it "
                              "is bound at initialization (operator initializer), never at "
                              "execution; bind DML_BINDING_TYPE_NONE here")
        return None
    if kind != BUFFER:
        raise invalid_arg(f"{where}: Type = {kind.name} is invalid: this tensor needs a "
                          "DML_BINDING_TYPE_BUFFER binding")
    return check_buffer(desc, where, tensor.total_bytes, tensor.base_alignment)


def bind_owned(bb: Any, where: str, tensor: Tensor | None) -> Bound | None:
    """One entry of an initializer's buffer array: a buffer for OWNED_BY_DML inputs, else null."""
    if not isinstance(bb, DML_BUFFER_BINDING):
        raise invalid_arg(f"{where}: {type(bb).__name__} is not a DML_BUFFER_BINDING")
    if tensor is None or not tensor.owned_by_dml:
        if bb.Buffer is not None:
            raise invalid_arg(f"{where}: the tensor is not flagged DML_TENSOR_FLAG_OWNED_BY_DML, "
                              "so it is bound at execution; its initializer entry needs a null "
                              "Buffer")
        return None
    return check_buffer(bb, where, tensor.total_bytes, tensor.base_alignment)


def bind_resource(b: Any, where: str, size: int, alignment: int) -> Bound | None:
    """A temporary or persistent resource binding (needed only when its size is non-zero)."""
    kind, desc = as_binding(b, where)
    if kind == NONE:
        if size:
            raise invalid_arg(f"{where}: DML_BINDING_TYPE_NONE is invalid: the dispatchable needs "
                              f"{size} bytes here")
        return None
    if kind != BUFFER:
        raise invalid_arg(f"{where}: Type = {kind.name} is invalid: must be BUFFER or NONE")
    if desc.Buffer is None and not size:
        return None
    return check_buffer(desc, where, size, alignment)


class IDMLBindingTable:
    """Holds the bindings of one dispatchable. Not thread-safe, as in DirectML."""

    def __init__(self, device: IDMLDevice, desc: DML_BINDING_TABLE_DESC | None):
        self._device = device
        self._reset(desc)

    def _reset(self, desc: DML_BINDING_TABLE_DESC | None) -> None:
        self.dispatchable: Dispatchable | None = None
        self.inputs: list[Any] | None = None
        self.outputs: list[Any] | None = None
        self.temporary: Bound | None = None
        self.persistent: Bound | None = None
        self.generation = 0  # the dispatchable's Reset count when this table was made for it
        if desc is None:
            return
        if not isinstance(desc, DML_BINDING_TABLE_DESC):
            raise invalid_arg(f"binding table: {type(desc).__name__} is not a "
                              "DML_BINDING_TABLE_DESC")
        d = desc.Dispatchable
        from .dispatchable import Dispatchable

        if not isinstance(d, Dispatchable) or d._device is not self._device:
            raise invalid_arg("DML_BINDING_TABLE_DESC.Dispatchable must be a compiled operator, "
                              "compiled graph or operator initializer of this device")
        need = d.GetBindingProperties().RequiredDescriptorCount
        to_int(desc.SizeInDescriptors, "DML_BINDING_TABLE_DESC.SizeInDescriptors", "UINT", need,
               rule=f"the dispatchable's RequiredDescriptorCount is {need}")
        self.dispatchable = d
        self.generation = d.generation

    def _target(self, method: str) -> Dispatchable:
        if self.dispatchable is None:
            raise invalid_arg(f"IDMLBindingTable::{method}: the table has no dispatchable "
                              "(create it with a DML_BINDING_TABLE_DESC or call Reset)")
        if self.dispatchable.generation != self.generation:
            raise invalid_arg(f"IDMLBindingTable::{method}: the initializer was Reset after this "
                              "table was made for it, which invalidates the table (as in "
                              "DirectML); call IDMLBindingTable::Reset and bind again")
        return self.dispatchable

    def BindInputs(self, bindings: Sequence[Any] | None) -> None:
        with self._device._void_call():
            self.inputs = self._target("BindInputs")._bind_inputs(
                as_list(bindings, "IDMLBindingTable::BindInputs: bindings"))

    def BindOutputs(self, bindings: Sequence[Any] | None) -> None:
        with self._device._void_call():
            self.outputs = self._target("BindOutputs")._bind_outputs(
                as_list(bindings, "IDMLBindingTable::BindOutputs: bindings"))

    def BindTemporaryResource(self, binding: Any) -> None:
        self.temporary = self._bind_resource("BindTemporaryResource", binding,
                                             "TemporaryResourceSize",
                                             DML_TEMPORARY_BUFFER_ALIGNMENT)

    def BindPersistentResource(self, binding: Any) -> None:
        self.persistent = self._bind_resource("BindPersistentResource", binding,
                                              "PersistentResourceSize",
                                              DML_PERSISTENT_BUFFER_ALIGNMENT)

    def _bind_resource(self, method: str, binding: Any, size_field: str,
                       alignment: int) -> Bound | None:
        with self._device._void_call():
            props = self._target(method).GetBindingProperties()
            return bind_resource(binding, f"IDMLBindingTable::{method}",
                                 getattr(props, size_field), alignment)

    def Reset(self, desc: DML_BINDING_TABLE_DESC | None) -> None:
        self._device._check_alive()
        self._reset(desc)


def check_counts(where: str, what: str, got: int, names: Sequence[str]) -> None:
    if got != len(names):
        raise invalid_arg(f"{where}: {got} bindings given; {what} has {len(names)} ("
                          + ", ".join(names) + "), optional ones included (bind an absent "
                          "optional tensor as DML_BINDING_TYPE_NONE)")


Slot = tuple[str, Tensor | None, Bound | None]


def same_elements(a: Tensor | None, b: Tensor | None) -> bool:
    """Two tensors that address the same bytes as the same elements: data type, sizes, strides."""
    return a is not None and b is not None and a.data_type == b.data_type and \
        tuple(a.sizes) == tuple(b.sizes) and tuple(a.strides) == tuple(b.strides)


def check_overlaps(where: str, inputs: Sequence[Slot], outputs: Sequence[Slot],
                   in_place: bool, temporary: Bound | None = None) -> None:
    """Outputs never overlap each other; an input and an output only if the operator runs in
    place and both bind the identical region as the identical tensor (data type, sizes, strides):
    otherwise an element would be overwritten before it is read, and the result would depend on
    the thread count.

    A tensor's region is [Offset, Offset + TotalTensorSizeInBytes) of its resource. The temporary
    resource (a graph's intermediates) overlaps no input and no output.
    """
    def overlap(a: Bound, b: Bound) -> bool:
        (a0, a1), (b0, b1) = a.span(), b.span()
        return a0 < b1 and b0 < a1

    for i, (on, ot, ob) in enumerate(outputs):
        if ob is None:
            continue
        for pn, _, pb in outputs[:i]:
            if pb is not None and overlap(ob, pb):
                raise invalid_arg(f"{where}: outputs {pn} and {on} overlap in memory; output "
                                  "regions must not overlap")
        for n, t, b in inputs:
            if b is None or not overlap(ob, b):
                continue
            if not in_place:
                raise invalid_arg(f"{where}: input {n} and output {on} overlap in memory; this "
                                  "operator does not support in-place execution")
            if b.span() != ob.span():
                raise invalid_arg(f"{where}: input {n} and output {on} overlap but are not the "
                                  "same region; in-place execution needs identical regions")
            if not same_elements(t, ot):
                raise invalid_arg(f"{where}: input {n} and output {on} bind the same region as "
                                  "different tensors (data type, sizes or strides differ); "
                                  "in-place execution needs element-for-element identical "
                                  "tensors")
    if temporary is not None:
        for n, _, b in [*inputs, *outputs]:
            if b is not None and overlap(temporary, b):
                raise invalid_arg(f"{where}: the temporary resource overlaps {n} in memory; the "
                                  "dispatchable writes its intermediates there")
