// kgen host emulator: the machine (cores, L1, DRAM, CBs, semaphores, NoC, DST, the unpack->math
// source registers), the scheduler and the diagnoses. See kgen/proof/emulate.py for the overall design.
//
// Mechanism: every core x processor is a coroutine (ucontext) with its own stack, all in one OS
// thread. A processor runs until an API call must wait (CB pages, CB space, a semaphore value, a
// DST section, the source registers); it then records what it waits on and switches to the
// scheduler, which picks the next processor whose wait is satisfied. One thread makes runs
// deterministic and reproducible by seed, needs no locks, and makes a deadlock exact: no processor
// can proceed. Schedules: "time" picks the processor with the smallest modelled cycle count (a
// discrete-event order, which the Chrome trace shows); "random" picks among the ready ones with a
// seeded RNG and also yields at random at every synchronising call, to shake out ordering bugs.
//
// L1: one 2 MiB-aligned slot per core inside a region mapped below 2 GiB (MAP_32BIT), so a 32-bit
// L1 address is a real host pointer (kernels cast semaphore addresses to pointers) and the low 21
// bits are the offset, the same on every core (TT-Metal allocates CBs and semaphores at the same
// address on every core of a program).

#include "runtime_internal.h"

namespace kemu::detail {

Machine M;
Proc *g_cur = nullptr;
ucontext_t g_sched_ctx;
Proc *g_starting = nullptr;

// ---- helpers ---------------------------------------------------------------------------------

std::string fmt_str(const char *f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

const char *format_name(DataFormat f) {
    switch (f) {
        case DataFormat::Float32: return "Float32";
        case DataFormat::Float16_b: return "Float16_b";
        case DataFormat::Bfp8_b: return "Bfp8_b";
        case DataFormat::Bfp4_b: return "Bfp4_b";
        default: return "Invalid";
    }
}

double cost(const std::string &key) {
    auto it = M.cycles.find(key);
    if (it == M.cycles.end()) {
        std::fprintf(stderr, "kgen-emu: the program file has no cost '%s'\n", key.c_str());
        std::exit(4);
    }
    return it->second;
}

// A measured curve passed as keys "<name>@<x>": linear in between, flat past the ends (kgen.core.costs.Curve).
double curve_at(const std::string &name, double x) {
    std::vector<std::pair<double, double>> pts;
    const std::string prefix = name + "@";
    for (auto it = M.cycles.lower_bound(prefix); it != M.cycles.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
        pts.emplace_back(std::stod(it->first.substr(prefix.size())), it->second);
    if (pts.empty()) return cost(prefix);
    std::sort(pts.begin(), pts.end());
    if (x <= pts.front().first) return pts.front().second;
    if (x >= pts.back().first) return pts.back().second;
    for (size_t i = 1; i < pts.size(); ++i)
        if (x <= pts[i].first) {
            auto [x0, y0] = pts[i - 1];
            auto [x1, y1] = pts[i];
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        }
    return pts.back().second;
}

double unpack_cost(DataFormat f) { return cost(std::string("unpack_tile.") + format_name(f)); }
// a tile's share of the L1 read ports both unpackers use (kgen.core.costs.unpack_shared_tile)
double unpack_shared_cost(DataFormat f) { return cost(std::string("unpack_shared_tile.") + format_name(f)); }

std::string where_str(Where at) {
    if (!at.file) return "?";
    return fmt_str("%s:%d", at.file, at.line);
}

void json_escape(std::string &out, const std::string &s) {
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt_str("\\u%04x", c);
        } else {
            out += c;
        }
    }
}

void trace_event(Proc *p, const char *name, uint64_t start, uint64_t dur, const std::string &args) {
    if (!M.trace || M.trace_events >= M.trace_limit) return;
    ++M.trace_events;
    std::string n;
    json_escape(n, name);
    std::fprintf(M.trace, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f%s%s%s}",
                 n.c_str(), p->core->id, p->kind, start / M.clock_mhz, std::max<uint64_t>(dur, 1) / M.clock_mhz,
                 args.empty() ? "" : ",\"args\":{", args.c_str(), args.empty() ? "" : "}");
}

void hazard(const char *kind, Where at, const std::string &message) {
    // One report per (kind, source line, core): a loop repeating a bug says it once.
    int core = g_cur ? g_cur->core->id : -1;
    for (Hazard &h : M.hazards)
        if (h.kind == kind && h.line == at.line && h.core == core && h.file == (at.file ? at.file : "?")) return;
    if (M.hazards.size() >= 64) return;
    Hazard h{kind, message, at.file ? at.file : "?", at.line, core, g_cur ? g_cur->kind : -1};
    M.hazards.push_back(h);
}

// A hazard after which the run cannot go on meaningfully (it would hang or corrupt memory).
[[noreturn]] void fatal(const char *kind, Where at, const std::string &message) {
    hazard(kind, at, message);
    M.stop = true;
    M.stop_reason = kind;
    switch_to_scheduler_forever();
}

void record(Proc *p, const char *name, Where at, uint32_t a, uint32_t b) {
    p->ops[name] += 1;
    p->recent[p->recent_next] = Op{name, at.file, at.line, a, b};
    p->recent_next = (p->recent_next + 1) % 12;
    p->recent_count = std::min(p->recent_count + 1, 12);
}

// Advance the running processor's clock by an op's cost and trace it.
// Charge `cycles` of busy time to the running processor for one API call.
void work_cycles(const char *name, Where at, uint64_t cycles, uint32_t a, uint32_t b, const std::string &args) {
    Proc *p = g_cur;
    record(p, name, at, a, b);
    trace_event(p, name, p->clock, cycles, args);
    p->clock += cycles;
    p->busy_cycles += cycles;
}

// Charge `cycles` (the model's fractional figure, rounded once per call).
void work_at(const char *name, Where at, double cycles, uint32_t a, uint32_t b, const std::string &args) {
    work_cycles(name, at, static_cast<uint64_t>(std::llround(std::max(0.0, cycles))), a, b, args);
}

void work(const char *name, const char *cost_key, Where at, uint64_t times, uint32_t a, uint32_t b,
          const std::string &args) {
    work_at(name, at, cost(cost_key) * double(times), a, b, args);
}

// How long a multicast of `bytes` to `dests` cores occupies its sender: one transaction's issue cost for
// that many destinations (kgen.core.costs.Costs.multicast_issue, a cost key per count) and the payload at
// the multicast bandwidth for that many destinations; the bandwidth already holds the packets of a
// transaction longer than the burst (kgen.core.costs.Costs.multicast_cycles).
double multicast_issue(uint32_t dests) { return cost("mcast_issue." + std::to_string(dests)); }

double multicast_cycles(uint32_t bytes, uint32_t dests) {
    return multicast_issue(dests) + bytes / curve_at("mcast_bw", dests);
}

Proc *cur(Where at) {
    if (!g_cur) {
        std::fprintf(stderr, "kgen-emu: kernel API called outside a kernel (%s)\n", where_str(at).c_str());
        std::exit(4);
    }
    return g_cur;
}

// ---- scheduler -------------------------------------------------------------------------------

bool cb_front_ready(Core *c, uint32_t cb, uint32_t n) {
    const CB &b = c->cbs[cb];
    return b.received - b.acked >= n;
}
bool cb_back_ready(Core *c, uint32_t cb, uint32_t n) {
    const CB &b = c->cbs[cb];
    return b.num_pages - (b.received - b.acked) >= n;
}
uint32_t dst_sections(Core *c) { return c->dst_full_sync ? 1 : 2; }

// When a counter of (count, time) events first reached `count`.
uint64_t first_at(const std::deque<std::pair<uint64_t, uint64_t>> &events, uint64_t count) {
    for (const auto &[n, t] : events)
        if (n >= count) return t;
    return 0;
}

void note_landed(Core *c, uint32_t offset, uint64_t when) {
    uint64_t &t = c->landed[offset];
    t = std::max(t, when);
}
uint64_t landed_at(Core *c, uint32_t offset) {
    auto it = c->landed.find(offset);
    return it == c->landed.end() ? 0 : it->second;
}

bool ready(Proc *p) {
    Core *c = p->core;
    switch (p->wait) {
        case Wait::NONE:
        case Wait::YIELD: return true;
        case Wait::CB_FRONT: return cb_front_ready(c, p->wait_cb, p->wait_n);
        case Wait::CB_BACK: return cb_back_ready(c, p->wait_cb, p->wait_n);
        case Wait::SEM: return p->wait_at_least ? *p->wait_sem >= p->wait_value : *p->wait_sem == p->wait_value;
        case Wait::DST_FREE: return c->dst_committed - c->dst_released < dst_sections(c);
        case Wait::DST_READY: return c->dst_committed > c->dst_released;
        case Wait::SRC_FREE: return c->src_pushed - c->src_popped < 2;
        case Wait::SRC_READY: return c->src_pushed > c->src_popped;
    }
    return true;
}

// The time at which what p waited on became true (for the modelled clock).
uint64_t wake_time(Proc *p) {
    Core *c = p->core;
    switch (p->wait) {
        case Wait::CB_FRONT: {
            const CB &b = c->cbs[p->wait_cb];
            return first_at(b.pushed_at, b.acked + p->wait_n);
        }
        case Wait::CB_BACK: {
            const CB &b = c->cbs[p->wait_cb];
            return b.received + p->wait_n <= b.num_pages ? 0 : first_at(b.popped_at, b.received + p->wait_n - b.num_pages);
        }
        case Wait::SEM: return landed_at(c, l1_offset(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p->wait_sem))));
        case Wait::DST_FREE:
            return c->dst_committed < dst_sections(c) ? 0 : c->dst_release_at[(c->dst_committed - dst_sections(c) + 1) % 16];
        case Wait::DST_READY: return c->dst_commit_at[(c->dst_released + 1) % 16];
        case Wait::SRC_FREE: return c->src_ring[c->src_pushed % 2].popped_at;
        case Wait::SRC_READY: return c->src_ring[c->src_popped % 2].first_ready;
        default: return 0;
    }
}

std::string wait_text(Proc *p) {
    Core *c = p->core;
    switch (p->wait) {
        case Wait::CB_FRONT: {
            const CB &b = c->cbs[p->wait_cb];
            return fmt_str("cb_wait_front(c_%u, %u): %llu page(s) pushed and not popped", p->wait_cb, p->wait_n,
                           (unsigned long long)(b.received - b.acked));
        }
        case Wait::CB_BACK: {
            const CB &b = c->cbs[p->wait_cb];
            return fmt_str("cb_reserve_back(c_%u, %u): %llu of %u page(s) free", p->wait_cb, p->wait_n,
                           (unsigned long long)(b.num_pages - (b.received - b.acked)), b.num_pages);
        }
        case Wait::SEM: {
            uint32_t off = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p->wait_sem)) & (L1_SLOT - 1);
            int id = -1;
            for (size_t i = 0; i < c->sem_offsets.size(); ++i)
                if (c->sem_offsets[i] == off) id = static_cast<int>(i);
            return fmt_str("noc_semaphore_wait%s(semaphore %d, %s%u): value is %u", p->wait_at_least ? "_min" : "", id,
                           p->wait_at_least ? ">= " : "", p->wait_value, *p->wait_sem);
        }
        case Wait::DST_FREE:
            return fmt_str("tile_regs_acquire: no free DST section (%llu committed, %llu released by pack)",
                           (unsigned long long)c->dst_committed, (unsigned long long)c->dst_released);
        case Wait::DST_READY:
            return fmt_str("tile_regs_wait: math has committed no DST section pack has not released (%llu / %llu)",
                           (unsigned long long)c->dst_committed, (unsigned long long)c->dst_released);
        case Wait::SRC_FREE: return "unpack: both source-register banks hold operands math has not consumed";
        case Wait::SRC_READY: return "math: waits for the unpacker to deliver operands (no unpack call pending)";
        default: return "running";
    }
}

void block_on(Proc *p, Wait w, Where at) {
    p->wait = w;
    p->wait_at = at;
    bool stalled = !ready(p);
    uint64_t before = p->clock;
    if (stalled || M.random_schedule) swapcontext(&p->ctx, &g_sched_ctx);
    // the condition holds; what it waited for may still land later in modelled time (another
    // processor ran ahead): the processor goes on only then
    uint64_t t = wake_time(p);
    if (t > p->clock) {
        p->stall_cycles += t - p->clock;
        p->clock = t;
    }
    if (p->clock > before || stalled) {
        ++p->stalls;
        if (p->clock > before) {
            static const char *names[] = {"", "stall: cb_wait_front", "stall: cb_reserve_back", "stall: semaphore",
                                          "stall: DST free", "stall: DST ready", "stall: SrcA/SrcB free",
                                          "stall: operands", ""};
            trace_event(p, names[static_cast<int>(w)], before, p->clock - before);
        }
    }
    p->wait = Wait::NONE;
}

// Random schedules also switch at synchronising calls that never block.
void maybe_yield(Where at) {
    if (!M.random_schedule) return;
    if ((M.rng() & 3) == 0) block_on(g_cur, Wait::YIELD, at);
}

void trampoline() {
    Proc *p = g_starting;
    p->entry();
    p->done = true;
    g_cur = nullptr;
    setcontext(&g_sched_ctx);
}

[[noreturn]] void switch_to_scheduler_forever() {
    Proc *p = g_cur;
    p->done = true;
    setcontext(&g_sched_ctx);
    std::abort();
}

// ---- memory ----------------------------------------------------------------------------------

Core *core_of_l1(uint32_t addr) {
    if (addr < M.l1_region_base) return nullptr;
    uint64_t slot = (addr - M.l1_region_base) / L1_SLOT;
    if (slot >= M.cores.size()) return nullptr;
    return M.cores[slot].get();
}
uint32_t l1_offset(uint32_t addr) { return addr & (L1_SLOT - 1); }

// A local L1 range of the running core, checked.
uint8_t *local_l1(Proc *p, uint32_t addr, uint32_t bytes, Where at, const char *what) {
    Core *c = core_of_l1(addr);
    uint32_t off = l1_offset(addr);
    if (c != p->core || uint64_t(off) + bytes > M.l1_bytes) {
        fatal("bad address", at,
              fmt_str("%s: address 0x%x (+%u bytes) is not in this core's L1 (core (%d,%d) L1 is 0x%x..0x%x)", what,
                      addr, bytes, p->core->x, p->core->y, p->core->l1_base, p->core->l1_base + M.l1_bytes));
    }
    return reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(addr));
}

// The CB whose pages `cb` is an alias view of: another index over the same L1, page size and pages, waited
// on by this processor, where `cb` itself is never pushed (TT-Metal's MM_PARTIALS_RELOAD_ALIAS_CB, the
// partials' UnpackToDestFp32 view); -1 when none.
int viewed_cb(Proc *p, uint32_t cb) {
    const CB &b = p->core->cbs[cb];
    if (b.received != 0 || p->waited[cb] != 0) return -1;
    for (int i = 0; i < MAX_CBS; ++i) {
        const CB &o = p->core->cbs[i];
        if (i != static_cast<int>(cb) && o.configured && o.base == b.base && o.page_size == b.page_size &&
            o.num_pages == b.num_pages && p->waited[i] > 0)
            return i;
    }
    return -1;
}

// Pages of `b` pushed and not yet popped: [acked, received). Does [addr, addr+bytes) touch them?
// Pages already read by the consumer may be overwritten (TT-Metal's untilize stage packs rows into
// out pages whose partials it has just copied into DST); they are marked, and a later read of them
// is the hazard instead.
bool overlaps_pushed(CB &b, uint32_t addr, uint32_t bytes) {
    if (!b.configured || b.page_size == 0) return false;
    if (addr >= b.end() || addr + bytes <= b.base) return false;
    bool unread = false;
    for (uint64_t i = b.acked; i < b.received; ++i) {
        uint32_t slot = static_cast<uint32_t>(i % b.num_pages);
        uint32_t page = b.base + slot * b.page_size;
        if (addr < page + b.page_size && page < addr + bytes) {
            if (b.page_state[slot] & 1) b.page_state[slot] |= 2;
            else unread = true;
        }
    }
    return unread;
}

// Mark the pages of b that [addr, addr+bytes) reads; a page overwritten since its first read is a hazard.
void note_read(CB &b, uint32_t addr, uint32_t bytes, Where at, const char *what) {
    if (!b.configured || addr >= b.end() || addr + bytes <= b.base) return;
    for (uint32_t a = addr; a < addr + bytes; a += b.page_size) {
        uint32_t slot = (a - b.base) / b.page_size;
        if (b.page_state[slot] & 2)
            hazard("read of overwritten pages", at,
                   fmt_str("%s reads page %u of c_%d, which was overwritten through another CB sharing its L1 "
                           "region after it was first read (a pop is missing before the other CB's write?)",
                           what, slot, b.index));
        b.page_state[slot] |= 1;
    }
}
bool inside_window(const CB &b, uint64_t first, uint64_t last, uint32_t addr, uint32_t bytes) {
    for (uint64_t i = first; i < last; ++i) {
        uint32_t page = b.base + static_cast<uint32_t>(i % b.num_pages) * b.page_size;
        if (addr >= page && addr + bytes <= page + b.page_size) return true;
        if (addr >= page && addr < page + b.page_size && addr + bytes > page + b.page_size) {
            // a multi-page range: accept when it stays within consecutive window pages
            uint32_t rest = addr + bytes - (page + b.page_size);
            return inside_window(b, i + 1, last, page + b.page_size == b.end() ? b.base : page + b.page_size, rest);
        }
    }
    return false;
}

// A write into L1 pages of core c (pack, NoC write, NoC read response): no CB other than `except`
// may hold those pages pushed and unconsumed (the out/partials sharing trap).
void check_write_into(Core *c, uint32_t addr, uint32_t bytes, int except, Where at, const char *what) {
    for (int i = 0; i < MAX_CBS; ++i) {
        if (i == except) continue;
        CB &b = c->cbs[i];
        if (overlaps_pushed(b, addr, bytes)) {
            std::string why = except >= 0 ? fmt_str("c_%d and c_%d share one L1 region and must not hold the same pages "
                                                    "at once (the out/partials trap)", except, i)
                                          : "the data is overwritten before its consumer popped it";
            hazard("write into unconsumed pages", at,
                   fmt_str("%s writes L1 0x%x..0x%x on core (%d,%d), pages c_%d still holds unconsumed (%llu pushed, "
                           "not popped): %s",
                           what, l1_offset(addr), l1_offset(addr) + bytes, c->x, c->y, i,
                           (unsigned long long)(b.received - b.acked), why.c_str()));
            return;
        }
    }
}

// A read of L1 CB pages by the running processor: they must be pushed and not popped (or, for a
// producer forwarding what it just filled, reserved by it and not yet pushed).
void check_read_from(Proc *p, uint32_t addr, uint32_t bytes, Where at, const char *what) {
    Core *c = p->core;
    bool in_cb = false;
    if (p->last_ptr_cb >= 0) {
        // The address came from this CB's pointer: its own pages must hold pushed data (pages of
        // another CB sharing the region do not count).
        int i = p->last_ptr_cb;
        const CB &b = c->cbs[i];
        if (addr >= b.base && addr + bytes <= b.end()) {
            if (b.host_data) return;
            if (inside_window(b, b.acked, b.received, addr, bytes)) return;
            if (p->reserved[i] && inside_window(b, b.received, b.received + p->reserved[i], addr, bytes)) return;
            hazard("read of pages never pushed", at,
                   fmt_str("%s reads L1 0x%x..0x%x of c_%d on core (%d,%d): %llu page(s) of c_%d are pushed and "
                           "not popped, and these are not among them (cb_wait_front missing?)",
                           what, l1_offset(addr), l1_offset(addr) + bytes, i, c->x, c->y,
                           (unsigned long long)(b.received - b.acked), i));
            return;
        }
    }
    for (int i = 0; i < MAX_CBS; ++i) {
        const CB &b = c->cbs[i];
        if (!b.configured || addr >= b.end() || addr + bytes <= b.base) continue;
        in_cb = true;
        if (b.host_data && addr >= b.base && addr + bytes <= b.end()) return;
        if (inside_window(b, b.acked, b.received, addr, bytes)) return;
        if (p->reserved[i] && inside_window(b, b.received, b.received + p->reserved[i], addr, bytes)) return;
    }
    if (in_cb)
        hazard("read of pages never pushed", at,
               fmt_str("%s reads L1 0x%x..0x%x on core (%d,%d): no CB there has those pages pushed (and %s has not "
                       "reserved them)",
                       what, l1_offset(addr), l1_offset(addr) + bytes, c->x, c->y, PROC_NAMES[p->kind]));
}


NocTarget resolve_noc(uint64_t noc_addr, uint32_t bytes, Where at, const char *what) {
    if (!(noc_addr & NOC_MARK) || (noc_addr & NOC_MCAST))
        fatal("bad NoC address", at, fmt_str("%s: 0x%llx is not a unicast NoC address from get_noc_addr", what,
                                             (unsigned long long)noc_addr));
    uint32_t x = (noc_addr >> 32) & 63, y = (noc_addr >> 38) & 63;
    uint32_t addr = static_cast<uint32_t>(noc_addr);
    if (x == 0 && y >= 32 && y < 32 + M.num_banks) {
        uint32_t bank = y - 32;
        if (uint64_t(addr) + bytes > M.bank_bytes)
            fatal("bad address", at, fmt_str("%s: DRAM bank %u offset 0x%x + %u is beyond the bank's allocated %u bytes",
                                             what, bank, addr, bytes, M.bank_bytes));
        return {M.dram[bank].data() + addr, nullptr, false, int(bank)};
    }
    if (x == 0 && y >= L1_BANK_Y && y < L1_BANK_Y + M.num_banks) {
        uint32_t bank = y - L1_BANK_Y;
        if (uint64_t(addr) + bytes > M.bank_bytes)
            fatal("bad address", at, fmt_str("%s: L1 bank %u offset 0x%x + %u is beyond the bank's allocated %u bytes",
                                             what, bank, addr, bytes, M.bank_bytes));
        return {M.l1_banks[bank].data() + addr, nullptr, true};
    }
    auto it = M.by_noc.find({int(x), int(y)});
    if (it == M.by_noc.end())
        fatal("bad NoC address", at, fmt_str("%s: no core at NoC (%u,%u)", what, x, y));
    Core *c = it->second;
    uint32_t off = l1_offset(addr);
    if (uint64_t(off) + bytes > M.l1_bytes)
        fatal("bad address", at, fmt_str("%s: L1 offset 0x%x + %u is beyond L1", what, off, bytes));
    return {c->l1 + off, c};
}

std::vector<Core *> mcast_targets(uint64_t mcast, bool loopback, Where at, const char *what) {
    if (!(mcast & NOC_MARK) || !(mcast & NOC_MCAST))
        fatal("bad NoC address", at,
              fmt_str("%s: 0x%llx is not a multicast address from get_noc_multicast_addr", what, (unsigned long long)mcast));
    uint32_t x0 = (mcast >> 32) & 63, y0 = (mcast >> 38) & 63, x1 = (mcast >> 44) & 63, y1 = (mcast >> 50) & 63;
    std::vector<Core *> out;
    for (auto &c : M.cores) {
        if (c->noc_x >= int(std::min(x0, x1)) && c->noc_x <= int(std::max(x0, x1)) && c->noc_y >= int(std::min(y0, y1)) &&
            c->noc_y <= int(std::max(y0, y1))) {
            if (c.get() == g_cur->core && !loopback) continue;
            out.push_back(c.get());
        }
    }
    return out;
}

// ---- CB pointer movement --------------------------------------------------------------------

void advance(LocalCBInterface &l, uint32_t &ptr, uint32_t pages) {
    ptr += pages * l.fifo_page_size;
    if (ptr >= l.fifo_limit) ptr -= l.fifo_size;
}

CB &cb_checked(Proc *p, uint32_t cb, Where at, const char *what) {
    if (cb >= MAX_CBS || !p->core->cbs[cb].configured)
        fatal("unknown CB", at, fmt_str("%s(c_%u): the program configures no CB %u on core (%d,%d)", what, cb, cb,
                                        p->core->x, p->core->y));
    return p->core->cbs[cb];
}

}  // namespace kemu::detail
