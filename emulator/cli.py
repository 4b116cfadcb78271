"""The ``dml-emulator`` command line: ``run`` DxDispatch model files, ``check`` the feature level
each dispatchable needs, and describe the emulated device (``info``).

User errors (bad files, invalid descriptors) print one line on stderr and exit with status 2;
``check`` exits with 1 when a dispatchable is invalid at every level.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from descriptors import DML_TENSOR_DATA_TYPE, short_name

from . import __version__
from .device import DMLCreateDevice1, supports_data_type
from .errors import DMLError
from .featurelevels import ALL_LEVELS, default_level, level_name, parse_level, short_level
from .registry import REGISTRY, min_feature_level, validate_operator

EXIT_USER_ERROR = 2


def _level(text: str) -> Any:
    try:
        return parse_level(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number of iterations")
    return n


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dml-emulator", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"dml-emulator {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a DxDispatch model file")
    run.add_argument("model", help="the model (.json; comments and trailing commas allowed)")
    run.add_argument("--feature-level", "--dml_feature_level", type=_level, default=None,
                     help="the feature level to emulate: 3_1, 3.1 or 0x3100 (default: "
                          "$DML_EMULATOR_FEATURE_LEVEL or 4_0)")
    run.add_argument("-i", "--iterations", type=_positive, default=1,
                     help="repeat each dispatch N times and print its median time")
    check = sub.add_parser("check", help="report the lowest feature level of each dispatchable")
    check.add_argument("model")
    check.add_argument("--feature-level", "--dml_feature_level", type=_level, default=None,
                       help="the level at which to report errors (default 4_0)")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    info = sub.add_parser("info", help="describe the emulated device")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _progress(name: str, done: int, total: int) -> None:
    if total < 20 or not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r{name}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def cmd_run(args: argparse.Namespace) -> int:
    from .dxdispatch import Runner, load_model

    model = load_model(args.model)
    device = DMLCreateDevice1(feature_level=args.feature_level)
    Runner(model, device, sys.stdout, args.iterations, _progress).run()
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .dxdispatch import ModelError, UnsupportedDispatchableError, load_dispatchable, parse_json5

    path = Path(args.model)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelError(f"{path}: cannot read the model: {e.strerror or e}") from None
    doc = parse_json5(text, str(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("dispatchables"), dict):
        raise ModelError("the model has no 'dispatchables' object")
    level = args.feature_level or default_level()
    results, ok = [], True
    for name, spec in doc["dispatchables"].items():
        entry: dict[str, Any] = {"dispatchable": name}
        try:
            d = load_dispatchable(name, spec)
            entry["operator"] = short_name(d.operator)
            entry["executable"] = REGISTRY[d.operator].executable
            lowest = min_feature_level(d.desc)
            entry["min_feature_level"] = short_level(lowest) if lowest else None
            if lowest is None:
                try:
                    validate_operator(d.desc, level)
                except DMLError as e:
                    entry["error"] = str(e)
        except UnsupportedDispatchableError as e:
            entry["min_feature_level"], entry["unsupported"] = None, str(e)
        except ModelError as e:
            entry["min_feature_level"], entry["error"] = None, str(e)
        ok &= entry["min_feature_level"] is not None or "unsupported" in entry
        results.append(entry)
    if args.json:
        print(json.dumps({"model": str(path), "device_level": short_level(level),
                          "dispatchables": results}, indent=2))
    else:
        for r in results:
            if r["min_feature_level"]:
                print(f"{r['dispatchable']}: {r['operator']} is valid from "
                      f"DML_FEATURE_LEVEL_{r['min_feature_level']}"
                      + ("" if r["executable"] else " (validation only: not yet executable here)"))
            elif "unsupported" in r:
                print(f"{r['dispatchable']}: not checked: {r['unsupported']}")
            else:
                print(f"{r['dispatchable']}: invalid at every feature level: {r['error']}")
    return 0 if ok else 1


def device_info() -> dict[str, Any]:
    import numba
    import numpy as np

    from .kernels.copy import strided_copy
    from .plan import int64s

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
        "default_feature_level": short_level(default_level()),
        "data_types": [short_name(t) for t in DML_TENSOR_DATA_TYPE
                       if supports_data_type(t, default_level())],
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


def main(argv: Sequence[str] | None = None) -> int:
    from .dxdispatch import ModelError

    args = parser().parse_args(argv)
    handler = {"run": cmd_run, "check": cmd_check, "info": cmd_info}[args.command]
    try:
        return handler(args)
    except ModelError as e:
        print(f"dml-emulator: error: {e}", file=sys.stderr)
    except DMLError as e:
        print(f"dml-emulator: error: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        print("dml-emulator: interrupted", file=sys.stderr)
    return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
