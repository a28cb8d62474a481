"""The printer of the .kspec language: `MatmulSpec` -> .kspec text that `spec.parse_text` and
`spec.resolve` read back to an equal spec (every field but the file path and the variant names).

The compute config is written out in full as a named `compute` block, so the text means the same
whatever the shipped presets or TTNN's defaults say later; `auto` block fields, a DRAM placement
and the other defaults are left out, so the planner reads them as it would have.
"""

from __future__ import annotations

from kgen.gen.activations import NONE
from kgen.gen.spec import COMPUTE_KEYS, ComputeConfig, MatmulSpec, MemorySpec

# every MatmulSpec field and where the printer writes it (a new field must be added here, and
# the round-trip test fails until it is)
PRINTED_FIELDS = frozenset({
    "name", "arch", "m", "n", "k", "batch", "batch_dims", "dtype_in0", "dtype_in1", "dtype_out", "dtype_bias", "grid",
    "dataflow", "block", "compute", "fuse_bias", "activation", "untilize_out", "transpose_mcast", "broadcast_in1", "memory",
    "transpose_a", "transpose_b", "fuse_batch",
})
NOT_PRINTED_FIELDS = frozenset({"path", "variant", "variants", "spans"})   # where the text came from


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _dims(v: tuple[int, ...]) -> str:
    return " x ".join(str(x) for x in v)


def format_compute(compute: ComputeConfig, name: str | None = None) -> str:
    """A `compute NAME { ... }` block with every key of the schema."""
    lines = [f"compute {name or compute.preset} {{"]
    width = max(len(k) for k in COMPUTE_KEYS)
    for key in COMPUTE_KEYS:
        value = getattr(compute, key)
        lines.append(f"    {key:<{width}} = {_bool(value) if isinstance(value, bool) else value}")
    lines.append("}")
    return "\n".join(lines)


def format_spec(spec: MatmulSpec, comment: str = "") -> str:
    """The .kspec text of `spec`: its compute config as a block of its own, then the matmul.
    `comment` (any number of lines) is written first, each line as a `#` comment."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()] if comment else []
    lines += [format_compute(spec.compute), "", f"matmul {spec.name} {{",
              f"    arch     = {spec.arch}",
              f"    shape    = {spec.m} x {spec.n} x {spec.k}",
              f"    batch    = {_dims(spec.batch_dims) if spec.batch_dims else spec.batch}"]
    dtype = f"in0 = {spec.dtype_in0}  in1 = {spec.dtype_in1}  out = {spec.dtype_out}"
    if spec.fuse_bias or spec.dtype_bias != spec.dtype_out:
        dtype += f"  bias = {spec.dtype_bias}"
    lines.append(f"    dtype {{ {dtype} }}")
    if spec.grid is not None:
        lines.append(f"    grid     = {_dims(spec.grid)}")
    lines.append(f"    dataflow = {spec.dataflow}")
    if spec.transpose_mcast:
        lines.append("    transpose_mcast = true")
    if not spec.broadcast_in1:
        lines.append("    broadcast_in1 = false")
    if spec.fuse_batch is not None:
        lines.append(f"    fuse_batch = {_bool(spec.fuse_batch)}")
    for key in ("transpose_a", "transpose_b"):
        if getattr(spec, key):
            lines.append(f"    {key} = true")
    b = spec.block
    block = [(key, value) for key, value in (("in0_block_w", b.in0_block_w), ("out_subblock", b.out_subblock),
                                             ("per_core", b.per_core), ("out_block", b.out_block))
             if value is not None]
    if block:
        lines.append("    block {")
        lines += [f"        {key:<12} = {value if isinstance(value, int) else _dims(value)}" for key, value in block]
        lines.append("    }")
    if spec.memory != MemorySpec():
        mem = spec.memory
        text = f"in0 = {mem.in0}  in1 = {mem.in1}  out = {mem.out}"
        if mem.orientation is not None:
            text += f"  orientation = {mem.orientation}"
        for tensor in ("in0", "out"):
            if mem.shard(tensor) is not None:
                text += f"  {tensor}_shard = {mem.shard(tensor)}"
        lines.append(f"    memory {{ {text} }}")
    lines.append(f"    compute  = {spec.compute.preset}")
    if spec.fuse_bias or spec.activation != NONE:
        lines.append(f"    fuse {{ bias = {_bool(spec.fuse_bias)}  activation = {spec.activation} }}")
    if spec.untilize_out:
        lines.append("    untilize_out = true")
    lines.append("}")
    return "\n".join(lines) + "\n"
