"""The spec language: the surface of design.md parses exactly as written, with spans."""

from __future__ import annotations

import pytest

from conftest import example
from kgen.core.errors import SpecError
from kgen.gen.spec import ComputeConfig, load, parse_text, preset_computes, resolve

DESIGN_SURFACE = """\
# peak_bf16.kspec
compute hifi2_l1acc {            # a named compute config; may also live in configs/compute/
    math_fidelity = HiFi2        # LoFi | HiFi2 | HiFi3 | HiFi4
    fp32_dest_acc = false
    packer_l1_acc = true
    math_approx   = false
    dst_full_sync = false
}

matmul peak_bf16 {
    arch    = blackhole          # wormhole_b0 | blackhole
    shape   = 4096 x 4096 x 4096 # M x N x K in elements
    batch   = 1
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }   # also bfloat8_b, bfloat4_b, float32
    grid    = 8 x 8              # x (columns) by y (rows), or auto
    dataflow = mcast_2d          # mcast_2d | reuse (each core reads its own inputs)
    block {
        in0_block_w  = 4         # K tiles per K-block; any block value may be auto
        out_subblock = 4 x 2     # h x w tiles
        per_core     = 16 x 16   # M x N tiles per core
    }
    compute = hifi2_l1acc        # a preset by name, then optional inline overrides:
    compute { math_fidelity = HiFi4 }
    fuse { bias = true  activation = relu }

    variants {                   # for `kgen ab`: each variant overrides fields of the base
        spill { compute.packer_l1_acc = false }
        l1acc { compute.packer_l1_acc = true }
    }
}
"""


def test_design_surface_parses_exactly():
    spec = resolve(parse_text(DESIGN_SURFACE, "peak_bf16.kspec"))
    assert (spec.name, spec.arch, spec.m, spec.n, spec.k, spec.batch) == ("peak_bf16", "blackhole", 4096, 4096, 4096, 1)
    assert (spec.dtype_in0, spec.dtype_in1, spec.dtype_out) == ("bfloat16",) * 3
    assert spec.grid == (8, 8) and spec.dataflow == "mcast_2d"
    assert (spec.block.in0_block_w, spec.block.out_subblock, spec.block.per_core) == (4, (4, 2), (16, 16))
    # the preset, then the inline override
    assert spec.compute == ComputeConfig("HiFi4", False, True, False, False, "hifi2_l1acc")
    assert spec.fuse_bias and spec.activation == "relu"
    assert spec.variants == ("spill", "l1acc")
    assert resolve(parse_text(DESIGN_SURFACE, "p.kspec"), "spill").compute.packer_l1_acc is False


def test_the_shipped_peak_example_is_the_design_surface():
    assert load(example("peak_bf16")) == resolve(parse_text(DESIGN_SURFACE, str(example("peak_bf16"))))


def test_spans_point_at_the_text():
    spec = resolve(parse_text(DESIGN_SURFACE, "p.kspec"))
    span = spec.spans["block.in0_block_w"]
    assert (span.line, span.column) == (18, 24)
    assert span.source_line.strip().startswith("in0_block_w")
    assert spec.spans["compute.math_fidelity"].line == 23          # the inline override wins
    assert spec.span("block.out_block").line == 17                 # falls back to the group


def test_keys_in_any_order_and_compact_dims():
    text = """matmul m { block { per_core = 2x2 } dtype { out = float32 in1 = bfloat4_b in0 = bfloat8_b }
                         shape = 128x128x64 arch = wormhole_b0 grid=auto }"""
    spec = resolve(parse_text(text, "m.kspec"))
    assert spec.block.per_core == (2, 2) and spec.grid is None
    assert (spec.dtype_in0, spec.dtype_in1, spec.dtype_out) == ("bfloat8_b", "bfloat4_b", "float32")
    # no compute line: ttnn.matmul's default; a per_core value is a program config, so LoFi; a float32
    # output accumulates in fp32 and turns packer L1 accumulation off
    c = spec.compute
    assert c.preset == "ttnn_matmul_default" and c.math_fidelity == "LoFi"
    assert c.fp32_dest_acc and not c.packer_l1_acc and not c.math_approx and not c.dst_full_sync


def test_presets_from_configs():
    presets = preset_computes()
    assert {"ttnn_default", "peak_hifi2", "precise_fp32"} <= set(presets)
    spec = load(example("peak_small"))
    assert spec.compute.preset == "peak_hifi2" and spec.compute.packer_l1_acc


def test_variant_overrides_are_checked():
    bad = DESIGN_SURFACE.replace("spill { compute.packer_l1_acc = false }", "spill { compute.packer_l1_acc = maybe }")
    # a type error in any variant fails the whole file, not only when that variant is chosen
    with pytest.raises(SpecError) as exc:
        parse_text(bad, "p.kspec")
    assert exc.value.span.line == 27 and "true or false" in exc.value.message


def test_unknown_key_suggests():
    with pytest.raises(SpecError) as exc:
        parse_text(DESIGN_SURFACE.replace("in0_block_w  = 4", "in0_blok_w  = 4"), "p.kspec")
    assert "in0_block_w" in exc.value.hint and exc.value.span.line == 18


# ttnn.matmul's compute config when the call passes none, at tt-metal 001cea9a (ttnn 0.81.1),
# create_matmul_attributes + init_device_compute_kernel_config, written out here:
#   fidelity HiFi2 if no program config and no core grid and not (in0 and in1 both bfloat8_b/bfloat4_b),
#   else LoFi; float32 x float32: HiFi3 on wormhole_b0, HiFi4 otherwise;
#   math_approx false; fp32_dest_acc = (out == float32); packer_l1_acc = (out != float32); dst_full_sync false.
def _tt_rule(arch, in0, in1, out, program_config=False, core_grid=False):
    block = ("bfloat8_b", "bfloat4_b")
    if in0 == in1 == "float32":
        fid = "HiFi3" if arch == "wormhole_b0" else "HiFi4"
    elif program_config or core_grid or (in0 in block and in1 in block):
        fid = "LoFi"
    else:
        fid = "HiFi2"
    return (fid, out == "float32", out != "float32", False, False)


def _no_compute_line(arch, in0, in1, out, extra=""):
    text = f"matmul m {{ arch = {arch} shape = 256 x 256 x 256 {extra} dtype {{ in0 = {in0} in1 = {in1} out = {out} }} }}"
    c = resolve(parse_text(text, "m.kspec")).compute
    return (c.math_fidelity, c.fp32_dest_acc, c.packer_l1_acc, c.math_approx, c.dst_full_sync), c


@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
@pytest.mark.parametrize("in0,in1,out", [
    ("bfloat16", "bfloat16", "bfloat16"), ("bfloat8_b", "bfloat8_b", "bfloat8_b"), ("bfloat8_b", "bfloat4_b", "bfloat16"),
    ("bfloat16", "bfloat8_b", "bfloat16"), ("float32", "float32", "float32"), ("bfloat16", "bfloat16", "float32"),
    ("float32", "bfloat16", "bfloat16")])
def test_no_compute_line_is_ttnn_matmuls_default(arch, in0, in1, out):
    got, c = _no_compute_line(arch, in0, in1, out)
    assert got == _tt_rule(arch, in0, in1, out)
    assert c.preset == "ttnn_matmul_default"
    assert all("ttnn.matmul's default at 0.81.1" in src for _, src in c.sources)


def test_a_grid_or_a_program_config_lowers_the_default_fidelity():
    for extra, kw in (("grid = 8 x 8", {"core_grid": True}), ("block { in0_block_w = 2 }", {"program_config": True}),
                      ("dataflow = mcast_2d", {"program_config": True}), ("grid = auto", {})):
        got, c = _no_compute_line("wormhole_b0", "bfloat16", "bfloat16", "bfloat16", extra)
        assert got == _tt_rule("wormhole_b0", "bfloat16", "bfloat16", "bfloat16", **kw), extra


def test_an_inline_compute_block_is_a_whole_config_as_in_ttnn():
    """ttnn uses a given ComputeKernelConfig as is: fields it leaves out take the struct's defaults
    (LoFi, math_approx_mode true, the rest false), not ttnn.matmul's."""
    text = ("matmul m { arch = wormhole_b0 shape = 256 x 256 x 256 "
            "dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 } compute { math_fidelity = HiFi2 } "
            "variants { l1 { compute.packer_l1_acc = true } } }")
    c = resolve(parse_text(text, "m.kspec")).compute
    assert (c.math_fidelity, c.packer_l1_acc, c.math_approx, c.fp32_dest_acc) == ("HiFi2", False, True, False)
    src = dict(c.sources)
    assert src["math_fidelity"] == "spec (inline)" and src["packer_l1_acc"].startswith("ComputeKernelConfig default")
    v = resolve(parse_text(text, "m.kspec"), "l1").compute
    assert v.packer_l1_acc and dict(v.sources)["packer_l1_acc"] == "variant l1"


def test_a_named_preset_says_so():
    text = ("matmul m { arch = wormhole_b0 shape = 256 x 256 x 256 compute = peak_hifi2 "
            "dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 } }")
    src = dict(resolve(parse_text(text, "m.kspec")).compute.sources)
    assert src["math_fidelity"] == "preset peak_hifi2 (configs/compute/peak_hifi2.kspec)"
