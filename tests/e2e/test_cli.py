"""End to end through the installed `kgen` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, ROOT, words


def run(*args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kgen", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=60)


def test_check_table_has_every_section():
    r = run("check", "examples/peak_bf16.kspec")
    assert r.returncode == 0, r.stderr
    for needle in ("arch          blackhole", "Mt x Nt x Kt = 128 x 128 x 128", "grid", "per_core_M x per_core_N = 16 x 16",
                   "out_block_h x out_block_w = 16 x 16", "in0_block_w   4", "out_subblock_h x out_subblock_w = 4 x 2",
                   "num_blocks = Kt / in0_block_w = 32", "policy        packer_l1_acc", "partials      Float16_b",
                   "c_4  cb_out", "shares L1 with c_5", "1461120 B usable", "margin 379776 B",
                   "8 tiles per subblock of 8 (SyncHalf, Float16_b accumulation)", "warnings"):
        assert needle in r.stdout, needle


def test_check_json_matches_the_table():
    r = run("check", "examples/peak_bf16.kspec", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["policy"] == "packer_l1_acc" and data["num_blocks"] == 32
    assert data["l1"] == {"cb_bytes": 1081344, "usable_bytes": 1461120, "margin_bytes": 1461120 - 1081344}
    assert [c["index"] for c in data["cbs"]] == [0, 1, 3, 4, 5]
    assert data["dst"]["capacity_tiles"] == 8
    assert set(data["variants"]) == {"spill", "l1acc"}


def test_check_says_where_each_compute_value_came_from(tmp_path):
    """No compute line: every value is ttnn.matmul's default at 0.81.1 (bfloat8_b x bfloat8_b: LoFi,
    both inputs block floats; bfloat16 output: packer L1 accumulation on, fp32 accumulation off;
    math_approx off). A preset plus an inline key: each value names its own source."""
    plain = tmp_path / "plain.kspec"
    plain.write_text("matmul p { arch = wormhole_b0 shape = 256 x 256 x 256 "
                     "dtype { in0 = bfloat8_b in1 = bfloat8_b out = bfloat16 } }")
    r = run("check", plain)
    assert r.returncode == 0, r.stderr
    assert "math_fidelity=LoFi fp32_dest_acc=false packer_l1_acc=true math_approx=false" in words(r.stdout)
    assert "math_fidelity: ttnn.matmul's default at 0.81.1 (both inputs block floats)" in words(r.stdout)
    data = json.loads(run("check", plain, "--json").stdout)
    assert all(v.startswith("ttnn.matmul's default at 0.81.1") for v in data["compute_config"]["sources"].values())
    r = run("check", "examples/peak_bf16.kspec", "--json")
    src = json.loads(r.stdout)["compute_config"]["sources"]
    assert src["math_fidelity"] == "spec (inline)"
    assert src["packer_l1_acc"] == "preset hifi2_l1acc (defined in the spec file)"


def test_check_says_what_was_padded():
    # TT-Metal's 2D factory: 128 tiles over per_core 13 x 10 -> ceil(128 / 13) = 10 rows and ceil(128 / 10)
    # = 13 columns; the last row holds 128 - 9 * 13 = 11 rows of tiles, the last column 128 - 12 * 10 = 8;
    # last_out_block_w = 8 % 5 = 3 (out_block 13 x 5)
    r = run("check", "examples/bh_4096_full_grid.kspec", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["grid"] == {"x": 13, "y": 10, "cores": 130}
    assert data["padding"]["last_per_core"] == {"M": 11, "N": 8}
    assert data["padding"]["last_out_block"] == {"h": 11, "w": 3}
    assert data["padding"]["tiles"] == {} and data["padding"]["in0_last_ktile_w"] == 0
    r = run("check", "examples/non_tile_1000.kspec")
    assert r.returncode == 0, r.stderr
    for dim in "MNK":
        assert f"padding       {dim} = 1000 padded to 1024" in r.stdout, dim
    assert "padding" not in json.loads(run("check", "examples/peak_small.kspec", "--json").stdout)


def test_check_reports_the_policy_reason_for_two_blocks():
    r = run("check", "examples/l1acc_two_blocks.kspec")
    assert "packer_l1_acc requested and num_blocks = 2 > 1 -> packer L1 accumulation" in words(r.stdout)
    assert "never accumulates" in words(r.stdout)


def test_ir_prints_every_kernel():
    r = run("ir", "examples/peak_bf16.kspec", "--variant", "spill")
    assert r.returncode == 0, r.stderr
    for kernel in ("compute", "in0_sender", "in0_receiver", "in1_sender_writer", "in1_receiver_writer"):
        assert f"kernel {kernel} " in r.stdout
    assert "copy_block" in r.stdout and "pack_l1_acc" not in r.stdout


@pytest.mark.parametrize("stage", ["spec", "plan"])
def test_ir_earlier_stages(stage):
    r = run("ir", "examples/peak_small.kspec", "--stage", stage)
    assert r.returncode == 0, r.stderr
    if stage == "spec":
        assert json.loads(r.stdout)["name"] == "peak_small"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_checks(path):
    r = run("check", path, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["name"]


def test_bad_flag_and_bad_variant_exit_2():
    assert run("check", "examples/peak_bf16.kspec", "--no-such-flag").returncode == 2
    r = run("check", "examples/peak_bf16.kspec", "--variant", "spil")
    assert r.returncode == 2 and "did you mean `spill`" in r.stderr and "Traceback" not in r.stderr


def test_examples_cover_the_acceptance_matrix():
    """Issue 2 acceptance: both archs, out bf16/bfp8_b/fp32, fp32 dest on/off, L1 acc requested with
    num_blocks 1, 2 and >= 3, bias and ReLU, both dataflows, a grid smaller than the arch's."""
    from kgen.gen.plan import plan
    from kgen.gen.spec import load

    plans = [plan(load(p)) for p in EXAMPLES]
    assert len(plans) >= 8
    assert {p.arch.name for p in plans} == {"wormhole_b0", "blackhole"}
    assert {"bfloat16", "bfloat8_b", "float32"} <= {p.spec.dtype_out for p in plans}
    assert {True, False} == {p.compute.fp32_dest_acc for p in plans}
    requested = {min(p.num_blocks, 3) for p in plans if p.compute.packer_l1_acc}
    assert requested == {1, 2, 3}
    assert any(p.fuse_bias for p in plans) and any(p.pack_relu for p in plans)
    # every dataflow, TT-Metal's 1D multicast factory's two forms and its DRAM-sharded one among them
    assert {p.spec.dataflow for p in plans} == {"mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1", "dram_sharded"}
    assert any(p.grid_requested[0] * p.grid_requested[1] < p.arch.worker_grid[0] * p.arch.worker_grid[1] for p in plans)


@pytest.mark.slow
def test_emulate_shows_progress_on_a_terminal_and_nothing_otherwise(host_cxx, tmp_path):
    """Long runs show their phase and elapsed time on stderr when it is a terminal (issue #12);
    with stderr a pipe or a file, nothing is written there, and stdout keeps the --json."""
    import json
    import os
    import pty
    import subprocess
    import sys

    spec = str(ROOT / "examples" / "peak_small.kspec")
    argv = [sys.executable, "-m", "kgen", "emulate", spec, "--json"]
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    assert json.loads(piped.stdout)["exact_match"] is True
    import threading

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:             # read the terminal while the run writes to it (never block it)
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=600)
    reader.join(timeout=10)
    os.close(master)
    seen = b"".join(chunks)
    assert proc.returncode == 0 and json.loads(out)["exact_match"] is True
    assert b"kgen: running 4 core(s)" in seen and b"golden model" in seen, seen[-500:]


def test_check_shows_the_shards_and_the_factorys_cbs():
    # TT's peak benchmark row (p150 bf16 2560 x 4992 x 4992 on 13 x 10, per core 8 x 12, in0_block_w 6):
    # in0 shard = per_core_M x Kt / 13 = 8 x 12 tiles = 256 x 384 elements; output shard 8 x 12 tiles;
    # c_2 = 8 * 12 in0 tiles, no c_6 (ttnn.matmul 0.81.1's 2D builder allocates none, provenance R3),
    # c_4 = per_core_M * per_core_N = 96 output tiles
    r = run("check", "examples/peak_bf16_sharded.kspec", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["memory"]["shard_specs"]["in0"] == {"memory_layout": "BLOCK_SHARDED", "grid": [0, 0, 12, 9],
                                                    "orientation": "ROW_MAJOR", "shape": [256, 384]}
    assert data["memory"]["shard_specs"]["out"]["shape"] == [256, 384]
    cbs = {c["index"]: c for c in data["cbs"]}
    assert (cbs[2]["pages"], cbs[2]["page_bytes"]) == (96, 2048) and 6 not in cbs
    assert cbs[4]["pages"] == 8 * 12
    text = run("check", "examples/peak_bf16_sharded.kspec").stdout
    assert "in0 shards    BLOCK_SHARDED ROW_MAJOR, shard 256 x 384 elements on cores (0,0)-(12,9)" in text


@pytest.mark.parametrize("memory, extra, message", [
    ("in0 = l1_block_sharded  out = l1_block_sharded  orientation = col_major", "",
     "COL_MAJOR orientation with transpose_mcast"),
    ("in0 = l1_height_sharded", "transpose_mcast = true  grid = 4 x 2", "HEIGHT_SHARDED in0 needs !transpose_mcast"),
    ("in0 = l1_block_sharded", "dataflow = reuse", "with dataflow = reuse, which takes in0 = dram|l1"),
    ("in0 = somewhere", "", "memory.in0 = somewhere: expected one of dram, l1, l1_block_sharded, l1_height_sharded"),
])
def test_bad_memory_placements_exit_2(tmp_path, memory, extra, message):
    spec = tmp_path / "bad.kspec"
    spec.write_text(f"""matmul bad {{
    arch = wormhole_b0  shape = 256 x 256 x 512
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    memory {{ {memory} }}
    {extra if "grid" in extra else extra + "  grid = 2 x 4"}
    {"" if "dataflow" in extra else "dataflow = mcast_2d"}
    block {{ per_core = 2 x 4  in0_block_w = 2 }}
}}
""")
    r = run("check", spec)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert message in r.stderr, r.stderr


def test_sharded_build_describes_the_shards_for_ttnn(tmp_path):
    r = run("build", "examples/sharded_small.kspec", "--no-compile", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    manifest = json.loads(next(tmp_path.glob("*/manifest.json")).read_text())
    tensors = {t["name"]: t for t in manifest["io_tensors"]}
    assert tensors["in0"]["memory"]["shard_spec"] == {"grid": [0, 0, 3, 1], "shape": [128, 128],
                                                      "orientation": "ROW_MAJOR"}
    assert {k["name"] for k in manifest["kernels"]} >= {f"in0_sharded_{i}" for i in range(4)}
    assert "in0_sender" not in {k["name"] for k in manifest["kernels"]}


# Tests run as root here, and a folder with mode 555 does not stop root. /proc is a folder in which
# nobody, root included, can create a file, so it stands for a read-only folder.
needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc (a folder root cannot write)")


@needs_proc
def test_tune_db_in_a_folder_that_cannot_be_written_says_so():
    r = run("tune", "examples/peak_small.kspec", "--db", "/proc/kgen-tune.sqlite")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "cannot write" in r.stderr and "/proc" in r.stderr, r.stderr
    assert "not a kgen tune database" not in r.stderr, r.stderr


def test_tune_db_that_is_not_a_database_still_says_so(tmp_path):
    db = tmp_path / "notes.sqlite"
    db.write_text("these are notes, not SQLite\n" * 100)
    r = run("tune", "examples/peak_small.kspec", "--db", db)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "not a kgen tune database" in r.stderr, r.stderr


@needs_proc
def test_emulate_with_a_cache_it_cannot_create_hints_the_cache_variable_not_an_absent_flag():
    env = dict(os.environ, PYTHONPATH=str(ROOT), KGEN_CACHE_DIR="/proc/kgen-cache")
    r = subprocess.run([sys.executable, "-m", "kgen", "emulate", "examples/peak_small.kspec", "--numerics", "fast"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "KGEN_CACHE_DIR" in r.stderr and "/proc/kgen-cache" in r.stderr, r.stderr
    # `kgen emulate` has no -o: a hint to pass one cannot be followed
    assert "-o " not in r.stderr, r.stderr


def test_headers_folder_without_the_headers_names_the_flag_once(tmp_path):
    empty = tmp_path / "headers"
    empty.mkdir()
    r = run("build", "examples/peak_small.kspec", "--headers", empty, "--check", "-o", tmp_path / "out")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count(f"--headers {empty}") == 1, r.stderr
    assert "lacks" in r.stderr and "kgen headers fetch" in r.stderr, r.stderr


def test_port_check_help_names_the_programs_it_runs_whole():
    r = run("port-check", "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    for plan in ("mcast_2d", "mcast_1d_in0", "mcast_1d_in1", "reuse", "dram_sharded"):
        assert plan in text, text
    assert "2D, 1D, reuse or DRAM-sharded matmul factory" in text, text
    listing = " ".join(run("--help").stdout.split())
    assert "whole multicast, reuse or DRAM-sharded program" in listing, listing


def test_emulate_summarises_the_cores_and_verbose_lists_every_one(host_cxx):
    """The default report is a summary that reads at 100 columns; --verbose has a row per core and
    processor, the same rows --json has. The summary's slowest core and busiest processor are checked
    against the JSON's per-processor figures (a core is done when its last processor is)."""
    import re

    args = ("emulate", "examples/peak_small.kspec", "--numerics", "fast")
    summary = run(*args)
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert len(lines) < 40, summary.stdout
    assert max(map(len, lines)) <= 100, summary.stdout
    row = re.compile(r"\s+\((\d+),(\d+)\)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$")
    assert not any(row.match(ln) for ln in lines), summary.stdout
    assert "--verbose" in summary.stdout

    procs = json.loads(run(*args, "--json").stdout)["processors"]
    core_end: dict[tuple[int, int], int] = {}
    for p in procs:
        core_end[tuple(p["core"])] = max(core_end.get(tuple(p["core"]), 0), p["cycles"])
    slowest = max(core_end, key=lambda c: (core_end[c], c))
    busiest = max(procs, key=lambda p: p["busy_cycles"])
    text = summary.stdout
    assert f"slowest    core ({slowest[0]},{slowest[1]}) at {core_end[slowest]} cycles" in text, text
    assert (f"busiest    ({busiest['core'][0]},{busiest['core'][1]}) {busiest['processor']} {busiest['kernel']}: "
            f"{busiest['busy_cycles']} busy cycles") in text, text
    assert f"{sum(p['stalls'] for p in procs)} stalls, {sum(p['stall_cycles'] for p in procs)} stall cycles" in text

    verbose = run(*args, "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    rows = {(int(m[1]), int(m[2]), m[3], m[4], int(m[6]), int(m[7]), int(m[8]))
            for m in map(row.match, verbose.stdout.splitlines()) if m}
    assert rows == {(p["core"][0], p["core"][1], p["processor"], p["kernel"], p["stalls"], p["stall_cycles"],
                     p["cycles"]) for p in procs}
    assert len(rows) == len(procs) == 4 * 5                      # 2 x 2 cores, 5 processors each
