"""The generated schema module is what the generator writes from the facts in tools/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import descriptors
from descriptors import DML_OPERATOR_TYPE, OPERATOR_DESC_CLASSES, SCHEMA, SCHEMAS

ROOT = Path(__file__).resolve().parent.parent
FACTS = json.loads((ROOT / "tools" / "directml-schema.json").read_text())


def test_regenerating_changes_nothing():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_schema.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_operator_type_has_its_struct_with_the_header_fields():
    assert len(SCHEMAS) == len(FACTS["operators"]) == 177
    for op in FACTS["operators"]:
        t = DML_OPERATOR_TYPE[op["operator"]]
        assert int(t) == op["value"]
        cls = getattr(descriptors, op["struct"])
        assert OPERATOR_DESC_CLASSES[t] is cls and t == cls.OPERATOR_TYPE
        assert [f.name for f in SCHEMA[t].fields] == [f["name"] for f in op["fields"]]
        assert SCHEMA[t].in_place == op["in_place"]


def test_every_enum_constant_is_exported_with_its_value():
    for enum_name, members in FACTS["enums"].items():
        cls = getattr(descriptors, enum_name)
        for name, value in members.items():
            assert getattr(descriptors, name) == value and cls[name] == value


def test_hello_directml_operator_struct_exists_and_ports_positionally():
    from descriptors import (
        DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC,
        DML_SCATTER_ELEMENTS_OPERATOR_DESC,
        DML_SCATTER_OPERATOR_DESC,
        DML_SIZE_2D,
    )
    d = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC("in", "out")
    assert (d.InputTensor, d.OutputTensor, d.ScaleBias) == ("in", "out", None)
    assert DML_SIZE_2D(4, 2).Height == 2
    assert DML_SCATTER_ELEMENTS_OPERATOR_DESC is DML_SCATTER_OPERATOR_DESC
