"""Binding tables, recording and execution through the faithful API: the happy paths, and every
binding rule violated once (DMLError, device removed afterwards, no buffer changed)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from descriptors import *
from emulator import (
    DXGI_ERROR_DEVICE_REMOVED,
    E_INVALIDARG,
    S_OK,
    Buffer,
    CommandList,
    CommandQueue,
    DMLCreateDevice1,
    DMLError,
)
from emulator.binding import Bound, check_overlaps
from emulator.validation import Tensor as ValidatedTensor

from .helpers import desc

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
X = np.arange(1, 9, dtype=np.float32)


def buf_binding(buffer, offset=0, size=None):
    return DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER,
                            Desc=DML_BUFFER_BINDING(Buffer=buffer, Offset=offset, SizeInBytes=size))


class Rig:
    """A reversing SLICE1 of 8 floats, with every object of the faithful path at hand."""

    def __init__(self, owned=False, alignment=0):
        self.dev = DMLCreateDevice1(feature_level="4_0")
        flags = DML_TENSOR_FLAG_OWNED_BY_DML if owned else DML_TENSOR_FLAG_NONE
        op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
            InputTensor=desc(F32, [8], flags=flags, alignment=alignment),
            OutputTensor=desc(F32, [8]), InputWindowOffsets=[0], InputWindowSizes=[8],
            InputWindowStrides=[-1]))
        self.compiled = self.dev.CompileOperator(self.dev.CreateOperator(op))
        self.init = self.dev.CreateOperatorInitializer([self.compiled])
        self.inp = Buffer(128)
        self.inp.numpy(np.float32)[:8] = X
        self.out = Buffer(128)
        self.recorder = self.dev.CreateCommandRecorder()
        self.list = CommandList()
        self.owned = owned

    def table(self, dispatchable):
        need = dispatchable.GetBindingProperties().RequiredDescriptorCount
        return self.dev.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=dispatchable,
                                                                  SizeInDescriptors=need))

    def record_init(self):
        t = self.table(self.init)
        if self.owned:
            t.BindInputs([DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER_ARRAY,
                                           Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[
                                               DML_BUFFER_BINDING(Buffer=self.inp)]))])
        self.recorder.RecordDispatch(self.list, self.init, t)
        return t

    def exec_table(self, inputs=None, outputs=None):
        t = self.table(self.compiled)
        t.BindInputs(inputs if inputs is not None else
                     [None if self.owned else buf_binding(self.inp)])
        t.BindOutputs(outputs if outputs is not None else [buf_binding(self.out)])
        return t

    def run(self):
        self.list.Close()
        CommandQueue().ExecuteCommandLists([self.list])

    def snapshot(self):
        return self.inp.numpy().copy(), self.out.numpy().copy()


def test_faithful_path_end_to_end():
    rig = Rig()
    rig.record_init()
    rig.run()
    rig.list.Reset()
    rig.recorder.RecordDispatch(rig.list, rig.compiled, rig.exec_table())
    rig.run()
    assert rig.out.numpy(np.float32)[:8].tolist() == X[::-1].tolist()
    assert not rig.out.numpy()[32:].any()  # nothing beyond the tensor was written
    rig.out.numpy()[:] = 0  # a closed list can be executed again
    CommandQueue().ExecuteCommandLists([rig.list])
    assert rig.out.numpy(np.float32)[:8].tolist() == X[::-1].tolist()
    assert rig.dev.GetDeviceRemovedReason() == S_OK


def test_owned_by_dml_inputs_are_captured_at_initialization():
    rig = Rig(owned=True)
    rig.record_init()
    rig.run()
    rig.inp.numpy(np.float32)[:8] = -1  # DirectML owns its copy from now on
    rig.list.Reset()
    rig.recorder.RecordDispatch(rig.list, rig.compiled, rig.exec_table())
    rig.run()
    assert rig.out.numpy(np.float32)[:8].tolist() == X[::-1].tolist()


def test_numpy_arrays_serve_as_buffers_at_offsets():
    rig = Rig()
    raw = np.zeros(96, np.uint8)
    raw[32:64].view(np.float32)[:] = X
    out = np.zeros(16, np.float32)
    rig.record_init()
    rig.recorder.RecordDispatch(rig.list, rig.compiled, rig.exec_table(
        inputs=[buf_binding(raw, 32, 32)], outputs=[DML_BUFFER_BINDING(Buffer=out, Offset=16)]))
    rig.run()
    assert out[4:12].tolist() == X[::-1].tolist() and not out[:4].any() and not out[12:].any()


# -- every rule, violated once ------------------------------------------------------------------
def bad_input_count(r):
    r.exec_table(inputs=[buf_binding(r.inp), buf_binding(r.inp)])


def bad_output_count(r):
    r.exec_table(outputs=[])


def bad_binding_type(r):
    r.exec_table(inputs=[DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER_ARRAY,
                                          Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[]))])


def none_for_required(r):
    r.exec_table(inputs=[None])


def null_buffer(r):
    r.exec_table(inputs=[buf_binding(None)])


def misaligned_offset(r):
    r.exec_table(inputs=[buf_binding(r.inp, 8)])


def range_past_the_end(r):
    r.exec_table(inputs=[buf_binding(r.inp, 96, 64)])


def size_too_small(r):
    r.exec_table(outputs=[buf_binding(r.out, 0, 16)])


def offset_past_guaranteed_alignment(r):
    r.exec_table(inputs=[buf_binding(r.inp, 16)])


def not_a_buffer(r):
    r.exec_table(inputs=[buf_binding(b"\0" * 64)])


def readonly_array(r):
    a = np.zeros(64, np.uint8)
    a.flags.writeable = False
    r.exec_table(inputs=[buf_binding(a)])


def owned_bound_at_execution(r):
    r.exec_table(inputs=[buf_binding(r.inp)])


def owned_not_bound_at_init(r):
    r.table(r.init).BindInputs([None])


def unowned_bound_at_init(r):
    r.table(r.init).BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[DML_BUFFER_BINDING(Buffer=r.inp)])])


def init_array_count(r):
    r.table(r.init).BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[DML_BUFFER_BINDING()] * 2)])


def init_wrong_binding_type(r):
    r.table(r.init).BindInputs([buf_binding(r.inp)])


def input_output_overlap(r):
    r.recorder.RecordDispatch(r.list, r.compiled, r.exec_table(outputs=[buf_binding(r.inp, 0, 64)]))


def input_output_partial_overlap(r):
    r.recorder.RecordDispatch(r.list, r.compiled,
                              r.exec_table(outputs=[buf_binding(r.inp, 16, 64)]))


def dispatch_before_initialization(r):
    r.recorder.RecordDispatch(r.list, r.compiled, r.exec_table())
    r.run()


def initialized_twice(r):
    r.record_init()
    r.record_init()
    r.run()


def second_list_initializes_again(r):
    r.record_init()
    r.run()
    r.list.Reset()
    r.record_init()
    r.run()


def too_few_descriptors(r):
    r.dev.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=r.compiled, SizeInDescriptors=1))
    r.dev.CreateCommandRecorder()  # not reached: CreateBindingTable raised


def table_for_another_dispatchable(r):
    r.recorder.RecordDispatch(r.list, r.compiled, r.record_init())


def outputs_never_bound(r):
    t = r.table(r.compiled)
    t.BindInputs([buf_binding(r.inp)])
    r.recorder.RecordDispatch(r.list, r.compiled, t)


def inputs_never_bound(r):
    t = r.table(r.compiled)
    t.BindOutputs([buf_binding(r.out)])
    r.recorder.RecordDispatch(r.list, r.compiled, t)


def record_into_closed_list(r):
    r.list.Close()
    r.record_init()


def execute_open_list(r):
    r.record_init()
    CommandQueue().ExecuteCommandLists([r.list])


def temporary_misaligned(r):
    r.exec_table().BindTemporaryResource(buf_binding(r.out, 16))


def persistent_wrong_type(r):
    r.exec_table().BindPersistentResource(DML_BINDING_DESC(
        Type=DML_BINDING_TYPE_BUFFER_ARRAY, Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[])))


def binding_desc_type_mismatch(r):
    r.exec_table(inputs=[DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER,
                                          Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[]))])


def foreign_dispatchable(r):
    other = Rig()
    r.recorder.RecordDispatch(r.list, other.compiled, r.table(r.compiled))


CASES = [
    # violation, owned input?, alignment, substrings of the message
    (bad_input_count, False, 0, ["BindInputs (DML_OPERATOR_SLICE1)", "2 bindings given",
                                 "has 1 (InputTensor)"]),
    (bad_output_count, False, 0, ["BindOutputs", "0 bindings given", "has 1 (OutputTensor)"]),
    (bad_binding_type, False, 0, ["binding 0 (InputTensor)", "Type = DML_BINDING_TYPE_BUFFER_ARRAY "
                                  "is invalid", "needs a DML_BINDING_TYPE_BUFFER binding"]),
    (none_for_required, False, 0, ["Type = DML_BINDING_TYPE_NONE is invalid"]),
    (null_buffer, False, 0, ["(InputTensor): Buffer is null"]),
    (misaligned_offset, False, 0, ["Offset = 8 is invalid: must be a multiple of 16 bytes"]),
    (range_past_the_end, False, 0, ["Offset + SizeInBytes = 96 + 64 = 160 is invalid",
                                    "inside the buffer (128 bytes)"]),
    (size_too_small, False, 0, ["(OutputTensor): SizeInBytes = 16 is invalid: must be at least 32"]),
    (offset_past_guaranteed_alignment, False, 64, ["Offset = 16 is invalid: must be a multiple of "
                                                   "64 bytes"]),
    (not_a_buffer, False, 0, ["Buffer = bytes is not a buffer resource"]),
    (readonly_array, False, 0, ["must be writable and C-contiguous"]),
    (owned_bound_at_execution, True, 0, ["flagged DML_TENSOR_FLAG_OWNED_BY_DML",
                                         "never at execution"]),
    (owned_not_bound_at_init, True, 0, ["operator initializer", "DML_BINDING_TYPE_NONE is invalid",
                                        "OWNED_BY_DML inputs (InputTensor) must be bound"]),
    (unowned_bound_at_init, False, 0, ["not flagged DML_TENSOR_FLAG_OWNED_BY_DML",
                                       "needs a null Buffer"]),
    (init_array_count, True, 0, ["BindingCount = 2 is invalid", "one entry per input"]),
    (init_wrong_binding_type, True, 0, ["DML_BINDING_TYPE_BUFFER_ARRAY binding (or NONE)"]),
    (input_output_overlap, False, 0, ["input InputTensor and output OutputTensor overlap",
                                      "does not support in-place execution"]),
    (input_output_partial_overlap, False, 0, ["overlap"]),
    (dispatch_before_initialization, False, 0, ["DML_OPERATOR_SLICE1", "dispatched before it was "
                                                "initialized"]),
    (initialized_twice, False, 0, ["already initialized", "exactly once"]),
    (second_list_initializes_again, False, 0, ["already initialized"]),
    (too_few_descriptors, False, 0, ["SizeInDescriptors = 1 is invalid",
                                     "RequiredDescriptorCount is 2"]),
    (table_for_another_dispatchable, False, 0, ["bindingTable must be a binding table created for "
                                                "this dispatchable"]),
    (outputs_never_bound, False, 0, ["outputs were never bound (BindOutputs)"]),
    (inputs_never_bound, False, 0, ["inputs were never bound (BindInputs)"]),
    (record_into_closed_list, False, 0, ["the command list is closed"]),
    (execute_open_list, False, 0, ["must be closed (Close())"]),
    (temporary_misaligned, False, 0, ["BindTemporaryResource", "Offset = 16 is invalid: must be a "
                                      "multiple of 256 bytes"]),
    (persistent_wrong_type, False, 0, ["BindPersistentResource", "Type = "
                                       "DML_BINDING_TYPE_BUFFER_ARRAY is invalid"]),
    (binding_desc_type_mismatch, False, 0, ["a DML_BINDING_TYPE_BUFFER binding needs Desc to be a "
                                            "DML_BUFFER_BINDING"]),
    (foreign_dispatchable, False, 0, ["dispatchable must be a compiled operator, compiled graph "
                                      "or operator initializer of this device"]),
]


@pytest.mark.parametrize("violation,owned,alignment,texts", CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_binding_rule(violation, owned, alignment, texts):
    rig = Rig(owned=owned, alignment=alignment)
    before = rig.snapshot()
    with pytest.raises(DMLError) as info:
        violation(rig)
    assert info.value.hresult == E_INVALIDARG, str(info.value)
    for text in texts:
        assert text in str(info.value), (text, str(info.value))
    for b, a in zip(before, rig.snapshot()):
        np.testing.assert_array_equal(a, b)  # a failed call changes no buffer
    if violation in (too_few_descriptors, record_into_closed_list, execute_open_list):
        return  # HRESULT-returning (or D3D12) calls: they fail without removing the device
    assert rig.dev.GetDeviceRemovedReason() == E_INVALIDARG
    with pytest.raises(DMLError) as removed:
        rig.dev.CreateOperator(DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC()))
    assert removed.value.hresult == DXGI_ERROR_DEVICE_REMOVED


def test_a_failing_list_runs_none_of_its_commands():
    """The second dispatch fails (not initialized): the first, valid one must not have run."""
    good, bad = Rig(), Rig()
    good.record_init()
    good.run()
    both = CommandList()
    good.recorder.RecordDispatch(both, good.compiled, good.exec_table())
    other = good.dev.CompileOperator(good.compiled.operator)  # compiled but never initialized
    t = good.table(other)
    t.BindInputs([buf_binding(good.inp)])
    t.BindOutputs([buf_binding(bad.out)])
    good.recorder.RecordDispatch(both, other, t)
    both.Close()
    with pytest.raises(DMLError, match="dispatched before it was initialized"):
        CommandQueue().ExecuteCommandLists([both])
    assert not good.out.numpy().any() and not bad.out.numpy().any()


def bound(resource, offset, extent):
    return Bound(resource, offset, extent, extent)


T44 = ValidatedTensor(DML_TENSOR_DATA_TYPE_FLOAT32, (4, 4), (4, 1), False, 64,
                      DML_TENSOR_FLAG_NONE, 4)


def test_overlap_rules_for_outputs_and_in_place():
    res = np.zeros(256, np.uint8)
    a, b, c = bound(res, 0, 64), bound(res, 32, 64), bound(res, 128, 64)

    def s(name, b, t=T44):
        return (name, t, b)

    check_overlaps("w", [s("I", a)], [s("O1", c), s("O2", bound(res, 192, 64))], in_place=False)
    with pytest.raises(DMLError, match="outputs O1 and O2 overlap"):
        check_overlaps("w", [], [s("O1", a), s("O2", b)], in_place=False)
    check_overlaps("w", [s("I", a)], [s("O", bound(res, 0, 64))], in_place=True)  # identical: ok
    with pytest.raises(DMLError, match="in-place execution needs identical regions"):
        check_overlaps("w", [s("I", a)], [s("O", b)], in_place=True)
    # The identical region as a different tensor: elements would be overwritten before read.
    transposed = dataclasses.replace(T44, strides=(1, 4), explicit_strides=True)
    as_ints = dataclasses.replace(T44, data_type=DML_TENSOR_DATA_TYPE_INT32)
    for other_tensor in (transposed, as_ints):
        with pytest.raises(DMLError, match="element-for-element identical"):
            check_overlaps("w", [s("I", a)], [s("O", bound(res, 0, 64), other_tensor)], True)
    other = np.zeros(256, np.uint8)
    check_overlaps("w", [s("I", a)], [s("O", bound(other, 0, 64))], in_place=False)
    # Views of one array are one resource: overlap is judged by memory address.
    check_overlaps("w", [s("I", bound(res[:128], 0, 64))], [s("O", bound(res[64:], 0, 64))],
                   False)
    with pytest.raises(DMLError, match="overlap"):
        check_overlaps("w", [s("I", bound(res[:128], 0, 80))], [s("O", bound(res[64:], 0, 64))],
                       False)


def test_in_place_with_a_transposed_output_is_refused_end_to_end():
    """RELU runs in place, but not into the same bytes read as another layout."""
    dev = DMLCreateDevice1()
    x = np.arange(16, dtype=np.float32) - 8
    buf = Buffer.from_array(x)
    before = buf.numpy().copy()
    relu = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_RELU_OPERATOR_DESC(
        InputTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, [4, 4]),
        OutputTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, [4, 4], [1, 4])))
    with pytest.raises(DMLError, match="element-for-element identical"):
        dev.execute(relu, [buf], [buf])
    assert np.array_equal(buf.numpy(), before)
    same = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_RELU_OPERATOR_DESC(
        InputTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, [4, 4]),
        OutputTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, [4, 4])))
    DMLCreateDevice1().execute(same, [buf], [buf])
    assert np.array_equal(buf.numpy(np.float32), np.maximum(x, 0))


def test_binding_table_reset_and_initializer_reset():
    rig = Rig()
    t = rig.dev.CreateBindingTable(None)
    t.Reset(DML_BINDING_TABLE_DESC(Dispatchable=rig.init, SizeInDescriptors=2))
    assert t.dispatchable is rig.init
    rig.init.Reset([])
    assert rig.init.GetBindingProperties().RequiredDescriptorCount == 0
    with pytest.raises(DMLError, match=r"operators\[0\] must be an IDMLCompiledOperator"):
        rig.init.Reset([rig.compiled.operator])


def test_an_initializer_reset_invalidates_its_binding_tables():
    """Issue 11 item 1: a table bound before IDMLOperatorInitializer::Reset was paired with the new
    operators unchecked (a 16-byte binding became the owned copy of a large input: SIGSEGV).
    Recording or binding through such a table fails (both are void in C: the device is removed)."""
    def small_then_reset() -> tuple[Rig, object]:
        rig = Rig(owned=True)
        t = rig.table(rig.init)
        t.BindInputs([DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER_ARRAY,
                                       Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[
                                           DML_BUFFER_BINDING(Buffer=rig.inp)]))])
        big = rig.dev.CompileOperator(rig.dev.CreateOperator(DML_OPERATOR_DESC(
            Desc=DML_SLICE1_OPERATOR_DESC(
                InputTensor=desc(F32, [1 << 20], flags=DML_TENSOR_FLAG_OWNED_BY_DML),
                OutputTensor=desc(F32, [8]), InputWindowOffsets=[0], InputWindowSizes=[8],
                InputWindowStrides=[1]))))
        rig.init.Reset([big])
        return rig, t

    rig, t = small_then_reset()
    with pytest.raises(DMLError, match="initializer was Reset after this binding table"):
        rig.recorder.RecordDispatch(rig.list, rig.init, t)
    assert rig.dev.GetDeviceRemovedReason() == E_INVALIDARG
    rig, t = small_then_reset()
    with pytest.raises(DMLError, match="initializer was Reset after this table"):
        t.BindInputs([None])
    # A table Reset for the initializer's new state binds and runs as usual.
    rig = Rig(owned=True)
    t = rig.table(rig.init)
    rig.init.Reset([rig.compiled])
    t.Reset(DML_BINDING_TABLE_DESC(Dispatchable=rig.init, SizeInDescriptors=2))
    t.BindInputs([DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER_ARRAY,
                                   Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[
                                       DML_BUFFER_BINDING(Buffer=rig.inp)]))])
    rig.recorder.RecordDispatch(rig.list, rig.init, t)
    rig.recorder.RecordDispatch(rig.list, rig.compiled, rig.exec_table())
    rig.run()
    assert np.array_equal(rig.out.numpy(np.float32)[:8], X[::-1])
    assert rig.dev.GetDeviceRemovedReason() == S_OK


def test_a_command_whose_bindings_no_longer_cover_its_tensors_is_refused_before_any_write():
    """Defence in depth: every command is re-validated against its dispatchable at execute."""
    from emulator.execution import OperatorDispatch

    rig = Rig()
    rig.record_init()
    rig.run()
    good = OperatorDispatch(rig.compiled, (Bound(rig.inp.numpy(), 0, 32, 32),),
                            (Bound(rig.out.numpy(), 0, 32, 32),))
    short = OperatorDispatch(rig.compiled, (Bound(rig.inp.numpy(), 0, 16, 16),),
                             (Bound(rig.out.numpy(), 0, 32, 32),))
    missing = OperatorDispatch(rig.compiled, (None,), (Bound(rig.out.numpy(), 0, 32, 32),))
    for bad in (short, missing):
        lst = CommandList()
        lst._record(good)
        lst._record(bad)
        lst.Close()
        with pytest.raises(DMLError, match="no longer match"):
            CommandQueue().ExecuteCommandLists([lst])
        assert not rig.out.numpy().any()


def test_an_offset_past_the_end_names_the_offset():
    rig = Rig()
    rig.record_init()
    with pytest.raises(DMLError, match=r"Offset = 256 is invalid: it lies past the end of the "
                                       r"buffer \(128 bytes\)"):
        rig.exec_table(inputs=[buf_binding(rig.inp, offset=256)])
