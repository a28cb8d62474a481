"""The emulator's DRAM banks for TT-Metal's DRAM-sharded matmul: in1's shard i (all of K, per_core_N
columns, tile rows back to back) lives in DRAM bank i at the tensor's address (ttnn's WIDTH_SHARDED
DRAM buffer, ROW_MAJOR over the banks), bank i pairs with worker i, and a read of a core's own bank
is priced at that bank's share of the card: 288 GB/s x 92 % / 12 banks on Wormhole B0, 512 GB/s x
98 % / 8 on Blackhole, each no more than one core's NoC read rate (configs/perf)."""

from __future__ import annotations

import json

import pytest

from kgen.core.costs import load_costs
from kgen.gen.build import build
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve

SPEC = """matmul t {
    arch = %s
    shape = 64 x %d x 512
    dtype { in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }
    dataflow = dram_sharded
    memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }
    block { in0_block_w = 2 }
}"""


@pytest.mark.parametrize("arch,banks,share", [("wormhole_b0", 12, 288e9 * 0.92 / 12 / 1e9),
                                              ("blackhole", 8, 512e9 * 0.98 / 8 / 1.35e9)])
def test_bank_local_rate_is_the_banks_share(arch, banks, share):
    c = load_costs(arch)
    assert c.dram_bank_read_bytes_per_cycle() == pytest.approx(min(share, c.dram.read_bytes_per_cycle))


def _program_lines(spec, tmp_path):
    """The spec's build folder and the emulator's program file for it, line by line."""
    from kgen.proof.emulate import build_program, kernel_builds, make_inputs, require_host_compiler

    p = plan(spec)
    folder = build(spec, tmp_path).path
    manifest = json.loads((folder / "manifest.json").read_text())
    work = tmp_path / "work"
    work.mkdir()
    prog = build_program(manifest, p.arch, kernel_builds(folder, p.arch, require_host_compiler()), numerics="exact",
                         workdir=work, inputs=make_inputs(manifest, 0), plan=p)
    return p, folder, prog.text.splitlines()


def test_in1_shards_live_in_their_banks_and_emulate_bit_exact(host_cxx, tmp_path):
    from kgen.proof.emulate import emulate_folder

    nt, banks = 24, 12                                   # 2 tiles per bank, 12 workers
    p, folder, lines = _program_lines(resolve(parse_text(SPEC % ("wormhole_b0", nt * 32), "t.kspec")), tmp_path)
    shards = [ln.split() for ln in lines if ln.startswith("dram_shard_input ")]
    # one shard per bank: Kt = 16 rows of 2 bfloat8_b tiles (1088 B), at the same address in every bank
    assert [int(s[1]) for s in shards] == list(range(banks))
    assert {int(s[3]) for s in shards} == {16 * 2 * 1088} and len({s[2] for s in shards}) == 1
    assert not any(ln.startswith("input ") and "in1" in ln for ln in lines)      # no interleaved copy
    # bank i pairs with worker i: the core holding output shard i (row-major over the 6 x 2 workers)
    cores = {tuple(map(int, ln.split()[2:4])): int(ln.split()[1]) for ln in lines if ln.startswith("core ")}
    workers = [int(ln.split()[2]) for ln in lines if ln.startswith("bank_worker ")]
    assert workers == [cores[(i % 6, i // 6)] for i in range(banks)]
    e = emulate_folder(folder, p, seed=1)
    assert e.status == "ok" and e.exact_match and not e.hazards


def test_a_padded_last_shard_lives_whole_in_its_bank_and_emulates_bit_exact(host_cxx, tmp_path):
    # Nt = 26 over Wormhole's 12 banks: ttnn's shard is ceil(26 / 12) = 3 tiles wide; 3 x 12 - 26 = 10
    # tiles of padding hold 10 // 3 = 3 whole banks, which the factory drops ("padding-only DRAM banks"):
    # 9 workers, each reading div_up(26, 9) = 3 tiles a K row; bank 8's shard holds 26 - 8 x 3 = 2 real
    # columns and one of padding, laid out at the full shard shape (rows of 3 tiles), as ttnn allocates it
    from kgen.proof.emulate import emulate_folder

    nt, kt, width, workers, page = 26, 16, 3, 9, 1088
    p, folder, lines = _program_lines(resolve(parse_text(SPEC % ("wormhole_b0", nt * 32), "t.kspec")), tmp_path)
    assert (p.per_core_n, p.num_cores, p.last_per_core_n) == (width, workers, 2)
    shards = [ln.split() for ln in lines if ln.startswith("dram_shard_input ")]
    assert [int(s[1]) for s in shards] == list(range(workers))
    assert {int(s[3]) for s in shards} == {kt * width * page}           # every shard whole, the last too
    last = (tmp_path / "work" / "in1_bank8.bin").read_bytes()
    rows = [last[r * width * page:(r + 1) * width * page] for r in range(kt)]
    assert all(r[2 * page:] == bytes(page) for r in rows)               # its third column: padding
    assert any(r[:2 * page] != bytes(2 * page) for r in rows)           # its first two: in1's data
    e = emulate_folder(folder, p, seed=1)
    assert e.status == "ok" and e.exact_match and not e.hazards


def test_the_emulator_shares_the_card_among_the_interleaved_readers_as_the_model_does(tmp_path):
    # 256^3 on an 8 x 8 Wormhole, TT's 2D factory: the first column's 8 cores read in0 and the first
    # row's 8 read in1 (8 tiles each), 16 readers at once against the card's 288 GB/s x 92 %: each
    # reading processor of each reading core runs at a 16th of it, in the emulator's cost table as
    # in kgen perf (Costs.dram_read_bytes_per_cycle, the IR's Program.dram_readers).
    spec = resolve(parse_text("""matmul t {
    arch = wormhole_b0
    shape = 256 x 256 x 256
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid = 8 x 8
    dataflow = mcast_2d
}""", "t.kspec"))
    _, _, lines = _program_lines(spec, tmp_path)
    cycles = next(ln.split()[1:] for ln in lines if ln.startswith("cycles "))
    table = dict(zip(cycles[::2], map(float, cycles[1::2])))
    shared = {k: v for k, v in table.items() if k.startswith("dram_read_bytes_per_cycle.")}
    assert len(shared) == 16 and {k.rsplit(".", 1)[1] for k in shared} == {"brisc", "ncrisc"}
    assert all(v == pytest.approx(288e9 * 0.92 / 1e9 / 16) for v in shared.values())
    assert table["dram_read_bytes_per_cycle"] == 22
