"""Hand-made serialized DirectML graphs (the FlatBuffers format of docs/serialized-graph-format.md),
written with the flatbuffers Builder: hostile and edge-case partitions for the reader's tests."""

from __future__ import annotations

import struct

import flatbuffers

F32 = "DML_TENSOR_DATA_TYPE_FLOAT32"
T5 = (F32, [1, 1, 1, 5], None, 20)  # (data type, sizes, strides or None, total bytes)


class _Writer:
    def __init__(self) -> None:
        self.b = flatbuffers.Builder(1024)

    def offsets(self, offs: list[int]) -> int:
        self.b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            self.b.PrependUOffsetTRelative(o)
        return self.b.EndVector()

    def strings(self, xs: list[str]) -> int:
        return self.offsets([self.b.CreateString(x) for x in xs])

    def numbers(self, xs: list, fmt: str) -> int:
        width = struct.calcsize(fmt)
        self.b.StartVector(width, len(xs), width)
        prepend = {"I": self.b.PrependUint32, "i": self.b.PrependInt32,
                   "f": self.b.PrependFloat32, "B": self.b.PrependUint8}[fmt]
        for x in reversed(xs):
            prepend(x)
        return self.b.EndVector()

    def table(self, slots: list[tuple[str, int, object]]) -> int:
        """slots: (kind, slot, value), kind "o" (an offset), "B" (uint8) or "Q" (uint64)."""
        self.b.StartObject(max(s for _, s, _ in slots) + 1 if slots else 0)
        for kind, slot, value in slots:
            if kind == "o":
                self.b.PrependUOffsetTRelativeSlot(slot, value, 0)
            elif kind == "B":
                self.b.PrependUint8Slot(slot, value, 0)
            else:
                self.b.PrependUint64Slot(slot, value, 0)
        return self.b.EndObject()

    def struct(self, fmt: str, values: list) -> int:
        data = struct.pack("<" + fmt, *values)
        self.b.Prep(8, len(data))
        for byte in reversed(data):
            self.b.PrependUint8(byte)
        return self.b.Offset()

    def tensor(self, t: tuple) -> int:
        data_type, sizes, strides, total = t
        slots = [("o", 0, self.b.CreateString(data_type)), ("o", 1, self.numbers(sizes, "I"))]
        if strides is not None:
            slots.append(("o", 2, self.numbers(strides, "I")))
        return self.table([*slots, ("Q", 3, total)])

    def attribute(self, kind: int, value: object) -> int:
        """kind: the AttributeFieldVariant member; value None: absent."""
        if value is None:
            return self.table([("B", 1, kind)])
        if kind in (3, 5, 6, 13):
            at = self.struct({3: "I", 5: "i", 6: "f", 13: "B"}[kind], [value])
        elif kind in (7, 8, 9):
            at = self.table([("o", 0, self.numbers(list(value), {7: "I", 8: "i", 9: "f"}[kind]))])
        elif kind == 12:  # a scalar union's 8 raw bytes
            at = self.table([("B", 0, 1), ("o", 1, self.struct("8B", list(value)))])
        elif kind == 1:  # (activation name, [(kind, value)])
            name, attrs = value
            at = self.table([("o", 0, self.b.CreateString(name)),
                             ("o", 1, self.offsets([self.attribute(*a) for a in attrs]))])
        else:
            raise ValueError(kind)
        return self.table([("B", 1, kind), ("o", 2, at)])

    def node(self, n: dict) -> int:
        name = self.b.CreateString(n["name"])
        ins, outs = self.strings(n.get("ins", [])), self.strings(n.get("outs", []))
        if "op" in n:
            op, tin, tout, attrs = n["op"]
            desc = self.table([("o", 0, self.b.CreateString(op)),
                               ("o", 1, self.offsets([self.tensor(t) for t in tin])),
                               ("o", 2, self.offsets([self.tensor(t) for t in tout])),
                               ("o", 3, self.offsets([self.attribute(*a) for a in attrs]))])
            kind = 1
        else:  # a constant stored by name
            inner = self.table([("o", 0, self.b.CreateString(n["const"]))])
            desc, kind = self.table([("B", 0, 1), ("o", 1, inner)]), 2
        return self.table([("B", 0, kind), ("o", 1, desc), ("o", 2, name), ("o", 3, ins),
                           ("o", 4, outs)])


def build(nodes: list[dict], inputs: list[str], outputs: list[str]) -> bytes:
    """A partition: nodes are {"name", "ins", "outs", "op": (type, [tensors], [tensors],
    [(kind, value)])} or {"name", "outs", "const": file name}."""
    w = _Writer()
    root = w.table([("o", 0, w.offsets([w.node(n) for n in nodes])), ("o", 1, w.strings(inputs)),
                    ("o", 2, w.strings(outputs))])
    w.b.Finish(root)
    return bytes(w.b.Output())


def shared_activations(depth: int) -> bytes:
    """An ELU node whose Alpha slot holds an activation whose attributes point twice at the same
    nested activation, ``depth`` levels down: 2**depth reads of a few hundred bytes."""
    w = _Writer()
    act = w.table([("o", 0, w.b.CreateString("DML_OPERATOR_ACTIVATION_RELU")),
                   ("o", 1, w.offsets([]))])
    for _ in range(depth):
        attr = w.table([("B", 1, 1), ("o", 2, act)])
        act = w.table([("o", 0, w.b.CreateString("DML_OPERATOR_ACTIVATION_ELU")),
                       ("o", 1, w.offsets([attr, attr]))])
    top = w.table([("B", 1, 1), ("o", 2, act)])
    desc = w.table([("o", 0, w.b.CreateString("DML_OPERATOR_ACTIVATION_ELU")),
                    ("o", 1, w.offsets([w.tensor(T5)])), ("o", 2, w.offsets([w.tensor(T5)])),
                    ("o", 3, w.offsets([top]))])
    node = w.table([("B", 0, 1), ("o", 1, desc), ("o", 2, w.b.CreateString("n")),
                    ("o", 3, w.strings(["x"])), ("o", 4, w.strings(["y"]))])
    root = w.table([("o", 0, w.offsets([node])), ("o", 1, w.strings(["x"])),
                    ("o", 2, w.strings(["y"]))])
    w.b.Finish(root)
    return bytes(w.b.Output())
