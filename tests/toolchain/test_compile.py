"""Compile stage: command lines vs TT-Metal 0.81.1's JIT, the host type-check of every example
against the real headers, TT-Metal's own reference kernel through the same path, a misuse suite
of seeded errors, and the compile cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, ROOT, example, last_paragraph, need_tool
from kgen.core.arch import load_arch
from kgen.gen.build import build, write_artifacts
from kgen.cli import main
from kgen.toolchain.compile import (KernelInfo, compile_folder, failure_text, host_check_command, jit_defines,
                          read_kernels, sfpi_compile_command, sfpi_link_command)
from kgen.toolchain.headers import HeaderTree
from kgen.gen.pipeline import run, with_compute_kernel
from kgen.gen.spec import load, load_file, resolve
from kgen.toolchain.discovery import HostChecker, Sfpi, discover

WH, BH = load_arch("wormhole_b0"), load_arch("blackhole")
TREE = HeaderTree(Path("/tt"), "0.81.1", "test")
SFPI = Sfpi(Path("/sfpi"), Path("/sfpi/compiler/bin/riscv-tt-elf-g++"), "riscv-tt-elf-g++ 15.1.0")


def kernel(processor: str, noc: int = 0, defines=(("FUSE_BIAS", "1"),)) -> KernelInfo:
    return KernelInfo("k", processor, noc, (4, 2, 2048), tuple(defines), Path("/b/kernels/k.cpp"), Path("/b/jit/k"))


def defines(argv: list[str]) -> list[str]:
    return [a[2:] for a in argv if a.startswith("-D")]


# ----------------------------------------------------------------------------------------------
# Command lines against TT-Metal's JIT (docs/reference/toolchain.md §3.3, docs/reference/matmul.md §4.3)
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("role,expected", [
    ("unpack", ["UCK_CHLKC_UNPACK", "NAMESPACE=chlkc_unpack", "COMPILE_FOR_TRISC=0", "PROCESSOR_INDEX=2"]),
    ("math", ["UCK_CHLKC_MATH", "NAMESPACE=chlkc_math", "COMPILE_FOR_TRISC=1", "PROCESSOR_INDEX=3"]),
    ("pack", ["UCK_CHLKC_PACK", "NAMESPACE=chlkc_pack", "COMPILE_FOR_TRISC=2", "PROCESSOR_INDEX=4"]),
])
def test_trisc_roles_get_the_jit_defines_and_compile_trisck(role, expected):
    argv = sfpi_compile_command(SFPI, TREE, WH, role, kernel("TRISC"), Path("/o/x.o"))
    assert defines(argv)[-4:] == expected
    assert argv[-1] == "/tt/tt_metal/hw/firmware/src/tt-1xx/trisck.cc"
    # Compute kernels read their defines from defines_generated.h, never the command line.
    assert "FUSE_BIAS=1" not in defines(argv)
    assert "-I/tt/tt_metal/hw/ckernels/wormhole_b0/metal/llk_api" in argv and "-I/sfpi/include" in argv


@pytest.mark.parametrize("processor,source,role_defines", [
    ("RISCV_0", "brisck.cc", ["COMPILE_FOR_BRISC", "PROCESSOR_INDEX=0"]),
    ("RISCV_1", "ncrisck.cc", ["COMPILE_FOR_NCRISC", "PROCESSOR_INDEX=1"]),
])
def test_data_movement_kernels_get_their_defines_on_the_command_line(processor, source, role_defines):
    k = kernel(processor, noc=1)
    role = "brisc" if processor == "RISCV_0" else "ncrisc"
    argv = sfpi_compile_command(SFPI, TREE, BH, role, k, Path("/o/x.o"))
    d = defines(argv)
    assert d[-3:] == [*role_defines, "FUSE_BIAS=1"] and "NOC_INDEX=1" in d
    assert argv[-1] == f"/tt/tt_metal/hw/firmware/src/tt-1xx/{source}"
    assert not any("llk_api" in a for a in argv) and "-I/sfpi/include" not in argv


def test_sfpi_flags_are_tt_metals():
    math = sfpi_compile_command(SFPI, TREE, WH, "math", kernel("TRISC"), Path("/o/x.o"))
    brisc = sfpi_compile_command(SFPI, TREE, WH, "brisc", kernel("RISCV_0"), Path("/o/x.o"))
    bh_math = sfpi_compile_command(SFPI, TREE, BH, "math", kernel("TRISC"), Path("/o/x.o"))
    bh_ncrisc = sfpi_compile_command(SFPI, TREE, BH, "ncrisc", kernel("RISCV_1"), Path("/o/x.o"))
    assert math[0] == "/sfpi/compiler/bin/riscv-tt-elf-g++"
    # -mcpu per processor kind and arch (HAL common_flags; firmware DW_AT_producer).
    assert "-mcpu=tt-wh-tensix" in math and "-mcpu=tt-wh" in brisc
    assert "-mcpu=tt-bh-tensix" in bh_math and "-mcpu=tt-bh" in bh_ncrisc
    # ComputeConfig O3, DataMovementConfig O2; DM adds -fno-tree-loop-distribute-patterns.
    assert "-O3" in math and "-O2" in brisc
    assert "-fno-tree-loop-distribute-patterns" in brisc and "-fno-tree-loop-distribute-patterns" not in math
    for flag in ("-std=c++17", "-ftt-nttp", "-flto=1", "-ffast-math", "-fno-exceptions", "-fno-rtti",
                 "-fno-use-cxa-atexit", "-Wall", "-Werror", "-Wno-error=deprecated-declarations", "-c"):
        assert flag in math, flag
    d = defines(math)
    assert d[:7] == ["ARCH_WORMHOLE", "TENSIX_FIRMWARE", "LOCAL_MEM_EN=0", "KERNEL_BUILD", "NOC_MODE=0",
                     "DISPATCH_MESSAGE_ADDR=0", "PROGRAMMABLE_CORE_TYPE=0"]
    assert "KERNEL_COMPILE_TIME_ARGS=4,2,2048" in d
    assert math[math.index("-o") + 1] == "/o/x.o"


def test_bank_defines_follow_the_device():
    # WH: 12 DRAM banks (not a power of two), 64 L1 banks; BH: 8 DRAM banks, 140 L1 banks.
    wh, bh = jit_defines(WH, "brisc", kernel("RISCV_0")), jit_defines(BH, "brisc", kernel("RISCV_0"))
    assert {"NUM_DRAM_BANKS=12", "NUM_L1_BANKS=64", "IS_NOT_POW2_NUM_DRAM_BANKS=1",
            "LOG_BASE_2_OF_NUM_L1_BANKS=6"} <= set(wh)
    assert {"NUM_DRAM_BANKS=8", "NUM_L1_BANKS=140", "LOG_BASE_2_OF_NUM_DRAM_BANKS=3",
            "IS_NOT_POW2_NUM_L1_BANKS=1"} <= set(bh)


@pytest.mark.parametrize("role,elf,objects", [
    ("unpack", "trisc0", ["substitutes.o"]),
    ("math", "trisc1", ["substitutes.o"]),
    ("pack", "trisc2", ["substitutes.o"]),
    ("brisc", "brisc", ["substitutes.o", "noc.o"]),
    ("ncrisc", "ncrisc", ["substitutes.o"]),
])
def test_link_is_against_the_weakened_firmware(role, elf, objects):
    script = f"kernel_{elf}.ld"
    argv = sfpi_link_command(SFPI, Path("/rt/hw"), Path("/fw/wormhole"), WH, role, Path("/o/x.o"), Path("/o/x.elf"))
    assert f"-T/rt/hw/toolchain/wormhole/{script}" in argv
    assert f"-Wl,--just-symbols=/fw/wormhole/{elf}/{elf}_weakened.elf" in argv
    for flag in ("-Wl,-z,max-page-size=16", "-Wl,-z,common-page-size=16", "-nostartfiles", "-Wl,--emit-relocs"):
        assert flag in argv
    assert [a for a in argv if a.endswith(".o") and a.startswith("/rt")] == \
        [f"/rt/hw/lib/wormhole/{o}" for o in objects]
    assert argv[-2:] == ["-o", "/o/x.elf"]


def test_host_check_is_the_recipes_syntax_only_compile():
    host = HostChecker("riscv64-unknown-elf-g++", "12.2.0", Path("/usr/include/c++/12"),
                       Path("/usr/include/x86_64-linux-gnu/c++/12/bits"), Path("/pico"))
    argv = host_check_command(host, TREE, Path("/stubs"), Path("/ovl"), WH, "math", kernel("TRISC"))
    assert argv[:6] == ["riscv64-unknown-elf-g++", "-march=rv32im", "-mabi=ilp32", "-std=c++20", "-fsyntax-only",
                        "-fno-exceptions"]
    # libstdc++ overlay before libstdc++ before picolibc (so #include_next finds the C headers).
    isys = [argv[i + 1] for i, a in enumerate(argv) if a == "-isystem"]
    assert isys == ["/ovl", "/usr/include/c++/12", "/pico"]
    incs = [a for a in argv if a.startswith("-I")]
    assert incs[:3] == ["-I/stubs", "-I/b/jit/k", "-I/tt"]


# ----------------------------------------------------------------------------------------------
# Real type-checks against the fetched 0.81.1 headers
# ----------------------------------------------------------------------------------------------

def all_builds() -> list[tuple[Path, str | None]]:
    out = []
    for path in EXAMPLES:
        out.append((path, None))
        out.extend((path, v) for v in load_file(path).variants)
    return out


@pytest.mark.parametrize("path,variant", all_builds(), ids=lambda x: x.stem if isinstance(x, Path) else str(x))
@pytest.mark.slow
def test_every_example_type_checks_for_all_its_processors(path, variant, host_toolchain, tmp_path, capsys):
    args = ["build", str(path), "-o", str(tmp_path), "--check", "-j", "2",
            "--headers", str(host_toolchain.headers.root)]
    code = main(args + (["--variant", variant] if variant else []))
    out, err = capsys.readouterr()
    assert code == 0, err
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = json.loads((folder / "compile.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    expected = {(k["name"], r) for k in manifest["kernels"]
                for r in {"TRISC": ("unpack", "math", "pack"), "RISCV_0": ("brisc",), "RISCV_1": ("ncrisc",)}[k["processor"]]}
    assert {(b["kernel"], b["role"]) for b in report["builds"]} == expected
    assert all(b["ok"] for b in report["builds"]) and report["mode"] == "check"
    # kgen's kernels need no allow-listed GCC-12 leniency at all.
    assert all(b["allow_listed_diagnostics"] == 0 for b in report["builds"])
    assert report["headers"]["version"] == "0.81.1"
    assert f"type-checked {len(expected)} kernel builds" in out


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
@pytest.mark.slow
def test_tt_metals_reference_kernel_type_checks_in_every_kgen_manifest(path, host_toolchain, tmp_path):
    """bmm_large_block_zm_fused_bias_activation.cpp from the fetched headers, with kgen's CT args,
    named args, defines and CB descriptors: proof that the checker is real and that kgen's
    interface is the one TT-Metal's kernel expects."""
    swap = with_compute_kernel(host_toolchain.headers.reference_kernel)
    folder = write_artifacts(run(load(path), overrides={"rendered": swap}), tmp_path / "ref").path
    report = compile_folder(folder, host_toolchain, "check", parallel=2, cache=tmp_path / "cache")
    failures = [failure_text(r, str(path)) for r in report.failures]
    assert not failures, "\n".join(failures)
    ref = [r for r in report.results if r.job.kernel.processor == "TRISC"]
    assert len(ref) == 3 and all(not r.cached for r in ref)
    chlkc = (folder / "jit" / "compute" / "chlkc_math.cpp").read_text()
    assert "bmm_large_block_zm_fused_bias_activation.cpp" in chlkc


# The misuse suite: seeded errors in otherwise-good kernels, each (kernel, old, new, expected
# message); "re:" marks a regular expression. The checker must fail the broken kernel only, with
# a message that says what is wrong, names the generated file and the spec, and gives a repro.
MISUSE = {
    "matmul_block with 8 arguments": (
        "compute", r"re:matmul_block\(([^;]*?), (\w+)\);", r"matmul_block(\1);", "too few arguments"),
    "unknown API function": (
        "compute", "tile_regs_commit();", "tile_regs_comit();", "'tile_regs_comit' was not declared"),
    "missing include": (
        "compute", '#include "api/compute/matmul.h"\n', "", "'matmul_block' was not declared"),
    "bad named CT arg": (
        "compute", 'get_named_compile_time_arg_val("cb_out")', 'get_named_compile_time_arg_val("cb_outt")',
        "not a constant expression"),
    "out-of-range CT arg index": (
        "compute", "get_compile_time_arg_val(0)", "get_compile_time_arg_val(40)", "Index out of range"),
    "sign-compare under -Werror": (
        "compute", "void kernel_main() {",
        "void kernel_main() {\n    for (int i = 0; i < get_compile_time_arg_val(0); ++i) {}", "-Werror=sign-compare"),
    "CT arg value contradicting the plan": (
        "compute", "static_assert(in0_block_w == 4", "static_assert(in0_block_w == 5", "static assertion failed"),
    "define contradicting the plan": (
        "compute", "#ifndef PACKER_L1_ACC", "#ifdef PACKER_L1_ACC", "kernel generated with PACKER_L1_ACC"),
    "misspelled dataflow call": (
        "in0_sender", "noc_async_read_barrier();", "noc_async_read_barier();", "'noc_async_read_barier' was not declared"),
    "TensorAccessorArgs beyond the CT args": (
        "in0_sender", "TensorAccessorArgs<2>", "TensorAccessorArgs<20>", "Index out of range"),
    "wrong argument type": (
        "in1_sender_writer", "noc_async_write_multicast(l1_addr,", 'noc_async_write_multicast("l1",',
        "cannot convert"),
    "no kernel_main": (
        "compute", "void kernel_main() {", "void kernel_mian() {", "'kernel_main' was not declared"),
}


def seed(text: str, old: str, new: str) -> str:
    return re.sub(old[3:], new, text, count=1) if old.startswith("re:") else text.replace(old, new, 1)


@pytest.fixture(scope="module")
def good_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("misuse")
    return build(load(example("peak_small")), root / "b").path


@pytest.mark.parametrize("name", list(MISUSE))
@pytest.mark.slow
def test_misuse_suite_every_seeded_error_is_caught(name, good_build, host_toolchain, tmp_path):
    kernel_name, old, new, expected = MISUSE[name]
    folder = tmp_path / "b"
    shutil.copytree(good_build, folder)
    source = folder / "kernels" / f"{kernel_name}.cpp"
    text = source.read_text()
    seeded = seed(text, old, new)
    assert seeded != text, f"seed for {name!r} did not apply"
    source.write_text(seeded)
    report = compile_folder(folder, host_toolchain, "check", cache=tmp_path / "cache")
    failed = [r for r in report.results if r.job.kernel.name == kernel_name and not r.ok]
    assert failed, f"seeded error not caught: {name}"
    message = failure_text(failed[0], "examples/peak_small.kspec")
    assert expected in message, message
    # The location: the generated kernel's line, or for a missing entry point the firmware's call.
    where = "chlkc_list.h" if name == "no kernel_main" else f"kernels/{kernel_name}.cpp:"
    assert where in message and "examples/peak_small.kspec" in message
    assert "\nrepro: cd " in message and "-fsyntax-only" in message.splitlines()[-1]
    assert all(r.ok for r in report.results if r.job.kernel.name != kernel_name)


def test_the_good_build_itself_is_clean(good_build, host_toolchain, tmp_path):
    report = compile_folder(good_build, host_toolchain, "check", cache=tmp_path / "cache")
    assert not report.failures and len(report.results) == 7


@pytest.mark.slow
def test_second_identical_build_compiles_nothing_and_force_recompiles(host_toolchain, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    discover.cache_clear()
    args = ["build", str(example("peak_small")), "-o", str(tmp_path / "out"), "--check",
            "--headers", str(host_toolchain.headers.root)]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    second = capsys.readouterr().out
    assert main(args + ["--force"]) == 0
    forced = capsys.readouterr().out
    assert "(7 run, 0 from cache)" in first
    assert "(0 run, 7 from cache)" in second
    assert "(7 run, 0 from cache)" in forced
    discover.cache_clear()


@pytest.mark.slow
def test_an_edited_header_invalidates_the_cache(host_toolchain, tmp_path):
    """The key covers every file the compiler read, not only the generated sources."""
    tree = tmp_path / "tree"
    shutil.copytree(host_toolchain.headers.root, tree, symlinks=True)
    tc = discover(headers=str(tree))
    folder = build(load(example("peak_small")), tmp_path / "b").path
    cache = tmp_path / "cache"
    assert compile_folder(folder, tc, "check", cache=cache).compiled == 7
    assert compile_folder(folder, tc, "check", cache=cache).compiled == 0
    header = tree / "tt_metal/hw/inc/api/compute/matmul.h"
    header.write_text(header.read_text() + "\n// touched\n")
    again = compile_folder(folder, tc, "check", cache=cache)
    assert {r.job.kernel.name for r in again.results if not r.cached} == {"compute"}


@pytest.mark.slow
def test_a_moved_build_folder_still_hits_the_cache(host_toolchain, tmp_path):
    folder = build(load(example("peak_small")), tmp_path / "a").path
    cache = tmp_path / "cache"
    assert compile_folder(folder, host_toolchain, "check", cache=cache).compiled == 7
    moved = tmp_path / "b" / folder.name
    moved.parent.mkdir()
    shutil.move(folder, moved)
    assert compile_folder(moved, host_toolchain, "check", cache=cache).compiled == 0
    # ... and an edit to the moved folder's kernel is still seen.
    kernel = moved / "kernels" / "compute.cpp"
    kernel.write_text(kernel.read_text() + "\n// edited\n")
    assert compile_folder(moved, host_toolchain, "check", cache=cache).compiled == 3


def test_relative_paths_type_check_as_typed(host_toolchain, tmp_path, monkeypatch, capsys):
    """Issue #12 §1: relative -o and KGEN_CACHE_DIR, as a user types them, after an absolute build
    of the same spec filled the cache (which must not turn a broken command into a pass)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KGEN_CACHE_DIR", "relcache")
    discover.cache_clear()
    headers = ["--headers", str(host_toolchain.headers.root)]
    spec = str(example("peak_small"))
    assert main(["build", spec, "-o", str(tmp_path / "abs"), "--check", *headers]) == 0
    capsys.readouterr()
    for argv in (["-o", "out"], ["-o", "out", "--force"], ["-o", "./out/../out2"]):
        assert main(["build", spec, "--check", *headers, *argv]) == 0, capsys.readouterr().err
        assert "type-checked 7 kernel builds" in capsys.readouterr().out
    assert (tmp_path / "relcache" / "compile").is_dir() and (tmp_path / "out2").is_dir()
    discover.cache_clear()


def test_a_relative_build_folder_never_reaches_the_cache_key(good_build, host_toolchain):
    from kgen.toolchain.compile import _job_key, plan_jobs
    from kgen.core.errors import KgenBug

    relative = Path(os.path.relpath(good_build))
    job = plan_jobs(relative, host_toolchain, "check")[0]
    with pytest.raises(KgenBug, match="relative build folder"):
        _job_key(job)


def test_repro_line_reproduces_from_any_folder(good_build, host_toolchain, tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(good_build, folder)
    source = folder / "kernels" / "compute.cpp"
    source.write_text(source.read_text().replace("tile_regs_commit();", "tile_regs_comit();", 1))
    report = compile_folder(Path(os.path.relpath(folder)), host_toolchain, "check", cache=tmp_path / "cache")
    message = failure_text(report.failures[0], None)
    repro = message.splitlines()[-1].removeprefix("repro: ")
    proc = subprocess.run(["bash", "-c", repro], cwd="/", capture_output=True, text=True)
    assert proc.returncode != 0 and "'tile_regs_comit' was not declared" in proc.stderr, proc.stderr


def test_a_failed_type_check_does_not_claim_success(good_build, host_toolchain, tmp_path, capsys):
    from kgen.cli import _build_parser, _compile

    folder = tmp_path / "b"
    shutil.copytree(good_build, folder)
    source = folder / "kernels" / "compute.cpp"
    source.write_text(source.read_text().replace("tile_regs_commit();", "tile_regs_comit();", 1))
    args = _build_parser().parse_args(["build", "x.kspec", "--check", "--headers", str(host_toolchain.headers.root)])
    assert _compile(folder, args) == 1
    out = capsys.readouterr().out
    assert "type-checked 7" not in out and "FAILED for 3 of 7 kernel builds" in out, out


def test_an_unusable_cache_folder_is_a_clean_error(host_toolchain, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KGEN_CACHE_DIR", str(blocker))
    code = main(["build", str(example("peak_small")), "-o", str(tmp_path / "out"), "--check",
                 "--headers", str(host_toolchain.headers.root)])
    err = capsys.readouterr().err
    assert code == 2 and "KGEN_CACHE_DIR" in err and "Traceback" not in err


def test_named_places_that_hold_nothing_are_errors_not_fallbacks(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KGEN_SFPI_ROOT", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    for flag, words in (("--headers", "--headers"), ("--sfpi", "no SFPI compiler"), ("--firmware", "--firmware")):
        discover.cache_clear()
        code = main(["build", str(example("peak_small")), "-o", str(tmp_path / "out"), flag, str(empty)])
        err = capsys.readouterr().err
        assert code == 2 and words in err and "Traceback" not in err, (flag, err)
    discover.cache_clear()


@pytest.mark.slow
def test_two_concurrent_builds_of_one_spec_give_one_intact_result(host_toolchain, tmp_path):
    env = dict(os.environ, KGEN_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "kgen", "build", str(example("peak_small")), "-o", str(tmp_path / "out"),
           "--check", "-j", "2", "--headers", str(host_toolchain.headers.root)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), [err for _, err, _ in results]
    folders = [p for p in (tmp_path / "out").iterdir()]
    assert len(folders) == 1 and not folders[0].name.startswith(".")
    folder = folders[0]
    # Intact: the folder is a complete build (its files equal a fresh render) and its compile
    # report is whole JSON; a third build finds everything cached.
    assert main(["build", "--no-compile", str(example("peak_small")), "-o", str(tmp_path / "fresh")]) == 0
    [fresh] = (tmp_path / "fresh").iterdir()
    for f in fresh.rglob("*"):
        if f.is_file():
            assert (folder / f.relative_to(fresh)).read_bytes() == f.read_bytes()
    assert all(b["ok"] for b in json.loads((folder / "compile.json").read_text())["builds"])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "(0 run, 7 from cache)" in out.stdout
    entries = list((tmp_path / "cache" / "compile").glob("*/*"))
    assert len([e for e in entries if not e.name.startswith(".")]) == 7
    assert not [e for e in entries if e.name.startswith(".")]


def test_check_without_headers_is_a_clean_error(tmp_path, capsys, monkeypatch):
    code = main(["build", str(example("peak_small")), "-o", str(tmp_path), "--check", "--headers", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--headers" in err and "lacks tt_metal/" in err and "kgen headers fetch" in err
    assert "Traceback" not in err
    # No headers anywhere: --check says it cannot type-check; a plain build renders and says why.
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("TT_METAL_HOME", raising=False)
    discover.cache_clear()
    # A check that could not run is never a pass: the last line says what and why, the exit is
    # EXIT_INCOMPLETE, with --check or without; --no-compile asks for rendering only.
    from kgen.proof.chain import EXIT_INCOMPLETE
    for flags in (["--check"], []):
        code = main(["build", str(example("peak_small")), "-o", str(tmp_path / "o"), *flags])
        last = last_paragraph(capsys.readouterr().out)
        assert code == EXIT_INCOMPLETE and "INCOMPLETE" in last and "not type-checked" in last, (flags, last)
        assert "kgen headers fetch" in last
    assert main(["build", str(example("peak_small")), "-o", str(tmp_path / "o"), "--no-compile"]) == 0
    assert "INCOMPLETE" not in capsys.readouterr().out
    code = main(["build", str(example("peak_small")), "-o", str(tmp_path), "--headers", str(tmp_path / "nope")])
    err = capsys.readouterr().err
    assert code == 2 and "--headers" in err and "no such folder" in err
    discover.cache_clear()


def test_real_sfpi_build_links_and_reports_sizes(tmp_path, capsys):
    tc = discover()
    if tc.sfpi is None:
        pytest.skip(f"SFPI not installed here ({tc.note('sfpi')})")
    if tc.headers is None:
        need_tool("TT-Metal headers", tc.note("headers"))
    code = main(["build", str(example("peak_small")), "-o", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = json.loads((folder / "compile.json").read_text())
    assert report["mode"] == "sfpi" and all(b["ok"] for b in report["builds"])
    assert sorted(p.name for p in (folder / "obj" / "compute").iterdir()) == ["math.o", "pack.o", "unpack.o"]
    if tc.firmware is not None:
        assert {e["elf"] for e in report["elfs"] if e["kernel"] == "compute"} == {"trisc0", "trisc1", "trisc2"}
        assert all(e["fits"] and e["text"] > 0 for e in report["elfs"])
