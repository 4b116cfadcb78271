"""The encoding shared by the data-movement plans and their kernels (``movement.py``): no Numba
here, so that a plan module can import it without importing Numba (``import emulator`` stays
fast).

A table entry of ``FILL`` marks a coordinate outside the source (the element is the fill value).
A piece of a row's last dimension is ``(start, length, kind, offset, step)`` with ``kind`` one of
``FILL_PIECE``, ``AFFINE``, ``GATHER``; pieces are at most ``CHUNK`` elements.
"""

FILL = -1
FILL_PIECE, AFFINE, GATHER = 0, 1, 2
CHUNK = 16384
