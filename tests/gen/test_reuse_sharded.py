"""A sharded in0 with a batched in1: TT's MatmulMultiCoreReuseProgramConfig from the shard, not yet built.

What TT-Metal does (tenstorrent/tt-metal, ttnn 0.81.1):

- get_matmul_program_config (matmul_program_config.cpp) gives a sharded in0 with a batched in1 (one in1
  per batch) MatmulMultiCoreReuseProgramConfig from in0's shard; ttnn.matmul 0.81.1 runs that config on
  its optimized reuse factory (matmul_device_operation.cpp @001cea9a, select_program_factory).
- That factory's kernels, the wheel's reader_bmm_tile_layout_in0.cpp and reader_writer_bmm_tile_layout_in1.cpp
  (ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow/), read Metal 2.0 named args
  (experimental/kernel_args.h), run a sharded in0 under IN0_SHARDED (the reader pushes the whole shard)
  and a sharded output under OUT_SHARDED (the writer waits for the whole shard), and give every core
  `batch` consecutive output blocks from `start_m_block`, walking the `m_blocks_per_batch` M blocks of a
  batch before the next batch's in1 (`KtNt`).
- The reuse kernels kgen ports and port-checks (reader_bmm_tile_layout.cpp, writer_bmm_tile_layout.cpp;
  kgen/gen/dataflow/tt_reuse.py) have no sharded path and loop every core over all B batches of one block.

So kgen's `reuse` takes interleaved tensors only, and `dataflow = auto` refuses the case naming TT's
rule rather than planning another factory's program. The corpus cases are all of this form (a height-
sharded in0 and output, in1 interleaved in L1); the spec below is t_s_matmul_8418341090's.
"""

from __future__ import annotations

import pytest

from kgen.core.errors import KgenError
from kgen.gen.dataflow.tt_reuse import REUSE_KERNELS
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve

DATAFLOW_KERNELS = "ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow"


def spec(dataflow: str = "auto", extra: str = "", arch: str = "wormhole_b0"):
    return resolve(parse_text(f"""
matmul t {{
    arch = {arch}  shape = 256 x 256 x 32  dataflow = {dataflow}
    batch = 1 x 8  broadcast_in1 = false
    dtype {{ in0 = bfloat8_b  in1 = bfloat8_b  out = bfloat8_b }}
    memory {{ in0 = l1_height_sharded  in1 = l1  out = l1_height_sharded  in0_shard = 256 x 32 on 2 x 4 }}
    {extra}
}}""", "t.kspec"))


def test_tts_reuse_config_runs_sharded_tensors_only_in_the_optimized_factorys_kernels(host_toolchain):
    folder = host_toolchain.headers.root / DATAFLOW_KERNELS
    in0 = (folder / "reader_bmm_tile_layout_in0.cpp").read_text()
    in1_out = (folder / "reader_writer_bmm_tile_layout_in1.cpp").read_text()
    assert "#ifdef IN0_SHARDED" in in0 and "#ifdef OUT_SHARDED" in in1_out
    for text in (in0, in1_out):
        assert "experimental/kernel_args.h" in text
        assert "args::start_m_block" in text and "args::m_blocks_per_batch" in text
    # the kernels kgen's reuse factory ports: no sharded path, no per-core block walk
    assert set(REUSE_KERNELS.values()) == {"reader_bmm_tile_layout.cpp", "writer_bmm_tile_layout.cpp"}
    for name in REUSE_KERNELS.values():
        text = (folder / name).read_text()
        assert "SHARDED" not in text and "start_m_block" not in text


@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
def test_auto_refuses_naming_tts_reuse_config_from_the_shard(arch):
    with pytest.raises(KgenError) as err:
        plan(spec(arch=arch))
    text = str(err.value)
    assert "get_matmul_program_config" in text and "MatmulMultiCoreReuseProgramConfig from in0's shard" in text


def test_the_reuse_dataflow_takes_no_sharded_in0_with_a_batched_in1():
    with pytest.raises(KgenError) as err:
        plan(spec("reuse", "grid = 2 x 4  block { per_core = 8 x 8 }"))
    assert "memory.in0 = l1_height_sharded" in str(err.value)
