"""The one place where JIT flags are set.

- ``cache=True``: compiled machine code is stored on disk, so a new process pays no compile time.
  Never inside the installed package (a later ``pip install -e`` would leave that folder behind as
  an empty namespace package that shadows the real one): in the user's cache folder
  (``$XDG_CACHE_HOME/dml-emulator/<version>`` on Linux, ``~/Library/Caches`` on macOS,
  ``%LOCALAPPDATA%`` on Windows), a folder per version and per install location, so two installs
  never load each other's kernels. ``NUMBA_CACHE_DIR`` still wins. Numba checks only the stamp
  of a kernel's own source file, not of the helpers inlined into it, so the folder name also
  carries a hash of the shared helper modules (``HELPERS``): changing one (a new ``exp32``)
  starts a fresh cache instead of loading kernels built with the old helper.
- ``parallel=True``: kernels use ``numba.prange`` over independent work items.
- ``nogil=True``: Python threads sharing a device can run kernels concurrently.
- ``fastmath=False``: results must match the NumPy references bit for bit or within stated ULPs;
  reassociation or flush-to-zero would break that.
- ``boundscheck=False``: every index is proven in range by validation before a kernel runs
  (the robustness tests check this with guard bytes instead).
- ``error_model="numpy"``: no Python exception machinery inside the hot loops.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
import warnings
from pathlib import Path

import numba
import numpy as np
from numba.core import caching, event
from numba.misc.appdirs import AppDirs

PACKAGE = Path(__file__).resolve().parent.parent


# The modules whose functions are inlined into other modules' kernels.
HELPERS = (*sorted(Path(__file__).resolve().parent.glob("*.py")),
           PACKAGE / "elementwise" / "scalar.py")


@functools.cache
def cache_root() -> Path:
    """Where this install's kernels are cached (unless NUMBA_CACHE_DIR says otherwise)."""
    from .. import __version__

    digest = hashlib.sha1(b"".join(p.read_bytes() for p in HELPERS)).hexdigest()[:12]
    return Path(AppDirs(appname="dml-emulator", appauthor=False).user_cache_dir) / \
        f"{__version__}-{digest}"


class _UserCacheLocator(caching.UserWideCacheLocator):
    """Numba's per-user cache, in dml-emulator's own folder, for this package's kernels only."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(cache_root(), self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(PACKAGE):
            return None
        return super().from_function(py_func, py_file)


# Before Numba's in-tree locator (which writes next to the source), after NUMBA_CACHE_DIR's.
if _UserCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(1, _UserCacheLocator)


# The first compile of an operator's kernels takes seconds on a cold cache: say so once, so a
# user does not think the process hung. Loads from the disk cache are not compiles.
_current = threading.local()
_announced: set[str] = set()


class _CompileAnnouncer(event.Listener):
    def on_start(self, event: event.Event) -> None:
        name = getattr(_current, "operator", None)
        if name and name not in _announced:
            _announced.add(name)
            print(f"dml-emulator: compiling CPU kernels for {name} (first use only)...",
                  file=sys.stderr, flush=True)

    def on_end(self, event: event.Event) -> None:
        pass


event.register("numba:compile", _CompileAnnouncer())


class compiling_for:
    """Name the operator whose kernels a launch may compile (for the one-time message), and
    hold its compiled form's DML_EXECUTION_FLAGS for the plans that choose an algorithm by
    them (``execution_flags``). A class, not a generator context: it runs around every
    dispatch (~1 us instead of ~4)."""

    __slots__ = ("flags", "name", "previous")

    def __init__(self, operator: str, flags: int = 0) -> None:
        self.name = operator
        self.flags = flags

    def __enter__(self) -> None:
        self.previous = (getattr(_current, "operator", None), getattr(_current, "flags", 0))
        _current.operator = self.name
        _current.flags = self.flags

    def __exit__(self, *exc: object) -> None:
        _current.operator, _current.flags = self.previous


def execution_flags() -> int:
    """The DML_EXECUTION_FLAGS of the dispatch running on this thread (0 outside one)."""
    return int(getattr(_current, "flags", 0))


kernel = numba.njit(parallel=True, cache=True, nogil=True, fastmath=False, boundscheck=False,
                    error_model="numpy")
helper = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
# Per-element helpers called inside hot loops: inlined in Numba's IR so that LLVM sees one loop
# body it can vectorise (a call left in the loop made the top-k scan 4x slower).
inline = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False,
                    error_model="numpy", inline="always")
# Sums whose order no result promises (MVN statistics): LLVM may reassociate them, and only that
# (no NaN/inf/zero-sign shortcuts), so they vectorise (4x faster). For one build the machine code
# is fixed, so results do not depend on the thread count; lanes also make the sum more accurate.


def c_kernel(sig):
    """A C-callable kernel for one signature (``kernels/strided.py``'s chunk kernels): serial,
    called by address from a parallel driver; compiled when made, cached on disk."""
    return numba.cfunc(sig, nopython=True, cache=True, fastmath=False, boundscheck=False,
                       error_model="numpy")


reduction = numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy",
                       fastmath={"reassoc"})
prange = numba.prange

# Numba's pedantic SSA check warns (NumbaIRAssumptionWarning, "variable ... is not in scope") when
# the FLOAT16 store from float64 is inlined into a loop; the code it generates is correct (the
# float16 tests check every result), so the warning would only alarm users at first compile.
warnings.filterwarnings("ignore", category=numba.core.errors.NumbaIRAssumptionWarning)


# -- the threading layer ------------------------------------------------------------------------
# Numba's default on Linux is GNU OpenMP, which is not fork-safe: after one dispatch, a forked child
# (multiprocessing's default start method on Linux, pytest-xdist, gunicorn...) died at its first
# dispatch. So unless the user chose a layer (NUMBA_THREADING_LAYER), ask for a fork-safe one: TBB
# (a dependency where wheels exist), else the workqueue layer. See docs/decisions.md.
def _tbb_library() -> Path | None:
    """The TBB runtime the ``tbb`` wheel installs into ``<prefix>/lib``, which the dynamic loader
    does not search in a virtual environment; Numba then finds no TBB and falls back."""
    names = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib"}
    name = next((n for p, n in names.items() if sys.platform.startswith(p)), None)
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        lib = Path(prefix) / "lib" / name if name else None
        if lib is not None and lib.is_file():
            return lib
    return None


def choose_threading_layer() -> str:
    """Select a fork-safe layer unless the user chose one; return the requested layer."""
    if os.environ.get("NUMBA_THREADING_LAYER"):
        return str(vars(numba.config)["THREADING_LAYER"])
    lib = _tbb_library()
    if lib is not None:
        import ctypes

        with contextlib.suppress(OSError):  # loaded once, by path, so Numba's lookup by name works
            ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    vars(numba.config)["THREADING_LAYER"] = "forksafe"  # read at the first parallel launch
    return "forksafe"


choose_threading_layer()


# Numba's workqueue threading layer (used where neither OpenMP nor TBB is available) aborts the
# process when parallel kernels are launched from several Python threads at once. The first
# launch tells which layer Numba chose; under workqueue, launches are serialised.
_LAUNCH = threading.Lock()
_serial: bool | None = None


@numba.njit(parallel=True, cache=True)
def _probe(x):  # pragma: no cover
    for i in numba.prange(x.shape[0]):
        x[i] = i


def launch_guard() -> contextlib.AbstractContextManager:
    """The context every kernel launch runs in: a lock only if the threading layer needs one."""
    global _serial
    if _serial is None:
        with _LAUNCH:
            if _serial is None:
                _probe(np.zeros(2, np.int64))
                _serial = numba.threading_layer() == "workqueue"
    return _LAUNCH if _serial else contextlib.nullcontext()
