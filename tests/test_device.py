"""The emulated device: creation and feature levels, CheckFeatureSupport, operator creation
errors, bad tensor descs, and the Pythonic layer."""

from __future__ import annotations

import re

import numpy as np
import pytest

from descriptors import *
from emulator import (
    DXGI_ERROR_DEVICE_REMOVED,
    DXGI_ERROR_UNSUPPORTED,
    E_INVALIDARG,
    S_OK,
    Buffer,
    DMLCreateDevice,
    DMLCreateDevice1,
    DMLError,
    min_feature_level,
)

from .helpers import desc

F32 = DML_TENSOR_DATA_TYPE_FLOAT32


def copy_op(i, o=None, n=None):
    """An identity SLICE1 of 1-D tensors (or of ``i``'s rank) whose input desc is ``i``."""
    sizes = list(i.Desc.Sizes) if isinstance(i, DML_TENSOR_DESC) else [4]
    rank = n or len(sizes)
    return DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=i, OutputTensor=o or desc(F32, sizes), InputWindowOffsets=[0] * rank,
        InputWindowSizes=sizes, InputWindowStrides=[1] * rank))


# -- creation ----------------------------------------------------------------------------------
def test_default_level_is_6_4(monkeypatch):
    monkeypatch.delenv("DML_EMULATOR_FEATURE_LEVEL", raising=False)
    assert DMLCreateDevice().feature_level == DML_FEATURE_LEVEL_6_4
    assert DMLCreateDevice1().feature_level == DML_FEATURE_LEVEL_6_4


@pytest.mark.parametrize("text", ["3_1", "3.1", "0x3100", "DML_FEATURE_LEVEL_3_1"])
def test_env_variable_selects_the_level(monkeypatch, text):
    monkeypatch.setenv("DML_EMULATOR_FEATURE_LEVEL", text)
    assert DMLCreateDevice().feature_level == DML_FEATURE_LEVEL_3_1
    assert DMLCreateDevice1(feature_level="2_1").feature_level == DML_FEATURE_LEVEL_2_1


def test_bad_env_variable_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DML_EMULATOR_FEATURE_LEVEL", "3_7")
    with pytest.raises(DMLError, match="'3_7' is not a DirectML feature level") as info:
        DMLCreateDevice()
    assert info.value.hresult == E_INVALIDARG


@pytest.mark.parametrize("value, shown", [
    (3.1, "a float"), ([1], "a list"), (None, "a NoneType"), (True, "a bool"),
    (float("inf"), "a float"), (10**5000, "a huge integer"), (0x3700, "0x3700")],
    ids=["float", "list", "none", "bool", "inf", "huge", "unknown"])
def test_a_feature_level_of_any_python_type_is_a_dmlerror(value, shown):
    """Issue 11 item 9: 3.1, a list or a huge int raised AttributeError/OverflowError before."""
    for kwargs in ({"feature_level": value}, {"minimumFeatureLevel": value}):
        if value is None and "feature_level" in kwargs:
            continue  # None is the default: $DML_EMULATOR_FEATURE_LEVEL or 6_4
        with pytest.raises(DMLError, match=f"{shown} is not a DirectML feature level"):
            DMLCreateDevice1(**kwargs)
    assert DMLCreateDevice1(feature_level=np.uint16(0x3100)).feature_level == DML_FEATURE_LEVEL_3_1


@pytest.mark.parametrize("level", ["1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1",
                                   "5_2", "6_0", "6_1", "6_2", "6_3", "6_4"])
def test_every_emulated_level(level):
    assert DMLCreateDevice1(feature_level=level).feature_level.name.endswith(level)


def test_minimum_levels_and_flags():
    with pytest.raises(DMLError, match="minimumFeatureLevel = DML_FEATURE_LEVEL_3_1 is higher") as info:
        DMLCreateDevice1(None, DML_CREATE_DEVICE_FLAG_NONE, DML_FEATURE_LEVEL_3_1, feature_level="3_0")
    assert info.value.hresult == DXGI_ERROR_UNSUPPORTED
    dev = DMLCreateDevice1(None, DML_CREATE_DEVICE_FLAG_DEBUG, DML_FEATURE_LEVEL_3_0,
                           feature_level="3_0")
    assert dev.feature_level == DML_FEATURE_LEVEL_3_0
    with pytest.raises(DMLError, match="flags = 2 is invalid") as info:
        DMLCreateDevice1(None, 2)
    assert info.value.hresult == E_INVALIDARG


# -- CheckFeatureSupport -----------------------------------------------------------------------
def test_feature_levels_query_returns_the_highest_requested_supported():
    dev = DMLCreateDevice1(feature_level="3_1")
    q = DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=[
        DML_FEATURE_LEVEL_1_0, DML_FEATURE_LEVEL_3_0, DML_FEATURE_LEVEL_4_0, DML_FEATURE_LEVEL_2_1])
    got = dev.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, q)
    assert got.MaxSupportedFeatureLevel == DML_FEATURE_LEVEL_3_0  # never one that was not asked
    one = DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=[DML_FEATURE_LEVEL_3_1])
    assert dev.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, one).MaxSupportedFeatureLevel == 0x3100


@pytest.mark.parametrize("query,hresult,text", [
    (DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=[]), E_INVALIDARG,
     "RequestedFeatureLevelCount = 0"),
    (DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevelCount=3,
                                      RequestedFeatureLevels=[0x1000]), E_INVALIDARG,
     "RequestedFeatureLevelCount = 3"),
    (DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=[0x1234]), E_INVALIDARG,
     "RequestedFeatureLevels[0] = 4660 is invalid: must be a DML_FEATURE_LEVEL"),
    (DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=[DML_FEATURE_LEVEL_5_0]),
     DXGI_ERROR_UNSUPPORTED, "none of the requested feature levels"),
    (DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT(DataType=F32), E_INVALIDARG,
     "needs a DML_FEATURE_QUERY_FEATURE_LEVELS query"),
])
def test_feature_levels_query_errors(query, hresult, text):
    dev = DMLCreateDevice1(feature_level="4_0")
    with pytest.raises(DMLError) as info:
        dev.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, query)
    assert info.value.hresult == hresult and text in str(info.value)


def test_data_type_support_query():
    dev = DMLCreateDevice1(feature_level="4_0")

    def supported(dt):
        q = DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT(DataType=dt)
        return dev.CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, q).IsSupported

    for dt in DML_TENSOR_DATA_TYPE:
        if dt == DML_TENSOR_DATA_TYPE_UNKNOWN:
            with pytest.raises(DMLError, match="DataType = DML_TENSOR_DATA_TYPE_UNKNOWN is not a data type"):
                supported(dt)
        else:
            assert supported(dt) == (dt <= DML_TENSOR_DATA_TYPE_INT64), dt.name
    with pytest.raises(DMLError) as info:
        dev.CheckFeatureSupport(7, None)
    assert info.value.hresult == DXGI_ERROR_UNSUPPORTED


# -- CreateOperator errors ---------------------------------------------------------------------
def test_a_valid_operator_without_a_kernel_fails_at_compile_with_e_notimpl(monkeypatch):
    import dataclasses

    from emulator.registry import REGISTRY

    # Every operator of the table may come to execute; the path is kept tested by taking the
    # kernel module away from one operator's spec (what a validated-only operator looks like).
    spec = REGISTRY[DML_OPERATOR_MATRIX_MULTIPLY_INTEGER]
    monkeypatch.setitem(REGISTRY, DML_OPERATOR_MATRIX_MULTIPLY_INTEGER,
                        dataclasses.replace(spec, module=None))
    dev = DMLCreateDevice1()
    u8, i32 = DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_INT32
    op = dev.CreateOperator(DML_OPERATOR_DESC(Desc=DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC(
        ATensor=desc(u8, [1, 1, 2, 3]), BTensor=desc(u8, [1, 1, 3, 2]),
        OutputTensor=desc(i32, [1, 1, 2, 2]))))
    with pytest.raises(DMLError, match="DML_OPERATOR_MATRIX_MULTIPLY_INTEGER is valid at "
                                       "DML_FEATURE_LEVEL_6_4 but not yet executable by "
                                       "dml-emulator: it has no CPU kernel yet") as info:
        dev.CompileOperator(op)
    assert info.value.hresult == 0x80004001 and info.value.name == "E_NOTIMPL"
    assert dev.GetDeviceRemovedReason() == 0  # an HRESULT-returning call: the device stays
    with pytest.raises(DMLError, match="must be a DML_ELEMENT_WISE_ADD_OPERATOR_DESC, not object"):
        dev.CreateOperator(DML_OPERATOR_DESC(Type=DML_OPERATOR_ELEMENT_WISE_ADD, Desc=object()))


@pytest.mark.parametrize("op,text", [
    (DML_OPERATOR_DESC(Type=999, Desc=None), "Type = 999 is not a DML_OPERATOR_TYPE"),
    (DML_OPERATOR_DESC(Type=DML_OPERATOR_INVALID, Desc=None), "DML_OPERATOR_INVALID"),
    (DML_OPERATOR_DESC(Type=DML_OPERATOR_SLICE1, Desc=None), "Desc is null"),
    (DML_OPERATOR_DESC(Type=DML_OPERATOR_SLICE, Desc=DML_SLICE1_OPERATOR_DESC()),
     "Type = DML_OPERATOR_SLICE does not match its Desc, a DML_SLICE1_OPERATOR_DESC"),
    (DML_OPERATOR_DESC(Type=DML_OPERATOR_SLICE1, Desc={"InputTensor": None}),
     "must be a DML_SLICE1_OPERATOR_DESC, not dict"),
    ("slice", "expected a DML_OPERATOR_DESC, got str"),
    (DML_SLICE1_OPERATOR_DESC(OutputTensor=desc(F32, [4]), InputWindowOffsets=[0],
                              InputWindowSizes=[4], InputWindowStrides=[1]),
     "DML_OPERATOR_SLICE1: InputTensor = null is invalid: this field is required"),
    (DML_SLICE1_OPERATOR_DESC(InputTensor=desc(F32, [4]), OutputTensor=desc(F32, [4]),
                              InputWindowOffsets=[0], InputWindowSizes=[4.0],
                              InputWindowStrides=[1]),
     "InputWindowSizes[0] = 4.0 is invalid: UINT values must be integers"),
    (DML_SLICE1_OPERATOR_DESC(InputTensor=desc(F32, [4]), OutputTensor=desc(F32, [4]),
                              InputWindowOffsets=[0], InputWindowSizes=[4],
                              InputWindowStrides=[2**31]),
     "InputWindowStrides[0] = 2147483648 is invalid: INT values lie in [-2147483648, 2147483647]"),
])
def test_malformed_operator_descs(op, text):
    with pytest.raises(DMLError) as info:
        DMLCreateDevice1().CreateOperator(op)
    assert info.value.hresult == E_INVALIDARG and text in str(info.value), str(info.value)


def buffer_desc(**kw):
    base = {"DataType": F32, "Sizes": (4,)}
    base.update(kw)
    return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(**base))


@pytest.mark.parametrize("tensor,text", [
    (buffer_desc(Sizes=(4, 0, 2)), "InputTensor.Sizes[1] = 0 is invalid: every size must be at least 1"),
    (buffer_desc(Sizes=(), DimensionCount=0), "InputTensor.DimensionCount = 0 is invalid: a tensor "
                                              "has 1 to 8 dimensions"),
    (buffer_desc(Sizes=(1,) * 9), "InputTensor.DimensionCount = 9 is invalid"),
    (buffer_desc(Sizes=(4, 4), DimensionCount=3), "InputTensor.Sizes = {4, 4} is invalid: must hold "
                                                  "exactly 3 values"),
    (buffer_desc(TotalTensorSizeInBytes=12), "InputTensor.TotalTensorSizeInBytes = 12 is invalid: "
                                             "must be at least DMLCalcBufferTensorSize(...) = 16"),
    (buffer_desc(TotalTensorSizeInBytes=18), "TotalTensorSizeInBytes = 18 is invalid: must be a "
                                             "multiple of 4"),
    (buffer_desc(Sizes=(65536, 65536)), "InputTensor.Sizes = {65536, 65536} is invalid: a tensor "
                                        "holds at most 4294967295 (2^32-1) elements"),
    (buffer_desc(GuaranteedBaseOffsetAlignment=3), "GuaranteedBaseOffsetAlignment = 3 is invalid: "
                                                   "must be 0 or a power of two"),
    (buffer_desc(GuaranteedBaseOffsetAlignment=2), "GuaranteedBaseOffsetAlignment = 2 is invalid: "
                                                   "must be 0 or a power of two at least the element "
                                                   "size (4 bytes)"),
    (buffer_desc(Strides=(1, 1)), "InputTensor.Strides = {1, 1} is invalid: must hold exactly 1"),
    (buffer_desc(Strides=(-1,)), "InputTensor.Strides[0] = -1 is invalid"),
    (buffer_desc(DataType=DML_TENSOR_DATA_TYPE_UNKNOWN), "InputTensor.DataType = DML_TENSOR_DATA_TYPE_UNKNOWN is invalid: not a "
                                                         "valid DML_TENSOR_DATA_TYPE"),
    (buffer_desc(Flags=4), "InputTensor.Flags = 4 is invalid"),
    (DML_TENSOR_DESC(Type=DML_TENSOR_TYPE_INVALID, Desc=None), "InputTensor.Type = "
                                                               "DML_TENSOR_TYPE_INVALID is invalid"),
    (np.zeros(4, np.float32), "InputTensor = ndarray is invalid: must be a DML_TENSOR_DESC"),
])
def test_bad_tensor_descs_are_rejected(tensor, text):
    rank = len(tensor.Desc.Sizes) if isinstance(tensor, DML_TENSOR_DESC) and tensor.Desc else 1
    op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=tensor, OutputTensor=desc(F32, [1] * max(rank, 1)),
        InputWindowOffsets=[0] * max(rank, 1), InputWindowSizes=[1] * max(rank, 1),
        InputWindowStrides=[1] * max(rank, 1)))
    with pytest.raises(DMLError) as info:
        DMLCreateDevice1().CreateOperator(op)
    assert info.value.hresult == E_INVALIDARG and text in str(info.value), str(info.value)
    assert "DML_OPERATOR_SLICE1" in str(info.value)


def test_owned_by_dml_output_is_rejected():
    op = copy_op(desc(F32, [4]), desc(F32, [4], flags=DML_TENSOR_FLAG_OWNED_BY_DML))
    with pytest.raises(DMLError, match=r"OutputTensor\.Flags = DML_TENSOR_FLAG_OWNED_BY_DML is invalid: "
                                       "only input tensors may be owned by DML"):
        DMLCreateDevice1().CreateOperator(op)


def test_failed_create_does_not_remove_the_device():
    dev = DMLCreateDevice1()
    with pytest.raises(DMLError):
        dev.CreateOperator(copy_op(buffer_desc(Sizes=(0,))))
    assert dev.GetDeviceRemovedReason() == S_OK
    dev.CreateOperator(copy_op(desc(F32, [4])))


def test_compile_flags():
    dev = DMLCreateDevice1()
    op = dev.CreateOperator(copy_op(desc(F32, [4])))
    flags = DML_EXECUTION_FLAG_DISABLE_META_COMMANDS | DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION
    assert dev.CompileOperator(op, flags).flags == flags
    with pytest.raises(DMLError, match="flags = 8 is invalid"):
        dev.CompileOperator(op, 8)
    with pytest.raises(DMLError, match="op must be an IDMLOperator created by this device"):
        DMLCreateDevice1().CompileOperator(op, 0)
    props = dev.CompileOperator(op).GetBindingProperties()
    assert (props.RequiredDescriptorCount, props.TemporaryResourceSize,
            props.PersistentResourceSize) == (2, 0, 0)


# -- the Pythonic layer and buffers ------------------------------------------------------------
def test_execute_returns_strided_views_and_accepts_mappings():
    dev = DMLCreateDevice1()
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=desc(DML_TENSOR_DATA_TYPE_INT16, [2, 3], [1, 2]),
        InputWindowOffsets=[0, 0], InputWindowSizes=[2, 3], InputWindowStrides=[1, 1]))
    [out] = dev.execute(op, {"InputTensor": x})
    np.testing.assert_array_equal(out, x)  # logical values, whatever the layout
    assert out.strides == (2, 4)
    with pytest.raises(DMLError, match=r"2 inputs given; the operator has 1 \(InputTensor\)"):
        dev.execute(op, [x, x])
    with pytest.raises(DMLError, match=r"\['Input'\] are not bind points"):
        dev.execute(op, {"Input": x})


def test_execute_pads_small_and_copies_readonly_inputs():
    dev = DMLCreateDevice1()
    x = np.array([1, 2, 3], np.uint8)  # 3 bytes; the tensor's total is 4
    x.flags.writeable = False
    op = copy_op(desc(DML_TENSOR_DATA_TYPE_UINT8, [3]), desc(DML_TENSOR_DATA_TYPE_UINT8, [3]))
    [out] = dev.execute(op, [x])
    assert out.tolist() == [1, 2, 3]


def test_buffer_views_and_from_array():
    b = Buffer(64)
    assert b.size_in_bytes == 64 and not b.numpy().any()
    b.numpy(np.float32, (4,), offset=16)[:] = [1, 2, 3, 4]
    assert b.numpy(np.float32)[4:8].tolist() == [1, 2, 3, 4]
    c = Buffer.from_array(np.arange(3, dtype=np.uint16))
    assert c.size_in_bytes == 8 and c.numpy(np.uint16).tolist() == [0, 1, 2, 0]
    assert Buffer(10).numpy().ctypes.data % 256 == 0


def test_device_removed_is_sticky_and_keeps_the_first_cause():
    dev = DMLCreateDevice1()
    table = dev.CreateBindingTable(None)
    with pytest.raises(DMLError, match="the table has no dispatchable"):
        table.BindInputs([])
    assert dev.GetDeviceRemovedReason() == E_INVALIDARG
    for call in (lambda: dev.CreateOperator(copy_op(desc(F32, [4]))), dev.CreateCommandRecorder,
                 lambda: dev.CreateBindingTable(None), lambda: table.BindOutputs([])):
        with pytest.raises(DMLError) as info:
            call()
        assert info.value.hresult == DXGI_ERROR_DEVICE_REMOVED
        assert "the table has no dispatchable" in str(info.value)
    assert dev.GetDeviceRemovedReason() == E_INVALIDARG


def test_execute_binds_owned_inputs_at_initialization():
    dev = DMLCreateDevice1()
    x = np.arange(4, dtype=np.float32)
    op = copy_op(desc(F32, [4], flags=DML_TENSOR_FLAG_OWNED_BY_DML))
    [out] = dev.execute(op, [x])
    assert out.tolist() == [0, 1, 2, 3]
    with pytest.raises(DMLError, match="input InputTensor is None, but the operator desc has this"):
        dev.execute(op, [None])


def test_execute_may_omit_trailing_absent_optional_inputs():
    dev = DMLCreateDevice1()
    x = np.arange(8, dtype=np.float32)
    op = DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x), Axes=[0],
        NormalizeVariance=False, Epsilon=0.0))
    [a] = dev.execute(op, [x])
    [b] = dev.execute(op, [x, None, None])
    np.testing.assert_array_equal(a, b)
    with_scale = DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), ScaleTensor=tensor_desc(x), BiasTensor=tensor_desc(x),
        OutputTensor=tensor_desc(x), Axes=[0], NormalizeVariance=False, Epsilon=0.0))
    with pytest.raises(DMLError, match="1 inputs given; the operator has 3"):
        dev.execute(with_scale, [x])


@pytest.mark.parametrize("sizes,strides,clash", [
    ([2, 2], [1, 1], "elements {0, 1} and {1, 0} share memory"),
    ([4], [0], "elements {0} and {1} share memory"),
    ([3, 4], [4, 2], "elements {0, 2} and {1, 0} share memory"),  # 0*4 + 2*2 == 1*4 + 0*2
])
def test_output_elements_must_not_overlap(sizes, strides, clash):
    op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=desc(F32, sizes), OutputTensor=desc(F32, sizes, strides),
        InputWindowOffsets=[0] * len(sizes), InputWindowSizes=sizes,
        InputWindowStrides=[1] * len(sizes)))
    with pytest.raises(DMLError, match=r"OutputTensor\.Strides = .* is invalid: " + re.escape(clash)):
        DMLCreateDevice1().CreateOperator(op)


def test_interleaved_outputs_that_do_not_overlap_are_accepted():
    # sizes {3, 2} with strides {2, 3} address 0, 3, 2, 5, 4, 7: distinct, though interleaved
    op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=desc(F32, [3, 2]), OutputTensor=desc(F32, [3, 2], [2, 3]),
        InputWindowOffsets=[0, 0], InputWindowSizes=[3, 2], InputWindowStrides=[1, 1]))
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    [y] = DMLCreateDevice1().execute(op, [x])
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("level,make,field", [
    ("5_0", lambda: DML_TOP_K1_OPERATOR_DESC(desc(DML_TENSOR_DATA_TYPE_INT64, [1, 6]),
                                             desc(DML_TENSOR_DATA_TYPE_INT64, [1, 3]),
                                             desc(DML_TENSOR_DATA_TYPE_UINT64, [1, 3]), 1, 3, 1),
     "InputTensor.DataType = DML_TENSOR_DATA_TYPE_INT64"),
    ("5_0", lambda: DML_TOP_K_OPERATOR_DESC(desc(DML_TENSOR_DATA_TYPE_INT64, [1, 1, 1, 6]),
                                            desc(DML_TENSOR_DATA_TYPE_INT64, [1, 1, 1, 3]),
                                            desc(DML_TENSOR_DATA_TYPE_UINT64, [1, 1, 1, 3]), 3, 3),
     "InputTensor.DataType = DML_TENSOR_DATA_TYPE_INT64"),
])
def test_a_type_a_later_band_admits_but_the_kernel_lacks_is_e_notimpl_at_compile(
        level, make, field, monkeypatch):
    """No operator lacks a type of its bands any more (TOP_K's 64-bit values were the last);
    narrowing TOP_K's kernel types to the eight 32-bit-or-narrower ones makes the gap again."""
    from emulator.ops import common, top_k, top_k1

    op = DML_OPERATOR_DESC(Desc=make())
    ok = DMLCreateDevice1(feature_level=level)
    ok.CompileOperator(ok.CreateOperator(op))  # executable as it is
    for module in (top_k, top_k1):
        monkeypatch.setattr(module, "KERNEL_TYPES", common.EIGHT_TYPES)
    below = [lv for lv in ("4_1", "5_0") if lv < level][-1]
    with pytest.raises(DMLError, match=f"DML_FEATURE_LEVEL_{level} or later allows it"):
        DMLCreateDevice1(feature_level=below).CreateOperator(op)
    dev = DMLCreateDevice1(feature_level=level)
    created = dev.CreateOperator(op)  # valid at the level that admits the type
    with pytest.raises(DMLError, match=f"not yet executable by dml-emulator: its kernel does not "
                                       f"handle {field}") as info:
        dev.CompileOperator(created)
    assert info.value.name == "E_NOTIMPL" and dev.GetDeviceRemovedReason() == 0


# -- execute() judges what it is given (it never reinterprets bytes silently) ------------------
def _identity_slice(data_type, sizes):
    n = len(sizes)
    return DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        desc(data_type, sizes), desc(data_type, sizes), n, [0] * n, list(sizes), [1] * n))


@pytest.mark.parametrize("given,text", [
    (np.arange(6, dtype=np.int64).reshape(2, 3),
     "input InputTensor: a int64 array was given for a FLOAT32 tensor"),
    (np.zeros((2, 3), np.float64), "a float64 array was given for a FLOAT32 tensor"),
    (np.zeros((3, 2), np.float32), "an array of shape (3, 2) was given; the tensor's Sizes are (2, 3)"),
    ([1, 2, 3], "3 values given; the tensor's Sizes (2, 3) hold 6"),
    ("abc", "'abc' cannot be converted to FLOAT32"),
    (np.zeros(20, np.uint8), "20 bytes given; the tensor needs 24"),
    (np.array([object()] * 6).reshape(2, 3), "a object array was given"),
])
def test_execute_refuses_arrays_that_do_not_fit_the_tensor(given, text):
    dev = DMLCreateDevice1()
    with pytest.raises(DMLError, match=re.escape(text)):
        dev.execute(_identity_slice(F32, [2, 3]), [given])
    assert dev.GetDeviceRemovedReason() == 0  # execute's own argument errors keep the device


def test_execute_converts_numbers_and_lists_and_keeps_bytes_as_bytes():
    dev = DMLCreateDevice1()
    op = _identity_slice(F32, [2, 3])
    [y] = dev.execute(op, [[[1, 2, 3], [4, 5, 6]]])
    assert y.dtype == np.float32 and y.tolist() == [[1, 2, 3], [4, 5, 6]]
    [y] = dev.execute(op, [[1, 2, 3, 4, 5, 6]])
    assert y.shape == (2, 3)
    [y] = dev.execute(op, [2.5])
    assert (y == 2.5).all()
    x = np.arange(6, dtype=np.float32)
    [y] = dev.execute(op, [x.view(np.uint8)])  # raw bytes: their meaning is the desc's
    assert y.ravel().tolist() == x.tolist()
    [y] = dev.execute(op, [Buffer.from_array(x)])
    assert y.ravel().tolist() == x.tolist()
    with pytest.raises(DMLError, match=r"\{300\} cannot be converted to UINT8"):
        dev.execute(_identity_slice(DML_TENSOR_DATA_TYPE_UINT8, [1]), [[300]])
    with pytest.raises(DMLError, match="output OutputTensor: list given"):
        dev.execute(op, [x.reshape(2, 3)], [[0] * 6])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_ndarray_subclasses_are_their_plain_data():
    dev = DMLCreateDevice1()
    op = _identity_slice(F32, [2, 3])
    m = np.matrix(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = np.matrix(np.zeros((2, 3), np.float32))
    dev.execute(op, [m], [out])
    assert np.asarray(out).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_hello_directml_operator_is_created_at_every_level():
    """Microsoft's HelloDirectML: an ELEMENT_WISE_IDENTITY of a {1, 2, 3, 4} FLOAT32 tensor."""
    t = DML_TENSOR_DESC(DML_TENSOR_TYPE_BUFFER, DML_BUFFER_TENSOR_DESC(
        DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_FLAG_NONE, 4, [1, 2, 3, 4], None,
        DMLCalcBufferTensorSize(DML_TENSOR_DATA_TYPE_FLOAT32, 4, [1, 2, 3, 4]), 0))
    op_desc = DML_OPERATOR_DESC(DML_OPERATOR_ELEMENT_WISE_IDENTITY,
                                DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(t, t))
    assert min_feature_level(op_desc) == DML_FEATURE_LEVEL_1_0
    for level in ("1_0", "6_4"):
        assert DMLCreateDevice1(feature_level=level).CreateOperator(op_desc) is not None


@pytest.mark.parametrize("value", [5, "ab", 2.5, {1}], ids=["int", "str", "float", "set"])
def test_list_arguments_of_any_other_type_are_a_dmlerror(value):
    """Issue 11 item 9: count + pointer arguments given a non-sequence raised TypeError before."""
    from emulator import CommandQueue

    dev = DMLCreateDevice1()
    x = np.zeros(4, np.float32)
    relu = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_RELU_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x)))
    calls = [lambda: dev.CreateOperatorInitializer(value),
             lambda: CommandQueue().ExecuteCommandLists(value),
             lambda: dev.execute(relu, value)]
    compiled = dev.CompileOperator(dev.CreateOperator(relu))
    for method in ("BindInputs", "BindOutputs"):
        table = dev.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=compiled,
                                                              SizeInDescriptors=2))
        calls.append(lambda table=table, method=method: getattr(table, method)(value))
    for call in calls:
        with pytest.raises(DMLError, match=rf"{type(value).__name__} is invalid: must be a"):
            call()
