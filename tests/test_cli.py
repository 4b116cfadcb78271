"""The dml-emulator command line: examples against golden output, upstream models, check, info,
and one clear line (exit 2) for every kind of bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emulator.cli import main
from emulator.dxdispatch import format_value

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
UPSTREAM = Path(__file__).parent / "data" / "upstream"
GOLDEN = Path(__file__).parent / "golden"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, without_compile_notes(err)


def without_compile_notes(err: str) -> str:
    """stderr without the once-per-cache note that kernels are being compiled (tests run with a
    cold cache in CI)."""
    return "".join(line for line in err.splitlines(keepends=True)
                   if not line.startswith("dml-emulator: compiling CPU kernels"))


@pytest.mark.parametrize("model", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_match_their_golden_output(capsys, model):
    code, out, err = run(capsys, "run", model)
    assert code == 0, err
    assert out == (GOLDEN / f"{model.stem}.txt").read_text()


def test_every_example_has_a_golden_file():
    assert EXAMPLES and {p.stem for p in EXAMPLES} <= {p.stem for p in GOLDEN.glob("*.txt")}


def test_upstream_slice_prints_what_dxdispatch_prints(capsys):
    code, out, _ = run(capsys, "run", UPSTREAM / "dml_slice.json")
    assert (code, out) == (0, "Resource 'output': 7, 9, 12, 14, 17, 19\n")


# The element-wise upstream models, with what their formulas give (DxDispatch prints a resource's
# whole buffer: FLOAT16 [5] is 10 bytes, padded to 12, so six values).
ELEMENT_WISE_MODELS = {
    "dml_element_wise_add": "Resource 'Out': 6, 10, -2\n",
    "dml_element_wise_add1": "Resource 'Out': 6, 10, -0.432332\n",  # ELU(0.5): 0.5*(e^-2 - 1)
    "dml_element_wise_add_npy": "Resource 'Out': 2, 4, 6, 8, 10, 12\n",
    "dml_element_wise_clip": "Resource 'A': -2.5, -2.5, -2, -1, 0, 1, 2, 2.5, 2.5\n",
    "dml_element_wise_identity": "Resource 'Out': 12, 14, 16\n",  # 2x + 10
    "dml_owned_tensors": "Resource 'Out': 6, 10, -2\n",
    "dml_scalar_union_fp16": "Resource 'output': 2, 2, 3, 4, 4, 0\n",  # CLIP1 to [2, 4]
}


@pytest.mark.parametrize("model", sorted(ELEMENT_WISE_MODELS))
def test_upstream_element_wise_models_print_what_their_formulas_give(capsys, tmp_path, model):
    # A copy of the model's folder: dml_element_wise_add_npy writes its output next to the model.
    for p in UPSTREAM.glob("dml_element_wise_add_input.*"):
        shutil.copy(p, tmp_path)
    shutil.copy(UPSTREAM / f"{model}.json", tmp_path)
    code, out, err = run(capsys, "run", tmp_path / f"{model}.json")
    assert (code, out, without_compile_notes(err)) == (0, ELEMENT_WISE_MODELS[model], "")
    if model == "dml_element_wise_add_npy":
        written = np.load(tmp_path / "dml_element_wise_add_output.npy")
        assert written.tolist() == [2, 4, 6, 8, 10, 12] and written.dtype == np.float32
        raw = (tmp_path / "dml_element_wise_add_output.dat").read_bytes()
        assert np.frombuffer(raw, np.float32).tolist() == [2, 4, 6, 8, 10, 12]


MOVEMENT_MODELS = {
    # A[0:3], B[0:2] (B's binding is its whole 3 elements; the tensor reads 2), A[4:9].
    "dml_join": "Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9\n",
    "dml_split": "Resource 'Out1': 1, 2\nResource 'Out2': 3, 4\nResource 'Out3': 5, 6\n",
    "dml_fill_value_sequence": "Resource 'Out': 3.2, 4.7, 6.2, 7.7, 9.2\n",
    # [[1, 2], [3, 4]] x2 bilinear, sampled at pixel centres, edges clamped.
    "dml_upsample_2d": "Resource 'output': 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, "
                       "3.25, 3.5, 3, 3.25, 3.75, 4\n",
}


@pytest.mark.parametrize("model", sorted(MOVEMENT_MODELS))
def test_upstream_movement_models_print_what_their_definitions_give(capsys, model):
    code, out, err = run(capsys, "run", UPSTREAM / f"{model}.json")
    assert (code, out, without_compile_notes(err)) == (0, MOVEMENT_MODELS[model], "")


REDUCTION_MODELS = {
    # The rows of 1..9 as [3, 3], summed along the last axis.
    "dml_reduce": "Resource 'input': 1, 2, 3, 4, 5, 6, 7, 8, 9\nResource 'output': 6, 15, 24\n",
    "dml_cumulative_product": "Resource 'Out': 2, 8, 64, 192\n",
}


@pytest.mark.parametrize("model", sorted(REDUCTION_MODELS))
def test_upstream_reduction_models_print_what_their_definitions_give(capsys, model):
    code, out, err = run(capsys, "run", UPSTREAM / f"{model}.json")
    assert (code, out, without_compile_notes(err)) == (0, REDUCTION_MODELS[model], "")


COMPUTE_MODELS = {
    # A {3, 1} x B {1, 3} + C (all 2): the outer product of 1..3 and 4..6, plus 2.
    "dml_gemm": "Resource 'output': 6, 7, 8, 10, 12, 14, 14, 17, 20\n",
    # 1..9 as 3 x 3, each 2 x 2 window summed and halved.
    "dml_convolution_2d": "Resource 'output': 6, 8, 12, 14\n",
    # Ones {32, 32} x ones (B owned by DML, bound at initialization; compiled as a graph):
    # every element 32 (no C, so Beta is ignored).
    "dml_gemm_graph": "Resource 'output': " + ", ".join(["32"] * 1024) + "\n",
    # ONNX Runtime's partition: MatMul + Add fused into one GEMM, B (5 x 5 of 1.5) and C (five
    # 1.0) read from matmul_add/*.bin at initialization: 5 x 1.5 x 1.5 + 1 each.
    "dmlSerializedGraph_matmul_add": "Resource 'model_output': 12.25, 12.25, 12.25, 12.25, "
                                     "12.25\n",
    # 27 ones, each 2 x 2 x 2 window (8 ones) times 0.5.
    "dml_convolution_3d": "Resource 'output': 4, 4, 4, 4, 4, 4, 4, 4\n",
    # A bidirectional RNN of one step from H = 0, so H = ELU(X[b] . W[d, j]): X[b] = 4b+1..4b+4,
    # W 1, 1.4, 1.8.. (direction 0 the first 20); every sum positive, so ELU is the identity
    # (X[0] . W[0, 0] = 1 + 2.8 + 5.4 + 8.8 = 18; direction 1: 9 + 18.8 + 29.4 + 40.8 = 98).
    # Output {1, 2, 8, 5}: direction d, batch item b, unit j holds X[b] . W[d, j].
    "dml_rnn": "Resource 'output': "
               "18, 34, 50, 66, 82, 43.6, 85.2, 126.8, 168.4, 210, 69.2, 136.4, 203.6, 270.8, "
               "338, 94.8, 187.6, 280.4, 373.2, 466, 120.4, 238.8, 357.2, 475.6, 594, 146, 290, "
               "434, 578, 722, 171.6, 341.2, 510.8, 680.4, 850, 197.2, 392.4, 587.6, 782.8, 978, "
               "98, 114, 130, 146, 162, 251.6, 293.2, 334.8, 376.4, 418, 405.2, 472.4, 539.6, "
               "606.8, 674, 558.8, 651.6, 744.4, 837.2, 930, 712.4, 830.8, 949.2, 1067.6, 1186, "
               "866, 1010, 1154, 1298, 1442, 1019.6, 1189.2, 1358.8, 1528.4, 1698, 1173.2, "
               "1368.4, 1563.6, 1758.8, 1954\n",
}


@pytest.mark.parametrize("model", sorted(COMPUTE_MODELS))
def test_upstream_compute_models_print_what_their_definitions_give(capsys, model):
    code, out, err = run(capsys, "run", UPSTREAM / f"{model}.json")
    assert (code, out, without_compile_notes(err)) == (0, COMPUTE_MODELS[model], "")


# TOP_K of INT64 values (valid from 5_0).
TOP_K_INT64 = """{
  "resources": {"x": {"initialValuesDataType": "INT64", "initialValues": [3, 1, 4, 1, 5, 9]},
                "v": {"initialValuesDataType": "INT64", "initialValues": {"valueCount": 3, "value": 0}},
                "i": {"initialValuesDataType": "UINT32", "initialValues": {"valueCount": 3, "value": 0}}},
  "dispatchables": {"top": {"type": "DML_OPERATOR_TOP_K", "desc": {
      "InputTensor": {"DataType": "INT64", "Sizes": [1, 1, 1, 6]},
      "OutputValueTensor": {"DataType": "INT64", "Sizes": [1, 1, 1, 3]},
      "OutputIndexTensor": {"DataType": "UINT32", "Sizes": [1, 1, 1, 3]}, "Axis": 3, "K": 3}}},
  "commands": [{"type": "dispatch", "dispatchable": "top",
                "bindings": {"InputTensor": "x", "OutputValueTensor": "v", "OutputIndexTensor": "i"}},
               {"type": "print", "resource": "v"}]
}"""


def test_a_model_of_64_bit_top_k_runs(capsys, tmp_path):
    code, out, err = run(capsys, "run", write(tmp_path, TOP_K_INT64))
    assert (code, err) == (0, "") and "9, 5, 4" in out.replace("\n", " ")


def test_a_model_with_a_type_no_kernel_handles_is_one_e_notimpl_line(capsys, tmp_path,
                                                                      monkeypatch):
    from emulator.ops import common, top_k

    monkeypatch.setattr(top_k, "KERNEL_TYPES", common.EIGHT_TYPES)  # (no real gap is left)
    code, out, err = run(capsys, "run", write(tmp_path, TOP_K_INT64))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "E_NOTIMPL" in err
    assert "DML_OPERATOR_TOP_K is valid at DML_FEATURE_LEVEL_6_4 but not yet executable" in err
    assert "its kernel does not handle InputTensor.DataType = DML_TENSOR_DATA_TYPE_INT64" in err


def test_iterations_print_a_timing_line(capsys):
    code, out, _ = run(capsys, "run", EXAMPLES[0], "-i", "5")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Dispatch '") and "5 iterations" in lines[0]
    assert lines[0].endswith("ms median (CPU)")


def write(tmp_path, text, name="m.json"):
    p = tmp_path / name
    p.write_text(text)
    return p


SLICE3D = """{
  "resources": {"x": {"initialValuesDataType": "INT8", "initialValues": [1, 2, 3, -4]},
                "y": {"initialValuesDataType": "INT8", "initialValues": {"valueCount": 4, "value": 0}}},
  "dispatchables": {"s": {"type": "SLICE1", "desc": {
      "InputTensor": {"DataType": "INT8", "Sizes": [1, 2, 2]},
      "OutputTensor": {"DataType": "INT8", "Sizes": [1, 2, 2]}, "DimensionCount": 3,
      "InputWindowOffsets": [0, 0, 0], "InputWindowSizes": [1, 2, 2],
      "InputWindowStrides": [1, -1, -1]}}},
  "commands": [{"type": "dispatch", "dispatchable": "s",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
               {"type": "print", "resource": "y"}]
}"""


def test_feature_level_option(capsys, tmp_path):
    model = write(tmp_path, SLICE3D)
    code, out, _ = run(capsys, "run", model, "--feature-level", "3.0")
    assert (code, out) == (0, "Resource 'y': -4, 3, 2, 1\n")  # INT8 printed as numbers
    code, out, err = run(capsys, "run", model, "--feature-level", "0x2100")
    assert code == 2 and "InputTensor.DimensionCount = 3 is invalid" in err
    assert "DML_FEATURE_LEVEL_3_0 or later allows it" in err


def test_check_reports_the_lowest_level(capsys, tmp_path):
    code, out, _ = run(capsys, "check", write(tmp_path, SLICE3D))
    assert (code, out) == (0, "s: SLICE1 is valid from DML_FEATURE_LEVEL_3_0\n")
    code, out, _ = run(capsys, "check", UPSTREAM / "dml_slice.json", "--json")
    assert code == 0 and json.loads(out)["dispatchables"] == [
        {"dispatchable": "slice", "operator": "SLICE", "executable": True,
         "min_feature_level": "1_0"}]
    for example, level in [("slice1_reverse_subsample", "2_1"), ("activation_elu_float16", "3_0"),
                           ("top_k1_smallest", "3_1"), ("mvn1_fused_leaky_relu", "2_1")]:
        code, out, _ = run(capsys, "check", ROOT / "examples" / f"{example}.json")
        assert code == 0 and f"valid from DML_FEATURE_LEVEL_{level}\n" in out, (example, out)
    broadcast = (ROOT / "examples" / "mvn1_fused_leaky_relu.json").read_text().replace(
        '"ScaleTensor":  { "DataType": "FLOAT32", "Sizes": [1, 2, 1, 1] }',
        '"ScaleTensor":  { "DataType": "FLOAT32", "Sizes": [1, 1, 1, 1] }')
    code, out, _ = run(capsys, "check", write(tmp_path, broadcast, "b.json"))
    assert code == 0 and out == "norm: MEAN_VARIANCE_NORMALIZATION1 is valid from DML_FEATURE_LEVEL_4_0\n"
    bad = write(tmp_path, SLICE3D.replace('"InputWindowStrides": [1, -1, -1]',
                                          '"InputWindowStrides": [1, 0, -1]'))
    code, out, _ = run(capsys, "check", bad)
    assert code == 1 and "invalid at every feature level" in out
    assert "InputWindowStrides[1] = 0 is invalid" in out


def test_info(capsys):
    code, out, _ = run(capsys, "info")
    assert code == 0 and ("Feature levels emulated: 1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, 5_0, 5_1, "
                          "5_2, 6_0, 6_1, 6_2, 6_3, 6_4 (default 6_4)") in out
    assert "DML_OPERATOR_SLICE1" in out and "Threads:" in out
    assert "Operators: 177 known, " in out
    code, out, _ = run(capsys, "info", "--json")
    info = json.loads(out)
    assert info["operator_types"] == 177 and info["threads"] >= 1
    assert info["operators_executable"] == sum(o["executable"] for o in info["operators"]) >= 28
    assert "UINT4" in info["data_types"]
    assert {o["operator"] for o in info["operators"]} >= {"SLICE", "SLICE1"}


@pytest.mark.parametrize("text,message", [
    ('{"resources": {}, "dispatchables": {}, "commands": [}', "invalid JSON"),
    ('{"resources": {}, "commands": []}', "no 'dispatchables' member"),
    (SLICE3D.replace('"SLICE1"', '"SLICE_9"'), "'SLICE_9' is not a DML_OPERATOR_TYPE"),
    (SLICE3D.replace('"DataType": "INT8", "Sizes": [1, 2, 2]},\n      "Output',
                     '"DataType": "INT7", "Sizes": [1, 2, 2]},\n      "Output'),
     "dispatchables.s.desc.InputTensor.DataType: 'INT7' is not a DML_TENSOR_DATA_TYPE"),
    (SLICE3D.replace('"InputWindowSizes": [1, 2, 2],', ''),
     "dispatchables.s.desc: InputWindowSizes is required by DML_SLICE1_OPERATOR_DESC"),
    (SLICE3D.replace('"InputWindowSizes": [1, 2, 2]', '"InputWindowSizes": [1, 2.5, 2]'),
     "dispatchables.s.desc.InputWindowSizes[1]: expected an integer, got 2.5"),
    (SLICE3D.replace('"DimensionCount": 3,', '"DimensionCount": 3, "Axis": 1,'),
     "Axis is not a field of DML_SLICE1_OPERATOR_DESC"),
    (SLICE3D.replace('"OutputTensor": "y"', '"OutputTensor": "z"'),
     "'z' is not a resource of the model"),
    (SLICE3D.replace('"OutputTensor": "y"', '"Output": "y"'),
     "Output: not a bind point of DML_SLICE1_OPERATOR_DESC"),
    (SLICE3D.replace('[1, 2, 3, -4]', '[1, 2, 3, 400]'),
     "resources.x.initialValues[3]: 400 is out of range for int8 [-128, 127]"),
    (SLICE3D.replace('"InputWindowStrides": [1, -1, -1]', '"InputWindowStrides": [1, 0, -1]'),
     "E_INVALIDARG: DML_OPERATOR_SLICE1: InputWindowStrides[1] = 0 is invalid"),
    (SLICE3D.replace('"type": "SLICE1"', '"type": "hlsl"'),
     "dispatchables.s.type: 'hlsl' dispatchables (HLSL compute shaders) are not supported by a "
     "CPU emulator of DirectML"),
    (SLICE3D.replace('"type": "SLICE1"', '"type": "onnx"'),
     "dispatchables.s.type: 'onnx' dispatchables (ONNX models, run by ONNX Runtime) are not "
     "supported by a CPU emulator of DirectML"),
    (SLICE3D.replace('"type": "SLICE1"', '"type": "ELEMENT_WISE_IDENTTY"'),
     "dispatchables.s.type: 'ELEMENT_WISE_IDENTTY' is not a DML_OPERATOR_TYPE (did you mean "
     "ELEMENT_WISE_IDENTITY?)"),
    (SLICE3D.replace('"type": "SLICE1"', '"type": "DML_OPERATOR_SLCE1"'),
     "'DML_OPERATOR_SLCE1' is not a DML_OPERATOR_TYPE (did you mean DML_OPERATOR_SLICE1?)"),
    (SLICE3D.replace('"type": "SLICE1"', '"type": "QQQQQQQQQQ"'),
     "'QQQQQQQQQQ' is not a DML_OPERATOR_TYPE ('dml-emulator info' lists the operators)"),
    (SLICE3D.replace('{"type": "print", "resource": "y"}', '{"type": "sleep"}'),
     'commands[1].type: expected "dispatch", "print" or "writeFile"'),
])
def test_bad_input_gives_one_line_and_exit_2(capsys, tmp_path, text, message):
    code, out, err = run(capsys, "run", write(tmp_path, text))
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and message in err, err
    assert "Traceback" not in err


def test_missing_file_and_bad_level(capsys, tmp_path):
    code, _, err = run(capsys, "run", tmp_path / "nope.json")
    assert code == 2 and "cannot read the model" in err
    with pytest.raises(SystemExit) as e:
        main(["run", str(EXAMPLES[0]), "--feature-level", "9_9"])
    assert e.value.code == 2
    assert "'9_9' is not a DirectML feature level" in capsys.readouterr().err


def test_resources_initializers_and_write_file(capsys, tmp_path):
    np.save(tmp_path / "x.npy", np.array([[1, 2], [3, 4]], np.float16))
    (tmp_path / "raw.dat").write_bytes(np.array([7, 8, 9], np.uint16).tobytes())
    model = write(tmp_path, """{
      // comments and trailing commas, as DxDispatch allows
      "resources": {
        "x": {"initialValues": {"sourcePath": "x.npy"}},
        "r": {"initialValuesDataType": "UINT16", "initialValues": {"sourcePath": "raw.dat"},
              "sizeInBytes": 16, "initialValuesOffsetInBytes": 2},
        "f": {"initialValuesDataType": "FLOAT32", "initialValues": ["nan", "-INF", 1e6, 0.1]},
        "y": {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": 4, "value": 0}},
      },
      "dispatchables": {"s": {"type": "DML_OPERATOR_SLICE1",
          "InputTensor": {"Type": "BUFFER", "Desc": {"DataType": "FLOAT16", "Sizes": [2, 2]}},
          "OutputTensor": {"DataType": "FLOAT16", "Sizes": [2, 2]},
          "InputWindowOffsets": [0, 0], "InputWindowSizes": [2, 2], "InputWindowStrides": [-1, 1],
      }},
      "commands": [
        {"type": "dispatch", "dispatchable": "s",
         "bindings": {"InputTensor": {"name": "x"}, "OutputTensor": "y"}},
        {"type": "print", "resource": "y"}, {"type": "print", "resource": "r"},
        {"type": "print", "resource": "f"},
        {"type": "writeFile", "resource": "y", "targetPath": "y.npy", "dimensions": [2, 2]},
        {"type": "writeFile", "resource": "r", "targetPath": "r.dat"},
      ],
    }""")
    code, out, err = run(capsys, "run", model)
    assert code == 0, err
    assert out.splitlines() == ["Resource 'y': 3, 4, 1, 2",
                                "Resource 'r': 0, 7, 8, 9, 0, 0, 0, 0",
                                "Resource 'f': nan, -inf, 1e+06, 0.1"]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [[3, 4], [1, 2]])
    assert np.load(tmp_path / "y.npy").dtype == np.float16
    assert np.fromfile(tmp_path / "r.dat", np.uint16).tolist() == [0, 7, 8, 9, 0, 0, 0, 0]


@pytest.mark.parametrize("value,text", [
    (0.5, "0.5"), (1e6, "1e+06"), (123456789.0, "1.23457e+08"), (1e-5, "1e-05"),
    (float("nan"), "nan"), (float("-inf"), "-inf"), (np.float16(0.1), "0.0999756"), (-3, "-3"),
    (100.0, "100"),
])
def test_numbers_print_as_cpp_ostream(value, text):
    assert format_value(value) == text


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "emulator.cli", "run", str(UPSTREAM / "dml_slice.json")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0 and r.stdout == "Resource 'output': 7, 9, 12, 14, 17, 19\n"


def test_python_example_runs():
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "faithful_api.py")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    rows = [[float(v) for v in line.strip(" []").split()] for line in r.stdout.splitlines()]
    assert rows == [[8, 9, 10, 11], [4, 5, 6, 7], [0, 1, 2, 3]]


OWNED = """{
  "resources": {
    "x": {"initialValuesDataType": "UINT16", "initialValues": {"sourcePath": "x.bin"}},
    "y": {"initialValuesDataType": "UINT16", "initialValues": {"valueCount": 4, "value": 0}},
    "scratch": {"initialValuesDataType": "FLOAT32", "initialValues": "deferred", "sizeInBytes": 16},
  },
  "dispatchables": {
    "rev": {"type": "SLICE1",
            "desc": {"InputTensor": {"DataType": "UINT16", "Sizes": [4], "Flags": "OWNED_BY_DML"},
                     "OutputTensor": {"DataType": "UINT16", "Sizes": [4]},
                     "DimensionCount": 1, "InputWindowOffsets": [0], "InputWindowSizes": [4],
                     "InputWindowStrides": [-1]},
            "bindings": {"InputTensor": "x"},
            "executionFlags": ["DISABLE_META_COMMANDS", "DESCRIPTORS_VOLATILE"]},
  },
  "commands": [
    {"type": "dispatch", "dispatchable": "rev", "bindings": {"OutputTensor": "y"}},
    {"type": "print", "resource": "y"},
    {"type": "print", "resource": "scratch"},
  ],
}"""


def test_owned_inputs_bin_sources_deferred_and_flags(capsys, tmp_path):
    np.array([1, 2, 3, 65535], np.uint16).tofile(tmp_path / "x.bin")
    code, out, err = run(capsys, "run", write(tmp_path, OWNED))
    assert code == 0, err
    assert out.splitlines() == ["Resource 'y': 65535, 3, 2, 1", "Resource 'scratch': 0, 0, 0, 0"]
    # Binding the owned input at dispatch too is DirectML's error, reported as one line.
    twice = OWNED.replace('"bindings": {"OutputTensor": "y"}',
                          '"bindings": {"OutputTensor": "y", "InputTensor": "x"}')
    code, _, err = run(capsys, "run", write(tmp_path, twice, "twice.json"))
    assert code == 2 and "flagged DML_TENSOR_FLAG_OWNED_BY_DML" in err and "never at execution" in err


def test_invalid_json_names_line_and_column(capsys, tmp_path):
    code, _, err = run(capsys, "run", write(tmp_path, '{\n  "resources": {\n    "x": [1, 2,,]\n  }\n}'))
    assert code == 2 and "m.json:3:16: invalid JSON: Unexpected \",\"" in err


def test_progress_bar_only_on_a_terminal(monkeypatch):
    import io

    from emulator.cli import _progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    for i in range(1, 41):
        _progress("d", i, 40)
    assert "d: [" in tty.getvalue() and "40/40" in tty.getvalue()
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    _progress("d", 40, 40)
    assert plain.getvalue() == ""


def test_element_offsets_wrapped_fused_activation_and_omitted_optional_bind_points(capsys, tmp_path):
    model = """{
      "resources": {
        "buf": {"initialValuesDataType": "FLOAT32",
                "initialValues": [99, 99, 99, 99, 1, 2, 3, 4, 99, 99, 99, 99]},
        "out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 8, "value": 7}}
      },
      "dispatchables": {
        "n": {"type": "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1",
              "desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                       "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                       "AxisCount": 1, "Axes": [0], "NormalizeVariance": false, "Epsilon": 0,
                       "FusedActivation": {"Type": "DML_OPERATOR_ACTIVATION_LINEAR",
                                           "Desc": {"Alpha": 2, "Beta": 0.5}}}}
      },
      "commands": [
        {"type": "dispatch", "dispatchable": "n",
         "bindings": {"InputTensor": {"name": "buf", "elementOffset": 4},
                      "OutputTensor": {"name": "out", "elementOffset": 4}}},
        {"type": "print", "resource": "out"}
      ]
    }"""
    code, out, err = run(capsys, "run", write(tmp_path, model))
    assert code == 0, err
    # x - mean = -1.5 .. 1.5, times 2 plus 0.5; the first 4 floats of "out" are untouched.
    assert out == "Resource 'out': 7, 7, 7, 7, -2.5, -0.5, 1.5, 3.5\n"


# Every upstream DxDispatch model through `check`: the lowest level at which each dispatchable is
# valid (from the support tables), what runs here, and one line for what a CPU emulator cannot run.
UPSTREAM_CHECK = {
    "dml_convolution_2d": "conv2d: CONVOLUTION is valid from DML_FEATURE_LEVEL_1_0",
    "dml_convolution_3d": "conv3d: CONVOLUTION is valid from DML_FEATURE_LEVEL_1_0",
    "dml_cumulative_product": "cumulative_product: CUMULATIVE_PRODUCT is valid from "
                              "DML_FEATURE_LEVEL_3_1",
    "dml_element_wise_add": "add: ELEMENT_WISE_ADD is valid from DML_FEATURE_LEVEL_3_0",
    "dml_element_wise_add1": "add: ELEMENT_WISE_ADD1 is valid from DML_FEATURE_LEVEL_3_0",
    "dml_element_wise_add_npy": "add: ELEMENT_WISE_ADD is valid from DML_FEATURE_LEVEL_3_0",
    "dml_element_wise_clip": "clip: ELEMENT_WISE_CLIP is valid from DML_FEATURE_LEVEL_3_0",
    "dml_element_wise_identity": "identity: ELEMENT_WISE_IDENTITY is valid from "
                                 "DML_FEATURE_LEVEL_3_0",
    "dml_fill_value_sequence": "fill_sequence: FILL_VALUE_SEQUENCE is valid from "
                               "DML_FEATURE_LEVEL_2_1",
    "dml_gemm": "gemm: GEMM is valid from DML_FEATURE_LEVEL_4_0",
    "dml_gemm_graph": "gemm: GEMM is valid from DML_FEATURE_LEVEL_2_1 as a one-node graph "
                      "(CompileGraph)",
    "dml_join": "join: JOIN is valid from DML_FEATURE_LEVEL_3_1",
    "dml_owned_tensors": "add: ELEMENT_WISE_ADD is valid from DML_FEATURE_LEVEL_3_0",
    "dml_reduce": "sum: REDUCE is valid from DML_FEATURE_LEVEL_1_0",
    "dml_rnn": "rnn: RNN is valid from DML_FEATURE_LEVEL_1_0",
    "dml_scalar_union_fp16": "clip: ELEMENT_WISE_CLIP1 is valid from DML_FEATURE_LEVEL_5_0",
    "dml_slice": "slice: SLICE is valid from DML_FEATURE_LEVEL_1_0",
    "dml_split": "split: SPLIT is valid from DML_FEATURE_LEVEL_3_0",
    "dml_upsample_2d": "upsample: UPSAMPLE_2D is valid from DML_FEATURE_LEVEL_1_0",
    "image_io": "convert_to_grayscale: CONVOLUTION is valid from DML_FEATURE_LEVEL_1_0",
    "hlsl_add_fp16": "add: not checked: dispatchables.add.type: 'hlsl' dispatchables (HLSL "
                     "compute shaders) are not supported by a CPU emulator of DirectML",
    "hlsl_add_fp32": "add: not checked: dispatchables.add.type: 'hlsl'",
    "onnx_gemm": "gemm: not checked: dispatchables.gemm.type: 'onnx'",
    "onnx_dynamic_shapes": "concat: not checked: dispatchables.concat.type: 'onnx'",
    "dmlSerializedGraph_matmul_add": "matmul_add: GEMM is valid from DML_FEATURE_LEVEL_2_1 as a "
                                     "serialized graph (1 operator node, 2 constants)",
}


def test_every_upstream_model_is_in_the_check_table():
    models = {p.stem for p in UPSTREAM.glob("*.json") if p.stem != "_schema"}
    assert models == set(UPSTREAM_CHECK)


@pytest.mark.parametrize("model", sorted(UPSTREAM_CHECK))
def test_check_every_upstream_model(capsys, model):
    code, out, err = run(capsys, "check", UPSTREAM / f"{model}.json")
    assert code == 0 and err == "" and out.count("\n") == 1, (out, err)
    assert out.startswith(UPSTREAM_CHECK[model]), out
    from emulator.registry import REGISTRY
    executable = [s.operator.name.removeprefix("DML_OPERATOR_") for s in REGISTRY.values()
                  if s.executable]
    if "is valid from" in out:
        runs = out.split(": ")[1].split(" is valid")[0] in executable
        # "validation only" for an operator without a kernel, or for this desc's mode/type.
        assert ("validation only" not in out) == runs or "is not executable yet" in out, out


@pytest.mark.parametrize("old,new,message", [
    ('"initialValuesDataType": "INT8"', '"initialValuesDatatype": "INT8"',
     "resources.x: initialValuesDatatype is not a field of a buffer resource (did you mean "
     "initialValuesDataType?)"),
    ('"InputWindowOffsets"', '"InputWindowOfsets"',
     "InputWindowOfsets is not a field of DML_SLICE1_OPERATOR_DESC (did you mean "
     "InputWindowOffsets?)"),
    ('{"type": "print", "resource": "y"}', '{"type": "print", "resorce": "y"}',
     "commands[1]: resorce is not a field of a print command (did you mean resource?)"),
])
def test_unknown_keys_are_errors_with_the_nearest_valid_one(capsys, tmp_path, old, new, message):
    assert old in SLICE3D
    code, out, err = run(capsys, "run", write(tmp_path, SLICE3D.replace(old, new)))
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_upstream_model_with_a_typo_in_a_binding_is_refused_with_a_suggestion(capsys, tmp_path):
    text = (UPSTREAM / "dml_slice.json").read_text()
    assert '"InputTensor": "input"' in text
    bad = text.replace('"InputTensor": "input"',
                       '"InputTensor": {"name": "input", "elementOfset": 1}')
    code, out, err = run(capsys, "run", write(tmp_path, bad))
    assert code == 2 and out == ""
    assert "elementOfset is not a field of a binding (did you mean elementOffset?)" in err


def test_element_count_bounds_the_binding(capsys, tmp_path):
    text = (UPSTREAM / "dml_slice.json").read_text()
    short = text.replace('"InputTensor": "input"',
                         '"InputTensor": {"name": "input", "elementCount": 4}')
    code, out, err = run(capsys, "run", write(tmp_path, short))
    assert code == 2 and out == "" and "SizeInBytes" in err, err  # DirectML rejects a binding too small


def test_a_misspelt_operator_never_suggests_invalid(capsys, tmp_path):
    code, _, err = run(capsys, "run", write(tmp_path, SLICE3D.replace('"SLICE1"', '"INVALD"')))
    assert code == 2 and "'INVALD' is not a DML_OPERATOR_TYPE" in err
    assert "INVALID" not in err


def test_not_implemented_is_one_short_line_pointing_to_info(capsys, monkeypatch):
    import dataclasses

    from descriptors import DML_OPERATOR_TYPE
    from emulator.registry import REGISTRY

    rnn = DML_OPERATOR_TYPE.DML_OPERATOR_RNN  # as if RNN had no CPU kernel (a valid-only operator)
    monkeypatch.setitem(REGISTRY, rnn, dataclasses.replace(REGISTRY[rnn], module=None))
    code, out, err = run(capsys, "run", UPSTREAM / "dml_rnn.json")
    assert code == 2 and out == "" and err.count("\n") == 1 and len(err) < 300
    assert err.rstrip().endswith("it has no CPU kernel yet (run 'dml-emulator info' for what "
                                 "executes)")


# -- the command line speaks DxDispatch ----------------------------------------------------------
SLICE_OUT = "Resource 'output': 7, 9, 12, 14, 17, 19\n"


@pytest.mark.parametrize("argv", [
    ["{m}"],                                   # dxdispatch MODEL.json
    ["-m", "{m}"], ["run", "--model", "{m}"],  # DxDispatch's -m/--model
    ["--dml_feature_level", "3.1", "{m}"],     # options before the model, DxDispatch's names
    ["{m}", "--dispatch_iterations", "1", "--dispatch_repeat", "1"],
])
def test_a_bare_model_runs_as_dxdispatch_runs_it(capsys, argv):
    model = str(UPSTREAM / "dml_slice.json")
    code, out, err = run(capsys, *[a.format(m=model) for a in argv])
    assert (code, out, err) == (0, SLICE_OUT, "")


@pytest.mark.parametrize("option,message", [
    (["-a", "NVIDIA"], "DxDispatch's -a/--adapter (selects a DirectX adapter) has no meaning on a "
                       "CPU emulator"),
    (["--adapter=Intel"], "DxDispatch's -a/--adapter (selects a DirectX adapter) has no meaning"),
    (["-s"], "DxDispatch's -s/--show_adapters (lists DirectX adapters) has no meaning on a CPU "
             "emulator"),
    (["--debug"], "DxDispatch's -d/--debug (enables the D3D12 and DirectML debug layers) has no "
                  "meaning on a CPU emulator (every call is validated and reported as DMLError "
                  "anyway)"),
    (["-c", "gpu"], "DxDispatch's -c/--pix_capture_type (takes PIX captures) has no meaning on a "
                    "CPU emulator"),
    (["--queue_type", "compute"], "DxDispatch's -q/--queue_type (chooses the D3D12 command queue "
                                  "type) has no meaning"),
    (["--disable_gpu_timeout"], "--disable_gpu_timeout (disables the D3D12 queue's GPU timeout) "
                                "has no meaning on a CPU emulator"),
    (["--print_hlsl_disassembly"], "has no meaning on a CPU emulator: HLSL dispatchables are not "
                                   "supported"),
    (["-L", "3"], "DxDispatch's -L/--onnx_logging_level (configures ONNX Runtime) has no meaning "
                  "on a CPU emulator: ONNX models are not supported"),
])
def test_dxdispatch_options_without_meaning_on_a_cpu_are_explained(capsys, option, message):
    code, out, err = run(capsys, *option, UPSTREAM / "dml_slice.json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("dml-emulator: error: ") and message in err, err


def test_usage_errors_are_one_line_with_status_2(capsys):
    for argv, message in [(["--nope", "m.json"], "unrecognized arguments: --nope"),
                          (["run", "m.json", "-i", "0"], "'0' is not a positive number of "
                                                          "iterations"),
                          (["run", "m.json", "-v", "3"], "'3' is not 0, 1 or 2"),
                          (["check"], "the following arguments are required: model")]:
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1 and message in err, err
    code, _, err = run(capsys, "run")
    assert code == 2 and err == ("dml-emulator: error: no model file given (dml-emulator "
                                 "MODEL.json; see dml-emulator run --help)\n")
    code, _, err = run(capsys, "run", "a.json", "-m", "b.json")
    assert code == 2 and "give the model once" in err


def test_timing_options_follow_dxdispatch(capsys):
    model = UPSTREAM / "dml_slice.json"
    code, out, _ = run(capsys, model, "-i", "4", "-r", "2", "-v", "2", "-w", "2")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Initialize 'slice': ")
    assert lines[1] == "Dispatch 'slice': 4 iterations"
    assert lines[2].startswith("CPU Timings (Cold) : 2 samples, ") and "ms median" in lines[2]
    assert lines[3].startswith("CPU Timings (Hot)  : 2 samples, ")
    assert lines[4] == "The timings of each iteration: "
    assert [ln.split(":")[0] for ln in lines[5:9]] == [f"iteration {i}" for i in range(4)]
    assert lines[9] == SLICE_OUT.rstrip()
    # -t runs until the time is up (at least once); -I spaces the dispatches.
    code, out, _ = run(capsys, model, "-t", "30", "-I", "10")
    first = out.splitlines()[0]
    assert code == 0 and first.startswith("Dispatch 'slice': ") and first.endswith(
        "ms median (CPU)")
    assert 1 <= int(first.split(": ")[1].split()[0]) <= 4


def test_print_commands_in_dxdispatch_format(capsys):
    code, out, _ = run(capsys, UPSTREAM / "dml_slice.json", "--print_commands")
    assert code == 0 and out.splitlines()[:4] == [
        '[StartCmd][0000]\t: {"type":"dispatch","dispatchable":"slice","bindings":'
        '{"InputTensor":"input","OutputTensor":"output"}}',
        "[EndCmd][0000]\t: hr=0x00000000 ", "",
        '[StartCmd][0001]\t: {"type":"print","resource":"output"}']


def test_show_dependencies(capsys):
    code, out, _ = run(capsys, "-S")
    assert code == 0 and out.startswith("dml-emulator: ") and "\nnumba: " in out
    assert "\nPillow: " in out


@pytest.mark.parametrize("command", ["run", "check", "info"])
def test_a_bad_feature_level_variable_is_one_line_everywhere(capsys, monkeypatch, command):
    monkeypatch.setenv("DML_EMULATOR_FEATURE_LEVEL", "9_9")
    argv = [command] + ([] if command == "info" else [str(UPSTREAM / "dml_slice.json")])
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("dml-emulator: error: DML_EMULATOR_FEATURE_LEVEL: '9_9' is not a "
                          "DirectML feature level (write 3_1, 3.1 or 0x3100")


def test_info_reports_the_level_it_emulates(capsys, monkeypatch):
    monkeypatch.setenv("DML_EMULATOR_FEATURE_LEVEL", "3.1")
    code, out, _ = run(capsys, "info")
    assert code == 0 and "(default 3_1)" in out
    assert "UINT4" not in out.split("Data types: ")[1].split("\n")[0]  # 6_0's types not at 3_1


@pytest.mark.parametrize("command", ["run", "check"])
def test_help_states_the_real_default_level(capsys, command):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert e.value.code == 0 and "(default: $DML_EMULATOR_FEATURE_LEVEL or 6_4)" in text
    assert "4_0" not in text


def test_info_json_into_a_closed_pipe_ends_quietly():
    p = subprocess.Popen([sys.executable, "-m", "emulator.cli", "info", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # as `| head -1` does once it has its line
    err = p.stderr.read()
    assert p.wait(timeout=120) == 1 and err == b""


# -- run and check: one loading path, the same first error --------------------------------------
@pytest.mark.parametrize("old,new,message", [
    ('"InputWindowOffsets"', '"InputWindowOfsets"', "InputWindowOfsets is not a field"),
    ('[1, 2, 3, -4]', '[1, 2, 3, 400]', "400 is out of range for int8"),
    ('"OutputTensor": "y"', '"OutputTensor": "z"', "'z' is not a resource of the model"),
    ('{"type": "print", "resource": "y"}', '{"type": "print", "resource": 7}',
     "commands[1].resource: expected a resource name, got 7"),
    ('[1, 2, 3, -4]', '{"sourcePath": "../x.bin"}', "'../x.bin' leads outside the model's folder"),
    ('"valueCount": 4,', '"valueCount": 4000000000000,', "over the limit of 4294967296 bytes"),
    ('"commands": [', '"commands": [{"type": "writeFile", "resource": "y", "targetPath": "y.npy", '
                      '"dimensions": [-1]},', "commands[0].dimensions[0]: expected a size from 0"),
])
def test_run_and_check_report_the_same_first_error(capsys, tmp_path, old, new, message):
    assert old in SLICE3D
    model = write(tmp_path, SLICE3D.replace(old, new))
    code_run, out_run, err_run = run(capsys, "run", model)
    code_check, out_check, err_check = run(capsys, "check", model)
    assert code_run == code_check == 2 and out_run == out_check == ""
    assert err_run == err_check and err_run.count("\n") == 1, (err_run, err_check)
    assert message in err_run, err_run


def test_a_level_that_cannot_be_emulated_is_never_reported(capsys, monkeypatch):
    import emulator.cli as cli_module
    from emulator.featurelevels import ALL_LEVELS

    monkeypatch.setattr(cli_module, "EMULATED_LEVELS", ALL_LEVELS[:5])
    code, out, err = run(capsys, "info")
    assert code == 2 and out == ""
    assert err == ("dml-emulator: error: DML_FEATURE_LEVEL_6_4 cannot be emulated (emulated: 1_0, "
                   "2_0, 2_1, 3_0, 3_1)\n")


@pytest.mark.parametrize("exception,code,message", [
    (MemoryError, 2, "dml-emulator: error: out of memory (lower --max-resource-bytes to refuse "
                     "such models up front)\n"),
    (KeyboardInterrupt, 130, "dml-emulator: interrupted\n"),
])
def test_memory_and_interrupts_are_one_line(capsys, monkeypatch, exception, code, message):
    import emulator.dxdispatch

    def fail(*args, **kwargs):
        raise exception

    monkeypatch.setattr(emulator.dxdispatch, "load_model", fail)
    assert run(capsys, UPSTREAM / "dml_slice.json") == (code, "", message)


def test_check_names_why_a_valid_desc_does_not_execute(capsys, monkeypatch):
    """A row that cannot run some valid desc says why (its ``unsupported``); check prints it."""
    from descriptors import DML_OPERATOR_TYPE
    from emulator.registry import REGISTRY

    module = REGISTRY[DML_OPERATOR_TYPE.DML_OPERATOR_UPSAMPLE_2D].module
    monkeypatch.setattr(module, "unsupported", lambda v: f"{v.InterpolationMode.name} (a test)",
                        raising=False)
    code, out, _ = run(capsys, "check", UPSTREAM / "dml_upsample_2d.json")
    assert code == 0
    assert out.startswith("upsample: UPSAMPLE_2D is valid from DML_FEATURE_LEVEL_1_0 (validation "
                          "only: not yet executable here: DML_INTERPOLATION_MODE_LINEAR (a test)"), \
        out
