"""`kgen tune` through the command line (issue #16): verification of the top 3 on peak_small, the
written spec's round trip, two concurrent processes on one database, a local Ray, bad input."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import ROOT, need_tool

SMALL = "examples/peak_small.kspec"
PEAK = "examples/peak_bf16.kspec"


def kgen(*args, env=None, cwd=ROOT, timeout=900):
    return subprocess.run([sys.executable, "-m", "kgen", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_verify_top_3_on_peak_small_and_the_winner_builds(tmp_path, host_toolchain, host_cxx):
    db, best = tmp_path / "tune.sqlite", tmp_path / "best.kspec"
    proc = kgen("tune", SMALL, "--top", "3", "--verify", "--db", str(db), "-o", str(best), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["ranked"]) == 3
    for r in data["ranked"]:
        v = r["verify"]
        assert v["status"] == "passed", v
        assert v["steps"]["typecheck"] == "7/7 kernel builds"
        assert v["steps"]["emulate"]["numerics"] == "exact" and v["steps"]["emulate"]["exact_match"]
        assert v["steps"]["port_check"]["passed"]            # mcast_2d: TT-Metal's kernels agree
    winner = data["winner"]["candidate"]
    # the written spec round-trips: kgen check gives the winning plan
    check = kgen("check", str(best), "--json")
    assert check.returncode == 0, check.stderr
    plan = json.loads(check.stdout)
    assert [plan["grid_requested"]["x"], plan["grid_requested"]["y"]] == winner["grid"]
    assert [plan["per_core"]["M"], plan["per_core"]["N"]] == winner["per_core"]
    assert [plan["out_block"]["h"], plan["out_block"]["w"]] == winner["out_block"]
    assert [plan["out_subblock"]["h"], plan["out_subblock"]["w"]] == winner["out_subblock"]
    assert plan["in0_block_w"] == winner["in0_block_w"] and plan["dataflow"] == winner["dataflow"]
    assert plan["policy"] == data["winner"]["policy"]
    build = kgen("build", str(best), "--check", "-o", str(tmp_path / "build"))
    assert build.returncode == 0, build.stderr
    assert "type-checked" in build.stdout
    # a second run reuses the database: nothing predicted or verified again
    again = kgen("tune", SMALL, "--top", "3", "--verify", "--db", str(db), "--json")
    d2 = json.loads(again.stdout)
    assert d2["stats"]["predicted"] == 0 and d2["stats"]["reused"] > 0
    assert all(r["verify"].get("reused") for r in d2["ranked"])
    # each job said on stderr when it started and ended; the second run re-ran none of them
    for rank in (1, 2, 3):
        assert f"verify #{rank} (" in proc.stderr and f"verify #{rank}: passed in " in proc.stderr, proc.stderr
        assert f"verify #{rank}: passed, known, not re-run" in again.stderr and "started" not in again.stderr
    assert "emulate exact" in proc.stderr and "best verified so far: #1" in proc.stderr
    text = kgen("tune", SMALL, "--top", "3", "--verify", "--db", str(db), env={"COLUMNS": "100"}).stdout
    flat = " ".join(text.split())
    assert flat.count("known, not re-run") == 3 and "--no-db re-runs it" in flat
    assert "emulate exact" in flat and "port-check passed" in flat and "type-check 7/7 kernel builds" in flat
    report = kgen("tune", "--db", str(db), "--report")
    assert report.returncode == 0 and "best verified" in report.stdout


def test_written_spec_plans_as_the_winner(tmp_path):
    best = tmp_path / "best.kspec"
    proc = kgen("tune", PEAK, "--space", "all", "--no-db", "-o", str(best), "--json")
    assert proc.returncode == 0, proc.stderr
    w = json.loads(proc.stdout)["winner"]["candidate"]
    sys.path.insert(0, str(ROOT))
    from kgen.gen.plan import plan
    from kgen.gen.spec import load
    from kgen.perf.tune import candidate_of

    c = candidate_of(plan(load(best)))
    assert [list(c.grid), list(c.per_core), list(c.out_block), c.in0_block_w, list(c.out_subblock), c.dataflow,
            c.packer_l1_acc] == [w["grid"], w["per_core"], w["out_block"], w["in0_block_w"], w["out_subblock"],
                                 w["dataflow"], w["packer_l1_acc"]]


SHARDED_BFP4 = """matmul p150_bfp4 {
    arch  = blackhole
    shape = 640 x 832 x 832
    dtype { in0 = bfloat4_b  in1 = bfloat4_b  out = bfloat4_b }
    memory { in0 = l1_block_sharded  out = l1_block_sharded }
    compute { math_fidelity = LoFi }
}
"""


def test_a_sharded_spec_is_tuned_and_written_with_its_sharding(tmp_path):
    spec, best = tmp_path / "sharded.kspec", tmp_path / "best.kspec"
    spec.write_text(SHARDED_BFP4)
    proc = kgen("tune", str(spec), "--space", "all", "--no-db", "-o", str(best), "--json")
    assert proc.returncode == 0, proc.stderr
    text = best.read_text()
    assert "memory { in0 = l1_block_sharded  in1 = dram  out = l1_block_sharded }" in text
    check = kgen("check", str(best))
    assert check.returncode == 0, check.stderr
    w = json.loads(proc.stdout)["winner"]["candidate"]
    # TT's rule for a block-sharded in0: in0_block_w divides the shard's width (Kt over the cores along N)
    nt = kt = 26
    assert (kt // -(-nt // w["per_core"][1])) % w["in0_block_w"] == 0
    assert w["dataflow"] == "mcast_2d"


# 17 x 13 tiles on Blackhole's 13 x 10 grid: 17 rows of tiles have no divisor between 2 and 16, so
# whole blocks would put all of M on one row of cores; a padded per_core_M of 2 uses 9 rows, the last
# holding one real row of tiles (TT-Metal's padded last block, issue #17).
PADDED_WINS = """matmul bh_17x13 {
    arch  = blackhole
    shape = 544 x 416 x 256
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
}
"""


@pytest.mark.slow
def test_a_padded_winner_passes_verification(tmp_path, host_toolchain, host_cxx):
    spec, best = tmp_path / "bh_17x13.kspec", tmp_path / "best.kspec"
    spec.write_text(PADDED_WINS)
    proc = kgen("tune", str(spec), "--top", "2", "--verify", "--no-db", "-o", str(best), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["space"]["padded"]
    for r in data["ranked"]:
        c = r["candidate"]
        assert r["padded"] and 17 % c["per_core"][0], c
        assert c["grid"][1] == -(-17 // c["per_core"][0])  # TT's rows: ceil(Mt / per_core_M), the last padded
        v = r["verify"]
        assert v["status"] == "passed", v
        assert v["steps"]["emulate"]["exact_match"] and v["steps"]["port_check"]["passed"]
    # the divisors alone leave one row of cores for M: slower under the same model
    whole = kgen("tune", str(spec), "--no-padded", "--no-db", "--json")
    assert whole.returncode == 0, whole.stderr
    w = json.loads(whole.stdout)
    assert not w["space"]["padded"] and not w["ranked"][0]["padded"]
    assert w["winner"]["microseconds"] > data["winner"]["microseconds"]
    build = kgen("build", str(best), "--check", "-o", str(tmp_path / "build"))
    assert build.returncode == 0, build.stderr


@pytest.mark.slow
def test_two_concurrent_tunes_lose_nothing(tmp_path):
    """Two processes write one database at once (WAL, BEGIN IMMEDIATE, busy timeout): every row of
    each run is there, as when each runs alone."""
    shared = tmp_path / "shared.sqlite"
    runs = [(PEAK, "all"), (SMALL, "all")]
    procs = [subprocess.Popen([sys.executable, "-m", "kgen", "tune", spec, "--space", space, "--db", str(shared),
                               "-j", "1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for spec, space in runs]
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err
    alone = 0
    for i, (spec, space) in enumerate(runs):
        db = tmp_path / f"alone{i}.sqlite"
        assert kgen("tune", spec, "--space", space, "--db", str(db), "-j", "1").returncode == 0
        with sqlite3.connect(db) as conn:
            alone += conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
    with sqlite3.connect(shared) as conn:
        assert conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0] == alone
        assert conn.execute("SELECT COUNT(*) FROM targets").fetchone()[0] == 2
    # and the same target from two processes at once: one set of rows, nothing lost or doubled
    same = tmp_path / "same.sqlite"
    procs = [subprocess.Popen([sys.executable, "-m", "kgen", "tune", SMALL, "--space", "all", "--db", str(same),
                               "-j", "1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=900)
        assert p.returncode == 0, err
    with sqlite3.connect(same) as conn, sqlite3.connect(tmp_path / "alone1.sqlite") as ref:
        got = {r[0] for r in conn.execute("SELECT config FROM candidates")}
        want = {r[0] for r in ref.execute("SELECT config FROM candidates")}
        assert got == want


@pytest.mark.slow
def test_tune_on_a_local_ray(tmp_path, host_toolchain, host_cxx):
    try:
        import ray  # noqa: F401
    except ImportError:
        need_tool("ray", "pip install 'kgen[ray]' (.ci/setup installs it)")
    db = tmp_path / "ray.sqlite"
    proc = kgen("tune", SMALL, "--top", "1", "--verify", "--engine", "ray", "--ray-workers", "1", "--db", str(db),
                "--json", env={"RAY_ADDRESS": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["ranked"][0]["verify"]["status"] == "passed"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM candidates WHERE verify_status = 'passed'").fetchone()[0] == 1


def test_engine_ray_without_ray_exits_2(tmp_path):
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ray here')\n")
    env = {"PYTHONPATH": f"{fake.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = kgen("tune", SMALL, "--engine", "ray", "--verify", "--no-db", env=env)
    assert proc.returncode == 2
    assert "pip install 'kgen[ray]'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, words", [
    (["tune"], "needs a spec"),
    (["tune", SMALL, "--top", "0"], "expected 1 to 256"),
    (["tune", SMALL, "--db", "."], "is a folder"),
    (["tune", SMALL, "-o", "."], "is a folder"),
    (["tune", SMALL, "-o", "no/such/dir/best.kspec", "--no-db"], "does not exist"),
    (["tune", SMALL, "--space", "some"], "invalid choice"),
    (["tune", SMALL, "--budget", "0"], "expected 1 to"),
    (["tune", "--db", "."] + ["--report"], "is a folder"),
])
def test_bad_input_exits_2(args, words, tmp_path):
    proc = kgen(*args, cwd=ROOT)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert words in proc.stderr and "Traceback" not in proc.stderr


def test_not_a_database_exits_2(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not sqlite\n" * 100)
    proc = kgen("tune", SMALL, "--db", str(bad))
    assert proc.returncode == 2 and "not a kgen tune database" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    proc = kgen("tune", PEAK, "--space", "all", "--no-db")
    # no bar; a run over a few seconds (a loaded machine) says where it is in plain lines
    assert proc.returncode == 0 and "%|" not in proc.stderr and "\r" not in proc.stderr
    assert all(line.startswith("kgen tune: search: ") for line in proc.stderr.splitlines()), proc.stderr
    assert "against TT-Metal" in proc.stdout and "TT auto" in proc.stdout


def test_allow_precision_shows_the_predicted_error():
    proc = kgen("tune", SMALL, "--allow-precision", "--no-db", "--top", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert "math_fidelity" in data["space"]["searched"]
    assert all(r["error"] is not None and 0 <= r["error"] < 1 for r in data["ranked"])


def test_progress_bar_on_a_terminal():
    """On a terminal (a pty of 120 columns), tqdm's bar goes to stderr and stdout keeps the table."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "kgen", "tune", PEAK, "--space", "all", "--no-db", "-j", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=600)
    os.close(master)
    assert proc.returncode == 0
    assert b"kgen tune:" in seen and b"cand" in seen and b"%|" in seen
    assert b"best so far" in seen and b"us predicted" in seen          # the search shows its best as it goes
    assert b"against TT-Metal" in out and b"cand/s" not in out


# ttnn.matmul's compute config when it is given none (create_matmul_attributes, tt-metal 001cea9a =
# ttnn 0.81.1), for two bfloat16 inputs and a bfloat16 output, no core grid, no program config:
TT_DEFAULT_BF16 = {"fidelity": "HiFi2", "packer_l1_acc": True, "fp32_dest_acc": False}


def _tune_json(tmp_path, body: str) -> dict:
    spec = tmp_path / "t.kspec"
    spec.write_text("matmul t {\n arch = blackhole\n shape = 3000 x 7000 x 5000\n"
                    " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }\n" + body + "}\n")
    proc = kgen("tune", str(spec), "--no-db", "--top", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_tt_auto_row_runs_ttnns_default_compute_where_the_spec_leaves_it(tmp_path):
    data = _tune_json(tmp_path, "")
    kgen_row, auto = data["comparison"][0], data["comparison"][1]
    assert auto["who"] == "TT auto"
    assert {k: auto[k] for k in TT_DEFAULT_BF16} == TT_DEFAULT_BF16
    assert "default at 0.81.1" in auto["compute_from"]
    assert auto["dataflow"] and auto["grid"] and auto["policy"]
    # the same program config under the same compute config is the same program: same predicted time
    if auto["config"] == kgen_row["config"]:
        assert auto["microseconds"] == pytest.approx(kgen_row["microseconds"])
    assert auto["like_for_like"] == []
    text = kgen("tune", str(tmp_path / "t.kspec"), "--no-db", "--top", "1").stdout
    flat = " ".join(text.split())          # the report wraps at the terminal's width
    assert "tenstorrent/tt-metal@001cea9a" in flat and "compute: ttnn.matmul's default at 0.81.1" in flat


def test_tt_auto_row_runs_the_spec_compute_and_says_when_it_is_not_like_for_like(tmp_path):
    """compute { math_fidelity = HiFi2 }: ttnn takes the config whole, so packer_l1_acc is the
    ComputeKernelConfig default, false. kgen searches packer_l1_acc (it is not the spec's own value)."""
    data = _tune_json(tmp_path, " compute { math_fidelity = HiFi2 }\n")
    kgen_row, auto = data["comparison"][0], data["comparison"][1]
    assert (auto["fidelity"], auto["packer_l1_acc"], auto["fp32_dest_acc"]) == ("HiFi2", False, False)
    assert auto["compute_from"].startswith("the spec")
    if kgen_row["packer_l1_acc"]:
        assert any("packer_l1_acc" in why for why in auto["like_for_like"])


def _table_rows(lines: list[str], first: str) -> tuple[list[str], list[str]]:
    """The header lines and the rows of the table whose first row starts with `first`."""
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rule = start - 1
    assert set(lines[rule]) == {"\u2500"}, lines[rule]
    top = rule        # up to the table's title, which ends "... by kgen's model" or "... tensors"
    while not lines[top - 1].endswith(("model", "tensors")):
        top -= 1
    rows = []
    for line in lines[start:]:
        if not line or line.startswith("  "):
            break
        rows.append(line)
    return lines[top:rule], rows


def test_the_report_fits_100_columns_and_labels_what_is_predicted():
    proc = kgen("tune", PEAK, "--space", "all", "--no-db", env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    flat = " ".join(proc.stdout.split())
    data = json.loads(kgen("tune", PEAK, "--space", "all", "--no-db", "--json").stdout)
    best = data["ranked"][0]
    # the time column: its header, above the right-aligned times, says predicted
    header, rows = _table_rows(lines, "1 ")
    assert len(rows) == len(data["ranked"])
    time_text = f"{best['microseconds']:,.2f}"
    end = rows[0].index(time_text) + len(time_text)
    above = [line[:end].split()[-1] for line in header if len(line) >= end and line[end - 1] != " "]
    assert above[-2:] == ["predicted", "us"], header
    # the winner line and the kgen-against-TT ratio are predicted figures, and say so
    assert f"winner grid {best['candidate']['grid'][0]}x{best['candidate']['grid'][1]}" in flat
    assert f"{best['microseconds']:,.2f} us predicted" in flat
    assert "each predicted by the same model" in flat
    # one legend, explaining the abbreviations; utilization says what it is measured against
    assert flat.count("legend:") == 1
    # the winner is the last thing printed: the legend explains the table, above it (issue #42)
    assert flat.index("legend:") < flat.index("winner grid") and "  winner " in proc.stdout.split("legend:")[1]
    assert proc.stdout.rstrip().splitlines()[-1].strip().startswith("predicted")
    for words in ("w: in0_block_w", "sb: out_subblock", "same policy either way:", "grid: cores x by y"):
        assert words in flat, words
    assert "against the full card grid at each candidate's own fidelity's peak rate" in flat
    assert "not verified: --verify runs the checks" in flat and "verify (d)" not in flat and "passed:" not in flat


def test_the_tt_auto_row_shows_ttchoices_fidelity_dataflow_and_grid():
    """The TT auto row against ttchoice's own choice for the spec (TT-Metal's automatic program
    config under its compute config), and a note where its grid differs from kgen's pick."""
    sys.path.insert(0, str(ROOT))
    from kgen.gen.pipeline import run
    from kgen.gen.spec import load_file, resolve
    from kgen.perf.ttchoice import tt_auto

    choice = tt_auto(resolve(load_file(ROOT / PEAK), None))
    plan = run(choice.spec, "ir").plan
    grid = f"{plan.grid_requested[0]}x{plan.grid_requested[1]}"
    fidelity = plan.compute.math_fidelity + ("+fp32" if plan.compute.fp32_dest_acc else "")
    proc = kgen("tune", PEAK, "--space", "all", "--no-db", env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    _, rows = _table_rows(lines, "kgen tune ")
    auto = next(r for r in rows if r.startswith("TT auto ")).split()
    kgen_row = rows[0].split()
    assert [grid, fidelity, plan.spec.dataflow, plan.policy] == auto[-4:]
    kgen_grid = kgen_row[-4]
    flat = " ".join(proc.stdout.split())
    if kgen_grid != grid:
        gx, gy = map(int, kgen_grid.split("x"))
        assert (f"not the same grid: kgen's pick uses {kgen_grid} = {gx * gy} cores, TT auto {grid} = "
                f"{plan.grid_requested[0] * plan.grid_requested[1]}") in flat
