"""Stage 5, render: `Program` (verified IR) -> source files, JIT genfiles and the program manifest.

Templates in templates/ print; this module only shapes the IR into what they print (the op tree
flattened into indented lines, values spelled as C++) and checks that every value reaching C++ is
a number, a known enum or an identifier. Nothing here decides anything about the kernels: CT args,
defines, runtime args, CB formats and the host interface all come from the IR.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import cache
from collections.abc import Mapping
from typing import Any

import jinja2

from kgen.core.version import TT_METAL_VERSION, __version__
from kgen.gen.descriptors import HlkDescriptor, hlk_descriptor
from kgen.core.errors import KgenBug
from kgen.core.manifest import FORMAT_VERSION
from kgen.gen.ir import (CB_ARGS, Affine, Extent, IoTensor, Kernel, Loop, Node, Program, RowNest, RuntimeArg, ShardSpec,
                         Sym, TileNest, format_program, walk)
from kgen.gen.lower import COMPUTE_DEFINE_NAMES
from kgen.gen.optable import OPS
from kgen.core.resources import cache_root, data_dir
from kgen.core.types import FORMAT_SHORT, TILE_HW, Placement

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# TT-Metal's JIT: one TRISC source per compute thread (genfiles jit_build_genfiles_triscs_src).
TRISC_THREADS = (("unpack", "TRISC_UNPACK"), ("math", "TRISC_MATH"), ("pack", "TRISC_PACK"))
PROCESSOR_ENUM = {"BRISC": "RISCV_0", "NCRISC": "RISCV_1", "TRISC": "TRISC"}
POLICY_SHORT = {"packer_l1_acc": "l1acc", "spill_reload": "spill", "dst_only": "dst"}


@dataclass(frozen=True)
class Line:
    """One printed line of a kernel body: a loop header (`loop`), its closing brace (`end`), or an op."""
    depth: int
    kind: str
    node: Node | None = None
    binds: bool = False       # a single-iteration loop whose variable the body uses


@dataclass(frozen=True)
class SourceFile:
    path: str       # relative to the build folder, POSIX separators
    text: str


# ----------------------------------------------------------------------------------------------
# Values -> C++ (the only way IR values reach a template)
# ----------------------------------------------------------------------------------------------

def identifier(name: str) -> str:
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise KgenBug(f"refusing to print {name!r} into C++: not an identifier")
    return name


def macro_value(value: str) -> str:
    """A define's value: a decimal number or an identifier, nothing else."""
    if isinstance(value, str) and (value.isdigit() or IDENTIFIER.match(value)):
        return value
    raise KgenBug(f"refusing to print define value {value!r} into C++")


def cxx(value: Any) -> str:
    """A checked C++ spelling of an IR value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Sym):
        return identifier(value.name)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, Affine):
        return _affine(value, lambda var, coeff: identifier(var) if coeff == 1 else f"{cxx(coeff)} * {identifier(var)}")
    if isinstance(value, RuntimeArg):
        return identifier(value.name)
    if isinstance(value, str):
        return identifier(value)
    raise KgenBug(f"refusing to print {value!r} ({type(value).__name__}) into C++")


def cxx_index(value: Affine) -> str:
    """An index expression printed variable first, `first_tile + tile_row * 8 + tile_col`, as TT-Metal's
    readers write their tile ids."""
    return _affine(value, lambda var, coeff: identifier(var) if coeff == 1 and not isinstance(coeff, Sym)
                   else f"{identifier(var)} * {cxx(coeff)}")


def _affine(value: Affine, term) -> str:
    """const + sum of terms, each printed by `term(var, coeff)`; the constant last, and alone if nothing else."""
    parts = [term(var, coeff) for var, coeff in value.terms]
    if value.const or not parts:
        parts.append(str(int(value.const)))
    return " + ".join(parts)


def _uses_var(nodes: tuple[Node, ...], var: str) -> bool:
    def affine(v):
        return v.first if isinstance(v, Extent) else v
    return any(isinstance(affine(v), Affine) and any(t == var for t, _ in affine(v).terms)
               for n, _ in walk(nodes) for _, v in n.args)


def flatten(nodes: tuple[Node, ...], depth: int = 0) -> list[Line]:
    lines: list[Line] = []
    for n in nodes:
        if isinstance(n, Loop):
            lines.append(Line(depth, "loop", n, n.count == 1 and _uses_var(n.body, n.var)))
            lines += flatten(n.body, depth + 1)
            lines.append(Line(depth, "end", n))
        else:
            lines.append(Line(depth, "op", n))
    return lines


# ----------------------------------------------------------------------------------------------
# Templates
# ----------------------------------------------------------------------------------------------

def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates cached under $KGEN_CACHE_DIR (else ~/.cache/kgen): jinja2 keys each entry
    by the template's source checksum, so an edited template is recompiled. Without a writable
    cache folder templates are simply compiled each run."""
    root = cache_root() / "jinja"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(root)) if os.access(root, os.W_OK) else None


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False, bytecode_cache=_bytecode_cache())
    env.filters["cxx"] = cxx
    env.filters["ident"] = identifier
    env.filters["cxx_index"] = cxx_index
    env.globals["tile_nest"] = TileNest.of
    env.globals["row_nest"] = RowNest.of
    env.filters["macro_value"] = macro_value
    env.filters["rstrip"] = str.rstrip
    return env


def render_template(template: str, **context: Any) -> str:
    """Render one template of templates/ (StrictUndefined: a missing value is an error)."""
    return _environment().get_template(template).render(**context)



def _cb_names(program: Program) -> dict[int, str]:
    return {cb.index: identifier(cb.name) for cb in program.cbs}


def _used_cbs(lines: list[Line]) -> list[int]:
    """The CB indices the kernel's ops name."""
    used = set()
    for line in lines:
        if line.kind == "op":
            for key, v in line.node.args:
                if key in CB_ARGS and isinstance(v, int) and not isinstance(v, bool):
                    used.add(v)
    return sorted(used)


def _kernel_context(program: Program, kernel: Kernel) -> dict[str, Any]:
    cb_names = _cb_names(program)
    lines = flatten(kernel.body)
    used = _used_cbs(lines)
    # a CB whose index a define hands over (TT-Metal passes no named arg for it)
    defines = {cb.index: cb.index_define for cb in program.cbs if cb.index_define}
    return {
        "kernel": kernel,
        "program": program,                # comment lines only: code reads the kernel and compute
        "compute": program.compute,
        "spec_name": identifier(program.name),
        "variant": identifier(program.variant) if program.variant else "",
        "kgen_version": __version__,
        "tt_metal_version": TT_METAL_VERSION,
        "lines": lines,
        "cb": cb_names,
        "used_cbs": [(cb_names[i], i) for i in used if i not in defines],
        "defined_cbs": [(cb_names[i], i, defines[i]) for i in used if i in defines],
        # named CT args that are not CB indices (bias_ntiles)
        "named_scalars": [(identifier(n), v) for n, v in kernel.named_compile_time_args if not n.startswith("cb_")],
        "ct_args": [(identifier(n), v) for n, v in kernel.compile_time_args],
        "defines": [(identifier(n), v) for n, v in kernel.defines],
        "absent_defines": [d for d in COMPUTE_DEFINE_NAMES if d not in dict(kernel.defines)],
        "runtime_args": [identifier(a.name) for a in kernel.runtime_args],
        "common_runtime_args": [identifier(a.name) for a in kernel.common_runtime_args],
        "semaphores": [(identifier(n.removesuffix("_semaphore_id")), identifier(n))
                       for n, _ in kernel.compile_time_args if n.endswith("_semaphore_id")],
        "tensors": [(identifier(t.name), kernel.ct_index(f"{t.name}_accessor_config"), identifier(f"{t.name}_page_bytes"),
                     identifier(f"{t.name}_addr")) for t in kernel.tensors],
        "headers": op_headers(lines),
    }


def op_headers(lines: list[Line]) -> list[str]:
    """The compute API headers the kernel's ops are declared in (the op table's), sorted."""
    return sorted({OPS[line.node.kind].header for line in lines if line.kind == "op" and OPS[line.node.kind].header})


def _descriptor_context(desc: HlkDescriptor) -> dict[str, Any]:
    return {"desc": desc, "unpack_arrays": desc.arrays("unpack"), "pack_arrays": desc.arrays("pack"),
            "n": len(desc.cbs)}


def render_sources(program: Program) -> tuple[SourceFile, ...]:
    """Every kernel's source and its JIT genfiles, in a fixed order."""
    desc_text = render_template("jit/chlkc_descriptors.h.j2", **_descriptor_context(hlk_descriptor(program)))
    files: list[SourceFile] = []
    for kernel in program.kernels:
        name = identifier(kernel.name)
        ctx = _kernel_context(program, kernel)
        template = "compute/matmul.cpp.j2" if kernel.processor == "TRISC" else "dataflow/kernel.cpp.j2"
        source = f"kernels/{name}.cpp"
        files.append(SourceFile(source, render_template(template, **ctx)))
        jit = f"jit/{name}"
        include = f"../../{source}"      # relative to jit/<kernel>/: the folder can move
        files.append(SourceFile(f"{jit}/chlkc_descriptors.h", desc_text))
        files.append(SourceFile(f"{jit}/defines_generated.h", render_template("jit/defines_generated.h.j2", **ctx)))
        files.append(SourceFile(f"{jit}/named_ct_arg_map_generated.h",
                                render_template("jit/named_ct_arg_map_generated.h.j2",
                                        named=sorted(kernel.named_compile_time_args))))
        if kernel.processor == "TRISC":
            for thread, define in TRISC_THREADS:
                files.append(SourceFile(f"{jit}/chlkc_{thread}.cpp",
                                        render_template("jit/chlkc_trisc.cpp.j2", define=define, include=include)))
        else:
            files.append(SourceFile(f"{jit}/kernel_includes.hpp",
                                    render_template("jit/kernel_includes.hpp.j2", include=include)))
    return tuple(files)


# ----------------------------------------------------------------------------------------------
# Kernel id and manifest
# ----------------------------------------------------------------------------------------------

# A C/C++ comment, or a literal that may hold comment-like text and must be kept whole.
_CPP_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_of(text: str) -> str:
    """C/C++ source without its comments (string and char literals kept; a comment becomes one
    space, as the preprocessor does), trailing blanks and blank lines, so that two sources that
    differ only in comments compile to the same program and give the same text here."""
    bare = _CPP_TOKENS.sub(lambda m: " " if m.group(0)[0] == "/" else m.group(0), text)
    return "\n".join(line.rstrip() for line in bare.splitlines() if line.strip())


# Manifest fields that name the kernel for people and do not change what runs on the card.
_NAMING_FIELDS = ("spec",)


def kernel_id(program: Program, sources: tuple[SourceFile, ...], body: dict[str, Any]) -> str:
    """Readable and content-addressed: the plan's headline values, then a hash over what determines
    the kernel: every generated source and JIT file without its comments, and the host interface
    (the manifest without the spec's name and variant, which only label it). kgen's and TT-Metal's
    versions count; comments, names and the README do not, so identical kernels share an id."""
    b = program.blocking
    h = hashlib.sha256()
    h.update(f"kgen {__version__} tt-metal {TT_METAL_VERSION}\0".encode())
    for f in sources:
        h.update(f.path.encode() + b"\0" + code_of(f.text).encode() + b"\0")
    h.update(json.dumps({k: v for k, v in body.items() if k not in _NAMING_FIELDS}, sort_keys=True).encode())
    readable = (f"mm_{FORMAT_SHORT[program.io('in0').data_format]}_{program.arch.short}_m{b.per_core_m}n{b.per_core_n}"
                f"k{b.in0_block_w}_sb{b.out_subblock_h}x{b.out_subblock_w}_{POLICY_SHORT[program.policy]}"
                f"_{program.compute.math_fidelity.lower()}")
    return f"{readable}_{h.hexdigest()[:8]}"


def _core_ranges(kernel_or_range) -> list[dict[str, list[int]]]:
    """A CoreRange as the manifest's list of rectangles (a run with a partial last row is two)."""
    return [{"start": [r.x0, r.y0], "end": [r.x1, r.y1]} for r in kernel_or_range.rectangles()]


def _cb_cores(program: Program) -> list[dict[str, list[int]]]:
    """The cores the CBs are on: the compute kernels' (a factory may bind one compute kernel per group of cores),
    then those of a data-movement kernel on cores without compute (a width-sharded in0's cores without output
    work, which still multicast their shard through c_0: the 1D factory's all_cores)."""
    ranges = [r for k in program.kernels if k.processor == "TRISC" for r in _core_ranges(k.cores)]
    covered = {c for k in program.kernels if k.processor == "TRISC" for c in k.cores.cores()}
    for k in program.kernels:
        if k.processor != "TRISC" and not covered & set(k.cores.cores()):
            ranges += _core_ranges(k.cores)
            covered |= set(k.cores.cores())
    return ranges


def _runtime_value(arg: RuntimeArg, env: dict[str, int]) -> Any:
    """A runtime arg as the manifest stores it: an int, or what the loader must look up."""
    if arg.source in ("core_x", "core_y"):
        return env[arg.source]
    if arg.source in ("noc_x", "noc_y"):
        return {arg.source: arg.logical(env)}
    if arg.source == "buffer_address":
        return {"buffer_address": arg.tensor}
    if arg.source == "value":
        return arg.logical(env)
    raise KgenBug(f"unknown runtime arg source {arg.source}")


def manifest_body(program: Program) -> dict[str, Any]:
    """The manifest without its id fields (the id hashes this)."""
    c = program.compute
    all_cores = _cb_cores(program)
    kernels = []
    for k in program.kernels:
        entry: dict[str, Any] = {
            "name": k.name,
            "role": k.role,
            "source": f"kernels/{k.name}.cpp",
            "processor": PROCESSOR_ENUM[k.processor],
            "noc": None if k.noc is None else f"NOC_{k.noc}",
            "core_ranges": _core_ranges(k.cores),
            "compile_time_args": [int(v) for _, v in k.compile_time_args],
            "compile_time_arg_names": [n for n, _ in k.compile_time_args],
            "named_compile_time_args": {n: int(v) for n, v in k.named_compile_time_args},
            "defines": {n: v for n, v in k.defines},
            "runtime_arg_names": [a.name for a in k.runtime_args],
            "runtime_args": [{"core": [x, y], "args": [_runtime_value(a, {"core_x": x, "core_y": y})
                                                        for a in k.runtime_args]}
                             for x, y in k.cores.cores()],
            "common_runtime_arg_names": [a.name for a in k.common_runtime_args],
            "common_runtime_args": [_runtime_value(a, {}) for a in k.common_runtime_args],
        }
        if k.processor == "TRISC":
            entry["compute_config"] = {
                "math_fidelity": c.math_fidelity, "fp32_dest_acc_en": c.fp32_dest_acc,
                "math_approx_mode": c.math_approx, "dst_full_sync_en": c.dst_full_sync,
                "l1_acc_enabled": c.l1_acc_enabled,
            }
            # ComputeConfigDescriptor.unpack_to_dest_mode, the CBs that are not Default (only when there are)
            to_dest = {str(cb.index): "UnpackToDestFp32" for cb in program.cbs if cb.unpack_to_dest}
            if to_dest:
                entry["compute_config"]["unpack_to_dest_mode"] = to_dest
        kernels.append(entry)
    cbs = []
    for region in program.regions:
        members = [program.cb(i) for i in region.cb_indices]
        cbs.append({
            "name": region.name,
            "total_size": region.bytes,
            "core_ranges": all_cores,
            "format_descriptors": [{"buffer_index": cb.index, "data_format": cb.data_format,
                                    "page_size": cb.page_bytes, "tile": {"height": TILE_HW, "width": TILE_HW, "transpose": False}}
                                   for cb in members],
            # a CB globally allocated on a sharded tensor's L1 buffer (ttnn CBDescriptor.buffer)
            **({"globally_allocated": members[0].buffer} if members[0].buffer else {}),
        })
    semaphores = [{"id": s.id, "name": s.name, "core_type": "WORKER", "core_ranges": _core_ranges(s.cores),
                   "initial_value": s.initial} for s in program.semaphores]
    return {
        "arch": program.arch.name,
        "tt_metal_version": TT_METAL_VERSION,
        "kgen_version": __version__,
        "spec": {"name": program.name, "variant": program.variant},
        "policy": program.policy,
        "io_tensors": [_io_tensor(t) for t in program.io_tensors],
        "kernels": kernels,
        "cbs": cbs,
        "semaphores": semaphores,
    }


def _io_tensor(t: IoTensor) -> dict[str, Any]:
    """An io tensor as the manifest lists it: its padded shape where it differs, its MemoryConfig where it
    is not interleaved in DRAM."""
    entry: dict[str, Any] = {"name": t.name, "shape": list(t.shape), "data_format": t.data_format,
                             "layout": t.layout, "page_size": t.page_bytes}
    if t.padded_shape != t.shape:
        entry["padded_shape"] = list(t.padded_shape)
    if t.transposed:
        entry["transposed"] = True
    if t.shard is not None:
        entry["memory"] = _memory_config(t.shard)
    elif t.placement == Placement.L1:
        entry["memory"] = {"buffer_type": "L1", "memory_layout": "INTERLEAVED"}
    return entry


def _memory_config(shard: ShardSpec) -> dict[str, Any]:
    """A sharded tensor's ttnn MemoryConfig: L1 (or DRAM, the grid then the DRAM banks), its layout and
    ShardSpec (core grid as (x0, y0, x1, y1), shard shape in elements, orientation)."""
    return {"buffer_type": shard.buffer_type, "memory_layout": shard.memory_layout,
            "shard_spec": {"grid": list(shard.grid), "shape": list(shard.shape),
                           "orientation": shard.orientation}}


def manifest(body: dict[str, Any], kid: str) -> dict[str, Any]:
    # ttnn's ProgramDescriptor.custom_program_hash is a uint64: the id's full digest, truncated.
    digest = hashlib.sha256(kid.encode()).digest()
    return {"format_version": FORMAT_VERSION, "kernel_id": kid,
            "custom_program_hash": int.from_bytes(digest[:8], "big"), **body}


def render_readme(program: Program, kid: str, manifest_data: dict[str, Any]) -> str:
    return render_template("report/README.md.j2", kid=kid, program=program, manifest=manifest_data,
                   kernels=program.kernels, tt_metal_version=TT_METAL_VERSION)


def render_folder(program: Program, plan_json: Mapping[str, Any]) -> tuple[str, tuple[SourceFile, ...], dict]:
    """Everything a build folder holds, rendered in memory: (kernel id, files, manifest). `plan_json`
    is the plan's dict (`kgen check --json`) that the folder keeps beside the program as plan.json."""
    sources = render_sources(program)
    body = manifest_body(program)
    kid = kernel_id(program, sources, body)
    data = manifest(body, kid)
    files = sources + (
        SourceFile("manifest.json", _json(data)),
        SourceFile("plan.json", _json(plan_json)),
        SourceFile("ir.txt", format_program(program)),
        SourceFile("README.md", render_readme(program, kid, data)),
    )
    return kid, files, data


def _json(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"
