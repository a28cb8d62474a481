"""A batched in1 (`broadcast_in1 = false`): one K x N matrix per batch, on TT-Metal's reuse factory (the multicast
factories run it with fuse_batch = false: tests/gen/test_unfused_batch.py).

The expected values are TT-Metal's, written here from its sources (tenstorrent/tt-metal):

- matmul_multicore_reuse_program_factory.cpp (@1e768b71): `num_blocks_y = Mt / per_core_M`,
  `num_blocks_x = Nt / per_core_N`, one output block per core; CBs `in0_CB_tiles = per_core_M *
  in0_block_w * 2`, `in1_CB_tiles = per_core_N * in0_block_w * 2` (double buffer), `out_CB_tiles =
  per_core_M * per_core_N`; the reader starts in0 at `Kt * per_core_M * output_idx_y` and in1 at
  `per_core_N * output_idx_x` and steps them per batch by `MtKt = Mt * Kt` and, unless `bcast_B`, by
  `KtNt = Kt * Nt` (reader_bmm_tile_layout.cpp: `if (bcast_B == 0) in1_tensor_start_tile_id += KtNt`);
  the writer starts at `output_idx_x * per_core_N + output_idx_y * per_core_M * Nt` and steps by `MtNt`;
  `TT_FATAL(Mt % per_core_M == 0)`, `TT_FATAL(Nt % per_core_N == 0)`.
- matmul_device_operation.cpp (@001cea9a): with `fuse_batch` (2D and 1D multicast configs)
  `get_batch_size(b_shape_padded) == 1`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, example

from kgen.core.errors import KgenError
from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.plan import CB_IN0, CB_IN1, CB_OUT, plan
from kgen.gen.spec import load, parse_text, resolve

B, M, N, K = 8, 256, 256, 64               # the acceptance shape: attention's Q x K^T, 8 heads
MT, NT, KT = M // 32, N // 32, K // 32


def spec(dataflow="reuse", batch=B, broadcast=False, shape=f"{M} x {N} x {K}", per_core="2 x 2", grid="4 x 4",
         extra=""):
    return resolve(parse_text(f"""
matmul t {{
    arch = wormhole_b0  shape = {shape}  batch = {batch}  broadcast_in1 = {str(broadcast).lower()}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}  dataflow = {dataflow}
    block {{ per_core = {per_core} }}
    {extra}
}}""", "t.kspec"))


def test_broadcast_in1_defaults_to_true_and_changes_nothing_then():
    s = resolve(parse_text("matmul t { arch = wormhole_b0  shape = 64 x 64 x 64  batch = 2  dataflow = mcast_2d "
                           "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 } }"))
    assert s.broadcast_in1 is True
    p = plan(s)
    assert p.batch_ct == 1 and p.mt == 2 * 2 and not p.batched_in1      # the batch fused into M


@pytest.mark.parametrize("dataflow,per_core", [("mcast_2d", "16 x 2"), ("mcast_1d_in0", "64 x 2"),
                                               ("mcast_1d_in1", "16 x 8")])
def test_multicast_factories_refuse_a_batched_in1_with_a_fused_batch_with_tts_rule(dataflow, per_core):
    with pytest.raises(KgenError) as err:
        plan(spec(dataflow, per_core=per_core, extra="fuse_batch = true"))
    text = str(err.value)
    assert "matmul_device_operation.cpp @001cea9a" in text and "get_batch_size(b_shape_padded) == 1" in text
    hint = str(err.value.hint)
    assert "broadcast_in1 = true" in hint and "dataflow = " not in hint    # (fuse_batch = false: a padded single row here)
    plan(spec(dataflow, per_core=per_core, broadcast=True))     # one in1 for every batch is what they run fused
    if "fuse_batch = false" in hint:                            # every value offered passes every rule
        plan(spec(dataflow, per_core=per_core, extra="fuse_batch = false"))
    with pytest.raises(KgenError) as err:                       # the unfused form where it plans: offered
        plan(spec("mcast_2d", per_core="2 x 2", extra="fuse_batch = true"))
    assert "fuse_batch = false" in str(err.value.hint)
    plan(spec("mcast_2d", per_core="2 x 2", extra="fuse_batch = false"))


@pytest.mark.parametrize("dataflow,per_core", [("mcast_2d", "2 x 2"), ("mcast_1d_in0", "8 x 2"),
                                               ("mcast_1d_in1", "2 x 8")])
def test_multicast_factories_loop_a_batched_in1_unfused_by_default(dataflow, per_core):
    # fuse_batch left out: a batched in1 takes the only form TT runs it in, fuse_batch = false
    p = plan(spec(dataflow, per_core=per_core))
    assert (p.mt, p.batch_ct) == (MT, B) and p.batched_in1


def test_a_batch_of_one_is_one_in1_on_any_factory():
    # TT's rule asks get_batch_size(b) == 1, which a single in1 meets whatever broadcast_in1 says
    p = plan(spec("mcast_2d", batch=1))
    assert p.batch_ct == 1 and not p.batched_in1


def test_a_padded_block_is_refused_with_the_reuse_factorys_rule():
    # M = 200 pads to Mt = 7 tiles per batch; per_core_M = 2 leaves a partial last block
    with pytest.raises(KgenError, match=r"Mt % per_core_M == 0 \(matmul_multicore_reuse_program_factory.cpp\)"):
        plan(spec(shape="200 x 256 x 64"))
    with pytest.raises(KgenError, match=r"Nt % per_core_N == 0"):
        plan(spec(shape="256 x 200 x 64"))
    # padding to whole tiles (ttnn's tilize) with whole blocks is the factory's: 250 x 240 x 50 -> 8 x 8 x 2
    p = plan(spec(shape="250 x 240 x 50"))
    assert (p.mt, p.nt, p.kt) == (8, 8, 2)


def test_the_cli_says_exit_2_in_one_paragraph(tmp_path):
    bad = tmp_path / "bad.kspec"
    bad.write_text(f"matmul bad {{ arch = wormhole_b0  shape = {M} x {N} x {K}  batch = {B}  broadcast_in1 = false "
                   "fuse_batch = true dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }  dataflow = mcast_2d }\n")
    r = subprocess.run([sys.executable, "-m", "kgen", "check", str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "get_batch_size(b_shape_padded) == 1" in r.stderr


def test_work_split_and_cbs_are_the_reuse_factorys():
    p = plan(spec())
    pcm, pcn, w = 2, 2, p.in0_block_w
    assert (p.mt, p.nt, p.kt, p.batch_ct) == (MT, NT, KT, B) and p.batched_in1     # Mt per batch, B batches
    assert p.grid == (NT // pcn, MT // pcm) and p.num_cores == 16                   # num_blocks_x, num_blocks_y
    assert (p.out_block_h, p.out_block_w) == (pcm, pcn)                             # one output block per core
    assert p.cb(CB_IN0).pages == pcm * w * 2 and p.cb(CB_IN1).pages == pcn * w * 2
    assert p.cb(CB_OUT).pages == pcm * pcn


def _first_tile(kernel, tensor: str, core: tuple[int, int], b: int) -> int:
    for o, loops in walk(kernel.body):
        if o.kind in ("read_tiles", "write_tiles") and o["tensor"] == tensor:
            env = {lp.var: lp.start for lp in loops} | {"b": b, "core_x": core[0], "core_y": core[1]}
            return o["start"].eval(env)
    raise AssertionError(f"{kernel.name} reads no {tensor}")


@pytest.mark.parametrize("core", [(0, 0), (3, 1), (2, 3)])
@pytest.mark.parametrize("b", [0, 1, 7])
def test_each_batch_reads_its_own_in1_at_the_factorys_offsets(core, b):
    v = run(spec(), "verified").verified
    reader, writer = v.kernel("reader"), v.kernel("writer")
    ox, oy = core                                                   # output_idx_x, output_idx_y
    pcm, pcn = 2, 2
    assert _first_tile(reader, "in0", core, b) == KT * pcm * oy + b * MT * KT            # + b * MtKt
    assert _first_tile(reader, "in1", core, b) == pcn * ox + b * KT * NT                 # + b * KtNt (bcast_B = 0)
    assert _first_tile(writer, "out", core, b) == ox * pcn + oy * pcm * NT + b * MT * NT  # + b * MtNt


def test_broadcast_in1_reads_the_one_in1_for_every_batch():
    v = run(spec(broadcast=True, per_core="16 x 2"), "verified").verified
    reader = v.kernel("reader")
    assert _first_tile(reader, "in1", (1, 0), 0) == _first_tile(reader, "in1", (1, 0), 5) == 2


def test_the_manifest_gives_in1_its_batch():
    s = load(example("attention_qk_batched"))
    files = {f.path: f.text for f in run(s).rendered.files}      # the manifest ttnn's loader reads
    tensors = {t["name"]: t for t in json.loads(files["manifest.json"])["io_tensors"]}
    assert tensors["in1"]["shape"] == [B, K, N] and tensors["in0"]["shape"] == [B, M, K]
