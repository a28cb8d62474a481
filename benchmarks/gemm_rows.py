"""TT's published GEMM measurements (benchmarks/data/, transcribed from tt-metal's
tech_reports/GEMM_FLOPS/GEMM_FLOPS.md @06bd3735; SOURCES.md) and the program config of every
manually tuned row, reproduced from the benchmark's parameter table (test_benchmark.py @beafc1a1,
test_matmul_2d_host_perf; TEST_BENCHMARK.md) as a kgen spec.

    rows(card, kind)   -> the table's rows: card n150 | p150 | p150_11x10, kind manual | oob
    manual_config(row) -> TT's program and compute config for a manual row (grid, blocks, subblock, policy)
    manual_spec(row)   -> that config as .kspec text that `kgen check` / `kgen perf` take, with the
                          row's real placement (`memory {}`) and every compute field as TT ran it
    oob_spec(row)      -> an out-of-box row as .kspec text without a program config (TT's library
                          chose it), every compute field stated as ttnn.matmul's default of the time
    stand_in_placement(row) -> the old diagnostic only: the DRAM program with the sharded reads and
                          writes priced at zero (never a published figure)

The benchmark's derivation is restated here on purpose, as the benchmark's own rule: it is what
TT ran, not kgen's planner (which only checks the result).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CARDS = ("n150", "p150", "p150_11x10")
KINDS = ("manual", "oob")
CARD_ARCH = {"n150": "wormhole_b0", "p150": "blackhole", "p150_11x10": "blackhole"}
# The clock the benchmark converts time to cycles with (hard-coded in test_benchmark.py; TEST_BENCHMARK.md).
CARD_MHZ = {"n150": 1000, "p150": 1350, "p150_11x10": 1350}
CYCLES_PER_TILE = {"LoFi": 16, "HiFi2": 32, "HiFi3": 48, "HiFi4": 64}
KGEN_DTYPE = {"BFLOAT16": "bfloat16", "BFLOAT8_B": "bfloat8_b", "BFLOAT4_B": "bfloat4_b", "FLOAT32": "float32"}
TILE = 32

# test_benchmark.py's subblock preference, (h, w), largest h*w first (TT-Metal's SUBBLOCK_HW_CHOICES order).
_SUBBLOCKS = ((4, 2), (2, 4), (8, 1), (1, 8), (7, 1), (1, 7), (3, 2), (2, 3), (6, 1), (1, 6), (5, 1), (1, 5),
              (2, 2), (4, 1), (1, 4), (3, 1), (1, 3), (2, 1), (1, 2), (1, 1))


@dataclass(frozen=True)
class Row:
    card: str
    kind: str
    index: int                    # row number in the table, from 0
    m: int
    k: int
    n: int
    use_trace: bool
    grid: tuple[int, int]         # (x columns, y rows)
    in0_storage: str
    in1_storage: str
    out_storage: str
    dtype: str                    # BFLOAT16 | BFLOAT8_B | BFLOAT4_B
    math_fidelity: str
    inference_time_ns: float      # host-measured time per op (100 ops, trace or not)
    tflops: float
    host_util_pct: float
    device_util_pct: float        # ideal cycles / mean TRISC1 kernel duration, in %
    in0_sharded: bool = False
    out_sharded: bool = False

    @property
    def arch(self) -> str:
        return CARD_ARCH[self.card]

    @property
    def ideal_cycles(self) -> float:
        """TT's ideal: M*K*N / 32^3 tile products at the fidelity's cycles per tile over the row's grid."""
        gx, gy = self.grid
        return self.m * self.k * self.n / TILE ** 3 * CYCLES_PER_TILE[self.math_fidelity] / (gx * gy)

    @property
    def device_cycles(self) -> float:
        """The measured mean TRISC1 kernel duration, back from the device-based utilization."""
        return self.ideal_cycles / (self.device_util_pct / 100)

    @property
    def label(self) -> str:
        shard = " sharded" if self.in0_sharded else ""
        return (f"{self.m}x{self.k}x{self.n} {self.dtype.lower()} {self.math_fidelity}"
                f"{' trace' if self.use_trace else ''}{shard}")


def _bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError(f"not true/false: {text!r}")
    return text == "true"


@cache
def rows(card: str, kind: str) -> tuple[Row, ...]:
    if card not in CARDS or kind not in KINDS:
        raise ValueError(f"card must be one of {CARDS} and kind one of {KINDS}")
    out = []
    with open(DATA / f"gemm_flops_{card}_{kind}.csv", newline="") as f:
        for i, r in enumerate(csv.DictReader(f)):
            out.append(Row(
                card=card, kind=kind, index=i, m=int(r["m"]), k=int(r["k"]), n=int(r["n"]),
                use_trace=_bool(r["use_trace"]), grid=(int(r["grid_x"]), int(r["grid_y"])),
                in0_storage=r["in0_storage"], in1_storage=r["in1_storage"], out_storage=r["out_storage"],
                dtype=r["dtype"], math_fidelity=r["math_fidelity"], inference_time_ns=float(r["inference_time_ns"]),
                tflops=float(r["tflops"]), host_util_pct=float(r["host_util_pct"]),
                device_util_pct=float(r["device_util_pct"]),
                in0_sharded=_bool(r.get("in0_sharded") or "false"), out_sharded=_bool(r.get("out_sharded") or "false")))
    return tuple(out)


@dataclass(frozen=True)
class ManualConfig:
    """TT's MatmulMultiCoreReuseMultiCastProgramConfig and compute config for one manual row."""
    grid: tuple[int, int]
    in0_block_w: int
    per_core: tuple[int, int]     # (M, N) tiles
    out_block: tuple[int, int]    # (h, w) tiles
    out_subblock: tuple[int, int]  # (h, w) tiles
    in0_sharded: bool
    out_sharded: bool
    # WormholeComputeKernelConfig of the benchmark (TEST_BENCHMARK.md): fp32 dest off, packer L1
    # accumulation on, approximate math on, dst_full_sync left at its default (off).
    packer_l1_acc: bool = True
    fp32_dest_acc: bool = False
    math_approx: bool = True


@cache
def _param_table() -> dict[tuple[str, int, int, int], dict[str, str]]:
    """The benchmark's per-core shape tuples, keyed by (dtype, m, k, n) per core."""
    table: dict[tuple[str, int, int, int], dict[str, str]] = {}
    with open(DATA / "test_benchmark_params.csv", newline="") as f:
        for r in csv.DictReader(f):
            key = (r["dtype"], int(r["m"]), int(r["k"]), int(r["n"]))
            if key in table:
                raise ValueError(f"two parameter tuples for {key}")
            table[key] = r
    return table


def _subblock(out_block_h: int, out_block_w: int, out_sharded: bool) -> tuple[int, int]:
    for h, w in _SUBBLOCKS:
        if out_sharded and h != 1:       # a sharded output is written row by row of subblocks
            continue
        if out_block_h % h == 0 and out_block_w % w == 0:
            return h, w
    return 1, 1


def manual_config(row: Row) -> ManualConfig:
    if row.kind != "manual":
        raise ValueError("only the manually tuned rows have a program config")
    gx, gy = row.grid
    # The tuples are per core: M = m * gy, K = k * gx, N = n * gx.
    m, k, n = row.m // gy, row.k // gx, row.n // gx
    p = _param_table()[(row.dtype, m, k, n)]
    if _bool(p["in0_sharded"]) != row.in0_sharded or _bool(p["out_sharded"]) != row.out_sharded:
        raise ValueError(f"row {row.index} of {row.card}: sharding differs from its parameter tuple")
    per_core_m, per_core_n = m // TILE, n // TILE
    in0_block_w = k // TILE // int(p["in0_block_w_div"])
    out_h, out_w = per_core_m // int(p["num_out_blocks_h"]), per_core_n // int(p["num_out_blocks_w"])
    return ManualConfig(grid=row.grid, in0_block_w=in0_block_w, per_core=(per_core_m, per_core_n),
                        out_block=(out_h, out_w), out_subblock=_subblock(out_h, out_w, row.out_sharded),
                        in0_sharded=row.in0_sharded, out_sharded=row.out_sharded)


def memory_line(c: ManualConfig) -> str:
    """Where TT's benchmark placed the row's tensors, as a kgen `memory {}` line: in0 and the output
    block-sharded in L1 where the row says so (test_benchmark.py's in0_sharded / out_sharded), in1
    always interleaved in DRAM."""
    in0 = "l1_block_sharded" if c.in0_sharded else "dram"
    out = "l1_block_sharded" if c.out_sharded else "dram"
    return f"in0 = {in0}  in1 = dram  out = {out}"


def manual_spec(row: Row, name: str | None = None) -> str:
    """TT's manual config of a row as kgen spec text (kgen's shape is M x N x K), printed by
    kgen.gen.spec_print: the 2D multicast program, the row's placement (memory_line's), every block
    field and every compute field written out, the compute config under the name an inline block
    resolves to (TTNN's default struct's, overridden field by field)."""
    from kgen.core.types import Placement
    from kgen.gen import dataflow as dataflows
    from kgen.gen.spec import DEFAULT_COMPUTE, BlockSpec, ComputeConfig, MatmulSpec, MemorySpec
    from kgen.gen.spec_print import format_spec

    c = manual_config(row)
    dt = KGEN_DTYPE[row.dtype]
    name = name or f"gemm_{row.card}_{row.index}"
    # where TT's benchmark placed the tensors (memory_line's words): in0 and the output block-sharded
    # in L1 where the row says so, in1 interleaved in DRAM
    in0 = Placement.L1_BLOCK_SHARDED if c.in0_sharded else Placement.DRAM
    out = Placement.L1_BLOCK_SHARDED if c.out_sharded else Placement.DRAM
    compute = ComputeConfig(math_fidelity=row.math_fidelity, fp32_dest_acc=c.fp32_dest_acc,
                            packer_l1_acc=c.packer_l1_acc, math_approx=c.math_approx, dst_full_sync=False,
                            preset=DEFAULT_COMPUTE)
    spec = MatmulSpec(name=name, path=f"<{name}>", arch=row.arch, m=row.m, n=row.n, k=row.k, batch=1,
                      dtype_in0=dt, dtype_in1=dt, dtype_out=dt, dtype_bias=dt, grid=c.grid,
                      dataflow=dataflows.MCAST_2D.name,
                      block=BlockSpec(in0_block_w=c.in0_block_w, out_subblock=c.out_subblock, per_core=c.per_core,
                                      out_block=c.out_block),
                      compute=compute, fuse_bias=False, activation="none", untilize_out=False, variant=None,
                      variants=(), spans={}, memory=MemorySpec(in0=in0, in1=Placement.DRAM, out=out))
    return format_spec(spec)


# ttnn.matmul's compute config when it is given none, as the out-of-box rows ran (the document's
# fidelity labels: bfloat16 -> HiFi2, bfloat8_b and bfloat4_b -> LoFi; TEST_BENCHMARK.md): fp32 dest off,
# packer L1 accumulation on and approximate math off for a non-fp32 output (create_matmul_attributes).
OOB_COMPUTE = {"fp32_dest_acc": False, "packer_l1_acc": True, "math_approx": False, "dst_full_sync": False}


def oob_spec(row: Row, name: str | None = None) -> str:
    """An out-of-box row as kgen spec text: DRAM-interleaved tensors, no grid or block (TT's library
    chose them: kgen.perf.ttchoice.tt_auto reconstructs the choice), and every compute field stated,
    so that a change of kgen's own defaults does not change the row."""
    if row.kind != "oob":
        raise ValueError("only the out-of-box rows run TT's automatic config")
    dt = KGEN_DTYPE[row.dtype]
    fields = "\n".join(f"        {k} = {str(v).lower()}" for k, v in OOB_COMPUTE.items())
    return f"""matmul {name or f"oob_{row.card}_{row.index}"} {{
    arch = {row.arch}
    shape = {row.m} x {row.n} x {row.k}
    dtype {{ in0 = {dt}  in1 = {dt}  out = {dt} }}
    memory {{ in0 = dram  in1 = dram  out = dram }}
    compute {{
        math_fidelity = {row.math_fidelity}
{fields}
    }}
}}
"""


def stand_in_placement(row: Row) -> dict[str, str]:
    """DIAGNOSTIC ONLY: the placement override that prices the DRAM program's in0 reads and output
    writes at zero where the row had them block-sharded in L1. The validation predicts the real
    sharded programs (manual_spec writes their `memory {}` line); this stays to compare against."""
    out: dict[str, str] = {}
    if row.in0_sharded:
        out["in0"] = "sharded"
    if row.out_sharded:
        out["out"] = "sharded"
    return out


# The old name, for callers not yet moved to the real programs (the same diagnostic override).
placement = stand_in_placement
