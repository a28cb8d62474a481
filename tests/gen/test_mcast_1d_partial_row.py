"""TT-Metal's 1D multicast factory over a run of cores whose last row is partial (issue #39 item 4).

The factory's rules (matmul_multicore_reuse_mcast_1d_program_factory.cpp, the legacy
process_mcast_in0_program_and_create_override_variables / process_mcast_in1_... builders, tt-metal
@00629f0f, the layout of the 0.81.1 kernels):

- num_cores = num_blocks_x * num_blocks_y; `all_cores` / `all_cores_with_work` are the first num_cores
  of the grid, row-major (num_cores_to_corerangeset(..., row_major = true)): whole rows, then a partial
  row. The compute kernel, the in1 (mcast_in0) or in0 (mcast_in1) reader, the CBs and the semaphores
  are on them only.
- The multicast rectangle is `all_cores_with_work.bounding_box()`, from (0, 0); the receivers are
  the num_cores - 1 cores after (0, 0) in row-major order, the box's cores past the run get no kernel.
- The sender's CT args: in0/in1_mcast_num_dests = num_cores - 1 (the receivers that signal it:
  `sender_sem.wait(num_dests)`), in0/in1_mcast_num_cores = bounding box size - 1 (the NoC multicast's
  destination count, the box less the sender); SKIP_MCAST only when the box is one core.

Every expected value is worked out here from those rules, not read back from kgen.
"""

from __future__ import annotations

import pytest

from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve


def make(dataflow="mcast_1d_in0", shape="50 x 1000 x 256", grid="4 x 2", per_core="2 x 6", arch="wormhole_b0",
         extra=""):
    return resolve(parse_text(f"""matmul t {{
    arch = {arch}
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}
    dataflow = {dataflow}
    block {{ per_core = {per_core}  in0_block_w = 2 }}
    compute {{ math_fidelity = HiFi2  packer_l1_acc = true }}
    {extra}
}}""", "t.kspec"))


def test_a_partial_last_row_plans_its_bounding_box():
    # Nt = 32 over per_core_N = 6: ceil(32 / 6) = 6 cores on a 4-wide grid: row 0 whole, 2 of row 1
    p = plan(make())
    assert p.num_cores == 6 and p.grid == (4, 2)
    assert sorted(p.all_cores.cores()) == sorted([(x, 0) for x in range(4)] + [(0, 1), (1, 1)])
    # 8 cores on a 3-wide grid: two rows and 2 of a third
    p = plan(make(grid="3 x 3", per_core="2 x 4"))
    assert p.num_cores == 8 and p.grid == (3, 3) and (2, 2) not in p.all_cores
    # mcast_in1: Mt = 10 over per_core_M = 2: 5 cores on a 3-wide grid
    p = plan(make("mcast_1d_in1", "320 x 100 x 256", "3 x 2", "2 x 4"))
    assert p.num_cores == 5 and p.grid == (3, 2)


def test_kernels_cbs_and_semaphores_are_on_the_cores_with_work():
    v = run(make(), "verified").verified
    cores = {k.name: sorted(k.cores.cores()) for k in v.kernels}
    work = sorted([(x, 0) for x in range(4)] + [(0, 1), (1, 1)])
    assert cores["compute"] == work and cores["in1_sender_writer"] == work
    assert cores["in0_sender"] == [(0, 0)]
    # the receivers: the num_cores - 1 = 5 cores after (0, 0), row-major
    assert sorted(cores["in0_receiver"] + cores["in0_receiver_rows"]) == [c for c in work if c != (0, 0)]
    assert all(sorted(s.cores.cores()) == work for s in v.semaphores)
    manifest = run(make(), "rendered").rendered.manifest
    compute = next(k for k in manifest["kernels"] if k["name"] == "compute")
    # as the manifest's (and ttnn's) core ranges: the whole row, then the partial one
    assert compute["core_ranges"] == [{"start": [0, 0], "end": [3, 0]}, {"start": [0, 1], "end": [1, 1]}]
    assert all(cb["core_ranges"] == compute["core_ranges"] for cb in manifest["cbs"])


def test_the_sender_waits_for_the_cores_with_work_and_multicasts_to_the_box():
    v = run(make(), "verified").verified
    send = v.kernel("in0_sender")
    waits = {n["value"] for n, _ in walk(send.body) if n.kind == "sem_wait"}
    dests = {n["num_dests"] for n, _ in walk(send.body) if n.kind in ("mcast_cb", "mcast_sem_set")}
    assert waits == {6 - 1} and dests == {4 * 2 - 1}
    v = run(make("mcast_1d_in1", "320 x 100 x 256", "3 x 2", "2 x 4", extra="fuse { bias = true }"),
            "verified").verified
    send = v.kernel("in1_sender_writer")
    assert {n["value"] for n, _ in walk(send.body) if n.kind == "sem_wait"} == {5 - 1}
    assert {n["num_dests"] for n, _ in walk(send.body) if n.kind == "mcast_cb"} == {3 * 2 - 1}


@pytest.mark.parametrize("dataflow,shape,grid,per_core,sender,ct", [
    ("mcast_1d_in0", "50 x 1000 x 256", "4 x 2", "2 x 6", "in0_sender", (17, 18)),
    ("mcast_1d_in1", "320 x 100 x 256", "3 x 2", "2 x 4", "in1_sender_writer", (12, 13)),
])
def test_tt_programs_sender_args_are_the_factorys(dataflow, shape, grid, per_core, sender, ct):
    """TT's sender kernels read in0/in1_mcast_num_dests and _num_cores at CT args 17, 18
    (reader_bmm_tile_layout_in0_sender_padding.cpp) and 12, 13 (..._in1_sender_writer_padding.cpp)."""
    artifacts = run(make(dataflow, shape, grid, per_core), "rendered")
    p = artifacts.plan
    program = p.dataflow.tt_program(p, artifacts.rendered.manifest, {})
    args = program.kernels[sender].compile_time_args
    box = p.grid[0] * p.grid[1]
    assert (args[ct[0]], args[ct[1]]) == (p.num_cores - 1, box - 1) and p.num_cores < box
    assert "SKIP_MCAST" not in program.kernels[sender].defines


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
@pytest.mark.parametrize("dataflow,shape,grid,per_core,extra", [
    ("mcast_1d_in0", "50 x 1000 x 256", "4 x 2", "2 x 6", ""),
    ("mcast_1d_in0", "50 x 1000 x 256", "3 x 3", "2 x 4", "fuse { bias = true }"),
    ("mcast_1d_in1", "320 x 100 x 256", "3 x 2", "2 x 4", "fuse { bias = true }"),
])
def test_port_check_runs_tt_programs_over_the_partial_row(host_cxx, host_toolchain, tmp_path, arch, dataflow, shape,
                                                           grid, per_core, extra):
    """kgen's program and TT-Metal's own kernels with the factory's args, emulated with the box's cores
    without work present (they receive the multicasts): bit-exact, and the same bits."""
    from kgen.gen.build import build
    from kgen.proof.portcheck import port_check

    spec = make(dataflow, shape, grid, per_core, arch, extra)
    p = plan(spec)
    assert p.num_cores < p.grid[0] * p.grid[1]
    pc = port_check(build(spec, tmp_path).path, p, seed=3)
    assert pc.passed, pc.failures
    assert pc.program is not None and pc.program_bit_identical and pc.program.exact_match
