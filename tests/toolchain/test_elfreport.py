"""ELF report: section sizes of real RISC-V ELFs (linked here with Debian's bare-metal gcc) read
with pyelftools, checked against binutils' `size`, and the fit check against configs/arch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need_tool
from kgen.core.arch import load_arch
from kgen.toolchain.elfreport import ElfError, elf_sizes, format_sizes

GCC, SIZE = "riscv64-unknown-elf-gcc", "riscv64-unknown-elf-size"

# A kernel-shaped program: code, initialised data, read-only data and zeroed data.
SOURCE = """
int counter = 7;
int table[64] = {{1, 2, 3}};
const char message[] = "kgen";
int scratch[{bss_words}];
__attribute__((used)) void padding(void) {{ __asm__ volatile(".space {text_pad}"); }}
int kernel_main(void) {{ scratch[0] = counter + table[1] + message[0]; return scratch[0]; }}
void _start(void) {{ kernel_main(); for (;;) {{}} }}
"""


def link(tmp_path: Path, bss_words: int = 16, text_pad: int = 0) -> Path:
    if shutil.which(GCC) is None or shutil.which(SIZE) is None:
        need_tool("RISC-V gcc and binutils", "apt-get install -y gcc-riscv64-unknown-elf")
    src = tmp_path / "k.c"
    src.write_text(SOURCE.format(bss_words=bss_words, text_pad=text_pad))
    elf = tmp_path / "k.elf"
    subprocess.run([GCC, "-march=rv32im", "-mabi=ilp32", "-O2", "-nostdlib", "-nostartfiles", "-o", str(elf),
                    str(src)], check=True, capture_output=True)
    return elf


def binutils_size(elf: Path) -> dict[str, int]:
    """Section sizes from `size -A`: the independent reading."""
    out = subprocess.run([SIZE, "-A", str(elf)], check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def test_sizes_agree_with_binutils(tmp_path):
    elf = link(tmp_path, bss_words=100)
    s = elf_sizes(elf, "trisc1", load_arch("wormhole_b0"))
    ref = binutils_size(elf)
    assert s.text == sum(v for k, v in ref.items() if k.startswith(".text"))
    assert s.bss == sum(v for k, v in ref.items() if k.startswith((".bss", ".sbss")))
    assert s.data == sum(v for k, v in ref.items() if k.startswith((".data", ".sdata", ".rodata", ".srodata")))
    assert s.bss >= 400 and s.data >= 256 + 4 and s.text > 0
    names = [n for n, _, _ in s.symbols]
    assert names[:2] == ["_start", "kernel_main"]
    assert s.fits and s.text_limit == 1432 * 1024 and s.local_limit == 2048
    table = format_sizes([("compute", s)])
    assert "trisc1" in table and "kernel_main @0x" in table


def test_a_kernel_over_the_wormhole_ncrisc_iram_does_not_fit(tmp_path):
    elf = link(tmp_path, text_pad=20000)
    s = elf_sizes(elf, "ncrisc", load_arch("wormhole_b0"))
    assert s.text > 16384 and not s.fits
    [problem] = s.problems()
    assert f"{s.text - 16384} over the 16384-byte kernel text region of ncrisc" in problem
    # The same kernel fits Blackhole's NCRISC, which runs kernels from L1.
    assert elf_sizes(elf, "ncrisc", load_arch("blackhole")).fits


def test_too_much_local_data(tmp_path):
    elf = link(tmp_path, bss_words=1024)
    s = elf_sizes(elf, "trisc0", load_arch("wormhole_b0"))
    [problem] = s.problems()
    assert "over the 2048-byte local memory of trisc0" in problem and str(s.data + s.bss - 2048) in problem


def test_not_an_elf_is_a_clean_error(tmp_path):
    bad = tmp_path / "x.elf"
    bad.write_text("not an elf")
    with pytest.raises(ElfError, match="not a readable ELF"):
        elf_sizes(bad, "brisc", load_arch("blackhole"))
