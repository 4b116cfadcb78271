"""GENERATED kernel modules of the element-wise family, one per operator (see ../generate.py)."""
