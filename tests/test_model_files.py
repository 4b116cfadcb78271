"""Model files as hostile input: every malformed model is one line on stderr and exit status 2 in
``run`` and ``check``; declared sizes are checked before anything is allocated; only regular files
inside the model's folder are read or written; JSON errors name line and column; large inline
arrays parse fast; images are read and written as DxDispatch does."""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from emulator.cli import main
from emulator.dxdispatch import ModelError, parse_json, parse_model

UPSTREAM = Path(__file__).parent / "data" / "upstream"

# A small model that runs: FLOAT32 x reversed into y, then y printed.
BASE = {
    "resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}},
    },
    "dispatchables": {"s": {"type": "SLICE1", "desc": {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
        "InputWindowOffsets": [0], "InputWindowSizes": [4], "InputWindowStrides": [-1]}}},
    "commands": [{"type": "dispatch", "dispatchable": "s",
                  "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
                 {"type": "print", "resource": "y"}],
}


def without_compile_notes(err: str) -> str:
    """stderr without the once-per-cache note that kernels are being compiled."""
    return "".join(line for line in err.splitlines(keepends=True)
                   if not line.startswith("dml-emulator: compiling CPU kernels"))


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, without_compile_notes(err)


def edited(edit) -> str:
    model = copy.deepcopy(BASE)
    edit(model)
    return json.dumps(model)


def source(path: str, **extra):
    """An edit: resource x read from a file."""
    def edit(m):
        m["resources"]["x"] = {"initialValuesDataType": "FLOAT32",
                               "initialValues": {"sourcePath": path}, **extra}
    return edit


def add_command(command):
    return lambda m: m["commands"].append(command)


def write_file(target, **extra):
    return add_command({"type": "writeFile", "resource": "y", "targetPath": target, **extra})


def one_line_error(code, out, err, message):
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("dml-emulator: error: "), err
    assert "Traceback" not in err and message in err, err


def test_the_base_model_runs(capsys, tmp_path):
    (tmp_path / "m.json").write_text(json.dumps(BASE))
    assert cli(capsys, "run", tmp_path / "m.json") == (0, "Resource 'y': 4, 3, 2, 1\n", "")


# -- the catch-all: ~30 malformed models through run and check ----------------------------------
DEEP = '{"resources": {"x": ' + "[" * 100_000 + "]" * 100_000 + '}, "dispatchables": {}, ' \
       '"commands": []}'
MALFORMED = {
    # names that are not strings
    "list as a binding's resource": (edited(lambda m: m["commands"][0]["bindings"].update(
        InputTensor={"name": ["x"]})), "commands[0].bindings.InputTensor: expected a resource "
                                       "name, got ['x']"),
    "dict as a binding's resource": (edited(lambda m: m["commands"][0]["bindings"].update(
        InputTensor={"name": {"x": 1}})), "expected a resource name, got {'x': 1}"),
    "list as a printed resource": (edited(lambda m: m["commands"][1].update(resource=["y"])),
                                   "commands[1].resource: expected a resource name, got ['y']"),
    "dict as a dispatchable": (edited(lambda m: m["commands"][0].update(dispatchable={"s": 1})),
                               "commands[0].dispatchable: expected a dispatchable name, got "
                               "{'s': 1}"),
    "list as a command type": (edited(lambda m: m["commands"][1].update(type=["print"])),
                               'commands[1].type: expected "dispatch", "print" or "writeFile", '
                               "got ['print']"),
    "list as an operator type": (edited(lambda m: m["dispatchables"]["s"].update(type=["SLICE"])),
                                 "dispatchables.s.type: expected an operator type name"),
    "list of lists as flags": (edited(lambda m: m["dispatchables"]["s"].update(
        executionFlags=[["NONE"]])), "dispatchables.s.executionFlags[0]: expected a "
                                     "DML_EXECUTION_FLAGS name, got ['NONE']"),
    # nesting, numbers, text
    "deep nesting": (DEEP, "invalid JSON: arrays and objects are nested too deeply"),
    "nesting inside a value": (edited(lambda m: m["resources"]["x"].update(
        initialValues=json.loads("[" * 500 + "]" * 500))),
        "resources.x.initialValues[0]: expected a number (or \"nan\", \"inf\", \"-inf\"), got "
        "[[[...]]]"),
    "400-digit integer as a float": (edited(lambda m: m["resources"]["x"].update(
        initialValues=[10 ** 400, 1])),
        "resources.x.initialValues[0]: 100000000000000000...0000000000000000000 is out of range "
        "for float32"),
    "5000-digit integer": ('{"resources": {"x": [' + "9" * 5000 + ']}}',
                           "invalid JSON: a number has more than 4300 digits"),
    "huge integer in a FLOAT field": (edited(lambda m: m["dispatchables"].update(e={
        "type": "ACTIVATION_ELU", "desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                                           "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                                           "Alpha": 10 ** 400}})),
        "dispatchables.e.desc.Alpha: 100000000000000000...0000000000000000000 is out of range "
        "for a FLOAT"),
    "inf in Sizes": (edited(lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].update(
        Sizes=[float("inf")])), "dispatchables.s.desc.InputTensor.Sizes[0]: expected an integer, "
                                "got inf"),
    "object as Sizes": (edited(lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].update(
        Sizes={"a": 1})), "InputTensor.Sizes: expected an array, got {'a': 1}"),
    "list as a fused activation type": (edited(lambda m: m["dispatchables"].update(n={
        "type": "MEAN_VARIANCE_NORMALIZATION1", "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]}, "Axes": [0],
            "NormalizeVariance": True, "Epsilon": 0,
            "FusedActivation": {"Type": ["ACTIVATION_ELU"]}}})),
        "dispatchables.n.desc.FusedActivation.Type: expected an operator type name"),
    # writeFile dimensions
    "negative dimensions": (edited(write_file("o.npy", dimensions=[-1])),
                            "commands[2].dimensions[0]: expected a size from 0 to 4294967295, "
                            "got -1"),
    "overflowing dimensions": (edited(write_file("o.npy", dimensions=[2 ** 40])),
                               "expected a size from 0 to 4294967295, got 1099511627776"),
    "dimensions not an array": (edited(write_file("o.npy", dimensions=4)),
                                "commands[2].dimensions: expected an array, got 4"),
    # sizes before allocation
    "huge valueCount": (edited(lambda m: m["resources"]["y"].update(
        initialValues={"valueCount": 10 ** 12, "value": 0})),
        "resources.y.initialValues.valueCount: the data needs 4000000000000 bytes, over the limit "
        "of 4294967296 bytes for a model's data"),
    "huge sizeInBytes": (edited(lambda m: m["resources"]["y"].update(sizeInBytes=10 ** 15)),
                         "resources.y.sizeInBytes: it asks for 1000000000000000 bytes, over the "
                         "limit"),
    "huge initialValuesOffsetInBytes": (edited(lambda m: m["resources"]["x"].update(
        initialValuesOffsetInBytes=10 ** 15)), "resources.x.initialValuesOffsetInBytes: it asks "
                                               "for 1000000000000000 bytes"),
    "negative sizeInBytes": (edited(lambda m: m["resources"]["y"].update(sizeInBytes=-4)),
                             "resources.y.sizeInBytes: expected a byte count >= 0, got -4"),
    "negative elementOffset": (edited(lambda m: m["commands"][0]["bindings"].update(
        InputTensor={"name": "x", "elementOffset": -1})),
        "commands[0].bindings.InputTensor.elementOffset: expected an element offset >= 0"),
    # paths
    "absolute sourcePath": (edited(source("/etc/hostname.bin")),
                            "resources.x.initialValues.sourcePath: '/etc/hostname.bin' is an "
                            "absolute path: a model reads and writes only inside the model's "
                            "folder; pass --allow-paths-outside-model to allow it"),
    "sourcePath with ..": (edited(source("../x.bin")), "resources.x.initialValues.sourcePath: "
                                                       "'../x.bin' leads outside the model's "
                                                       "folder"),
    "NUL in a path": (edited(source("a\0b.bin")), "resources.x.initialValues.sourcePath: the path "
                                                  "'a\\x00b.bin' contains a NUL character"),
    "sourcePath not a string": (edited(source(7)), "resources.x.initialValues.sourcePath: "
                                                   "expected a file path, got 7"),
    "absolute targetPath": (edited(write_file("/tmp/o.dat")),
                            "commands[2].targetPath: '/tmp/o.dat' is an absolute path"),
    "targetPath with ..": (edited(write_file("../o.dat")),
                           "commands[2].targetPath: '../o.dat' leads outside"),
    # images and what a CPU emulator cannot do
    "resampleSize on a raw file": (edited(source("x.bin", resampleSize=[1, 3, 2, 2])),
                                   "resources.x.resampleSize: applies only to a .jpg or .png "
                                   "sourcePath"),
    "image without resampleSize": (edited(source("x.png")), "resources.x: an image source needs "
                                                            "resampleSize [1, C, H, W]"),
    "raw bytes into a .bmp": (edited(write_file("o.bmp")), "commands[2].targetPath: 'o.bmp': "
                                                           "images are written as .png or .jpg"),
    "png without dimensions": (edited(write_file("o.png")), "commands[2].dimensions: an image "
                                                            "needs dimensions [1, C, H, W]"),
    "threadGroupCount for a DML operator": (edited(lambda m: m["commands"][0].update(
        threadGroupCount=[1, 1, 1])), "commands[0].threadGroupCount: applies only to HLSL "
                                      "dispatchables"),
    "resampleMode other than scale": (edited(source("x.png", resampleSize=[1, 3, 2, 2],
                                                    resampleMode="crop")),
                                      'resources.x.resampleMode: expected "scale", got \'crop\''),
    "an image from UINT8 data": (edited(lambda m: (
        m["resources"]["y"].update(initialValuesDataType="UINT8"),
        write_file("o.png", dimensions=[1, 1, 2, 2])(m))),
        "commands[2].resource: an image is written from FLOAT32 or FLOAT16 data; 'y' holds UINT8"),
    # initializers
    "empty initial values": (edited(lambda m: m["resources"]["x"].update(initialValues=[])),
                             "resources.x.initialValues: expected at least one value"),
    "a non-integer for integer data": (edited(lambda m: m["resources"]["x"].update(
        initialValuesDataType="INT32", initialValues=[1, 2.5])),
        "resources.x.initialValues[1]: 2.5 is not an integer (int32 data)"),
    "a type without elements": (edited(lambda m: m["resources"]["x"].update(
        initialValuesDataType="UINT4")), "resources.x.initialValuesDataType: "
                                         "DML_TENSOR_DATA_TYPE_UINT4 has no element type"),
    "an initializer without valueCount": (edited(lambda m: m["resources"]["y"].update(
        initialValues={"value": 0})), "resources.y.initialValues: expected an array, {valueCount, "
                                      "value}, {valueCount, valueStart, valueDelta}, {sourcePath} "
                                      'or "deferred"'),
    "a constant out of range": (edited(lambda m: m["resources"]["y"].update(
        initialValuesDataType="UINT8", initialValues={"valueCount": 4, "value": 256})),
        "resources.y.initialValues.value: 256 is out of range for uint8 [0, 255]"),
    "valueCount alone": (edited(lambda m: m["resources"]["y"].update(
        initialValues={"valueCount": 4})), "resources.y.initialValues: expected {valueCount, "
                                           "value} or {valueCount, valueStart, valueDelta}"),
    "a source that is not data": (edited(source("x.txt")), "resources.x.initialValues.sourcePath: "
                                                           "'x.txt' must end in .npy, .dat, .bin, "
                                                           ".jpg or .png"),
    "raw source without a type": (edited(lambda m: m["resources"]["x"].update(
        initialValues={"sourcePath": "x.bin"}) or m["resources"]["x"].pop(
        "initialValuesDataType")), "resources.x.initialValues.sourcePath: raw files need "
                                   "initialValuesDataType"),
    # commands
    "a binding without a name": (edited(lambda m: m["commands"][0]["bindings"].update(
        InputTensor={"elementOffset": 0})), "commands[0].bindings.InputTensor: name is required"),
    "an unknown dispatchable": (edited(lambda m: m["commands"][0].update(dispatchable="t")),
                                "commands[0].dispatchable: 't' is not a dispatchable of the model "
                                "(dispatchables: s)"),
    "a misspelt resource": (edited(lambda m: m["commands"][1].update(resource="yy")),
                            "commands[1].resource: 'yy' is not a resource of the model (did you "
                            "mean y?)"),
    "verbose not a bool": (edited(lambda m: m["commands"][1].update(verbose="yes")),
                           "commands[1].verbose: expected true or false, got 'yes'"),
    # the document itself
    "not UTF-8": (b'{"resources": {"\xff": 1}}', "the model is not UTF-8 text (byte 0xFF at "
                                                  "offset 16)"),
    "root not an object": ("[1, 2]", "the model: expected an object, got [1, 2]"),
    "commands not an array": ('{"resources": {}, "dispatchables": {}, "commands": {}}',
                              "commands: expected an array, got {}"),
    "a newline in a name": ('{"resources": {"a\\nb": {"initialValues": 1}}, "dispatchables": {}, '
                            '"commands": []}', "resources.'a\\nb': initialValuesDataType is "
                                               "required"),
}


@pytest.mark.parametrize("command", ["run", "check"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_every_malformed_model_is_one_line_and_status_2(capsys, tmp_path, case, command):
    text, message = MALFORMED[case]
    path = tmp_path / "m.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    one_line_error(*cli(capsys, command, path), message)


# -- data files: checked by run when it reads them -----------------------------------------------
@pytest.fixture
def folder(tmp_path):
    np.arange(4, dtype=np.float32).tofile(tmp_path / "ok.bin")
    (tmp_path / "odd.bin").write_bytes(b"12345")
    os.mkfifo(tmp_path / "fifo.bin")
    os.symlink("/dev/zero", tmp_path / "zero.bin")
    os.symlink("/etc/hostname", tmp_path / "out.bin")
    np.save(tmp_path / "ok.npy", np.arange(4, dtype=np.float32))
    np.save(tmp_path / "f64.npy", np.arange(4, dtype=np.float64))
    np.save(tmp_path / "obj.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    with open(tmp_path / "lie.npy", "wb") as f:  # a header that declares 40 GB, then 16 bytes
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                 "shape": (9999999999,)})
        f.write(np.arange(4, dtype=np.float32).tobytes())
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{garbage      }\n")
    (tmp_path / "sub").mkdir()
    with open(tmp_path / "v3.npy", "wb") as f:
        np.lib.format.write_array(f, np.zeros(4, np.float32), version=(3, 0))
    np.save(tmp_path / "bool.npy", np.zeros(4, bool))
    return tmp_path


@pytest.mark.parametrize("edit,extra,message", [
    (source("fifo.bin"), [], "resources.x.initialValues.sourcePath: 'fifo.bin' is not a regular "
                             "file"),
    (source("zero.bin"), [], "'zero.bin' leads outside the model's folder"),
    (source("zero.bin"), ["--allow-paths-outside-model"], "'zero.bin' is not a regular file"),
    (source("out.bin"), [], "'out.bin' leads outside the model's folder"),
    (source("odd.bin"), [], "'odd.bin' has 5 bytes, not a multiple of 4 (float32)"),
    (source("nope.bin"), [], "cannot read 'nope.bin': No such file or directory"),
    (source("ok.bin", sizeInBytes=8), [], "resources.x.sizeInBytes: 8 is smaller than the "
                                          "initial data (16 bytes"),
    (source("f64.npy"), [], "'f64.npy' holds float64 data but initialValuesDataType says "
                            "float32"),
    (source("obj.npy"), [], "'obj.npy' holds object records, not numbers"),
    (source("lie.npy"), [], "'lie.npy' declares shape (9999999999,) of float32 (39999999996 "
                            "bytes) but holds 16 bytes of data"),
    (source("junk.npy"), [], "'junk.npy' is not a valid .npy file: its header cannot be read"),
    (source("v3.npy"), [], "'v3.npy' is not a valid .npy file: .npy format version 3.0 is not "
                           "supported"),
    (lambda m: m["resources"].update(x={"initialValues": {"sourcePath": "bool.npy"}}), [],
     "resources.x: .npy dtype bool has no DML data type"),
    (write_file("fifo.bin"), [], "commands[2].targetPath: 'fifo.bin' exists and is not a regular "
                                 "file"),
    (write_file("out.bin"), [], "commands[2].targetPath: 'out.bin' leads outside"),
    (write_file("o.npy", dimensions=[5]), [], "commands[2].dimensions: [5] needs 5 elements; 'y' "
                                              "holds 4"),
    (source("ok.bin"), ["--input_path", "{sub}"], "cannot read 'ok.bin': No such file"),
])
def test_data_files_are_read_only_when_regular_and_sized(capsys, folder, edit, extra, message):
    """FIFOs and devices are never opened for reading (no hang, no endless read); sizes are known
    before anything is allocated; check (which reads no data) still passes where the model's
    structure is sound."""
    model = folder / "m.json"
    model.write_text(edited(edit))
    argv = [a.format(sub=folder / "sub") for a in extra]
    one_line_error(*cli(capsys, "run", model, *argv), message)


def test_a_data_file_counts_against_the_limit_before_it_is_read(capsys, folder):
    model = folder / "m.json"
    pad = {"initialValuesDataType": "UINT8", "initialValues": "deferred", "sizeInBytes": 4096}
    model.write_text(edited(lambda m: (source("ok.bin")(m), m["resources"].update(pad=pad))))
    used = parse_model(model).budget.used  # what the inline and deferred resources take
    assert used == 4096 + 16
    limit = used + 8
    one_line_error(*cli(capsys, "run", model, "--max-resource-bytes", limit),
                   f"resources.x.initialValues.sourcePath: 'ok.bin' is 16 bytes, over the limit "
                   f"of {limit} bytes for a model's data ({used} already used)")
    assert cli(capsys, "run", model, "--max-resource-bytes", used + 16)[0] == 0


def test_paths_inside_the_folder_and_the_option_that_lifts_the_rule(capsys, folder):
    model = folder / "m.json"
    model.write_text(edited(source("sub/../ok.bin")))  # '..' that stays inside is fine
    assert cli(capsys, "run", model) == (0, "Resource 'y': 3, 2, 1, 0\n", "")
    np.arange(10, 14, dtype=np.float32).tofile(folder.parent / f"{folder.name}-outside.bin")
    model.write_text(edited(source(f"../{folder.name}-outside.bin")))
    code, _, err = cli(capsys, "run", model)
    assert code == 2 and "leads outside the model's folder" in err
    code, out, _ = cli(capsys, "run", model, "--allow-paths-outside-model")
    assert (code, out) == (0, "Resource 'y': 13, 12, 11, 10\n")
    model.write_text(edited(source(str(folder / "ok.bin"))))
    assert cli(capsys, "run", model, "--allow-paths-outside-model")[1] == \
        "Resource 'y': 3, 2, 1, 0\n"


def test_input_and_output_folders(capsys, folder):
    np.arange(5, 9, dtype=np.float32).tofile(folder / "sub" / "ok.bin")
    model = folder / "m.json"
    model.write_text(edited(lambda m: (source("ok.bin")(m), write_file("y.dat")(m))))
    out_dir = folder / "out"
    code, out, err = cli(capsys, "run", model, "--input_path", folder / "sub", "--output_path",
                         out_dir)
    assert (code, out, err) == (0, "Resource 'y': 8, 7, 6, 5\n", "")
    assert np.fromfile(out_dir / "y.dat", np.float32).tolist() == [8, 7, 6, 5]  # dir created


def test_write_file_dimensions_and_raw_bytes(capsys, tmp_path):
    model = tmp_path / "m.json"
    model.write_text(edited(lambda m: (write_file("y.npy", dimensions=[2, 2])(m),
                                       write_file("y.npy.dat")(m),
                                       write_file("part.npy", dimensions=[3])(m))))
    assert cli(capsys, "run", model)[0] == 0
    assert np.load(tmp_path / "y.npy").tolist() == [[4, 3], [2, 1]]
    assert np.load(tmp_path / "part.npy").tolist() == [4, 3, 2]
    assert np.fromfile(tmp_path / "y.npy.dat", np.float32).tolist() == [4, 3, 2, 1]


def test_the_size_limit_option_and_variable(capsys, monkeypatch, tmp_path):
    model = tmp_path / "m.json"
    model.write_text(edited(lambda m: m["resources"]["y"].update(
        initialValues={"valueCount": 1 << 20, "value": 0})))
    one_line_error(*cli(capsys, "check", model, "--max-resource-bytes", "1MiB"),
                   "resources.y.initialValues.valueCount: the data needs 4194304 bytes, over the "
                   "limit of 1048576 bytes for a model's data (16 already used); raise it with "
                   "--max-resource-bytes or DML_EMULATOR_MAX_RESOURCE_BYTES")
    assert cli(capsys, "check", model, "--max-resource-bytes", "5MB")[0] == 0
    monkeypatch.setenv("DML_EMULATOR_MAX_RESOURCE_BYTES", "2MiB")
    one_line_error(*cli(capsys, "run", model), "over the limit of 2097152 bytes")
    monkeypatch.setenv("DML_EMULATOR_MAX_RESOURCE_BYTES", "lots")
    one_line_error(*cli(capsys, "run", model), "DML_EMULATOR_MAX_RESOURCE_BYTES: 'lots' is not a "
                                               "byte count (write 4294967296, 4GiB, 512MiB or "
                                               "2GB)")
    with pytest.raises(SystemExit) as e:
        main(["run", str(model), "--max-resource-bytes", "-1"])
    assert e.value.code == 2 and "'-1' is not a byte count" in capsys.readouterr().err


def test_inline_values_are_built_without_python_lists(capsys, tmp_path):
    """Constants and sequences come out exact (integers) and as before (floats in float64)."""
    model = tmp_path / "m.json"
    model.write_text(json.dumps({
        "resources": {
            "u": {"initialValuesDataType": "UINT64",
                  "initialValues": {"valueCount": 3, "valueStart": 2 ** 64 - 1, "valueDelta": -2}},
            "i": {"initialValuesDataType": "INT8",
                  "initialValues": {"valueCount": 4, "valueStart": -128, "valueDelta": 85}},
            "h": {"initialValuesDataType": "FLOAT16",
                  "initialValues": {"valueCount": 3, "valueStart": 0.5, "valueDelta": 1e5}},
            "c": {"initialValuesDataType": "UINT16", "initialValues": {"valueCount": 2,
                                                                        "value": 65535}},
            "f": {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": 2,
                                                                         "value": 1e6}}},
        "dispatchables": {},
        "commands": [{"type": "print", "resource": r} for r in "uihcf"]}))
    code, out, err = cli(capsys, "run", model)
    assert code == 0, err
    assert out.splitlines() == [f"Resource 'u': {2**64 - 1}, {2**64 - 3}, {2**64 - 5}",
                                "Resource 'i': -128, -43, 42, 127",
                                "Resource 'h': 0.5, inf, inf, 0", "Resource 'c': 65535, 65535",
                                "Resource 'f': inf, inf"]
    model.write_text(model.read_text().replace('"valueDelta": 85', '"valueDelta": 86'))
    one_line_error(*cli(capsys, "run", model), "resources.i.initialValues[3]: 130 is out of range "
                                               "for int8 [-128, 127]")


# -- what a CPU emulator cannot run: one line each -----------------------------------------------
@pytest.mark.parametrize("model,message", [
    ("hlsl_add_fp32", "resources.Constants.initialValues: list initializers "
                      "(initialValuesDataType UNKNOWN: typed values for an HLSL constant buffer) "
                      "are not supported by a CPU emulator of DirectML"),
    ("onnx_gemm", "dispatchables.gemm.type: 'onnx' dispatchables (ONNX models, run by ONNX "
                  "Runtime) are not supported by a CPU emulator of DirectML"),
])
def test_unsupported_parts_of_the_format(capsys, model, message):
    one_line_error(*cli(capsys, "run", UPSTREAM / f"{model}.json"), message)


def test_hlsl_dispatchable_without_list_initializers(capsys, tmp_path):
    doc = json.loads((UPSTREAM / "hlsl_add_fp32.json").read_text())
    doc["resources"]["Constants"] = {"initialValuesDataType": "UINT32", "initialValues": [6]}
    (tmp_path / "m.json").write_text(json.dumps(doc))
    one_line_error(*cli(capsys, "run", tmp_path / "m.json"),
                   "dispatchables.add.type: 'hlsl' dispatchables (HLSL compute shaders) are not "
                   "supported by a CPU emulator of DirectML")


# -- JSON ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,message", [
    ('{\n "resources": {},\n "dispatchables": {} "commands": []}',
     "m.json:3:22: invalid JSON: Expecting ',' delimiter"),                 # strict JSON
    ('// DxDispatch style\n{\n "resources": {},\n "dispatchables": {},\n "commands": [1,,]}',
     "m.json:5:17: invalid JSON: Unexpected \",\""),                        # JSON5 positions
    ("{resources: {}, /* c */ dispatchables: {}, commands: [}",
     "m.json:1:55: invalid JSON: Unexpected \"}\""),                        # JSON5-only syntax
    ('// c\n{"a": 1e}', "m.json:2:8: invalid JSON: Expecting ',' delimiter"),
    ("", "m.json:1:1: invalid JSON: Expecting value"),
])
def test_json_errors_name_file_line_and_column(capsys, tmp_path, text, message):
    (tmp_path / "m.json").write_text(text)
    for command in ("run", "check"):
        one_line_error(*cli(capsys, command, tmp_path / "m.json"), message)


@pytest.mark.parametrize("text", [
    '// comment\n{"a": [1, 2,], /* "b": 1, */ "c": {"d": "http://x/*y*/",},}',
    "{a: 'single', b: +1, c: .5, d: 0x10, e: Infinity, f: [NaN],}",
    '{"s": "a // not a comment, /* nor this */", "t": "\\" // \\"",}',
])
def test_the_fast_paths_read_what_json5_reads(text):
    import json5

    parsed, expected = parse_json(text, "m"), json5.loads(text)
    assert json.dumps(parsed, default=str) == json.dumps(expected, default=str)


def test_a_megabyte_of_inline_values_loads_fast(tmp_path):
    values = np.random.default_rng(0).standard_normal(100_000).round(6).tolist()
    doc = copy.deepcopy(BASE)
    doc["resources"]["big"] = {"initialValuesDataType": "FLOAT32", "initialValues": values}
    text = "// a DxDispatch file\n" + json.dumps(doc, indent=1).replace("\n  ]", ",\n  ]")
    assert len(text) > 1_000_000
    (tmp_path / "m.json").write_text(text)
    t0 = time.perf_counter()
    model = parse_model(tmp_path / "m.json")
    elapsed = time.perf_counter() - t0
    assert model.resource_specs["big"].values is not None
    assert model.resource_specs["big"].values.tolist() == np.float32(values).tolist()
    assert elapsed < 1.0, f"{elapsed:.2f} s to load a 1 MB model (JSON5 took about 20 s)"


def test_parse_errors_never_leak_python_internals():
    with pytest.raises(ModelError) as e:
        parse_json("[" + "9" * 5000 + "]", "m.json")
    assert str(e.value) == (f"m.json: invalid JSON: a number has more than "
                            f"{sys.get_int_max_str_digits()} digits")


# -- images (DxDispatch's image_io) --------------------------------------------------------------
def image_model(src, data_type="FLOAT32", size=(1, 3, 4, 5), target="out.png", dims=None):
    count = int(np.prod(size))
    return json.dumps({
        "resources": {
            "x": {"initialValuesDataType": data_type, "initialValues": {"sourcePath": src},
                  "resampleSize": list(size)},
            "y": {"initialValuesDataType": data_type,
                  "initialValues": {"valueCount": count, "value": 0}}},
        "dispatchables": {"copy": {"type": "ACTIVATION_IDENTITY", "desc": {
            "InputTensor": {"DataType": data_type, "Sizes": [count]},
            "OutputTensor": {"DataType": data_type, "Sizes": [count]}}}},
        "commands": [{"type": "dispatch", "dispatchable": "copy",
                      "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
                     {"type": "writeFile", "resource": "y", "targetPath": target,
                      "dimensions": list(dims or size)}]})


@pytest.fixture
def pixels(tmp_path):
    image = pytest.importorskip("PIL.Image")
    rgb = np.random.default_rng(1).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    image.fromarray(rgb).save(tmp_path / "in.png")
    image.fromarray(rgb).save(tmp_path / "in.jpg")
    return rgb


def test_images_are_read_and_written_as_dxdispatch_does(capsys, tmp_path, pixels):
    """NCHW, RGB order, each 8-bit component / 255 as float32; written back clamped to [0, 1],
    times 255, truncated; a .png is a real PNG, never raw float bytes."""
    from PIL import Image

    from emulator.dxdispatch import load_model

    model = tmp_path / "m.json"
    model.write_text(image_model("in.png"))
    loaded = load_model(model)
    x = loaded.resources["x"].buffer.numpy(np.float32)
    expected = (pixels.astype(np.float32) / np.float32(255)).transpose(2, 0, 1).reshape(-1)
    assert x.tolist() == expected.tolist()
    assert cli(capsys, "run", model) == (0, "", "")
    written = (tmp_path / "out.png").read_bytes()
    assert written.startswith(b"\x89PNG\r\n\x1a\n")
    assert (np.asarray(Image.open(tmp_path / "out.png")) == pixels).all()
    # One channel is written as grayscale: the first (red) plane.
    model.write_text(image_model("in.png", target="gray.png", dims=(1, 1, 4, 5)))
    assert cli(capsys, "run", model)[0] == 0
    assert (np.asarray(Image.open(tmp_path / "gray.png")) == pixels[:, :, 0]).all()
    # A JPEG scaled to 8 x 10 as RGBA, in FLOAT16.
    model.write_text(image_model("in.jpg", "FLOAT16", (1, 4, 8, 10)))
    assert cli(capsys, "run", model)[0] == 0
    assert np.asarray(Image.open(tmp_path / "out.png")).shape == (8, 10, 4)


def test_image_values_out_of_range_are_clamped_as_dxdispatch_clamps_them(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    from emulator.dxdispatch import tensor_to_image

    values = np.array([-1, 0.5, 2, np.nan, np.inf, -np.inf, 0.999, 1 / 255], np.float32)
    data = tensor_to_image(values, (1, 2, 4), "PNG", "w", "'o.png'")
    (tmp_path / "o.png").write_bytes(data)
    assert np.asarray(Image.open(tmp_path / "o.png")).reshape(-1).tolist() == \
        [0, 127, 255, 255, 255, 0, 254, 1]


@pytest.mark.parametrize("kwargs,message", [
    ({"size": (1, 2, 4, 5)}, "resources.x.resampleSize: expected [1, C, H, W] with C = 3 (RGB) or "
                             "4 (RGBA), got [1, 2, 4, 5]"),
    ({"data_type": "UINT8"}, "resources.x.initialValuesDataType: an image source needs FLOAT32 or "
                             "FLOAT16, got 'UINT8'"),
    ({"size": (1, 4, 4, 5), "target": "o.jpg"}, "commands[1].dimensions: a .jpg has no alpha "
                                                "channel"),
    ({"dims": (1, 3, 40, 5)}, "commands[1].dimensions: [1, 3, 40, 5] needs 600 elements; 'y' "
                              "holds 60"),
    ({"src": "bad.png"}, "resources.x.initialValues.sourcePath: cannot read 'bad.png' as a JPEG or "
                         "PNG image: cannot identify image file the data"),
])
def test_image_errors(capsys, tmp_path, pixels, kwargs, message):
    (tmp_path / "bad.png").write_bytes(b"not a png")
    (tmp_path / "m.json").write_text(image_model(**{"src": "in.png", **kwargs}))
    one_line_error(*cli(capsys, "run", tmp_path / "m.json"), message)


def test_without_pillow_images_name_the_extra(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    np.zeros(60, np.float32).tofile(tmp_path / "in.bin")
    (tmp_path / "m.json").write_text(image_model("in.png"))
    one_line_error(*cli(capsys, "run", tmp_path / "m.json"),
                   "resources.x.initialValues.sourcePath: reading the image 'in.png' needs the "
                   "Pillow imaging library: pip install \"dml-emulator[images]\"")
    doc = json.loads(image_model("in.png"))
    doc["resources"]["x"] = {"initialValuesDataType": "FLOAT32",
                             "initialValues": {"sourcePath": "in.bin"}}
    (tmp_path / "m.json").write_text(json.dumps(doc))
    one_line_error(*cli(capsys, "run", tmp_path / "m.json"),
                   "commands[1].targetPath: writing the image 'out.png' needs the Pillow imaging "
                   "library: pip install \"dml-emulator[images]\"")
    assert not (tmp_path / "out.png").exists()  # nothing ran, no raw floats in a .png
    assert cli(capsys, "check", tmp_path / "m.json")[0] == 0  # check reads no data


def test_upstream_image_io_converts_its_jpeg_to_grayscale(capsys, tmp_path, pixels):
    """image_io.json reads a .jpg scaled to 512 x 512, convolves the RGB planes by a 1 x 1 filter
    (0.2989, 0.5870, 0.1140) and writes the one output plane as an 8-bit grayscale PNG (clamped
    to [0, 1], times 255, truncated)."""
    from PIL import Image

    from emulator.dxdispatch import load_model

    Image.fromarray(pixels).save(tmp_path / "chihuahua.jpg")
    (tmp_path / "image_io.json").write_text((UPSTREAM / "image_io.json").read_text())
    code, out, _ = cli(capsys, "run", tmp_path / "image_io.json")
    assert (code, out) == (0, "")
    rgb = load_model(tmp_path / "image_io.json").resources["input"].buffer.numpy(np.float32)
    planes = rgb.reshape(3, 512, 512).astype(np.float64)
    gray = sum(np.float32(w) * planes[c] for c, w in enumerate((0.2989, 0.5870, 0.1140)))
    want = np.floor(np.clip(gray, 0, 1) * 255)
    got = np.asarray(Image.open(tmp_path / "output.png"))
    assert got.shape == (512, 512)
    # float32 sums may land on the other side of an integer boundary: at most 1 apart
    assert np.abs(got.astype(np.float64) - want).max() <= 1 and (got == want).mean() > 0.99


def test_a_tensor_array_binds_one_source_per_tensor(capsys, tmp_path):
    """QUANTIZE's QuantizationTensors bound from an array of sources (scale, then zero point),
    one of them at an element offset (16-byte aligned) of a shared resource; a single source for an array of two
    tensors is a model error."""
    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [0.5, 1.5, 7, -7]},
            "params": {"initialValuesDataType": "FLOAT32", "initialValues": [9, 9, 9, 9, 0.5, 2]},
            "zp": {"initialValuesDataType": "INT8", "initialValues": [1, -1, 0, 0]},
            "y": {"initialValuesDataType": "INT8", "initialValues": {"valueCount": 4, "value": 0}},
        },
        "dispatchables": {"q": {"type": "DML_OPERATOR_QUANTIZE", "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2]},
            "QuantizationType": "DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT",
            "QuantizationTensorCount": 2,
            "QuantizationTensors": [{"DataType": "FLOAT32", "Sizes": [2, 1]},
                                    {"DataType": "INT8", "Sizes": [2, 1]}],
            "OutputTensor": {"DataType": "INT8", "Sizes": [2, 2]}}}},
        "commands": [{"type": "dispatch", "dispatchable": "q", "bindings": {
            "InputTensor": "x", "QuantizationTensors": [{"name": "params", "elementOffset": 4},
                                                        "zp"],
            "OutputTensor": "y"}},
            {"type": "print", "resource": "y"}],
    }
    (tmp_path / "m.json").write_text(json.dumps(model))
    # rows scaled by 0.5 and 2, zero points 1 and -1: [1+1, 3+1], [round(3.5)-1, round(-3.5)-1]
    assert cli(capsys, "run", tmp_path / "m.json") == (0, "Resource 'y': 2, 4, 3, -5\n", "")
    model["commands"][0]["bindings"]["QuantizationTensors"] = "params"
    (tmp_path / "m.json").write_text(json.dumps(model))
    one_line_error(*cli(capsys, "run", tmp_path / "m.json"), "no binding for QuantizationTensors[1]")


# -- dmlSerializedGraph: ONNX Runtime's partitions ------------------------------------------------
def serialized_copy(tmp_path, data=None):
    """The upstream matmul_add model in tmp_path (its partition replaced by ``data``)."""
    import shutil

    shutil.copytree(UPSTREAM / "matmul_add", tmp_path / "matmul_add")
    shutil.copy(UPSTREAM / "dmlSerializedGraph_matmul_add.json", tmp_path / "m.json")
    if data is not None:
        (tmp_path / "matmul_add" / "Partition_0.bin").write_bytes(data)
    return tmp_path / "m.json"


def test_a_serialized_graph_binds_its_names_and_reads_its_constants(capsys, tmp_path):
    model = serialized_copy(tmp_path)
    ones = np.full(25, 2.0, np.float32)  # B from the constant's file: 5 x 2 x 1.5 + 1 = 16
    (tmp_path / "matmul_add" / "matmul_b_tensor.bin").write_bytes(ones.tobytes())
    code, out, err = cli(capsys, "run", model)
    assert (code, out) == (0, "Resource 'model_output': 16, 16, 16, 16, 16\n"), err
    doc = json.loads(model.read_text())
    doc["commands"][0]["bindings"]["model_inptu"] = doc["commands"][0]["bindings"].pop(
        "model_input")
    model.write_text(json.dumps(doc))
    one_line_error(*cli(capsys, "run", model), "model_inptu: not a bind point of the "
                                               "serialized graph (did you mean model_input?)")


def test_a_damaged_partition_is_one_line_never_a_crash(capsys, tmp_path):
    """Truncations and flipped bytes anywhere in the partition: the model runs (a flip in
    unread padding), or fails with one line; never a traceback or a hang."""
    good = (UPSTREAM / "matmul_add" / "Partition_0.bin").read_bytes()
    rng = np.random.default_rng(5)
    cases = [good[:n] for n in (0, 3, 8, 64, 500, len(good) - 1)]
    for _ in range(40):
        bad = bytearray(good)
        for at in rng.integers(0, len(bad), rng.integers(1, 4)):
            bad[at] = int(rng.integers(0, 256))
        cases.append(bytes(bad))
    for i, data in enumerate(cases):
        folder = tmp_path / str(i)
        folder.mkdir()
        code, _out, err = cli(capsys, "run", serialized_copy(folder, data))
        assert code in (0, 2) and "Traceback" not in err, (i, err)
        if code:
            assert err.count("\n") == 1 and err.startswith("dml-emulator: error: "), (i, err)


def hand_made(tmp_path, data, constants=None):
    """A model running one hand-made partition: x (five 1.0) in, y out."""
    (tmp_path / "part").mkdir()
    (tmp_path / "part" / "p.bin").write_bytes(data)
    for name, raw in (constants or {}).items():
        (tmp_path / "part" / f"{name}.bin").write_bytes(raw)
    model = {"resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 5, "value": 1}},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 5, "value": 0}}},
        "dispatchables": {"d": {"type": "dmlSerializedGraph", "sourcePath": "part/p.bin"}},
        "commands": [{"type": "dispatch", "dispatchable": "d", "bindings": {"x": "x", "y": "y"}},
                     {"type": "print", "resource": "y"}]}
    (tmp_path / "m.json").write_text(json.dumps(model))
    return tmp_path / "m.json"


def add_constant(file_name):
    from .serialized_builder import T5
    return [{"name": "k", "outs": ["kk"], "const": file_name},
            {"name": "a", "ins": ["x", "kk"], "outs": ["y"],
             "op": ("DML_OPERATOR_ELEMENT_WISE_ADD1", [T5, T5], [T5], [(1, None)])}]


def test_a_hand_made_partition_with_a_named_constant_runs(capsys, tmp_path):
    from .serialized_builder import build
    model = hand_made(tmp_path, build(add_constant("k1"), ["x"], ["y"]),
                      {"k1": np.full(5, 2.5, np.float32).tobytes()})
    code, out, err = cli(capsys, "run", model)
    assert (code, out) == (0, "Resource 'y': 3.5, 3.5, 3.5, 3.5, 3.5\n"), err
    code, out, err = cli(capsys, "check", model)
    assert code == 0 and "ELEMENT_WISE_ADD1 is valid from DML_FEATURE_LEVEL_2_1" in out, err


def test_check_reports_a_valid_graph_it_cannot_run_as_validation_only(capsys, tmp_path,
                                                                       monkeypatch):
    """A serialized graph whose operators are valid but not executable here: check says so (exit
    0, as for single operators); run fails with E_NOTIMPL."""
    from emulator.registry import OperatorSpec

    from .serialized_builder import build
    model = hand_made(tmp_path, build(add_constant("k1"), ["x"], ["y"]),
                      {"k1": np.full(5, 2.5, np.float32).tobytes()})
    real = OperatorSpec.not_executable_because

    def lacking(self, validated):
        return ("a test's reason" if self.operator.name.endswith("ADD1")
                else real(self, validated))

    monkeypatch.setattr(OperatorSpec, "not_executable_because", lacking)
    code, out, err = cli(capsys, "check", model)
    assert code == 0, err
    assert ("ELEMENT_WISE_ADD1 is valid from DML_FEATURE_LEVEL_2_1 as a serialized graph "
            "(1 operator node, 1 constant) (validation only: not yet executable here: a test's "
            "reason)") in out, out
    code, _out, err = cli(capsys, "run", model)
    assert code != 0 and "E_NOTIMPL" in err and "a test's reason" in err, err


@pytest.mark.parametrize("name", ["../outside", "/tmp/outside", "a\0b", "", "..", "c:x"])
def test_a_constant_file_name_is_never_a_path(capsys, tmp_path, name):
    from .serialized_builder import build
    (tmp_path / "outside.bin").write_bytes(np.ones(5, np.float32).tobytes())
    model = hand_made(tmp_path, build(add_constant(name), ["x"], ["y"]))
    one_line_error(*cli(capsys, "run", model), "not a plain file name")


def test_a_constant_file_linked_outside_the_folder_is_refused(capsys, tmp_path):
    from .serialized_builder import build
    (tmp_path / "secret.bin").write_bytes(np.ones(5, np.float32).tobytes())
    model = hand_made(tmp_path, build(add_constant("k"), ["x"], ["y"]))
    (tmp_path / "part" / "k.bin").symlink_to(tmp_path / "secret.bin")
    one_line_error(*cli(capsys, "run", model), "leads outside the partition's folder")


def test_shared_tables_cannot_make_a_small_file_endless(capsys, tmp_path):
    """A 2 KB file whose tables point twice at the level below, 40 levels deep (2**40 reads)."""
    from emulator import DMLError
    from emulator.serialized import read

    from .serialized_builder import shared_activations
    with pytest.raises(DMLError, match=r"activation|tables"):
        read(shared_activations(40), "p.bin")


def test_a_scalar_union_read_through_a_malformed_companion_is_a_dml_error(capsys, tmp_path):
    from .serialized_builder import T5, build
    clip = [{"name": "c", "ins": ["x"], "outs": ["y"], "op": (
        "DML_OPERATOR_ELEMENT_WISE_CLIP1", [T5], [T5],
        [(10, None), (7, [1]), (12, bytes(8)), (12, bytes(8))])}]
    model = hand_made(tmp_path, build(clip, ["x"], ["y"]))
    one_line_error(*cli(capsys, "run", model), "scalar union cannot be read")
    code, out, _ = cli(capsys, "check", model)
    assert code != 0 and "scalar union cannot be read" in out


def test_check_judges_the_graph_as_run_builds_it(capsys, tmp_path):
    """A cycle: check reports it, as run does, instead of 'valid'."""
    from .serialized_builder import T5, build
    relu = "DML_OPERATOR_ACTIVATION_RELU"
    nodes = [{"name": "a", "ins": ["m2"], "outs": ["m1"], "op": (relu, [T5], [T5], [])},
             {"name": "b", "ins": ["m1"], "outs": ["m2"], "op": (relu, [T5], [T5], [])},
             {"name": "c", "ins": ["m2"], "outs": ["y"], "op": (relu, [T5], [T5], [])}]
    model = hand_made(tmp_path, build(nodes, ["x"], ["y"]))
    code, out, _ = cli(capsys, "check", model)
    assert code != 0 and "cycle" in out
    one_line_error(*cli(capsys, "run", model), "cycle")


def test_a_fused_activation_and_an_absent_one_are_read_by_position(capsys, tmp_path):
    """ADD1's FusedActivation: a RELU (no attributes) over 1 + (-3), or absent."""
    from .serialized_builder import build
    for fused, want in ((("DML_OPERATOR_ACTIVATION_RELU", []), "0, 0, 0, 0, 0"),
                        (None, "-2, -2, -2, -2, -2")):
        nodes = add_constant("k1")
        nodes[1]["op"] = (*nodes[1]["op"][:3], [(1, fused)])
        folder = tmp_path / str(fused is None)
        folder.mkdir()
        model = hand_made(folder, build(nodes, ["x"], ["y"]),
                          {"k1": np.full(5, -3.0, np.float32).tobytes()})
        code, out, err = cli(capsys, "run", model)
        assert (code, out) == (0, f"Resource 'y': {want}\n"), err
