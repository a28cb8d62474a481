"""kgen.device.runtime against a stand-in ttnn that checks names and types as ttnn 0.81.1 defines them."""

from __future__ import annotations

import json
import sys

import pytest

import fake_ttnn
from conftest import EXAMPLES, example
from kgen.core.manifest import ManifestError, cores_of, load_manifest
from kgen.device import runtime
from kgen.gen.build import build
from kgen.gen.spec import load

ADDRESSES = {"in0": 0x10000, "in1": 0x20000, "bias": 0x30000, "out": 0x40000}
BUFFERS = {"in0": "in0 buffer", "out": "out buffer"}      # stand-ins for sharded tensors' buffers


def noc(axis: str, logical: int) -> int:
    return logical + (1 if axis == "noc_x" else 2)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_manifest_maps_onto_program_descriptor(path, tmp_path):
    result = build(load(path), tmp_path)
    m = json.loads((result.path / "manifest.json").read_text())
    pd = runtime.program_descriptor(result.path, addresses=ADDRESSES, noc=noc, ttnn=fake_ttnn, buffers=BUFFERS)
    assert isinstance(pd, fake_ttnn.ProgramDescriptor)
    # a CB globally allocated on a shard gets that tensor's buffer (ttnn CBDescriptor.buffer)
    for cb, d in zip(m["cbs"], pd.cbs):
        assert d.buffer == (BUFFERS[cb["globally_allocated"]] if "globally_allocated" in cb else None)
    assert pd.custom_program_hash == m["custom_program_hash"]
    assert len(pd.kernels) == len(m["kernels"])
    for kd, k in zip(pd.kernels, m["kernels"]):
        assert kd.kernel_source == str(result.path / k["source"]) and kd.source_type.name == "FILE_PATH"
        assert kd.compile_time_args == k["compile_time_args"]
        assert kd.named_compile_time_args == list(k["named_compile_time_args"].items())
        assert kd.defines == [(n, v) for n, v in k["defines"].items()]
        if k["processor"] == "TRISC":
            cfg = kd.config
            assert isinstance(cfg, fake_ttnn.ComputeConfigDescriptor)
            assert cfg.math_fidelity.name == k["compute_config"]["math_fidelity"]
            assert cfg.fp32_dest_acc_en == k["compute_config"]["fp32_dest_acc_en"]
            assert cfg.dst_full_sync_en == k["compute_config"]["dst_full_sync_en"]
            assert cfg.math_approx_mode == k["compute_config"]["math_approx_mode"]
            # UnpackToDestFp32 on the CBs the manifest marks, every other CB index of the arch Default
            marked = {int(i) for i in k["compute_config"].get("unpack_to_dest_mode", {})}
            want = [] if not marked else [
                fake_ttnn.UnpackToDestMode.UnpackToDestFp32 if i in marked else fake_ttnn.UnpackToDestMode.Default
                for i in range({"wormhole_b0": 32, "blackhole": 64}[m["arch"]])]
            assert cfg.unpack_to_dest_mode == want
        else:
            assert kd.config.processor.name == k["processor"] and kd.config.noc.name == k["noc"]
            # runtime args resolved per core: logical coordinate, NoC coordinates, addresses
            assert len(kd.runtime_args) == len(k["runtime_args"])
            names = k["runtime_arg_names"]
            for entry in k["runtime_args"]:
                x, y = entry["core"]
                args = kd.runtime_args[x][y]
                assert args[:2] == [x, y]
                for name, raw, value in zip(names, entry["args"], args):
                    if isinstance(raw, dict):
                        (axis, logical), = raw.items()
                        assert value == noc(axis, logical), name
            assert kd.common_runtime_args == [ADDRESSES[v["buffer_address"]] for v in k["common_runtime_args"]]
    assert [c.total_size for c in pd.cbs] == [c["total_size"] for c in m["cbs"]]
    formats = {f.buffer_index: f for c in pd.cbs for f in c.format_descriptors}
    dataformat = {"Float16_b": 5, "Float32": 0, "Bfp8_b": 6, "Bfp4_b": 7}
    for c in m["cbs"]:
        for f in c["format_descriptors"]:
            assert formats[f["buffer_index"]].data_format_as_uint8 == dataformat[f["data_format"]]
            assert formats[f["buffer_index"]].page_size == f["page_size"]
    assert [(s.id, s.initial_value, s.core_type.name) for s in pd.semaphores] == [
        (s["id"], s["initial_value"], "WORKER") for s in m["semaphores"]]


def test_run_passes_io_tensors_in_manifest_order(tmp_path):
    result = build(load(example("l1acc_two_blocks_bias")), tmp_path)
    tensors = {name: fake_ttnn.FakeTensor(addr) for name, addr in ADDRESSES.items()}
    fake_ttnn.generic_op_calls.clear()
    out = runtime.run(result.path, fake_ttnn.FakeDevice(), tensors, ttnn=fake_ttnn)
    (io, pd), = fake_ttnn.generic_op_calls
    assert io == [tensors["in0"], tensors["in1"], tensors["bias"], tensors["out"]] and out is tensors["out"]
    sender = next(k for k in pd.kernels if k.kernel_source.endswith("in1_sender_writer.cpp"))
    # NoC coordinates come from the device (FakeDevice: logical + 1)
    assert sender.runtime_args[0][0][2:] == [1, 2, 1, 2]
    with pytest.raises(ManifestError, match="missing"):
        runtime.run(result.path, fake_ttnn.FakeDevice(), {"in0": tensors["in0"]}, ttnn=fake_ttnn)


def test_manifest_errors_are_clean(tmp_path):
    with pytest.raises(ManifestError, match="no manifest.json"):
        load_manifest(tmp_path)
    result = build(load(example("peak_small")), tmp_path / "b")
    path = result.path / "manifest.json"
    data = json.loads(path.read_text())
    data["format_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="format_version 99"):
        load_manifest(result.path)
    data["format_version"] = 1                   # before compute_config.l1_acc_enabled: rebuild
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="format_version 1"):
        load_manifest(result.path)
    data["format_version"] = 2
    data["kernels"][0]["defines"].pop("PACKER_L1_ACC")
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="PACKER_L1_ACC"):
        runtime.program_descriptor(result.path, addresses=ADDRESSES, noc=noc, ttnn=fake_ttnn)


def test_stand_in_is_strict_like_ttnn():
    crs = fake_ttnn.CoreRangeSet([fake_ttnn.CoreRange(fake_ttnn.CoreCoord(0, 0), fake_ttnn.CoreCoord(1, 1))])
    cfg = fake_ttnn.DataMovementConfigDescriptor()
    with pytest.raises(TypeError):
        fake_ttnn.KernelDescriptor("k.cpp", core_ranges=crs, defines={"A": "1"}, config=cfg)
    with pytest.raises(TypeError):
        fake_ttnn.KernelDescriptor("k.cpp", core_ranges=crs, compile_time_args=[-1], config=cfg)
    with pytest.raises(TypeError):
        fake_ttnn.KernelDescriptor("k.cpp", core_ranges=crs)                     # config is required
    with pytest.raises(TypeError):
        fake_ttnn.CBFormatDescriptor(0, "Float16_b", 2048)                       # a DataType, not a name
    sem = fake_ttnn.SemaphoreDescriptor(id=1, core_ranges=crs, initial_value=0)
    with pytest.raises(AttributeError):
        sem.id = 2
    assert fake_ttnn.NOC.NOC_0 is not fake_ttnn.NOC.RISCV_0_default


def test_kgen_does_not_import_ttnn(tmp_path):
    build(load(example("peak_small")), tmp_path)
    assert "ttnn" not in sys.modules


def test_cores_of_expands_inclusive_core_ranges_row_by_row():
    # CoreRange(start, end) includes both corners (tt_metal CoreRange); rows of y, then x within a row
    assert cores_of([{"start": [1, 0], "end": [2, 1]}, {"start": [0, 3], "end": [0, 3]}]) == \
        [(1, 0), (2, 0), (1, 1), (2, 1), (0, 3)]
