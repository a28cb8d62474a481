"""TT-Metal's own data-movement kernels for a kgen plan, with the args TT-Metal's factory gives them.

For an `mcast_2d` plan, kgen's four readers/writers correspond one to one to the kernels of
TT-Metal's 2D multicast matmul factory (ttmetal-matmul.md §2.4):

    in0_sender           reader_bmm_tile_layout_in0_sender_padding.cpp        left column, NCRISC
    in0_receiver         reader_bmm_tile_layout_in0_receiver.cpp              other columns, NCRISC
    in1_sender_writer    reader_bmm_tile_layout_in1_sender_writer_padding.cpp top row, BRISC
    in1_receiver_writer  reader_bmm_tile_layout_in1_receiver_writer_padding.cpp other rows, BRISC

:func:`with_tt_dataflow` copies a build folder and puts TT-Metal's kernels (from the fetched
headers, unchanged) in those places, with the compile-time args, named args, defines and per-core
runtime args the factory computes for the same blocking (§2.5; the index layout is the kernels' own,
the values the legacy 2D builder's, `create_program_mcast_in0_in1`). With TT-Metal's compute
kernel swapped in too (:func:`kgen.gen.pipeline.with_compute_kernel`) the folder is TT-Metal's whole
program on kgen's plan, CB table and inputs, which `kgen port-check` runs beside kgen's.

Only what kgen's plans use is reproduced: interleaved DRAM tensors in tile layout, no sharding,
no transpose_mcast, no sparsity and no fused collectives. The "split half" second NOC of the right
half's receivers is not reproduced: the emulator's NoC has no per-NOC effect on the result.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen.core.manifest import cores_of
from kgen.proof.emulate import round_up
from kgen.core.errors import KgenError
from kgen.toolchain.headers import toolchain_config

# kgen kernel name -> TT-Metal 0.81.1 kernel file (in the headers' dataflow kernel folder).
TT_KERNELS = {
    "in0_sender": "reader_bmm_tile_layout_in0_sender_padding.cpp",
    "in0_receiver": "reader_bmm_tile_layout_in0_receiver.cpp",
    "in1_sender_writer": "reader_bmm_tile_layout_in1_sender_writer_padding.cpp",
    "in1_receiver_writer": "reader_bmm_tile_layout_in1_receiver_writer_padding.cpp",
}

# CB indices the 2D factory names for TT-Metal's readers whether or not the plan has them: the
# height-sharded in0 CB (c_2), the bias CB (c_3) and the sparsity CBs of the in0 and in1 senders
# (c_6, c_7). The kernels bind them even when unused.
TT_FIXED_CBS = {"cb_in0_sharded": 2, "cb_bias": 3, "in0_sender cb_sparsity": 6, "in1_sender cb_sparsity": 7}

# ArgConfig of an interleaved DRAM TensorAccessorArgs (tensor_accessor_args.h: IsDram = 1 << 1).
INTERLEAVED_DRAM = 2


class DataflowSwapError(KgenError):
    """TT-Metal's data-movement kernels cannot be put in this plan's place."""


@dataclass(frozen=True)
class TtKernelArgs:
    """What TT-Metal's factory gives one data-movement kernel."""

    name: str                                   # kgen's kernel it replaces
    compile_time_args: tuple[int, ...]
    named_compile_time_args: dict[str, int]
    defines: dict[str, str]
    runtime_args: tuple[tuple[tuple[int, int], tuple[Any, ...]], ...]   # (core, args) per core


def unsupported_reason(plan, manifest: dict) -> str | None:
    """Why TT-Metal's 2D multicast readers cannot run this plan, or None when they can."""
    if plan.spec.dataflow != "mcast_2d":
        return (f"dataflow {plan.spec.dataflow}: TT-Metal's reader_bmm_tile_layout_in0/in1 sender/receiver kernels "
                f"are those of the 2D multicast factory (mcast_2d)")
    for t in manifest["io_tensors"]:
        if t["layout"] != "TILE":
            return f"tensor {t['name']} is {t['layout']}; TT-Metal's 2D multicast writers write tiles"
    senders = {"in0_sender", "in1_sender_writer"}         # receivers exist only on grids wider/taller than 1
    missing = sorted(senders - {k["name"] for k in manifest["kernels"]})
    if missing:
        return f"the build folder lacks kgen kernels {', '.join(missing)}"
    return None


def _noc(x: int, y: int) -> tuple[dict, dict]:
    return {"noc_x": x}, {"noc_y": y}


def _rectangle(start: tuple[int, int], end: tuple[int, int], noc_index: int) -> list[dict]:
    """A multicast rectangle as runtime args: given low-to-high (NOC 0 order), swapped on NOC 1
    (the factory: `if (in0_noc == NOC_1) std::swap(in0_mcast_start, in0_mcast_end)`)."""
    if noc_index == 1:
        start, end = end, start
    return [*_noc(*start), *_noc(*end)]


def _noc_index(kernel: dict) -> int:
    return int((kernel.get("noc") or "NOC_0").rsplit("_", 1)[1])


def tt_kernel_args(plan, manifest: dict) -> dict[str, TtKernelArgs]:
    """The factory's args for each of kgen's data-movement kernels present in the manifest."""
    reason = unsupported_reason(plan, manifest)
    if reason:
        raise DataflowSwapError(reason)
    arch = plan.arch
    tensors = {t["name"]: t for t in manifest["io_tensors"]}
    page = {n: round_up(t["page_size"], arch.dram_alignment) for n, t in tensors.items()}
    sems = {s["name"]: s["id"] for s in manifest["semaphores"]}
    kernels = {k["name"]: k for k in manifest["kernels"]}
    named = {k["name"]: k["named_compile_time_args"] for k in manifest["kernels"]}
    bias = "bias" in tensors

    mt, nt, kt = plan.mt, plan.nt, plan.kt
    batch = plan.batch_ct                   # batch is fused into Mt: the factory's B is 1
    cols, rows = plan.grid                  # num_blocks_x, num_blocks_y
    pcm, pcn = plan.per_core_m, plan.per_core_n
    obh, obw, ibw = plan.out_block_h, plan.out_block_w, plan.in0_block_w
    sbh, sbw = plan.out_subblock_h, plan.out_subblock_w
    nbw, nbh, nb = plan.num_blocks_w_dim, plan.num_blocks_h_dim, plan.num_blocks
    out_tile = tensors["out"]["page_size"]

    # Padding of the last row/column of cores (the factory's last_* values; kgen plans divide
    # evenly, so these equal the full values and every skip is 0).
    last_pcm = mt % pcm or pcm
    last_pcn = nt % pcn or pcn
    last_obh = last_pcm % obh or obh
    last_obw = last_pcn % obw or obw
    last_nbh = (last_pcm - 1) // obh + 1
    last_nbw = (last_pcn - 1) // obw + 1
    last_nsbh = (last_obh - 1) // sbh + 1
    last_nsbw = (last_obw - 1) // sbw + 1
    last_sbh = last_obh % sbh or sbh
    last_sbw = last_obw % sbw or sbw
    addr_skip = out_tile * (sbw - last_sbw)
    w_skip = sbw * sbh * (obw // sbw - last_nsbw)
    h_skip = (obh // sbh - last_nsbh) * (obw * sbh)

    out: dict[str, TtKernelArgs] = {}
    k = kernels["in0_sender"]
    rt = []
    for (x, y) in cores_of(k["core_ranges"]):
        rt.append(((x, y), (
            {"buffer_address": "in0"}, pcm * kt * y,
            *_rectangle((min(1, cols - 1), y), (cols - 1, y), _noc_index(k)),
            last_obh if y == rows - 1 else obh,
            0)))                                                         # sparsity_addr
    out["in0_sender"] = TtKernelArgs(
        "in0_sender",
        (1, kt, ibw, obh * kt, ibw, obh, obh * ibw, 0, 0, 0, 0, 0, nb, nbw, nbh,
         sems["in0_sender"], sems["in0_receiver"], cols - 1, cols - 1, mt * kt, batch, batch,
         0, 0, 0, 1, 0, 0,                    # reuse_in0, batchB, sparsity page, bcast_A, batch from reader, fuse_op
         INTERLEAVED_DRAM, page["in0"], 0, 0,  # TensorAccessorArgs(in0), TensorAccessorArgs() for sparsity
         0),                                  # num_batch_compute (sparsity off)
        {"cb_in0": named["in0_sender"]["cb_in0"], "cb_in0_sharded": TT_FIXED_CBS["cb_in0_sharded"],
         "cb_sparsity": TT_FIXED_CBS["in0_sender cb_sparsity"], "num_active": 0},
        {"SKIP_MCAST": "1"} if cols == 1 else {},
        tuple(rt))

    if "in0_receiver" in kernels:
        k = kernels["in0_receiver"]
        out["in0_receiver"] = TtKernelArgs(
            "in0_receiver",
            (obh * ibw, nb, nbw, nbh, sems["in0_sender"], sems["in0_receiver"], batch, 0),
            {"cb_in0": named["in0_receiver"]["cb_in0"]}, {},
            tuple(((x, y), (*_noc(0, y),)) for (x, y) in cores_of(k["core_ranges"])))

    k = kernels["in1_sender_writer"]
    cb = named["in1_sender_writer"]
    rt = []
    for (x, y) in cores_of(k["core_ranges"]):
        right = x == cols - 1
        rt.append(((x, y), (
            {"buffer_address": "in1"}, pcn * x,
            *_rectangle((x, min(1, rows - 1)), (x, rows - 1), _noc_index(k)),
            0,                                                           # sparsity_addr
            {"buffer_address": "out"}, x * pcn + y * pcm * nt,
            last_obw if right else obw,
            obh // sbh, sbh, 0,
            obw // sbw, last_nsbw if right else obw // sbw, last_sbw if right else sbw,
            addr_skip if right else 0, w_skip if right else 0,
            {"buffer_address": "bias"} if bias else 0, pcn * x if bias else 0,
            last_nbw if right else nbw)))
    out["in1_sender_writer"] = TtKernelArgs(
        "in1_sender_writer",
        (1, nt, ibw * nt, obw, obw, ibw, obw * ibw, nb, nbw, nbh,
         sems["in1_sender"], sems["in1_receiver"], rows - 1, rows - 1, kt * nt, batch, 1, 0, 0,
         1, nt, sbw, sbh * nt, obw, obh * nt, sbw, sbh, sbw * sbh, mt * nt,
         1 if bias else 0, 0, 0, 0,            # bias stride, all-gather, reduce-scatter, compact_output
         INTERLEAVED_DRAM, page["in1"], 0, 0, INTERLEAVED_DRAM, page["out"],
         *((INTERLEAVED_DRAM, page["bias"]) if bias else ())),
        {"cb_in1": cb["cb_in1"], "cb_bias": cb.get("cb_bias", TT_FIXED_CBS["cb_bias"]), "cb_out": cb["cb_out"],
         "cb_sparsity": TT_FIXED_CBS["in1_sender cb_sparsity"], "num_active": 0},
        {**({"FUSE_BIAS": "1"} if bias else {}), **({"SKIP_MCAST": "1"} if rows == 1 else {})},
        tuple(rt))

    if "in1_receiver_writer" in kernels:
        k = kernels["in1_receiver_writer"]
        cb = named["in1_receiver_writer"]
        rt = []
        for (x, y) in cores_of(k["core_ranges"]):
            right, bottom = x == cols - 1, y == rows - 1
            rt.append(((x, y), (
                *_noc(x, 0), {"buffer_address": "out"}, x * pcn + y * pcm * nt,
                obh // sbh, last_nsbh if bottom else obh // sbh, last_sbh if bottom else sbh,
                h_skip if bottom else 0,
                obw // sbw, last_nsbw if right else obw // sbw, last_sbw if right else sbw,
                addr_skip if right else 0, w_skip if right else 0,
                last_nbh if bottom else nbh, last_nbw if right else nbw)))
        out["in1_receiver_writer"] = TtKernelArgs(
            "in1_receiver_writer",
            (obw * ibw, nb, nbw, nbh, sems["in1_sender"], sems["in1_receiver"], batch,
             1, nt, sbw, sbh * nt, obw, obh * nt, sbw, sbh, sbw * sbh, mt * nt,
             obw if bias else 0, 0, INTERLEAVED_DRAM, page["out"]),
            {"cb_in1": cb["cb_in1"], "cb_bias": cb.get("cb_bias", TT_FIXED_CBS["cb_bias"]), "cb_out": cb["cb_out"]},
            {"FUSE_BIAS": "1"} if bias else {},
            tuple(rt))
    return out


def tt_dataflow_dir(tree) -> Path:
    return tree.root / toolchain_config()["headers"]["reference_dataflow_dir"]


def ttnn_include_dir(tree) -> Path:
    return tree.root / toolchain_config()["headers"]["ttnn_include_dir"]


def with_tt_dataflow(folder: Path, plan, kernels_dir: Path, into: Path, *, ttnn_include: Path) -> Path:
    """A copy of build folder `folder` whose data-movement kernels are TT-Metal's (from
    `kernels_dir`) with the factory's args. `ttnn_include` is the tree's ttnn/cpp folder, for the
    ttnn helpers those kernels include (pad_tile.hpp)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    args = tt_kernel_args(plan, manifest)
    for name in args:
        if not (kernels_dir / TT_KERNELS[name]).is_file():
            raise DataflowSwapError(f"{kernels_dir / TT_KERNELS[name]}: no such TT-Metal kernel "
                                    f"(fetch the headers with: kgen headers fetch)")
    shutil.copytree(folder, into, ignore=shutil.ignore_patterns("obj", "elf", "compile.json"))
    for k in manifest["kernels"]:
        a = args.get(k["name"])
        if a is None:
            continue
        source = (kernels_dir / TT_KERNELS[k["name"]]).resolve()
        k.update(compile_time_args=list(a.compile_time_args),
                 compile_time_arg_names=[f"tt_ct_{i}" for i in range(len(a.compile_time_args))],
                 named_compile_time_args=a.named_compile_time_args, defines=a.defines,
                 runtime_args=[{"core": list(c), "args": list(v)} for c, v in a.runtime_args],
                 runtime_arg_names=[], common_runtime_args=[], common_runtime_arg_names=[],
                 include_dirs=[str(ttnn_include.resolve())], tt_metal_source=str(source))
        gen = into / "jit" / k["name"]
        (gen / "kernel_includes.hpp").write_text(f'#include "{source}"\n')
        pairs = ",".join(f'{{"{n}",{v}}}' for n, v in a.named_compile_time_args.items())
        (gen / "named_ct_arg_map_generated.h").write_text(f"#define KERNEL_COMPILE_TIME_ARG_MAP {pairs}\n")
    (into / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return into
