"""kgen/perf/ab.py: variants from flags, op counts against TT-Metal's lifecycle, the numerics against
published results (tt-metal #8449, #46101), ULPs against numpy, the device path against fake_ttnn."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fake_ttnn
from conftest import EXAMPLES, example
from kgen.core.errors import SpecError
from kgen.gen.build import build
from kgen.gen.plan import plan
from kgen.gen.spec import load, load_file, read_source
from kgen.perf.ab import (Row, candidates, compare, measure_on_device, parse_sweep, parse_vary, pcc,
                          ulp_distance)


def _compare(name: str, **kw):
    path = example(name)
    return compare(load_file(path), read_source(path), **kw)


def _row(c, variant: str, sweep=None) -> Row:
    return next(r for r in c.rows if r.variant == variant and r.sweep == sweep)


# ----------------------------------------------------------------------------------------------
# flags

def test_vary_builds_the_cross_product_through_the_spec_schema():
    vary = parse_vary(["compute.packer_l1_acc=false,true", "compute.math_fidelity=HiFi2,HiFi4"])
    cands = candidates(load_file(example("peak_bf16")), vary)
    assert [c.variant for c in cands] == [
        "packer_l1_acc=false,math_fidelity=HiFi2", "packer_l1_acc=false,math_fidelity=HiFi4",
        "packer_l1_acc=true,math_fidelity=HiFi2", "packer_l1_acc=true,math_fidelity=HiFi4"]
    assert dict(cands[1].overrides) == {"compute.packer_l1_acc": "false", "compute.math_fidelity": "HiFi4"}


def test_without_vary_the_candidates_are_the_base_and_the_spec_variants():
    assert [c.variant for c in candidates(load_file(example("peak_bf16")), ())] == ["base", "spill", "l1acc"]


@pytest.mark.parametrize("flag, words", [
    ("compute.packer_l1_ac=false,true", ["unknown key `compute.packer_l1_ac`", "compute.packer_l1_acc"]),
    ("compute.math_fidelity=HiFi2,HiFi5", ["variant `compute.math_fidelity=HiFi5`", "HiFi4"]),
    ("grid=8x8,0x8", ["variant `grid=0x8`", "positive"]),
    ("compute.packer_l1_acc", ["FIELD=V1,V2"]),
    ("compute.packer_l1_acc=true,", ["no empty value"]),
])
def test_bad_vary_names_the_field_or_the_variant(flag, words):
    with pytest.raises(SpecError) as exc:
        parse_vary([flag])
    text = exc.value.render()
    for w in words:
        assert w in text, text


@pytest.mark.parametrize("flag, words", [
    ("Q=1,2", ["not a dimension or a numeric field", "block.in0_block_w"]),
    ("K=1000", ["multiple of the 32-element tile", "992 or 1024"]),
    ("K=abc", ["positive whole number"]),
    ("block.in0_block_w=0", ["positive whole number"]),
])
def test_bad_sweep_is_an_error(flag, words):
    with pytest.raises(SpecError) as exc:
        parse_sweep([flag])
    for w in words:
        assert w in exc.value.render()
    assert parse_sweep(["K=1024,4096"]) == ("K", (1024, 4096))
    assert parse_sweep(["block.in0_block_w=2,4"]) == ("block.in0_block_w", (2, 4))


def test_an_illegal_variant_is_listed_with_its_rule_and_the_others_still_compare():
    # Kt = 128 tiles: in0_block_w = 3 does not divide it (TT-Metal's validation), 4 does
    c = _compare("peak_bf16", vary=parse_vary(["block.in0_block_w=3,4"]))
    bad, good = _row(c, "in0_block_w=3"), _row(c, "in0_block_w=4")
    assert bad.illegal and bad.rule and bad.rule != "spec" and bad.kernel_id is None
    assert good.illegal is None and good.speed.cycles > 0
    assert c.legal == (good,)


def test_every_variant_illegal_is_an_error_naming_each_variant_and_rule():
    with pytest.raises(SpecError) as exc:
        _compare("peak_bf16", vary=parse_vary(["block.in0_block_w=3,5"]))
    text = exc.value.render()
    assert "`in0_block_w=3`" in text and "`in0_block_w=5`" in text and "rule:" in text


# ----------------------------------------------------------------------------------------------
# op counts against TT-Metal's lifecycle (ttmetal-matmul.md §1.5, §1.6)

def _lifecycle(p):
    """Reload copies and partials packs per the rules of §1.6, from the plan's numbers alone: one
    reload per subblock per K-block after the first with spill/reload; with L1 accumulation and no
    bias one reload (block n-1 reloads the L1 sum), with a fused bias none."""
    subblocks = p.in0_num_subblocks * p.in1_num_subblocks
    per_core_blocks = p.batch_ct * p.num_blocks_h_dim * p.num_blocks_w_dim
    if not p.l1_acc_enabled:
        reloads = p.num_blocks - 1
    else:
        reloads = 0 if p.fuse_bias else 1
    return reloads * subblocks * per_core_blocks * p.num_cores


@pytest.mark.parametrize("name", ["peak_bf16", "peak_small", "bh_fp32_bias", "wh_bfp8_spill"])
def test_reload_counts_follow_the_lifecycle(name):
    c = _compare(name)
    sf = load_file(example(name))
    for r in c.legal:
        p = plan(load(example(name), None if r.variant == "base" else r.variant))
        assert p.policy == r.plan.policy
        assert r.op("reload copies") == _lifecycle(p), (name, r.variant)
        assert r.op("matmul_block") == p.mt * p.nt * p.kt // (p.out_subblock_h * p.out_subblock_w)
    assert sf


def test_peak_bf16_l1acc_beats_spill_with_the_reason():
    c = _compare("peak_bf16")
    base, spill = _row(c, "base"), _row(c, "spill")
    assert base.plan.policy == "packer_l1_acc" and spill.plan.policy == "spill_reload"
    assert base.speed.cycles < spill.speed.cycles
    p = plan(load(example("peak_bf16")))
    # spill reloads every K-block after the first; with the fused bias L1 accumulation never reloads
    subblocks = p.in0_num_subblocks * p.in1_num_subblocks * p.num_cores
    assert spill.op("reload copies") - base.op("reload copies") == (p.num_blocks - 1) * subblocks
    assert spill.op("reload tiles") == (p.num_blocks - 1) * subblocks * p.out_subblock_h * p.out_subblock_w
    assert base.op("matmul_block") == spill.op("matmul_block")
    assert spill.op("L1-acc switches") == 0 < base.op("L1-acc switches")
    assert spill.speed.reload_cycles > base.speed.reload_cycles
    (line,) = c.verdicts
    # base is the fastest: it is compared with the next fastest distinct kernel (l1acc is base's kernel)
    assert line.startswith(f"base is the fastest, {spill.speed.cycles / base.speed.cycles:.2f}x faster than the "
                           f"next, spill: ")
    assert "reload copies" in line and "reload cycles" in line
    (v,) = c.verdict_facts
    assert (v.base, v.fastest, v.winner, v.against) == ("base", "base", "base", "spill")
    assert v.speedup == spill.speed.cycles / base.speed.cycles and not v.same
    assert v.cause.startswith("packer_l1_acc vs spill_reload")          # in the sentence's order: fast first
    assert v.ulp_difference == 0                                        # the fastest is base


def test_peak_small_l1acc_reloads_once_per_subblock():
    c = _compare("peak_small")
    p = plan(load(example("peak_small")))
    assert not p.fuse_bias and p.l1_acc_enabled
    per_core = p.in0_num_subblocks * p.in1_num_subblocks * p.num_blocks_h_dim * p.num_blocks_w_dim
    assert _row(c, "base").op("reload copies") == per_core * p.num_cores
    assert _row(c, "spill").op("reload copies") == (p.num_blocks - 1) * per_core * p.num_cores


# ----------------------------------------------------------------------------------------------
# numerics against published results

def test_all_ones_k6144_with_a_bf16_dst_gives_8192():
    """tt-metal #8449 (tensix-numerics.md §11.1): all-ones inputs, K = 6144, fp32 accumulation off
    -> 8192; with fp32 Dst accumulation -> 6144."""
    c = _compare("peak_bf16", sweep=("K", (6144,)),
                 vary=parse_vary(["compute.packer_l1_acc=false", "compute.fp32_dest_acc=false,true",
                                  "block.out_subblock=2x2"]))     # 4 tiles: fits the fp32 Dst half
    bf16 = _row(c, "packer_l1_acc=false,fp32_dest_acc=false,out_subblock=2x2", 6144)
    fp32 = _row(c, "packer_l1_acc=false,fp32_dest_acc=true,out_subblock=2x2", 6144)
    assert bf16.numerics.k == 6144 and bf16.plan.policy == "spill_reload"
    assert bf16.numerics.of("all_ones").first_value == 8192.0
    assert fp32.numerics.of("all_ones").first_value == 6144.0
    assert "8192" in c.verdicts[0] and "6144" in c.verdicts[0]


def test_error_grows_with_k_without_fp32_dest_acc():
    """tt-metal #46101: with fp32_dest_acc_en = false the PCC falls as K grows; large-K positive sums
    stagnate in a bf16 Dst (the spill variant's sum stops at 4096 by K = 16384)."""
    assert not load(example("peak_bf16")).compute.fp32_dest_acc
    ks = (1024, 4096, 16384)
    c = _compare("peak_bf16", sweep=("K", ks))
    for variant in ("base", "spill"):
        pccs = [_row(c, variant, k).numerics.of("random").pcc for k in ks]
        assert pccs[0] > pccs[1] > pccs[2], (variant, pccs)
    # positive sums of similar size: the reference's spread is far below its magnitude, so PCC would
    # correlate the error, not the values; it is not given. The stagnation shows in ULPs and max rel.
    assert all(_row(c, v, k).numerics.of("positive").pcc is None for v in ("base", "spill") for k in ks)
    ulps = [_row(c, "spill", k).numerics.of("positive").max_ulp for k in ks]
    assert ulps[0] < ulps[1] < ulps[2], ulps
    rel = [_row(c, "spill", k).numerics.of("positive").max_rel for k in ks]
    assert rel[0] < rel[1] < rel[2], rel
    assert all(r.numerics.proxy and r.numerics.k == r.sweep for r in c.legal)


def test_the_proxy_is_k_faithful_and_says_so():
    c = _compare("peak_bf16")
    n = _row(c, "base").numerics
    assert n.proxy and n.k == 4096 and "K-faithful proxy" in n.note and "4096 x 4096" in n.note


def test_variants_with_the_same_numerics_give_the_same_bits_and_differences_count_them():
    c = _compare("peak_bf16")
    by = {(d.a, d.b): d for d in c.differences}
    assert by[("base", "l1acc")].differing == 0 and by[("base", "l1acc")].max_ulp == 0
    d = by[("base", "spill")]
    assert 0 < d.differing <= d.elements and sum(n for _, n in d.ulp_histogram) == d.elements


def test_ulp_distance_against_numpy_nextafter():
    x = np.array([1.0, 3.5, -2.0, 1e-3, 1000.0], np.float32)
    up = np.nextafter(x, np.float32(np.inf))
    assert ulp_distance(up, x.astype(np.float64), "Float32").tolist() == [1, 1, 1, 1, 1]
    # bfloat16: 8 significant bits, spacing 2^-7 at 1.0
    assert ulp_distance(np.float32([1.0 + 2 ** -7 * 3]), np.float64([1.0]), "Float16_b").tolist() == [3]
    # against the correctly rounded result: a float64 reference between two bf16 values counts 0 for
    # the nearer one
    assert ulp_distance(np.float32([1.0]), np.float64([1.0 + 2 ** -9]), "Float16_b").tolist() == [0]
    assert ulp_distance(np.float32([1.0 + 2 ** -7]), np.float64([1.0 + 2 ** -9]), "Float16_b").tolist() == [1]
    # a near-zero reference counts at the floor's ULP, not at its own
    assert ulp_distance(np.float32([2 ** -7]), np.float64([1e-9]), "Float16_b", floor=1.0).tolist() == [1]
    # crossing zero is measured by the difference, not by the tiny values in between
    assert ulp_distance(np.float32([-(2 ** -7)]), np.float64([2 ** -7]), "Float16_b", floor=1.0).tolist() == [2]


# ----------------------------------------------------------------------------------------------
# every example

@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_compares(path):
    c = compare(load_file(path), read_source(path))
    assert c.legal and len(c.verdicts) == 1
    for r in c.legal:
        assert r.kernel_id.startswith("mm_") and r.speed.microseconds > 0
        assert 0 < r.plan.l1_bytes <= r.plan.l1_usable and r.plan.l1_margin == r.plan.l1_usable - r.plan.l1_bytes
        assert r.plan.dst_headroom >= 0
        assert {e.distribution for e in r.numerics.errors} == {"random", "mixed", "all_ones", "positive"}
        # all-ones inputs: the exact sum is K (plus a zero bias); fp32 Dst or L1 accumulation keep it
        # exact at these K; relu keeps it
        if r.plan.fp32_dest_acc:
            assert r.numerics.of("all_ones").first_value == r.numerics.k


# ----------------------------------------------------------------------------------------------
# the device path, against the strict stand-in ttnn with a fake clock

class _Clock:
    def __init__(self, steps):
        self.t, self.steps = 0.0, iter(steps)

    def __call__(self) -> float:
        self.t += next(self.steps)
        return self.t


def test_measure_on_device_takes_the_median_after_warmup_and_the_pcc(tmp_path):
    folder = build(load(example("peak_small")), tmp_path).path
    tensors = {n: fake_ttnn.FakeTensor(0x1000 * (i + 1)) for i, n in enumerate(("in0", "in1", "out"))}
    fake_ttnn.generic_op_calls.clear()
    # each timed run: start, then end after 1, 5, 2 (us scale) -> median 2 us
    clock = _Clock([0.0, 1e-6, 0.0, 5e-6, 0.0, 2e-6])
    ref = np.arange(16, dtype=np.float64).reshape(4, 4)
    syncs = []
    m = measure_on_device(folder, tensors, device=fake_ttnn.FakeDevice(), ttnn=fake_ttnn, reference=ref,
                          read_output=lambda t: ref * 2 + 1, runs=3, warmup=2, clock=clock,
                          synchronize=lambda: syncs.append(1))
    assert m.timing == "host timing of generic_op to synchronize"     # fake_ttnn has no trace API
    assert len(fake_ttnn.generic_op_calls) == 5           # 2 warm-up + 3 timed runs, all through generic_op
    io, pd = fake_ttnn.generic_op_calls[-1]
    assert io[-1] is tensors["out"] and isinstance(pd, fake_ttnn.ProgramDescriptor)
    assert m.microseconds == pytest.approx(2.0) and m.runs == 3 and m.warmup == 2
    assert m.pcc == pytest.approx(1.0) and len(syncs) == 4
    assert pcc(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)


class _TracingTtnn:
    """fake_ttnn plus the trace API of ttnn 0.81.1 (ttnn/operations/trace.py: begin_trace_capture(device,
    cq_id) -> id, end_trace_capture(device, id, cq_id), execute_trace(device, id, cq_id, blocking),
    release_trace(device, id)), recording what runs."""

    def __init__(self):
        self.calls: list[str] = []
        self.capturing = False

    def __getattr__(self, name):
        return getattr(fake_ttnn, name)

    def generic_op(self, io, program):
        self.calls.append("generic_op (captured)" if self.capturing else "generic_op")
        return fake_ttnn.generic_op(io, program)

    def begin_trace_capture(self, device, *, cq_id):
        assert cq_id == 0 and not self.capturing
        self.capturing = True
        self.calls.append("begin")
        return 7

    def end_trace_capture(self, device, trace_id, *, cq_id):
        assert trace_id == 7 and cq_id == 0 and self.capturing
        self.capturing = False
        self.calls.append("end")

    def execute_trace(self, device, trace_id, *, cq_id, blocking):
        assert trace_id == 7 and cq_id == 0 and not blocking and not self.capturing
        self.calls.append("execute")

    def release_trace(self, device, trace_id):
        assert trace_id == 7
        self.calls.append("release")


def test_measure_on_device_replays_a_trace_when_ttnn_has_one(tmp_path):
    folder = build(load(example("peak_small")), tmp_path).path
    tensors = {n: fake_ttnn.FakeTensor(0x1000 * (i + 1)) for i, n in enumerate(("in0", "in1", "out"))}
    tt = _TracingTtnn()
    clock = _Clock([0.0, 3e-6, 0.0, 1e-6, 0.0, 4e-6, 0.0, 2e-6])
    ref = np.arange(8.0)
    m = measure_on_device(folder, tensors, device=fake_ttnn.FakeDevice(), ttnn=tt, reference=ref,
                          read_output=lambda t: ref, runs=4, warmup=1, clock=clock, synchronize=lambda: None)
    assert tt.calls == ["generic_op", "begin", "generic_op (captured)", "end", *["execute"] * 4, "release"]
    assert m.microseconds == pytest.approx(2.5) and "trace" in m.timing and m.pcc == pytest.approx(1.0)


class _ProfilingTtnn(_TracingTtnn):
    """_TracingTtnn plus ttnn.ReadDeviceProfiler(device), which writes the device-side log."""

    def __init__(self, log):
        super().__init__()
        self.log = log

    def ReadDeviceProfiler(self, device):  # noqa: N802 - ttnn's name
        self.calls.append("read profiler")
        self.log.write_text("device-side log")


def test_measure_on_device_reads_the_device_profiler_as_tts_gemm_benchmark_does(tmp_path):
    # test_benchmark.py: ReadDeviceProfiler after the warm-up and the log deleted, then the timed runs,
    # ReadDeviceProfiler again, and import_log_run_stats(setup with deviceInputLog = the log)'s
    # device_trisc1_kernel_duration "Average" in cycles, at deviceInfo "freq" MHz.
    from kgen.perf.ab import DeviceProfiler

    folder = build(load(example("peak_small")), tmp_path).path
    tensors = {n: fake_ttnn.FakeTensor(0x1000 * (i + 1)) for i, n in enumerate(("in0", "in1", "out"))}
    log = tmp_path / "profile_log_device.csv"
    tt = _ProfilingTtnn(log)
    seen = []

    class Setup:
        deviceInputLog = None

    def stats(setup):
        seen.append((setup.deviceInputLog, log.exists()))
        return {"deviceInfo": {"freq": 1350},
                "devices": {0: {"cores": {"DEVICE": {"analysis": {"device_trisc1_kernel_duration": {
                    "stats": {"Average": 27000.0}}}}}}}}

    profiler = DeviceProfiler(log, Setup, stats)
    m = measure_on_device(folder, tensors, device=fake_ttnn.FakeDevice(), ttnn=tt, reference=np.arange(4.0),
                          read_output=lambda t: np.arange(4.0), runs=3, warmup=2, clock=_Clock([0.0, 1.0] * 3),
                          synchronize=lambda: None, profiler=profiler)
    assert tt.calls[:3] == ["generic_op", "generic_op", "read profiler"]   # warm-up, then flushed
    assert tt.calls[-2:] == ["release", "read profiler"] and tt.calls.count("execute") == 3
    assert seen == [(log, True)]                         # the log of the timed runs only
    assert m.microseconds == pytest.approx(27000 / 1350) and m.timing.startswith("device profiler")


def test_the_device_profiler_is_on_only_as_tt_metal_turns_it_on(monkeypatch):
    import sys
    import types

    from kgen.perf.ab import device_profiler

    assert device_profiler({}) is None                   # TT_METAL_DEVICE_PROFILER unset: host timing
    monkeypatch.setitem(sys.modules, "tracy", None)      # set, but TT-Metal's tools are not installed
    assert device_profiler({"TT_METAL_DEVICE_PROFILER": "1"}) is None
    tracy = types.ModuleType("tracy")
    tracy.__path__ = []
    parts = {"tracy.device_post_proc_config": {"default_setup": object},
             "tracy.common": {"PROFILER_LOGS_DIR": "/logs", "PROFILER_DEVICE_SIDE_LOG": "device.csv"},
             "tracy.process_device_log": {"import_log_run_stats": lambda setup: {}}}
    monkeypatch.setitem(sys.modules, "tracy", tracy)
    for name, attrs in parts.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
        setattr(tracy, name.split(".")[1], module)
    p = device_profiler({"TT_METAL_DEVICE_PROFILER": "1"})
    assert p is not None and str(p.log_path) == "/logs/device.csv"


# ----------------------------------------------------------------------------------------------
# the verdict, one error scale, the same kernel

def test_the_factorial_verdict_gives_the_policy_effect_at_each_fidelity():
    """Two fields varied: the policy's effect is its own ratio of predicted times with the fidelity
    held fixed (from the rows' predictions), not the fastest against the slowest overall."""
    c = _compare("peak_bf16", vary=parse_vary(["compute.packer_l1_acc=false,true",
                                               "compute.math_fidelity=HiFi2,HiFi4"]))
    (v,) = c.verdict_facts
    cycles = {tuple(v for _, v in r.overrides): r.speed.cycles for r in c.legal}
    policy = {dict(e.held)["compute.math_fidelity"]: e for e in v.effects if e.field == "compute.packer_l1_acc"}
    assert set(policy) == {"HiFi2", "HiFi4"}
    for fid, e in policy.items():
        want = cycles[("false", fid)] / cycles[("true", fid)]
        assert (e.faster, e.slower) == ("true", "false") and e.speedup == pytest.approx(want)
        assert f"packer_l1_acc=true is {want:.2f}x faster than packer_l1_acc=false at math_fidelity={fid}" in v.sentence
    fidelity = [e for e in v.effects if e.field == "compute.math_fidelity"]
    assert len(fidelity) == 2 and all(e.faster == "HiFi2" for e in fidelity)
    # the overall answer is against base, the spec as written (l1acc preset, HiFi4), not the slowest
    fastest = min(c.legal, key=lambda r: r.speed.cycles)
    assert c.base == v.base == "packer_l1_acc=true,math_fidelity=HiFi4"
    assert (v.winner, v.against) == (fastest.variant, c.base)
    assert v.speedup == pytest.approx(cycles[("true", "HiFi4")] / fastest.speed.cycles)


def test_within_the_models_resolution_is_the_same():
    from kgen.perf.ab import RESOLUTION, verdict

    c = _compare("peak_bf16")
    base = _row(c, "base")
    from dataclasses import replace
    close = replace(base, variant="close", kernel_id="mm_close",
                    speed=replace(base.speed, cycles=base.speed.cycles * (1 + RESOLUTION / 2)))
    v = verdict([base, close])
    assert v.same and v.winner is None
    assert v.headline.startswith("base and the next fastest, close, are the same within the model's resolution (1 %)")
    assert "faster" not in v.sentence.split(";")[0]


def test_same_kernel_is_said_and_not_run_twice():
    calls = []

    def fake_emulate(artifacts, p):
        from kgen.perf.ab import Emulated
        calls.append(artifacts.rendered.kernel_id)
        return Emulated("fast", "ok", True, False, 0, 0.0, 1.0, 0.0)

    lines = []
    c = _compare("peak_bf16", emulate=fake_emulate, numerics="fast", log=lines.append)
    base, l1acc = _row(c, "base"), _row(c, "l1acc")
    assert base.kernel_id == l1acc.kernel_id and l1acc.same_as == "base" and base.same_as is None
    assert sorted(calls) == sorted({r.kernel_id for r in c.legal}) and len(calls) == 2
    assert l1acc.emulated == base.emulated and l1acc.speed == base.speed
    assert any(line.startswith("emulate base: started") for line in lines)
    assert any(line.startswith("emulate spill: ok") for line in lines) and not any("l1acc" in x for x in lines)


def test_exact_emulation_of_a_big_spec_estimates_and_suggests_fast():
    from kgen.perf.ab import Emulated, SUGGEST_FAST_SECONDS, emulation_estimate

    lines = []
    c = _compare("peak_bf16", emulate=lambda a, p: Emulated("exact", "ok", True, True, 0, 0.0, 1.0, 0.0),
                 log=lines.append)
    p = plan(load(example("peak_bf16")))
    assert emulation_estimate(p, "exact") > SUGGEST_FAST_SECONDS
    assert emulation_estimate(p, "fast") < emulation_estimate(p, "exact") / 10
    assert lines[0].startswith("emulating 2 kernel(s) with exact numerics: about")
    assert "--numerics fast would take about" in lines[1]
    assert c.legal


def test_one_error_scale_differences_never_exceed_the_variants_own_errors():
    c = _compare("peak_bf16", sweep=("K", (1024, 16384)))
    for d in c.differences:
        a, b = _row(c, d.a, d.sweep), _row(c, d.b, d.sweep)
        assert d.max_ulp <= a.numerics.of("random").max_ulp + b.numerics.of("random").max_ulp


def test_pcc_and_max_rel_only_where_defined():
    from kgen.perf.ab import REL_FLOOR, defined_pcc, relative_error

    c = _compare("peak_bf16")
    ones = _row(c, "base").numerics.of("all_ones")
    assert ones.pcc is None                                    # a constant output: undefined
    assert defined_pcc(np.ones(8), np.ones(8)) is None
    ref = np.array([100.0, -50.0, 0.5, 1e-6])
    out = ref + np.array([1.0, 1.0, 0.5, 1e-3])
    rel, floor, n = relative_error(out, ref)
    assert floor == REL_FLOOR * 100.0 and n == 2 and rel == pytest.approx(1 / 50)
    assert relative_error(np.zeros(3), np.zeros(3))[0] is None


# ----------------------------------------------------------------------------------------------
# the numerics verdict: the float64 oracle (kgen/proof/oracle.py) on the proxy

ACTIVATION_SPEC = """
matmul act_small {
    arch     = wormhole_b0
    shape    = 64 x 64 x 256
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid     = 2 x 2
    dataflow = mcast_2d
    block { in0_block_w = 2  out_subblock = 1 x 1  per_core = 1 x 1 }
    fuse { bias = true  activation = gelu }
    variants {
        selu { fuse.activation = selu }
        plain { fuse.bias = false  fuse.activation = none }
    }
}
"""


def test_the_numerics_verdict_is_the_oracles_check_of_the_golden_model_on_the_proxy():
    """Each variant's verdict is kgen.proof.oracle.check of its golden-model output on the proxy,
    with the plain matmul (zero bias row, no activation) through the same flow; the ULP figures are
    taken against the oracle's float64 reference, not kgen's activation table."""
    from kgen.core.types import TILE_HW
    from kgen.gen.spec import parse_text, resolve
    from kgen.perf.ab import PROXY_LAYOUT, proxy_inputs
    from kgen.proof.golden import golden_from_plan
    from kgen.proof.oracle import Datapath, check, fused

    sf = parse_text(ACTIVATION_SPEC, "act_small.kspec")
    c = compare(sf, ACTIVATION_SPEC)
    for variant in ("base", "selu", "plain"):
        p = plan(resolve(sf, None if variant == "base" else variant))
        in0, in1, bias = proxy_inputs(p.spec.k, 0, (p.in0_format, p.in1_format, p.bias_format or p.out_format),
                                      padded_k=p.kt * TILE_HW)
        row_bias = bias if p.fuse_bias else None
        values = golden_from_plan(p, in0, in1, row_bias, mode="exact").values
        plain = golden_from_plan(p, in0, in1, mode="exact", plain=True).values
        product = in0.astype(np.float64) @ in1.astype(np.float64)
        n = _row(c, variant).numerics
        assert n.float64 == check(values, product, plain, row_bias, Datapath.of_plan(p)), variant
        assert n.float64.within, n.float64.line()
        ref = fused(p.spec.activation)(product + (bias.astype(np.float64)[None, :] if p.fuse_bias else 0.0))
        rows, cols = PROXY_LAYOUT["random"]
        assert n.of("random").max_abs == np.abs(values[rows, cols] - ref[rows, cols]).max(), variant
        assert n.float64_at.split(" [")[0] in ("random", "mixed", "all_ones", "positive") or " in0 x " in n.float64_at
    assert _row(c, "base").numerics.float64.what == "matmul + bias + gelu"
    assert _row(c, "plain").numerics.float64.what == "matmul"


def test_a_doctored_activation_constant_is_beyond_the_bound_in_that_stage(monkeypatch):
    """kgen's table doubles SELU's scale (the kernels and the golden model both read it): the golden
    model agrees with itself, the float64 oracle does not, and names the activation."""
    import dataclasses

    from kgen.gen import activations as A
    from kgen.gen.spec import parse_text

    row = A.ROWS["selu"]

    def doubled_scale(ps, encode=row.encode):
        p0, p1, p2 = encode(ps)
        return A.f32_bits(2 * A.bits_f32(p0)), p1, p2

    monkeypatch.setitem(A.ROWS, "selu", dataclasses.replace(row, encode=doubled_scale))
    c = compare(parse_text(ACTIVATION_SPEC, "act_small.kspec"), ACTIVATION_SPEC)
    bad = _row(c, "selu").numerics.float64
    assert not bad.within and bad.culprit == "selu" and bad.worst_ratio > 2
    assert abs(bad.worst_out - bad.worst_ref) > bad.worst_bound
    assert _row(c, "base").numerics.float64.within and _row(c, "plain").numerics.float64.within


# ----------------------------------------------------------------------------------------------
# the verdict against base, the spec as written (issue: ab crowned a winner inside its resolution)

def test_a_variant_within_resolution_of_base_is_not_crowned_and_its_error_cost_is_said():
    """peak_small: spill is 30.4 against base's 30.6 us (under 1 %), with 2.8 times base's max error;
    fp32 is the slowest. The verdict compares with base, not with the slowest, and crowns nothing."""
    from kgen.perf.abverdict import RESOLUTION

    c = _compare("peak_small")
    base, spill = _row(c, "base"), _row(c, "spill")
    assert 1.0 < base.speed.cycles / spill.speed.cycles < 1.0 + RESOLUTION       # the case of the issue
    (v,) = c.verdict_facts
    assert (v.base, v.fastest, v.against, v.winner, v.same) == ("base", "spill", "base", None, True)
    ub, us = base.numerics.of("random").max_ulp, spill.numerics.of("random").max_ulp
    assert us > ub
    assert v.headline == (f"spill and base are the same within the model's resolution (1 %): "
                          f"{spill.speed.microseconds:,.1f} vs {base.speed.microseconds:,.1f} us predicted, "
                          f"at {us / ub:.1f}x base's max error ({us} vs {ub} ULP)")
    assert "fp32" not in v.headline and "slowest" not in v.sentence
    assert {a.variant: a.same for a in v.against_base} == {"base": True, "spill": True, "fp32": False}
    assert (v.fastest_max_ulp, v.base_max_ulp) == (us, ub)


def test_a_variant_beyond_resolution_is_crowned_against_base():
    c = _compare("peak_small", vary=parse_vary(["grid=2x2,4x4"]))
    # `2x2` is the spec's `2 x 2`: that row is the base, none is added
    assert [r.variant for r in c.rows] == ["grid=2x2", "grid=4x4"] and c.base == "grid=2x2"
    assert c.base_note == "base: grid=2x2, the spec as written"
    base, big = _row(c, "grid=2x2"), _row(c, "grid=4x4")
    (v,) = c.verdict_facts
    ratio = base.speed.cycles / big.speed.cycles
    assert (v.winner, v.against, v.same) == ("grid=4x4", "grid=2x2", False) and v.speedup == ratio
    assert v.headline.startswith(f"grid=4x4 is {ratio:.2f}x faster than base (grid=2x2): ")
    assert "max error" not in v.headline                  # no cost: the same max error


def test_with_vary_the_base_is_the_spec_as_written_wherever_it_falls():
    # the spec's own value is the second level: that row is the base, not the first combination
    c = _compare("peak_small", vary=parse_vary(["compute.packer_l1_acc=false,true"]))
    assert [r.variant for r in c.rows] == ["packer_l1_acc=false", "packer_l1_acc=true"]
    assert c.base == c.verdict_facts[0].base == "packer_l1_acc=true"
    # the spec's HiFi2 is not among the levels: the spec as written is added after the cross product
    # (whose rows keep their places), as `base`, with its own value in the field's column, and the
    # verdict and the differences are against it
    c = _compare("peak_small", vary=parse_vary(["compute.math_fidelity=LoFi,HiFi4"]))
    assert [(r.variant, r.overrides) for r in c.rows] == [
        ("math_fidelity=LoFi", (("compute.math_fidelity", "LoFi"),)),
        ("math_fidelity=HiFi4", (("compute.math_fidelity", "HiFi4"),)), ("base", (("compute.math_fidelity", "HiFi2"),))]
    assert c.base == "base" and _row(c, "base").plan.math_fidelity == "HiFi2"
    assert "spec as written (math_fidelity=HiFi2), not among the --vary combinations" in c.base_note
    (v,) = c.verdict_facts
    lofi = _row(c, "math_fidelity=LoFi")
    assert v.winner == "math_fidelity=LoFi" and v.headline.startswith(
        f"math_fidelity=LoFi is {_row(c, 'base').speed.cycles / lofi.speed.cycles:.2f}x faster than base: ")
    assert "base's max error" in v.headline                # LoFi is faster and less accurate: the cost is said
    assert {d.a for d in c.differences} == {"base"} and len(c.differences) == 2


def test_the_effects_group_the_added_base_with_the_others_held_fixed():
    """packer_l1_acc=false only, at two fidelities: the spec as written (true, HiFi2) is added; the
    policy's effect at HiFi2 is then base against packer_l1_acc=false, each field's own ratio."""
    c = _compare("peak_small", vary=parse_vary(["compute.packer_l1_acc=false", "compute.math_fidelity=HiFi2,HiFi4"]))
    assert c.base == "base" and dict(_row(c, "base").overrides) == {"compute.packer_l1_acc": "true",
                                                                    "compute.math_fidelity": "HiFi2"}
    (v,) = c.verdict_facts
    policy = [e for e in v.effects if e.field == "compute.packer_l1_acc"]
    assert [dict(e.held) for e in policy] == [{"compute.math_fidelity": "HiFi2"}]
    fidelity = [e for e in v.effects if e.field == "compute.math_fidelity"]
    assert [dict(e.held) for e in fidelity] == [{"compute.packer_l1_acc": "false"}]


def test_every_varied_combination_illegal_is_still_an_error_with_the_spec_as_written_legal():
    with pytest.raises(SpecError) as exc:
        _compare("peak_small", vary=parse_vary(["block.in0_block_w=3,5"]))
    assert "`base`" not in exc.value.render() and "`in0_block_w=3`" in exc.value.render()


def test_the_why_line_names_whose_count_and_cycles_with_a_sign_in_words():
    """Each difference is said of the faster variant against the other, with `more`/`fewer`: no bare
    `-5,214 reload cycles on the critical core`, no `busy +8,818 cycles`."""
    from dataclasses import replace

    from kgen.perf.abverdict import verdict

    c = _compare("peak_small")
    base, spill, fp32 = _row(c, "base"), _row(c, "spill"), _row(c, "fp32")
    # spill against fp32 (the pair of the issue), spill made faster than base beyond the resolution
    fast = replace(spill, speed=replace(spill.speed, cycles=base.speed.cycles / 1.2))
    v = verdict([base, fast, fp32])
    copies = spill.op("reload copies") - base.op("reload copies")
    cycles = spill.speed.reload_cycles - base.speed.reload_cycles
    assert copies > 0 and cycles > 0
    assert v.cause.startswith(f"spill_reload vs packer_l1_acc; {copies:,} more partials reload copies in spill than "
                              f"in base; {cycles:,.0f} more reload cycles on spill's critical core than on base's; ")
    assert re.search(r"; TRISC\d \w+ busy [\d,]+ (more|fewer) cycles on spill's critical core", v.cause), v.cause
    assert not re.search(r"[-+]\d", v.cause) and "on the critical core" not in v.cause
    # with --vary the base is named `base` in the why line too
    c = _compare("peak_small", vary=parse_vary(["grid=2x2,4x4"]))
    assert re.search(r"more partials reload copies in grid=4x4 than in base; [\d,]+ fewer reload cycles on "
                     r"grid=4x4's critical core than on base's", c.verdict_facts[0].cause), c.verdict_facts[0].cause
