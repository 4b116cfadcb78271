"""Plain-data mirrors of DirectML.h: enums, constants, structs and tensor helpers.

``from descriptors import *`` gives every C name (``DML_TENSOR_DATA_TYPE_FLOAT32``,
``DML_SLICE1_OPERATOR_DESC``, ``DMLCalcBufferTensorSize`` ...), as the header does.
"""

from . import enums, structs
from .enums import *  # noqa: F403 - every C constant, as directml.h exports them
from .enums import ENUMS, enum_prefix, parse_enum, short_name
from .schema import SCHEMA, SCHEMAS, Field, OperatorSchema
from .structs import *  # noqa: F403
from .structs import OPERATOR_DESC_CLASSES
from .tensor import (
    ELEMENT_SIZE_BITS,
    NUMPY_DTYPE,
    DMLCalcBufferTensorSize,
    data_type_of_numpy,
    tensor_desc,
)

__all__ = sorted(
    {name for e in ENUMS for name in e.__members__}
    | {e.__name__ for e in ENUMS}
    | {n for n in dir(enums) if n.startswith("DML_")}
    | {n for n in dir(structs) if n.startswith("DML_")}
    | {cls.__name__ for cls in OPERATOR_DESC_CLASSES.values()}
    | {"DMLCalcBufferTensorSize", "tensor_desc", "parse_enum", "short_name", "SCHEMA", "SCHEMAS",
       "Field", "OperatorSchema", "OPERATOR_DESC_CLASSES", "ELEMENT_SIZE_BITS", "NUMPY_DTYPE",
       "data_type_of_numpy"}
)
