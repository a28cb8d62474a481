"""The bytes every example (and each of its variants) builds to: kernel sources, JIT files, the
manifest and plan.json, pinned by sha256 in tests/data/build_pins.json.

This is the guard of the refactors of issue #13 (one stage driver, an IR that carries everything
printed, subpackages): they must change no byte a kernel or its loader sees. It is no oracle of
correctness; the emulation, port-check and type-check tests are. A deliberate change of output
(a manifest key renamed with its format version bumped) repins with
`PYTHONPATH=. python3 tests/gen/test_pins.py --repin` and says why in its commit. ir.txt and the build README
describe the IR for people and are not pinned.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))      # tests/, for conftest
from conftest import EXAMPLES, ROOT  # noqa: E402

PINS = ROOT / "tests" / "data" / "build_pins.json"
UNPINNED = ("ir.txt", "README.md")


def _builds() -> list[tuple[str, Path, str | None]]:
    from kgen.gen.spec import load_file

    out = []
    for path in EXAMPLES:
        out.append((path.stem, path, None))
        out += [(f"{path.stem}:{v}", path, v) for v in load_file(path).variants]
    return out


def _hashes(path: Path, variant: str | None) -> dict[str, str]:
    from kgen.gen.pipeline import run
    from kgen.gen.spec import load

    # built from the path relative to the repository, as the README's commands give it: a spec's
    # location in a warning (plan.json) then reads the same in every checkout
    with contextlib.chdir(ROOT):
        files = run(load(path.relative_to(ROOT), variant)).rendered.files
    return {f.path: hashlib.sha256(f.text.encode()).hexdigest() for f in files if f.path not in UNPINNED}


@pytest.mark.parametrize("name,path,variant", _builds(), ids=[b[0] for b in _builds()])
def test_example_builds_to_its_pinned_bytes(name, path, variant):
    pins = json.loads(PINS.read_text())
    assert name in pins, f"{name} has no pins: PYTHONPATH=. python3 tests/gen/test_pins.py --repin"
    got, want = _hashes(path, variant), pins[name]
    assert sorted(got) == sorted(want), "the set of files changed"
    changed = [p for p in got if got[p] != want[p]]
    assert not changed, f"{name}: these files are no longer byte-identical: {changed}"


def test_every_pin_is_an_example():
    assert sorted(json.loads(PINS.read_text())) == sorted(b[0] for b in _builds())


if __name__ == "__main__":
    if sys.argv[1:] != ["--repin"]:
        sys.exit("usage: PYTHONPATH=. python3 tests/gen/test_pins.py --repin   (after a deliberate change of output)")
    sys.path.insert(0, str(ROOT))
    import kgen
    if Path(kgen.__file__).resolve().parent != ROOT / "kgen":
        sys.exit(f"this imports kgen from {Path(kgen.__file__).parent}, not {ROOT / 'kgen'}: "
                 f"run it as PYTHONPATH={ROOT} python3 tests/gen/test_pins.py --repin")
    PINS.parent.mkdir(exist_ok=True)
    PINS.write_text(json.dumps({name: _hashes(p, v) for name, p, v in _builds()}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINS.relative_to(ROOT)}")
