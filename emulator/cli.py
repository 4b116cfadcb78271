"""The ``dml-emulator`` command line: ``run`` DxDispatch model files (also as plain
``dml-emulator MODEL.json``, as ``dxdispatch MODEL.json``), ``check`` the feature level each
dispatchable needs, and describe the emulated device (``info``).

Exit status: 0 on success; 2 for every user error (a bad option, file or model, any DMLError),
printed as one line on stderr; 1 when ``check`` finds a dispatchable invalid at every level (or
when standard output is closed early, as by ``| head``); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from descriptors import DML_TENSOR_DATA_TYPE, short_name

from . import __version__
from .device import DMLCreateDevice1, supports_data_type
from .errors import DMLError
from .featurelevels import (
    ALL_LEVELS,
    EMULATED_LEVELS,
    ENV_VAR,
    MAX_EMULATED,
    default_level,
    level_name,
    parse_level,
    short_level,
)
from .graph import LEVEL_GRAPHS
from .registry import REGISTRY, min_feature_level, validate_operator

EXIT_USER_ERROR = 2
EXIT_INVALID = 1      # check: a dispatchable is invalid at every feature level
EXIT_BROKEN_PIPE = 1  # as Python's documentation recommends for EPIPE
EXIT_INTERRUPTED = 130
COMMANDS = ("run", "check", "info")


class UsageError(Exception):
    """A user error found by the command line itself: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- DxDispatch's options that mean nothing on a CPU: refused with the reason, one line ----------
_GPU = "has no meaning on a CPU emulator"
_NO_MEANING: list[tuple[tuple[str, ...], bool, str, str]] = [
    # (names, takes a value, what it does in DxDispatch, why not here)
    (("-a", "--adapter"), True, "selects a DirectX adapter", _GPU),
    (("-s", "--show_adapters"), False, "lists DirectX adapters", _GPU),
    (("-d", "--debug"), False, "enables the D3D12 and DirectML debug layers",
     _GPU + " (every call is validated and reported as DMLError anyway)"),
    (("-q", "--queue_type"), True, "chooses the D3D12 command queue type", _GPU),
    (("--disable_custom_heaps",), False, "chooses D3D12 heap types", _GPU),
    (("--clear_shader_caches",), False, "clears the D3D12 shader caches", _GPU),
    (("--disable_gpu_timeout",), False, "disables the D3D12 queue's GPU timeout", _GPU),
    (("--enable_dred",), False, "enables D3D12 device-removed extended data", _GPU),
    (("--disable_background_processing",), False, "stops the GPU driver's background work",
     _GPU),
    (("--set_stable_power_state",), False, "fixes the GPU clock rate", _GPU),
    (("--disable_agility_sdk",), False, "chooses the system's D3D12Core.dll", _GPU),
    (("--post_dispatch_barriers",), True, "chooses the D3D12 barriers after each dispatch",
     _GPU),
    (("--max_gpu_time_measurements",), True, "sizes the GPU timestamp buffer", _GPU),
    (("--present_separator",), False, "presents a frame between passes for GPU tools", _GPU),
    (("-c", "--pix_capture_type"), True, "takes PIX captures", _GPU),
    (("-o", "--pix_capture_name"), True, "names PIX capture files", _GPU),
    (("--print_hlsl_disassembly",), False, "prints HLSL shader bytecode",
     _GPU + ": HLSL dispatchables are not supported"),
    (("--xbox_allow_precompile",), False, "controls HLSL precompilation on Xbox",
     _GPU + ": HLSL dispatchables are not supported"),
    *(((short, long), value, "configures ONNX Runtime", _GPU + ": ONNX models are not supported")
      for short, long, value in [
          ("-f", "--onnx_free_dim_name_override", True),
          ("-F", "--onnx_free_dim_denotation_override", True),
          ("-e", "--onnx_session_config_entry", True), ("-b", "--binding_shape", True),
          ("-l", "--onnx_graph_optimization_level", True), ("-L", "--onnx_logging_level", True),
          ("-p", "--print_onnx_bindings", False), ("-x", "--enable_ort_extensions", False)]),
    (("--enable_onnx_profiling",), False, "profiles ONNX Runtime",
     _GPU + ": ONNX models are not supported"),
]


class _NoMeaning(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, purpose: str = "", why: str = "",
                 **kwargs: Any):
        super().__init__(option_strings, dest, **kwargs)
        self.purpose, self.why = purpose, why

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None
                 ) -> None:
        names = "/".join(self.option_strings)
        raise UsageError(f"DxDispatch's {names} ({self.purpose}) {self.why}")


# -- option values --------------------------------------------------------------------------------
def _level(text: str) -> Any:
    try:
        return parse_level(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _integer(minimum: int, maximum: int, what: str) -> Any:
    def read(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = minimum - 1
        if not minimum <= n <= maximum:
            raise argparse.ArgumentTypeError(f"'{text}' is not {what}")
        return n

    return read


def _bytes(text: str) -> int:
    from .dxdispatch import parse_byte_count

    try:
        return parse_byte_count(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


U32 = (1 << 32) - 1


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """What a model may touch: the same for run and check, so both see the same model."""
    p.add_argument("--feature-level", "--dml_feature_level", type=_level, default=None,
                   metavar="LEVEL",
                   help=f"the feature level to emulate: 3_1, 3.1 or 0x3100 (default: "
                        f"${ENV_VAR} or {short_level(MAX_EMULATED)})")
    p.add_argument("--allow-paths-outside-model", action="store_true",
                   help="let the model read and write files outside its folder (absolute paths, "
                        "'..', symlinks that lead out)")
    p.add_argument("--max-resource-bytes", type=_bytes, default=None, metavar="N",
                   help="the most bytes the model's resources may use together, e.g. 8GiB "
                        "(default: $DML_EMULATOR_MAX_RESOURCE_BYTES or 4GiB)")
    p.add_argument("--input_path", type=Path, default=None, metavar="DIR",
                   help="read data files (sourcePath) inside DIR instead of the model's folder")
    p.add_argument("--output_path", type=Path, default=None, metavar="DIR",
                   help="write files (writeFile) inside DIR instead of the model's folder")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dml-emulator",
                description="Run DxDispatch model files on an emulated DirectML device, check "
                            "the feature level each dispatchable needs, describe the device.",
                usage="dml-emulator [run] MODEL.json [options] | check MODEL.json [options] | "
                      "info [--json]",
                epilog="dml-emulator MODEL.json runs the model, as dxdispatch MODEL.json does.")
    p.add_argument("--version", action="version", version=f"dml-emulator {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{run,check,info}")
    run = sub.add_parser("run", help="run a DxDispatch model file (the default command)",
                         prog="dml-emulator [run]", allow_abbrev=False)
    run.add_argument("model", nargs="?", help="the model (.json; comments and trailing commas "
                                              "allowed)")
    run.add_argument("-m", "--model", dest="model_option", metavar="MODEL",
                     help="the model, as DxDispatch's -m names it")
    _add_model_options(run)
    timing = run.add_argument_group("timing (DxDispatch's options; timing lines are printed "
                                    "when one of -i N>1, -r, -t or -v is given)")
    timing.add_argument("-i", "--iterations", "--dispatch_iterations", type=_integer(
        1, U32, "a positive number of iterations"), default=1, metavar="N",
        help="dispatch N times and print the median time")
    timing.add_argument("-r", "--dispatch_repeat", type=_integer(
        1, U32, "a positive repeat count"), default=1, metavar="N",
        help="dispatch N times per timed iteration (the sample is their mean)")
    timing.add_argument("-t", "--milliseconds_to_run", type=_integer(
        1, U32, "a positive number of milliseconds"), default=None, metavar="MS",
        help="dispatch until MS milliseconds have passed (instead of -i)")
    timing.add_argument("-I", "--dispatch_interval", type=_integer(
        0, U32, "a number of milliseconds"), default=0, metavar="MS",
        help="start dispatches at least MS milliseconds apart")
    timing.add_argument("-w", "--warmup_samples", type=_integer(
        0, U32, "a number of samples"), default=1, metavar="N",
        help="leave the first N samples out of the hot statistics (default 1)")
    timing.add_argument("-v", "--timing_verbosity", type=_integer(
        0, 2, "0, 1 or 2"), default=0, metavar="{0,1,2}",
        help="0: median; 1: cold and hot statistics; 2: every iteration too")
    run.add_argument("--print_commands", action="store_true",
                     help="print each command before and after it runs (DxDispatch's format)")
    run.add_argument("-S", "--show_dependencies", action="store_true",
                     help="print the versions of the packages the emulator uses")
    for names, takes_value, purpose, why in _NO_MEANING:
        run.add_argument(*names, action=_NoMeaning, nargs="?" if takes_value else 0,
                         purpose=purpose, why=why, default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
    check = sub.add_parser("check", help="report the lowest feature level of each dispatchable",
                           prog="dml-emulator check", allow_abbrev=False)
    check.add_argument("model")
    _add_model_options(check)
    check.add_argument("--json", action="store_true", help="machine-readable output")
    info = sub.add_parser("info", help="describe the emulated device", prog="dml-emulator info",
                          allow_abbrev=False)
    info.add_argument("--json", action="store_true", help="machine-readable output")
    return p


# -- helpers --------------------------------------------------------------------------------------
def device_level(requested: Any) -> Any:
    """The level to emulate: the option, else $DML_EMULATOR_FEATURE_LEVEL, else 6_4; a level
    that cannot be emulated is a user error, never a silent fallback."""
    if requested is None:
        try:
            requested = default_level()
        except ValueError as e:
            raise UsageError(f"{ENV_VAR}: {e}") from None
    if requested not in EMULATED_LEVELS:
        raise UsageError(f"{level_name(requested)} cannot be emulated (emulated: "
                         + ", ".join(short_level(x) for x in EMULATED_LEVELS) + ")")
    return requested


def _load_options(args: argparse.Namespace) -> Any:
    from .dxdispatch import LoadOptions, max_resource_bytes_from_env

    limit = args.max_resource_bytes
    return LoadOptions(
        max_resource_bytes=limit if limit is not None else max_resource_bytes_from_env(),
        allow_paths_outside_model=args.allow_paths_outside_model,
        input_dir=args.input_path, output_dir=args.output_path)


def _progress(name: str, done: int, total: int) -> None:
    if total < 20 or not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r{name}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def dependencies() -> dict[str, str]:
    """The versions of what the emulator runs on (DxDispatch's -S)."""
    from importlib import metadata

    out = {"dml-emulator": __version__, "python": sys.version.split()[0]}
    for dist in ("numpy", "numba", "json5", "Pillow"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed" + (' (images: pip install "dml-emulator[images]")'
                                           if dist == "Pillow" else "")
    return out


# -- commands ------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    from .dxdispatch import Runner, Timing, load_model

    if args.show_dependencies:
        for name, version in dependencies().items():
            print(f"{name}: {version}")
    if args.model and args.model_option:
        raise UsageError("give the model once: as MODEL.json or as -m MODEL.json")
    path = args.model or args.model_option
    if path is None:
        if args.show_dependencies:
            return 0
        raise UsageError("no model file given (dml-emulator MODEL.json; see dml-emulator run "
                         "--help)")
    level = device_level(args.feature_level)
    model = load_model(path, _load_options(args))
    device = DMLCreateDevice1(feature_level=level)
    timing = Timing(iterations=args.iterations, repeat=args.dispatch_repeat,
                    milliseconds=args.milliseconds_to_run, interval_ms=args.dispatch_interval,
                    warmup=args.warmup_samples, verbosity=args.timing_verbosity)
    Runner(model, device, sys.stdout, timing, _progress, args.print_commands).run()
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .dxdispatch import parse_model

    level = device_level(args.feature_level)
    model = parse_model(args.model, _load_options(args))
    results, ok = [], True
    for name in model.dispatchable_names:
        entry: dict[str, Any] = {"dispatchable": name}
        if name in model.unsupported_dispatchables:
            entry["min_feature_level"] = None
            entry["unsupported"] = str(model.unsupported_dispatchables[name])
        else:
            d = model.dispatchables[name]
            if d.serialized is not None:
                ok &= _check_serialized(d, entry, level)
                results.append(entry)
                continue
            entry["operator"] = short_name(d.operator)
            lowest = min_feature_level(d.desc)
            if d.as_graph:  # a one-node graph: CompileGraph is IDMLDevice1's, from 2_1
                entry["compile"] = "DmlCompileGraph"
                if lowest is not None:
                    lowest = max(lowest, LEVEL_GRAPHS)
            entry["min_feature_level"] = short_level(lowest) if lowest else None
            # This desc's executability (a data type or mode its kernel lacks), where it is valid.
            spec = REGISTRY[d.operator]
            why = spec.not_executable_because(validate_operator(d.desc, lowest)[1]) \
                if lowest and spec.executable else None
            entry["executable"] = spec.executable and why is None
            if why:
                entry["not_executable"] = why
            if lowest is None:
                try:
                    validate_operator(d.desc, level)
                    entry["error"] = "invalid at every feature level"
                except DMLError as e:
                    entry["error"] = str(e)
                ok = False
        results.append(entry)
    if args.json:
        print(json.dumps({"model": str(args.model), "device_level": short_level(level),
                          "dispatchables": results}, indent=2))
    else:
        for r in results:
            if r["min_feature_level"]:
                print(f"{r['dispatchable']}: {r['operator']} is valid from "
                      f"DML_FEATURE_LEVEL_{r['min_feature_level']}"
                      + (" as a one-node graph (CompileGraph)" if "compile" in r else "")
                      + (f" as a serialized graph ({r['graph']})" if "graph" in r else "")
                      + ("" if r["executable"] else " (validation only: not yet executable here"
                         + (f": {r['not_executable']})" if "not_executable" in r else ")")))
            elif "unsupported" in r:
                print(f"{r['dispatchable']}: not checked: {r['unsupported']}")
            else:
                print(f"{r['dispatchable']}: invalid at every feature level: {r['error']}")
    return 0 if ok else EXIT_INVALID


def _check_serialized(d: Any, entry: dict[str, Any], level: Any) -> bool:
    """A dmlSerializedGraph dispatchable: the lowest level at which every operator node and the
    graph itself (CompileGraph: 2_1; inline constant data: 6_2) are valid."""
    from . import DMLCreateDevice1
    from .graph import LEVEL_CONSTANTS, compile_graph
    from .serialized import to_graph

    graph = d.serialized
    where = f"dispatchables.{d.name}"
    try:  # the graph as run builds it (constants' files unread): every node and edge rule
        device = DMLCreateDevice1(feature_level=level)
        built = to_graph(device, graph, lambda name: b"", where)
        # every graph rule; a node this emulator cannot run yet is reported below, not an error
        compile_graph(device, built.desc, 0, kernels=False)
    except DMLError as e:
        entry["min_feature_level"] = None
        entry["error"] = str(e)
        return False
    descs = built.operators
    names = list(dict.fromkeys(short_name(x.Type) for x in descs))
    entry["operator"] = ", ".join(names)
    constants = sum(n.operator is None for n in graph.nodes)
    entry["graph"] = (f"{len(descs)} operator node{'s' * (len(descs) != 1)}, {constants} "
                      f"constant{'s' * (constants != 1)}")
    # (every node is valid at the device's level, as the graph was built there)
    levels = [lv for x in descs if (lv := min_feature_level(x)) is not None]
    floor = [LEVEL_GRAPHS] + ([LEVEL_CONSTANTS] if any(n.constant_data is not None
                                                       for n in graph.nodes) else [])
    lowest = max(floor + levels)
    entry["min_feature_level"] = short_level(lowest)
    reasons = [why for x in descs
               for why in [REGISTRY[x.Type].not_executable_because(validate_operator(x, lowest)[1])
                           if REGISTRY[x.Type].executable else "it has no CPU kernel yet"]
               if why]
    entry["executable"] = not reasons
    if reasons:
        entry["not_executable"] = reasons[0]
    return True


def device_info(level: Any = None) -> dict[str, Any]:
    import numba
    import numpy as np

    from .kernels.copy import strided_copy
    from .plan import int64s

    level = device_level(level)
    # Run one tiny parallel kernel so numba reports the threading layer it actually chose.
    strided_copy(np.zeros(1, np.uint8), 0, np.zeros(1, np.uint8), 0, int64s([1]), int64s([1]),
                 int64s([1]))
    operators = []
    for op, spec in REGISTRY.items():
        operators.append({
            "operator": short_name(op), "introduced": short_level(spec.introduced),
            "in_place": spec.in_place, "validated": spec.validated,
            "executable": spec.executable,
            "support": {short_level(b.level): {
                t: {"dimensions": list(dims), "data_types": [short_name(x) for x in types]}
                for t, (dims, types) in b.tensors.items()} for b in spec.support}})
    return {
        "version": __version__,
        "feature_levels": [short_level(lv) for lv in ALL_LEVELS],
        "default_feature_level": short_level(level),
        "data_types": [short_name(t) for t in DML_TENSOR_DATA_TYPE
                       if supports_data_type(t, level)],
        "operators": operators,
        "operators_validated": sum(s.validated for s in REGISTRY.values()),
        "operators_executable": sum(s.executable for s in REGISTRY.values()),
        "operator_types": len(REGISTRY),
        "threads": numba.get_num_threads(),
        "threading_layer": numba.threading_layer(),
    }


def cmd_info(args: argparse.Namespace) -> int:
    info = device_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"dml-emulator {info['version']}: an emulated DirectML device on the CPU")
    print("Feature levels emulated: " + ", ".join(info["feature_levels"])
          + f" (default {info['default_feature_level']})")
    print("Data types: " + ", ".join(info["data_types"]))
    print(f"Operators: {info['operator_types']} known, {info['operators_validated']} validated, "
          f"{info['operators_executable']} executable")
    for op in info["operators"]:
        since = level_name(parse_level(op["introduced"]))
        status = "executes" if op["executable"] else \
            "validation only" if op["validated"] else "not yet known"
        print(f"  DML_OPERATOR_{op['operator']:<44} from {since}  {status}"
              + (" (in-place)" if op["in_place"] else ""))
    print(f"Threads: {info['threads']} (numba threading layer: {info['threading_layer']})")
    return 0


def _one_line(message: str) -> str:
    return message.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: Sequence[str] | None = None) -> int:
    from .dxdispatch import ModelError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv.insert(0, "run")  # dml-emulator MODEL.json [options], as dxdispatch MODEL.json
    handlers = {"run": cmd_run, "check": cmd_check, "info": cmd_info}
    try:
        try:
            args = parser().parse_args(argv)
            code = handlers[args.command](args)
        except (UsageError, ModelError, DMLError) as e:
            print(f"dml-emulator: error: {_one_line(str(e))}", file=sys.stderr)
            code = EXIT_USER_ERROR
        except MemoryError:
            print("dml-emulator: error: out of memory (lower --max-resource-bytes to refuse such "
                  "models up front)", file=sys.stderr)
            code = EXIT_USER_ERROR
        except KeyboardInterrupt:
            print("dml-emulator: interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at exit
    except BrokenPipeError:
        # The reader went away (dml-emulator info --json | head): end quietly. Python flushes
        # stdout again at exit, so point it at devnull first (the recipe of Python's docs).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


if __name__ == "__main__":
    sys.exit(main())
