"""TT-Metal's DRAM-sharded program for a kgen `dram_sharded` plan: TT-Metal 0.81.1's two readers with the
Metal 2.0 bindings its factory declares (MatmulMultiCoreReuseMultiCastDRAMShardedProgramFactory,
matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp, `create_program_dram_sharded_spec`; read
at the stored tenstorrent/tt-metal version with the `shards_per_block` gather and `workers_per_bank`, the
one whose kernels' arg names are the 0.81.1 wheel's; that wheel's kernels take the in0 and output shards
through `TensorBinding{IN0, "in0_shard"}` / `TensorBinding{OUTPUT, "out_shard"}` instead of that
version's borrowed `in0_sharded` / `out_reshard` DFBs, at the same L1 addresses):

    in0_gather_*   reader_bmm_tile_layout_in0_sender_dram_sharded.cpp   every core, RISCV_1 on in0's NoC
    in1_reader_writer  reader_bmm_tile_layout_in1_sender_dram_sharded.cpp  every core, RISCV_0 on in1's NoC

On kgen's cores: worker i (row-major over kgen's rectangle) is the factory's worker i, paired with DRAM
bank i (the emulator pairs them so), and the first `in0_shards` workers are in0's storage cores. The
factory multicasts in0 over the device's whole compute grid; here the grid is kgen's rectangle, which
every worker fills, so no core of it is idle (`worker_core_type` 0 never occurs).

The blocking is the factory's own as well: kgen's planner takes its subblock and its padded
per_core_N_compute (kgen/gen/dataflow/dram_sharded.py, factory_subblock), so both programs compute the
padded lanes, narrow the last in1 subblock's matmul_block to last_subblock_w_valid and write back only
the real columns. The compute kernel is the one the factory binds,
bmm_large_block_zm_fused_bias_activation_metal2.cpp, with kgen's compute args by their names
(:func:`compute`, which :func:`program` binds beside the two readers); port-check's compute-only
comparison runs its legacy twin in kgen's program, which kgen builds as the factory builds it
(MATMUL_DRAM_SHARDED, last_subblock_w_valid, is_worker_core).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.manifest import cores_of
from kgen.gen.dataflow.tt_program import (DataflowSwapError, ExpectedDifference, Metal2Kernel, TensorBinding, TtProgram,
                                         aligned_pages, noc_index, untiled_tensor)
from kgen.gen.rules import CB_IN0, CB_IN1, CB_OUT

if TYPE_CHECKING:
    from kgen.gen.planned import Plan

IN0_KERNEL = "reader_bmm_tile_layout_in0_sender_dram_sharded.cpp"
IN1_KERNEL = "reader_bmm_tile_layout_in1_sender_dram_sharded.cpp"
# The compute kernel the factory binds: the Metal 2.0 twin of the one port-check swaps into kgen's program.
COMPUTE_KERNEL = "bmm_large_block_zm_fused_bias_activation_metal2.cpp"
# The factory's semaphores the in0 sender binds (SemaphoreSpec order: sender 0, receiver 1, valid 2).
SEMAPHORES = {"in0_mcast_sender": 0, "in0_mcast_receiver": 1}
WORKER_CORE_TYPE = {"storage_and_worker": 2, "worker": 3}     # 1: storage only, 0: idle


def unsupported_reason(plan: Plan, manifest: Mapping[str, Any]) -> str | None:
    """Why TT-Metal's DRAM-sharded readers cannot run this plan, or None when they can."""
    return untiled_tensor(manifest)


def program(plan: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int], readers_writers: str) -> TtProgram:
    """TT-Metal's two readers in the places of kgen's, and the factory's Metal 2.0 compute kernel; `noc`: the
    NoC offsets of a logical worker core, which the named args carry as coordinates."""
    reason = unsupported_reason(plan, manifest)
    if reason:
        raise DataflowSwapError(reason)
    kernels = metal2_kernels(plan, manifest, noc, aligned_pages(manifest, plan.arch.dram_alignment))
    (k,) = [k for k in manifest["kernels"] if k["name"] == "compute"]
    return TtProgram(readers_writers, kernels, compute(plan, k))


def max_page_size_and_num_pages(num_tiles: int, tile_size: int, noc_max_page_size: int) -> tuple[int, int]:
    """dram_sharded_helpers::get_max_page_size_and_num_pages: the largest multiple of the tile size, at
    most one NoC burst (8192 B on Wormhole, 16384 B on Blackhole), that divides the block."""
    total = num_tiles * tile_size
    page = (noc_max_page_size // tile_size) * tile_size
    while total % page and page >= tile_size:
        page -= tile_size
    return page, total // page


def factory_workers(nt: int, banks: int, width: int) -> int:
    """The workers of in1 sharded `width` tiles wide over every bank: the banks left once "cores assigned
    to padding-only DRAM banks" are removed, banks - (banks * width - Nt) // width. A padded last shard
    keeps its worker, which reads and writes back the whole padded width (per_core_N_storage =
    per_core_N_in1_sender); each worker reads div_up(Nt, workers) tiles, which must be `width`."""
    return banks - (width * banks - nt) // width


def in1_pages(plan) -> tuple[int, int]:
    """(in1_page_size, in1_num_pages) of one K-block of in1: per_core_N x in0_block_w tiles at the
    DRAM-aligned tile size (the factory's in1_aligned_tile_size)."""
    p = plan
    aligned = -(-p.cb(CB_IN1).page_bytes // p.arch.dram_alignment) * p.arch.dram_alignment
    return max_page_size_and_num_pages(p.per_core_n * p.in0_block_w, aligned, p.arch.noc_max_burst_bytes)


def _worker_index(plan, core: tuple[int, int]) -> int:
    return core[1] * plan.grid[0] + core[0]


def _noc(core: tuple[int, int], noc: Mapping[str, int]) -> tuple[int, int]:
    return core[0] + noc["worker_x_offset"], core[1] + noc["worker_y_offset"]


def in0_sender(plan, kernels: list[dict], noc: Mapping[str, int], page: Mapping[str, int]) -> Metal2Kernel:
    """The in0 sender on every core, with the factory's named args (`in0_sender` KernelSpec)."""
    p = plan
    nx, ny = p.grid
    storage = [(i % nx, i // nx) for i in range(p.in0_shards)]       # sorted row-major, as the factory sorts
    in0_tile = p.cb(CB_IN0).page_bytes
    start, end = _noc((0, 0), noc), _noc((nx - 1, ny - 1), noc)
    if noc_index(kernels[0]) == 1:                                     # the factory swaps them on NOC_1
        start, end = end, start
    last_ktile_w = p.spec.k % 32
    cta = {"in0_block_num_tiles": p.per_core_m * p.in0_block_w,
           "in0_block_size_bytes": p.per_core_m * p.in0_block_w * in0_tile,
           "in0_last_ktile_w": last_ktile_w, "in0_last_ktile_h": 0,
           "in0_mcast_num_dests": p.num_cores, "in0_mcast_num_cores": nx * ny, "num_blocks": p.num_blocks,
           "in0_mcast_dest_noc_start_x": start[0], "in0_mcast_dest_noc_start_y": start[1],
           "in0_mcast_dest_noc_end_x": end[0], "in0_mcast_dest_noc_end_y": end[1],
           "num_blocks_per_shard": p.num_blocks // len(storage), "in0_block_w": p.in0_block_w,
           "shards_per_block": 1, "in0_shard_width_bytes": p.in0_shard_w * in0_tile}
    varargs = tuple(_noc(c, noc)[0] for c in storage) + tuple(_noc(c, noc)[1] for c in storage)
    runtime = []
    for k in kernels:
        for core in cores_of(k["core_ranges"]):
            if core in storage:
                sid = storage.index(core)
                named = {"worker_core_type": WORKER_CORE_TYPE["storage_and_worker"], "sender_id": sid,
                         "is_last_ktile_padded": int(sid + 1 == len(storage) and last_ktile_w > 0)}
            else:
                named = {"worker_core_type": WORKER_CORE_TYPE["worker"], "sender_id": 0, "is_last_ktile_padded": 0}
            runtime.append((core, named, varargs))
    return Metal2Kernel(
        "in0_sender", IN0_KERNEL, cta, ("worker_core_type", "sender_id", "is_last_ktile_padded"), tuple(runtime),
        dfbs={"in0": CB_IN0}, sems=dict(SEMAPHORES),
        tensors=(TensorBinding("in0_shard", True, False, page["in0"], {"l1_shard_address": "in0"}),))


def in1_sender_writer(plan, kernel: dict, noc: Mapping[str, int], page: Mapping[str, int]) -> Metal2Kernel:
    """The in1 sender/writer on every core (`in1_sender_writer` KernelSpec): worker i reads DRAM bank i and
    writes its output block back into output shard i (per_core_N_storage = per_core_N_in1_sender: one
    write-back triple per worker): per_core_M rows of per_core_N_storage tiles out of c_4, whose rows are
    per_core_N_compute tiles (out_tensor_stride_w_bytes), the padded columns left behind."""
    p = plan
    pcn, n_compute = p.per_core_n, p.per_core_n_compute
    workers = factory_workers(p.nt, len(p.arch.dram_bank_workers), pcn)
    if (-(-p.nt // workers), workers) != (pcn, p.num_cores):
        raise DataflowSwapError(f"kgen's DRAM-sharded plan ({p.num_cores} workers of {pcn} tiles) is not the factory's "
                                f"({workers} workers of {-(-p.nt // workers)} tiles) for Nt = {p.nt}")
    in1_tile, out_tile = p.cb(CB_IN1).page_bytes, p.cb(CB_OUT).page_bytes
    in1_aligned = -(-in1_tile // p.arch.dram_alignment) * p.arch.dram_alignment
    page_size, pages = in1_pages(p)
    cta = {"in1_page_size": page_size, "in1_num_pages": pages, "in1_block_w": pcn,
           "in1_block_num_tiles": pcn * p.in0_block_w, "num_blocks": p.num_blocks,
           "out_block_num_tiles": p.per_core_m * n_compute, "out_tensor_stride_w_bytes": n_compute * out_tile,
           "out_reshard_tensor_stride_w_bytes": pcn * out_tile, "per_core_M": p.per_core_m,
           "workers_per_bank": 1, "bank_row_stride_tiles": pcn, "reader_width_tiles": pcn}
    cores = sorted(cores_of(kernel["core_ranges"]), key=lambda c: _worker_index(p, c))
    banks: list[int] = []
    runtime = []
    for i, core in enumerate(cores):
        vc = i & 3                       # bank i; bump the VC if an earlier worker on this row uses it
        for j in range(i):
            if cores[j][1] == core[1] and (banks[j] & 3) == (i & 3):
                vc = (vc + 1) & 3
                break
        banks.append(i)
        named = {"is_worker_core": 1, "dram_bank_id": i, "vc": vc, "dram_reader_index": 0,
                 "num_shard_to_write_back": 1, "reshard_tensor_start_offset": 0}
        x, y = _noc(core, noc)
        runtime.append((core, named, (pcn * out_tile, x, y)))
    return Metal2Kernel(
        "in1_reader_writer", IN1_KERNEL, cta,
        ("is_worker_core", "dram_bank_id", "vc", "dram_reader_index", "num_shard_to_write_back",
         "reshard_tensor_start_offset"), tuple(runtime),
        dfbs={"in1": CB_IN1, "out": CB_OUT},
        tensors=(TensorBinding("in1", True, True, in1_aligned, {"buffer_address": "in1"}),
                 TensorBinding("out_shard", True, False, page["out"], {"l1_shard_address": "out"})),
        defines={"OUT_SHARDED": "1", "SKIP_MCAST": "1"})


def metal2_kernels(plan, manifest: dict, noc: Mapping[str, int], page: Mapping[str, int]) -> dict[str, Metal2Kernel]:
    """kgen kernel name -> TT-Metal's kernel in its place with the factory's bindings. kgen's in0 kernels
    (one per storage core, the receivers) are one kernel of the factory's; each gets its cores' args."""
    kernels = manifest["kernels"]
    in0 = [k for k in kernels if k["name"].startswith("in0_gather")]
    out: dict[str, Metal2Kernel] = {}
    whole = in0_sender(plan, in0, noc, page)
    for k in in0:
        mine = set(cores_of(k["core_ranges"]))
        out[k["name"]] = Metal2Kernel(k["name"], whole.source, whole.named_cta, whole.rta_names,
                                      tuple(r for r in whole.runtime if r[0] in mine), whole.dfbs, whole.sems,
                                      whole.tensors, whole.defines)
    (in1,) = [k for k in kernels if k["name"] == "in1_reader_writer"]
    out["in1_reader_writer"] = in1_sender_writer(plan, in1, noc, page)
    return out


def compute(plan, kernel: dict) -> Metal2Kernel:
    """The factory's `compute` KernelSpec: kgen's compute args (in the legacy kernel's order, which the
    Metal 2.0 twin reads by the same names), `last_subblock_w_valid` (out_subblock_w - (per_core_N_compute
    - per_core_N_in1_sender)), the is_worker_core runtime arg, the MATMUL_DRAM_SHARDED define, and its four
    DFBs."""
    names, values = kernel["compile_time_arg_names"], kernel["compile_time_args"]
    cta = {n: v for n, v in zip(names, values) if n != "in0_transpose_tile"}
    defines = {**kernel["defines"], "MATMUL_DRAM_SHARDED": "1",
               **({"IN0_TRANSPOSE_TILE": "1"} if dict(zip(names, values)).get("in0_transpose_tile") else {})}
    cta["last_subblock_w_valid"] = plan.last_subblock_w_valid
    cb = kernel["named_compile_time_args"]
    # a fused SFPU activation: the twin reads activation_type and activation_param0..2 as named args too
    cta.update({n: v for n, v in cb.items() if n.startswith("activation_")})
    return Metal2Kernel("compute", COMPUTE_KERNEL, cta, ("is_worker_core",),
                        tuple((c, {"is_worker_core": 1}, ()) for c in cores_of(kernel["core_ranges"])),
                        dfbs={"in0": cb["cb_in0"], "in1": cb["cb_in1"], "out": cb["cb_out"],
                              "intermed0": cb["cb_intermed0"]}, defines=defines)


def _rectangles(plan) -> int:
    """kgen's multicasts per K-block sent, summed over the senders: the rows above and below the sender
    and the rest of its own row left and right, those that have cores (dram_sharded.py's _around)."""
    nx, ny = plan.grid
    per_shard = plan.num_blocks // plan.in0_shards
    total = 0
    for i in range(plan.in0_shards):
        x, y = i % nx, i // nx
        total += per_shard * ((y > 0) + (y < ny - 1) + (x > 0) + (x < nx - 1))
    return total


def expected_differences(plan: Plan) -> tuple[ExpectedDifference, ...]:
    """Where TT-Metal's DRAM-sharded readers and kgen's count differently by design, TT's count minus
    kgen's, each from the two kernels' structure: C workers, S = num_blocks K-blocks sent (one per block),
    W = per_core_M tile rows, P = in1_num_pages per K-block, R = kgen's multicast rectangles."""
    p = plan
    pages = in1_pages(p)[1]
    cores, blocks = p.num_cores, p.num_blocks * p.batch_ct
    sends, rows, rects = blocks, p.per_core_m, _rectangles(p) if p.num_cores > 1 else 0
    many = cores > 1
    own = "TT-Metal's in0 sender multicasts a K-block straight out of the shard with loopback into its own c_0; "
    out = [
        ("noc_async_read", cores * blocks * (pages - 1) - sends * rows - cores * rows,
         own + "kgen copies it into c_0 first, one read per tile row; TT's in1 reader reads a K-block in "
               "in1_num_pages NoC-burst pages, kgen in one read; kgen's writer copies the output block into "
               "the output shard with local reads, TT's with writes (one per tile row)"),
        ("noc_async_read_barrier", -sends - cores, own + "kgen waits for that copy, and for its write-back copy"),
        ("noc_async_read_set_state", cores, "TT-Metal's in1 reader sets the bank read state once (set_async_read_state)"),
        ("noc_async_write", cores * rows, "TT-Metal's writer copies the output block into the output tensor's shard "
                                          "(tensor::out_shard) with one write per tile row; kgen's with local reads"),
        ("noc_async_write_barrier", 2 * cores, "TT-Metal's writer waits for its write-back writes, and its in0 sender "
                                               "ends with noc.async_write_barrier(); kgen's copy waits on reads"),
        ("noc_async_atomic_barrier", cores, "TT-Metal's in0 sender ends with noc.async_atomic_barrier()"),
        ("noc_cmd_buf_write_reg", cores, "TT-Metal's in1 reader restores the read command buffer's VC at its end"),
        ("noc_async_write_multicast", sends - rects, "TT-Metal multicasts a K-block once to the whole grid with "
                                                      "loopback; kgen to the cores around the sender, in up to four "
                                                      "rectangles"),
        ("noc_semaphore_set_multicast", (sends if many else 0) - rects,
         "TT-Metal multicasts the VALID flag once to the whole grid with loopback; kgen in up to four rectangles"),
        ("noc_semaphore_set", cores + sends - (0 if many else 2 * sends),
         "TT-Metal sets each worker's VALID word once at the start and its receiver flag INVALID for the blocks it "
         "sends too" + ("" if many else "; with one core kgen's sender has no handshake")),
        ("noc_semaphore_wait", sends if many else 2 * sends,
         "TT-Metal's sender also waits for its own VALID flag (loopback)" +
         ("" if many else ", and for 0 receivers' credits; with one core kgen's sender has no handshake")),
    ]
    if many and p.arch.behaviour.flush_mcast_before_flag:
        out.append(("noc_async_writes_flushed", -sends, "kgen also flushes the data multicast before the flag "
                                                        "multicast on Blackhole"))
    return tuple(out)
