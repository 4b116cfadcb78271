"""One module per executable operator version: its own rules, its kernel plan and a plain NumPy
``reference`` that reads like Microsoft's documentation. (Every operator's support tables and
page rules live in ``emulator.support``; these modules add what executing needs.)

Each module provides:
- ``KERNEL_TYPES``: the data types its kernel executes (a desc valid with another type fails at
  CompileOperator with E_NOTIMPL);
- ``validate(ctx, v)``: the rules it checks itself (``v``: the normalised fields);
- ``plan(v)``: the kernel plan (``emulator.plan``), built once at CreateOperator;
- ``reference(v, inputs) -> outputs``: logical arrays (shaped by Sizes) in, logical arrays out.
"""
