"""What `pip install .` ships: every kgen package and every non-Python file kgen reads at run time
(the emulator's C++ and headers, the grammar) is named by pyproject.toml, so an installed kgen is the
kgen the tests run. A package or file missing from the lists builds a wheel that fails at import or
at the first emulation."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_kgen_package_is_listed():
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "kgen").rglob("__init__.py")}
    missing = sorted(found - set(SETUPTOOLS["packages"]))
    assert not missing, f"packages not in pyproject.toml's [tool.setuptools] packages: {missing}"


def test_every_data_file_of_a_package_matches_its_package_data():
    unshipped = []
    for package, globs in SETUPTOOLS["package-data"].items():
        if package.startswith("kgen._data"):
            continue
        folder = ROOT.joinpath(*package.split("."))
        shipped = {f for g in globs for f in folder.glob(g)}
        for f in folder.rglob("*"):
            in_subpackage = any((d / "__init__.py").is_file() for d in f.parents if folder in d.parents)
            if f.is_file() and f.suffix not in (".py", ".pyc") and not in_subpackage and f not in shipped:
                unshipped.append(f.relative_to(ROOT).as_posix())
    assert not unshipped, f"files pyproject.toml's package-data does not ship: {unshipped[:10]}"
