"""Rules of the activations group that the support tables cannot express.

The group's facts (``activations.json``) are almost entirely tables: every activation operator's
tensors share DataType, DimensionCount and Sizes, and its bands give the ranks and data types per
feature level. The constraints beyond the tables are already checked by the operators' existing
modules and so are not repeated here:

- SOFTMAX, LOG_SOFTMAX, HARDMAX: InputTensor's effective rank (DimensionCount without leading
  dimensions of size 1) is at most 2 (``emulator/ops/softmax.py``);
- SOFTPLUS: Steepness is at least 1 before DML_FEATURE_LEVEL_6_4, standalone and fused
  (``emulator/ops/activation.py``).

The operators without a module (RELU_GRAD, SWISH, HARD_SWISH) state no rule beyond their tables:
RELU_GRAD's gradients match the input's Sizes and DataType (a ``same`` constraint), and SWISH's
SigmoidInputScale and HARD_SWISH's Alpha/Beta have no documented range. So this module defines
no rule functions; the JSON ``rules`` lists are empty.
"""

from __future__ import annotations

__all__: list[str] = []
