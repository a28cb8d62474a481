"""The blackhole-py target: kgen's rendered program seen through blackhole-py's C++-kernel ABI.

blackhole-py (github.com/boopdotpng/blackhole-py; the commits are in configs/targets/blackhole_py.toml)
runs a `Program` of C++ source strings: a reader on NCRISC (NOC 0), a writer on BRISC (NOC 1), one
compute source for the three TRISCs, and per-core runtime args. Its compiler passes no compile-time
args, no common runtime args and no defines to a kernel, and its compute config goes through headers it
generates from the Program's fields. This module turns kgen's rendered build into that shape (a
`BhpyProgram`), lays out the blobs blackhole-py's dispatch.py would write (runtime args, semaphores,
CBs), and holds the rules a spec must meet to be exported. The emulator runs exactly this view
(kgen.proof.bhpy), written by `view_files` as a kgen build folder, which the type-check reads too
(kgen.proof.bhpy_typecheck); kgen.gen.targets.bhpy_export prints it as a Python module.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Union

from kgen.core.errors import KgenError, SpecError
from kgen.core.resources import config_table
from kgen.core.types import DATA_FORMAT_VALUE
from kgen.gen.dataflow import MCAST_2D, REUSE
from kgen.gen.targets import PortPlan

if TYPE_CHECKING:
    from kgen.gen.render import SourceFile

NAME = "blackhole-py"
# A blackhole-py checkout for the exported script to import from (when not run from one) and for kgen's
# type-check to find blackhole-py's own tree (tt-metal-deps/) in
CHECKOUT_ENV = "BLACKHOLE_PY"
SUPPORTED_DATAFLOWS = (MCAST_2D.name, REUSE.name)
# kgen's CB indices (TT-Metal 0.81.1's 2D factory) -> blackhole-py's: the output and the partials move
# to 16 and 24, the pair dispatch.py gives one address.
CB_INDEX = {4: 16, 5: 24}
# kgen's data formats (tt::DataFormat names) -> blackhole-py Dtype members, and back
_DTYPE_OF_FORMAT = {"Float16_b": "Float16_b", "Float32": "Float32", "Float16": "Float16"}
FORMAT_OF_DTYPE = {dtype: fmt for fmt, dtype in _DTYPE_OF_FORMAT.items()}

# A runtime-arg word: a number, or what the module resolves on the card: ("noc_x", logical column),
# ("noc_y", logical row), ("addr", tensor name).
Word = Union[int, tuple[str, Union[int, str]]]
Core = tuple[int, int]


# blackhole-py's own port plan for TT-Metal's peak matmul (its examples/matmul_peak.py), as `kgen ab
# --target blackhole-py` lays it out: matmul_tiles first (kgen's op table prints matmul_block only),
# then matmul_block with spill/reload, then the full L1-accumulation lifecycle.
PORT_PLAN = PortPlan(
    field="compute.packer_l1_acc",
    stages=(("matmul_block, spill/reload", "false"), ("full L1-acc lifecycle", "true")),
    not_rendered=(("matmul_tiles for matmul_block",
                   "not rendered: kgen's op table prints matmul_block only (TT-Metal's 2D factory's compute kernel)"),),
)


def facts() -> dict:
    return config_table("targets/blackhole_py.toml")


def source_line() -> str:
    f = facts()["source"]
    return (f"{f['repository']} dispatch.py @ {f['dispatch_commit'][:7]}, compiler.py @ {f['compiler_commit'][:7]}, "
            f"examples/matmul_peak.py @ {f['example_commit'][:7]}")


# ----------------------------------------------------------------------------------------------
# what the target can express

def check_supported(spec, plan) -> tuple[str, ...]:
    """Exit 2 (SpecError) naming why blackhole-py cannot run this spec; else the notes to print."""
    f = facts()
    where = f"blackhole-py ({f['source']['repository']} @ {f['source']['dispatch_commit'][:7]})"
    if spec.arch != "blackhole":
        raise SpecError(f"{where} runs on Blackhole cards only; this spec is arch = {spec.arch}",
                        spec.span("arch"), hint="set arch = blackhole")
    if spec.dataflow not in SUPPORTED_DATAFLOWS:
        raise SpecError(f"{where} places one reader sender per grid row and one writer sender per grid column "
                        f"(its Program's grid roles); dataflow = {spec.dataflow} cannot be expressed",
                        spec.span("dataflow"), hint=f"use dataflow = {' or '.join(SUPPORTED_DATAFLOWS)}")
    if spec.transpose_mcast:
        raise SpecError(f"{where} sends in0 from the grid's first column and in1 from its first row; "
                        "transpose_mcast swaps them", spec.span("transpose_mcast"), hint="drop transpose_mcast")
    if spec.memory.sharded:
        raise SpecError(f"{where} reads and writes interleaved DRAM buffers only; a tensor placed in L1 "
                        "(sharded or interleaved) cannot be expressed", spec.span("memory"),
                        hint="drop the memory { } block")
    if spec.batch != 1:
        raise SpecError(f"the blackhole-py export runs one matrix product (batch = 1); this spec has batch = "
                        f"{spec.batch}", spec.span("batch"), hint="set batch = 1")
    if spec.untilize_out:
        raise SpecError("the blackhole-py export reads the output as tiles; untilize_out cannot be expressed",
                        spec.span("fuse"), hint="drop untilize_out")
    if spec.compute.math_fidelity not in f["math_fidelity"]:
        raise SpecError(f"{where}'s MathFidelity has only {', '.join(f['math_fidelity'])}; this spec asks "
                        f"{spec.compute.math_fidelity}", spec.span("compute"),
                        hint="set compute.math_fidelity = HiFi2 (or LoFi)")
    _check_formats(spec, plan, where)
    if plan.compute.fp32_dest_acc and plan.fuse_bias:
        # compiler.py writes each CB's Dtype as both its unpack source and destination format, so the
        # Float32 partials (CB 24) unpack Float32 -> Float32, straight into DST (what TT-Metal's factory
        # asks with UnpackToDestFp32, docs/reference/provenance.md N8); the bias stage reads them through
        # SrcA, which tt-llk supports only into DST (is_unpacker_format_conversion_supported_dest).
        # TT-Metal gives the reload an alias CB over the partials instead; dispatch.py shares an address
        # between CB 16 and 24 only.
        raise SpecError(f"{where} unpacks every Float32 CB straight into DST (its compute headers give each CB "
                        "one format for unpack source and destination), so the fused bias cannot read the "
                        "Float32 partials of fp32_dest_acc through SrcA", spec.span("compute"),
                        hint="set compute.fp32_dest_acc = false, or fuse.bias = false")
    return hazard_notes(plan)


def _check_formats(spec, plan, where: str) -> None:
    tensors = {"in0": plan.in0_format, "in1": plan.in1_format, "out": plan.out_format}
    if plan.bias_format:
        tensors["bias"] = plan.bias_format
    for name, fmt in tensors.items():
        dtype = _DTYPE_OF_FORMAT.get(fmt)
        if dtype is None:
            raise SpecError(f"{where}'s Dtype has no {fmt} (no block-float formats; it has "
                            f"{', '.join(facts()['dtype'])}): {name} cannot be expressed", spec.span("dtype"),
                            hint=f"set dtype.{name} = bfloat16")
        if dtype == "Float32":
            raise SpecError(f"{where}'s Dtype.Float32 is 'internal-only: used for f32_acc dest accumulation, "
                            f"not for host IO' (dispatch.py); {name} = float32 cannot be a tensor",
                            spec.span("dtype"), hint=f"set dtype.{name} = bfloat16 (fp32_dest_acc keeps "
                                                     "Float32 partials)")


def hazard_notes(plan) -> tuple[str, ...]:
    """blackhole-py's known hazards as planner rules for this target.

    IEEE Float16 partials under packer L1 accumulation with two or more in1 subblocks give
    data-dependent NaNs on silicon (blackhole-py docs/packer-l1-acc-float16-hardware-bug.md): the
    partials must stay Float16_b (or Float32), as TT-Metal keeps them. An fp32 Dst with SyncHalf holds
    half the tiles: kgen's DST rule (the plan's dst_capacity) has already refused a subblock larger."""
    notes = []
    if plan.l1_acc_enabled:
        if plan.partials_format == "Float16" and plan.in1_num_subblocks >= 2:
            raise SpecError("Float16 partials with packer L1 accumulation and "
                            f"{plan.in1_num_subblocks} in1 subblocks give data-dependent NaNs on Blackhole "
                            "(blackhole-py docs/packer-l1-acc-float16-hardware-bug.md)",
                            plan.spec.span("compute"), hint="keep the partials Float16_b or Float32")
        notes.append(f"partials {plan.partials_format} under packer L1 accumulation (never IEEE Float16: "
                     "blackhole-py's packer-l1-acc-float16 hardware bug; TT-Metal keeps them Float16_b too)")
    if plan.compute.fp32_dest_acc:
        notes.append(f"fp32 Dst with {plan.dst_sync}: {plan.dst_capacity} tiles per section, subblock "
                     f"{plan.out_subblock_tiles} tiles (kgen's DST rule)")
    return tuple(notes)


# ----------------------------------------------------------------------------------------------
# the program in blackhole-py's shape

@dataclass(frozen=True)
class RoleKernel:
    role: str                    # reader | reader_recv | writer | writer_recv | compute
    kgen_name: str               # kgen's kernel (manifest name)
    source: str                  # the adapted C++ source
    cores: tuple[Core, ...]      # logical cores it runs on
    processor: str               # RISCV_0 (BRISC) | RISCV_1 (NCRISC) | TRISC
    noc: int | None


@dataclass(frozen=True)
class BhpyProgram:
    name: str
    grid: tuple[int, int]                          # logical columns x rows
    kernels: Mapping[str, RoleKernel]
    writer_args: Mapping[Core, tuple[Word, ...]]
    reader_args: Mapping[Core, tuple[Word, ...]]
    cbs: tuple[tuple[int, str, int], ...]          # (index, Dtype member, tiles), in allocation order
    semaphores: int
    math_fidelity: str
    approx: bool
    dst_accum_mode: bool
    dst_full_sync: bool
    tensors: tuple[dict, ...]                      # the manifest's io_tensors
    notes: tuple[str, ...]

    @property
    def cores(self) -> tuple[Core, ...]:
        gx, gy = self.grid
        return tuple((x, y) for y in range(gy) for x in range(gx))


def view(plan, rendered) -> BhpyProgram:
    """kgen's rendered program as blackhole-py runs it (check_supported must have passed)."""
    manifest = rendered.manifest
    texts = {f.path: f.text for f in rendered.files}
    f = facts()["placement"]
    kernels: dict[str, RoleKernel] = {}
    args: dict[str, dict[Core, tuple[Word, ...]]] = {"writer": {}, "reader": {}}
    for k in manifest["kernels"]:
        role, processor, noc = _role_of(k)
        if processor != "TRISC":
            noc = f["writer_noc"] if role.startswith("writer") else f["reader_noc"]
        source = adapt_source(texts[k["source"]], k, compute=processor == "TRISC")
        cores = tuple(tuple(r["core"]) for r in k["runtime_args"])
        kernels[role] = RoleKernel(role, k["name"], source, cores, processor, noc)
        if processor != "TRISC":
            side = "writer" if role.startswith("writer") else "reader"
            for r in k["runtime_args"]:
                args[side][tuple(r["core"])] = _words(k, r["args"], noc)
    _check_roles(plan, kernels)
    # dispatch.py pack_rta joins a core's writer and reader args unpadded, yet every reader reads from
    # the longest writer list's end (rta_offset[1] = max writer bytes): equal lengths per role keep
    # each core's reader args where its reader looks for them.
    for side in args.values():
        longest = max((len(a) for a in side.values()), default=0)
        for core, a in side.items():
            side[core] = a + (0,) * (longest - len(a))
    c = plan.compute
    return BhpyProgram(manifest["kernel_id"], plan.grid, kernels, args["writer"], args["reader"], _cbs(manifest),
                       len(manifest["semaphores"]), c.math_fidelity, c.math_approx, c.fp32_dest_acc,
                       plan.dst_sync == "SyncFull", tuple(manifest["io_tensors"]), hazard_notes(plan))


def _role_of(k: dict) -> tuple[str, str, int | None]:
    processor = k["processor"]
    if processor == "TRISC":
        return "compute", processor, None
    side = "writer" if processor == "RISCV_0" else "reader"
    cores = {tuple(r["core"]) for r in k["runtime_args"]}
    return (side if (0, 0) in cores else side + "_recv"), processor, k["noc"]


def _check_roles(plan, kernels: Mapping[str, RoleKernel]) -> None:
    """blackhole-py's device gives the reader kernel to the grid's first column and the writer kernel
    to its first row, the *_recv kernels to the rest (or the same kernel when no *_recv is given)."""
    for side, first in (("reader", lambda c: c[0] == 0), ("writer", lambda c: c[1] == 0)):
        sender, recv = kernels.get(side), kernels.get(side + "_recv")
        if sender is None:
            raise SpecError(f"kgen's program has no {side} kernel on core (0, 0); blackhole-py needs one")
        if recv is not None and not (all(first(c) for c in sender.cores) and not any(first(c) for c in recv.cores)):
            raise SpecError(f"kgen's {sender.kgen_name} / {recv.kgen_name} split of the grid is not blackhole-py's "
                            f"(the {side} kernel on the grid's first {'column' if side == 'reader' else 'row'})")


def _words(k: dict, values: list, noc: int) -> tuple[Word, ...]:
    """One core's args of a data-movement kernel in blackhole-py's ABI: its runtime args, then the
    common ones (blackhole-py has none, so the buffer addresses become per-core args); a multicast
    rectangle ordered for the NoC the kernel now runs on (NOC 1 names the far corner first)."""
    names = list(k["runtime_arg_names"])
    out: list[Word] = [_word(v) for v in values]
    for axis in ("x", "y"):
        s, e = f"mcast_start_{axis}", f"mcast_end_{axis}"
        if s in names and e in names:
            i, j = names.index(s), names.index(e)
            lo, hi = sorted((out[i], out[j]), key=lambda w: w[1] if isinstance(w, tuple) else w)
            out[i], out[j] = (hi, lo) if noc == 1 else (lo, hi)
    return tuple(out + [_word(v) for v in k["common_runtime_args"]])


def _word(v) -> Word:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    (kind, arg), = v.items()
    return ("addr", arg) if kind == "buffer_address" else (kind, int(arg))


def _cbs(manifest: dict) -> tuple[tuple[int, str, int], ...]:
    """The CBConfigs: kgen's CBs at blackhole-py's indices. Of the 16/24 pair the larger is listed
    first, because dispatch.py sizes the shared region by whichever of the two comes first."""
    cbs = []
    for cb in manifest["cbs"]:
        for fd in cb["format_descriptors"]:
            dtype = _DTYPE_OF_FORMAT[fd["data_format"]]
            cbs.append((CB_INDEX.get(fd["buffer_index"], fd["buffer_index"]), dtype, cb["total_size"] // fd["page_size"]))
    plain = [c for c in cbs if c[0] not in CB_INDEX.values()]
    pair = sorted((c for c in cbs if c[0] in CB_INDEX.values()), key=lambda c: -tile_bytes(c[1]) * c[2])
    return tuple(plain + pair)


def tile_bytes(dtype: str) -> int:
    """dispatch.py Dtype.tile_size: 32 * 32 * bytes per element."""
    return 1024 * (4 if dtype in ("Float32", "Int32", "UInt32") else 1 if dtype in ("Int8", "UInt8") else 2)


# ----------------------------------------------------------------------------------------------
# kernel sources in blackhole-py's ABI

_MCAST_DATA = re.compile(r"const uint64_t mcast_addr = get_noc_multicast_addr\(([^;]*), l1_addr\);\n\s*"
                         r"noc_async_write_multicast\(l1_addr, mcast_addr, ([^,]+), [^;]+\);")
_MCAST_SEM = re.compile(r"noc_semaphore_set_multicast\(sem_addr, get_noc_multicast_addr\(([^;]*), sem_addr\), [^;]+\);")
_COMMON = re.compile(r"get_common_arg_val<uint32_t>\((\d+)\)")
_ACCESSOR_ARGS = re.compile(r"[ \t]*constexpr auto (\w+)_args = TensorAccessorArgs<(\d+)>\(\);\n")
_ACCESSOR = re.compile(r"const auto (\w+) = TensorAccessor\((\w+)_args, (\w+), (\w+)\);")
_CT_ARG = re.compile(r"get_compile_time_arg_val\((\d+)\)")
_NAMED_ARG = re.compile(r'get_named_compile_time_arg_val\("(\w+)"\)')
_IS_DRAM = 2            # tensor_accessor ArgConfig IsDram (tensor_accessor_args.h, 0.81.1): the only bit allowed
_CB_ASSERT = re.compile(r'static_assert\((cb_\w+) == (\d+), "kgen: the CB table puts (cb_\w+) at c_(\d+)"\)')
_LAST_INCLUDE = re.compile(r"(#include [^\n]+\n)(?![\s\S]*#include )")

_SPLIT_HELPER = """
// Blackhole's NoC columns {first} and {last} hold no Tensix cores: a multicast rectangle across them goes as
// two, west and east, as blackhole-py's matmul reader sends them (examples/matmul_peak.py).
template <class Send>
inline void bhpy_split_multicast(uint32_t sx, uint32_t sy, uint32_t ex, uint32_t ey, Send send) {{
    const uint32_t x0 = sx < ex ? sx : ex, x1 = sx < ex ? ex : sx, y0 = sy < ey ? sy : ey, y1 = sy < ey ? ey : sy;
    auto part = [&](uint32_t a, uint32_t b) {{
        if (a > b) return;
        const uint32_t dests = (b - a + 1) * (y1 - y0 + 1);
        if (noc_index == 1) send(b, y1, a, y0, dests); else send(a, y0, b, y1, dests);
    }};
    if (x1 < {first}u || x0 > {last}u) {{ part(x0, x1); return; }}
    part(x0, {first}u - 1u);
    part({last}u + 1u, x1);
}}
"""


def adapt_source(text: str, k: dict, *, compute: bool) -> str:
    """kgen's kernel source with what blackhole-py's compiler does not pass written into it: each
    compile-time arg as its value (its firmware stubs include compile_time_args.h before the kernel,
    so the args cannot come in as a macro either), the CB indices, the defines, the buffer addresses
    as runtime args, and interleaved DRAM accessors that need no compile-time args."""
    ct = list(k["compile_time_args"])
    named = {n: (CB_INDEX.get(v, v) if n.startswith("cb_") else v) for n, v in k["named_compile_time_args"].items()}
    accessors = {}
    for m in _ACCESSOR_ARGS.finditer(text):
        config = ct[int(m.group(2))]
        if config & ~_IS_DRAM:
            raise KgenError(f"kernel {k['name']}: accessor config {config} is not interleaved DRAM")
        accessors[m.group(1)] = m.group(2)
    lines = [f"// Adapted for blackhole-py ({source_line()}): its compiler passes no compile-time args,",
             "// no common runtime args and no defines, so they are written here.",
             *(f"#define {name} {value}" for name, value in k["defines"].items())]
    body = _ACCESSOR_ARGS.sub("", text)
    body = _ACCESSOR.sub(lambda m: (f"const InterleavedAddrGen<true> {m.group(1)} = {{.bank_base_address = {m.group(3)}, "
                                    f".page_size = {m.group(4)}}};"), body)
    body = _CT_ARG.sub(lambda m: f"{ct[int(m.group(1))]}u", body)
    body = _NAMED_ARG.sub(lambda m: f"{named[m.group(1)]}u", body)
    body = _COMMON.sub(lambda m: f"get_arg_val<uint32_t>({len(k['runtime_arg_names']) + int(m.group(1))})", body)
    body = _CB_ASSERT.sub(lambda m: (f'static_assert({m.group(1)} == {CB_INDEX.get(int(m.group(2)), int(m.group(2)))}, '
                                     f'"blackhole-py: {m.group(3)} at c_{CB_INDEX.get(int(m.group(4)), int(m.group(4)))}")'), body)
    if not compute:
        body = _adapt_multicasts(body)
    left = [w for w in ("TensorAccessor", "get_compile_time_arg_val", "get_named_compile_time_arg_val",
                        "get_common_arg_val") if w in body.split("void kernel_main", 1)[-1].split("namespace NAMESPACE", 1)[-1]]
    if left:
        raise KgenError(f"kernel {k['name']}: the blackhole-py adaptation left {', '.join(left)} in the source")
    return "\n".join(lines) + "\n" + body


def _adapt_multicasts(body: str) -> str:
    gap = facts()["placement"]["gap_columns"]
    data = _MCAST_DATA.sub(lambda m: (f"bhpy_split_multicast({m.group(1)}, [&](uint32_t sx, uint32_t sy, uint32_t ex, "
                                      f"uint32_t ey, uint32_t n) {{ noc_async_write_multicast(l1_addr, "
                                      f"get_noc_multicast_addr(sx, sy, ex, ey, l1_addr), {m.group(2)}, n); }});"), body)
    sems = _MCAST_SEM.sub(lambda m: (f"bhpy_split_multicast({m.group(1)}, [&](uint32_t sx, uint32_t sy, uint32_t ex, "
                                     f"uint32_t ey, uint32_t n) {{ noc_semaphore_set_multicast(sem_addr, "
                                     f"get_noc_multicast_addr(sx, sy, ex, ey, sem_addr), n); }});"), data)
    if sems == body:
        return body
    helper = _SPLIT_HELPER.format(first=gap[0], last=gap[-1])
    return _LAST_INCLUDE.sub(lambda m: m.group(1) + helper, sems, count=1)


# ----------------------------------------------------------------------------------------------
# the blobs dispatch.py writes

def align_up(v: int, a: int) -> int:
    return (v + a - 1) // a * a


@dataclass(frozen=True)
class RtaLayout:
    writer_bytes: int          # each role padded to its longest across cores
    reader_bytes: int
    compute_bytes: int
    sem_offset: int            # align(writer + reader + compute, L1_ALIGN)


def rta_layout(p: BhpyProgram) -> RtaLayout:
    w = 4 * max((len(a) for a in p.writer_args.values()), default=0)
    r = 4 * max((len(a) for a in p.reader_args.values()), default=0)
    return RtaLayout(w, r, 0, align_up(w + r, facts()["program"]["l1_align"]))


def rta_words(p: BhpyProgram, core: Core) -> tuple[Word, ...]:
    """One core's runtime-arg blob as words (dispatch.py pack_rta): writer args, reader args, compute
    args, each as given (a core's own count, not padded: view() pads the lists), zeros up to the
    semaphore offset, 16 B per semaphore."""
    lay = rta_layout(p)
    words: list[Word] = [*p.writer_args.get(core, ()), *p.reader_args.get(core, ())]
    if p.semaphores:
        words += [0] * max(0, lay.sem_offset // 4 - len(words))
        words += [0] * (p.semaphores * facts()["program"]["semaphore_bytes"] // 4)
    return tuple(words)


def role_args(p: BhpyProgram, core: Core, side: str) -> tuple[Word, ...]:
    """What get_arg_val reads on `side` (writer | reader) of a core: its slice of the blob, from the
    role's rta_offset (writer 0, reader max writer bytes) over the role's padded length."""
    lay = rta_layout(p)
    blob = rta_words(p, core)
    start, size = (0, lay.writer_bytes) if side == "writer" else (lay.writer_bytes, lay.reader_bytes)
    part = list(blob[start // 4:(start + size) // 4])
    return tuple(part + [0] * (size // 4 - len(part)))


def cb_entries(p: BhpyProgram, base: int) -> tuple[tuple[int, int, int, int, int], ...]:
    """dispatch.py build_cb_blob: (index, address, size, pages, page size) per CB in list order, from
    `base` up; CB 16 and CB 24 share the address of whichever comes first."""
    shared = facts()["program"]["shared_cbs"]
    addr, seen, out = base, {}, []
    for index, dtype, tiles in p.cbs:
        page = tile_bytes(dtype)
        other = next((s for s in shared if s != index), None) if index in shared else None
        if other is not None and other in seen:
            where = seen[other]
        else:
            where, addr = addr, addr + page * tiles
        seen[index] = where
        out.append((index, where, page * tiles, tiles, page))
    return tuple(out)


def cb_blob(p: BhpyProgram, base: int) -> bytes:
    """The CB blob itself: 16 B per index up to the highest used, little-endian."""
    entries = cb_entries(p, base)
    size = facts()["program"]["cb_entry_bytes"]
    blob = bytearray(size * (max(e[0] for e in entries) + 1))
    for index, addr, total, pages, page in entries:
        blob[index * size:(index + 1) * size] = b"".join(v.to_bytes(4, "little") for v in (addr, total, pages, page))
    return bytes(blob)


# ----------------------------------------------------------------------------------------------
# the view as a kgen build folder: what kgen's emulator and type-check run

def physical(p: BhpyProgram) -> dict[Core, tuple[int, int]]:
    """Logical core -> Blackhole NoC 0 coordinates: the worker columns and rows in order."""
    f = facts()["placement"]
    gx, gy = p.grid
    return {(x, y): (f["worker_columns"][x], f["worker_rows"][y]) for y in range(gy) for x in range(gx)}


def _resolve(w: Word, phys: dict) -> int | dict:
    if isinstance(w, int):
        return w
    kind, arg = w
    if kind == "addr":
        return {"buffer_address": arg}
    cols = sorted({c[0] for c in phys.values()})
    rows = sorted({c[1] for c in phys.values()})
    return cols[arg] if kind == "noc_x" else rows[arg]


def view_files(p: BhpyProgram, rendered) -> tuple[SourceFile, ...]:
    """The build folder the emulator runs: kgen's files with the blackhole-py kernels and manifest."""
    phys = physical(p)
    manifest = json.loads(json.dumps(rendered.manifest))
    by_name = {k.kgen_name: k for k in p.kernels.values()}
    sources = {}
    for k in manifest["kernels"]:
        rk = by_name[k["name"]]
        sources[k["source"]] = rk.source
        side = "writer" if rk.role.startswith("writer") else "reader"
        k.update(compile_time_args=[], named_compile_time_args={}, defines={}, noc=None if rk.noc is None else f"NOC_{rk.noc}",
                 common_runtime_args=[], common_runtime_arg_names=[])
        if rk.processor != "TRISC":
            k["runtime_args"] = [{"core": list(c), "args": [_resolve(w, phys) for w in role_args(p, c, side)]}
                                 for c in rk.cores]
    for cb in manifest["cbs"]:
        for fd in cb["format_descriptors"]:
            fd["buffer_index"] = CB_INDEX.get(fd["buffer_index"], fd["buffer_index"])
    out = []
    for f in rendered.files:
        if f.path.endswith("named_ct_arg_map_generated.h"):
            continue
        text = sources.get(f.path, f.text)
        if f.path.endswith("defines_generated.h"):
            text = ""                                  # blackhole-py writes it empty
        elif f.path.endswith("chlkc_descriptors.h"):
            text = descriptors(f.text, p)
        elif f.path == "manifest.json":
            text = json.dumps(manifest, indent=1)
        out.append(dataclasses.replace(f, text=text))
    return tuple(out)


_ARRAY = re.compile(r"(constexpr [\w: ]+? (\w+)\[(\d+)\] = \{\s*)([^}]*)(\s*\};)")


def descriptors(text: str, p: BhpyProgram) -> str:
    """The format and tile-size tables as blackhole-py's compiler.py generates them: per CB index its
    Dtype's code (the same for unpack/pack src/dst), Float16_b for an unused index. blackhole-py's
    tables have 32 entries; the 0.81.1 headers the emulator models read 64 (the rest unused)."""
    dtype_code = facts()["dtype"]
    fmt = [dtype_code["Float16_b"]] * 64
    size = [tile_bytes("Float16_b")] * 64
    for index, dtype, _ in p.cbs:
        fmt[index] = DATA_FORMAT_VALUE[FORMAT_OF_DTYPE[dtype]]
        size[index] = tile_bytes(dtype)

    def table(m: re.Match) -> str:
        name = m.group(2)
        if name.endswith("_format"):
            values = fmt
        elif name.endswith("_tile_size"):
            values = size
        else:
            return m.group(0)
        return m.group(1) + ",".join(map(str, values[:int(m.group(3))])) + m.group(5)
    return _ARRAY.sub(table, text)
