"""One candidate of `kgen tune`'s search (TuneConfig), the spec's tile counts (which its per_core
divides, or pads), and what evaluating it gave (Outcome, Scored): the values the search (space.py,
search.py), the database (kgen/perf/tunedb.py) and the command share."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace

from kgen.gen.plan import round_up_tiles
from kgen.gen.spec import BlockSpec, MatmulSpec, MemorySpec, ShardGiven


def batched_in1(spec: MatmulSpec) -> bool:
    """One in1 per batch: the kernels loop over the batch, Mt is one batch's."""
    return not spec.broadcast_in1 and spec.batch > 1


def tiles(spec: MatmulSpec) -> tuple[int, int, int]:
    """Mt, Nt, Kt as the planner counts them: a shape short of whole tiles is padded up (ttnn's tilize);
    the batch fused into M unless in1 holds one matrix per batch."""
    return ((1 if batched_in1(spec) else spec.batch) * round_up_tiles(spec.m), round_up_tiles(spec.n),
            round_up_tiles(spec.k))


SHARD_FIELDS = ("in0_shard", "out_shard")


def _memory_of(d: dict) -> MemorySpec:
    """A MemorySpec from TuneConfig.key()'s json (its shard specs as [[height, width], [x, y]])."""
    shards = {k: ShardGiven(tuple(d[k][0]), tuple(d[k][1])) for k in SHARD_FIELDS if d.get(k) is not None}
    return MemorySpec(**{**d, **shards})


@dataclass(frozen=True, order=True)
class TuneConfig:
    """One point of the search space: every value the search may change."""

    grid: tuple[int, int]            # the grid written into the spec (x, y)
    per_core: tuple[int, int]        # M x N tiles
    out_block: tuple[int, int]       # h x w tiles
    in0_block_w: int
    out_subblock: tuple[int, int]    # h x w tiles
    packer_l1_acc: bool              # the request; the planner decides the policy
    dataflow: str
    math_fidelity: str
    fp32_dest_acc: bool
    memory: MemorySpec = MemorySpec()  # where the tensors live: not searched, but part of the program

    def key(self) -> str:
        """Canonical text of the config: the database's per-target key (json of asdict(self), built
        without asdict's deep copies: a search asks it of every candidate)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["memory"] = {f.name: getattr(self.memory, f.name) for f in fields(self.memory)}
        for name in SHARD_FIELDS:               # a shard spec the spec gives: [[height, width], [x, y]]
            if values["memory"].get(name) is not None:
                values["memory"][name] = [list(values["memory"][name].shape), list(values["memory"][name].grid)]
        return json.dumps(values, sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_key(text: str) -> "TuneConfig":
        d = json.loads(text)
        return TuneConfig(grid=tuple(d["grid"]), per_core=tuple(d["per_core"]), out_block=tuple(d["out_block"]),
                         in0_block_w=d["in0_block_w"], out_subblock=tuple(d["out_subblock"]),
                         packer_l1_acc=d["packer_l1_acc"], dataflow=d["dataflow"],
                         math_fidelity=d["math_fidelity"], fp32_dest_acc=d["fp32_dest_acc"],
                         memory=_memory_of(d["memory"]) if "memory" in d else MemorySpec())

    def padded(self, spec: MatmulSpec) -> bool:
        """per_core does not divide the tiles: the last row/column of cores gets TT's padded last block."""
        mt, nt, _ = tiles(spec)
        return mt % self.per_core[0] != 0 or nt % self.per_core[1] != 0

    def apply(self, spec: MatmulSpec) -> MatmulSpec:
        """The spec with this candidate's values (a padded per_core is the planner's to pad)."""
        compute = replace(spec.compute, packer_l1_acc=self.packer_l1_acc, math_fidelity=self.math_fidelity,
                          fp32_dest_acc=self.fp32_dest_acc)
        block = BlockSpec(in0_block_w=self.in0_block_w, out_subblock=self.out_subblock, per_core=self.per_core,
                          out_block=self.out_block)
        return replace(spec, grid=self.grid, dataflow=self.dataflow, block=block, compute=compute, variant=None,
                       memory=self.memory)

    def short(self, policy: str | None = None) -> str:
        """One line; `policy` is the planner's (spill_reload, packer_l1_acc, dst_only) where it is known,
        else the request is shown (l1acc on/off: with one K-block, neither spills)."""
        accumulation = policy or ("l1acc" if self.packer_l1_acc else "l1acc off")
        return (f"grid {self.grid[0]}x{self.grid[1]} per_core {self.per_core[0]}x{self.per_core[1]} "
                f"block {self.out_block[0]}x{self.out_block[1]} w {self.in0_block_w} "
                f"sb {self.out_subblock[0]}x{self.out_subblock[1]} {accumulation} "
                f"{self.dataflow} {self.math_fidelity}{' fp32' if self.fp32_dest_acc else ''}"
                + (f" memory in0={self.memory.in0} in1={self.memory.in1} out={self.memory.out}"
                   if self.memory.sharded else ""))


@dataclass(frozen=True)
class Scored:
    """A legal candidate and its prediction."""

    candidate: TuneConfig
    microseconds: float
    cycles: float
    tflops: float
    utilization: float
    bottleneck: str
    policy: str
    reused: bool = False             # taken from the database, not predicted in this run


@dataclass(frozen=True)
class Outcome:
    """What evaluating one candidate gave: a prediction, or the planner's rejection."""

    candidate: TuneConfig
    status: str                      # predicted | illegal | duplicate
    scored: Scored | None = None
    error: str = ""
