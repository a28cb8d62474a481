"""The block-lifecycle IR: per kernel, an explicit tree of ops and counted loops.

The IR is the single source of truth: the verifier, the renderer and the performance model read
it and nothing else (it holds no plan). Besides the kernels it carries what is printed and checked
around them: the compute flags (`ComputeFlags`: fidelity, fp32 Dst, sync mode, the L1-accumulation
decision, the DST capacity), the CB table with its L1 regions, the io-tensor table (`IoTensor`:
format, pages, shape, placement, shard spec), the arch, the grid with work, the problem and the
core's blocking, the accumulation policy and the fused epilogue. So `math_fidelity` runs spec ->
plan -> `Program.compute` -> descriptor header, manifest and template, and the emulator reads it
back from the compiled descriptor.
Op arguments are ints, bools, names, or `Affine` expressions over loop variables and the core
coordinates (`core_x`, `core_y`), so per-core values (tile ids, multicast targets) stay symbolic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Union

from kgen.core.types import Placement
from kgen.gen.optable import OPS, ROW_NEST, TILE_NEST, Cost

if TYPE_CHECKING:      # annotations only
    from kgen.core.arch import ArchFacts
    from kgen.gen.activations import Activation


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

    def scaled(self, factor: int) -> "Affine":
        return Affine(self.const * factor, tuple((k, v * factor) for k, v in self.terms if v * factor))

    def __sub__(self, other: "Affine | int") -> "Affine":
        return self + (-other if isinstance(other, int) else other.scaled(-1))

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


class Sym(int):
    """An int that a rendered kernel prints by name: a compile-time-arg constant such as
    `in0_block_num_tiles`. It compares, hashes and computes as the plain int it is."""

    name: str

    def __new__(cls, value: int, name: str) -> "Sym":
        obj = super().__new__(cls, value)
        obj.name = name
        return obj

    def __reduce__(self):
        return (Sym, (int(self), self.name))


@dataclass(frozen=True)
class RuntimeArg:
    """One runtime argument of a data-movement kernel and where its value comes from:
    `core_x`/`core_y` (this core's logical coordinate), `noc_x`/`noc_y` (the NoC coordinate of the
    logical column/row `coord`, known only on the device, so the loader translates it), or
    `buffer_address` (the DRAM address of `tensor`, known only when the tensors are allocated), or
    `value` (the constant `coord`)."""

    name: str
    source: str
    coord: Affine | None = None
    tensor: str = ""

    def logical(self, env: Mapping[str, int]) -> int:
        """The logical coordinate this argument stands for on the core described by env."""
        if self.source in ("core_x", "core_y"):
            return env[self.source]
        if self.coord is None:
            raise TypeError(f"runtime arg {self.name} ({self.source}) has no coordinate")
        return self.coord.eval(env)




@dataclass(frozen=True)
class TensorArg:
    """A DRAM tensor a data-movement kernel reads or writes through a TensorAccessor."""

    name: str            # in0, in1, bias, out
    data_format: str     # tt::DataFormat name of its pages
    page_bytes: int      # one tile, or one row of an untilized (row-major) output
    layout: str          # TILE | ROW_MAJOR
    in_l1: bool = False  # interleaved over the L1 banks instead of DRAM's (TensorAccessorArgs IsDram = 0)


@dataclass(frozen=True)
class Extent:
    """The part of a block inside the tensor along one axis, for the padded last block of the last
    row/column of cores: block index i (0-based, tile rows or tile columns) is inside while
    `first + i < limit`, where `first` is the block's first tile row/column in the whole tensor.
    A nest with an extent reads or writes only the tiles inside; the others are padding (TT-Metal's
    _padding readers skip them, its writers skip padded tiles and subblocks)."""

    first: "Affine"
    limit: int

    def __str__(self) -> str:
        return f"[{self.first} < {self.limit}]"


Arg = Union[int, bool, str, Affine, RuntimeArg, Extent, None, tuple]


# Every op kind with its argument names, in print order: the op table's (kgen.gen.optable).
# Lowering may only build these.
OP_KINDS: dict[str, tuple[str, ...]] = {kind: row.args for kind, row in OPS.items()}

# Trailing arguments an op may leave out (None).
OPTIONAL_ARGS = frozenset({"row_extent", "col_extent", "view", "col_stride"})

# Arguments that name a circular buffer (printed by CB name).
CB_ARGS = frozenset({"cb", "src_cb", "in0", "in1", "out", "old", "new", "a", "b",
                     "srca_old", "srca_new", "srcb_old", "srcb_new", "view"})


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
    missing = names[len(values):]
    if missing and all(n in OPTIONAL_ARGS for n in missing):
        values = values + (None,) * len(missing)     # no extents: every tile is inside the tensor
    if len(values) != len(names):
        raise TypeError(f"{kind} takes {names}, got {values}")
    return Op(kind, tuple(zip(names, values)), note)


@dataclass(frozen=True)
class TileNest:
    """The loop nest a `read_tiles` / `write_tiles` op runs: `rows` x `cols` pages of a row-major
    interleaved tensor, page `first_tile + tile_row * row_stride + tile_col * col_stride`, one L1 page
    after the other. The one statement of that formula: the kernel template prints it, the verifier bounds
    it. `col_stride` is 1 but for a transposed input (transpose_a / transpose_b: the stored tensor's rows
    are the block's columns, TT's swapped in0/in1_tensor_stride_w and _h)."""

    first_tile: Affine | int         # the op's `start`, over the enclosing loops and the core
    rows: int
    cols: int
    row_stride: int
    row_extent: Extent | None = None  # rows past it are padding: skipped
    col_extent: Extent | None = None  # columns past it are padding: skipped
    col_stride: int = 1

    FIRST, ROW, COL = "first_tile", "tile_row", "tile_col"
    ROW_FIRST, COL_FIRST = "extent_row", "extent_col"     # the extents' first row/column, in the kernel

    @staticmethod
    def of(o: "Op") -> "TileNest":
        if o.kind not in OPS or OPS[o.kind].bounds != TILE_NEST:
            raise TypeError(f"{o.kind} has no tile loop nest")
        return TileNest(o["start"], o["rows"], o["cols"], o["row_stride"], o.get("row_extent"), o.get("col_extent"),
                        o.get("col_stride") or 1)

    @property
    def guarded(self) -> bool:
        return self.row_extent is not None or self.col_extent is not None

    @property
    def row_inside(self) -> Affine:
        """The tensor row of iteration tile_row (with the extent's first row as a kernel local)."""
        return Affine(0, ((self.ROW_FIRST, 1), (self.ROW, 1)))

    @property
    def col_inside(self) -> Affine:
        return Affine(0, ((self.COL_FIRST, 1), (self.COL, 1)))

    @property
    def page(self) -> Affine:
        """The page of iteration (tile_row, tile_col), over the local `first_tile`."""
        return Affine(0, ((self.FIRST, 1), (self.ROW, self.row_stride), (self.COL, self.col_stride)))

    def last_page(self, ranges: Mapping[str, int]) -> int:
        """The highest page any iteration touches, with the enclosing loop vars and the core over `ranges`.
        With extents, the page is split as (extent row + tile_row) * row_stride + (extent column + tile_col)
        * col_stride + the rest: the rows (columns) past an extent's limit are skipped, so the row (column)
        index is capped there."""
        if not self.guarded:
            return self.page.max_over({self.ROW: self.rows, self.COL: self.cols},
                                      {self.FIRST: _max_over(self.first_tile, ranges)})
        first = self.first_tile if isinstance(self.first_tile, Affine) else Affine(int(self.first_tile))
        row_first = self.row_extent.first if self.row_extent else Affine(0)
        col_first = self.col_extent.first if self.col_extent else Affine(0)
        rest = first - row_first.scaled(self.row_stride) - col_first.scaled(self.col_stride)
        max_row = _max_over(row_first, ranges) + self.rows - 1
        if self.row_extent:
            max_row = min(max_row, self.row_extent.limit - 1)
        max_col = _max_over(col_first, ranges) + self.cols - 1
        if self.col_extent:
            max_col = min(max_col, self.col_extent.limit - 1)
        return max_row * self.row_stride + max_col * self.col_stride + _max_over(rest, ranges)


@dataclass(frozen=True)
class RowNest:
    """The loop a `write_rows` op runs: `rows` pages (untilized rows) from `first_row`, each written
    `row_bytes` long at byte `offset_bytes` of its page, the CB holding them back to back. The one
    statement of that formula: the kernel template prints it, the verifier bounds it."""

    first_row: Affine | int
    rows: int
    row_bytes: int
    offset_bytes: Affine | int

    FIRST, ROW = "first_row", "row"

    @staticmethod
    def of(o: "Op") -> "RowNest":
        if o.kind not in OPS or OPS[o.kind].bounds != ROW_NEST:
            raise TypeError(f"{o.kind} has no row loop")
        return RowNest(o["start_row"], o["rows"], o["row_bytes"], o["offset_bytes"])

    @property
    def page(self) -> Affine:
        return Affine(0, ((self.FIRST, 1), (self.ROW, 1)))

    def last_page(self, ranges: Mapping[str, int]) -> int:
        return self.page.max_over({self.ROW: self.rows}, {self.FIRST: _max_over(self.first_row, ranges)})

    def end_byte(self, ranges: Mapping[str, int]) -> int:
        """One past the last byte written within a page."""
        return _max_over(self.offset_bytes, ranges) + self.row_bytes


def _max_over(value: Affine | int, ranges: Mapping[str, int]) -> int:
    return value.max_over(ranges) if isinstance(value, Affine) else int(value)


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
    """The cores of a rectangle, or with `count` its first `count` cores in row-major order: the run of
    cores TT-Metal's 1D factory takes (num_cores_to_corerangeset(..., row_major = true)), whose last row
    may be partial; the rectangle is then its bounding box."""
    x0: int
    y0: int
    x1: int
    y1: int
    count: int = 0                 # 0: every core of the rectangle

    def _index(self, core: tuple[int, int]) -> int:
        return (core[1] - self.y0) * (self.x1 - self.x0 + 1) + core[0] - self.x0

    def cores(self) -> Iterator[tuple[int, int]]:
        for y in range(self.y0, self.y1 + 1):
            for x in range(self.x0, self.x1 + 1):
                if not self.count or self._index((x, y)) < self.count:
                    yield x, y

    def __contains__(self, core: tuple[int, int]) -> bool:
        inside = self.x0 <= core[0] <= self.x1 and self.y0 <= core[1] <= self.y1
        return inside and (not self.count or self._index(core) < self.count)

    @property
    def size(self) -> int:
        """The number of cores."""
        return self.count or (self.x1 - self.x0 + 1) * (self.y1 - self.y0 + 1)

    def rectangles(self) -> tuple["CoreRange", ...]:
        """The cores as whole rectangles: itself, or a run's whole rows and then its partial last row."""
        width = self.x1 - self.x0 + 1
        if not self.count or self.count == self.size_of_box():
            return (CoreRange(self.x0, self.y0, self.x1, self.y1),)
        rows, rest = divmod(self.count, width)
        out = [CoreRange(self.x0, self.y0, self.x1, self.y0 + rows - 1)] if rows else []
        if rest:
            out.append(CoreRange(self.x0, self.y0 + rows, self.x0 + rest - 1, self.y0 + rows))
        return tuple(out)

    def size_of_box(self) -> int:
        return (self.x1 - self.x0 + 1) * (self.y1 - self.y0 + 1)

    def __str__(self) -> str:
        box = f"({self.x0},{self.y0})-({self.x1},{self.y1})"
        return box if not self.count or self.count == self.size_of_box() else f"{box} first {self.count}"


@dataclass(frozen=True)
class Kernel:
    name: str
    role: str              # compute, reader, writer, in0_sender, in0_receiver, in1_sender_writer, ...
    processor: str         # TRISC (unpack+math+pack), BRISC (RISCV_0), NCRISC (RISCV_1)
    noc: int | None
    cores: CoreRange
    body: tuple[Node, ...]
    # The kernel's interface to the host program, printed verbatim into the manifest.
    compile_time_args: tuple[tuple[str, int], ...] = ()          # (name, value) in index order
    named_compile_time_args: tuple[tuple[str, int], ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    runtime_args: tuple[RuntimeArg, ...] = ()                    # per core
    common_runtime_args: tuple[RuntimeArg, ...] = ()             # the same on every core
    tensors: tuple[TensorArg, ...] = ()

    def runs_on(self, core: tuple[int, int]) -> bool:
        return core in self.cores

    def ct_index(self, name: str) -> int:
        for i, (n, _) in enumerate(self.compile_time_args):
            if n == name:
                return i
        raise KeyError(f"kernel {self.name} has no compile-time arg {name}")

    def named(self, name: str) -> int:
        return dict(self.named_compile_time_args)[name]


@dataclass(frozen=True)
class Semaphore:
    name: str
    id: int
    initial: int
    cores: CoreRange


@dataclass(frozen=True)
class ComputeFlags:
    """What the compute kernel is compiled with: TT-Metal's ComputeConfigDescriptor fields and the
    L1-accumulation decision. The descriptor header, the manifest and the templates print these,
    the emulator takes them from the compiled header, and the verifier checks them against the ops."""

    math_fidelity: str               # LoFi | HiFi2 | HiFi3 | HiFi4
    fp32_dest_acc: bool              # FP32_DEST_ACC_EN, DST_ACCUM_MODE
    math_approx: bool
    dst_full_sync: bool              # dst_full_sync_en as the spec asks it
    dst_sync: str                    # SyncHalf | SyncFull, as emitted
    l1_acc_enabled: bool             # PACKER_L1_ACC
    dst_capacity: int                # tiles one DST section holds in this sync mode and accumulation format
    dst_accum_format: str            # Float32 with fp32_dest_acc, else Float16_b


@dataclass(frozen=True)
class CircularBuffer:
    """One row of the CB table: TT-Metal's CB index and named arg, its page format and size, its pages,
    and the L1 region it is allocated in."""

    index: int            # CB index c_<index>
    name: str             # TT-Metal named compile-time arg
    role: str
    data_format: str      # tt::DataFormat name
    page_bytes: int
    pages: int
    region: str           # CBs with the same region share one L1 allocation
    buffer: str | None = None   # the tensor whose L1 buffer this CB is globally allocated on (a shard)
    # TT-Metal's unpack_to_dest_mode[index] = UnpackToDestFp32 (ComputeConfigDescriptor): a Float32 CB the
    # unpacker writes straight into DST, never through SrcA (the JIT's unpack_dst_format is Float32)
    unpack_to_dest: bool = False
    # the compute define that hands the kernel this CB's index, where TT-Metal passes no named arg for it
    # (MM_PARTIALS_RELOAD_ALIAS_CB)
    index_define: str = ""

    @property
    def total_bytes(self) -> int:
        return self.page_bytes * self.pages


@dataclass(frozen=True)
class L1Region:
    """One L1 allocation of the program and the CBs that share it."""

    name: str
    cb_indices: tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class ShardSpec:
    """A sharded tensor's ttnn ShardSpec: its buffer (L1, or the DRAM banks), memory layout, core grid
    (x0, y0, x1, y1), shard shape in elements (height, width) and orientation."""

    memory_layout: str               # BLOCK_SHARDED | HEIGHT_SHARDED | WIDTH_SHARDED
    grid: tuple[int, int, int, int]
    shape: tuple[int, int]
    orientation: str                 # ROW_MAJOR | COL_MAJOR
    buffer_type: str = "L1"


@dataclass(frozen=True)
class IoTensor:
    """One tensor of the program's host interface, in the order `ttnn.generic_op` takes them: its pages
    as the kernels address them, its shape and where it lives."""

    name: str                        # in0, in1, bias, out
    data_format: str
    layout: str                      # TILE | ROW_MAJOR
    page_bytes: int
    pages: int                       # pages the kernels may address (tiles, or rows of a row-major tensor)
    shape: tuple[int, ...]           # elements, as ttnn's logical shape
    padded_shape: tuple[int, ...]    # each dimension but the batch padded to whole tiles
    placement: Placement
    shard: ShardSpec | None = None
    # stored transposed (ttnn.matmul's transpose_a: in0 as K x M; transpose_b: in1 as N x K): `shape` is the
    # stored tensor's, and the matmul multiplies its transpose
    transposed: bool = False


@dataclass(frozen=True)
class Problem:
    """The matmul in elements (batch x M x K times K x N) and in tiles (Mt holds the batch when it is
    fused into M; batch_ct is the batch the kernels loop over)."""

    batch: int
    m: int
    n: int
    k: int
    mt: int
    nt: int
    kt: int
    batch_ct: int


class SubblockCounts:
    """The compute kernel's derived counts, for a blocking that has out_block_h/w and out_subblock_h/w
    (the IR's CoreBlocking and the plan alike)."""

    out_block_h: int
    out_block_w: int
    out_subblock_h: int
    out_subblock_w: int

    @property
    def in0_num_subblocks(self) -> int:
        return self.out_block_h // self.out_subblock_h

    @property
    def in1_num_subblocks(self) -> int:
        return self.out_block_w // self.out_subblock_w

    @property
    def out_subblock_tiles(self) -> int:
        return self.out_subblock_h * self.out_subblock_w

    @property
    def out_block_tiles(self) -> int:
        return self.out_block_h * self.out_block_w


@dataclass(frozen=True)
class CoreBlocking(SubblockCounts):
    """One core's blocking in tiles, named as TT-Metal's factory names it."""

    per_core_m: int
    per_core_n: int
    out_block_h: int
    out_block_w: int
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    num_blocks: int                  # K-blocks (num_blocks_inner_dim)
    num_blocks_h_dim: int
    num_blocks_w_dim: int
    in0_shard_w: int                 # K tiles of a sharded in0's shard (0: in0 is not sharded by K)
    # the N tiles a core computes (out block columns over all its out blocks): per_core_n, or more where the
    # factory pads them for a wider subblock (the DRAM-sharded factory's per_core_N_compute)
    per_core_n_compute: int
    last_subblock_w_valid: int       # lanes of the last in1 subblock backed by in1 tiles (out_subblock_w unpadded)


@dataclass(frozen=True)
class Program:
    """Everything after lowering reads: the kernels and semaphores, the compute flags, the CB table, the
    host interface's tensors, and the facts of the matmul they were lowered for (its name, target,
    grid, blocking, accumulation policy and fused epilogue)."""

    kernels: tuple[Kernel, ...]
    semaphores: tuple[Semaphore, ...]
    compute: ComputeFlags
    cbs: tuple[CircularBuffer, ...]                      # the CB table: index, format, page size, pages
    regions: tuple[L1Region, ...]                        # the L1 allocations the CBs share
    io_tensors: tuple[IoTensor, ...]                     # in0, in1, bias (when fused), out
    name: str                                            # the spec's matmul name
    variant: str                                         # and its variant ("" for none)
    arch: ArchFacts
    grid: tuple[int, int]                                # cores with work (x, y)
    problem: Problem
    blocking: CoreBlocking
    policy: str                                          # packer_l1_acc | spill_reload | dst_only
    policy_reason: str
    partials_format: str
    fuse_bias: bool
    sfpu_activation: Activation | None                   # the activation the pack thread runs, if any

    @property
    def cb_pages(self) -> Mapping[int, int]:
        """CB index -> pages."""
        return {cb.index: cb.pages for cb in self.cbs}

    def cb(self, index: int) -> CircularBuffer:
        return next(cb for cb in self.cbs if cb.index == index)

    def kernel(self, name: str) -> Kernel:
        return next(k for k in self.kernels if k.name == name)

    def io(self, name: str) -> IoTensor:
        return next(t for t in self.io_tensors if t.name == name)

    def placement(self, name: str) -> Placement:
        """Where tensor `name` lives (interleaved in DRAM when the program has no such tensor)."""
        return next((t.placement for t in self.io_tensors if t.name == name), Placement.DRAM)

    def dram_readers(self, elsewhere: frozenset[str] = frozenset()) -> tuple[tuple[Kernel, int], ...]:
        """Each kernel that reads tensors interleaved in DRAM (its read_tiles ops), with the bytes one of
        its cores reads: what the readers share the card's DRAM by (kgen.core.costs
        Costs.dram_read_bytes_per_cycle, for the model and the emulator alike). `elsewhere`: tensors
        to count as not in DRAM."""
        readers = []
        for k in self.kernels:
            pages = {t.name: t.page_bytes for t in k.tensors}
            nbytes = sum(n * OPS[o.kind].work(o).noc_read_tiles * pages[o["tensor"]] for o, n in counted(k.body)
                         if OPS[o.kind].cost == Cost.TILE_READ and o["tensor"] not in elsewhere
                         and self.placement(o["tensor"]) == Placement.DRAM)
            if nbytes:
                readers.append((k, nbytes))
        return tuple(readers)


VALID, INVALID = 1, 0   # semaphore values of the multicast handshake


def walk(nodes: tuple[Node, ...], loops: tuple[Loop, ...] = ()) -> Iterator[tuple[Op, tuple[Loop, ...]]]:
    """Every op of a tree once, in order, with the loops around it (outermost first); loop bodies
    are not repeated: what bounds need (the loops' ranges). Totals use `counted`, which folds the
    loops' counts in; `unroll` gives every iteration."""
    for n in nodes:
        if isinstance(n, Loop):
            yield from walk(n.body, loops + (n,))
        else:
            yield n, loops


def counted(nodes: tuple[Node, ...], times: int = 1) -> Iterator[tuple[Op, int]]:
    """Every op of a tree once, in order, with how often it runs (the product of its loops' counts):
    what every total sums, the verifier's and the performance model's."""
    for n in nodes:
        if isinstance(n, Loop):
            if n.stop > n.start:
                yield from counted(n.body, times * (n.stop - n.start))
        else:
            yield n, times


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
    if key in CB_ARGS and isinstance(v, int) and not isinstance(v, bool):
        return cb_names.get(v, f"c_{v}")
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, RuntimeArg):
        return f"{v.source}({v.coord})" if v.coord is not None else v.source
    if v is None:
        return "-"
    return str(int(v)) if isinstance(v, int) else str(v)


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
    args = " ".join(f"{k}={_fmt_arg(v, cb_names, k)}" for k, v in node.args if not (k == "col_stride" and v is None))
    line = f"{pad}{node.kind}" + (f" {args}" if args else "")
    if node.note:
        line += f"    # {node.note}"
    return [line]


def format_program(program: Program) -> str:
    b = program.blocking
    cb_names = {c.index: f"c_{c.index}:{c.role}" for c in program.cbs}
    out = [f"# block-lifecycle IR of {program.name}"
           + (f" (variant {program.variant})" if program.variant else "")
           + f": policy {program.policy}, {b.num_blocks} K-block(s), {b.num_blocks_h_dim} x "
             f"{b.num_blocks_w_dim} out block(s) per core"]
    for s in program.semaphores:
        out.append(f"semaphore {s.name} id={s.id} initial={s.initial} cores {s.cores}")
    for k in program.kernels:
        noc = f" noc={k.noc}" if k.noc is not None else ""
        out.append("")
        out.append(f"kernel {k.name} role={k.role} processor={k.processor}{noc} cores {k.cores}")
        for node in k.body:
            out.extend(format_node(node, cb_names, 1))
    return "\n".join(out) + "\n"
