"""TT-Metal's multi-core matmul (`dataflow = multi_core`): MatmulMultiCoreProgramFactory, ttnn 0.81.1.

The expected values are TT-Metal's, written here from its sources (tenstorrent/tt-metal, the factory as
the 0.81.1 wheel binds it; the kernels are the wheel's own):

- matmul_multicore_program_factory.cpp (`create_program_artifacts`): `num_output_tiles_total = B * Mt *
  Nt` split by `split_work_to_cores(compute_with_storage_grid_size, num_output_tiles_total)`; core i =
  `{i / num_cores_y, i % num_cores_y}` takes `num_tiles_written` as its `output_tile_start_id` / `start_id`
  and its group's count as `num_output_tiles` / `num_pages`; reader RTAs Mt, Kt, Nt, MtKt, KtNt, batch
  (in0's), bcast_B, output_tile_start_id, num_output_tiles, MtNt; reader CTAs in0_last_ktile_w = logical K
  % 32, in0_last_ktile_h = 0; CBs in0, in1, out of 2 tiles each; one compute kernel per core group with
  CTAs batch = 1, Mt = 1, Kt, Nt = the group's tiles per core; TT_FATAL "Bias is not supported for
  matmul multi core".
- tt_metal/common/work_split.cpp `split_work_to_cores`: fewer units than cores: `units` cores of one
  each; otherwise the whole grid, the first `units % cores` with one more.
- reader_bmm_8bank_output_tiles_partitioned(_metal2).cpp: per output tile, Kt pairs of reads, in0 from
  `itileA = start / Nt * Kt`, in1 from `itileB = start % Nt (+ start / MtNt * KtNt unless bcast_B)`, its
  pointer walk simulated in :func:`tt_reader_pages` below.
- normalize_program_config: a MatmulMultiCoreProgramConfig's allowed_worker_cores is the device's grid.
"""

from __future__ import annotations

import math

import pytest

from kgen.core.errors import KgenError
from kgen.gen import dataflow as dataflows
from kgen.gen.dataflow.multi_core import row_pieces, runs, split_work_to_cores
from kgen.gen.ir import Loop
from kgen.gen.pipeline import run
from kgen.gen.plan import CB_IN0, CB_IN1, CB_OUT, plan
from kgen.gen.spec import parse_text, resolve


def make(shape="96 x 160 x 96", grid="2 x 2", arch="wormhole_b0", batch="1", extra=""):
    return resolve(parse_text(f"""matmul mc {{
    arch = {arch}
    shape = {shape}
    batch = {batch}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}
    dataflow = multi_core
    {extra}
}}""", "mc.kspec"))


def tt_split(cores: int, units: int) -> list[tuple[int, int]]:
    """(start, tiles) per core, TT's rule written out: per = units // cores, the first units % cores one more."""
    n = min(cores, units)
    per, extra = divmod(units, n)
    out, start = [], 0
    for i in range(n):
        tiles = per + (i < extra)
        out.append((start, tiles))
        start += tiles
    return out


def tt_reader_pages(start, count, mt, kt, nt, bcast) -> list[tuple[int, int]]:
    """TT's reader's (in0 page, in1 page) sequence, by its own pointer arithmetic."""
    mtnt, ktnt = mt * nt, kt * nt
    a = start // nt * kt
    outbatch, b_batch = start % mtnt, start % nt
    b = b_batch + (0 if bcast else start // mtnt * ktnt)
    pages = []
    for _ in range(count):
        for _ in range(kt):
            pages.append((a, b))
            a += 1
            b += nt
        outbatch += 1
        b_batch += 1
        b -= ktnt
        b += 1
        if b_batch == nt:
            b_batch = 0
            b -= nt
            if outbatch == mtnt:
                if not bcast:
                    b += ktnt
                outbatch = 0
        else:
            a -= kt
    return pages


def ir_pages(body, kinds=("read_tiles",), env=None) -> list:
    """The pages kgen's kernel reads (or writes), in order, by running its loops."""
    env = dict(env or {})
    out = []
    for n in body:
        if isinstance(n, Loop):
            for v in range(n.start, n.stop):
                out += ir_pages(n.body, kinds, {**env, n.var: v})
        elif n.kind in kinds:
            out.append((n["tensor"], n["start"].eval(env)))
    return out


@pytest.mark.parametrize("grid,units,expect", [
    ((2, 2), 15, (4, 3, 4, 3)),           # uneven: three cores of 4, one of 3
    ((2, 2), 3, (3, 3, 1, 0)),            # fewer tiles than cores: one each
    ((8, 8), 5376, (64, 64, 84, 0)),      # Gemma's MLP, corpus i56976: 84 each
    ((4, 2), 15, (8, 7, 2, 1)),
])
def test_the_work_split_is_split_work_to_cores(grid, units, expect):
    s = split_work_to_cores(grid, units)
    assert (s.cores, s.group_1, s.tiles_1, s.tiles_2) == expect
    assert [s.run(i) for i in range(s.cores)] == tt_split(grid[0] * grid[1], units)


def test_a_run_of_cores_is_at_most_two_rectangles():
    # cores 3..7 of a row-major numbering 4 wide: the rest of row 0, then row 1
    assert [(r.x0, r.y0, r.x1, r.y1, r.count) for r in runs(3, 8, 4)] == [(3, 0, 3, 0, 0), (0, 1, 3, 1, 0)]
    assert [(r.x0, r.y0, r.x1, r.y1, r.count) for r in runs(0, 6, 4)] == [(0, 0, 3, 1, 6)]
    # a batched in1's run never crosses a batch in one loop nest: rows 1..3 of 2-row batches split at row 2
    assert row_pieces(3, 14, 3, 2) == ((1, 2, 0, 3), (2, 4, 0, 3), (4, 5, 0, 2))


def test_the_plan_is_the_factorys_cbs_and_one_tile_at_a_time():
    p = plan(make(extra="compute { fp32_dest_acc = true }"))
    assert {c.index: c.pages for c in p.cbs if c.index in (CB_IN0, CB_IN1, CB_OUT)} == {CB_IN0: 2, CB_IN1: 2, CB_OUT: 2}
    assert (p.per_core_m, p.per_core_n, p.out_block_h, p.out_block_w) == (1, 1, 1, 1)
    assert p.in0_block_w == p.kt == 3 and p.num_blocks == 1 and not p.l1_acc_enabled   # all of K in DST
    assert not any(c.unpack_to_dest for c in p.cbs)          # in0, in1 UnpackToSrc; no partials to reload
    assert p.num_cores == 4 and p.grid_requested == (2, 2)


@pytest.mark.parametrize("shape,grid,batch,extra", [
    ("96 x 160 x 96", "2 x 2", "1", ""),                              # 15 tiles over 4 cores: 4, 4, 4, 3
    ("64 x 96 x 64", "4 x 2", "3", ""),                                # 18 tiles (batch fused) over 8
    ("64 x 96 x 96", "3 x 1", "2", "broadcast_in1 = false"),          # one in1 per batch, 12 over 3
    ("32 x 64 x 64", "4 x 2", "2", "broadcast_in1 = false"),          # 4 tiles, 8 cores: 4 work
])
def test_each_core_reads_and_writes_what_tts_kernels_do(shape, grid, batch, extra):
    spec = make(shape, grid, batch=batch, extra=extra)
    v = run(spec, "verified").verified
    p = plan(spec)
    m, n, k = (int(x) for x in shape.split(" x "))
    b = int(batch)
    mt, nt, kt = math.ceil(m / 32), math.ceil(n / 32), math.ceil(k / 32)
    gx, gy = (int(x) for x in grid.split(" x "))
    split = tt_split(gx * gy, b * mt * nt)
    bcast = "broadcast_in1 = false" not in extra
    written = []
    for j, (start, count) in enumerate(split):
        core = (j % gx, j // gx)          # kgen's core j takes TT's core j's run
        reader, writer = v.kernel(f"reader_{j}"), v.kernel(f"writer_{j}")
        assert reader.runs_on(core) and writer.runs_on(core)
        pages = ir_pages(reader.body)
        in0 = [pg for t, pg in pages if t == "in0"]
        in1 = [pg for t, pg in pages if t == "in1"]
        assert list(zip(in0, in1)) == tt_reader_pages(start, count, mt, kt, nt, bcast)
        out = [pg for _, pg in ir_pages(writer.body, ("write_tiles",))]
        assert out == list(range(start, start + count))
        written += out
    assert sorted(written) == list(range(b * mt * nt))       # every output tile once
    # one compute kernel per rectangle of a group: CTAs batch = Mt = 1, Kt, Nt = the group's tiles per core
    computes = [kk for kk in v.kernels if kk.processor == "TRISC"]
    for kk in computes:
        cta = dict(kk.compile_time_args)
        assert (cta["batch"], cta["Mt"], cta["Kt"]) == (1, 1, kt)
        for x, y in kk.cores.cores():
            assert cta["Nt"] == split[y * gx + x][1]
    assert sum(kk.cores.size for kk in computes) == len(split) == p.num_cores


def test_tts_program_gets_the_factorys_args():
    spec = make("64 x 96 x 80", "4 x 2", batch="2", extra="broadcast_in1 = false")
    a = run(spec, "rendered")
    p = a.plan
    prog = p.dataflow.tt_program(p, a.rendered.manifest, {})
    mt, kt, nt = 2, 3, 3
    split = tt_split(8, 2 * mt * nt)
    for j, (start, count) in enumerate(split):
        r = prog.kernels[f"reader_{j}"]
        assert r.source == "reader_bmm_8bank_output_tiles_partitioned_metal2.cpp"
        assert dict(r.named_cta) == {"in0_last_ktile_w": 80 % 32, "in0_last_ktile_h": 0}
        (core, named, _), = r.runtime
        assert core == (j % 4, j // 4)
        assert named == {"Mt": mt, "Kt": kt, "Nt": nt, "MtKt": mt * kt, "KtNt": kt * nt, "batch": 2, "bcast_B": 0,
                         "output_tile_start_id": start, "num_output_tiles": count, "MtNt": mt * nt}
        w = prog.kernels[f"writer_{j}"]
        assert w.source == "writer_unary_interleaved_start_id.cpp" and w.rta_names == ("num_pages", "start_id")
        assert w.runtime[0][1] == {"num_pages": count, "start_id": start}
    computes = [prog.compute, *prog.computes.values()]
    assert {c.source for c in computes} == {"bmm_metal2.cpp"}
    assert sorted(dict(c.named_cta)["Nt"] for c in computes) == [1, 2]     # 12 tiles over 8: 4 of 2, 4 of 1
    assert all(dict(c.dfbs) == {"in0": CB_IN0, "in1": CB_IN1, "out": CB_OUT} for c in computes)


@pytest.mark.parametrize("extra,words", [
    ("fuse { bias = true }", "Bias is not supported for matmul multi core"),
    ("untilize_out = true", "writes tiles"),
    ("block { per_core = 2 x 2 }", "one output tile at a time"),
    ("block { in0_block_w = 1 }", "all Kt = 3 K tiles"),
    ("fuse { activation = relu }", "fuses no activation"),
    ("transpose_b = true", "reads A and B as stored"),
])
def test_what_the_factory_does_not_run_is_refused_with_its_rule(extra, words):
    with pytest.raises(KgenError) as err:
        plan(make(extra=extra))
    assert words in str(err.value) + " " + str(getattr(err.value, "hint", ""))


def test_fuzz_and_tune_do_not_draw_blocks_of_it():
    from kgen.perf.tune.space import DATAFLOWS
    assert "multi_core" in dataflows.NAMES
    assert "multi_core" not in dataflows.GRID_2D and "multi_core" not in dataflows.ONE_D
    assert "multi_core" not in DATAFLOWS


def test_the_model_prices_the_reads_of_every_tile():
    """The factory reads every in0 and in1 tile of a row and column once per output tile, each behind its
    own barrier: a core's time grows with its tiles times Kt, and the critical core is a group-1 core."""
    from kgen.perf.model import predict

    small = predict(run(make("64 x 64 x 256", "2 x 2"), "verified").verified)        # 4 tiles, 1 each
    big = predict(run(make("64 x 128 x 256", "2 x 2"), "verified").verified)         # 8 tiles, 2 each
    assert 1.6 < big.cycles / small.cycles < 2.4
    assert big.critical_core == (0, 0) and 0 < big.tflops


# ----------------------------------------------------------------------------------------------
# Proof: kgen's program bit-exact against the golden model, TT's own kernels bit-identical to it
# ----------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("arch,shape,grid,batch,extra", [
    ("wormhole_b0", "96 x 160 x 96", "2 x 2", "1", ""),                               # uneven split
    ("blackhole", "96 x 160 x 96", "4 x 2", "1", ""),                                 # group 2: one core
    ("wormhole_b0", "64 x 96 x 64", "2 x 2", "3", ""),                                # batch, in1 broadcast
    ("blackhole", "64 x 96 x 96", "3 x 1", "2", "broadcast_in1 = false"),             # one in1 per batch
    ("wormhole_b0", "50 x 64 x 80", "4 x 2", "2",                                     # K, M padded; L1; fp32
     "broadcast_in1 = false\n    memory { in0 = l1  out = l1 }\n"
     "    compute { math_fidelity = HiFi4  fp32_dest_acc = true }"),
])
def test_port_check_runs_tts_kernels_bit_identical(host_cxx, host_toolchain, tmp_path, arch, shape, grid, batch,
                                                    extra):
    from kgen.gen.build import build
    from kgen.proof.portcheck import port_check

    spec = make(shape, grid, arch, batch, extra)
    p = plan(spec)
    pc = port_check(build(spec, tmp_path).path, p, seed=5)
    assert pc.passed, pc.failures
    assert pc.ours.exact_match and pc.bit_identical and pc.reference.name == "bmm.cpp"
    assert pc.program is not None and pc.program_bit_identical and pc.program.exact_match
    assert not pc.dataflow_differences() and not pc.differences()      # the same ops, count for count


CORPUS_CASE = """matmul t_matmul_2658f50cb2 {{
    arch = {arch}
    shape = 1 x 64 x 24
    dataflow = auto
    batch = 1 x 12
    broadcast_in1 = false
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    memory {{ in0 = l1 }}
    compute {{ math_fidelity = HiFi4  fp32_dest_acc = true  packer_l1_acc = false  math_approx = false }}
}}
"""


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
def test_a_corpus_case_through_auto_is_tts_multi_core_program(host_cxx, host_toolchain, tmp_path, arch):
    """benchmarks/tt_corpus.py's traced case t_matmul_2658f50cb2 (12 heads of 1 x 24 @ 24 x 64, in0 in L1):
    create_simple_matmul_program_config's blocks do not fit its branches, so ttnn.matmul runs
    MatmulMultiCoreProgramConfig; 24 output tiles over the device grid, one each."""
    from kgen.gen.build import build
    from kgen.proof.portcheck import port_check

    spec = resolve(parse_text(CORPUS_CASE.format(arch=arch), "c.kspec"))
    p = plan(spec)
    assert p.spec.dataflow == "multi_core" and p.num_cores == 24 and p.batch_ct == 12
    assert any("MatmulMultiCoreProgramConfig" in line for line in p.tt_choice)
    pc = port_check(build(spec, tmp_path).path, p, seed=1)
    assert pc.passed, pc.failures
    assert pc.ours.exact_match and pc.program_bit_identical and pc.program.exact_match


@pytest.mark.slow
@pytest.mark.parametrize("arch,extra", [("wormhole_b0", ""),
                                        ("blackhole", "broadcast_in1 = false\n    compute { fp32_dest_acc = true }")])
def test_build_check_type_checks_every_kernel(host_toolchain, tmp_path, capsys, arch, extra):
    """kgen's readers, writers and per-group compute kernels compile against the 0.81.1 headers."""
    from kgen.cli import main

    path = tmp_path / "mc.kspec"
    path.write_text(f"""matmul mc {{
    arch = {arch}
    shape = 64 x 96 x 80
    batch = 2
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = 4 x 2
    dataflow = multi_core
    {extra}
}}
""")
    rc = main(["build", "--check", str(path), "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert rc == 0, out
    # 12 output tiles over 8 cores: 8 readers, 8 writers, a compute kernel per group (4 of 2, 4 of 1), each
    # built for its three TRISC threads
    assert "type-checked 22 kernel builds" in out, out
