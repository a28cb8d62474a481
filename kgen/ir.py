"""The block-lifecycle IR: per kernel, an explicit tree of ops and counted loops.

The IR is the single source of truth: the verifier, the renderer and the emulator all read it.
Op arguments are ints, bools, names, or `Affine` expressions over loop variables and the core
coordinates (`core_x`, `core_y`), so per-core values (tile ids, multicast targets) stay symbolic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Union

from kgen.plan import Plan


@dataclass(frozen=True)
class Affine:
    """const + sum(coeff * var)."""

    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def of(const: int = 0, **terms: int) -> "Affine":
        return Affine(const, tuple((k, v) for k, v in terms.items() if v))

    def __add__(self, other: "Affine | int") -> "Affine":
        if isinstance(other, int):
            return Affine(self.const + other, self.terms)
        merged: dict[str, int] = dict(self.terms)
        for k, v in other.terms:
            merged[k] = merged.get(k, 0) + v
        return Affine(self.const + other.const, tuple((k, v) for k, v in merged.items() if v))

    def eval(self, env: Mapping[str, int]) -> int:
        return self.const + sum(c * env[v] for v, c in self.terms)

    def max_over(self, ranges: Mapping[str, int], env: Mapping[str, int] | None = None) -> int:
        """Largest value when each loop var v runs 0..ranges[v]-1 (vars in env are fixed)."""
        total = self.const
        for v, c in self.terms:
            if env is not None and v in env and v not in ranges:
                total += c * env[v]
            else:
                total += c * (ranges.get(v, 1) - 1) if c > 0 else 0
        return total

    def __str__(self) -> str:
        parts = [(v if c == 1 else f"{c}*{v}") for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


Arg = Union[int, bool, str, Affine, tuple]


# Every op kind with its argument names, in print order. Compute-kernel ops mirror TT-Metal 0.81.1's
# compute API calls; data-movement ops mirror the dataflow API. Lowering may only build these.
OP_KINDS: dict[str, tuple[str, ...]] = {
    # compute: init and reconfiguration
    "hw_startup": ("in0", "in1", "out"),                 # compute_kernel_hw_startup<SrcOrder::Reverse>
    "matmul_init": ("in0", "in1", "transpose", "ct", "rt", "kt"),
    "reconfig_srca": ("old", "new"),                     # reconfig_data_format_srca
    "reconfig_srcab": ("srca_old", "srca_new", "srcb_old", "srcb_new"),
    "pack_reconfig_format": ("cb",),                     # pack_reconfig_data_format
    "pack_l1_acc": ("enable",),                          # pack_reconfig_l1_acc
    "pack_relu": ("mode",),                              # pack_relu_config: none | zero
    "copy_init": ("cb",),
    "add_bcast_rows_init": ("a", "b"),
    "pack_untilize_init": ("cb", "block_ct", "full_ct"),
    "pack_untilize_uninit": ("cb",),
    # compute: DST protocol
    "tile_regs_acquire": (), "tile_regs_commit": (), "tile_regs_wait": (), "tile_regs_release": (),
    # compute: math and pack
    "matmul_block": ("in0", "in1", "in0_tile", "in1_tile", "dst", "transpose", "ct", "rt", "kt"),
    "copy_block": ("cb", "tile", "dst", "tiles"),       # reload partials -> DST
    "copy_tile": ("cb", "tile", "dst"),
    "add_bcast_rows": ("a", "b", "a_tile", "b_tile", "dst"),
    "pack_block": ("cb", "dst", "tiles"),
    "pack_tile": ("dst", "cb"),
    "pack_untilize_dest": ("cb", "block_ct", "full_ct", "rows", "block_index"),
    # CB protocol (all kernels)
    "cb_wait_front": ("cb", "tiles"), "cb_pop_front": ("cb", "tiles"),
    "cb_reserve_back": ("cb", "tiles"), "cb_push_back": ("cb", "tiles"),
    # data movement
    "read_tiles": ("tensor", "cb", "start", "rows", "cols", "row_stride"),   # DRAM -> CB write ptr
    "write_tiles": ("tensor", "cb", "start", "rows", "cols", "row_stride"),  # CB read ptr -> DRAM
    "write_rows": ("tensor", "cb", "tile_row", "tile_col", "width_tiles"),   # one untilized tile-row
    "noc_read_barrier": (), "noc_write_barrier": (),
    "sem_wait": ("sem", "value"),
    "sem_set": ("sem", "value"),
    "sem_inc": ("sem", "core_x", "core_y", "value"),                          # remote increment
    "mcast_cb": ("cb", "tiles", "x0", "y0", "x1", "y1", "num_dests"),         # local CB pages -> same pages
    "mcast_sem_set": ("sem", "value", "x0", "y0", "x1", "y1", "num_dests"),
}

COMPUTE_CB_OPS = ("cb_wait_front", "cb_pop_front", "cb_reserve_back", "cb_push_back")


@dataclass(frozen=True)
class Op:
    kind: str
    args: tuple[tuple[str, Arg], ...]
    note: str = ""

    def __getitem__(self, name: str) -> Arg:
        for k, v in self.args:
            if k == name:
                return v
        raise KeyError(f"{self.kind} has no argument {name}")

    def get(self, name: str, default: Arg | None = None) -> Arg | None:
        return next((v for k, v in self.args if k == name), default)


def op(kind: str, *values: Arg, note: str = "") -> Op:
    names = OP_KINDS[kind]
    if len(values) != len(names):
        raise TypeError(f"{kind} takes {names}, got {values}")
    return Op(kind, tuple(zip(names, values)), note)


@dataclass(frozen=True)
class Loop:
    var: str
    start: int
    stop: int
    body: tuple["Node", ...]
    note: str = ""

    @property
    def count(self) -> int:
        return max(0, self.stop - self.start)


Node = Union[Op, Loop]


@dataclass(frozen=True)
class CoreRange:
    x0: int
    y0: int
    x1: int
    y1: int

    def cores(self) -> Iterator[tuple[int, int]]:
        for y in range(self.y0, self.y1 + 1):
            for x in range(self.x0, self.x1 + 1):
                yield x, y

    def __contains__(self, core: tuple[int, int]) -> bool:
        return self.x0 <= core[0] <= self.x1 and self.y0 <= core[1] <= self.y1

    def __str__(self) -> str:
        return f"({self.x0},{self.y0})-({self.x1},{self.y1})"


@dataclass(frozen=True)
class Kernel:
    name: str
    role: str              # compute, reader, writer, in0_sender, in0_receiver, in1_sender_writer, ...
    processor: str         # TRISC (unpack+math+pack), BRISC (RISCV_0), NCRISC (RISCV_1)
    noc: int | None
    cores: CoreRange
    body: tuple[Node, ...]

    def runs_on(self, core: tuple[int, int]) -> bool:
        return core in self.cores


@dataclass(frozen=True)
class Semaphore:
    name: str
    id: int
    initial: int
    cores: CoreRange


@dataclass(frozen=True)
class Program:
    plan: Plan
    kernels: tuple[Kernel, ...]
    semaphores: tuple[Semaphore, ...]
    cb_pages: Mapping[int, int] = field(compare=False)   # CB index -> pages (from the plan)

    def kernel(self, name: str) -> Kernel:
        return next(k for k in self.kernels if k.name == name)


VALID, INVALID = 1, 0   # semaphore values of the multicast handshake


def unroll(nodes: tuple[Node, ...], env: dict[str, int] | None = None) -> Iterator[tuple[Op, dict[str, int]]]:
    """Every op in execution order with the loop variables it runs under (fully unrolled)."""
    env = {} if env is None else env
    for n in nodes:
        if isinstance(n, Loop):
            for i in range(n.start, n.stop):
                env[n.var] = i
                yield from unroll(n.body, env)
            env.pop(n.var, None)
        else:
            yield n, dict(env)


def _fmt_arg(v: Any, cb_names: Mapping[int, str], key: str) -> str:
    if key in ("cb", "in0", "in1", "out", "old", "new", "a", "b") or key.startswith(("srca", "srcb")):
        if isinstance(v, int) and not isinstance(v, bool):
            return cb_names.get(v, f"c_{v}")
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def format_node(node: Node, cb_names: Mapping[int, str], indent: int = 0) -> list[str]:
    pad = "  " * indent
    if isinstance(node, Loop):
        rng = f"{node.start}..{node.stop - 1}" if node.count != 1 else f"{node.start}"
        head = f"{pad}for {node.var} in {rng}:" if node.count != 1 else f"{pad}with {node.var} = {rng}:"
        if node.note:
            head += f"    # {node.note}"
        lines = [head]
        for child in node.body:
            lines.extend(format_node(child, cb_names, indent + 1))
        return lines
    args = " ".join(f"{k}={_fmt_arg(v, cb_names, k)}" for k, v in node.args)
    line = f"{pad}{node.kind}" + (f" {args}" if args else "")
    if node.note:
        line += f"    # {node.note}"
    return [line]


def format_program(program: Program) -> str:
    plan = program.plan
    cb_names = {c.index: f"c_{c.index}:{c.role}" for c in plan.cbs}
    out = [f"# block-lifecycle IR of {plan.spec.name}"
           + (f" (variant {plan.spec.variant})" if plan.spec.variant else "")
           + f": policy {plan.policy}, {plan.num_blocks} K-block(s), {plan.num_blocks_h_dim} x "
             f"{plan.num_blocks_w_dim} out block(s) per core"]
    for s in program.semaphores:
        out.append(f"semaphore {s.name} id={s.id} initial={s.initial} cores {s.cores}")
    for k in program.kernels:
        noc = f" noc={k.noc}" if k.noc is not None else ""
        out.append("")
        out.append(f"kernel {k.name} role={k.role} processor={k.processor}{noc} cores {k.cores}")
        for node in k.body:
            out.extend(format_node(node, cb_names, 1))
    return "\n".join(out) + "\n"
