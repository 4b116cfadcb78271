"""Numba kernels: no validation, no descriptors, only raw buffers, offsets, sizes and strides.

Imported lazily (on the first dispatch), so that ``import emulator`` stays fast: importing numba
alone costs about half a second.
"""
