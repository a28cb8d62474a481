"""Rendered kernels and JIT files, checked against TT-Metal's rules stated in TT-Metal's terms.

Expected values are worked out here from docs/reference/matmul.md (§1.1 CT args, §1.6 L1-acc table, §2.2
formats, §2.6 defines, §4.1 descriptor arrays) and the spec's own values, never read back from
kgen's plan; the rendered text is parsed, not compared with a stored copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from conftest import EXAMPLES, example
from kgen.core.errors import KgenBug
from kgen.gen.ir import Affine, Sym
from kgen.gen.lower import lower
from kgen.gen.plan import plan
from kgen.gen.render import cxx, identifier, macro_value, render_sources
from kgen.gen.spec import load

FORMAT = {"bfloat16": 5, "float32": 0, "bfloat8_b": 6, "bfloat4_b": 7}      # tt::DataFormat values
FORMAT_NAME_VALUE = {"Float16_b": 5, "Float32": 0, "Bfp8_b": 6, "Bfp4_b": 7}
FIDELITY = {"LoFi": 0, "HiFi2": 2, "HiFi3": 3, "HiFi4": 4}


@dataclass
class Rendered:
    spec: object
    plan: object
    program: object
    files: dict[str, str]


def rendered(name: str, variant: str | None = None) -> Rendered:
    spec = load(example(name), variant)
    p = plan(spec)
    program = lower(p)
    return Rendered(spec, p, program, {f.path: f.text for f in render_sources(program)})


# ----------------------------------------------------------------------------------------------
# Parsing the rendered C++ (a small reader for the structured code kgen prints)
# ----------------------------------------------------------------------------------------------

def ct_args_of(source: str) -> dict[str, int]:
    """name -> index from `constexpr uint32_t name = get_compile_time_arg_val(i);`."""
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"constexpr uint32_t (\w+) = get_compile_time_arg_val\((\d+)\);", source)}


def asserted_values(source: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"static_assert\((\w+) == (\d+),", source)}


def unroll_source(source: str, consts: dict[str, int]) -> list[str]:
    """Statements of kernel_main in execution order: `for (uint32_t v = a; v < b; ++v) {` loops and
    `{  // v = n` blocks are expanded; a loop bound may name a CT arg."""
    body = source[source.index("void kernel_main() {") + len("void kernel_main() {"):].splitlines()

    def value(token: str) -> int:
        return int(token) if token.isdigit() else consts[token]

    def parse(i: int) -> tuple[list, int]:
        items: list = []
        while i < len(body):
            line = body[i].strip()
            i += 1
            if not line or line.startswith("//") or line.startswith("static_assert") or line.startswith("constexpr"):
                continue
            m = re.match(r"for \(uint32_t (\w+) = (\w+); \1 < (\w+); \+\+\1\) \{", line)
            if m:
                inner, i = parse(i)
                items.append(("loop", value(m.group(2)), value(m.group(3)), inner))
            elif line.startswith("{"):
                inner, i = parse(i)
                items.append(("loop", 0, 1, inner))
            elif line == "}":
                return items, i
            else:
                items.append(line)
        return items, i

    def run(items: list) -> list[str]:
        out: list[str] = []
        for item in items:
            if isinstance(item, tuple):
                for _ in range(item[1], item[2]):
                    out += run(item[3])
            else:
                out.append(item)
        return out

    return run(parse(0)[0])


def accumulation_events(statements: list[str]) -> list[str]:
    """The L1-acc switches, reloads and block packs of a compute kernel, in source execution order."""
    events = []
    for s in statements:
        if m := re.match(r"pack_reconfig_l1_acc\((\d)\);", s):
            events.append(f"l1acc({m.group(1)})")
        elif "copy_block(" in s:                  # through the partials' alias: after its read-pointer copy
            events.append("reload")
        elif m := re.match(r"pack_block\(0, (\w+), ", s):
            events.append("pack:" + {"cb_intermed0": "partials", "cb_out": "out"}[m.group(1)])
    return events


def tt_expected_events(num_blocks: int, subblocks: int, out_blocks: int, l1acc: bool, bias: bool,
                       untilize: bool = False) -> list[str]:
    """TT-Metal's compute kernel, docs/reference/matmul.md §1.5-§1.6 (per-pack L1-acc table and the
    end-of-K-block rules), reduced to the same events."""
    events: list[str] = []
    for _ in range(out_blocks):
        enable_reload = False
        for block in range(num_blocks):
            last = block == num_blocks - 1
            for _ in range(subblocks):
                if enable_reload:
                    events.append("reload")
                if last:
                    if l1acc:
                        events.append(f"l1acc({int(bias and block != 0)})")
                    events.append("pack:partials" if bias or untilize else "pack:out")
                else:
                    if l1acc and block in (0, 1):
                        events.append(f"l1acc({block})")
                    events.append("pack:partials")
            if not l1acc:
                enable_reload = num_blocks > 1
            elif not bias and block == num_blocks - 2:
                enable_reload = True
        if (bias or untilize) and l1acc:
            events.append("l1acc(0)")        # bias / untilize stage packs to out with L1 acc off
    return events


def descriptor_arrays(header: str) -> dict[str, list[int]]:
    return {m.group(1): [int(v) for v in m.group(2).split(",")] for m in
            re.finditer(r"constexpr (?:std::int32_t|unsigned char|uint8_t|uint16_t) (\w+)\[\d+\] = \{\s*([\d,]+)\s*\};",
                        header)}


# ----------------------------------------------------------------------------------------------
# The three acceptance examples: spill/reload; L1 acc with num_blocks >= 3; L1 acc + fp32 + bias
# ----------------------------------------------------------------------------------------------

ACCEPTANCE = [("peak_small", "spill"), ("peak_small", None), ("bh_fp32_bias", None),
              ("l1acc_two_blocks_bias", None), ("untilize_relu_reuse", None),
              ("l1acc_two_blocks", None)]     # two K-blocks, no bias: PACKER_L1_ACC at 0.81.1


def tt_ct_args(p, bias: bool) -> list[int]:
    """§1.1: TT-Metal's formulas applied to the blocking (the planner's choices, checked against
    TT's validation rules in test_plan), with fuse_batch (batch = 1)."""
    in0_block_w, sbh, sbw = p.in0_block_w, p.out_subblock_h, p.out_subblock_w
    obh, obw = p.out_block_h, p.out_block_w
    args = [in0_block_w, obh // sbh, obh * in0_block_w, sbh * in0_block_w, obw // sbw, obw * in0_block_w, obw,
            p.kt // in0_block_w, p.per_core_n // obw, p.per_core_m // obh, sbh, sbw, sbh * sbw, 1, obh * obw,
            int(p.spec.untilize_out), 0, 0]
    return args + ([1] if bias else [])


@pytest.mark.parametrize("name,variant", ACCEPTANCE)
def test_compute_ct_args_are_tt_metals(name, variant):
    r = rendered(name, variant)
    src = r.files["kernels/compute.cpp"]
    expected = tt_ct_args(r.plan, r.spec.fuse_bias)
    names = ct_args_of(src)
    tt_order = ["in0_block_w", "in0_num_subblocks", "in0_block_num_tiles", "in0_subblock_num_tiles",
                "in1_num_subblocks", "in1_block_num_tiles", "in1_block_w", "num_blocks_inner_dim",
                "num_blocks_w_dim", "num_blocks_h_dim", "out_subblock_h", "out_subblock_w",
                "out_subblock_num_tiles", "batch", "out_block_num_tiles", "untilize_out",
                "get_batch_from_reader", "in0_transpose_tile"] + (["row_broadcast_bias"] if r.spec.fuse_bias else [])
    assert sorted(names, key=names.get) == tt_order
    assert [names[n] for n in tt_order] == list(range(len(tt_order)))
    asserted = asserted_values(src)
    assert [asserted[n] for n in tt_order] == expected
    compute = r.program.kernel("compute")
    assert [v for _, v in compute.compile_time_args] == expected
    named = dict(compute.named_compile_time_args)
    assert {k: named[k] for k in ("cb_in0", "cb_in1", "cb_bias", "cb_out", "cb_intermed0",
                                  "cb_in0_intermediate", "cb_in1_intermediate", "cb_in0_transposed")} == {
        "cb_in0": 0, "cb_in1": 1, "cb_bias": 3, "cb_out": 4, "cb_intermed0": 5,
        "cb_in0_intermediate": 8, "cb_in1_intermediate": 9, "cb_in0_transposed": 10}
    if r.spec.fuse_bias:
        assert named["bias_ntiles"] == expected[6]


def tt_l1acc_enabled(spec, in0_block_w: int) -> bool:
    nb = (spec.k // 32) // in0_block_w
    return spec.compute.packer_l1_acc and nb > 1     # §2.2: 0.81.1, every factory, bias or not


@pytest.mark.parametrize("name,variant", ACCEPTANCE)
def test_defines_follow_tt_factory_and_agree_everywhere(name, variant):
    r = rendered(name, variant)
    s = r.spec
    expected = set()
    if s.fuse_bias:
        expected.add("FUSE_BIAS")
    if s.activation == "relu":
        expected.add("PACK_RELU")
    if tt_l1acc_enabled(s, r.plan.in0_block_w):
        expected.add("PACKER_L1_ACC")
    if s.compute.fp32_dest_acc:
        expected.add("FP32_DEST_ACC_EN")
    defines_h = r.files["jit/compute/defines_generated.h"]
    assert set(re.findall(r"#define (\w+) 1", defines_h)) == expected
    # with fp32 accumulation (Float32 partials) and a bias, 0.81.1's legacy builders hand over the partials'
    # UnpackToDestFp32 alias: MM_PARTIALS_RELOAD_ALIAS_CB = 7 (provenance N8)
    alias = s.compute.fp32_dest_acc and s.fuse_bias
    assert re.findall(r"#define MM_PARTIALS_RELOAD_ALIAS_CB (\w+)", defines_h) == (["7"] if alias else [])
    expected |= {"MM_PARTIALS_RELOAD_ALIAS_CB"} if alias else set()
    src = r.files["kernels/compute.cpp"]
    assert set(re.findall(r"#ifndef (\w+)\n#error", src)) == expected
    assert set(re.findall(r"#ifdef (\w+)\n#error", src)) == {
        "FUSE_BIAS", "PACK_RELU", "PACKER_L1_ACC", "FP32_DEST_ACC_EN", "MM_PARTIALS_RELOAD_ALIAS_CB"} - expected
    desc = r.files["jit/compute/chlkc_descriptors.h"]
    assert f"constexpr bool DST_ACCUM_MODE = {'true' if s.compute.fp32_dest_acc else 'false'};" in desc
    assert f"static_assert(DST_ACCUM_MODE == {'true' if s.compute.fp32_dest_acc else 'false'}" in src
    # data-movement kernels get none of the compute defines
    for path, text in r.files.items():
        if path.endswith("defines_generated.h") and path != "jit/compute/defines_generated.h":
            assert text.strip() == ""


def tt_partials_format(spec, in0_block_w: int) -> str:
    """§2.2: interm0 = Float32 with fp32 dest acc, else Float16_b under L1 acc, else the output format."""
    if spec.compute.fp32_dest_acc:
        return "float32"
    return "bfloat16" if tt_l1acc_enabled(spec, in0_block_w) else spec.dtype_out


@pytest.mark.parametrize("name,variant", ACCEPTANCE)
def test_descriptor_arrays_hold_each_cbs_format(name, variant):
    r = rendered(name, variant)
    s = r.spec
    text = r.files["jit/compute/chlkc_descriptors.h"]
    arrays = descriptor_arrays(text)
    n = 64 if s.arch == "blackhole" else 32          # NUM_CIRCULAR_BUFFERS on the device (0.81.1)
    expected = {0: FORMAT[s.dtype_in0], 1: FORMAT[s.dtype_in1], 4: FORMAT[s.dtype_out], 5: FORMAT[tt_partials_format(s, r.plan.in0_block_w)]}
    if s.fuse_bias:
        expected[3] = FORMAT[s.dtype_bias]
    # the CB TT-Metal 0.81.1 unpacks straight into DST with Float32 partials (provenance N8): the partials, or
    # with a bias their alias c_7 over the same pages
    to_dest = None
    if s.compute.fp32_dest_acc:
        to_dest = 7 if s.fuse_bias else 5
        expected[to_dest] = expected[5]
    for name_ in ("unpack_src_format", "pack_dst_format"):
        arr = arrays[name_]
        assert len(arr) == n
        for i in range(n):
            assert arr[i] == expected.get(i, 255), (name_, i)       # Invalid = 255 for unused CBs
    sizes = arrays["unpack_tile_size"]
    tile_bytes = {0: 4096, 5: 2048, 6: 1088, 7: 576}
    for i in range(n):
        assert sizes[i] == (tile_bytes[expected[i]] if i in expected else 1088)   # hlk_desc default
    assert arrays["unpack_tile_num_faces"] == [4] * n and arrays["unpack_tile_r_dim"] == [32] * n
    # register formats: Float16_b, Tf32 (4) for Float32 data under fp32 dest acc, Bfp8_b for bfp
    for i, fmt in expected.items():
        reg = arrays["unpack_dst_format"][i]
        if i == to_dest:
            assert reg == 0                          # Float32: straight into DST
        elif fmt == 0:
            assert reg == (4 if s.compute.fp32_dest_acc else 5)
        elif fmt in (6, 7):
            assert reg == 6
        else:
            assert reg == fmt
    assert f"static_cast<ckernel::MathFidelity>({FIDELITY[s.compute.math_fidelity]})" in text
    assert f"constexpr bool APPROX = {'true' if s.compute.math_approx else 'false'};" in text
    assert f"#define DST_SYNC_MODE DstSync::{'SyncFull' if s.compute.dst_full_sync else 'SyncHalf'}" in text
    # the 0.81.1 guards, in order
    guards = re.findall(r"^#if .*$", text, re.M)
    assert guards == ["#if defined(UCK_CHLKC_MATH)", "#if defined(UCK_CHLKC_PACK)", "#if !defined(UCK_CHLKC_PACK)",
                      "#if !defined(UCK_CHLKC_MATH) && !defined(UCK_CHLKC_UNPACK)", "#if defined(UCK_CHLKC_PACK)",
                      "#if defined(UCK_CHLKC_MATH) || defined(UCK_CHLKC_PACK) || defined(UCK_CHLKC_UNPACK) || defined(UCK_CHLKC_ISOLATE_SFPU)"]


@pytest.mark.parametrize("name,variant", ACCEPTANCE)
def test_l1acc_switches_and_reloads_in_source_follow_tt(name, variant):
    r = rendered(name, variant)
    s = r.spec
    src = r.files["kernels/compute.cpp"]
    consts = asserted_values(src)
    events = accumulation_events(unroll_source(src, consts))
    kt = s.k // 32
    nb = kt // r.plan.in0_block_w
    subblocks = r.plan.in0_num_subblocks * r.plan.in1_num_subblocks
    out_blocks = r.plan.num_blocks_h_dim * r.plan.num_blocks_w_dim * r.plan.batch_ct
    expected = tt_expected_events(nb, subblocks, out_blocks, tt_l1acc_enabled(s, r.plan.in0_block_w), s.fuse_bias, s.untilize_out)
    assert events == expected
    if tt_l1acc_enabled(s, r.plan.in0_block_w):
        assert events[-1] in ("l1acc(0)", "pack:out")       # L1 acc left off at the end
        assert "l1acc(0)" in events[-subblocks * 2 - 1:]
    if not s.fuse_bias and tt_l1acc_enabled(s, r.plan.in0_block_w):
        assert events.count("reload") == subblocks * out_blocks            # one reload, last K-block
    if not tt_l1acc_enabled(s, r.plan.in0_block_w) and nb > 1 and not s.fuse_bias:
        assert events.count("reload") == (nb - 1) * subblocks * out_blocks  # spill: every later block


def test_spill_and_l1acc_variants_differ_only_where_tt_says():
    l1 = rendered("peak_small")
    spill = rendered("peak_small", "spill")
    assert "PACKER_L1_ACC" in l1.files["jit/compute/defines_generated.h"]
    assert "PACKER_L1_ACC" not in spill.files["jit/compute/defines_generated.h"]
    assert "pack_reconfig_l1_acc" not in spill.files["kernels/compute.cpp"]
    # data movement does not depend on the accumulation policy
    for path in l1.files:
        if path.startswith("kernels/") and path != "kernels/compute.cpp":
            # the same code; only the header line naming the variant differs
            assert l1.files[path].split("\n", 1)[1] == spill.files[path].split("\n", 1)[1]


# ----------------------------------------------------------------------------------------------
# Data-movement kernels
# ----------------------------------------------------------------------------------------------

def test_mcast_kernels_use_the_real_dataflow_api():
    r = rendered("peak_small")
    sender = r.files["kernels/in0_sender.cpp"]
    for call in ("TensorAccessorArgs<", "TensorAccessor(", "noc_async_read_page(", "noc_async_read_barrier();",
                 "get_noc_multicast_addr(", "noc_async_write_multicast(", "noc_semaphore_wait(",
                 "noc_semaphore_set_multicast(", "get_semaphore("):
        assert call in sender, call
    # the flag multicast copies the sender's own word, which is set to VALID (1) just before
    statements = unroll_source(sender, {})
    for i, st in enumerate(statements):
        if st.startswith("noc_semaphore_set_multicast("):
            assert "noc_semaphore_set(in0_receiver_sem, 1);" in statements[i - 3:i]
    receiver = r.files["kernels/in0_receiver.cpp"]
    assert "noc_semaphore_inc(get_noc_addr(in0_sender_noc_x, in0_sender_noc_y," in receiver
    writer = r.files["kernels/in1_receiver_writer.cpp"]
    assert "noc_async_write_page(" in writer and "noc_async_write_barrier();" in writer
    assert "noc_async_writes_flushed" not in r.files["kernels/in1_sender_writer.cpp"]     # Wormhole


def test_blackhole_flushes_the_data_multicast_before_the_flag():
    r = rendered("bh_fp32_bias")
    statements = unroll_source(r.files["kernels/in1_sender_writer.cpp"], {})
    for i, s in enumerate(statements):
        if s.startswith("noc_async_write_multicast("):
            assert statements[i + 1] == "noc_async_writes_flushed();"


def test_tensor_accessor_ct_args_are_interleaved_dram():
    r = rendered("l1acc_two_blocks_bias")
    k = r.program.kernel("in1_sender_writer")
    args = dict(k.compile_time_args)
    for t in k.tensors:
        # tensor_accessor::ArgConfig::IsDram (1 << 1) and the aligned page size (tile bytes)
        assert args[f"{t.name}_accessor_config"] == 2
        assert args[f"{t.name}_page_bytes"] == {"Float16_b": 2048, "Bfp8_b": 1088}[t.data_format]
        offset = k.ct_index(f"{t.name}_accessor_config")
        assert f"TensorAccessorArgs<{offset}>()" in r.files["kernels/in1_sender_writer.cpp"]


def test_jit_wrappers_follow_ttmetal_genfiles():
    r = rendered("peak_small")
    for thread in ("unpack", "math", "pack"):
        text = r.files[f"jit/compute/chlkc_{thread}.cpp"]
        assert text.splitlines() == [f"#define TRISC_{thread.upper()}", '#include "defines_generated.h"',
                                     '#include "../../kernels/compute.cpp"']
    assert r.files["jit/in0_sender/kernel_includes.hpp"] == '#include "../../kernels/in0_sender.cpp"\n'
    # named CT args: KERNEL_COMPILE_TIME_ARG_MAP in ascending key order, as 0.81.1's JIT writes it
    m = re.match(r"#define KERNEL_COMPILE_TIME_ARG_MAP (.*)\n", r.files["jit/compute/named_ct_arg_map_generated.h"])
    pairs = re.findall(r'\{"(\w+)",(\d+)\}', m.group(1))
    assert [p[0] for p in pairs] == sorted(p[0] for p in pairs)
    assert dict((k, int(v)) for k, v in pairs) == dict(r.program.kernel("compute").named_compile_time_args)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_renders_with_balanced_braces(path):
    program = lower(plan(load(path)))
    for f in render_sources(program):
        assert f.text.count("{") == f.text.count("}"), f.path
        assert "\t" not in f.text and not any(line != line.rstrip() for line in f.text.splitlines()), f.path


def _syms(nodes):
    from kgen.gen.ir import Loop
    for n in nodes:
        if isinstance(n, Loop):
            if isinstance(n.stop, Sym):
                yield n.stop.name
            yield from _syms(n.body)
        else:
            for _, v in n.args:
                if isinstance(v, Sym):
                    yield v.name
                elif isinstance(v, Affine):
                    yield from (c.name for _, c in v.terms if isinstance(c, Sym))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_named_value_a_kernel_uses_is_declared_from_its_args(path):
    program = lower(plan(load(path)))
    files = {f.path: f.text for f in render_sources(program)}
    for kernel in program.kernels:
        src = files[f"kernels/{kernel.name}.cpp"]
        declared = set(re.findall(r"constexpr uint32_t (\w+) = get_(?:named_)?compile_time_arg_val\(", src))
        assert set(_syms(kernel.body)) <= declared, kernel.name


# ----------------------------------------------------------------------------------------------
# Nothing but numbers, enums and identifiers reaches C++
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hostile", ['a"b', "x\n#include <x>", "); system(\"rm -rf /\"", "a b", "", "1abc",
                                     "cb_in0;", "x/*", "ok\\"])
def test_hostile_strings_never_reach_cpp(hostile):
    with pytest.raises(KgenBug):
        identifier(hostile)
    with pytest.raises(KgenBug):
        cxx(hostile)
    with pytest.raises(KgenBug):
        cxx(Sym(3, hostile))
    with pytest.raises(KgenBug):
        cxx(Affine.of(0, **{"k": 1}) + Affine(0, ((hostile, 2),)))
    with pytest.raises(KgenBug):
        macro_value(hostile + " 1" if hostile else "1 + 1")


def test_cxx_spells_values():
    assert cxx(True) == "true" and cxx(0) == "0" and cxx(Sym(4, "in0_block_w")) == "in0_block_w"
    assert cxx(Affine.of(3, k=1, in1_sb=Sym(2, "out_subblock_w"))) == "k + out_subblock_w * in1_sb + 3"
    with pytest.raises(KgenBug):
        cxx(1.5)
