"""dml-emulator: an emulated DirectML device (IDMLDevice) on the CPU.

    from descriptors import *
    from emulator import DMLCreateDevice1, Buffer
    device = DMLCreateDevice1(feature_level="3_1")
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(...)), [x])

Importing this package does not import numba; the kernels are compiled (or loaded from the disk
cache) on first use.
"""

__version__ = "0.1.0"  # first: the kernel cache folder is named by it (kernels/jit.py)

from .binding import IDMLBindingTable
from .device import (
    DMLCreateDevice,
    DMLCreateDevice1,
    IDMLCommandRecorder,
    IDMLCompiledOperator,
    IDMLDevice,
    IDMLOperator,
    IDMLOperatorInitializer,
)
from .errors import (
    DXGI_ERROR_DEVICE_REMOVED,
    DXGI_ERROR_UNSUPPORTED,
    E_INVALIDARG,
    E_OUTOFMEMORY,
    S_OK,
    DMLError,
)
from .execution import CommandList, CommandQueue
from .registry import REGISTRY, min_feature_level
from .resources import Buffer

__all__ = [
    "DXGI_ERROR_DEVICE_REMOVED", "DXGI_ERROR_UNSUPPORTED", "E_INVALIDARG", "E_OUTOFMEMORY",
    "REGISTRY", "S_OK", "Buffer", "CommandList", "CommandQueue", "DMLCreateDevice",
    "DMLCreateDevice1", "DMLError", "IDMLBindingTable", "IDMLCommandRecorder",
    "IDMLCompiledOperator", "IDMLDevice", "IDMLOperator", "IDMLOperatorInitializer",
    "min_feature_level",
]
