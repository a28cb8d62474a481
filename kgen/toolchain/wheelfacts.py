"""Machine code of TT-Metal functions, cut from the ttnn wheel's compiled library at fetch time, so
that a test can read a fact from 0.81.1 itself (configs/toolchain.toml `facts_functions`): the
activation parameters TT's matmul factory sets are immediates of get_activation_params."""

from __future__ import annotations

import io
import json
from pathlib import Path

FACTS = "kgen-facts"


def cut_functions(library: bytes, functions: list[list[str]]) -> dict[str, tuple[str, bytes]]:
    """name -> (mangled symbol, machine code) for each (name, mangled-name prefix); the first
    function symbol of the ELF symbol table with that prefix (the library's own, not a copy in
    another namespace)."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(library))
    symbols = [s for name in (".symtab", ".dynsym") if (sec := elf.get_section_by_name(name)) is not None
               for s in sec.iter_symbols() if s["st_info"]["type"] == "STT_FUNC" and s["st_size"] > 0]
    out = {}
    for name, prefix in functions:
        sym = next((s for s in symbols if s.name.startswith(prefix)), None)
        if sym is None:
            continue
        addr, size = sym["st_value"], sym["st_size"]
        for sec in elf.iter_sections():
            if sec["sh_addr"] <= addr < sec["sh_addr"] + sec["sh_size"] and sec["sh_type"] == "SHT_PROGBITS":
                start = sec["sh_offset"] + addr - sec["sh_addr"]
                out[name] = (sym.name, library[start:start + size])
                break
    return out


def write_facts(cut: dict[str, tuple[str, bytes]], into: Path, library_name: str) -> None:
    into.mkdir(parents=True, exist_ok=True)
    index = {}
    for name, (symbol, code) in cut.items():
        (into / f"{name}.bin").write_bytes(code)
        index[name] = {"symbol": symbol, "bytes": len(code), "library": library_name}
    (into / "index.json").write_text(json.dumps(index, indent=2) + "\n")


def function_code(root: Path, name: str) -> bytes | None:
    """The machine code kept for `name` in a header tree, or None (a tree fetched before kgen kept
    it, or a TT-Metal checkout)."""
    path = root / FACTS / f"{name}.bin"
    return path.read_bytes() if path.is_file() else None


def immediates32(code: bytes) -> set[int]:
    """Every little-endian 32-bit word at any byte offset of the code: a superset of the
    instructions' 32-bit immediates."""
    return {int.from_bytes(code[i:i + 4], "little") for i in range(len(code) - 3)}
