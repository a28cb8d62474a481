// kgen host emulator: the API entry points the kernels' compute and dataflow calls land on
// (kemu/runtime.h), each charging its modelled cycles and checking its hazards.

#include "runtime_internal.h"

namespace kemu {

using namespace detail;

uint32_t rt_arg(uint32_t index, Where at) {
    Proc *p = cur(at);
    if (index >= p->args.size())
        fatal("runtime arg", at, fmt_str("get_arg_val(%u): kernel %s on core (%d,%d) has %zu runtime args", index,
                                         p->kernel.c_str(), p->core->x, p->core->y, p->args.size()));
    return p->args[index];
}
// get_arg_addr: the firmware keeps a processor's runtime args in L1 and kernels may read them through a
// pointer (TT-Metal's block-sharded in0 reader reads its NoC coordinate lists so). Each processor's
// args are copied to a slot of the core's L1 below the semaphores and CBs, where nothing else lives.
constexpr uint32_t RT_ARGS_L1_BASE = 16384, RT_ARGS_SLOT = 4096;
uint32_t rt_arg_addr(uint32_t index, Where at) {
    Proc *p = cur(at);
    if (index > p->args.size())
        fatal("runtime arg", at, fmt_str("get_arg_addr(%u): kernel %s on core (%d,%d) has %zu runtime args", index,
                                         p->kernel.c_str(), p->core->x, p->core->y, p->args.size()));
    if (p->args.size() * 4 > RT_ARGS_SLOT) fatal("runtime arg", at, "get_arg_addr: more runtime args than the L1 slot holds");
    uint32_t off = RT_ARGS_L1_BASE + uint32_t(p->kind) * RT_ARGS_SLOT;
    std::memcpy(p->core->l1 + off, p->args.data(), p->args.size() * 4);
    return p->core->l1_base + off + 4 * index;
}
uint32_t common_rt_arg(uint32_t index, Where at) {
    Proc *p = cur(at);
    if (index >= p->common_args.size())
        fatal("runtime arg", at, fmt_str("get_common_arg_val(%u): kernel %s has %zu common runtime args", index,
                                         p->kernel.c_str(), p->common_args.size()));
    return p->common_args[index];
}
// get_common_arg_addr: the common args in a slot of their own per processor, after the runtime args' slots.
uint32_t common_rt_arg_addr(uint32_t index, Where at) {
    Proc *p = cur(at);
    if (index > p->common_args.size())
        fatal("runtime arg", at, fmt_str("get_common_arg_addr(%u): kernel %s has %zu common runtime args", index,
                                         p->kernel.c_str(), p->common_args.size()));
    if (p->common_args.size() * 4 > RT_ARGS_SLOT)
        fatal("runtime arg", at, "get_common_arg_addr: more common runtime args than the L1 slot holds");
    uint32_t off = RT_ARGS_L1_BASE + uint32_t(PACK + 1 + p->kind) * RT_ARGS_SLOT;
    std::memcpy(p->core->l1 + off, p->common_args.data(), p->common_args.size() * 4);
    return p->core->l1_base + off + 4 * index;
}
uint32_t my_logical_x() { return g_cur->core->x; }
uint32_t my_logical_y() { return g_cur->core->y; }
uint32_t my_noc_x() { return g_cur->core->noc_x; }
uint32_t my_noc_y() { return g_cur->core->noc_y; }

void cb_wait_front(uint32_t cb, uint32_t n, Where at) {
    Proc *p = cur(at);
    if (p->kind == MATH || p->kind == PACK) return;  // TT-Metal: UNPACK((llk_wait_tiles))
    CB &b = cb_checked(p, cb, at, "cb_wait_front");
    if (n > b.num_pages)
        fatal("wait beyond capacity", at, fmt_str("cb_wait_front(c_%u, %u): the CB has only %u pages; this never completes",
                                                  cb, n, b.num_pages));
    p->wait_cb = cb;
    p->wait_n = n;
    block_on(p, Wait::CB_FRONT, at);
    p->waited[cb] = std::max(p->waited[cb], n);
    work("cb_wait_front", "cb_op", at, 1, cb, n);
}

void cb_pop_front(uint32_t cb, uint32_t n, Where at) {
    Proc *p = cur(at);
    if (p->kind == MATH || p->kind == PACK) return;
    CB &b = cb_checked(p, cb, at, "cb_pop_front");
    if (pop_own_pages(p, cb, n) > p->waited[cb])
        hazard("pop beyond waited", at,
               fmt_str("cb_pop_front(c_%u, %u) on core (%d,%d): only %u page(s) were waited for with cb_wait_front", cb, n,
                       p->core->x, p->core->y, p->waited[cb]));
    if (n > b.received - b.acked)
        fatal("pop beyond pushed", at, fmt_str("cb_pop_front(c_%u, %u): only %llu page(s) are pushed", cb, n,
                                               (unsigned long long)(b.received - b.acked)));
    p->waited[cb] = p->waited[cb] > n ? p->waited[cb] - n : 0;
    b.acked += n;
    LocalCBInterface &l = p->local[cb];
    advance(l, l.fifo_rd_ptr, n);
    l.tiles_acked += n;
    work("cb_pop_front", "cb_op", at, 1, cb, n);
    b.popped_at.emplace_back(b.acked, p->clock);
    while (!b.pushed_at.empty() && b.pushed_at.front().first <= b.acked) b.pushed_at.pop_front();
    maybe_yield(at);
}

void cb_reserve_back(uint32_t cb, uint32_t n, Where at) {
    Proc *p = cur(at);
    if (p->kind == MATH || p->kind == UNPACK) return;  // TT-Metal: PACK((llk_wait_for_free_tiles))
    CB &b = cb_checked(p, cb, at, "cb_reserve_back");
    if (n > b.num_pages)
        fatal("reserve beyond capacity", at,
              fmt_str("cb_reserve_back(c_%u, %u) on core (%d,%d): the CB has only %u pages of %u bytes; this never "
                      "completes on the device",
                      cb, n, p->core->x, p->core->y, b.num_pages, b.page_size));
    p->wait_cb = cb;
    p->wait_n = n;
    block_on(p, Wait::CB_BACK, at);
    p->reserved[cb] = std::max(p->reserved[cb], n);
    work("cb_reserve_back", "cb_op", at, 1, cb, n);
}

void cb_push_back(uint32_t cb, uint32_t n, Where at) {
    Proc *p = cur(at);
    if (p->kind == MATH || p->kind == UNPACK) return;
    CB &b = cb_checked(p, cb, at, "cb_push_back");
    if (n > p->reserved[cb])
        hazard("push beyond reserved", at,
               fmt_str("cb_push_back(c_%u, %u) on core (%d,%d): only %u page(s) were reserved with cb_reserve_back", cb,
                       n, p->core->x, p->core->y, p->reserved[cb]));
    if (b.received - b.acked + n > b.num_pages)
        fatal("push beyond capacity", at, fmt_str("cb_push_back(c_%u, %u): the CB would hold %llu of %u pages", cb, n,
                                                  (unsigned long long)(b.received - b.acked + n), b.num_pages));
    p->reserved[cb] = p->reserved[cb] > n ? p->reserved[cb] - n : 0;
    p->own_pushed[cb] += n;
    for (uint64_t i = b.received; i < b.received + n; ++i) b.page_state[i % b.num_pages] = 0;
    b.received += n;
    LocalCBInterface &l = p->local[cb];
    advance(l, l.fifo_wr_ptr, n);
    l.fifo_wr_tile_ptr = 0;
    l.tiles_received += n;
    work("cb_push_back", "cb_op", at, 1, cb, n);
    b.pushed_at.emplace_back(b.received, p->clock);
    while (!b.popped_at.empty() && b.popped_at.front().first + b.num_pages <= b.received) b.popped_at.pop_front();
    maybe_yield(at);
}

bool cb_pages_available_at_front(uint32_t cb, uint32_t n, Where at) {
    Proc *p = cur(at);
    cb_checked(p, cb, at, "cb_pages_available_at_front");
    record(p, "cb_pages_available_at_front", at, cb, n);
    return cb_front_ready(p->core, cb, n);
}
bool cb_pages_reservable_at_back(uint32_t cb, uint32_t n, Where at) {
    Proc *p = cur(at);
    cb_checked(p, cb, at, "cb_pages_reservable_at_back");
    record(p, "cb_pages_reservable_at_back", at, cb, n);
    return cb_back_ready(p->core, cb, n);
}
uint32_t cb_read_ptr(uint32_t cb, Where at) {
    Proc *p = cur(at);
    cb_checked(p, cb, at, "get_read_ptr");
    p->last_ptr_cb = static_cast<int>(cb);
    return p->local[cb].fifo_rd_ptr;
}
uint32_t cb_write_ptr(uint32_t cb, Where at) {
    Proc *p = cur(at);
    cb_checked(p, cb, at, "get_write_ptr");
    p->last_ptr_cb = static_cast<int>(cb);
    return p->local[cb].fifo_wr_ptr;
}
LocalCBInterface &local_cb(uint32_t cb, Where at) {
    Proc *p = cur(at);
    cb_checked(p, cb, at, "get_local_cb_interface");
    return p->local[cb];
}

// ---- semaphores and NoC --------------------------------------------------------------------

uint32_t semaphore_addr(uint32_t id, Where at) {
    Proc *p = cur(at);
    if (id >= p->core->sem_offsets.size())
        fatal("unknown semaphore", at, fmt_str("get_semaphore(%u): the program creates %zu semaphore(s) on core (%d,%d)",
                                               id, p->core->sem_offsets.size(), p->core->x, p->core->y));
    return p->core->l1_base + p->core->sem_offsets[id];
}

void sem_wait(volatile uint32_t *sem, uint32_t value, bool at_least, Where at) {
    Proc *p = cur(at);
    local_l1(p, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem)), 4, at, "noc_semaphore_wait");
    p->wait_sem = sem;
    p->wait_value = value;
    p->wait_at_least = at_least;
    block_on(p, Wait::SEM, at);
    work(at_least ? "noc_semaphore_wait_min" : "noc_semaphore_wait", "cb_op", at, 1, value);
}

void sem_set(volatile uint32_t *sem, uint32_t value, Where at) {
    Proc *p = cur(at);
    local_l1(p, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem)), 4, at, "noc_semaphore_set");
    *sem = value;
    work("noc_semaphore_set", "cb_op", at, 1, value);
    note_landed(p->core, l1_offset(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem))), p->clock);
    maybe_yield(at);
}

void sem_inc(uint64_t noc_addr, uint32_t incr, Where at) {
    Proc *p = cur(at);
    NocTarget t = resolve_noc(noc_addr, 4, at, "noc_semaphore_inc");
    if (!t.core) fatal("bad NoC address", at, "noc_semaphore_inc: target is DRAM, not a core's L1");
    uint32_t v;
    std::memcpy(&v, t.ptr, 4);
    v += incr;
    std::memcpy(t.ptr, &v, 4);
    work("noc_semaphore_inc", "cb_op", at, 1, incr);
    note_landed(t.core, static_cast<uint32_t>(t.ptr - t.core->l1), p->clock + static_cast<uint64_t>(cost("sem_latency")));
    maybe_yield(at);
}

void sem_set_mcast(uint32_t src_l1, uint64_t mcast_addr, uint32_t num_dests, bool loopback, Where at) {
    Proc *p = cur(at);
    uint8_t *src = local_l1(p, src_l1, 4, at, "noc_semaphore_set_multicast");
    std::vector<Core *> dests = mcast_targets(mcast_addr, loopback, at, "noc_semaphore_set_multicast");
    if (dests.size() != num_dests)
        hazard("multicast destinations", at,
               fmt_str("noc_semaphore_set_multicast: the rectangle holds %zu destination core(s) but num_dests = %u",
                       dests.size(), num_dests));
    uint32_t off = l1_offset(static_cast<uint32_t>(mcast_addr));
    work_at("noc_semaphore_set_multicast", at, multicast_issue(num_dests), num_dests);
    // the flag follows the data on the same multicast path: it lands a multicast's latency later, less
    // what the sender already spent on the measured transaction (kgen.core.costs.multicast_landing)
    double landing = cost("mcast_landing." + std::to_string(num_dests));
    uint64_t lands = p->clock + static_cast<uint64_t>(std::llround(landing));
    for (Core *c : dests) {
        // a loopback copy of the sender's own word onto itself changes nothing there: a wait on that
        // word holds from the local set on, not from the copy's landing
        if (c->l1 + off == src) continue;
        std::memcpy(c->l1 + off, src, 4);
        note_landed(c, off, lands);
    }
    maybe_yield(at);
}

uint64_t noc_xy_addr(uint32_t x, uint32_t y, uint64_t addr) { return enc_xy(x, y, static_cast<uint32_t>(addr)); }
uint64_t noc_mcast_addr(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint64_t addr) {
    return enc_rect(x0, y0, x1, y1, static_cast<uint32_t>(addr));
}
uint64_t noc_local_addr(uint64_t addr) {
    return enc_xy(g_cur->core->noc_x, g_cur->core->noc_y, static_cast<uint32_t>(addr));
}

uint64_t interleaved_page_addr(uint32_t base, uint32_t page_id, uint32_t page_size, uint32_t offset, bool is_dram,
                               Where at) {
    uint32_t aligned = (page_size + M.dram_align - 1) / M.dram_align * M.dram_align;
    uint32_t bank = page_id % M.num_banks;
    uint64_t addr = uint64_t(base) + uint64_t(page_id / M.num_banks) * aligned + offset;
    if (addr + 1 > M.bank_bytes)
        fatal("bad address", at, fmt_str("page %u of the tensor at 0x%x (page size %u) lies beyond DRAM bank %u's "
                                         "allocated bytes: is the page id in range?",
                                         page_id, base, page_size, bank));
    return enc_xy(0, (is_dram ? 32 : L1_BANK_Y) + bank, static_cast<uint32_t>(addr));
}

uint64_t bank_noc_addr(uint32_t bank_id, uint32_t addr, bool is_dram, Where at) {
    if (!is_dram) fatal("unsupported", at, "L1 banks are not modelled; kgen places tensors in DRAM");
    if (bank_id >= M.num_banks)
        fatal("bad address", at, fmt_str("DRAM bank %u does not exist (%u banks)", bank_id, M.num_banks));
    return enc_xy(0, 32 + bank_id, addr);
}

void noc_read(uint64_t src, uint32_t dst_l1, uint32_t bytes, Where at) {
    Proc *p = cur(at);
    NocTarget s = resolve_noc(src, bytes, at, "noc_async_read");
    uint8_t *d = local_l1(p, dst_l1, bytes, at, "noc_async_read destination");
    check_write_into(p->core, dst_l1, bytes, -1, at, "noc_async_read");
    std::memcpy(d, s.ptr, bytes);
    if (s.core || s.l1_bank) {   // an L1: the core's own (a shard copied into a CB) or another core's
        p->last_read = s.core == p->core ? "l1_local_read_latency" : "l1_read_latency";
        work_at("noc_async_read", at, bytes / cost("l1_read_bytes_per_cycle"), bytes);
    } else {        // DRAM: bound by bandwidth or by the endpoint's request rate (one request per call)
        p->last_read = "dram_read_latency";
        // a read of the bank this core pairs with (its DRAM-sharded shard) runs at that bank's own bandwidth
        bool local = s.dram_bank >= 0 && size_t(s.dram_bank) < M.bank_worker.size() &&
                     M.bank_worker[size_t(s.dram_bank)] == p->core->id;
        double rate = local ? cost("dram_bank_read_bytes_per_cycle") : p->dram_read_rate;
        work_at("noc_async_read", at, std::max(bytes / rate, cost("dram_read_request")), bytes);
    }
}

void noc_write(uint32_t src_l1, uint64_t dst, uint32_t bytes, Where at) {
    Proc *p = cur(at);
    uint8_t *s = local_l1(p, src_l1, bytes, at, "noc_async_write source");
    check_read_from(p, src_l1, bytes, at, "noc_async_write");
    NocTarget d = resolve_noc(dst, bytes, at, "noc_async_write");
    if (d.core) check_write_into(d.core, static_cast<uint32_t>(d.core->l1_base + (d.ptr - d.core->l1)), bytes, -1, at, "noc_async_write");
    std::memmove(d.ptr, s, bytes);
    bool l1 = d.core || d.l1_bank;   // another core's L1, or a page of a tensor interleaved over the L1 banks
    p->last_write = l1 ? "l1_write_latency" : "dram_write_latency";
    work_at("noc_async_write", at, bytes / cost(l1 ? "l1_write_bytes_per_cycle" : "dram_write_bytes_per_cycle"), bytes);
    if (d.core) note_landed(d.core, static_cast<uint32_t>(d.ptr - d.core->l1), p->clock + static_cast<uint64_t>(cost("l1_write_latency")));
    maybe_yield(at);
}

void noc_write_mcast(uint32_t src_l1, uint64_t mcast_addr, uint32_t bytes, uint32_t num_dests, bool loopback, Where at) {
    Proc *p = cur(at);
    uint8_t *s = local_l1(p, src_l1, bytes, at, "noc_async_write_multicast source");
    check_read_from(p, src_l1, bytes, at, "noc_async_write_multicast");
    std::vector<Core *> dests = mcast_targets(mcast_addr, loopback, at, "noc_async_write_multicast");
    if (dests.size() != num_dests)
        hazard("multicast destinations", at,
               fmt_str("noc_async_write_multicast: the rectangle holds %zu destination core(s) but num_dests = %u",
                       dests.size(), num_dests));
    uint32_t off = l1_offset(static_cast<uint32_t>(mcast_addr));
    if (uint64_t(off) + bytes > M.l1_bytes) fatal("bad address", at, "noc_async_write_multicast: beyond L1");
    for (Core *c : dests) {
        check_write_into(c, c->l1_base + off, bytes, -1, at, "noc_async_write_multicast");
        std::memmove(c->l1 + off, s, bytes);
    }
    work_at("noc_async_write_multicast", at, multicast_cycles(bytes, num_dests), bytes, num_dests);
    maybe_yield(at);
}

void noc_write_value(uint64_t dst, uint32_t value, Where at) {
    Proc *p = cur(at);
    NocTarget d = resolve_noc(dst, 4, at, "noc_inline_dw_write");
    if (d.core) check_write_into(d.core, static_cast<uint32_t>(d.core->l1_base + (d.ptr - d.core->l1)), 4, -1, at, "noc_inline_dw_write");
    std::memcpy(d.ptr, &value, 4);
    work("noc_inline_dw_write", "cb_op", at, 1, value);
    if (d.core) note_landed(d.core, static_cast<uint32_t>(d.ptr - d.core->l1), p->clock + static_cast<uint64_t>(cost("sem_latency")));
    maybe_yield(at);
}

void noc_barrier(const char *which, Where at) {
    Proc *p = cur(at);
    // a barrier waits for its transfers to land: the latency of the last read or write it covers
    if (!std::strcmp(which, "noc_async_read_barrier")) work(which, p->last_read, at);
    else if (!std::strcmp(which, "noc_async_write_barrier")) work(which, p->last_write, at);
    else work(which, "cb_op", at);
}

void note_op(const char *name, Where at) {
    Proc *p = cur(at);
    record(p, name, at);
}

void assert_failed(const char *condition, Where at) {
    fatal("assertion", at, fmt_str("ASSERT(%s) failed", condition));
}

void unsupported(const char *what, Where at) {
    fatal("unsupported", at, fmt_str("%s is compiled but not modelled by the kgen emulator", what));
}

// ---- compute: configuration ----------------------------------------------------------------

namespace {
DataFormat to_format(int f, Where at, const char *what) {
    switch (f) {
        case 0: return DataFormat::Float32;
        case 5: return DataFormat::Float16_b;
        case 6: return DataFormat::Bfp8_b;
        case 7: return DataFormat::Bfp4_b;
        default:
            fatal("unsupported format", at, fmt_str("%s: data format %d (from chlkc_descriptors.h) is not modelled", what, f));
    }
}
uint32_t dst_capacity(Core *c) {
    uint32_t tiles = M.dst_tiles_full / (c->math.fp32_dest_acc ? 2 : 1);
    return c->dst_full_sync ? tiles : tiles / 2;
}
}  // namespace

void cfg_unpack(int reg, uint32_t cb, int l1_format, int dst_format, Where at) {
    Proc *p = cur(at);
    DataFormat f = to_format(l1_format, at, "unpacker configuration");
    // Float32 in L1 and Float32 as the unpacker's destination: the CB is UnpackToDestFp32 (tt-llk
    // should_unpack_to_dest: 32-bit in and out), its tiles go straight into DST
    bool to_dest = f == DataFormat::Float32 && dst_format == 0;
    if (reg == 0) {
        p->core->srca_fmt = f;
        p->core->srca_cb = static_cast<int>(cb);
        p->core->srca_to_dest = to_dest;
    } else {
        p->core->srcb_fmt = f;
        p->core->srcb_cb = static_cast<int>(cb);
        p->core->srcb_to_dest = to_dest;
    }
    work(reg == 0 ? "reconfig_srca" : "reconfig_srcb", "cfg_op", at, 1, cb);
}
void cfg_pack(uint32_t cb, int l1_format, Where at) {
    Proc *p = cur(at);
    p->core->pack_fmt = to_format(l1_format, at, "packer configuration");
    p->core->pack_cb = static_cast<int>(cb);
    work("reconfig_pack", "cfg_op", at, 1, cb);
}
// The Dst mode (fp32, sync) comes from the compiled kernels, the first TRISC to configure it sets it
// and the others must agree, in whatever order they run.
static void configure_dst(Core *c, bool fp32_dest_acc, bool dst_full_sync, Where at) {
    if (c->dst_configured && (fp32_dest_acc != c->math.fp32_dest_acc || dst_full_sync != c->dst_full_sync))
        hazard("configuration", at, "the TRISCs of one core disagree on fp32_dest_acc / dst sync mode");
    c->math.fp32_dest_acc = fp32_dest_acc;
    c->dst_full_sync = dst_full_sync;
    c->dst_configured = true;
}
void cfg_math(int fidelity, bool fp32_dest_acc, bool dst_full_sync, bool wormhole, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    c->math.fidelity = static_cast<Fidelity>(fidelity);
    c->math.wormhole_quirk = wormhole;
    configure_dst(c, fp32_dest_acc, dst_full_sync, at);
    work("hw_configure_math", "cfg_op", at);
}
void cfg_fp32(bool fp32_dest_acc, bool dst_full_sync, Where at) {
    configure_dst(cur(at)->core, fp32_dest_acc, dst_full_sync, at);
    work("hw_configure", "cfg_op", at);
}
void pack_l1_acc(bool on, Where at) {
    Proc *p = cur(at);
    p->core->l1_acc = on;
    work(on ? "pack_reconfig_l1_acc(1)" : "pack_reconfig_l1_acc(0)", "cfg_op", at);
}
void pack_relu(bool on, Where at) {
    Proc *p = cur(at);
    p->core->relu = on;
    work(on ? "pack_relu_config(zero)" : "pack_relu_config(none)", "cfg_op", at);
}

// ---- compute: unpack -----------------------------------------------------------------------

namespace {
// The L1 address of tile `index` past the unpacker's read pointer of `cb`, with the read checks. Through an
// alias view the kernel waits on the CB it views and first copies that CB's read pointer into the view
// (reload_from_cb_to_dst); the read counts against the viewed CB's waited pages.
const uint8_t *unpack_tile_addr(Proc *p, uint32_t cb, uint32_t index, DataFormat configured, Where at, const char *what) {
    CB &b = cb_checked(p, cb, at, what);
    if (configured != b.fmt) {
        hazard("format mismatch", at,
               fmt_str("%s reads c_%u (%s pages) with the unpacker configured for %s (missing reconfig_data_format?)",
                       what, cb, format_name(b.fmt), format_name(configured)));
    }
    LocalCBInterface &l = p->local[cb];
    uint32_t from = cb;
    int viewed = viewed_cb(p, cb);
    if (viewed >= 0) {
        if (l.fifo_rd_ptr != p->local[viewed].fifo_rd_ptr)
            hazard("alias read pointer", at,
                   fmt_str("%s reads c_%u, an alias of c_%d's pages, at 0x%x, but c_%d's front is at 0x%x (the alias's "
                           "read pointer must be set to c_%d's first)", what, cb, viewed, l.fifo_rd_ptr, viewed,
                           p->local[viewed].fifo_rd_ptr, viewed));
        from = static_cast<uint32_t>(viewed);
    }
    if (index >= p->waited[from])
        hazard("read beyond waited", at,
               fmt_str("%s reads tile %u of c_%u but the unpacker waited for %u page(s)", what, index, from,
                       p->waited[from]));
    uint32_t addr = l.fifo_rd_ptr + index * l.fifo_page_size;
    if (addr >= l.fifo_limit) addr -= l.fifo_size;
    check_read_from(p, addr, b.page_size, at, what);
    note_read(p->core->cbs[from], addr, b.page_size, at, what);
    return local_l1(p, addr, tile_bytes(configured), at, what);
}

// An FPU operand (matmul, add) cannot come from a CB unpacked Float32 -> Float32: tt-llk supports that
// conversion only into DST (is_unpacker_format_conversion_supported_dest), not into SrcA / SrcB.
void check_fpu_operands(Core *c, Where at, const char *what) {
    if (c->srca_to_dest || c->srcb_to_dest)
        fatal("FPU operand unpacked to DST", at,
              fmt_str("%s reads c_%d as an FPU operand, but its descriptor unpacks it Float32 -> Float32, straight "
                      "into DST (UnpackToDestFp32); TT-Metal's factory gives the reload an alias over such a CB "
                      "instead (MM_PARTIALS_RELOAD_ALIAS_CB)", what, c->srca_to_dest ? c->srca_cb : c->srcb_cb));
}

void push_src(Proc *p, SrcItem &item, uint64_t start, uint32_t tiles, Where at) {
    Core *c = p->core;
    item.end = p->clock;
    item.first_ready = start + (p->clock - start) / std::max<uint32_t>(tiles, 1);
    c->src_pushed++;
    (void)at;
}
SrcItem &src_slot_for_unpack(Proc *p, Where at) {
    block_on(p, Wait::SRC_FREE, at);
    return p->core->src_ring[p->core->src_pushed % 2];
}
}  // namespace

namespace {
struct MatmulPasses {
    uint32_t held, streamed, refills;
};
// One matmul_block call's unpacks as LLK runs it (kgen.core.costs.matmul_unpack_counts)
MatmulPasses matmul_passes(uint32_t rt_dim, uint32_t ct_dim) {
    uint32_t held = std::min(rt_dim, ct_dim), rut = std::max(rt_dim, ct_dim);
    uint32_t per_pass = std::max<uint32_t>(1, static_cast<uint32_t>(cost("unpack_held_per_pass")));
    uint32_t passes = (held + per_pass - 1) / per_pass;
    return {held, passes * rut, per_pass > 1 ? held / per_pass : 0};
}
}  // namespace

void unpack_matmul(uint32_t in0_cb, uint32_t in1_cb, uint32_t in0_tile, uint32_t in1_tile, uint32_t ct_dim,
                   uint32_t rt_dim, uint32_t kt_dim, Where at, bool in1_transpose) {
    Proc *p = cur(at);
    Core *c = p->core;
    check_fpu_operands(c, at, "matmul_block");
    SrcItem &item = src_slot_for_unpack(p, at);
    item.kind = SrcItem::MATMUL;
    item.rt = rt_dim;
    item.ct = ct_dim;
    item.at = at;
    uint32_t src19[TILE_DATUMS];
    while (item.in0.size() < rt_dim) item.in0.emplace_back(new SrcBOperand());
    while (item.in1.size() < ct_dim) item.in1.emplace_back(new SrcAOperand());
    MathConfig mc = c->math;
    mc.fast = M.fast;
    for (uint32_t r = 0; r < rt_dim; ++r) {
        const uint8_t *t = unpack_tile_addr(p, in0_cb, in0_tile + r * kt_dim, c->srcb_fmt, at, "matmul_block (in0 -> SrcB)");
        unpack_src(t, c->srcb_fmt, mc.fp32_dest_acc, src19);
        prepare_srcb(src19, mc, *item.in0[r]);
    }
    for (uint32_t col = 0; col < ct_dim; ++col) {
        const uint8_t *t = unpack_tile_addr(p, in1_cb, in1_tile + col, c->srca_fmt, at, "matmul_block (in1 -> SrcA)");
        unpack_src(t, c->srca_fmt, mc.fp32_dest_acc, src19);
        if (in1_transpose) transpose_datums(src19);        // IN1_TRANSPOSE_TILE: in1's tile lands transposed in SrcA
        prepare_srca(src19, mc, *item.in1[col]);
    }
    // LLK holds min(rt, ct) tiles of one operand, held_per_pass per pass, and streams max(rt, ct)
    // tiles of the other per pass; in1 streams when ct >= rt (kgen.core.costs.matmul_unpack_counts)
    bool in1_streams = ct_dim >= rt_dim;
    uint64_t start = p->clock;
    // the two unpackers run in parallel, each at its own rate, both bounded by the L1 ports they
    // share (kgen.core.costs.unpack_matmul)
    DataFormat held_fmt = in1_streams ? c->srcb_fmt : c->srca_fmt, streamed_fmt = in1_streams ? c->srca_fmt : c->srcb_fmt;
    MatmulPasses mp = matmul_passes(rt_dim, ct_dim);
    double held = mp.held, streamed = mp.streamed;
    double cycles = std::max({held * unpack_cost(held_fmt), streamed * unpack_cost(streamed_fmt),
                              held * unpack_shared_cost(held_fmt) + streamed * unpack_shared_cost(streamed_fmt)});
    // a pass that held two tiles refills its source register after its last product
    cycles += mp.refills * unpack_cost(held_fmt);
    work_at("unpack_matmul_block", at, cycles, in0_tile, in1_tile);
    push_src(p, item, start, mp.held + mp.streamed, at);
}

namespace {  // copy_tile, or transpose_tile (the same unpack through SrcA, the datums transposed)
void unpack_copy_item(uint32_t cb, uint32_t tile, uint32_t count, bool transpose, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_slot_for_unpack(p, at);
    item.kind = SrcItem::COPY;
    item.count = count;
    item.fmt = c->srca_fmt;
    item.to_dest = c->srca_to_dest;
    item.transpose = transpose;
    item.at = at;
    uint32_t tb = tile_bytes(c->srca_fmt);
    item.bytes.resize(size_t(tb) * count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t *t = unpack_tile_addr(p, cb, tile + i, c->srca_fmt, at, "copy_tile (-> SrcA -> DST)");
        std::memcpy(item.bytes.data() + size_t(i) * tb, t, tb);
    }
    uint64_t start = p->clock;
    work_at(transpose ? "unpack_transpose_tile" : "unpack_copy_tile", at, count * unpack_cost(c->srca_fmt), cb, tile);
    push_src(p, item, start, count, at);
}
}  // namespace

void unpack_copy(uint32_t cb, uint32_t tile, uint32_t count, Where at) { unpack_copy_item(cb, tile, count, false, at); }
void unpack_transpose(uint32_t cb, uint32_t tile, Where at) { unpack_copy_item(cb, tile, 1, true, at); }


void unpack_binary(uint32_t cb_a, uint32_t cb_b, uint32_t tile_a, uint32_t tile_b, bool bcast_rows, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_slot_for_unpack(p, at);
    check_fpu_operands(c, at, "add_tiles");
    item.kind = SrcItem::BINARY;
    item.bcast_rows = bcast_rows;
    item.at = at;
    item.a19.resize(TILE_DATUMS);
    item.b19.resize(TILE_DATUMS);
    const uint8_t *ta = unpack_tile_addr(p, cb_a, tile_a, c->srca_fmt, at, "add_tiles (SrcA)");
    unpack_src(ta, c->srca_fmt, c->math.fp32_dest_acc, item.a19.data());
    const uint8_t *tb = unpack_tile_addr(p, cb_b, tile_b, c->srcb_fmt, at, "add_tiles (SrcB)");
    unpack_src(tb, c->srcb_fmt, c->math.fp32_dest_acc, item.b19.data());
    work_at(bcast_rows ? "unpack_add_bcast_rows" : "unpack_add_tiles", at, unpack_cost(c->srca_fmt) + unpack_cost(c->srcb_fmt),
            tile_a, tile_b);
    push_src(p, item, p->clock, 1, at);   // both operands of the one tile
}

// ---- compute: math -------------------------------------------------------------------------

namespace {
SrcItem &src_for_math(Proc *p, SrcItem::Kind kind, Where at, const char *what) {
    block_on(p, Wait::SRC_READY, at);
    SrcItem &item = p->core->src_ring[p->core->src_popped % 2];
    if (item.kind != kind) {
        static const char *names[] = {"matmul_block", "copy_tile", "add_tiles"};
        fatal("thread mismatch", at,
              fmt_str("math runs %s but the unpacker delivered operands for %s (%s): the TRISC builds disagree", what,
                      names[item.kind], where_str(item.at).c_str()));
    }
    return item;
}
// Math is done with an item: not before the unpacker's last tile of it plus that tile's math.
void pop_src(Proc *p, SrcItem &item, double last_tile_math) {
    uint64_t done = item.end + static_cast<uint64_t>(std::llround(last_tile_math));
    if (done > p->clock) {
        trace_event(p, "stall: operands", p->clock, done - p->clock);
        p->stall_cycles += done - p->clock;
        p->clock = done;
    }
    p->core->src_popped++;
    item.popped_at = p->clock;
}
uint32_t *math_dst_tile(Proc *p, uint32_t index, Where at, const char *what) {
    Core *c = p->core;
    if (!c->math_holds)
        hazard("DST without acquire", at, fmt_str("%s writes DST before tile_regs_acquire", what));
    uint32_t cap = dst_capacity(c);
    if (index >= cap)
        fatal("DST beyond capacity", at,
              fmt_str("%s writes DST tile %u; a %s-sync section holds %u tile(s) with fp32_dest_acc %s", what, index,
                      c->dst_full_sync ? "full" : "half", cap, c->math.fp32_dest_acc ? "on" : "off"));
    uint32_t section = static_cast<uint32_t>(c->dst_committed % dst_sections(c));
    return c->dst.data() + size_t(section * cap + index) * TILE_DATUMS;
}
}  // namespace

void math_matmul(uint32_t dst_index, uint32_t ct_dim, uint32_t rt_dim, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_for_math(p, SrcItem::MATMUL, at, "matmul_block");
    if (item.ct != ct_dim || item.rt != rt_dim)
        fatal("thread mismatch", at, "math matmul_block dimensions differ from the unpacker's");
    MathConfig mc = c->math;
    mc.fast = M.fast;
    for (uint32_t r = 0; r < rt_dim; ++r)
        for (uint32_t col = 0; col < ct_dim; ++col)
            matmul_tile(math_dst_tile(p, dst_index + r * ct_dim + col, at, "matmul_block"), *item.in0[r], *item.in1[col], mc);
    // kgen.core.costs.Costs.matmul_tile_cycles, a cost key per fidelity and DST width
    double per_tile = cost((mc.fp32_dest_acc ? "matmul_tile_fp32." : "matmul_tile.")
                           + std::to_string(static_cast<int>(mc.fidelity)));
    // the FPU idles while a pass that held two tiles refills its source register (the unpacker's refill)
    double refill = matmul_passes(rt_dim, ct_dim).refills * unpack_cost(ct_dim >= rt_dim ? c->srcb_fmt : c->srca_fmt);
    work_at("matmul_block", at, double(rt_dim) * ct_dim * per_tile + cost("matmul_call") + refill, dst_index, rt_dim * ct_dim,
            fmt_str("\"tiles\":%u", rt_dim * ct_dim));
    pop_src(p, item, per_tile);
}

void math_copy(uint32_t dst_index, uint32_t count, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_for_math(p, SrcItem::COPY, at, "copy_tile");
    MathConfig mc = c->math;
    mc.fast = M.fast;
    uint32_t tb = tile_bytes(item.fmt);
    for (uint32_t i = 0; i < count; ++i) {
        uint32_t *d = math_dst_tile(p, dst_index + i, at, "copy_tile");
        copy_tile_to_dst(item.bytes.data() + size_t(i) * tb, item.fmt, mc, item.to_dest, d);
        if (item.transpose) transpose_datums(d);   // an element permutation: the same before or after the copy
    }
    work("copy_tile", "datacopy_tile", at, count, dst_index, count);
    pop_src(p, item, cost("datacopy_tile"));
}

void math_binary(uint32_t dst_index, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_for_math(p, SrcItem::BINARY, at, "add_tiles");
    MathConfig mc = c->math;
    mc.fast = M.fast;
    add_tiles(item.a19.data(), item.b19.data(), item.bcast_rows, mc, math_dst_tile(p, dst_index, at, "add_tiles"));
    work(item.bcast_rows ? "add_tiles_bcast_rows" : "add_tiles", "eltwise_tile", at, 1, dst_index);
    pop_src(p, item, 0);
}

void dst_acquire(Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    if (c->math_holds) hazard("DST protocol", at, "tile_regs_acquire while math already holds a DST section");
    block_on(p, Wait::DST_FREE, at);
    c->math_holds = true;
    work("tile_regs_acquire", "dst_section_half", at);   // the math half of a DST hand-over
}

void dst_commit(Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    if (!c->math_holds) hazard("DST protocol", at, "tile_regs_commit without tile_regs_acquire");
    c->math_holds = false;
    work("tile_regs_commit", "cb_op", at);
    c->dst_committed++;
    c->dst_commit_at[c->dst_committed % 16] = p->clock;
    maybe_yield(at);
}

// ---- compute: pack -------------------------------------------------------------------------

void dst_wait(Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    if (c->pack_holds) hazard("DST protocol", at, "tile_regs_wait while pack already holds a DST section");
    block_on(p, Wait::DST_READY, at);
    c->pack_holds = true;
    work("tile_regs_wait", "dst_section_half", at);      // the pack half
}

void dst_release(Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    if (!c->pack_holds) hazard("DST protocol", at, "tile_regs_release without tile_regs_wait");
    // The packer clears the section it releases (ZEROACC), so math starts the next one from zero.
    uint32_t cap = dst_capacity(c);
    uint32_t section = static_cast<uint32_t>(c->dst_released % dst_sections(c));
    std::fill(c->dst.begin() + size_t(section) * cap * TILE_DATUMS, c->dst.begin() + size_t(section + 1) * cap * TILE_DATUMS, 0u);
    c->pack_holds = false;
    work("tile_regs_release", "cb_op", at);
    c->dst_released++;
    c->dst_release_at[c->dst_released % 16] = p->clock;
    maybe_yield(at);
}

namespace {
const uint32_t *pack_dst_tile(Proc *p, uint32_t index, Where at, const char *what) {
    Core *c = p->core;
    if (!c->pack_holds) hazard("DST without wait", at, fmt_str("%s reads DST before tile_regs_wait", what));
    uint32_t cap = dst_capacity(c);
    if (index >= cap)
        fatal("DST beyond capacity", at, fmt_str("%s reads DST tile %u; a %s-sync section holds %u tile(s)", what, index,
                                                 c->dst_full_sync ? "full" : "half", cap));
    uint32_t section = static_cast<uint32_t>(c->dst_released % dst_sections(c));
    return c->dst.data() + size_t(section * cap + index) * TILE_DATUMS;
}

}  // namespace

uint32_t *sfpu_dst_tile(uint32_t index, bool *fp32_dest, Where at) {
    Proc *p = cur(at);
    *fp32_dest = p->core->math.fp32_dest_acc;
    return const_cast<uint32_t *>(pack_dst_tile(p, index, at, "the SFPU"));
}

namespace {
uint8_t *pack_target(Proc *p, uint32_t cb, uint32_t page_index, Where at, const char *what) {
    Core *c = p->core;
    CB &b = cb_checked(p, cb, at, what);
    if (c->pack_fmt != b.fmt)
        hazard("format mismatch", at,
               fmt_str("%s packs into c_%u (%s pages) with the packer configured for %s (missing pack_reconfig_data_format?)",
                       what, cb, format_name(b.fmt), format_name(c->pack_fmt)));
    if (page_index >= p->reserved[cb])
        hazard("pack beyond reserved", at,
               fmt_str("%s writes page %u of c_%u but the packer reserved %u page(s)", what, page_index, cb, p->reserved[cb]));
    LocalCBInterface &l = p->local[cb];
    uint32_t addr = l.fifo_wr_ptr + page_index * l.fifo_page_size;
    if (addr >= l.fifo_limit) addr -= l.fifo_size;
    check_write_into(c, addr, b.page_size, static_cast<int>(cb), at, what);
    return local_l1(p, addr, b.page_size, at, what);
}
}  // namespace

void pack_tiles(uint32_t dst_index, uint32_t cb, uint32_t count, int out_tile, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    MathConfig mc = c->math;
    mc.fast = M.fast;
    for (uint32_t i = 0; i < count; ++i) {
        LocalCBInterface &l = p->local[cb < MAX_CBS ? cb : 0];
        uint32_t page = out_tile >= 0 ? static_cast<uint32_t>(out_tile) + i : l.fifo_wr_tile_ptr;
        uint8_t *t = pack_target(p, cb, page, at, "pack_tile");
        if (!pack_tile(pack_dst_tile(p, dst_index + i, at, "pack_tile"), c->pack_fmt, mc, c->relu, c->l1_acc, t))
            fatal("L1 accumulation format", at,
                  fmt_str("pack with L1 accumulation into c_%u: the packer cannot accumulate %s in L1", cb,
                          format_name(c->pack_fmt)));
        if (out_tile < 0) l.fifo_wr_tile_ptr++;
    }
    const std::string fmt = format_name(c->pack_fmt);
    work_at(c->l1_acc ? "pack_tile (L1 acc)" : "pack_tile", at,
            count * cost((c->l1_acc ? "pack_tile_l1acc." : "pack_tile.") + fmt) + cost("pack_call"), dst_index, cb);
}

void pack_untilize(uint32_t cb, uint32_t block_ct, uint32_t full_ct, uint32_t block_rt, uint32_t block_c_index, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    CB &b = cb_checked(p, cb, at, "pack_untilize_dest");
    if (c->pack_fmt != DataFormat::Float16_b && c->pack_fmt != DataFormat::Float32)
        fatal("unsupported", at, "pack_untilize_dest into a block-float CB");
    MathConfig mc = c->math;
    mc.fast = M.fast;
    const uint32_t datum = c->pack_fmt == DataFormat::Float32 ? 4 : 2;
    const uint32_t row_bytes = full_ct * 32 * datum;
    if (uint64_t(row_bytes) * 32 * block_rt > uint64_t(b.page_size) * p->reserved[cb])
        hazard("pack beyond reserved", at,
               fmt_str("pack_untilize_dest writes %u row(s) of %u bytes into c_%u, more than the %u reserved page(s) hold",
                       32 * block_rt, row_bytes, cb, p->reserved[cb]));
    LocalCBInterface &l = p->local[cb];
    std::vector<uint8_t> tile(4096);
    for (uint32_t r = 0; r < block_rt; ++r) {
        for (uint32_t t = 0; t < block_ct; ++t) {
            bool l1acc = false;
            if (!pack_tile(pack_dst_tile(p, r * block_ct + t, at, "pack_untilize_dest"), c->pack_fmt, mc, c->relu, l1acc,
                           tile.data()))
                fatal("unsupported", at, "pack_untilize_dest conversion");
            uint32_t strip = l.fifo_wr_ptr + r * 32 * row_bytes;
            uint32_t col0 = (block_c_index * block_ct + t) * 32;
            uint8_t *base = local_l1(p, strip, 32 * row_bytes, at, "pack_untilize_dest");
            check_write_into(c, strip, 32 * row_bytes, static_cast<int>(cb), at, "pack_untilize_dest");
            for (uint32_t i = 0; i < TILE_DATUMS; ++i) {
                uint32_t face = i / 256, fr = (i / 16) % 16, fc = i % 16;
                uint32_t row = (face / 2) * 16 + fr, col = (face % 2) * 16 + fc;
                std::memcpy(base + row * row_bytes + (col0 + col) * datum, tile.data() + i * datum, datum);
            }
        }
    }
    work_at("pack_untilize_dest", at, block_rt * (block_ct * cost("untilize_tile") + cost("untilize_block") / block_ct),
            cb, block_c_index);
}
}  // namespace kemu
