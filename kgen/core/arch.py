"""Hardware facts from configs/arch/*.toml, as a frozen value the planner reads."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Mapping

from kgen.core.resources import config_table
from kgen.core.types import TILE_HW


@dataclass(frozen=True)
class ArchToolchain:
    """How TT-Metal's JIT builds kernels for one arch ([toolchain] of configs/arch/NAME.toml)."""

    arch_define: str                 # -DARCH_WORMHOLE / -DARCH_BLACKHOLE
    ckernels_dir: str                # folder names in the wheel's tt_metal/ and runtime/hw/ trees
    llk_dir: str
    hw_dir: str
    hw_defines_dir: str
    runtime_dir: str
    num_dram_banks: int              # device defines (the soc descriptor)
    num_l1_banks: int
    pcie_noc: tuple[int, int]
    sfpi_mcpu_compute: str           # SFPI -mcpu per kind of processor
    sfpi_mcpu_dm: str


@dataclass(frozen=True)
class ArchBehaviour:
    """Where the arch changes what kgen emits or models ([behaviour] of configs/arch/NAME.toml):
    code reads these facts, never the arch's name."""

    flush_mcast_before_flag: bool    # data multicast flushed before the flag multicast (mcast readers)
    fpu_renormalisation_quirk: bool  # Wormhole's FPU accumulation quirk (docs/reference/numerics.md §4 step 8)
    hifi4_fp32_dest_accuracy_bug: bool   # HiFi4 + fp32 dest worse than HiFi3 (tt-metal#38306)


@dataclass(frozen=True)
class ArchFacts:
    name: str
    short: str
    worker_grid: tuple[int, int]     # x (columns), y (rows)
    clock_mhz: int
    l1_bytes: int
    l1_unreserved_base: int
    usable_cb_bytes: int
    dst_rows: int
    dst_datums_per_row: int
    packer_l1_acc_formats: tuple[str, ...]
    tile_bytes: Mapping[str, int]
    dram_alignment: int
    l1_alignment: int
    noc_count: int
    noc_max_burst_bytes: int
    max_cbs: int
    toolchain: ArchToolchain                 # how the JIT builds for this arch ([toolchain])
    behaviour: ArchBehaviour                 # what the arch changes in kgen's output ([behaviour])
    processors: Mapping[str, Mapping[str, int]]   # per ELF name: text_bytes, local_bytes
    # per DRAM bank, in bank-id order: its preferred worker endpoint and TT's reader core for it
    # (NoC 0 x-y, [dram_banks])
    dram_bank_endpoints: tuple[tuple[int, int], ...] = ()
    dram_bank_workers: tuple[tuple[int, int], ...] = ()

    def dst_tiles(self, full_sync: bool, fp32_dest_acc: bool) -> int:
        """DST capacity in 32x32 tiles (TT-Metal get_dest_reg_count): the full register holds
        dst_rows x 16 datums; half-sync gives each of math and pack one half; fp32 halves again."""
        tiles = self.dst_rows * self.dst_datums_per_row // (TILE_HW * TILE_HW)
        if not full_sync:
            tiles //= 2
        if fp32_dest_acc:
            tiles //= 2
        return tiles


@cache
def load_arch(name: str) -> ArchFacts:
    raw = config_table(f"arch/{name}.toml")
    if raw["l1_bytes"] - raw["l1_unreserved_base"] != raw["usable_cb_bytes"]:
        raise ValueError(f"configs/arch/{name}.toml: usable_cb_bytes disagrees with l1_bytes - l1_unreserved_base")
    return ArchFacts(
        name=raw["name"], short=raw["short"], worker_grid=tuple(raw["worker_grid"]),
        clock_mhz=raw["clock_mhz"], l1_bytes=raw["l1_bytes"], l1_unreserved_base=raw["l1_unreserved_base"],
        usable_cb_bytes=raw["usable_cb_bytes"], dst_rows=raw["dst_rows"],
        dst_datums_per_row=raw["dst_datums_per_row"],
        packer_l1_acc_formats=tuple(raw["packer_l1_acc_formats"]),
        tile_bytes=MappingProxyType(dict(raw["tile_bytes"])), dram_alignment=raw["dram_alignment"],
        l1_alignment=raw["l1_alignment"], noc_count=raw["noc_count"],
        noc_max_burst_bytes=raw["noc_max_burst_bytes"],
        max_cbs=raw["max_cbs"],
        toolchain=ArchToolchain(**{**raw["toolchain"], "pcie_noc": tuple(raw["toolchain"]["pcie_noc"])}),
        behaviour=ArchBehaviour(**raw["behaviour"]),
        processors=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in raw["processors"].items()}),
        dram_bank_endpoints=tuple(tuple(c) for c in raw["dram_banks"]["endpoints"]),
        dram_bank_workers=tuple(tuple(c) for c in raw["dram_banks"]["workers"]),
    )
