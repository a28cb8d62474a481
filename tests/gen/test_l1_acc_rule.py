"""TT-Metal 0.81.1's packer L1 accumulation rule, in every factory kgen ports.

The rule, read in the machine code of the ttnn 0.81.1 wheel's `_ttnncpp.so` (docs/reference/provenance.md,
R7): `packer_l1_acc_en = packer_l1_acc && K / in0_block_w >= 2`, bias or not, guards both the
`PACKER_L1_ACC` compute define and the partials (interm0) format, `fp32_dest_acc_en ? Float32 :
(packer_l1_acc_en ? Float16_b : output format)`:

- 2D, `reuse_mcast_optimized_helpers::create_program_mcast_in0_in1_spec` (0x12348f0): at 0x1234a01
  `divl` K by in0_block_w, `cmp $0x2` / `setae`, `and` with the packer_l1_acc argument (r8) into
  0x40(%rsp); the interm0 byte is `packer_l1_acc_en ? 5 (Float16_b) : out` unless fp32 (0 = Float32); at
  0x1236b19 `cmpb $0x0,0x40(%rsp)` alone decides whether "PACKER_L1_ACC" (built as immediates) goes in.
- reuse, `MatmulMultiCoreReuseOptimizedProgramFactory::create_program_artifacts` (0x1187500): at 0x118794c
  Kt / in0_block_w, `cmp $0x2` / `setae`, `and` with packer_l1_acc into 0x4a(%rsp), the only test before
  the define at 0x118a1d7; the same interm0 choice at 0x1187968.
- the 1D builders (mcast_in0 and mcast_in1, spec and legacy) and the DRAM-sharded builder compute the same,
  as tt-metal's matmul_multicore_reuse_mcast_{1d,dram_sharded}_program_factory.cpp read it.

Only ccl_fusion_mcast_2d.cpp, which ttnn.matmul does not reach, keeps the older `(bias && num_blocks > 1)
|| num_blocks > 2` of tt-metal@0000d49e. With two K-blocks and no bias TT's compute kernel
(bmm_large_block_zm_fused_bias_activation.cpp) then defines PACKER_L1_ACC but never enables it: block 0
packs the partials with `pack_reconfig_l1_acc(0)`, arms the reload (`block == num_blocks - 2`), and the
last block reloads them and packs to out with `pack_reconfig_l1_acc(0)`. Every expected value below is
that rule, not kgen's output.
"""

from __future__ import annotations

import pytest

from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.spec import parse_text, resolve

# dataflow -> (shape with K to fill in, grid, per_core); in0_block_w = 2 tiles, so K = 64 * blocks
FACTORIES = {
    "mcast_2d": ("64 x 64 x {k}", "1 x 1", "2 x 2"),
    "reuse": ("64 x 64 x {k}", "1 x 1", "2 x 2"),
    "mcast_1d_in0": ("64 x 256 x {k}", "2 x 2", "2 x 2"),
    "mcast_1d_in1": ("256 x 64 x {k}", "2 x 2", "2 x 2"),
    "dram_sharded": ("32 x 384 x {k}", None, None),     # the factory's own grid and blocking
}
DRAM_SHARDED_MEMORY = "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }"


def spec(dataflow: str, blocks: int, bias: bool, packer_l1_acc: bool = True, fp32: bool = False):
    """A bfloat8_b output, so that the partials format tells the two rules apart (Float16_b under L1
    accumulation, else the output's Bfp8_b)."""
    shape, grid, per_core = FACTORIES[dataflow]
    block = f"per_core = {per_core}  in0_block_w = 2" if per_core else "in0_block_w = 2"
    return resolve(parse_text(f"""matmul t {{
    arch = wormhole_b0
    shape = {shape.format(k=64 * blocks)}
    dtype {{ in0 = bfloat16  in1 = bfloat8_b  out = bfloat8_b }}
    {f"grid = {grid}" if grid else ""}
    dataflow = {dataflow}
    {DRAM_SHARDED_MEMORY if dataflow == "dram_sharded" else ""}
    block {{ {block} }}
    compute {{ math_fidelity = HiFi2  packer_l1_acc = {str(packer_l1_acc).lower()}  fp32_dest_acc = {str(fp32).lower()} }}
    {"fuse { bias = true }" if bias else ""}
}}""", "t.kspec"))


CASES = [(d, blocks, bias) for d in FACTORIES for blocks in (1, 2, 3) for bias in (False, True)
         if not (bias and d == "dram_sharded")]            # kgen's DRAM-sharded program has no bias


@pytest.mark.parametrize("dataflow,blocks,bias", CASES)
def test_packer_l1_acc_en_is_num_blocks_over_one_bias_or_not(dataflow, blocks, bias):
    verified = run(spec(dataflow, blocks, bias), "verified")
    p, compute = verified.plan, verified.verified.kernel("compute")
    assert p.num_blocks == blocks
    on = blocks > 1                                         # packer_l1_acc && K / in0_block_w >= 2
    assert p.l1_acc_enabled == on
    assert ("PACKER_L1_ACC" in dict(compute.defines)) == on
    assert p.partials_format == ("Float16_b" if on else "Bfp8_b")
    assert p.policy == ("packer_l1_acc" if on else "dst_only")
    # TT's kernel under PACKER_L1_ACC: the packer adds into L1 from block 1 when a block after it still
    # packs into the partials, that is with three or more K-blocks, or two with a bias (the last block
    # packs into the partials for the bias stage); with two and no bias it never does
    enables = [bool(n["enable"]) for n, _ in walk(compute.body) if n.kind == "pack_l1_acc"]
    assert bool(enables) == on
    assert any(enables) == (on and (blocks > 2 or bias))


@pytest.mark.parametrize("dataflow", sorted(FACTORIES))
def test_without_the_request_or_with_fp32_dest(dataflow):
    # packer_l1_acc = false: spill/reload in the output format, whatever the K-blocks
    p = run(spec(dataflow, 2, False, packer_l1_acc=False), "plan").plan
    assert not p.l1_acc_enabled and p.policy == "spill_reload" and p.partials_format == "Bfp8_b"
    # fp32 dest accumulation: Float32 partials either way
    p = run(spec(dataflow, 2, False, fp32=True), "plan").plan
    assert p.l1_acc_enabled and p.partials_format == "Float32"
