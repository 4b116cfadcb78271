"""DxDispatch model files: read one, build its resources and dispatchables through the public API,
and run its commands (dispatch, print, writeFile).

Loading has two phases, so that ``dml-emulator run`` and ``dml-emulator check`` report the same
first error for the same model:

1. ``parse_model`` reads the JSON (strict JSON first, JSON5 only when that fails) and checks every
   resource, dispatchable and command: keys, names, types, inline values, declared sizes against
   the size limit, and that every path stays inside the model's folder. It reads no data file.
2. ``materialize`` (``run`` only) reads the data files (regular files only, exactly the bytes they
   hold), decodes images and allocates the buffers, charging every byte to the same limit.

The format is described in ``docs/model-files.md``. A problem in the file raises ``ModelError``
with a path to the offending member (``dispatchables.slice.desc.Offsets[1]``); what a CPU emulator
cannot run (HLSL and ONNX dispatchables, list initializers) raises ``UnsupportedError``; errors
from the device stay ``DMLError``. Dispatchable fields are read by the operator schema, so a newly
registered operator needs no change here.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import io
import json
import math
import os
import re
import reprlib
import stat
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from descriptors import (
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    DML_BUFFER_TENSOR_DESC,
    DML_EXECUTION_FLAGS,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_SCALAR_UNION,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
    ENUMS,
    NUMPY_DTYPE,
    OPERATOR_DESC_CLASSES,
    SCHEMA,
    Field,
    OperatorSchema,
    data_type_of_numpy,
    parse_enum,
    schema,
    short_name,
)
from descriptors.structs import GENERIC_STRUCTS

from .device import IDMLCompiledOperator, IDMLDevice, IDMLOperator, operator_bind_points
from .errors import DMLError
from .execution import CommandList, CommandQueue
from .graph import single_node_graph
from .resources import Buffer
from .serialized import Compiled as SerializedCompiled
from .serialized import SerializedGraph
from .serialized import read as read_serialized
from .serialized import to_graph as serialized_to_graph

DML_SCALE_BIAS = GENERIC_STRUCTS["DML_SCALE_BIAS"]
DML_SIZE_2D = GENERIC_STRUCTS["DML_SIZE_2D"]
T = DML_TENSOR_DATA_TYPE

# What a CPU emulator of DirectML cannot run: one line each (docs/model-files.md).
OTHER_DISPATCHABLES = {
    "hlsl": "'hlsl' dispatchables (HLSL compute shaders) are not supported by a CPU emulator of "
            "DirectML: it runs DirectML operators only",
    "onnx": "'onnx' dispatchables (ONNX models, run by ONNX Runtime) are not supported by a CPU "
            "emulator of DirectML: it runs DirectML operators only",
}
LIST_INITIALIZER = ("list initializers (initialValuesDataType UNKNOWN: typed values for an HLSL "
                    "constant buffer) are not supported by a CPU emulator of DirectML")

# Data files: images are DxDispatch's .jpg and .png, read and written through Pillow (optional).
IMAGE_SUFFIXES = (".jpg", ".png")
RAW_SUFFIXES = (".dat", ".bin")
OTHER_IMAGE_SUFFIXES = (".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")
IMAGES_EXTRA = 'pip install "dml-emulator[images]"'
IMAGE_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)

# The most bytes a model's resources may use together (the model text included), unless the user
# says otherwise: a hostile or mistaken size must not take the machine's memory.
DEFAULT_MAX_RESOURCE_BYTES = 4 << 30
MAX_BYTES_ENV = "DML_EMULATOR_MAX_RESOURCE_BYTES"
OUTSIDE_OPTION = "--allow-paths-outside-model"
UINT32_MAX = (1 << 32) - 1


class ModelError(Exception):
    """A problem in the model file itself (not a DirectML validation failure)."""


class UnsupportedError(ModelError):
    """Something a CPU emulator of DirectML cannot run (HLSL, ONNX, list initializers...)."""


UnsupportedDispatchableError = UnsupportedError  # the former name


@dataclass(frozen=True)
class LoadOptions:
    """What the user allows a model to do (the command line's options)."""

    max_resource_bytes: int = DEFAULT_MAX_RESOURCE_BYTES
    allow_paths_outside_model: bool = False
    input_dir: Path | None = None    # DxDispatch's --input_path: data files resolve here
    output_dir: Path | None = None   # DxDispatch's --output_path: writeFile targets resolve here


def parse_byte_count(text: str) -> int:
    """``4294967296``, ``4GiB``, ``512M`` (binary), ``2GB`` (decimal); ValueError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:([kmgt])(i?b)?)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"'{text}' is not a byte count (write 4294967296, 4GiB, 512MiB or 2GB)")
    scale = 1
    if m.group(2):
        power = "kmgt".index(m.group(2).lower()) + 1
        scale = (1000 if (m.group(3) or "").lower() == "b" else 1024) ** power
    return int(m.group(1)) * scale


def max_resource_bytes_from_env() -> int:
    text = os.environ.get(MAX_BYTES_ENV)
    if not text:
        return DEFAULT_MAX_RESOURCE_BYTES
    try:
        return parse_byte_count(text)
    except ValueError as e:
        raise ModelError(f"{MAX_BYTES_ENV}: {e}") from None


class _Budget:
    """The bytes a model may still allocate."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def check(self, nbytes: int, where: str, what: str) -> None:
        if nbytes > self.limit - self.used:
            already = f" ({self.used} already used)" if self.used else ""
            raise ModelError(f"{where}: {what} {nbytes} bytes, over the limit of {self.limit} "
                             f"bytes for a model's data{already}; raise it with "
                             f"--max-resource-bytes or {MAX_BYTES_ENV}")

    def take(self, nbytes: int, where: str, what: str = "the buffer needs") -> None:
        self.check(nbytes, where, what)
        self.used += nbytes


# -- small readers that name the offending member -----------------------------------------------
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxlong, _REPR.maxother = 2, 6, 4, 40, 40


def _show(value: Any) -> str:
    """A value for a one-line message: short, printable, safe for any nesting or size."""
    if isinstance(value, str):
        text = f"'{value}'" if value.isprintable() else ascii(value)
    else:
        text = _REPR.repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _key(name: str) -> str:
    """A member name inside a path such as ``resources.NAME``."""
    text = name if name.isprintable() else ascii(name)
    return text if len(text) <= 60 else text[:57] + "..."


def _expect(cond: bool, where: str, what: str, value: Any) -> None:
    if not cond:
        raise ModelError(f"{where}: expected {what}, got {_show(value)}")


def _int(value: Any, where: str) -> int:
    _expect(isinstance(value, int) and not isinstance(value, bool), where, "an integer", value)
    return int(value)


def _count(value: Any, where: str, what: str, minimum: int = 0, maximum: int | None = None
           ) -> int:
    n = _int(value, where)
    _expect(n >= minimum and (maximum is None or n <= maximum), where, what, value)
    return n


_SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
            "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


def _number(value: Any, where: str) -> float | int:
    """A JSON number, or "nan"/"inf"/"-inf" (any case)."""
    if isinstance(value, str) and value.strip().lower() in _SPECIAL:
        return _SPECIAL[value.strip().lower()]
    _expect(isinstance(value, (int, float)) and not isinstance(value, bool), where,
            'a number (or "nan", "inf", "-inf")', value)
    return value


def _to_float(value: float | int, where: str, what: str = "a float") -> float:
    try:
        return float(value)
    except OverflowError:
        raise ModelError(f"{where}: {_show(value)} is out of range for {what}") from None


def _suggestion(text: str, names: list[str]) -> str:
    near = difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def _enum(enum_type: Any, value: Any, where: str) -> Any:
    _expect(isinstance(value, str), where, f"a {enum_type.__name__} name", value)
    try:
        return parse_enum(enum_type, value)
    except KeyError:
        pass
    # Suggest the nearest real name, never the placeholders (INVALID, UNKNOWN) nobody means.
    members = [m for m in enum_type if not m.name.endswith(("_INVALID", "_UNKNOWN"))]
    full = value.strip().upper().startswith("DML_")
    names = [m.name if full else short_name(m) for m in members]
    hint = _suggestion(value.strip().upper(), names)
    if not hint and enum_type is DML_OPERATOR_TYPE:
        hint = " ('dml-emulator info' lists the operators)"
    elif not hint:
        hint = " (expected one of: " + ", ".join(names[:12]) + (", ..." if len(names) > 12
                                                               else "") + ")"
    raise ModelError(f"{where}: {_show(value)} is not a {enum_type.__name__}{hint}")


def _flags(enum_type: Any, value: Any, where: str) -> Any:
    """A flag name, or an array of names OR-ed together."""
    names = value if isinstance(value, list) else [value]
    result = enum_type(0)
    for i, v in enumerate(names):
        result |= _enum(enum_type, v, f"{where}[{i}]" if isinstance(value, list) else where)
    return result


def _object(value: Any, where: str) -> dict:
    _expect(isinstance(value, dict), where, "an object", value)
    return value


def _no_unknown(obj: dict, known: set[str], where: str, struct: str) -> None:
    """An unknown key is an error (a typo would otherwise bind or mean something else silently);
    the message suggests the nearest known key."""
    unknown = sorted(set(obj) - known, key=str)
    if unknown:
        first = str(unknown[0])
        raise ModelError(f"{where}: {_key(first)} is not a field of {struct}"
                         f"{_suggestion(first, sorted(known))}; fields: "
                         + ", ".join(sorted(known)))


def _name(value: Any, where: str, what: str, known: Any) -> str:
    """A resource or dispatchable name that the model defines."""
    _expect(isinstance(value, str), where, f"a {what} name", value)
    if value not in known:
        names = list(known)
        listed = ", ".join(_key(n) for n in names[:10]) + (", ..." if len(names) > 10 else "")
        hint = _suggestion(value, names) or f" ({what}s: {listed or 'none'})"
        raise ModelError(f"{where}: {_show(value)} is not a {what} of the model{hint}")
    return str(value)


# The members of each kind of object in a model file (DxDispatch's schema, _schema.json).
RESOURCE_KEYS = {"type", "initialValues", "initialValuesDataType", "initialValuesOffsetInBytes",
                 "sizeInBytes", "resampleSize", "resampleMode"}
INITIALIZER_KEYS = {"valueCount", "value", "valueStart", "valueDelta", "sourcePath"}
# dmlCompileType: DmlCompileOp (CompileOperator) or DmlCompileGraph (the operator as a one-node
# graph through CompileGraph, as DxDispatch builds it: needs DML_FEATURE_LEVEL_2_1).
DISPATCHABLE_KEYS = {"type", "desc", "Desc", "executionFlags", "bindings", "dmlCompileType"}
# dmlSerializedGraph: a partition file of ONNX Runtime's DirectML provider (emulator/serialized.py)
SERIALIZED_KEYS = {"type", "sourcePath", "executionFlags", "bindings"}
BINDING_KEYS = {"name", "elementOffset", "elementCount"}
COMMAND_KEYS = {"dispatch": {"type", "dispatchable", "bindings", "threadGroupCount"},
                "print": {"type", "resource", "verbose"},
                "writeFile": {"type", "resource", "targetPath", "dimensions"}}


# -- JSON ------------------------------------------------------------------------------------------
# DxDispatch's files are JSON with comments and trailing commas. Strict JSON parses at C speed;
# the JSON5 parser is pure Python (about 20 us per byte), so it runs only when both strict passes
# fail: first the text itself, then the text with comments and trailing commas blanked out (same
# length, same line breaks, so error positions still point into the file as written).
_STRING = r'"(?:[^"\\\n]|\\.)*"'
_COMMENT = re.compile(_STRING + r"|//[^\n]*|/\*[\s\S]*?\*/")
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[\]}])")
_JSON5_POSITION = re.compile(r"<string>:(\d+) (.*) at column (\d+)")


def _blank(m: re.Match) -> str:
    text = m.group(0)
    return text if text.startswith('"') else re.sub(r"[^\n]", " ", text)


def _too_deep(name: str) -> ModelError:
    return ModelError(f"{name}: invalid JSON: arrays and objects are nested too deeply")


def _json_message(e: Exception) -> str:
    text = re.sub(r"<[^<>]* at 0x[0-9a-fA-F]+>", "the data", str(e))  # no object addresses
    if "Exceeds the limit" in text and "digits" in text:  # Python's guard on huge integers
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return " ".join(text.split())


def parse_json(text: str, name: str) -> Any:
    """The document, or ModelError ``name:LINE:COLUMN: invalid JSON: message``."""
    strict: ValueError | None = None
    for attempt in range(2):
        try:
            return json.loads(text if attempt == 0 else
                              _TRAILING_COMMA.sub(_blank, _COMMENT.sub(_blank, text)))
        except RecursionError:
            raise _too_deep(name) from None
        except ValueError as e:
            strict = e
    import json5

    try:
        return json5.loads(text)
    except RecursionError:
        raise _too_deep(name) from None
    except Exception as e:  # any failure of the JSON5 parser means the text is not valid JSON5
        m = _JSON5_POSITION.match(str(e))
        if m and not (isinstance(strict, json.JSONDecodeError)
                      and (strict.lineno, strict.colno) == (int(m.group(1)), int(m.group(3)))):
            # Where both parsers stop at the same place, the strict parser's message ("Expecting
            # ',' delimiter") says more than JSON5's ('Unexpected """'); elsewhere the strict
            # parser stopped at something JSON5 allows, and JSON5's position is the true one.
            raise ModelError(f"{name}:{m.group(1)}:{m.group(3)}: invalid JSON: "
                             f"{m.group(2)}") from None
        if isinstance(strict, json.JSONDecodeError):
            raise ModelError(f"{name}:{strict.lineno}:{strict.colno}: invalid JSON: "
                             f"{strict.msg}") from None
        raise ModelError(f"{name}: invalid JSON: {_json_message(e)}") from None


parse_json5 = parse_json  # the former name


# -- files -----------------------------------------------------------------------------------------
def _stat_regular(path: Path, where: str, shown: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except OSError as e:
        raise ModelError(f"{where}: cannot read {shown}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(f"{where}: {shown} is not a regular file")
    return st


def read_regular_file(path: Path, where: str, shown: str, budget: _Budget) -> bytes:
    """The bytes of a regular file (never a FIFO or a device), checked against the budget before
    anything is read."""
    st = _stat_regular(path, where, shown)
    budget.check(st.st_size, where, f"{shown} is")
    try:
        # O_NONBLOCK: should the file have become a FIFO since stat, open must not wait for a
        # writer (fstat below then refuses it).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ModelError(f"{where}: cannot read {shown}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelError(f"{where}: {shown} is not a regular file")
        budget.check(st.st_size, where, f"{shown} is")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 26))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise ModelError(f"{where}: cannot read {shown}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if left:
        raise ModelError(f"{where}: {shown} changed while it was read")
    return b"".join(chunks)


def write_regular_file(path: Path, data: bytes, where: str, shown: str) -> None:
    """Create or replace a regular file (never write into a FIFO or a device)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        if path.exists() and not path.is_file():
            raise ModelError(f"{where}: {shown} exists and is not a regular file")
        path.parent.mkdir(parents=True, exist_ok=True)  # as DxDispatch does
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        raise ModelError(f"{where}: cannot write {shown}: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ModelError(f"{where}: {shown} exists and is not a regular file")
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise ModelError(f"{where}: cannot write {shown}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def read_model_text(path: Path, budget: _Budget) -> str:
    shown = _show(str(path))
    if "\0" in str(path):
        raise ModelError(f"{shown}: the path contains a NUL character")
    data = read_regular_file(path, str(path), "the model", budget)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(f"{path}: the model is not UTF-8 text (byte 0x{data[e.start]:02X} at "
                         f"offset {e.start})") from None


def _npy(data: bytes, where: str, shown: str) -> np.ndarray:
    """A .npy file's array, its header checked against the bytes that follow it (a header that
    declares more data than the file holds is refused before anything is allocated)."""
    from numpy.lib import format as npy

    fp = io.BytesIO(data)
    try:
        version = npy.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(fp)
        else:
            raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported")
    except (ValueError, OSError, SyntaxError, TypeError) as e:
        why = str(e) if str(e).startswith(".npy format") else "its header cannot be read"
        raise ModelError(f"{where}: {shown} is not a valid .npy file: {why}") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise ModelError(f"{where}: {shown} holds {dtype} records, not numbers")
    count = math.prod(shape)
    body = len(data) - fp.tell()
    if count * dtype.itemsize != body:
        raise ModelError(f"{where}: {shown} declares shape {tuple(shape)} of {dtype} "
                         f"({count * dtype.itemsize} bytes) but holds {body} bytes of data")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=fp.tell())
    return np.ascontiguousarray(arr.reshape(shape, order="F" if fortran else "C")).reshape(-1)


def _pillow(where: str, what: str) -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ModelError(f"{where}: {what} needs the Pillow imaging library: "
                         f"{IMAGES_EXTRA}") from None
    return Image


def image_to_tensor(data: bytes, channels: int, height: int, width: int, dtype: np.dtype,
                    where: str, shown: str) -> np.ndarray:
    """A .jpg/.png as DxDispatch reads it (ImageReaderWriter.cpp): converted to RGB (3 channels)
    or RGBA (4), scaled to width x height (WIC's high-quality cubic; bicubic here), laid out NCHW,
    each 8-bit component divided by 255 in float32, then stored as the tensor's type."""
    pil = _pillow(where, f"reading the image {shown}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pil.DecompressionBombWarning)
            img = pil.open(io.BytesIO(data), formats=["JPEG", "PNG"])
            img = img.convert("RGB" if channels == 3 else "RGBA")
            if img.size != (width, height):
                img = img.resize((width, height), pil.Resampling.BICUBIC)
            pixels = np.asarray(img, dtype=np.uint8)
    except Exception as e:  # the imaging library's errors on hostile or broken files vary
        raise ModelError(f"{where}: cannot read {shown} as a JPEG or PNG image: "
                         f"{_json_message(e)}") from None
    values = pixels.astype(np.float32) / np.float32(255)
    return np.ascontiguousarray(values.transpose(2, 0, 1)).astype(dtype).reshape(-1)


def tensor_to_image(values: np.ndarray, shape: tuple[int, int, int], fmt: str, where: str,
                    shown: str) -> bytes:
    """DxDispatch's conversion back (ImageReaderWriter.cpp): NCHW values clamped to [0, 1] (NaN
    becomes 1, as std::min(1.0f, NaN) gives 1), times 255, truncated to 8 bits; 1 channel is
    grayscale, 3 RGB, 4 RGBA."""
    channels, height, width = shape
    pil = _pillow(where, f"writing the image {shown}")
    x = values[: channels * height * width].astype(np.float32)
    x = x.reshape(channels, height, width).transpose(1, 2, 0)
    x = np.where(np.isnan(x), np.float32(1), np.clip(x, 0, 1)).astype(np.float32)
    pixels = (x * np.float32(255)).astype(np.uint8)
    out = io.BytesIO()
    try:
        img = pil.fromarray(np.ascontiguousarray(pixels[:, :, 0] if channels == 1 else pixels))
        img.save(out, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    except Exception as e:  # e.g. JPEG has no alpha channel
        raise ModelError(f"{where}: cannot write {shown} as {fmt}: {_json_message(e)}") from None
    return out.getvalue()


# -- resources -------------------------------------------------------------------------------------
@dataclass
class Resource:
    name: str
    data_type: DML_TENSOR_DATA_TYPE
    buffer: Buffer

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPE[self.data_type])


@dataclass
class ResourceSpec:
    """A resource as the model declares it (phase 1); ``values`` holds inline data, ``source`` a
    data file read by ``materialize``."""

    name: str
    where: str
    data_type: DML_TENSOR_DATA_TYPE | None   # None: from the .npy header
    offset: int
    size: int | None                         # sizeInBytes, if declared
    values: np.ndarray | None = None
    source: Path | None = None
    source_text: str = ""
    image: tuple[int, int, int] | None = None  # (C, H, W) of a .jpg/.png source
    unsupported: UnsupportedError | None = None


def _float_values(items: list, where: str, what: str) -> np.ndarray:
    if all(type(v) is float or type(v) is int for v in items):
        try:
            return np.array(items, dtype=np.float64)
        except OverflowError:
            pass  # an integer too large for a double: the loop below names it
    out = np.empty(len(items), np.float64)
    for i, v in enumerate(items):
        out[i] = _to_float(_number(v, f"{where}[{i}]"), f"{where}[{i}]", what)
    return out


def _whole(value: Any, dtype: np.dtype, where: str) -> int:
    """One value of integer data: a whole number (1.0 reads as 1; range checked by the caller)."""
    x = _number(value, where)
    if isinstance(x, float) and not x.is_integer():
        raise ModelError(f"{where}: {x} is not an integer ({dtype.name} data)")
    return int(x)


def _int_values(items: list, dtype: np.dtype, where: str) -> np.ndarray:
    info = np.iinfo(dtype)
    if not all(type(v) is int for v in items):
        items = [_whole(v, dtype, f"{where}[{i}]") for i, v in enumerate(items)]
    if items and (min(items) < info.min or max(items) > info.max):
        i = next(i for i, v in enumerate(items) if not info.min <= v <= info.max)
        raise ModelError(f"{where}[{i}]: {_show(items[i])} is out of range for {dtype.name} "
                         f"[{info.min}, {info.max}]")
    return np.array(items, dtype=dtype)


def _values(items: list, dtype: np.dtype, where: str) -> np.ndarray:
    if dtype.kind in "iu":
        return _int_values(items, dtype, where)
    with np.errstate(over="ignore"):  # a double beyond float16/32 range becomes inf, as in C
        return _float_values(items, where, dtype.name).astype(dtype)


def _scalar(value: Any, dtype: np.dtype, where: str) -> Any:
    """One initializer value, checked as the data type reads it."""
    if dtype.kind in "iu":
        return _whole(value, dtype, where)
    return _to_float(_number(value, where), where, dtype.name)


def _sequence(start: Any, delta: Any, count: int, dtype: np.dtype, where: str) -> np.ndarray:
    """valueStart + valueDelta * i, computed exactly for integers and in float64 for floats."""
    if dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            return (start + delta * np.arange(count, dtype=np.float64)).astype(dtype)
    info = np.iinfo(dtype)
    last = start + delta * (count - 1)
    for i, v in ((0, start), (count - 1, last)):
        if not info.min <= v <= info.max:
            raise ModelError(f"{where}[{i}]: {_show(v)} is out of range for {dtype.name} "
                             f"[{info.min}, {info.max}]")
    # The endpoints fit in the type, so every value does: uint64 arithmetic is exact for unsigned
    # types, int64 arithmetic (modulo 2**64, which the final value undoes) for signed ones.
    steps = np.arange(count, dtype=np.uint64)
    if dtype.kind == "u":
        seq = np.uint64(start) + np.uint64(delta) * steps if delta >= 0 else \
            np.uint64(start) - np.uint64(-delta) * steps
    else:
        seq = np.int64(start) + np.int64(delta) * steps.astype(np.int64)
    return seq.astype(dtype)


# -- dispatchables --------------------------------------------------------------------------------
def operator_type(value: Any, where: str) -> DML_OPERATOR_TYPE:
    _expect(isinstance(value, str), where, "an operator type name", value)
    if value in OTHER_DISPATCHABLES:
        raise UnsupportedError(f"{where}: {OTHER_DISPATCHABLES[value]}")
    return _enum(DML_OPERATOR_TYPE, value, where)


def tensor_desc_from_json(value: Any, where: str) -> DML_TENSOR_DESC:
    obj = _object(value, where)
    if "Desc" in obj:
        _no_unknown(obj, {"Type", "Desc"}, where, "DML_TENSOR_DESC")
        if "Type" in obj:
            kind = _enum(DML_TENSOR_TYPE, obj["Type"], f"{where}.Type")
            _expect(kind == DML_TENSOR_TYPE.DML_TENSOR_TYPE_BUFFER, f"{where}.Type", "BUFFER",
                    obj["Type"])
        return tensor_desc_from_json(obj["Desc"], f"{where}.Desc")
    known = {"DataType", "Sizes", "Strides", "Flags", "DimensionCount", "TotalTensorSizeInBytes",
             "GuaranteedBaseOffsetAlignment"}
    _no_unknown(obj, known, where, "DML_BUFFER_TENSOR_DESC")
    for req in ("DataType", "Sizes"):
        if req not in obj:
            raise ModelError(f"{where}: {req} is required")

    def ints(key: str) -> tuple[int, ...] | None:
        if key not in obj:
            return None
        _expect(isinstance(obj[key], list), f"{where}.{key}", "an array", obj[key])
        return tuple(_int(v, f"{where}.{key}[{i}]") for i, v in enumerate(obj[key]))

    def opt_int(key: str) -> int | None:
        return _int(obj[key], f"{where}.{key}") if key in obj else None

    return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
        DataType=_enum(DML_TENSOR_DATA_TYPE, obj["DataType"], f"{where}.DataType"),
        Flags=_flags(DML_TENSOR_FLAGS, obj.get("Flags", []), f"{where}.Flags"),
        DimensionCount=opt_int("DimensionCount"), Sizes=ints("Sizes") or (),
        Strides=ints("Strides"), TotalTensorSizeInBytes=opt_int("TotalTensorSizeInBytes"),
        GuaranteedBaseOffsetAlignment=opt_int("GuaranteedBaseOffsetAlignment") or 0))


def _bool(value: Any, where: str) -> bool:
    _expect(isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)), where,
            "true or false", value)
    return bool(value)


def _scalar_union(value: Any, where: str) -> Any:
    """A number (read as the member the companion DataType field names) or ``{"Int32": 5}``."""
    if isinstance(value, dict):
        names = {f.name for f in dataclasses.fields(DML_SCALAR_UNION)}
        _no_unknown(value, names, where, "DML_SCALAR_UNION")
        members: dict[str, Any] = {k: _number(v, f"{where}.{k}") if k != "Bytes" else
                                   _array(v, f"{where}.Bytes", _int) for k, v in value.items()}
        return DML_SCALAR_UNION(**members)
    return _number(value, where)


def _array(value: Any, where: str, item: Callable[[Any, str], Any]) -> tuple:
    _expect(isinstance(value, list), where, "an array", value)
    return tuple(item(v, f"{where}[{i}]") for i, v in enumerate(value))


def _pair(struct: Any, reader: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """A two-member struct (DML_SCALE_BIAS, DML_SIZE_2D) as an object of its fields."""
    names = [f.name for f in dataclasses.fields(struct)]

    def read(value: Any, where: str) -> Any:
        obj = _object(value, where)
        _no_unknown(obj, set(names), where, struct.__name__)
        for n in names:
            if n not in obj:
                raise ModelError(f"{where}: {n} is required by {struct.__name__}")
        return struct(**{n: reader(obj[n], f"{where}.{n}") for n in names})

    return read


def _fused(value: Any, where: str) -> DML_OPERATOR_DESC:
    return operator_desc_from_json(value, where, fused=True)


def _float(value: Any, where: str) -> float:
    return _to_float(_number(value, where), where, "a FLOAT")


# How a model file writes each field type (descriptors.schema); enums are read by name.
_JSON_READERS: dict[str, Callable[[Any, str], Any]] = {
    schema.TENSOR: lambda v, w: tensor_desc_from_json(v, w),
    schema.TENSOR_ARRAY: lambda v, w: _array(v, w, tensor_desc_from_json),
    schema.OPERATOR_DESC: _fused,
    schema.OPERATOR_DESC_ARRAY: lambda v, w: _array(v, w, _fused),
    schema.UINT: _int, schema.INT: _int, schema.UINT64: _int,
    schema.FLOAT: _float, schema.BOOL: _bool,
    schema.UINT_ARRAY: lambda v, w: _array(v, w, _int),
    schema.INT_ARRAY: lambda v, w: _array(v, w, _int),
    schema.FLOAT_ARRAY: lambda v, w: _array(v, w, _float),
    schema.SCALE_BIAS: _pair(DML_SCALE_BIAS, _float),
    schema.SIZE_2D: _pair(DML_SIZE_2D, _int),
    schema.SCALAR_UNION: _scalar_union,
    **{e.__name__: functools.partial(_enum, e) for e in ENUMS},
}


def _field_value(f: Field, value: Any, where: str) -> Any:
    return _JSON_READERS[f.type](value, where)


def _desc_fields(sch: OperatorSchema, obj: dict, where: str, fused: bool) -> dict[str, Any]:
    known = {f.name for f in sch.fields}
    _no_unknown(obj, known, where, sch.struct_name)
    values = {}
    for f in sch.fields:
        if f.name in obj:
            values[f.name] = _field_value(f, obj[f.name], f"{where}.{f.name}")
        elif not (f.optional or f.is_count or (fused and f.is_tensor)):
            raise ModelError(f"{where}: {f.name} is required by {sch.struct_name}")
    return values


def operator_desc_from_json(value: Any, where: str, fused: bool = False) -> DML_OPERATOR_DESC:
    """``{"Type": ..., "Desc": {...}}`` or, flattened, ``{"Type": ..., fields...}``."""
    obj = _object(value, where)
    if "Type" not in obj:
        raise ModelError(f"{where}: Type is required")
    op = operator_type(obj["Type"], f"{where}.Type")
    sch = SCHEMA.get(op)
    if sch is None:
        raise ModelError(f"{where}.Type: {op.name} has no desc struct")
    fields = {k: v for k, v in obj.items() if k != "Type"}
    if "Desc" in fields:
        _no_unknown(obj, {"Type", "Desc"}, where, "DML_OPERATOR_DESC")
        fields = _object(fields["Desc"], f"{where}.Desc")
        where = f"{where}.Desc"
    return DML_OPERATOR_DESC(Type=op, Desc=OPERATOR_DESC_CLASSES[op](
        **_desc_fields(sch, fields, where, fused)))


@dataclass(frozen=True)
class BindingSource:
    """One buffer range of a binding: ``{name, elementOffset, elementCount}``."""

    where: str
    name: str
    element_offset: int = 0
    element_count: int | None = None


Bindings = dict[str, "BindingSource | list[BindingSource]"]


@dataclass
class Dispatchable:
    name: str
    operator: DML_OPERATOR_TYPE
    desc: DML_OPERATOR_DESC | None  # None: a serialized graph
    flags: DML_EXECUTION_FLAGS
    init_bindings: Any  # the raw object; parse_model turns it into Bindings
    as_graph: bool = False  # dmlCompileType DmlCompileGraph
    operator_object: IDMLOperator | None = None
    compiled: IDMLCompiledOperator | None = None
    temporary: Buffer | None = None  # a compiled graph's temporary resource
    # A dmlSerializedGraph dispatchable: the partition's records, its file, and (once compiled)
    # the graph with its bind-point names and constants.
    serialized: SerializedGraph | None = None
    source: Path | None = None
    graph: SerializedCompiled | None = None
    keep: list[Any] = field(default_factory=list)  # constant buffers, alive while it runs

    @property
    def schema(self) -> OperatorSchema:
        return SCHEMA[self.operator]

    def bind_point_names(self) -> list[str]:
        """What a binding may name: the operator's tensor fields, or a serialized graph's inputs
        and outputs (its constants are bound from their files)."""
        if self.serialized is not None:
            return [n for n in self.serialized.input_names + self.serialized.output_names if n]
        return [f.name for f in self.schema.fields if f.is_tensor]

    @property
    def kind(self) -> str:
        return "the serialized graph" if self.serialized is not None else self.schema.struct_name


def load_dispatchable(name: str, spec: Any) -> Dispatchable:
    where = f"dispatchables.{_key(name)}"
    obj = _object(spec, where)
    if "type" not in obj:
        raise ModelError(f"{where}: type is required")
    op = operator_type(obj["type"], f"{where}.type")
    sch = SCHEMA.get(op)
    if sch is None:
        raise ModelError(f"{where}.type: {op.name} is not an operator with a desc struct")
    key = "desc" if "desc" in obj else "Desc" if "Desc" in obj else None
    if key is not None:
        _no_unknown(obj, DISPATCHABLE_KEYS, where, "a DirectML dispatchable")
        fields, fwhere = _object(obj[key], f"{where}.{key}"), f"{where}.{key}"
    else:
        fields = {k: v for k, v in obj.items() if k not in DISPATCHABLE_KEYS}
        fwhere = where
    desc = DML_OPERATOR_DESC(Type=op, Desc=OPERATOR_DESC_CLASSES[op](
        **_desc_fields(sch, fields, fwhere, fused=False)))
    compile_type = obj.get("dmlCompileType", "DmlCompileOp")
    _expect(compile_type in ("DmlCompileOp", "DmlCompileGraph"), f"{where}.dmlCompileType",
            '"DmlCompileOp" or "DmlCompileGraph"', compile_type)
    flags = _flags(DML_EXECUTION_FLAGS, obj.get("executionFlags", []), f"{where}.executionFlags")
    bindings = _object(obj.get("bindings", {}), f"{where}.bindings")
    return Dispatchable(name, op, desc, flags, bindings, compile_type == "DmlCompileGraph")


# -- commands ------------------------------------------------------------------------------------
@dataclass
class DispatchCommand:
    where: str
    dispatchable: str
    bindings: Bindings
    raw: dict


@dataclass
class PrintCommand:
    where: str
    resource: str
    raw: dict


@dataclass
class WriteFileCommand:
    where: str
    resource: str
    target: Path
    target_text: str
    dimensions: tuple[int, ...] | None
    kind: str  # "npy", "image" or "raw"
    raw: dict


Command = DispatchCommand | PrintCommand | WriteFileCommand


# -- the model -----------------------------------------------------------------------------------
@dataclass
class Model:
    path: Path
    options: LoadOptions
    resource_specs: dict[str, ResourceSpec]
    dispatchables: dict[str, Dispatchable]
    unsupported_dispatchables: dict[str, UnsupportedError]
    dispatchable_names: list[str]          # every dispatchable, in the file's order
    commands: list[Command]
    budget: _Budget = field(repr=False, default_factory=lambda: _Budget(0))
    resources: dict[str, Resource] = field(default_factory=dict)  # filled by materialize()

    def unsupported(self) -> list[UnsupportedError]:
        """What this model needs that a CPU emulator cannot run, in the file's order."""
        return [s.unsupported for s in self.resource_specs.values() if s.unsupported] + \
            list(self.unsupported_dispatchables.values())


class _Parser:
    """Phase 1: the whole model checked without reading its data files."""

    def __init__(self, path: Path, options: LoadOptions):
        self.path, self.options = path, options
        self.budget = _Budget(options.max_resource_bytes)
        self.folder = path.parent

    # paths -------------------------------------------------------------------------------------
    def resolve(self, value: Any, where: str, base: Path | None, folder_name: str) -> Path:
        """A path inside the model's folder (or the folder the user named): absolute paths, '..'
        and symlinks that lead outside are refused unless the user allows them."""
        _expect(isinstance(value, str) and value != "", where, "a file path", value)
        if "\0" in value:
            raise ModelError(f"{where}: the path {_show(value)} contains a NUL character")
        root = base if base is not None else self.folder
        full = root / value
        if self.options.allow_paths_outside_model:
            return full
        hint = f"; pass {OUTSIDE_OPTION} to allow it"
        if Path(value).is_absolute():
            raise ModelError(f"{where}: {_show(value)} is an absolute path: a model reads and "
                             f"writes only inside {folder_name}{hint}")
        try:
            real, real_root = Path(os.path.realpath(full)), Path(os.path.realpath(root))
        except (OSError, ValueError) as e:
            raise ModelError(f"{where}: cannot resolve {_show(value)}: {e}") from None
        if not real.is_relative_to(real_root):
            raise ModelError(f"{where}: {_show(value)} leads outside {folder_name} "
                             f"({_show(str(real_root))[1:-1]}){hint}")
        return full

    def input_path(self, value: Any, where: str) -> Path:
        base = self.options.input_dir
        return self.resolve(value, where, base, "the input folder" if base else
                            "the model's folder")

    def output_path(self, value: Any, where: str) -> Path:
        base = self.options.output_dir
        return self.resolve(value, where, base, "the output folder" if base else
                            "the model's folder")

    # the document -------------------------------------------------------------------------------
    def parse(self) -> Model:
        doc = _object(parse_json(read_model_text(self.path, self.budget), str(self.path)),
                      "the model")
        self.budget = _Budget(self.options.max_resource_bytes)  # the text is freed after parsing
        for member in ("resources", "dispatchables", "commands"):
            if member not in doc:
                raise ModelError(f"the model has no '{member}' member")
        resources = {n: self.resource(n, s)
                     for n, s in _object(doc["resources"], "resources").items()}
        self.resources = resources
        dispatchables: dict[str, Dispatchable] = {}
        unsupported: dict[str, UnsupportedError] = {}
        names = list(_object(doc["dispatchables"], "dispatchables"))
        for n in names:
            try:
                spec = doc["dispatchables"][n]
                if isinstance(spec, dict) and spec.get("type") == "dmlSerializedGraph":
                    dispatchables[n] = self.serialized_graph(n, spec)
                else:
                    dispatchables[n] = load_dispatchable(n, spec)
            except UnsupportedError as e:
                unsupported[n] = e
        self.dispatchables, self.others = dispatchables, unsupported
        for d in dispatchables.values():
            d.init_bindings = self.bindings(d.init_bindings, f"dispatchables.{_key(d.name)}"
                                            ".bindings", d)
        commands = doc["commands"]
        _expect(isinstance(commands, list), "commands", "an array", commands)
        parsed = [self.command(i, c) for i, c in enumerate(commands)]
        return Model(self.path, self.options, resources, dispatchables, unsupported, names,
                     parsed, self.budget)

    def serialized_graph(self, name: str, spec: dict) -> Dispatchable:
        """A dmlSerializedGraph dispatchable: ONNX Runtime's partition file (``sourcePath``, beside
        its constants' ``<name>.bin`` files), read now: its names are the bind points."""
        where = f"dispatchables.{_key(name)}"
        _no_unknown(spec, SERIALIZED_KEYS, where, "a dmlSerializedGraph dispatchable")
        if "sourcePath" not in spec:
            raise ModelError(f"{where}: sourcePath is required")
        path = self.input_path(spec["sourcePath"], f"{where}.sourcePath")
        data = read_regular_file(path, f"{where}.sourcePath", "the serialized graph",
                                 self.budget)
        records = read_serialized(data, f"{where}: {path.name}")
        flags = _flags(DML_EXECUTION_FLAGS, spec.get("executionFlags", []),
                       f"{where}.executionFlags")
        bindings = _object(spec.get("bindings", {}), f"{where}.bindings")
        return Dispatchable(name, DML_OPERATOR_TYPE.DML_OPERATOR_INVALID, None, flags, bindings,
                            True, serialized=records, source=path)

    # resources ----------------------------------------------------------------------------------
    def resource(self, name: str, spec: Any) -> ResourceSpec:
        where = f"resources.{_key(name)}"
        obj = _object(spec, where)
        _no_unknown(obj, RESOURCE_KEYS, where, "a buffer resource")
        init = obj.get("initialValues")
        if isinstance(init, dict):
            _no_unknown(init, INITIALIZER_KEYS, f"{where}.initialValues", "an initializer")
        kind = obj.get("type", "buffer")
        _expect(kind == "buffer", f"{where}.type", '"buffer"', kind)
        if init is None:
            raise ModelError(f"{where}: initialValues is required")
        data_type = None
        if "initialValuesDataType" in obj:
            data_type = _enum(DML_TENSOR_DATA_TYPE, obj["initialValuesDataType"],
                              f"{where}.initialValuesDataType")
        offset = _count(obj.get("initialValuesOffsetInBytes", 0),
                        f"{where}.initialValuesOffsetInBytes", "a byte count >= 0")
        size = _count(obj["sizeInBytes"], f"{where}.sizeInBytes", "a byte count >= 0") \
            if "sizeInBytes" in obj else None
        self.budget.check(offset, f"{where}.initialValuesOffsetInBytes", "it asks for")
        if size is not None:
            self.budget.check(size, f"{where}.sizeInBytes", "it asks for")
        res = ResourceSpec(name, where, data_type, offset, size)
        if isinstance(init, list) and (data_type == T.DML_TENSOR_DATA_TYPE_UNKNOWN or (
                data_type is None and any(isinstance(v, dict) for v in init))):
            res.unsupported = UnsupportedError(f"{where}.initialValues: {LIST_INITIALIZER}")
            return res
        is_file = isinstance(init, dict) and "sourcePath" in init
        if "resampleSize" in obj or "resampleMode" in obj:
            suffix = Path(init["sourcePath"]).suffix.lower() \
                if is_file and isinstance(init["sourcePath"], str) else ""
            if suffix not in IMAGE_SUFFIXES:
                key = "resampleSize" if "resampleSize" in obj else "resampleMode"
                raise ModelError(f"{where}.{key}: applies only to a .jpg or .png sourcePath")
        if is_file:
            self.file_source(res, obj, init)
        elif data_type is None:
            raise ModelError(f"{where}: initialValuesDataType is required (except for .npy "
                             "sources)")
        else:
            if data_type not in NUMPY_DTYPE:
                raise ModelError(f"{where}.initialValuesDataType: {data_type.name} has no element "
                                 "type")
            self.inline(res, init, np.dtype(NUMPY_DTYPE[data_type]))
        return res

    def inline(self, res: ResourceSpec, init: Any, dtype: np.dtype) -> None:
        where = f"{res.where}.initialValues"
        values: np.ndarray | None
        if init == "deferred":
            values = None
        elif isinstance(init, list):
            if not init:
                raise ModelError(f"{where}: expected at least one value")
            self.budget.check(res.offset + len(init) * dtype.itemsize, where, "the data needs")
            values = _values(init, dtype, where)
        else:
            obj = _object(init, where)
            if "valueCount" not in obj:
                raise ModelError(f"{where}: expected an array, {{valueCount, value}}, "
                                 "{valueCount, valueStart, valueDelta}, {sourcePath} or "
                                 "\"deferred\"")
            count = _count(obj["valueCount"], f"{where}.valueCount", "a count > 0", minimum=1)
            self.budget.check(res.offset + count * dtype.itemsize, f"{where}.valueCount",
                              "the data needs")
            if "value" in obj:
                _no_unknown(obj, {"valueCount", "value"}, where, "a constant initializer")
                x = _scalar(obj["value"], dtype, f"{where}.value")
                if dtype.kind in "iu" and not np.iinfo(dtype).min <= x <= np.iinfo(dtype).max:
                    raise ModelError(f"{where}.value: {_show(x)} is out of range for "
                                     f"{dtype.name} [{np.iinfo(dtype).min}, "
                                     f"{np.iinfo(dtype).max}]")
                with np.errstate(over="ignore"):  # beyond float16/32 range: inf, as in C
                    one = np.array([x], np.float64 if dtype.kind == "f" else dtype).astype(dtype)
                values = np.full(count, one[0], dtype=dtype)
            elif "valueStart" in obj and "valueDelta" in obj:
                _no_unknown(obj, {"valueCount", "valueStart", "valueDelta"}, where,
                            "a sequence initializer")
                start = _scalar(obj["valueStart"], dtype, f"{where}.valueStart")
                delta = _scalar(obj["valueDelta"], dtype, f"{where}.valueDelta")
                values = _sequence(start, delta, count, dtype, where)
            else:
                raise ModelError(f"{where}: expected {{valueCount, value}} or {{valueCount, "
                                 "valueStart, valueDelta}")
        res.values = values
        need = 0 if values is None else res.offset + values.nbytes
        if res.size is not None and res.size < need:
            raise ModelError(f"{res.where}.sizeInBytes: {res.size} is smaller than the initial "
                             f"data ({need} bytes including initialValuesOffsetInBytes)")
        self.budget.take(res.size if res.size is not None else (need + 3) & ~3, res.where)

    def file_source(self, res: ResourceSpec, obj: dict, init: dict) -> None:
        where = f"{res.where}.initialValues.sourcePath"
        _no_unknown(init, {"sourcePath"}, f"{res.where}.initialValues", "a file initializer")
        res.source = self.input_path(init["sourcePath"], where)
        res.source_text = init["sourcePath"]
        suffix = res.source.suffix.lower()
        if suffix not in (".npy", *RAW_SUFFIXES, *IMAGE_SUFFIXES):
            raise ModelError(f"{where}: {_show(res.source_text)} must end in .npy, .dat, .bin, "
                             ".jpg or .png")
        if res.data_type is not None and res.data_type not in NUMPY_DTYPE:
            raise ModelError(f"{res.where}.initialValuesDataType: {res.data_type.name} has no "
                             "element type")
        if suffix in RAW_SUFFIXES and res.data_type is None:
            raise ModelError(f"{where}: raw files need initialValuesDataType")
        if suffix in IMAGE_SUFFIXES:
            self.image_source(res, obj)

    def image_source(self, res: ResourceSpec, obj: dict) -> None:
        where = res.where
        if res.data_type not in IMAGE_TYPES:
            raise ModelError(f"{where}.initialValuesDataType: an image source needs FLOAT32 or "
                             f"FLOAT16, got {_show(obj.get('initialValuesDataType'))}")
        mode = obj.get("resampleMode", "scale")
        _expect(mode == "scale", f"{where}.resampleMode", '"scale"', mode)
        if "resampleSize" not in obj:
            raise ModelError(f"{where}: an image source needs resampleSize [1, C, H, W] (C = 3 "
                             "for RGB, 4 for RGBA)")
        dims = _array(obj["resampleSize"], f"{where}.resampleSize",
                      lambda v, w: _count(v, w, "a size from 1 to 65535", 1, 65535))
        if len(dims) != 4 or dims[0] != 1 or dims[1] not in (3, 4):
            raise ModelError(f"{where}.resampleSize: expected [1, C, H, W] with C = 3 (RGB) or 4 "
                             f"(RGBA), got {list(dims)}")
        res.image = (dims[1], dims[2], dims[3])
        assert res.data_type is not None
        nbytes = math.prod(res.image) * np.dtype(NUMPY_DTYPE[res.data_type]).itemsize
        self.budget.check(res.offset + nbytes, f"{where}.resampleSize", "the image needs")

    # bindings and commands ----------------------------------------------------------------------
    def source(self, value: Any, where: str, strict: bool) -> BindingSource:
        if isinstance(value, str):
            return BindingSource(where, _name(value, where, "resource", self.resources))
        obj = _object(value, where)
        if strict:
            _no_unknown(obj, BINDING_KEYS, where, "a binding")
        if "name" not in obj:
            raise ModelError(f"{where}: name is required")
        name = _name(obj["name"], where, "resource", self.resources)
        offset = _count(obj.get("elementOffset", 0), f"{where}.elementOffset",
                        "an element offset >= 0")
        count = _count(obj["elementCount"], f"{where}.elementCount", "an element count >= 0") \
            if "elementCount" in obj else None
        return BindingSource(where, name, offset, count)

    def bindings(self, value: Any, where: str, d: Dispatchable | None) -> Bindings:
        obj = _object(value, where)
        if d is not None:
            points = d.bind_point_names()
            for point in obj:
                if point not in points:
                    raise ModelError(f"{where}.{_key(point)}: not a bind point of "
                                     f"{d.kind}{_suggestion(point, points)} "
                                     "(bind points: " + ", ".join(points) + ")")
        out: Bindings = {}
        for point, src in obj.items():
            w = f"{where}.{_key(point)}"
            if isinstance(src, list):
                out[point] = [self.source(s, f"{w}[{i}]", d is not None)
                              for i, s in enumerate(src)]
            else:
                out[point] = self.source(src, w, d is not None)
        return out

    def command(self, i: int, value: Any) -> Command:
        where = f"commands[{i}]"
        obj = _object(value, where)
        kind = obj.get("type")
        if not isinstance(kind, str) or kind not in COMMAND_KEYS:
            raise ModelError(f"{where}.type: expected \"dispatch\", \"print\" or \"writeFile\", "
                             f"got {_show(kind)}")
        _no_unknown(obj, COMMAND_KEYS[kind], where, f"a {kind} command")
        if kind == "dispatch":
            known = {**self.dispatchables, **self.others}
            name = _name(obj.get("dispatchable"), f"{where}.dispatchable", "dispatchable", known)
            d = self.dispatchables.get(name)
            if "threadGroupCount" in obj and d is not None:
                raise ModelError(f"{where}.threadGroupCount: applies only to HLSL dispatchables")
            bindings = self.bindings(obj.get("bindings", {}), f"{where}.bindings", d)
            return DispatchCommand(where, name, bindings, obj)
        resource = _name(obj.get("resource"), f"{where}.resource", "resource", self.resources)
        if kind == "print":
            if "verbose" in obj:
                _bool(obj["verbose"], f"{where}.verbose")
            return PrintCommand(where, resource, obj)
        target = self.output_path(obj.get("targetPath"), f"{where}.targetPath")
        suffix = target.suffix.lower()
        dims = None
        if "dimensions" in obj:
            dims = _array(obj["dimensions"], f"{where}.dimensions",
                          lambda v, w: _count(v, w, f"a size from 0 to {UINT32_MAX}", 0,
                                              UINT32_MAX))
        if suffix in OTHER_IMAGE_SUFFIXES:
            raise ModelError(f"{where}.targetPath: {_show(obj['targetPath'])}: images are written "
                             "as .png or .jpg (as DxDispatch writes them)")
        kind = "npy" if suffix == ".npy" else "image" if suffix in IMAGE_SUFFIXES else "raw"
        if kind == "image":
            if dims is None or len(dims) != 4 or dims[0] != 1 or dims[1] not in (1, 3, 4) \
                    or 0 in dims:
                raise ModelError(f"{where}.dimensions: an image needs dimensions [1, C, H, W] "
                                 f"with C = 1 (gray), 3 (RGB) or 4 (RGBA), got "
                                 f"{_show(list(dims) if dims is not None else None)}")
            if suffix == ".jpg" and dims[1] == 4:
                raise ModelError(f"{where}.dimensions: a .jpg has no alpha channel: write C = 1 "
                                 "or 3, or a .png")
            data_type = self.resources[resource].data_type
            if data_type is not None and data_type not in IMAGE_TYPES:
                raise ModelError(f"{where}.resource: an image is written from FLOAT32 or FLOAT16 "
                                 f"data; '{_key(resource)}' holds {short_name(data_type)}")
        return WriteFileCommand(where, resource, target, obj["targetPath"], dims, kind, obj)


def parse_model(path: str | Path, options: LoadOptions | None = None) -> Model:
    """Phase 1: the model checked (keys, names, values, sizes, paths) without reading data files.
    ``check`` stops here; ``run`` goes on with ``materialize``."""
    return _Parser(Path(path), options or LoadOptions()).parse()


def materialize(model: Model) -> None:
    """Phase 2: read the data files and allocate every buffer (charged to the model's budget)."""
    # Where the imaging library is needed and missing, say so before anything is read or run.
    for res in model.resource_specs.values():
        if res.image is not None:
            _pillow(f"{res.where}.initialValues.sourcePath",
                    f"reading the image {_show(res.source_text)}")
    for cmd in model.commands:
        if isinstance(cmd, WriteFileCommand) and cmd.kind == "image":
            _pillow(f"{cmd.where}.targetPath", f"writing the image {_show(cmd.target_text)}")
    for res in model.resource_specs.values():
        model.resources[res.name] = _materialize(res, model.budget)


def _materialize(res: ResourceSpec, budget: _Budget) -> Resource:
    data_type = res.data_type
    values = res.values
    if res.source is not None:
        where = f"{res.where}.initialValues.sourcePath"
        shown = _show(res.source_text)
        data = read_regular_file(res.source, where, shown, budget)
        suffix = res.source.suffix.lower()
        if suffix == ".npy":
            values = _npy(data, where, shown)
            if data_type is None:
                try:
                    data_type = data_type_of_numpy(values.dtype)
                except KeyError:
                    raise ModelError(f"{res.where}: .npy dtype {values.dtype} has no DML data "
                                     "type") from None
            elif values.dtype != np.dtype(NUMPY_DTYPE[data_type]):
                raise ModelError(f"{where}: {shown} holds {values.dtype} data but "
                                 f"initialValuesDataType says {NUMPY_DTYPE[data_type]}")
        elif res.image is not None:
            assert data_type is not None
            values = image_to_tensor(data, *res.image, np.dtype(NUMPY_DTYPE[data_type]), where,
                                     shown)
        else:
            assert data_type is not None
            dtype = np.dtype(NUMPY_DTYPE[data_type])
            if len(data) % dtype.itemsize:
                raise ModelError(f"{where}: {shown} has {len(data)} bytes, not a multiple of "
                                 f"{dtype.itemsize} ({dtype.name})")
            values = np.frombuffer(data, dtype=dtype)
        del data
        need = res.offset + values.nbytes
        if res.size is not None and res.size < need:
            raise ModelError(f"{res.where}.sizeInBytes: {res.size} is smaller than the initial "
                             f"data ({need} bytes including initialValuesOffsetInBytes)")
        budget.take(res.size if res.size is not None else (need + 3) & ~3, res.where)
    assert data_type is not None
    need = 0 if values is None else res.offset + values.nbytes
    size = res.size if res.size is not None else (need + 3) & ~3
    buffer = Buffer(size)
    if values is not None:
        buffer.numpy()[res.offset:need] = values.reshape(-1).view(np.uint8)
    return Resource(res.name, data_type, buffer)


def load_model(path: str | Path, options: LoadOptions | None = None) -> Model:
    """Both phases: the model checked, then (if a CPU emulator can run all of it) its data read
    and its buffers allocated."""
    model = parse_model(path, options)
    unsupported = model.unsupported()
    if unsupported:
        raise unsupported[0]
    materialize(model)
    return model


# -- running ---------------------------------------------------------------------------------------
def format_value(v: Any) -> str:
    """A number as C++ ``ostream <<`` writes it (6 significant digits for floats)."""
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return format(f, ".6g")
    return str(int(v))


@dataclass(frozen=True)
class Timing:
    """DxDispatch's timing options (-i, -r, -t, -I, -w, -v)."""

    iterations: int = 1
    repeat: int = 1
    milliseconds: int | None = None
    interval_ms: int = 0
    warmup: int = 1
    verbosity: int = 0

    @property
    def report(self) -> bool:
        """Timing lines are printed only when timing was asked for (so plain output stays
        comparable with golden files)."""
        return self.iterations > 1 or self.repeat > 1 or self.milliseconds is not None \
            or self.verbosity > 0


def _stats(samples: list[float]) -> str:
    s = sorted(samples)
    return (f"{len(s)} samples, {sum(s) / len(s):.4f} ms average, {s[0]:.4f} ms min, "
            f"{s[len(s) // 2]:.4f} ms median, {s[-1]:.4f} ms max")


class Runner:
    """Runs a materialized model on a device: creates its operators, initializes them, executes
    its commands."""

    def __init__(self, model: Model, device: IDMLDevice, out: IO[str] = sys.stdout,
                 timing: Timing | int | None = None,
                 progress: Callable[[str, int, int], None] | None = None,
                 print_commands: bool = False):
        self.model, self.device, self.out = model, device, out
        self.timing = Timing(iterations=timing) if isinstance(timing, int) else timing or Timing()
        self.progress = progress
        self.print_commands = print_commands
        self.queue = CommandQueue()
        self.recorder = device.CreateCommandRecorder()

    def _binding(self, src: BindingSource) -> DML_BUFFER_BINDING:
        res = self.model.resources[src.name]
        item = res.dtype.itemsize
        offset = src.element_offset * item
        if offset > res.buffer.size_in_bytes:
            raise ModelError(f"{src.where}.elementOffset: byte offset {offset} lies outside "
                             f"'{_key(src.name)}' ({res.buffer.size_in_bytes} bytes)")
        size = res.buffer.size_in_bytes - offset  # to the end, unless elementCount says less
        if src.element_count is not None:
            if src.element_count * item > size:
                raise ModelError(f"{src.where}.elementCount: {src.element_count} elements from "
                                 f"element {src.element_offset} do not fit in "
                                 f"'{_key(src.name)}'")
            size = src.element_count * item
        return DML_BUFFER_BINDING(Buffer=res.buffer, Offset=offset, SizeInBytes=size)

    def _bind_points(self, d: Dispatchable, bindings: Bindings) -> tuple[list[Any], list[Any]]:
        """One DML_BINDING_DESC per bind point of the compiled operator (None: nothing bound). A
        tensor array (JOIN's InputTensors) has one bind point per tensor, each bound to the
        matching entry of the binding's list, as DxDispatch flattens them."""
        def buffer(src: BindingSource) -> Any:
            return DML_BINDING_DESC(Type=DML_BINDING_TYPE.DML_BINDING_TYPE_BUFFER,
                                    Desc=self._binding(src))

        if d.graph is not None:  # a serialized graph: bound by its input and output names
            def named(name: str) -> Any:
                src = bindings.get(name)
                if isinstance(src, list):
                    raise ModelError(f"bindings.{_key(name)}: a graph input or output takes one "
                                     "binding, not an array")
                return None if src is None else buffer(src)

            constants = set(d.graph.constants)
            return ([None if i in constants else named(n)
                     for i, n in enumerate(d.graph.input_names)],
                    [named(n) for n in d.graph.output_names])
        assert d.operator_object is not None
        validated = d.operator_object.validated

        def points(f: Field) -> list[Any]:
            src = bindings.get(f.name)
            tensors = validated.tensor(f.name)
            if not isinstance(tensors, tuple):
                if isinstance(src, list):
                    raise ModelError(f"bindings.{f.name}: an array of bindings was given for a "
                                     "bind point that takes one tensor")
                return [None if src is None else buffer(src)]
            if src is None:
                return [None] * len(tensors)
            sources = src if isinstance(src, list) else [src]
            if len(sources) < len(tensors):
                raise ModelError(f"bindings.{f.name}: {len(sources)} binding(s) given for a "
                                 f"tensor array of more tensors (no binding for "
                                 f"{f.name}[{len(sources)}])")
            return [buffer(s) for s in sources[:len(tensors)]]

        inputs = [b for f in d.schema.inputs for b in points(f)]
        outputs = [b for f in d.schema.outputs for b in points(f)]
        if d.as_graph:  # the one-node graph's outputs: the operator's present ones
            outputs = [b for b, (_, t) in zip(outputs, operator_bind_points(validated, "output"))
                       if t is not None]
        return inputs, outputs

    def _table(self, dispatchable: Any) -> Any:
        need = dispatchable.GetBindingProperties().RequiredDescriptorCount
        return self.device.CreateBindingTable(DML_BINDING_TABLE_DESC(
            Dispatchable=dispatchable, SizeInDescriptors=need))

    def _record(self, dispatchable: Any, table: Any) -> CommandList:
        commands = CommandList()
        self.recorder.RecordDispatch(commands, dispatchable, table)
        commands.Close()
        return commands

    def prepare(self) -> None:
        """Create, compile and initialize every dispatchable (OWNED_BY_DML inputs bound here)."""
        for d in self.model.dispatchables.values():
            t0 = time.perf_counter()
            if d.serialized is not None:
                owned = self._compile_serialized(d)
            else:
                d.operator_object = self.device.CreateOperator(d.desc)
                d.compiled = self.device.CompileGraph(single_node_graph(d.operator_object),
                                                      d.flags) \
                    if d.as_graph else self.device.CompileOperator(d.operator_object, d.flags)
                owned = [None if b is None else b.Desc
                         for b in self._bind_points(d, d.init_bindings)[0]]
            assert d.compiled is not None
            temporary = d.compiled.GetBindingProperties().TemporaryResourceSize
            d.temporary = Buffer(temporary) if temporary else None
            init = self.device.CreateOperatorInitializer([d.compiled])
            table = self._table(init)
            if any(b is not None for b in owned):
                table.BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[
                    b if b is not None else DML_BUFFER_BINDING() for b in owned])])
            self.queue.ExecuteCommandLists([self._record(init, table)])
            if self.timing.verbosity >= 1:
                ms = (time.perf_counter() - t0) * 1e3
                print(f"Initialize '{d.name}': {ms:.4f} ms", file=self.out)

    def _compile_serialized(self, d: Dispatchable) -> list[DML_BUFFER_BINDING | None]:
        """Compile a serialized graph; its initializer's bindings: the named constants' bytes
        (bound once, at initialization), None for the other graph inputs."""
        assert d.serialized is not None and d.source is not None
        folder, where = d.source.parent, f"dispatchables.{_key(d.name)}"

        def load(name: str) -> bytes:
            # (a plain file name: serialized.read refuses separators; a symlink out of the
            # partition's folder is refused as any path outside the model is)
            path, here = folder / f"{name}.bin", f"{where}: constant {_show(name)}"
            if not self.model.options.allow_paths_outside_model and not Path(
                    os.path.realpath(path)).is_relative_to(os.path.realpath(folder)):
                raise ModelError(f"{here}: {_show(str(path))} leads outside the partition's "
                                 f"folder; pass {OUTSIDE_OPTION} to allow it")
            return read_regular_file(path, here, "the constant", self.model.budget)

        d.graph = serialized_to_graph(self.device, d.serialized, load, f"{where}: "
                                      f"{d.source.name}")
        d.compiled = self.device.CompileGraph(d.graph.desc, d.flags)
        d.keep = [Buffer.from_array(np.frombuffer(b, np.uint8)) for b in
                  d.graph.constants.values()]
        by_index = dict(zip(d.graph.constants, d.keep))
        return [DML_BUFFER_BINDING(Buffer=by_index[i]) if i in by_index else None
                for i in range(len(d.graph.input_names))]

    def run(self) -> None:
        self.prepare()
        for i, command in enumerate(self.model.commands):
            if not self.print_commands:
                self.execute(command)
                continue
            # DxDispatch's --print_commands lines (its console logger's format).
            print(f"[StartCmd][{i:04}]\t: {json.dumps(command.raw, separators=(',', ':'))}",
                  file=self.out)
            try:
                self.execute(command)
            except (DMLError, ModelError) as e:
                hr = e.hresult if isinstance(e, DMLError) else 0x80004005
                print(f"[EndCmd][{i:04}]\t: hr={hr:<#010x} {e}\n", file=self.out)
                raise
            print(f"[EndCmd][{i:04}]\t: hr={0:<#010x} \n", file=self.out)

    def execute(self, command: Command) -> None:
        if isinstance(command, DispatchCommand):
            self.dispatch(command)
        elif isinstance(command, PrintCommand):
            self.print(self.model.resources[command.resource])
        else:
            self.write_file(command)

    def dispatch(self, cmd: DispatchCommand) -> None:
        d = self.model.dispatchables[cmd.dispatchable]
        inputs, outputs = self._bind_points(d, cmd.bindings)
        table = self._table(d.compiled)
        table.BindInputs(inputs)
        table.BindOutputs(outputs)
        if d.temporary is not None:
            table.BindTemporaryResource(DML_BUFFER_BINDING(Buffer=d.temporary))
        commands = self._record(d.compiled, table)
        t = self.timing
        if not t.report:
            self.queue.ExecuteCommandLists([commands])
            return
        # DxDispatch's loop: each sample is the mean of `repeat` dispatches; -t runs until the
        # time is up instead of counting iterations; -I keeps dispatches at least that far apart.
        samples: list[float] = []
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            for _ in range(t.repeat):
                self.queue.ExecuteCommandLists([commands])
            t1 = time.perf_counter()
            samples.append((t1 - t0) * 1e3 / t.repeat)
            if self.progress and t.milliseconds is None:
                self.progress(d.name, len(samples), t.iterations)
            sleep = max(0.0, t.interval_ms - (time.perf_counter() - t0) * 1e3)
            if t.milliseconds is not None:
                if (time.perf_counter() - start) * 1e3 + sleep > t.milliseconds:
                    break
            elif len(samples) >= t.iterations:
                break
            if sleep:
                time.sleep(sleep / 1e3)
        self._report(d.name, samples)

    def _report(self, name: str, samples: list[float]) -> None:
        # The first samples (JIT compile, cold caches) are "cold", the rest "hot"; at least one
        # sample is hot. The median is the upper median, as DxDispatch takes it.
        cold_count = min(len(samples) - 1, self.timing.warmup)
        cold, hot = samples[:cold_count], samples[cold_count:]
        if self.timing.verbosity == 0:
            median = sorted(hot)[len(hot) // 2]
            print(f"Dispatch '{name}': {len(samples)} iterations, {median:.4f} ms median (CPU)",
                  file=self.out)
        else:
            print(f"Dispatch '{name}': {len(samples)} iterations", file=self.out)
            if cold:
                print(f"CPU Timings (Cold) : {_stats(cold)}", file=self.out)
            print(f"CPU Timings (Hot)  : {_stats(hot)}", file=self.out)
        if self.timing.verbosity >= 2:
            print("The timings of each iteration: ", file=self.out)
            for i, s in enumerate(samples):
                print(f"iteration {i}: {s:.4f} ms (CPU)", file=self.out)

    def print(self, res: Resource) -> None:
        values = res.buffer.numpy(res.dtype)
        print(f"Resource '{res.name}': " + ", ".join(format_value(v) for v in values.tolist()),
              file=self.out)

    def write_file(self, cmd: WriteFileCommand) -> None:
        res = self.model.resources[cmd.resource]
        values = res.buffer.numpy(res.dtype)
        where, shown = cmd.where, _show(cmd.target_text)
        if cmd.kind == "npy":
            shape = cmd.dimensions if cmd.dimensions is not None else (values.size,)
            count = math.prod(shape)
            if count > values.size:
                raise ModelError(f"{where}.dimensions: {list(shape)} needs {count} elements; "
                                 f"'{_key(res.name)}' holds {values.size}")
            out = io.BytesIO()
            np.save(out, values[:count].reshape(shape))
            data = out.getvalue()
        elif cmd.kind == "image":
            assert cmd.dimensions is not None
            _, c, h, w = cmd.dimensions
            if res.data_type not in IMAGE_TYPES:
                raise ModelError(f"{where}.resource: an image is written from FLOAT32 or FLOAT16 "
                                 f"data; '{_key(res.name)}' holds {short_name(res.data_type)}")
            if c * h * w > values.size:
                raise ModelError(f"{where}.dimensions: {list(cmd.dimensions)} needs {c * h * w} "
                                 f"elements; '{_key(res.name)}' holds {values.size}")
            fmt = "PNG" if cmd.target.suffix.lower() == ".png" else "JPEG"
            data = tensor_to_image(values, (c, h, w), fmt, f"{where}.targetPath", shown)
        else:
            data = res.buffer.numpy().tobytes()
        write_regular_file(cmd.target, data, f"{where}.targetPath", shown)
