"""benchmarks/identity_dump.py (#38): every factory and the blackhole-py target are dumped without a crash,
and --compare names the fields that differ."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("identity_dump", ROOT / "benchmarks" / "identity_dump.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dump_covers_dram_sharded_and_blackhole_py(tmp_path, capsys):
    d = _script()
    # seed 1: case 11 is drawn DRAM-sharded, case 14 a batched in1 (reuse)
    out = tmp_path / "dump.json"
    assert d.main(["--count", "15", "--seeds", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    dump = json.loads(out.read_text())
    assert len(dump) == 15 * (len(d.DATAFLOW_SPELLINGS) + 1)
    assert "tt_args" in dump["fuzz_s1_00011"] and "tt_expected_dram_sharded" in dump["fuzz_s1_00011"]
    assert any("bhpy_view" in rec for rec in dump.values())
    assert "dram_sharded recorded" in err and "True" in err.split("batched in1:")[1].splitlines()[0]
    assert "in the port-check / blackhole-py steps: 0" in err

    assert d.main(["--compare", str(out), str(out)]) == 0
    changed = json.loads(out.read_text())
    changed["fuzz_s1_00011"]["tt_args"] = "0" * 16
    (tmp_path / "changed.json").write_text(json.dumps(changed))
    capsys.readouterr()
    assert d.main(["--compare", str(out), str(tmp_path / "changed.json")]) == 1
    assert "fuzz_s1_00011: tt_args" in capsys.readouterr().out
