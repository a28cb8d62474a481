"""Stage 4, verify: checks every IR kgen builds. A violation is a bug in kgen (`IRVerificationError`).

Checks (TT-Metal's CB API contract, tenstorrent/tt-metal PR #42427):
- per core and per CB, pages pushed by producers == pages popped by consumers over the program;
- every wait/reserve/push/pop step is <= the CB's pages and divides them;
- in each kernel, in order: a pop never exceeds what was waited, a push never exceeds what was
  reserved, waited-but-unpopped and reserved-but-unpushed pages never exceed the CB;
- DST protocol order acquire -> commit -> wait -> release, and tiles touched per acquire <= capacity;
- packs only into reserved pages, only while the packer owns DST;
- with packer L1 accumulation the partials CB holds exactly one output block; L1 accumulation is
  off when the compute kernel ends;
- multicast semaphores: increments and multicast sets that reach a core balance its waits;
- a CB unpacked straight into DST (UnpackToDestFp32) is no FPU operand, and a copy through a view
  (the partials' reload alias) reads a CB whose pages the view shares.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kgen.core.errors import KgenBug
from kgen.gen.ir import Affine, CoreRange, Extent, Kernel, Loop, Node, Op, Program, RowNest, RuntimeArg, TileNest, counted, walk
from kgen.gen import activations
from kgen.gen.optable import (ACQUIRE, ACTIVATION_APPLY, ACTIVATION_INIT, CB_POP, CB_PROTOCOL, CB_PUSH, CB_RESERVE,
                              CB_WAIT, COMMIT, ELTWISE, FILLS_PAGES, FILLS_RESERVED, FILLS_UNMODELLED, L1_ACC_SWITCH,
                              MATMUL, MATMUL_OPERANDS, OPS, READS_DST, RELEASE, ROW_NEST, SEM_INCREMENTS,
                              SEM_MULTICASTS,
                              SEM_WAITS, SFPU, SHARD_BLOCK, SHARD_MCAST, TILE_NEST, WAIT, WRITES_DST)
from kgen.gen.plan import CB_OUT, CB_PARTIALS

# The DST handshake between math and pack: the state each tile_regs_* call needs and leaves.
_DST_HANDSHAKE = {ACQUIRE: ("released", "acquired"), COMMIT: ("acquired", "committed"),
                  WAIT: ("committed", "waited"), RELEASE: ("waited", "released")}


class IRVerificationError(KgenBug):
    def __init__(self, kernel: str, message: str):
        super().__init__(f"IR verification failed in kernel `{kernel}`: {message}")
        self.kernel = kernel
        self.detail = message


# ----------------------------------------------------------------------------------------------
# Totals with loop multiplicities
# ----------------------------------------------------------------------------------------------

def op_totals(nodes: tuple[Node, ...]) -> Counter:
    """(op kind, cb) -> pages (CB ops) or count (other ops), multiplied through loop trip counts."""
    totals: Counter = Counter()
    for n, mult in counted(nodes):
        if OPS[n.kind].category == CB_PROTOCOL:
            totals[(n.kind, n["cb"])] += mult * n["tiles"]
        else:
            totals[(n.kind, None)] += mult
    return totals


# ----------------------------------------------------------------------------------------------
# Sequential abstract execution of one kernel
# ----------------------------------------------------------------------------------------------

@dataclass
class _State:
    waited: dict[int, int] = field(default_factory=dict)      # pages waited for and not yet popped
    reserved: dict[int, int] = field(default_factory=dict)    # pages reserved and not yet pushed
    regs: str = "released"      # released -> acquired -> committed -> waited -> released
    dst_used: int = 0           # tiles touched in DST by math since acquire
    l1_acc: bool = False
    # DST lanes past dst_used the pack may take as they are: the padded lanes of a narrowed last in1
    # subblock (the blocking's out_subblock_w - last_subblock_w_valid), whatever DST held
    dst_padding: int = 0
    # each CB's front (pages popped) and back (pages pushed), modulo its pages: a step that does not divide
    # the pages must not run past the CB's end (TT's transpose stage: 4 tiles, then the block's rest)
    front: dict[int, int] = field(default_factory=dict)
    back: dict[int, int] = field(default_factory=dict)
    # such a step waited (reserved) and not yet popped (pushed) whole: nothing else may touch that end
    odd: dict[tuple[int, str], int] = field(default_factory=dict)
    odd_cbs: set[int] = field(default_factory=set)

    def key(self) -> tuple:
        return (tuple(sorted(self.waited.items())), tuple(sorted(self.reserved.items())), self.regs,
                self.dst_used, self.l1_acc, self.dst_padding, self.odd_ends())

    def odd_ends(self) -> tuple:
        """The fronts and backs of the CBs a step not dividing their pages touched (those only: an evenly
        stepped CB repeats whatever its position, as every loop's first iteration shows)."""
        cbs = sorted(self.odd_cbs)
        return (tuple(sorted(self.odd.items())), tuple((c, self.front.get(c, 0), self.back.get(c, 0)) for c in cbs))


class _Checker:
    def __init__(self, program: Program, kernel: Kernel):
        self.program = program
        self.kernel = kernel
        self.pages = program.cb_pages
        self.capacity = program.compute.dst_capacity
        self.state = _State()

    def fail(self, message: str, node: Op | None = None) -> None:
        where = f" at `{node.kind}`" if node is not None else ""
        raise IRVerificationError(self.kernel.name, message + where)

    def value(self, v, env: dict[str, int]) -> int:
        return v.eval(env) if isinstance(v, Affine) else int(v)

    def run(self, nodes: tuple[Node, ...], env: dict[str, int]) -> None:
        for n in nodes:
            if isinstance(n, Loop):
                for i in range(n.start, n.stop):
                    before = self.state.key()
                    env[n.var] = i
                    self.run(n.body, env)
                    # Deterministic body, unchanged state: every later iteration repeats this one.
                    # (Index bounds of later iterations are checked statically in `static_checks`.)
                    if self.state.key() == before:
                        break
                env.pop(n.var, None)
            else:
                self.step(n, env)

    def cb_step(self, n: Op, ends: dict[int, int], end: str, done: bool) -> tuple[int, int]:
        """A CB protocol step at the CB's front or back (`ends`, `end`); `done`: a pop or push. A step that
        does not divide the pages (TT's transpose stage: 4 tiles, then the block's rest) must end by the
        CB's last page and be popped (pushed) whole before that end of the CB moves on."""
        cb, tiles = n["cb"], n["tiles"]
        if cb not in self.pages:
            self.fail(f"CB c_{cb} is not in the CB table", n)
        pages, at, odd = self.pages[cb], ends.get(cb, 0), self.state.odd
        pending = odd.get((cb, end))
        if (tiles <= 0 or tiles > pages or (pages % tiles and at + tiles > pages)
                or (pending is not None and pending != tiles)):
            bad = pending if pending is not None and pending != tiles else tiles
            self.fail(f"step of {bad} tiles on c_{cb} must be > 0, <= its {pages} pages and divide them "
                      f"(or end by its last page and be taken whole: it starts at page {at})", n)
        if pages % tiles:
            self.state.odd_cbs.add(cb)
            odd.pop((cb, end), None) if done else odd.__setitem__((cb, end), tiles)
        return cb, tiles

    def step(self, n: Op, env: dict[str, int]) -> None:
        s = self.state
        k = n.kind
        row = OPS[k]
        if row.cb == CB_WAIT:
            cb, t = self.cb_step(n, s.front, "front", False)
            # wait_front(t) asks for t pages at the front, counted from the last pop.
            s.waited[cb] = max(s.waited.get(cb, 0), t)
        elif row.cb == CB_POP:
            cb, t = self.cb_step(n, s.front, "front", True)
            if s.waited.get(cb, 0) < t:
                self.fail(f"pops {t} pages of c_{cb} but only {s.waited.get(cb, 0)} were waited for", n)
            s.waited[cb] -= t
            s.front[cb] = (s.front.get(cb, 0) + t) % self.pages[cb]
        elif row.cb == CB_RESERVE:
            cb, t = self.cb_step(n, s.back, "back", False)
            s.reserved[cb] = max(s.reserved.get(cb, 0), t)
        elif row.cb == CB_PUSH:
            cb, t = self.cb_step(n, s.back, "back", True)
            if s.reserved.get(cb, 0) < t:
                self.fail(f"pushes {t} pages of c_{cb} but only {s.reserved.get(cb, 0)} were reserved", n)
            s.reserved[cb] -= t
            s.back[cb] = (s.back.get(cb, 0) + t) % self.pages[cb]
        elif row.dst in _DST_HANDSHAKE:
            before, after = _DST_HANDSHAKE[row.dst]
            if s.regs != before:
                self.fail(f"{k} while DST is {s.regs}", n)
            s.regs = after
            if row.dst == ACQUIRE:
                s.dst_used, s.dst_padding = 0, 0
            if row.category == SFPU and self.value(n["tiles"], env) > s.dst_used + s.dst_padding:
                self.fail(f"runs the activation over {self.value(n['tiles'], env)} DST tiles, math wrote "
                          f"{s.dst_used}", n)
        elif row.dst == WRITES_DST:
            if s.regs != "acquired":
                self.fail(f"{k} writes DST while it is {s.regs} (needs tile_regs_acquire)", n)
            end = self.value(n["dst"], env) + row.dst_tiles(n)
            for cb, first, count in row.reads_front:
                self.need_front(n[cb], self.value(n[first], env) + (n[count] if isinstance(count, str) else count), n)
            s.dst_used = max(s.dst_used, end)
            s.dst_padding = self.padded_lanes(n) if row.pads_dst else 0
            if s.dst_used > self.capacity:
                self.fail(f"{s.dst_used} tiles in DST exceed its capacity of {self.capacity} "
                          f"({self.program.compute.dst_sync}, {self.program.compute.dst_accum_format})", n)
        elif row.dst == READS_DST:
            if s.regs != "waited":
                self.fail(f"{k} while DST is {s.regs} (needs tile_regs_wait)", n)
            # an op without a `dst` argument packs from DST tile 0 (pack_untilize_dest)
            cb, tiles = n[row.writes_back], row.dst_tiles(n)
            last_dst = (self.value(n["dst"], env) if "dst" in row.args else 0) + tiles
            if last_dst > s.dst_used + s.dst_padding:
                self.fail(f"packs DST tile {last_dst - 1} which math never wrote", n)
            if s.reserved.get(cb, 0) < tiles:
                self.fail(f"packs into c_{cb} without {tiles} reserved page(s)", n)
        elif row.category == L1_ACC_SWITCH:
            s.l1_acc = bool(n["enable"])

    def padded_lanes(self, n: Op) -> int:
        """The lanes a one-tile-high matmul_block leaves to padding: out_subblock_w - ct when ct is the
        blocking's last_subblock_w_valid (the narrowed last in1 subblock), else none."""
        b = self.program.blocking
        ct = int(n["ct"])
        if b is None or int(n["rt"]) != 1 or ct == b.out_subblock_w or ct != b.last_subblock_w_valid:
            return 0
        return b.out_subblock_w - ct

    def need_front(self, cb: int, upto: int, n: Op) -> None:
        if self.state.waited.get(cb, 0) < upto:
            self.fail(f"reads tile {upto - 1} of c_{cb} but only {self.state.waited.get(cb, 0)} page(s) were waited for", n)

    def finish(self) -> None:
        s = self.state
        if s.regs != "released":
            self.fail(f"kernel ends with DST {s.regs}")
        if self.kernel.role == "compute" and s.l1_acc:
            self.fail("packer L1 accumulation is still on when the compute kernel ends "
                      "(packer state persists across programs on Blackhole, tt-mlir #7026)")
        for cb, n in s.reserved.items():
            if n:
                self.fail(f"kernel ends with {n} reserved page(s) of c_{cb} never pushed")


def _tensor_pages(program: Program) -> dict[str, int]:
    return {t.name: t.pages for t in program.io_tensors}


def _check_interface(program: Program, kernel: Kernel) -> None:
    """What the kernel uses is what it declares: runtime args, tensors, semaphore ids, CB names."""
    declared = set(kernel.runtime_args)
    tensors = {t.name for t in kernel.tensors}
    cb_names = {cb.name: cb.index for cb in program.cbs}
    for name, index in kernel.named_compile_time_args:
        if name in cb_names and cb_names[name] != index:
            raise IRVerificationError(kernel.name, f"named CT arg {name} = {index}, the CB table says {cb_names[name]}")
    sem_ids = {s.name: s.id for s in program.semaphores}
    for name, value in kernel.compile_time_args:
        sem = name.removesuffix("_semaphore_id")
        if sem != name and sem_ids.get(sem) != value:
            raise IRVerificationError(kernel.name, f"CT arg {name} = {value}, semaphore {sem} has id {sem_ids.get(sem)}")
    for n, _ in walk(kernel.body):
        for key, v in n.args:
            if isinstance(v, RuntimeArg) and v not in declared:
                raise IRVerificationError(kernel.name, f"`{n.kind}` uses runtime arg {v.name}, not declared")
        if "tensor" in OPS[n.kind].args and n["tensor"] not in tensors:
            raise IRVerificationError(kernel.name, f"`{n.kind}` uses tensor {n['tensor']} without an accessor")
        if "sem" in OPS[n.kind].args:
            if n["sem"] not in sem_ids or f"{n['sem']}_semaphore_id" not in dict(kernel.compile_time_args):
                raise IRVerificationError(kernel.name, f"`{n.kind}` uses semaphore {n['sem']} without its id CT arg")


UINT32_MAX = (1 << 32) - 1      # kernels compute page ids, tile indices, counts and offsets in uint32_t


def _check_uint32(kernel: Kernel, n: Op, ranges: dict[str, int]) -> None:
    """Every integer a kernel computes with fits uint32_t: an argument's constant, each coefficient
    (printed as a literal times a loop variable or core coordinate) and its largest value over the
    loops and cores. The spec's page-id rule should make this unreachable; it is the backstop."""
    for name, v in n.args:
        if isinstance(v, Extent):
            v = v.first                  # the kernel computes the extent's first row / column too
        if isinstance(v, bool) or not isinstance(v, (int, Affine)):
            continue
        values = (v,) if isinstance(v, int) else (v.const, *(c for _, c in v.terms), v.max_over(ranges))
        if max(values) > UINT32_MAX or min(values) < -UINT32_MAX:
            raise IRVerificationError(kernel.name, f"`{n.kind}` argument {name} = {v} reaches {max(values, key=abs)}, "
                                      f"beyond the 32-bit (uint32_t) arithmetic kernels index with")


@dataclass(frozen=True)
class _Site:
    """One op of a kernel with the loops around it, for its row's index-bound rule."""

    program: Program
    kernel: Kernel
    n: Op
    ranges: dict[str, int]            # the enclosing loops' ranges
    everywhere: dict[str, int]        # ... and the cores'
    waited: dict[int, int]            # the last cb_wait_front of each CB before the op

    def fail(self, message: str) -> None:
        raise IRVerificationError(self.kernel.name, message)


def _tile_nest_bound(site: _Site) -> None:
    n, pages = site.n, _tensor_pages(site.program)
    last = TileNest.of(n).last_page(site.everywhere)
    if last >= pages[n["tensor"]]:
        site.fail(f"`{n.kind}` touches page {last} of {n['tensor']}, which has {pages[n['tensor']]}")


def _row_nest_bound(site: _Site) -> None:
    n, pages = site.n, _tensor_pages(site.program)
    tensors = {t.name: t for t in site.kernel.tensors}
    nest = RowNest.of(n)
    last, end = nest.last_page(site.everywhere), nest.end_byte(site.everywhere)
    if last >= pages[n["tensor"]] or end > tensors[n["tensor"]].page_bytes:
        site.fail(f"`{n.kind}` reaches row {last} / byte {end} of {n['tensor']} ({pages[n['tensor']]} rows of "
                  f"{tensors[n['tensor']].page_bytes} bytes)")


def _shard_block_bound(site: _Site) -> None:
    # the block's last tile must lie inside the shard CB, and a row inside a shard row
    n, cb_pages = site.n, site.program.cb_pages
    hi = n["start"].max_over(site.everywhere) + (n["rows"] - 1) * n["row_stride"] + n["cols"]
    if hi > cb_pages[n["src_cb"]] or n["cols"] > n["row_stride"]:
        site.fail(f"`{n.kind}` reaches tile {hi - 1} of c_{n['src_cb']}, which holds {cb_pages[n['src_cb']]}")


def _shard_mcast_bound(site: _Site) -> None:
    # the block multicast straight out of the shard lies inside the shard CB
    n, cb_pages = site.n, site.program.cb_pages
    hi = n["start"].max_over(site.everywhere) + n["tiles"]
    if hi > cb_pages[n["src_cb"]] or n["bytes"] != n["tiles"] * n["page_bytes"]:
        site.fail(f"`{n.kind}` sends tiles up to {hi - 1} of c_{n['src_cb']}, "
                  f"which holds {cb_pages[n['src_cb']]} ({n['bytes']} bytes)")


def _matmul_operands_bound(site: _Site) -> None:
    # the last tile each operand's unpack reaches: in0 rt rows kt apart, in1 ct tiles of a row
    n, cb_pages, waited = site.n, site.program.cb_pages, site.waited
    reach = {"in0_tile": (int(n["rt"]) - 1) * int(n["kt"]), "in1_tile": int(n["ct"]) - 1}
    for key, cb in (("in0_tile", n["in0"]), ("in1_tile", n["in1"])):
        hi = n[key].max_over(site.ranges) + reach[key]
        if hi >= cb_pages[cb]:
            site.fail(f"{n.kind} reads tile {hi} of c_{cb} beyond its {cb_pages[cb]} pages")
        if cb in waited and hi >= waited[cb]:
            site.fail(f"{n.kind} reads tile {hi} of c_{cb}, beyond the {waited[cb]} tile(s) pushed for the block "
                      f"(cb_wait_front)")


# the op table's index-bound rules (its `bounds` column)
_BOUNDS = {TILE_NEST: _tile_nest_bound, ROW_NEST: _row_nest_bound, SHARD_BLOCK: _shard_block_bound,
           SHARD_MCAST: _shard_mcast_bound, MATMUL_OPERANDS: _matmul_operands_bound}


def _static_checks(program: Program, kernel: Kernel) -> None:
    """Index bounds over every loop iteration and every core (the sequential pass may skip repeated
    iterations): matmul tiles inside the CB, DRAM pages inside the tensor. A run of cores whose last row
    is partial is bounded rectangle by rectangle (its whole rows, then the partial row)."""
    for box in kernel.cores.rectangles():
        _static_checks_on(program, kernel, {"core_x": box.x1 + 1, "core_y": box.y1 + 1})


def _static_checks_on(program: Program, kernel: Kernel, cores: dict[str, int]) -> None:
    waited: dict[int, int] = {}          # the last cb_wait_front of each CB, in program order
    for n, loops in walk(kernel.body):
        ranges = {loop.var: loop.stop for loop in loops}
        _check_uint32(kernel, n, {**ranges, **cores})
        row = OPS[n.kind]
        if row.bounds:
            _BOUNDS[row.bounds](_Site(program, kernel, n, ranges, {**ranges, **cores}, waited))
        if row.cb == CB_WAIT:
            waited[n["cb"]] = int(n["tiles"])


# ----------------------------------------------------------------------------------------------
# Shared L1 regions: no producer writes pages another CB of the region may still hold
# ----------------------------------------------------------------------------------------------

class _RegionWalker:
    """Abstract execution of one producing kernel over the CBs of one shared L1 region.

    Per CB: its write and read pointers (pages, modulo its size), the pages written since the last
    push, and the pages it may still hold: pushed, and not yet known consumed. What counts as
    known, for every interleaving of the other kernels: pages this kernel itself has read (the
    emulator's rule: TT-Metal's untilize stage packs over partials it has copied into DST) or
    popped, and pages a cb_reserve_back of this kernel has waited to be free. A pop by another
    kernel is never known here, so a page a writer drains is free only after a reserve covers it.
    A write into pages another CB of the region may hold is the out/partials trap."""

    def __init__(self, program: Program, kernel: Kernel, indices: tuple[int, ...], consumers: dict[int, set[str]]):
        self.kernel = kernel
        self.cbs = {i: program.cb(i) for i in indices}
        self.local = {i for i in indices if consumers.get(i) == {kernel.name}}   # read by this kernel only
        self.wr = dict.fromkeys(indices, 0)
        self.rd = dict.fromkeys(indices, 0)
        self.written = dict.fromkeys(indices, 0)
        self.reserved = dict.fromkeys(indices, 0)
        self.held: dict[int, frozenset[int]] = dict.fromkeys(indices, frozenset())

    def key(self) -> tuple:
        return tuple((i, self.wr[i], self.rd[i], self.written[i], self.reserved[i], self.held[i]) for i in self.cbs)

    def restore(self, key: tuple) -> None:
        for i, wr, rd, written, reserved, held in key:
            self.wr[i], self.rd[i], self.written[i], self.reserved[i], self.held[i] = wr, rd, written, reserved, held

    def fail(self, message: str, n: Op) -> None:
        raise IRVerificationError(self.kernel.name, message + f" at `{n.kind}`")

    def pages(self, cb: int, first: int, count: int) -> list[int]:
        size = self.cbs[cb].pages
        return [(first + j) % size for j in range(count)]

    def byte_range(self, cb: int, page: int) -> tuple[int, int]:
        pb = self.cbs[cb].page_bytes
        return page * pb, (page + 1) * pb

    def write(self, cb: int, count: int, n: Op) -> None:
        for page in self.pages(cb, self.wr[cb] + self.written[cb], count):
            lo, hi = self.byte_range(cb, page)
            for other in self.cbs:
                if other == cb:
                    continue
                pb = self.cbs[other].page_bytes
                clash = sorted(q for q in self.held[other] if q * pb < hi and (q + 1) * pb > lo)
                if clash:
                    self.fail(f"writes page {page} of c_{cb}, which shares L1 with c_{other}, while c_{other} may "
                              f"still hold page(s) {clash} unconsumed (nothing in this kernel waited for them to be "
                              f"drained): the out/partials trap", n)
        self.written[cb] += count

    def run(self, nodes: tuple[Node, ...], env: dict[str, int]) -> None:
        for n in nodes:
            if isinstance(n, Loop):
                self.loop(n, env)
            else:
                self.step(n, env)

    def loop(self, n: Loop, env: dict[str, int]) -> None:
        # The state at the loop head repeats with a period (ring pointers wrap): once it does, the
        # remaining iterations only replay states already checked, provided the loop variable
        # does not move which pages an op touches.
        periodic = not any(isinstance(v, Affine) and n.var in dict(v.terms)
                           for op_, _ in walk(n.body) for _, v in op_.args)
        heads: list[tuple] = []
        seen: dict[tuple, int] = {}
        for i in range(n.start, n.stop):
            key = self.key()
            if periodic and key in seen:
                first = seen[key]
                period = len(heads) - first
                self.restore(heads[first + (n.stop - n.start - first) % period])
                break
            seen[key] = len(heads)
            heads.append(key)
            env[n.var] = i
            self.run(n.body, env)
        env.pop(n.var, None)

    def value(self, v, env: dict[str, int]) -> int:
        return v.eval(env) if isinstance(v, Affine) else int(v)

    def step(self, n: Op, env: dict[str, int]) -> None:
        row = OPS[n.kind]
        cb = n.get("cb")
        if row.consumes:
            # pages this kernel reads itself are known consumed (the CBs of the row's `consumes`)
            for arg, tile_arg, count in row.reads_front:
                cb = n[arg]
                if arg in row.consumes and cb in self.local:
                    count = n[count] if isinstance(count, str) else count
                    read = set(self.pages(cb, self.rd[cb] + self.value(n[tile_arg], env), count))
                    self.held[cb] = self.held[cb] - read
            return
        if cb not in self.cbs:
            return
        if row.cb == CB_RESERVE:
            self.reserved[cb] = max(self.reserved[cb], n["tiles"])
            self.held[cb] = self.held[cb] - set(self.pages(cb, self.wr[cb], n["tiles"]))
        elif row.cb == CB_PUSH:
            pushed = self.pages(cb, self.wr[cb], n["tiles"])
            self.held[cb] = self.held[cb] | frozenset(pushed)
            self.wr[cb] = (self.wr[cb] + n["tiles"]) % self.cbs[cb].pages
            self.written[cb] = max(0, self.written[cb] - n["tiles"])
            self.reserved[cb] = max(0, self.reserved[cb] - n["tiles"])
        elif row.cb == CB_POP:
            if cb in self.local:
                self.held[cb] = self.held[cb] - set(self.pages(cb, self.rd[cb], n["tiles"]))
            self.rd[cb] = (self.rd[cb] + n["tiles"]) % self.cbs[cb].pages
        elif row.fills == FILLS_PAGES:
            # the pages it packs or reads, at the write pointer
            work = row.work(n)
            self.write(cb, work.pack_tiles + work.noc_read_tiles, n)
        elif row.fills == FILLS_RESERVED:
            # Rows of a row-major block land across the whole reserved area: all of it is written.
            saved = self.written[cb]
            self.written[cb] = 0
            self.write(cb, max(self.reserved[cb], 1), n)
            self.written[cb] = saved
        elif row.fills == FILLS_UNMODELLED:
            self.fail(f"multicasts into c_{cb}, which shares an L1 region: not modelled, so not provably safe", n)


def _check_shared_regions(program: Program) -> None:
    consumers: dict[int, set[str]] = {}
    producers: dict[int, set[str]] = {}
    for kernel in program.kernels:
        for n, _ in walk(kernel.body):
            if OPS[n.kind].cb == CB_POP:
                consumers.setdefault(n["cb"], set()).add(kernel.name)
            elif OPS[n.kind].cb == CB_PUSH:
                producers.setdefault(n["cb"], set()).add(kernel.name)
    for region in program.regions:
        if len(region.cb_indices) < 2:
            continue
        kernels = set().union(*(producers.get(i, set()) for i in region.cb_indices))
        if len(kernels) > 1:
            # Producers in different kernels share no order at all: nothing can prove them apart.
            raise IRVerificationError("+".join(sorted(kernels)), f"CBs {region.cb_indices} share L1 region "
                                      f"{region.name} but are produced by different kernels")
        for kernel in program.kernels:
            if kernel.name in kernels:
                _RegionWalker(program, kernel, region.cb_indices, consumers).run(kernel.body, {})


# ----------------------------------------------------------------------------------------------

def _check_balance(program: Program, totals: dict[str, Counter]) -> None:
    combos: dict[tuple[str, ...], tuple[int, int]] = {}
    for core in sorted({c for k in program.kernels for c in k.cores.cores()}, key=lambda c: (c[1], c[0])):
        combos.setdefault(tuple(k.name for k in program.kernels if k.runs_on(core)), core)
    for names, core in combos.items():
        pushed: Counter = Counter()
        popped: Counter = Counter()
        for name in names:
            for (kind, cb), pages in totals[name].items():
                if OPS[kind].cb == CB_PUSH:
                    pushed[cb] += pages
                elif OPS[kind].cb == CB_POP:
                    popped[cb] += pages
        for cb in sorted(set(pushed) | set(popped)):
            if pushed[cb] != popped[cb]:
                raise IRVerificationError(
                    "+".join(names), f"on core {core}, CB c_{cb}: {pushed[cb]} page(s) pushed but "
                                     f"{popped[cb]} popped over the program")


def _check_semaphores(program: Program) -> None:
    """Increments and multicast sets arriving at each core must match what its kernels wait for."""
    nx, ny = program.grid
    arriving: Counter = Counter()    # (sem, x, y) -> increments / valid-sets arriving
    waited: Counter = Counter()

    def count(kernel: Kernel, core: tuple[int, int]) -> None:
        env = {"core_x": core[0], "core_y": core[1]}
        for n, mult in counted(kernel.body):
            row = OPS[n.kind]
            if row.sem == SEM_INCREMENTS:
                tx, ty = n["noc_x"].logical(env), n["noc_y"].logical(env)
                arriving[(n["sem"], tx, ty)] += mult * n["value"]
            elif row.sem == SEM_MULTICASTS:
                # start/end are in NoC order (swapped on NOC 1): the rectangle is their bounding box
                sx, sy, ex, ey = (n[k].logical(env) for k in ("start_x", "start_y", "end_x", "end_y"))
                x0, x1, y0, y1 = min(sx, ex), max(sx, ex), min(sy, ey), max(sy, ey)
                # a multicast without loopback skips its own core when the rectangle holds it (TT-Metal's 1D
                # factory multicasts to the bounding box of all cores, sender included): num_dests excludes it;
                # with loopback it reaches every core of the rectangle, its own included
                loopback = row.loopback
                targets = [(xx, yy) for yy in range(y0, y1 + 1) for xx in range(x0, x1 + 1)
                           if loopback or (xx, yy) != core]
                if len(targets) != n["num_dests"] or (loopback and core not in targets):
                    raise IRVerificationError(kernel.name, f"multicast rectangle ({x0},{y0})-({x1},{y1}) "
                                              f"holds {len(targets)} cores{'' if loopback else ' besides its own'}"
                                              f"{', not its own' if loopback and core not in targets else ''}, "
                                              f"num_dests = {n['num_dests']}")
                for target in targets:
                    arriving[(n["sem"], *target)] += mult
            elif row.sem == SEM_WAITS:
                # A sender waits for `value` increments; a receiver waits for one VALID set.
                weight = n["value"] if n["sem"].endswith("_sender") else 1
                waited[(n["sem"], *core)] += mult * weight

    # past the grid with work only where the program gives the core semaphores (a width-sharded in0's shard cores)
    sem_cores = {c for s in program.semaphores for c in s.cores.cores()}
    for kernel in program.kernels:
        for core in kernel.cores.cores():
            if (core[0] >= nx or core[1] >= ny) and core not in sem_cores:
                raise IRVerificationError(kernel.name, f"core {core} is outside the {nx} x {ny} grid with work")
            count(kernel, core)
    # a core of the grid no kernel runs on (the bounding box of a 1D run whose last row is partial) only
    # receives the multicasts: no semaphore there is awaited
    idle = {c for c in CoreRange(0, 0, nx - 1, ny - 1).cores() if not any(k.runs_on(c) for k in program.kernels)}
    for key in sorted(set(arriving) | set(waited)):
        if key[1:] in idle and not waited[key]:
            continue
        if arriving[key] != waited[key]:
            sem, x, y = key
            raise IRVerificationError(sem, f"semaphore {sem} on core ({x},{y}): {arriving[key]} arriving, "
                                      f"{waited[key]} awaited")


def _check_compute_flags(program: Program) -> None:
    """The compute flags the descriptor, manifest and emulator read agree with the compute kernel's
    defines and ops, and with the DST the checker allowed."""
    flags = program.compute
    compute = next(k for k in program.kernels if k.processor == "TRISC")
    defines = dict(compute.defines)
    for define, on, what in (("PACKER_L1_ACC", flags.l1_acc_enabled, "l1_acc_enabled"),
                             ("FP32_DEST_ACC_EN", flags.fp32_dest_acc, "fp32_dest_acc")):
        if (define in defines) != on:
            raise IRVerificationError(compute.name, f"{what} = {on} but {define} is "
                                      f"{'not ' if on else ''}defined")
    sets_l1_acc = any(OPS[n.kind].category == L1_ACC_SWITCH and n["enable"] for n, _ in walk(compute.body))
    # With two K-blocks and no bias TT-Metal's kernel never turns accumulation on even under PACKER_L1_ACC
    # (block 0 packs with it off, the last block reloads), and every 0.81.1 factory defines it there
    # (packer_l1_acc && num_blocks > 1): the kernel's behaviour, not the factory's rule, decides this.
    accumulates = flags.l1_acc_enabled and (program.blocking.num_blocks > 2 or program.fuse_bias)
    if sets_l1_acc != accumulates:
        raise IRVerificationError(compute.name, f"l1_acc_enabled = {flags.l1_acc_enabled} but the compute kernel "
                                  f"{'never turns' if flags.l1_acc_enabled else 'turns'} L1 accumulation on")
    capacity = program.arch.dst_tiles(flags.dst_sync == "SyncFull", flags.fp32_dest_acc)
    if capacity != flags.dst_capacity:
        raise IRVerificationError(compute.name, f"{flags.dst_sync} with fp32_dest_acc = {flags.fp32_dest_acc} gives "
                                  f"{capacity} DST tiles; the kernel was checked against {flags.dst_capacity}")


def _check_activation(program: Program, kernel: Kernel) -> None:
    """An SFPU activation is what the plan fused, as TT's kernel runs it: the SFPU_ACTIVATION define
    and the table's named args exactly when the kernel has activation ops, one init before
    everything else, and every apply of that activation over one output subblock."""
    act = program.sfpu_activation
    ops = [n for n, _ in walk(kernel.body) if OPS[n.kind].activation]
    defined = "SFPU_ACTIVATION" in dict(kernel.defines)
    named = tuple((k, v) for k, v in kernel.named_compile_time_args if k.startswith("activation_"))
    if act is None:
        if ops or defined or named:
            raise IRVerificationError(kernel.name, "activation ops, define or args without an SFPU activation")
        return
    if not defined or named != act.named_args:
        raise IRVerificationError(kernel.name, f"{act.spelling}: SFPU_ACTIVATION and the named args "
                                  f"{act.named_args} are what TT's kernel reads; the kernel has {named}")
    first = next((n for n, _ in walk(kernel.body)), None)
    inits = sum(OPS[n.kind].activation == ACTIVATION_INIT for n in ops)
    if first is None or OPS[first.kind].activation != ACTIVATION_INIT or inits != 1:
        raise IRVerificationError(kernel.name, "the activation's init must run once, first (as TT's kernel)")
    for n in ops:
        if activations.planned(str(n["activation"])) != act:
            raise IRVerificationError(kernel.name, f"`{n.kind}` runs {n['activation']}, the plan fuses {act.spelling}")
        if OPS[n.kind].activation == ACTIVATION_APPLY and int(n["tiles"]) != program.blocking.out_subblock_tiles:
            raise IRVerificationError(kernel.name, f"apply_activation_from_pack over {n['tiles']} tiles, TT's kernel "
                                      f"passes out_subblock_num_tiles = {program.blocking.out_subblock_tiles}")


def _check_unpack_to_dest(program: Program, kernel: Kernel) -> None:
    """A CB unpacked straight into DST (UnpackToDestFp32) feeds no FPU operand: tt-llk converts Float32 to
    Float32 only into DST, never into SrcA / SrcB (TT-Metal's factory gives a CB the bias reads an alias for
    the reload instead). A copy through a view reads the pages of a CB it shares the L1 region and pages
    with, and the define that hands the kernel the view's index says that index."""
    cbs = {cb.index: cb for cb in program.cbs}
    defines = dict(kernel.defines)
    for cb in program.cbs:
        if cb.index_define and defines.get(cb.index_define) != str(cb.index):
            raise IRVerificationError(kernel.name, f"c_{cb.index}'s index reaches the kernel as {cb.index_define}, "
                                      f"defined {defines.get(cb.index_define)!r}")
    for n, _ in walk(kernel.body):
        row = OPS[n.kind]
        if row.category in (MATMUL, ELTWISE):
            for arg, _, _ in row.reads_front:
                if cbs[n[arg]].unpack_to_dest:
                    raise IRVerificationError(kernel.name, f"`{n.kind}` reads c_{n[arg]} as an FPU operand, but it "
                                              f"is unpacked straight into DST (UnpackToDestFp32)")
        view = n.get("view") if "view" in row.args else None
        if view is not None:
            base, alias = cbs[n["cb"]], cbs[view]
            if not alias.index_define or (alias.region, alias.pages, alias.page_bytes, alias.data_format) != (
                    base.region, base.pages, base.page_bytes, base.data_format):
                raise IRVerificationError(kernel.name, f"`{n.kind}` reads c_{base.index} through c_{view}, which is "
                                          f"not an alias of its pages")


def verify(program: Program) -> Program:
    totals: dict[str, Counter] = {}
    for kernel in program.kernels:
        checker = _Checker(program, kernel)
        checker.run(kernel.body, {"core_x": 0, "core_y": 0})
        checker.finish()
        _static_checks(program, kernel)
        _check_interface(program, kernel)
        if kernel.processor == "TRISC":
            _check_activation(program, kernel)
            _check_unpack_to_dest(program, kernel)
        totals[kernel.name] = op_totals(kernel.body)
    _check_balance(program, totals)
    _check_semaphores(program)
    _check_shared_regions(program)
    if program.compute.l1_acc_enabled:
        pages = program.cb_pages[CB_PARTIALS]
        if pages != program.blocking.out_block_tiles:
            raise IRVerificationError("compute", f"with packer L1 accumulation the partials CB must hold exactly "
                                      f"one output block ({program.blocking.out_block_tiles} tiles), it holds {pages}")
    _check_compute_flags(program)
    if CB_OUT not in program.cb_pages:
        raise IRVerificationError("compute", "the CB table has no output CB")
    return program
