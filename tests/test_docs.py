"""The documentation stays true: generated tables are current, every module is on the map."""

from __future__ import annotations

from pathlib import Path

from emulator.docgen import render

ROOT = Path(__file__).parent.parent


def test_operators_md_is_current():
    committed = (ROOT / "docs" / "operators.md").read_text()
    assert committed == render(), "docs/operators.md is stale: run python -m emulator.docgen docs/operators.md"


def test_architecture_names_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text()
    for package in ("descriptors", "emulator"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.name == "__init__.py" or ("/ops/" in rel and path.stem not in ("common",)) \
                    or ("/support/" in rel and path.stem != "loader") \
                    or "/elementwise/kernels/" in rel:
                continue  # packages are described by their folder; ops/ and support/ rules
                # modules and the generated element-wise kernels by their convention
            assert rel in text, f"docs/architecture.md does not mention {rel}"


def test_every_module_has_a_docstring():
    import ast

    for package in ("descriptors", "emulator"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            assert ast.get_docstring(tree), f"{path.relative_to(ROOT)} has no module docstring"


def test_readme_commands_match_ci():
    """.ci/run runs the README's two commands exactly, in README order, in one fresh venv."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in readme.splitlines() if ln.startswith("python -m pip install")]
    assert len(commands) == 2, "README states the main job, then the test command"
    assert "pytest" not in commands[0] and "pytest" in commands[1]
    ci_lines = [ln.strip() for ln in ci.splitlines()]
    assert all(c in ci_lines for c in commands), ".ci/run must run the README's exact commands"
    assert ci_lines.index(commands[0]) < ci_lines.index(commands[1]), "in README order"
    assert "python -m venv" in ci
