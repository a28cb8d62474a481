"""Which CB kgen unpacks straight into DST (UnpackToDestFp32), against the record read in TT-Metal 0.81.1's
own machine code (tests/data/wheel_unpack_to_dest.toml, docs/reference/provenance.md N8), never against
kgen's own table: for every factory, with and without fp32 accumulation, a fused bias, packer L1
accumulation and more than one K-block, the JIT descriptors (chlkc_descriptors.h), the compute defines
and the manifest's compute config must say what the wheel's builder says.

The expected values are worked out here from the record's rule and the factories' partials-format rule
(provenance R6/R7), and the rendered files are parsed, not compared with kgen's plan."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass

import pytest

from conftest import ROOT
from kgen.gen.pipeline import run
from kgen.gen.spec import parse_text, resolve

RECORD = tomllib.loads((ROOT / "tests" / "data" / "wheel_unpack_to_dest.toml").read_text())
FLOAT32 = 0                                  # tt::DataFormat

# One small spec per kgen factory: K = 8 tiles, in0_block_w 8 (one K-block) or 2 (four).
SPECS = {
    "mcast_2d": ("128 x 128 x 256", "2 x 2", "per_core = 2 x 2  out_subblock = 1 x 2", ""),
    "reuse": ("128 x 128 x 256", "2 x 2", "per_core = 2 x 2  out_subblock = 1 x 2", ""),
    "mcast_1d_in0": ("64 x 256 x 256", "4 x 1", "per_core = 2 x 2", ""),
    "mcast_1d_in1": ("256 x 64 x 256", "4 x 1", "per_core = 2 x 2", ""),
    # one 4-tile-wide in1 shard per DRAM bank of the 12 (Wormhole)
    "dram_sharded": ("32 x 1536 x 256", None, "per_core = 1 x 4",
                     "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }"),
}
NO_BIAS = {"dram_sharded"}                   # kgen's DRAM-sharded program fuses no bias


def spec_text(dataflow: str, fp32: bool, l1acc: bool, bias: bool, blocks: int, out: str) -> str:
    shape, grid, block, memory = SPECS[dataflow]
    return f"""
matmul u2d {{
    arch     = wormhole_b0
    shape    = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = {out}  bias = bfloat16 }}
    {f"grid = {grid}" if grid else ""}
    dataflow = {dataflow}
    {memory}
    block {{ in0_block_w = {8 // blocks}  {block} }}
    compute {{ math_fidelity = HiFi3  fp32_dest_acc = {str(fp32).lower()}  packer_l1_acc = {str(l1acc).lower()} }}
    fuse {{ bias = {str(bias).lower()} }}
}}
"""


@dataclass(frozen=True)
class Expected:
    """What the wheel's builder does for one configuration, from the record alone."""

    marked: str | None            # the buffer it marks UnpackToDestFp32 (record names), None: none
    alias: bool                   # it makes the alias and the define


def expected(fp32: bool, l1acc: bool, bias: bool, blocks: int, out_format: str) -> Expected:
    # interm0_data_format, every builder (provenance R6, R7)
    interm0 = "Float32" if fp32 else ("Float16_b" if l1acc and blocks >= 2 else out_format)
    rule = RECORD["rule"]
    assert rule["when"] == ["fp32_dest_acc_en", "interm0 == Float32"]
    if not (fp32 and interm0 == "Float32"):
        return Expected(None, False)
    return Expected(rule["marked_with_bias"] if bias else rule["marked_without_bias"], bias)


def descriptor_arrays(header: str) -> dict[str, list[int]]:
    return {m.group(1): [int(v) for v in m.group(2).split(",")] for m in
            re.finditer(r"constexpr (?:std::int32_t|unsigned char|uint8_t|uint16_t) (\w+)\[\d+\] = \{\s*([\d,]+)\s*\};",
                        header)}


def factories():
    return [d for b in RECORD["builder"] for d in b["dataflows"]]


CASES = [(d, fp32, l1acc, bias, blocks, out)
         for d in factories()
         for fp32 in (False, True) for l1acc in (False, True) for bias in (False, True) for blocks in (1, 4)
         for out in ("bfloat16", "float32")
         if not (bias and d in NO_BIAS)]


def test_the_record_covers_every_factory():
    # every factory with partials to reload (the multi-core factory has none: bmm.cpp accumulates all of K
    # in DST, its builder unpacks in0 and in1 UnpackToSrc; tests/gen/test_multi_core.py checks it marks none)
    from kgen.gen.dataflow import REGISTRY
    assert sorted(factories()) == sorted(d.name for d in REGISTRY if d.partials_unpack_to_dest)
    assert RECORD["wheel"]["version"] == "0.81.1"


@pytest.mark.parametrize("dataflow,fp32,l1acc,bias,blocks,out", CASES,
                         ids=[f"{d}-{'fp32' if f else 'bf16dst'}-{'l1acc' if la else 'spill'}-"
                              f"{'bias' if b else 'nobias'}-{n}blk-{o}" for d, f, la, b, n, o in CASES])
def test_descriptors_mark_what_the_wheels_builder_marks(dataflow, fp32, l1acc, bias, blocks, out):
    spec = resolve(parse_text(spec_text(dataflow, fp32, l1acc, bias, blocks, out), "u2d.kspec"))
    files = {f.path: f.text for f in run(spec).rendered.files}
    want = expected(fp32, l1acc, bias, blocks, {"bfloat16": "Float16_b", "float32": "Float32"}[out])
    legacy = RECORD["legacy"]
    index = None if want.marked is None else legacy["cb"][want.marked]

    # the JIT descriptor: the marked CB unpacks Float32 -> Float32 (straight into DST); every other
    # Float32 CB to the register format
    arrays = descriptor_arrays(files["jit/compute/chlkc_descriptors.h"])
    src, dst = arrays["unpack_src_format"], arrays["unpack_dst_format"]
    to_dest = {i for i, (s, d) in enumerate(zip(src, dst)) if s == FLOAT32 and d == FLOAT32}
    assert RECORD["jit"]["marked_unpack_dst_format"] == "Float32"
    assert to_dest == (set() if index is None else {index})
    if index is not None:
        # the alias is a second index over the partials' pages, in their format
        assert src[index] == src[legacy["cb"]["intermed0"]] == FLOAT32

    # the compute kernel's define (the legacy form: the alias's index) and the manifest's compute config
    manifest = json.loads(files["manifest.json"])
    (compute,) = [k for k in manifest["kernels"] if k["processor"] == "TRISC"]
    define = compute["defines"].get(legacy["alias_define"])
    assert define == (str(legacy["cb"]["intermed0_reload_alias"]) if want.alias else None)
    assert compute["compute_config"].get("unpack_to_dest_mode", {}) == (
        {} if index is None else {str(index): "UnpackToDestFp32"})
    if want.alias:
        # the alias shares the partials' L1 allocation (TT: alias_with / one CircularBufferConfig)
        (region,) = [c for c in manifest["cbs"] if index in [f["buffer_index"] for f in c["format_descriptors"]]]
        assert legacy["cb"]["intermed0"] in [f["buffer_index"] for f in region["format_descriptors"]]
        # and where the kernel reloads (spill with more than one K-block; never with a bias under L1
        # accumulation) kgen's reloads through it, TT's way: its read pointer set to the partials' first
        source = files["kernels/compute.cpp"]
        reloads = blocks > 1 and not l1acc
        assert (f"constexpr uint32_t cb_intermed0_reload_alias = {legacy['alias_define']};" in source) == reloads
        assert ("get_local_cb_interface(cb_intermed0_reload_alias).fifo_rd_ptr = "
                "get_local_cb_interface(cb_intermed0).fifo_rd_ptr)); copy_block(cb_intermed0_reload_alias, "
                in source) == reloads
