"""The faithful API, as a C++ DirectML program would use it: create, compile, initialize, bind,
record and execute a SLICE1 that reverses rows, with an OWNED_BY_DML input.

Run: python examples/faithful_api.py
"""

import numpy as np

from descriptors import *
from emulator import Buffer, CommandList, CommandQueue, DMLCreateDevice1

device = DMLCreateDevice1(None, DML_CREATE_DEVICE_FLAG_NONE, DML_FEATURE_LEVEL_3_0,
                          feature_level="4_0")

input_desc = tensor_desc((3, 4), DML_TENSOR_DATA_TYPE_FLOAT32, flags=DML_TENSOR_FLAG_OWNED_BY_DML)
output_desc = tensor_desc((3, 4), DML_TENSOR_DATA_TYPE_FLOAT32)
slice_desc = DML_SLICE1_OPERATOR_DESC(
    InputTensor=input_desc, OutputTensor=output_desc, DimensionCount=2,
    InputWindowOffsets=[0, 0], InputWindowSizes=[3, 4], InputWindowStrides=[-1, 1])
op = device.CreateOperator(DML_OPERATOR_DESC(Type=DML_OPERATOR_SLICE1, Desc=slice_desc))
compiled = device.CompileOperator(op, DML_EXECUTION_FLAG_NONE)
initializer = device.CreateOperatorInitializer([compiled])

x = Buffer.from_array(np.arange(12, dtype=np.float32))
y = Buffer(input_desc.Desc.TotalTensorSizeInBytes)

# Initialization binds the OWNED_BY_DML input; DirectML keeps its own copy.
init_table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
    Dispatchable=initializer,
    SizeInDescriptors=initializer.GetBindingProperties().RequiredDescriptorCount))
init_table.BindInputs([DML_BINDING_DESC(
    Type=DML_BINDING_TYPE_BUFFER_ARRAY,
    Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[DML_BUFFER_BINDING(Buffer=x, Offset=0,
                                                               SizeInBytes=x.size_in_bytes)]))])

# Execution: the owned input is bound as NONE.
table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
    Dispatchable=compiled,
    SizeInDescriptors=compiled.GetBindingProperties().RequiredDescriptorCount))
table.BindInputs([DML_BINDING_DESC(Type=DML_BINDING_TYPE_NONE)])
table.BindOutputs([DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER, Desc=DML_BUFFER_BINDING(
    Buffer=y, Offset=0, SizeInBytes=y.size_in_bytes))])

recorder = device.CreateCommandRecorder()
commands = CommandList()
recorder.RecordDispatch(commands, initializer, init_table)
recorder.RecordDispatch(commands, compiled, table)
commands.Close()
CommandQueue().ExecuteCommandLists([commands])

print(y.numpy(np.float32, (3, 4)))
