"""The dataflow registry is the one list of TT-Metal's program factories kgen generates.

Facts checked: the spec grammar admits exactly the registered spellings; TT-Metal's 2D multicast
factory creates four semaphores (in0 and in1 sender/receiver) and its 1D factory two (for the operand
it multicasts), matmul_multicore_reuse_mcast_{2d,1d}_program_factory.cpp, and its DRAM-sharded factory
three (in0 sender, receiver, sender-valid), matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp;
no factory carries a packer L1 accumulation rule of its own (0.81.1's are all packer_l1_acc &&
num_blocks > 1: tests/gen/test_l1_acc_rule.py); only the 2D config has transpose_mcast
(MatmulMultiCoreReuseMultiCastProgramConfig); and port-check has TT-Metal's args for every
data-movement kernel kgen lowers for a factory it claims to port-check.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kgen.core.types import Placement
from kgen.gen import dataflow as dataflows
from kgen.gen.dataflow import REGISTRY, accepts
from kgen.gen.lower import lower
from kgen.gen.plan import plan
from kgen.gen.spec import MATMUL_KEYS, MEMORY_IN0, MEMORY_IN1, MEMORY_OUT, parse_text, resolve

# TT-Metal 0.81.1's factory files (ttnn/cpp/ttnn/operations/matmul/device/factory/)
MCAST_2D_FILE = "matmul_multicore_reuse_mcast_2d_program_factory.cpp"
MCAST_1D_FILE = "matmul_multicore_reuse_mcast_1d_program_factory.cpp"
DRAM_SHARDED_FILE = "matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp"

DRAM_SHARDED_MEMORY = "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }"


def decode_spec():
    """A spec the DRAM-sharded factory plans: a decode M, its placements, no bias (kgen's program has none)."""
    return resolve(parse_text(f"""matmul t {{
    arch = wormhole_b0
    shape = 32 x 384 x 256
    dtype {{ in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }}
    dataflow = dram_sharded
    {DRAM_SHARDED_MEMORY}
}}""", "t.kspec"))


# the factories that take no bias (TT_FATAL "Bias is not supported for matmul multi core")
NO_BIAS = {"multi_core"}


def spec_of(dataflow: str, shape: str = "64 x 512 x 256", per_core: str = "auto", extra: str = ""):
    return resolve(parse_text(f"""matmul t {{
    arch = wormhole_b0
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = 4 x 2
    dataflow = {dataflow}
    block {{ per_core = {per_core} }}
    fuse {{ bias = true }}
    {extra}
}}""", "t.kspec"))


def test_the_grammar_admits_exactly_the_registered_dataflows():
    from kgen.core.errors import SpecError
    assert len(set(dataflows.NAMES)) == len(REGISTRY)
    assert dataflows.DEFAULT in REGISTRY
    for name in dataflows.NAMES:
        assert spec_of(name).dataflow == name
    with pytest.raises(SpecError, match="expected one of " + ", ".join(dataflows.NAMES)):
        spec_of("mcast_3d")
    assert MATMUL_KEYS["dataflow"] is not None


def test_a_spec_without_a_dataflow_line_gets_tts_choice():
    text = """matmul t {
    arch = wormhole_b0
    shape = 64 x 64 x 64
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
}"""
    assert resolve(parse_text(text, "t.kspec")).dataflow == dataflows.AUTO     # ttnn.matmul picks the factory


def test_the_grammar_admits_the_placements_some_factory_takes():
    for tensor, grammar in (("in0", MEMORY_IN0), ("in1", MEMORY_IN1), ("out", MEMORY_OUT)):
        taken = set().union(*(d.placements[tensor] for d in REGISTRY))
        assert set(grammar) == taken
        assert all(isinstance(p, Placement) for p in grammar)
    # every factory takes tensors interleaved in DRAM or in L1 but the DRAM-sharded one, which takes in0
    # and the output width-sharded in L1 and in1 width-sharded over the DRAM banks, and nothing else; only
    # the 2D factory (in0 block/height, out block) and the 1D multicast ones (in1: in0 and out height; in0:
    # in0 and out width) take sharded ones too
    interleaved = {Placement.DRAM, Placement.L1}
    for d in REGISTRY:
        if d.factory == DRAM_SHARDED_FILE:
            assert dict(d.placements) == {"in0": {Placement.L1_WIDTH_SHARDED}, "in1": {Placement.DRAM_WIDTH_SHARDED},
                                          "out": {Placement.L1_WIDTH_SHARDED}}
            continue
        assert all(interleaved <= d.placements[t] for t in ("in0", "in1", "out"))
        assert any(v - interleaved for v in d.placements.values()) == (d.factory == MCAST_2D_FILE or d.is_1d)


def test_the_factories_semaphores_are_tt_metals():
    expected = {"mcast_2d": {"in0_sender", "in0_receiver", "in1_sender", "in1_receiver"},
                "mcast_1d_in0": {"in0_sender", "in0_receiver"},
                "mcast_1d_in1": {"in1_sender", "in1_receiver"},
                "reuse": set(),
                "dram_sharded": {"in0_sender", "in0_receiver", "in0_sender_valid"},
                "multi_core": set()}
    shapes = {"mcast_1d_in0": ("64 x 512 x 256", "2 x 4"), "mcast_1d_in1": ("512 x 64 x 256", "4 x 2")}
    for d in REGISTRY:
        shape, per_core = shapes.get(d.name, ("256 x 256 x 256", "auto"))
        spec = decode_spec() if d.factory == DRAM_SHARDED_FILE else spec_of(d.name, shape, per_core)
        spec = replace(spec, fuse_bias=spec.fuse_bias and d.name not in NO_BIAS)
        program = lower(plan(spec))
        assert {s.name for s in program.semaphores} == expected[d.name]
        # every receiver the model paces by a sender is a receiver this factory lowers with that sender
        roles = {k.role for k in program.kernels}
        for receiver, sender in d.paced_by.items():
            assert receiver not in roles or sender in roles


def test_no_factory_owns_an_l1_accumulation_rule_and_the_transpose_mcast_owners():
    for d in REGISTRY:
        assert not hasattr(d, "l1_acc_rule")          # one rule for every factory (blocking.packer_l1_acc_en)
        assert d.transpose_mcast == (d.factory == MCAST_2D_FILE)
        assert d.is_1d == (d.factory == MCAST_1D_FILE)
        # a shared axis: the 1D factories' multicast operand, the DRAM-sharded factory's all of M
        assert (d.shared_axis is not None) == (d.factory in (MCAST_1D_FILE, DRAM_SHARDED_FILE))
    assert dataflows.get("dram_sharded").shared_axis == 0
    assert dataflows.ONE_D == {"mcast_1d_in0": 0, "mcast_1d_in1": 1}


def test_paced_by_has_one_sender_per_receiver():
    for d in REGISTRY:
        for receiver, sender in d.paced_by.items():
            assert dataflows.PACED_BY[receiver] == sender


def test_a_placement_no_factory_but_mcast_2d_takes_is_refused_with_the_factory_that_takes_it():
    from kgen.gen.plan import PlanError
    from dataclasses import replace
    memory = "memory { out = l1_block_sharded }"     # (an interleaved `l1` every factory but dram_sharded takes)
    for d in REGISTRY:
        s = spec_of(d.name, "256 x 256 x 256", extra=memory)
        if d.factory == DRAM_SHARDED_FILE:
            s = replace(s, fuse_bias=False)         # its own refusal of a bias would come first
        if accepts(d, s.memory):
            continue
        with pytest.raises(PlanError, match=f"with dataflow = {d.name}") as refused:
            plan(s)
        assert refused.value.hint == "nearest legal values: dataflow = mcast_2d"


def test_every_factory_gives_port_check_tt_kernels_for_every_kernel_of_its_program():
    """Each factory's TT reference program (Dataflow.tt_program) puts one of TT-Metal's kernels, with its
    file, in the place of each of kgen's data-movement kernels; the DRAM-sharded one binds its own compute."""
    from dataclasses import replace

    from kgen.gen.dataflow.tt_program import Metal2Kernel
    from kgen.gen.pipeline import run
    from kgen.proof.emu_build import emulator_config
    from tests.proof.test_ttdramsharded import SMALL as DRAM_SHARDED_SPEC

    shapes = {"mcast_1d_in0": ("64 x 1024 x 256", "2 x 4"), "mcast_1d_in1": ("1024 x 64 x 256", "4 x 2")}
    for d in REGISTRY:
        if d.places_own_cores:
            spec = resolve(parse_text(DRAM_SHARDED_SPEC, "t.kspec"))
        else:
            spec = spec_of(d.name, *shapes.get(d.name, ("256 x 256 x 256", "auto")))
        a = run(replace(spec, fuse_bias=spec.fuse_bias and d.name not in NO_BIAS))
        if d.tt_unsupported(a.plan, a.rendered.manifest):       # the reuse factory's kernels read no bias
            a = run(replace(spec, fuse_bias=False))
        manifest = a.rendered.manifest
        assert d.tt_unsupported(a.plan, manifest) is None, d.name
        program = d.tt_program(a.plan, manifest, emulator_config()["noc"])
        names = {k.name for k in a.verified.kernels if k.processor != "TRISC"}
        assert names and set(program.kernels) == names, (d.name, names, set(program.kernels))
        assert all(k.source.endswith(".cpp") for k in program.kernels.values())
        metal2 = {isinstance(k, Metal2Kernel) for k in program.kernels.values()}
        assert metal2 == {program.compute is not None}, d.name      # a Metal 2.0 factory binds its compute too
        if not d.places_own_cores:                                    # (the DRAM-sharded rows are its own)
            assert any(n.endswith("_rows") for n in names) == d.is_1d     # a 1D run two rows tall
