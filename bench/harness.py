"""Shared benchmark plumbing: run one operator through the faithful API with everything created,
initialized, bound and recorded up front, so a timed call is one ExecuteCommandLists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from descriptors import (
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE_BUFFER,
    DML_BUFFER_BINDING,
)
from emulator import Buffer, CommandList, CommandQueue, DMLCreateDevice1


class Prepared:
    """A dispatch ready to run: ``prepared()`` executes it once."""

    def __init__(self, op_desc: Any, inputs: Sequence[np.ndarray | None],
                 outputs: Sequence[np.ndarray], level: str = "4_0"):
        dev = DMLCreateDevice1(feature_level=level)
        self.compiled = dev.CompileOperator(dev.CreateOperator(op_desc))
        self.queue = CommandQueue()
        rec = dev.CreateCommandRecorder()

        def table(d):
            return dev.CreateBindingTable(DML_BINDING_TABLE_DESC(
                Dispatchable=d, SizeInDescriptors=d.GetBindingProperties().RequiredDescriptorCount))

        def bind(a):
            if a is None:  # an absent optional tensor
                return None
            # Tensor sizes are multiples of 4 bytes: pad small arrays (a zero point) with a copy.
            src = a if a.nbytes % 4 == 0 else Buffer.from_array(a)
            return DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER,
                                    Desc=DML_BUFFER_BINDING(Buffer=src))

        init = dev.CreateOperatorInitializer([self.compiled])
        lst = CommandList()
        rec.RecordDispatch(lst, init, table(init))
        lst.Close()
        self.queue.ExecuteCommandLists([lst])
        t = table(self.compiled)
        t.BindInputs([bind(a) for a in inputs])
        t.BindOutputs([bind(a) for a in outputs])
        self.list = CommandList()
        rec.RecordDispatch(self.list, self.compiled, t)
        self.list.Close()
        self()  # warm-up: JIT compile or cache load, first touch of the output pages

    def __call__(self) -> None:
        self.queue.ExecuteCommandLists([self.list])


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9
