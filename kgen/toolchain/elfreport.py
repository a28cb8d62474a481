"""Inspect stage: kernel ELFs -> sizes against the processor's memory regions (pyelftools).

A kernel's code is linked after the firmware and may use MEM_<P>_KERNEL_SIZE bytes; its data
(.data, read-only data, .bss) lives in the processor's local data memory (configs/arch/*.toml
[processors]). A kernel that does not fit is an error that says by how much.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kgen.core.arch import ArchFacts
from kgen.core.errors import KgenError

SYMBOLS_OF_INTEREST = ("_start", "kernel_main", "run_kernel")


class ElfError(KgenError):
    exit_code = 1


@dataclass(frozen=True)
class ElfSizes:
    path: Path
    processor: str                      # brisc, ncrisc, trisc0..2 (configs/arch [processors])
    text: int                           # executable, allocated
    data: int                           # allocated, loaded, not executable (.data, .rodata, ...)
    bss: int                            # allocated, not loaded
    text_limit: int
    local_limit: int
    symbols: tuple[tuple[str, int, int], ...]   # (name, address, size): entry points, then largest functions

    @property
    def text_margin(self) -> int:
        return self.text_limit - self.text

    @property
    def local_margin(self) -> int:
        return self.local_limit - self.data - self.bss

    @property
    def fits(self) -> bool:
        return self.text_margin >= 0 and self.local_margin >= 0

    def problems(self) -> list[str]:
        out = []
        if self.text_margin < 0:
            out.append(f"{self.path.name}: code is {self.text} bytes, {-self.text_margin} over the "
                       f"{self.text_limit}-byte kernel text region of {self.processor}")
        if self.local_margin < 0:
            out.append(f"{self.path.name}: data+bss is {self.data + self.bss} bytes, {-self.local_margin} over "
                       f"the {self.local_limit}-byte local memory of {self.processor}")
        return out


def elf_sizes(path: Path, processor: str, arch: ArchFacts, largest: int = 5) -> ElfSizes:
    # pyelftools only when there is an ELF to read: `kgen build` and `check` start without it
    from elftools.common.exceptions import ELFError
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    limits = arch.processors[processor]
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            text = data = bss = 0
            for section in elf.iter_sections():
                flags = section["sh_flags"]
                if not flags & SH_FLAGS.SHF_ALLOC:
                    continue
                if flags & SH_FLAGS.SHF_EXECINSTR:
                    text += section["sh_size"]
                elif section["sh_type"] == "SHT_NOBITS":
                    bss += section["sh_size"]
                else:
                    data += section["sh_size"]
            named, funcs = [], []
            symtab = elf.get_section_by_name(".symtab")
            if isinstance(symtab, SymbolTableSection):
                for sym in symtab.iter_symbols():
                    entry = (sym.name, sym["st_value"], sym["st_size"])
                    if sym.name in SYMBOLS_OF_INTEREST:
                        named.append(entry)
                    elif sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] > 0:
                        funcs.append(entry)
            funcs.sort(key=lambda e: (-e[2], e[0]))
    except (OSError, ELFError) as exc:
        raise ElfError(f"{path}: not a readable ELF file ({exc})") from None
    return ElfSizes(path, processor, text, data, bss, limits["text_bytes"], limits["local_bytes"],
                    tuple(sorted(named)) + tuple(funcs[:largest]))


def format_sizes(rows: list[tuple[str, ElfSizes]]) -> str:
    lines = [f"  {'kernel':<22}{'elf':<8}{'text':>9}{'data':>7}{'bss':>7}{'text margin':>13}{'local margin':>14}"]
    for kernel, s in rows:
        lines.append(f"  {kernel:<22}{s.processor:<8}{s.text:>9}{s.data:>7}{s.bss:>7}"
                     f"{s.text_margin:>13}{s.local_margin:>14}" + ("" if s.fits else "  DOES NOT FIT"))
        for name, addr, size in s.symbols:
            lines.append(f"  {'':<22}{'':<8}  {name} @0x{addr:x} ({size} bytes)")
    return "\n".join(lines) + "\n"
