"""`kgen headers fetch` and `kgen doctor`: extraction rules, RECORD verification, atomic cache
writes, clean errors; and the facts kgen keeps in configs/ checked against the real 0.81.1 tree."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import zipfile
from pathlib import Path

import pytest

from conftest import last_paragraph
from kgen.core.arch import load_arch
from kgen.cli import main
from kgen.toolchain.headers import HeadersError, fetch_headers, find_headers, toolchain_config
from kgen.toolchain.discovery import discover

REQUIRED = toolchain_config()["headers"]["required"]


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(path: Path, members: dict[str, bytes], tamper: str | None = None) -> Path:
    """A wheel-shaped zip: members under ttnn/ plus a RECORD of their hashes."""
    record = [_record_line(n, d) for n, d in members.items()]
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data + (b"x" if name == tamper else b""))
        z.writestr("ttnn-0.81.1.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def wheel_members() -> dict[str, bytes]:
    members = {}
    for rel in REQUIRED:
        members["ttnn/" + rel] = f"// {rel}\n".encode()
    members["ttnn/tt_metal/hw/inc/ckernel_x.h"] = b"int a = sfpi::SFPLOAD_MOD0_FMT_FP32;\n"
    members["ttnn/tt_metal/pre-compiled/123/brisc/brisc.elf"] = b"\x7fELF prebuilt firmware"
    members["ttnn/runtime/hw/toolchain/wormhole/kernel_trisc0.ld"] = b"/* ld */\n"
    members["ttnn/ttnn/cpp/ttnn/operations/eltwise/unrelated.hpp"] = b"// not a matmul kernel\n"
    members["ttnn/_ttnn.so"] = b"binary"
    return members


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TT_METAL_HOME", raising=False)
    discover.cache_clear()
    yield tmp_path / "cache"
    discover.cache_clear()


def test_fetch_from_a_wheel_extracts_only_what_kernels_need(tmp_path, cache):
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-cp310-cp310-manylinux_2_34_x86_64.whl", wheel_members())
    tree = fetch_headers(from_wheel=wheel)
    assert tree.root == (cache / "headers" / "0.81.1").resolve() and tree.version == "0.81.1"
    files = sorted(str(p.relative_to(tree.root)) for p in tree.root.rglob("*") if p.is_file())
    assert "tt_metal/hw/inc/ckernel_x.h" in files and "runtime/hw/toolchain/wormhole/kernel_trisc0.ld" in files
    assert not any("pre-compiled" in f or "eltwise" in f or f.endswith(".so") for f in files)
    for rel in REQUIRED:
        assert (tree.root / rel).is_file()
    stamp = json.loads((tree.root / "kgen-headers.json").read_text())
    assert stamp["version"] == "0.81.1" and stamp["files"] == len(REQUIRED) + 2
    assert stamp["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    # kgen's stand-ins declare the SFPI constants the tree uses, with the sfpi_constants.h value.
    sfpi = (tree.root / "kgen-stubs" / "sfpi.h").read_text()
    assert "constexpr unsigned int SFPLOAD_MOD0_FMT_FP32 = 3;" in sfpi
    assert "namespace lltt" in (tree.root / "kgen-stubs" / "lltt.h").read_text()
    assert find_headers()[0].root == tree.root


def test_a_tampered_member_is_rejected_and_nothing_is_left(tmp_path, cache):
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-x.whl", wheel_members(), tamper="ttnn/tt_metal/hw/inc/ckernel_x.h")
    with pytest.raises(HeadersError, match="does not match the wheel's RECORD"):
        fetch_headers(from_wheel=wheel)
    assert not (cache / "headers" / "0.81.1").exists()
    assert [p.name for p in (cache / "headers").iterdir()] == []


def test_a_corrupt_member_is_a_clean_error(tmp_path, cache):
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-x.whl", wheel_members())
    data = bytearray(wheel.read_bytes())
    needle = b"int a = sfpi::SFPLOAD_MOD0_FMT_FP32;"
    at = data.index(needle)
    data[at:at + 3] = b"INT"                     # damage the stored bytes: the zip CRC no longer matches
    wheel.write_bytes(bytes(data))
    with pytest.raises(HeadersError, match="corrupt"):
        fetch_headers(from_wheel=wheel)
    assert not (cache / "headers" / "0.81.1").exists()


def test_a_cached_tree_is_kept_unless_forced(tmp_path, cache):
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-x.whl", wheel_members())
    first = fetch_headers(from_wheel=wheel)
    inode = first.root.stat().st_ino
    fetch_headers(from_wheel=wheel)
    assert first.root.stat().st_ino == inode
    fetch_headers(from_wheel=wheel, force=True)
    assert first.root.stat().st_ino != inode and not list((cache / "headers").glob(".*.tmp"))


def test_a_wheel_without_kernel_sources_is_rejected(tmp_path, cache):
    members = {k: v for k, v in wheel_members().items() if "bmm_large_block" not in k}
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-x.whl", members)
    with pytest.raises(HeadersError, match="lacks files kernels need"):
        fetch_headers(from_wheel=wheel)
    assert not (cache / "headers" / "0.81.1").exists()


def test_member_paths_cannot_escape_the_tree(tmp_path, cache):
    members = wheel_members()
    members["ttnn/tt_metal/../../../evil.h"] = b"x"
    with pytest.raises(HeadersError, match="outside the header tree"):
        fetch_headers(from_wheel=make_wheel(tmp_path / "ttnn-0.81.1-x.whl", members))
    assert not (tmp_path / "evil.h").exists()


def test_concurrent_fetches_leave_one_complete_tree(tmp_path, cache):
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-x.whl", wheel_members())
    errors = []

    def fetch():
        try:
            fetch_headers(from_wheel=wheel)
        except Exception as exc:   # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    names = sorted(p.name for p in (cache / "headers").iterdir())
    assert names == [".0.81.1.lock", "0.81.1"]          # the writers' lock; no .tmp or .old left
    tree, _ = find_headers()
    assert tree is not None and json.loads((tree.root / "kgen-headers.json").read_text())["version"] == "0.81.1"


@pytest.mark.parametrize("args,message", [
    (["--from-wheel", "/nonexistent/ttnn.whl"], "no such file"),
    (["--from-wheel", "{wheel}", "--version", "0.80.0"], "is ttnn 0.81.1, but --version 0.80.0"),
    (["--from-wheel", "{notzip}"], "not a readable wheel"),
    (["--from-wheel", "{badname}"], "is not a ttnn wheel"),
    (["--version", "../etc"], "not a version number"),
])
def test_fetch_errors_are_one_paragraph_and_exit_2(args, message, tmp_path, cache, capsys):
    wheel = make_wheel(tmp_path / "ttnn-0.81.1-x.whl", wheel_members())
    notzip = tmp_path / "ttnn-0.81.1-y.whl"
    notzip.write_text("not a zip")
    badname = tmp_path / "other.whl"
    badname.write_bytes(wheel.read_bytes())
    args = [a.format(wheel=wheel, notzip=notzip, badname=badname) for a in args]
    assert main(["headers", "fetch", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_doctor_reports_every_piece_with_the_command_that_gets_it(tmp_path, cache, capsys, monkeypatch):
    monkeypatch.delenv("KGEN_SFPI_ROOT", raising=False)
    from kgen.proof.chain import EXIT_INCOMPLETE

    # headers are missing from this empty cache: kgen build cannot type-check, and doctor's last
    # line and exit code say so
    assert main(["doctor", "--sfpi", str(tmp_path)]) == EXIT_INCOMPLETE
    out = capsys.readouterr().out
    last = last_paragraph(out)
    assert last.startswith("kgen doctor: INCOMPLETE") and "kgen build cannot type-check" in last, last
    for piece in ("sfpi", "headers", "runtime", "firmware", "host checker"):
        assert re.search(rf"^\s+\S+\s+{piece}\s", out, re.M), piece
    assert "kgen headers fetch" in out                 # headers are missing from this empty cache
    assert "tenstorrent/sfpi/releases/download/7.89.0" in out
    assert "kgen build will:" in out


# ----------------------------------------------------------------------------------------------
# configs/ against the real 0.81.1 tree
# ----------------------------------------------------------------------------------------------

def _macro_bytes(text: str, name: str, macros: dict[str, str]) -> int:
    """Evaluate a dev_mem_map.h size macro such as (1432 * 1024) or MEM_NCRISC_IRAM_SIZE."""
    expr = macros[name]
    for _ in range(5):
        expr = re.sub(r"\b(MEM_[A-Z0-9_]+)\b", lambda m: f"({macros[m.group(1)]})", expr)
    assert re.fullmatch(r"[\d\s()*+]+", expr), expr
    return eval(expr)  # noqa: S307 - digits and * + ( ) only, checked above


@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
def test_processor_regions_in_configs_match_dev_mem_map(arch, host_toolchain):
    facts = load_arch(arch)
    header = (host_toolchain.headers.tt_metal / "hw/inc/internal/tt-1xx" / facts.toolchain.hw_dir
              / "dev_mem_map.h").read_text()
    macros = dict(re.findall(r"#define\s+(MEM_[A-Z0-9_]+)\s+(.+?)\s*(?://.*)?$", header, re.M))
    for elf, (kernel_macro, local_macro) in {
            "brisc": ("MEM_BRISC_KERNEL_SIZE", "MEM_BRISC_LOCAL_SIZE"),
            "ncrisc": ("MEM_NCRISC_KERNEL_SIZE", "MEM_NCRISC_LOCAL_SIZE"),
            "trisc0": ("MEM_TRISC0_KERNEL_SIZE", "MEM_TRISC_LOCAL_SIZE"),
            "trisc1": ("MEM_TRISC1_KERNEL_SIZE", "MEM_TRISC_LOCAL_SIZE"),
            "trisc2": ("MEM_TRISC2_KERNEL_SIZE", "MEM_TRISC_LOCAL_SIZE")}.items():
        assert facts.processors[elf]["text_bytes"] == _macro_bytes(header, kernel_macro, macros), elf
        assert facts.processors[elf]["local_bytes"] == _macro_bytes(header, local_macro, macros), elf
    # The include folders and linker scripts the command lines name exist in the tree.
    root = host_toolchain.headers.root
    for key in ("ckernels_dir",):
        assert (root / "tt_metal/hw/ckernels" / getattr(facts.toolchain, key) / "metal/llk_api").is_dir()
    assert (root / "tt_metal/tt-llk" / facts.toolchain.llk_dir / "llk_lib").is_dir()
    if facts.toolchain.hw_defines_dir:
        assert (root / "tt_metal/hw/inc/internal/tt-1xx" / facts.toolchain.hw_defines_dir).is_dir()
    hw = host_toolchain.headers.runtime_hw
    assert hw is not None
    for elf in facts.processors:
        assert (hw / "toolchain" / facts.toolchain.runtime_dir / f"kernel_{elf}.ld").is_file()
    for obj in ("substitutes.o", "noc.o"):
        assert (hw / "lib" / facts.toolchain.runtime_dir / obj).is_file()


def test_fetched_tree_is_0_81_1_and_pins_the_sfpi_kgen_names(host_toolchain):
    tree = host_toolchain.headers
    text = (tree.tt_metal / "sfpi-version").read_text()
    assert f"sfpi_version='{toolchain_config()['sfpi']['pinned_version']}'" in text.replace('"', "'")
    assert tree.reference_kernel.is_file()
