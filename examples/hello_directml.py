"""Microsoft's HelloDirectML sample (DirectML/Samples/HelloDirectML), ported step by step.

An identity operator over a 1x2x3x4 FLOAT32 tensor: device, feature-level query, CreateOperator,
CompileOperator, operator initializer, binding table, temporary/persistent resources, command
recorder, command list and queue, and reading the output back. docs/porting-from-cpp.md walks
through it; its code blocks are this file, in order (tests/test_porting_guide.py checks both).

Run: python examples/hello_directml.py
"""

import dataclasses

import numpy as np

from descriptors import *
from emulator import Buffer, CommandList, CommandQueue, DMLCreateDevice

command_queue = CommandQueue()
command_list = CommandList()


def close_execute_reset(queue, commands):
    """Submit a command list and reopen it for recording.

    ExecuteCommandLists returns when the work is done: there is no fence to wait on and no
    command allocator to reset.
    """
    commands.Close()
    queue.ExecuteCommandLists([commands])
    commands.Reset()


dml_device = DMLCreateDevice(None, DML_CREATE_DEVICE_FLAG_NONE)

query = DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=list(DML_FEATURE_LEVEL))
levels = dml_device.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, query)
print("feature level:", DML_FEATURE_LEVEL(levels.MaxSupportedFeatureLevel).name)

tensor_sizes = [1, 2, 3, 4]
buffer_tensor_desc = DML_BUFFER_TENSOR_DESC(
    DataType=DML_TENSOR_DATA_TYPE_FLOAT32,
    Flags=DML_TENSOR_FLAG_NONE,
    DimensionCount=len(tensor_sizes),
    Sizes=tensor_sizes,
    Strides=None,
    TotalTensorSizeInBytes=DMLCalcBufferTensorSize(
        DML_TENSOR_DATA_TYPE_FLOAT32, len(tensor_sizes), tensor_sizes, None),
)
dml_tensor_desc = DML_TENSOR_DESC(DML_TENSOR_TYPE_BUFFER, buffer_tensor_desc)
tensor_buffer_size = buffer_tensor_desc.TotalTensorSizeInBytes  # 24 elements * 4 = 96 bytes

identity_desc = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
    InputTensor=dml_tensor_desc, OutputTensor=dml_tensor_desc)  # ScaleBias left null (None)
dml_operator = dml_device.CreateOperator(
    DML_OPERATOR_DESC(DML_OPERATOR_ELEMENT_WISE_IDENTITY, identity_desc))
compiled_operator = dml_device.CompileOperator(dml_operator, DML_EXECUTION_FLAG_NONE)

initializer = dml_device.CreateOperatorInitializer([compiled_operator])

init_properties = initializer.GetBindingProperties()
exec_properties = compiled_operator.GetBindingProperties()
descriptor_count = max(init_properties.RequiredDescriptorCount,
                       exec_properties.RequiredDescriptorCount)

table_desc = DML_BINDING_TABLE_DESC(Dispatchable=initializer, SizeInDescriptors=descriptor_count)
binding_table = dml_device.CreateBindingTable(table_desc)

temporary_size = max(init_properties.TemporaryResourceSize, exec_properties.TemporaryResourceSize)
persistent_size = exec_properties.PersistentResourceSize
temporary_buffer = Buffer(temporary_size) if temporary_size else None
persistent_buffer = Buffer(persistent_size) if persistent_size else None


def resource_binding(buffer, size):
    """A temporary or persistent resource's binding: DML_BINDING_TYPE_NONE when none is needed."""
    if size == 0:
        return DML_BINDING_DESC(DML_BINDING_TYPE_NONE, None)
    return DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(buffer, 0, size))


binding_table.BindTemporaryResource(
    resource_binding(temporary_buffer, init_properties.TemporaryResourceSize))
binding_table.BindOutputs([resource_binding(persistent_buffer, persistent_size)])

command_recorder = dml_device.CreateCommandRecorder()
command_recorder.RecordDispatch(command_list, initializer, binding_table)
close_execute_reset(command_queue, command_list)

binding_table.Reset(dataclasses.replace(table_desc, Dispatchable=compiled_operator))
binding_table.BindTemporaryResource(
    resource_binding(temporary_buffer, exec_properties.TemporaryResourceSize))
binding_table.BindPersistentResource(resource_binding(persistent_buffer, persistent_size))

input_buffer = Buffer(tensor_buffer_size)
input_values = (np.arange(24, dtype=np.float32) - 12) * np.float32(1.618)
input_buffer.numpy(np.float32)[:24] = input_values
print("input tensor:", " ".join(str(v) for v in input_values))

output_buffer = Buffer(tensor_buffer_size)
binding_table.BindInputs([DML_BINDING_DESC(
    DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(input_buffer, 0, tensor_buffer_size))])
binding_table.BindOutputs([DML_BINDING_DESC(
    DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(output_buffer, 0, tensor_buffer_size))])

command_recorder.RecordDispatch(command_list, compiled_operator, binding_table)
close_execute_reset(command_queue, command_list)

output_values = output_buffer.numpy(np.float32, tensor_sizes).copy()
print("output tensor:", " ".join(str(v) for v in output_values.ravel()))
