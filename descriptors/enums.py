"""Enumerations and constants of DirectML.h, with the header's numeric values.

Every enum is a Python ``IntEnum``/``IntFlag`` named like the C enum, whose members carry the full C
constant names (``DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_FLOAT32``), and every constant is also
exported at module level under its C name (``DML_TENSOR_DATA_TYPE_FLOAT32 == 1``), so C++ DirectML
code ports line by line. ``parse_enum`` accepts the short spellings used by DxDispatch model files.
"""

from __future__ import annotations

import enum
from typing import TypeVar

# DML_OPERATOR_TYPE is sequential from 0 in the header (6_4); this is its order.
_OPERATOR_NAMES = [
    "INVALID", "ELEMENT_WISE_IDENTITY", "ELEMENT_WISE_ABS", "ELEMENT_WISE_ACOS",
    "ELEMENT_WISE_ADD", "ELEMENT_WISE_ASIN", "ELEMENT_WISE_ATAN", "ELEMENT_WISE_CEIL",
    "ELEMENT_WISE_CLIP", "ELEMENT_WISE_COS", "ELEMENT_WISE_DIVIDE", "ELEMENT_WISE_EXP",
    "ELEMENT_WISE_FLOOR", "ELEMENT_WISE_LOG", "ELEMENT_WISE_LOGICAL_AND",
    "ELEMENT_WISE_LOGICAL_EQUALS", "ELEMENT_WISE_LOGICAL_GREATER_THAN",
    "ELEMENT_WISE_LOGICAL_LESS_THAN", "ELEMENT_WISE_LOGICAL_NOT", "ELEMENT_WISE_LOGICAL_OR",
    "ELEMENT_WISE_LOGICAL_XOR", "ELEMENT_WISE_MAX", "ELEMENT_WISE_MEAN", "ELEMENT_WISE_MIN",
    "ELEMENT_WISE_MULTIPLY", "ELEMENT_WISE_POW", "ELEMENT_WISE_CONSTANT_POW",
    "ELEMENT_WISE_RECIP", "ELEMENT_WISE_SIN", "ELEMENT_WISE_SQRT", "ELEMENT_WISE_SUBTRACT",
    "ELEMENT_WISE_TAN", "ELEMENT_WISE_THRESHOLD", "ELEMENT_WISE_QUANTIZE_LINEAR",
    "ELEMENT_WISE_DEQUANTIZE_LINEAR", "ACTIVATION_ELU", "ACTIVATION_HARDMAX",
    "ACTIVATION_HARD_SIGMOID", "ACTIVATION_IDENTITY", "ACTIVATION_LEAKY_RELU",
    "ACTIVATION_LINEAR", "ACTIVATION_LOG_SOFTMAX", "ACTIVATION_PARAMETERIZED_RELU",
    "ACTIVATION_PARAMETRIC_SOFTPLUS", "ACTIVATION_RELU", "ACTIVATION_SCALED_ELU",
    "ACTIVATION_SCALED_TANH", "ACTIVATION_SIGMOID", "ACTIVATION_SOFTMAX", "ACTIVATION_SOFTPLUS",
    "ACTIVATION_SOFTSIGN", "ACTIVATION_TANH", "ACTIVATION_THRESHOLDED_RELU", "CONVOLUTION",
    "GEMM", "REDUCE", "AVERAGE_POOLING", "LP_POOLING", "MAX_POOLING", "ROI_POOLING", "SLICE",
    "CAST", "SPLIT", "JOIN", "PADDING", "VALUE_SCALE_2D", "UPSAMPLE_2D", "GATHER",
    "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "TILE", "TOP_K", "BATCH_NORMALIZATION",
    "MEAN_VARIANCE_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "LP_NORMALIZATION", "RNN",
    "LSTM", "GRU", "ELEMENT_WISE_SIGN", "ELEMENT_WISE_IS_NAN", "ELEMENT_WISE_ERF",
    "ELEMENT_WISE_SINH", "ELEMENT_WISE_COSH", "ELEMENT_WISE_TANH", "ELEMENT_WISE_ASINH",
    "ELEMENT_WISE_ACOSH", "ELEMENT_WISE_ATANH", "ELEMENT_WISE_IF", "ELEMENT_WISE_ADD1",
    "ACTIVATION_SHRINK", "MAX_POOLING1", "MAX_UNPOOLING", "DIAGONAL_MATRIX", "SCATTER_ELEMENTS",
    "ONE_HOT", "RESAMPLE", "ELEMENT_WISE_BIT_SHIFT_LEFT", "ELEMENT_WISE_BIT_SHIFT_RIGHT",
    "ELEMENT_WISE_ROUND", "ELEMENT_WISE_IS_INFINITY", "ELEMENT_WISE_MODULUS_TRUNCATE",
    "ELEMENT_WISE_MODULUS_FLOOR", "FILL_VALUE_CONSTANT", "FILL_VALUE_SEQUENCE",
    "CUMULATIVE_SUMMATION", "REVERSE_SUBSEQUENCES", "GATHER_ELEMENTS", "GATHER_ND", "SCATTER_ND",
    "MAX_POOLING2", "SLICE1", "TOP_K1", "DEPTH_TO_SPACE1", "SPACE_TO_DEPTH1",
    "MEAN_VARIANCE_NORMALIZATION1", "RESAMPLE1", "MATRIX_MULTIPLY_INTEGER",
    "QUANTIZED_LINEAR_MATRIX_MULTIPLY", "CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION",
    "ELEMENT_WISE_BIT_AND", "ELEMENT_WISE_BIT_OR", "ELEMENT_WISE_BIT_XOR", "ELEMENT_WISE_BIT_NOT",
    "ELEMENT_WISE_BIT_COUNT", "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL",
    "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL", "ACTIVATION_CELU", "ACTIVATION_RELU_GRAD",
    "AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD", "RANDOM_GENERATOR", "NONZERO_COORDINATES",
    "RESAMPLE_GRAD", "SLICE_GRAD", "ADAM_OPTIMIZER", "ARGMIN", "ARGMAX", "ROI_ALIGN",
    "GATHER_ND1", "ELEMENT_WISE_ATAN_YX", "ELEMENT_WISE_CLIP_GRAD",
    "ELEMENT_WISE_DIFFERENCE_SQUARE", "LOCAL_RESPONSE_NORMALIZATION_GRAD", "CUMULATIVE_PRODUCT",
    "BATCH_NORMALIZATION_GRAD", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "DYNAMIC_QUANTIZE_LINEAR",
    "ROI_ALIGN1", "ROI_ALIGN_GRAD", "BATCH_NORMALIZATION_TRAINING",
    "BATCH_NORMALIZATION_TRAINING_GRAD", "ELEMENT_WISE_CLIP1", "ELEMENT_WISE_CLIP_GRAD1",
    "PADDING1", "ELEMENT_WISE_NEGATE", "ACTIVATION_GELU", "ACTIVATION_SOFTMAX1",
    "ACTIVATION_LOG_SOFTMAX1", "ACTIVATION_HARDMAX1", "RESAMPLE2", "RESAMPLE_GRAD1",
    "DIAGONAL_MATRIX1", "MULTIHEAD_ATTENTION", "LP_POOLING1", "AVERAGE_POOLING1",
    "ACTIVATION_SWISH", "ACTIVATION_HARD_SWISH", "QUANTIZED_LINEAR_AVERAGE_POOLING",
    "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "MEAN_VARIANCE_NORMALIZATION2", "MULTIHEAD_ATTENTION1",
    "QUANTIZE", "DEQUANTIZE", "RESAMPLE3", "FOLD", "UNFOLD",
]


def _members(prefix: str, pairs: dict[str, int]) -> dict[str, int]:
    return {prefix + name: value for name, value in pairs.items()}


DML_TENSOR_DATA_TYPE = enum.IntEnum(
    "DML_TENSOR_DATA_TYPE",
    _members("DML_TENSOR_DATA_TYPE_", {
        "UNKNOWN": 0, "FLOAT32": 1, "FLOAT16": 2, "UINT32": 3, "UINT16": 4, "UINT8": 5, "INT32": 6,
        "INT16": 7, "INT8": 8, "FLOAT64": 9, "UINT64": 10, "INT64": 11, "UINT4": 12, "INT4": 13,
    }),
    module=__name__,
)

DML_FEATURE_LEVEL = enum.IntEnum(
    "DML_FEATURE_LEVEL",
    _members("DML_FEATURE_LEVEL_", {
        f"{major}_{minor}": (major << 12) | (minor << 8)
        for major, minor in [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0), (4, 1), (5, 0), (5, 1),
                             (5, 2), (6, 0), (6, 1), (6, 2), (6, 3), (6, 4)]
    }),
    module=__name__,
)

DML_OPERATOR_TYPE = enum.IntEnum(
    "DML_OPERATOR_TYPE",
    # SCATTER is the header's alias of SCATTER_ELEMENTS (94); an IntEnum alias keeps one member.
    _members("DML_OPERATOR_", {**{n: i for i, n in enumerate(_OPERATOR_NAMES)}, "SCATTER": 94}),
    module=__name__,
)

DML_TENSOR_TYPE = enum.IntEnum(
    "DML_TENSOR_TYPE", _members("DML_TENSOR_TYPE_", {"INVALID": 0, "BUFFER": 1}), module=__name__
)
DML_TENSOR_FLAGS = enum.IntFlag(
    "DML_TENSOR_FLAGS", _members("DML_TENSOR_FLAG_", {"NONE": 0, "OWNED_BY_DML": 0x1}),
    module=__name__,
)
DML_FEATURE = enum.IntEnum(
    "DML_FEATURE",
    _members("DML_FEATURE_", {"TENSOR_DATA_TYPE_SUPPORT": 0, "FEATURE_LEVELS": 1}),
    module=__name__,
)
DML_AXIS_DIRECTION = enum.IntEnum(
    "DML_AXIS_DIRECTION",
    _members("DML_AXIS_DIRECTION_", {"INCREASING": 0, "DECREASING": 1}),
    module=__name__,
)
DML_BINDING_TYPE = enum.IntEnum(
    "DML_BINDING_TYPE",
    _members("DML_BINDING_TYPE_", {"NONE": 0, "BUFFER": 1, "BUFFER_ARRAY": 2}),
    module=__name__,
)
DML_EXECUTION_FLAGS = enum.IntFlag(
    "DML_EXECUTION_FLAGS",
    _members("DML_EXECUTION_FLAG_", {
        "NONE": 0, "ALLOW_HALF_PRECISION_COMPUTATION": 0x1, "DISABLE_META_COMMANDS": 0x2,
        "DESCRIPTORS_VOLATILE": 0x4,
    }),
    module=__name__,
)
DML_CREATE_DEVICE_FLAGS = enum.IntFlag(
    "DML_CREATE_DEVICE_FLAGS",
    _members("DML_CREATE_DEVICE_FLAG_", {"NONE": 0, "DEBUG": 0x1}),
    module=__name__,
)

ENUMS: tuple[type[enum.IntEnum] | type[enum.IntFlag], ...] = (
    DML_TENSOR_DATA_TYPE, DML_FEATURE_LEVEL, DML_OPERATOR_TYPE, DML_TENSOR_TYPE, DML_TENSOR_FLAGS,
    DML_FEATURE, DML_AXIS_DIRECTION, DML_BINDING_TYPE, DML_EXECUTION_FLAGS, DML_CREATE_DEVICE_FLAGS,
)

# Every C constant at module level under its C name (aliases included).
for _enum in ENUMS:
    globals().update(_enum.__members__)

DML_TENSOR_DIMENSION_COUNT_MAX = 5
DML_TENSOR_DIMENSION_COUNT_MAX1 = 8
DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16
DML_TEMPORARY_BUFFER_ALIGNMENT = 256
DML_PERSISTENT_BUFFER_ALIGNMENT = 256

# The prefix of each enum's C constants, for short names ("FLOAT32") in model files.
_PREFIX = {
    DML_TENSOR_DATA_TYPE: "DML_TENSOR_DATA_TYPE_", DML_FEATURE_LEVEL: "DML_FEATURE_LEVEL_",
    DML_OPERATOR_TYPE: "DML_OPERATOR_", DML_TENSOR_TYPE: "DML_TENSOR_TYPE_",
    DML_TENSOR_FLAGS: "DML_TENSOR_FLAG_", DML_FEATURE: "DML_FEATURE_",
    DML_AXIS_DIRECTION: "DML_AXIS_DIRECTION_", DML_BINDING_TYPE: "DML_BINDING_TYPE_",
    DML_EXECUTION_FLAGS: "DML_EXECUTION_FLAG_", DML_CREATE_DEVICE_FLAGS: "DML_CREATE_DEVICE_FLAG_",
}

E = TypeVar("E", bound=enum.IntEnum)


def enum_prefix(enum_type: type) -> str:
    """The common prefix of an enum's C constant names (``DML_TENSOR_DATA_TYPE_``)."""
    return _PREFIX[enum_type]


def short_name(value: enum.IntEnum | enum.IntFlag) -> str:
    """The C name without its prefix: ``FLOAT32`` for DML_TENSOR_DATA_TYPE_FLOAT32."""
    return str(value.name)[len(_PREFIX[type(value)]):]


def parse_enum(enum_type: type[E], text: str) -> E:
    """An enum member from its full (``DML_TENSOR_DATA_TYPE_FLOAT32``) or short (``FLOAT32``) name.

    Raises ``KeyError`` naming the enum and the valid spellings when the name is unknown.
    """
    members = enum_type.__members__
    name = text.strip()
    if name in members:
        return members[name]
    full = _PREFIX[enum_type] + name
    if full in members:
        return members[full]
    raise KeyError(f"'{text}' is not a {enum_type.__name__} (expected a name such as "
                   f"{next(iter(members))} or {short_name(next(iter(members.values())))})")
