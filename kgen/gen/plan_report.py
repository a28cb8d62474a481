"""The plan as a readable table (`kgen check`) and as JSON (`kgen check --json`)."""

from __future__ import annotations

from typing import Any

from kgen.core import terminal
from kgen.core.terminal import Column
from kgen.gen.plan import Plan


def plan_to_dict(p: Plan, variants: dict[str, str] | None = None) -> dict[str, Any]:
    s = p.spec
    c = p.compute
    return {
        "name": s.name,
        "variant": s.variant,
        "spec": s.path,
        "arch": p.arch.name,
        "shape_elements": {"M": s.m, "N": s.n, "K": s.k, "batch": s.batch,
                           **({"batch_dims": list(s.batch_dims)} if s.batch_dims else {})},
        "tiles": {"Mt": p.mt, "Nt": p.nt, "Kt": p.kt},
        "dataflow": s.dataflow,
        "grid_requested": {"x": p.grid_requested[0], "y": p.grid_requested[1]},
        "grid": {"x": p.grid[0], "y": p.grid[1], "cores": p.num_cores},
        "per_core": {"M": p.per_core_m, "N": p.per_core_n},
        "out_block": {"h": p.out_block_h, "w": p.out_block_w},
        "in0_block_w": p.in0_block_w,
        "out_subblock": {"h": p.out_subblock_h, "w": p.out_subblock_w},
        "num_blocks": p.num_blocks,
        "num_blocks_h_dim": p.num_blocks_h_dim,
        "num_blocks_w_dim": p.num_blocks_w_dim,
        **({"per_core_n_compute": p.per_core_n_compute, "last_subblock_w_valid": p.last_subblock_w_valid}
           if p.padded_lanes else {}),
        "compute_config": {
            "preset": c.preset, "math_fidelity": c.math_fidelity, "fp32_dest_acc_en": c.fp32_dest_acc,
            "packer_l1_acc": c.packer_l1_acc, "math_approx_mode": c.math_approx,
            "dst_full_sync_en": c.dst_full_sync,
            "sources": dict(c.sources),
        },
        "policy": p.policy,
        "policy_reason": p.policy_reason,
        "packer_l1_acc_enabled": p.l1_acc_enabled,
        "formats": {"in0": p.in0_format, "in1": p.in1_format, "out": p.out_format, "bias": p.bias_format,
                    "partials": p.partials_format},
        "partials_reason": p.partials_reason,
        "out_partials_sharing": p.out_partials_sharing,
        "fuse": {"bias": s.fuse_bias, "activation": s.activation},
        "untilize_out": s.untilize_out,
        "cbs": [
            {"index": cb.index, "name": cb.name, "role": cb.role, "data_format": cb.data_format,
             "page_bytes": cb.page_bytes, "pages": cb.pages, "total_bytes": cb.total_bytes,
             "region": cb.region}
            for cb in p.cbs
        ],
        "l1_regions": [{"name": r.name, "cb_indices": list(r.cb_indices), "bytes": r.bytes} for r in p.regions],
        "l1": {"cb_bytes": p.cb_bytes, "usable_bytes": p.arch.usable_cb_bytes, "margin_bytes": p.l1_margin},
        "dst": {"tiles_per_subblock": p.out_subblock_tiles, "capacity_tiles": p.dst_capacity,
                "sync_mode": p.dst_sync, "accumulation_format": p.dst_accum_format},
        "choices": list(p.choices),
        # only a `dataflow = auto` plan carries this key
        **({"tt_choice": list(p.tt_choice)} if p.tt_choice else {}),
        "warnings": list(p.warnings),
        "variants": variants or {},
        # only padded plans carry these keys, so the plan.json of an evenly divided plan is unchanged
        **({"padding": _padding_dict(p)} if p.padding_notes else {}),
        **({"transpose_mcast": True} if s.transpose_mcast else {}),
        # likewise only plans with a tensor in L1
        **({"memory": {"in0": s.memory.in0, "in1": s.memory.in1, "out": s.memory.out,
                       "shard_specs": {t: {**v, "grid": list(v["grid"]), "shape": list(v["shape"])}
                                       for t, v in p.shard_specs.items()}}} if s.memory.sharded else {}),
    }


def _padding_dict(p: Plan) -> dict[str, Any]:
    """What was padded: tensor dimensions to whole tiles, and the last row/column of cores (the 2D
    factory's last_* values)."""
    return {
        "tiles": {d: {"elements": v, "padded_elements": padded} for d, (v, padded) in p.tile_padding.items()},
        "in0_last_ktile_w": p.in0_last_ktile_w,
        "last_per_core": {"M": p.last_per_core_m, "N": p.last_per_core_n},
        "last_out_block": {"h": p.last_out_block_h, "w": p.last_out_block_w},
        "notes": list(p.padding_notes),
    }


def _activation_line(p) -> list[tuple[str, str]]:
    """What TT's kernel receives for an SFPU activation (SFPU_ACTIVATION and its named args)."""
    act = p.sfpu_activation
    if act is None:
        return []
    args = " ".join(f"{name}={value:#x}" if name != "activation_type" else f"{name}={value} ({act.kind})"
                    for name, value in act.named_args)
    return [("activation", f"SFPU on the pack thread ({act.row.llk}): {args}")]


def _compute_sources(c) -> list[tuple[str, str]]:
    """One line per group of compute fields that share a source."""
    groups: dict[str, list[str]] = {}
    for key, source in c.sources:
        groups.setdefault(source, []).append(key)
    return [("  from", f"{', '.join(keys)}: {source}") for source, keys in groups.items()]


def _cb_table(p: Plan, width: int) -> list[str]:
    """One row per CB: its index, name, role, format, page size, pages, bytes and L1 region."""
    shared = {r.name: r for r in p.regions}
    rows = []
    for cb in p.cbs:
        region = shared[cb.region]
        note = ("shares L1 with " + ", ".join(f"c_{i}" for i in region.cb_indices if i != cb.index)
                if len(region.cb_indices) > 1 else "")
        if cb.buffer:
            note = (note + "; " if note else "") + f"on the {cb.buffer} shard"
        rows.append([f"c_{cb.index}", cb.name, cb.role, cb.data_format, str(cb.page_bytes), str(cb.pages),
                     str(cb.total_bytes), note])
    headers = ["CB", "name", "role", "format", "page B", "pages", "total B", "L1 region"]
    return terminal.table([Column(h, [r[i] for r in rows]) for i, h in enumerate(headers)], width, rule=True)



def _grid_line(p: Plan) -> str:
    """The cores with work: the grid, or a 1D run whose last row is partial and its bounding box."""
    asked = f"{p.grid_requested[0]} x {p.grid_requested[1]} requested"
    box = p.grid[0] * p.grid[1]
    if p.num_cores == box:
        return f"{p.grid[0]} x {p.grid[1]} cores with work (x by y, {p.num_cores} cores) of {asked}"
    return (f"{p.num_cores} cores with work, row-major, the last of {p.grid[1]} rows partial: their bounding box "
            f"{p.grid[0]} x {p.grid[1]} takes the multicast (its {box - p.num_cores} cores past them only receive) "
            f"of {asked}")

def format_plan(p: Plan, variants: dict[str, str] | None = None, predicted: str | None = None,
                width: int | None = None) -> str:
    """The plan at `width` columns (the terminal's): every value wrapped under itself, one line per
    key; `predicted` (kgen check's one-line prediction) closes it."""
    width = width or terminal.width()
    s = p.spec
    c = p.compute
    title = f"kgen plan: {s.name}" + (f" (variant {s.variant})" if s.variant else "") + f"  [{s.path}]"
    kv = [
        ("arch", p.arch.name),
        ("shape", f"M x N x K = {s.m} x {s.n} x {s.k} elements, batch {s.batch} "
                  + (f"(in0 {' x '.join(map(str, (*s.batch_dims, s.m, s.k)))}, its leading dims folded as "
                     f"ttnn folds them) " if s.batch_dims else "")
                  + f"-> Mt x Nt x Kt = {p.mt} x {p.nt} x {p.kt} tiles "
                  + (f"per batch, in1 not broadcast: one K x N matrix per batch, the kernels loop over {p.batch_ct} batches"
                     if p.batched_in1 else f"per batch, fuse_batch = false: one in1 for every batch, the kernels "
                     f"loop over {p.batch_ct} batches" if p.batch_ct > 1 else "(batch fused into M)")),
        ("dtypes", f"in0 {s.dtype_in0} ({p.in0_format}), in1 {s.dtype_in1} ({p.in1_format}), "
                   f"out {s.dtype_out} ({p.out_format})"
                   + (f", bias {s.dtype_bias} ({p.bias_format})" if p.bias_format else "")),
        ("dataflow", s.dataflow + (" with transpose_mcast: M blocks along x, in0 multicast down columns from the "
                                   "top row, in1 along rows from the left column" if s.transpose_mcast else "")),
        ("grid", _grid_line(p)),
        ("per core", f"per_core_M x per_core_N = {p.per_core_m} x {p.per_core_n} tiles"
                     + (f"; computed over per_core_N_compute = {p.per_core_n_compute} (the last subblock's "
                        f"last_subblock_w_valid = {p.last_subblock_w_valid} of {p.out_subblock_w} lanes real, "
                        f"the padded ones dropped by the writer)" if p.padded_lanes else "")),
        ("out block", f"out_block_h x out_block_w = {p.out_block_h} x {p.out_block_w} tiles "
                      f"({p.num_blocks_h_dim} x {p.num_blocks_w_dim} per core)"),
        ("in0_block_w", f"{p.in0_block_w} tiles"),
        ("out subblock", f"out_subblock_h x out_subblock_w = {p.out_subblock_h} x {p.out_subblock_w} "
                         f"({p.in0_num_subblocks} x {p.in1_num_subblocks} per out block)"),
        ("K-blocks", f"num_blocks = Kt / in0_block_w = {p.num_blocks}"),
        ("compute", f"{c.preset}: math_fidelity={c.math_fidelity} fp32_dest_acc={str(c.fp32_dest_acc).lower()} "
                    f"packer_l1_acc={str(c.packer_l1_acc).lower()} math_approx={str(c.math_approx).lower()} "
                    f"dst_full_sync={str(c.dst_full_sync).lower()}"),
        *_compute_sources(c),
        ("fuse", f"bias={str(s.fuse_bias).lower()} activation={s.activation} "
                 f"untilize_out={str(s.untilize_out).lower()}"),
        *_activation_line(p),
        ("policy", f"{p.policy}: {p.policy_reason}"),
        ("partials", f"{p.partials_format}: {p.partials_reason}"),
        ("out/partials", p.out_partials_sharing),
        ("DST", f"{p.out_subblock_tiles} tiles per subblock of {p.dst_capacity} "
                f"({p.dst_sync}, {p.dst_accum_format} accumulation), headroom {p.dst_capacity - p.out_subblock_tiles}"),
    ]
    kv += [("padding", note) for note in p.padding_notes]
    if s.memory.sharded:
        kv.append(("memory", f"in0 {s.memory.in0}, in1 {s.memory.in1}, out {s.memory.out}"))
        for t, v in p.shard_specs.items():
            x0, y0, x1, y1 = v["grid"]
            where = "DRAM banks" if v.get("buffer_type") == "DRAM" else "cores"
            kv.append((f"{t} shards", f"{v['memory_layout']} {v['orientation']}, shard {v['shape'][0]} x "
                                      f"{v['shape'][1]} elements on {where} ({x0},{y0})-({x1},{y1})"))
    key_width = max(len(k) for k, _ in kv)
    lines = terminal.hanging(title, width) + [""] + terminal.key_values(kv, width)
    lines += ["", "circular buffers (per core):"] + _cb_table(p, width)
    pct = 100.0 * p.cb_bytes / p.arch.usable_cb_bytes
    lines += [""] + terminal.hanging(f"L1: {p.cb_bytes} B of CBs in {len(p.regions)} region(s) vs "
                                     f"{p.arch.usable_cb_bytes} B usable on {p.arch.name} ({pct:.1f}%), "
                                     f"margin {p.l1_margin} B", width)
    if p.tt_choice:
        lines += ["", "TT's choice (dataflow = auto; ttnn.matmul 0.81.1 with no program config):"]
        lines += [line for ch in p.tt_choice for line in terminal.bullet(ch, width)]
    if p.choices:
        lines += ["", "auto choices:"] + [line for ch in p.choices for line in terminal.bullet(ch, width)]
    if variants:
        lines += ["", "variants:"] + [line for name, summary in variants.items()
                                      for line in terminal.bullet(f"{name}: {summary}", width)]
    lines += [""]
    if p.warnings:
        lines += ["warnings:"] + [line for w in p.warnings for line in terminal.bullet(w, width)]
    else:
        lines += ["warnings: none"]
    if predicted is not None:
        lines += [""] + terminal.key_value("predicted", predicted, width, key_width)
    return "\n".join(lines) + "\n"
