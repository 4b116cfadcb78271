"""One module per operator version: its support table, its rules, its kernel plan and a plain
NumPy ``reference`` that reads like Microsoft's documentation.

Each module provides:
- ``SUPPORT``: the "Tensor support" tables (``validation.Band`` per feature-level band);
- ``validate(ctx, v)``: the rules the tables cannot say (``v``: the normalised fields);
- ``plan(v)``: the kernel plan (``emulator.plan``), built once at CreateOperator;
- ``reference(v, inputs) -> outputs``: logical arrays (shaped by Sizes) in, logical arrays out.
"""
