"""The hardware descriptor TT-Metal's JIT writes beside every kernel (`chlkc_descriptors.h`).

Per CB index: the unpacker's source (L1) and destination (register) formats, the packer's source
(register) and destination (L1) formats, and the tile geometry; plus the compute config constants
MATH_FIDELITY, APPROX, DST_ACCUM_MODE and DST_SYNC_MODE. The format rules are TT-Metal's genfiles /
data_format.cpp rules as digested in docs/reference/matmul.md §4.1, with the compute config's
unpack_to_dest_mode (a CB marked UnpackToDestFp32: CircularBuffer.unpack_to_dest); unused indices carry
hlk_desc.hpp's defaults (format Invalid = 255, 32x32 tile of 4 faces, tile size 1088).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.core.errors import KgenBug
from kgen.gen.ir import Program
from kgen.core.types import DATA_FORMAT_VALUE, MATH_FIDELITY_VALUE, TILE_HW

FACE_HW = 16
# hlk_desc.hpp initialises an unused CB's tile size to BFLOAT8_B_TILE_HW (constants.hpp).
UNUSED_TILE_SIZE = 1088


def _is_exp_b(fmt: str) -> bool:
    """The bfloat (8-bit exponent) family; Float32 counts with it for register-format choices."""
    return fmt.endswith("_b") or fmt == "Float32"


@dataclass(frozen=True)
class CBDescriptor:
    unpack_src: str
    unpack_dst: str
    pack_src: str
    pack_dst: str
    tile_size: int
    num_faces: int = TILE_HW * TILE_HW // (FACE_HW * FACE_HW)
    partial_face: int = 0
    face_r_dim: int = FACE_HW
    narrow_tile: int = 0
    tile_r_dim: int = TILE_HW
    tile_c_dim: int = TILE_HW
    num_faces_r_dim: int = TILE_HW // FACE_HW
    num_faces_c_dim: int = TILE_HW // FACE_HW


UNUSED = CBDescriptor("Invalid", "Invalid", "Invalid", "Invalid", UNUSED_TILE_SIZE)


@dataclass(frozen=True)
class HlkDescriptor:
    cbs: tuple[CBDescriptor, ...]         # one per CB index, 0 .. max_cbs-1
    math_fidelity: int
    approx: bool
    dst_accum_mode: bool                  # fp32_dest_acc_en
    dst_sync: str                         # SyncHalf | SyncFull

    def arrays(self, side: str) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
        """(C type, name, values) of every array of one side (`unpack` or `pack`), as genfiles
        names and types them."""
        format_type = "std::int32_t" if side == "unpack" else "unsigned char"
        out = [(format_type, f"{side}_src_format", tuple(DATA_FORMAT_VALUE[getattr(cb, f"{side}_src")] for cb in self.cbs)),
               (format_type, f"{side}_dst_format", tuple(DATA_FORMAT_VALUE[getattr(cb, f"{side}_dst")] for cb in self.cbs))]
        for suffix, attr, ctype in GEOMETRY_ARRAYS:
            out.append((ctype, f"{side}_{suffix}", tuple(int(getattr(cb, attr)) for cb in self.cbs)))
        return tuple(out)


# (array suffix, CBDescriptor field, C type) of the tile-geometry arrays.
GEOMETRY_ARRAYS = (
    ("tile_num_faces", "num_faces", "uint8_t"), ("partial_face", "partial_face", "uint8_t"),
    ("tile_face_r_dim", "face_r_dim", "uint8_t"), ("narrow_tile", "narrow_tile", "uint8_t"),
    ("tile_r_dim", "tile_r_dim", "uint8_t"), ("tile_c_dim", "tile_c_dim", "uint8_t"),
    ("tile_size", "tile_size", "uint16_t"),
    ("num_faces_r_dim", "num_faces_r_dim", "uint8_t"), ("num_faces_c_dim", "num_faces_c_dim", "uint8_t"),
)


def _register_format(fmts: list[str], fp32_dest_acc: bool) -> str:
    """unpack_conditional_dst_format: the register format Float32 data unpacks to."""
    exp_b = all(_is_exp_b(f) for f in fmts)
    if fp32_dest_acc and exp_b:
        return "Tf32"
    return "Float16_b" if exp_b else "Float16"


def _unpack_dst(fmt: str, conditional: str, unpack_to_dest: bool = False) -> str:
    """get_unpack_dst_formats (libtt_metal.so 0.81.1, 0xd60c30): a Float32 CB whose unpack_to_dest_mode is
    UnpackToDestFp32 unpacks as Float32 (0xd6105e-0xd61092; straight into DST), any other Float32 CB to the
    register format (TF32 with fp32 accumulation)."""
    if fmt == "Float32":
        return "Float32" if unpack_to_dest else conditional
    if fmt.startswith("Bfp"):
        return "Bfp8_b" if fmt.endswith("_b") else "Bfp8"
    return fmt


def _pack_src(fmt: str, fp32_dest_acc: bool, conditional: str) -> str:
    if fmt.startswith("Bfp"):
        return "Float16_b" if fmt.endswith("_b") else "Float16"
    if fmt == "Float32":
        return "Float32" if fp32_dest_acc else conditional
    if fmt == "Float16" and fp32_dest_acc:
        return "Float16_b"
    return fmt


def hlk_descriptor(program: Program) -> HlkDescriptor:
    """The JIT descriptor of the compute kernel, from the IR's CB table and compute flags."""
    flags = program.compute
    fp32 = flags.fp32_dest_acc
    formats = [cb.data_format for cb in program.cbs]
    if len({_is_exp_b(f) for f in formats if f != "Float32"}) > 1:
        # TT-Metal: "All input data-formats must have the same exponent format" (data_format.cpp)
        raise KgenBug(f"mixed exponent widths in the CB table: {formats}")
    conditional = _register_format(formats, fp32)
    cbs = [UNUSED] * program.arch.max_cbs
    for cb in program.cbs:
        cbs[cb.index] = CBDescriptor(
            unpack_src=cb.data_format, unpack_dst=_unpack_dst(cb.data_format, conditional, cb.unpack_to_dest),
            pack_src=_pack_src(cb.data_format, fp32, conditional), pack_dst=cb.data_format,
            tile_size=cb.page_bytes)
    return HlkDescriptor(tuple(cbs), MATH_FIDELITY_VALUE[flags.math_fidelity], flags.math_approx,
                         fp32, flags.dst_sync)
