"""What ttnn.matmul and ttnn.linear 0.81.1 run around the matmul program itself, with no program config:
`bound_matmul` and `get_post_process_bias` in ttnn/cpp/ttnn/operations/matmul/matmul.cpp, read at
tenstorrent/tt-metal@b8288deb and checked against the 0.81.1 wheel: its bound_matmul (_ttnncpp.so, objdump)
makes the calls that source does, ttnn::add and ttnn::unary_chain once each, and the memory-config reads
of get_post_process_bias inlined (MemoryConfig::buffer_type and memory_layout three times each,
Tensor::is_sharded, Tensor::padded_shape).

- The bias goes into the matmul program unless get_post_process_bias adds it after the matmul in a
  `ttnn::add` of its own. With no core grid it does so for an output not in DRAM, and for a DRAM output
  when in0 is not sharded and not every tensor is DRAM-interleaved.
- The activation goes into the program only with a core grid (`user_core_coord`). Without one, TT
  applies it after the matmul in a unary op of its own (`Unary_chain`).

kgen builds one program per spec. Where TT runs a separate op, kgen's program fuses it, and `kgen check`
says so (kgen.gen.ttauto.resolve_auto): the outputs may differ in the last bit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgen.core.types import Placement, is_sharded

if TYPE_CHECKING:
    from kgen.gen.matmul_spec import MatmulSpec

SOURCE = "bound_matmul (ttnn/cpp/ttnn/operations/matmul/matmul.cpp, 0.81.1)"


def bias_post_processed(spec: MatmulSpec) -> str:
    """Why TT adds this spec's bias in a separate ttnn::add, or "" where it goes into the program."""
    if not spec.fuse_bias or spec.grid is not None:
        return ""
    memory = spec.memory
    if memory.out not in (Placement.DRAM, Placement.DRAM_WIDTH_SHARDED):
        return "the output is not in DRAM"
    all_dram = all(getattr(memory, t) == Placement.DRAM for t in ("in0", "in1", "out"))
    if not is_sharded(memory.in0) and not all_dram:
        return "in0 is not sharded and not every tensor is DRAM-interleaved"
    return ""


def activation_post_processed(spec: MatmulSpec) -> bool:
    """Whether TT applies this spec's activation in a unary op of its own (no core grid)."""
    return spec.activation not in (None, "", "none") and spec.grid is None


def separate_ops(spec: MatmulSpec) -> tuple[str, ...]:
    """One line per part of the spec TT 0.81.1 runs as an op of its own after the matmul, which kgen fuses."""
    lines = []
    if why := bias_post_processed(spec):
        lines.append(f"bias: TT adds it after the matmul in a ttnn::add of its own ({SOURCE}, get_post_process_bias: "
                     f"{why}); kgen adds it in the program's bias stage, so the outputs may differ in the last bit")
    if activation_post_processed(spec):
        same = (" (the same values: ReLU commutes with rounding)" if spec.activation == "relu" else
                ", so the outputs may differ in the last bit")
        lines.append(f"activation {spec.activation}: with no core grid TT applies it after the matmul in a unary op of "
                     f"its own ({SOURCE}, Unary_chain), to the output already rounded to {spec.dtype_out}; kgen "
                     f"applies it before that rounding{same}")
    return tuple(lines)
