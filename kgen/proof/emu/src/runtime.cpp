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

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kemu/runtime.h"
#include "tensix_math.h"

namespace kemu {
namespace {

constexpr uint64_t L1_SLOT = 1u << 21;           // 2 MiB per core (Blackhole L1 is 1.5 MiB)
constexpr int MAX_CBS = 64;
constexpr int NUM_PROC_KINDS = 5;
enum ProcKind { BRISC = 0, NCRISC = 1, UNPACK = 2, MATH = 3, PACK = 4 };
const char *const PROC_NAMES[NUM_PROC_KINDS] = {"brisc", "ncrisc", "trisc0/unpack", "trisc1/math", "trisc2/pack"};

// ---- NoC address encoding (emulator-private) -------------------------------------------------
constexpr uint64_t NOC_MARK = 1ull << 57;
constexpr uint64_t NOC_MCAST = 1ull << 56;
inline uint64_t enc_xy(uint32_t x, uint32_t y, uint32_t addr) {
    return NOC_MARK | (uint64_t(x & 63) << 32) | (uint64_t(y & 63) << 38) | addr;
}
inline uint64_t enc_rect(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint32_t addr) {
    return NOC_MARK | NOC_MCAST | (uint64_t(x0 & 63) << 32) | (uint64_t(y0 & 63) << 38) | (uint64_t(x1 & 63) << 44) |
           (uint64_t(y1 & 63) << 50) | addr;
}

struct Hazard {
    std::string kind, message, file;
    int line;
    int core;
    int proc;
};

struct Op {  // one entry of a processor's recent-op ring (for deadlock reports)
    const char *name;
    const char *file;
    int line;
    uint32_t a, b;
};

struct CB {
    bool configured = false;
    int index = 0;
    DataFormat fmt = DataFormat::Invalid;
    uint32_t page_size = 0, num_pages = 0, base = 0;  // base: host L1 address
    uint64_t received = 0, acked = 0;                 // the shared tiles_received / tiles_acked counters
    // (pages pushed / popped so far, when): a wait resumes when the pages it needs were pushed or
    // freed, not at the latest push or pop
    std::deque<std::pair<uint64_t, uint64_t>> pushed_at, popped_at;
    // Per page slot since its push: bit 0 = read by the consumer, bit 1 = overwritten through
    // another CB sharing the region after that read (a later read of it gets the other CB's data).
    std::vector<uint8_t> page_state;
    // Globally allocated on an L1-sharded input whose shard the host wrote: every page holds data
    // (TT-Metal's block-sharded reader multicasts straight out of it, beyond what it reserved).
    bool host_data = false;
    uint32_t end() const { return base + page_size * num_pages; }
};

enum class Wait { NONE, CB_FRONT, CB_BACK, SEM, DST_FREE, DST_READY, SRC_FREE, SRC_READY, YIELD };

struct Core;

struct Proc {
    int id = 0;
    Core *core = nullptr;
    ProcKind kind = BRISC;
    std::string kernel;
    void (*entry)() = nullptr;
    std::vector<uint32_t> args, common_args;
    ucontext_t ctx{};
    void *stack = nullptr;
    size_t stack_bytes = 0;
    bool started = false, done = false;
    uint64_t clock = 0;
    // what it waits on
    Wait wait = Wait::NONE;
    uint32_t wait_cb = 0, wait_n = 0, wait_value = 0;
    bool wait_at_least = false;
    volatile uint32_t *wait_sem = nullptr;
    Where wait_at{nullptr, 0};
    // per-CB local view
    LocalCBInterface local[MAX_CBS]{};
    uint32_t waited[MAX_CBS]{}, reserved[MAX_CBS]{};
    int last_ptr_cb = -1;  // the CB of the last get_read_ptr / get_write_ptr: the one a NoC transfer means
    // statistics
    std::map<std::string, uint64_t> ops;
    uint64_t stalls = 0, stall_cycles = 0, busy_cycles = 0;
    Op recent[12]{};
    int recent_next = 0, recent_count = 0;
    // what the next barrier waits for: the latency of the last read / write (DRAM or another core's L1)
    const char *last_read = "dram_read_latency", *last_write = "dram_write_latency";
};

struct SrcItem {
    enum Kind { MATMUL, COPY, BINARY } kind = MATMUL;
    uint32_t rt = 0, ct = 0, count = 0;
    bool bcast_rows = false;
    std::vector<std::unique_ptr<SrcBOperand>> in0;
    std::vector<std::unique_ptr<SrcAOperand>> in1;
    std::vector<uint8_t> bytes;      // COPY: raw tiles
    DataFormat fmt = DataFormat::Invalid;
    std::vector<uint32_t> a19, b19;  // BINARY
    Where at{nullptr, 0};
    // The unpacker streams an item tile by tile: math may start on its first tile and cannot finish
    // before the last one is unpacked (LLK overlaps unpack and math per tile, not per call).
    uint64_t first_ready = 0, end = 0;
    uint64_t popped_at = 0;   // when math was last done with this slot
};

struct Core {
    int id = 0, x = 0, y = 0, noc_x = 0, noc_y = 0;
    uint8_t *l1 = nullptr;
    uint32_t l1_base = 0;
    CB cbs[MAX_CBS];
    std::vector<uint32_t> sem_offsets;
    Proc *procs[NUM_PROC_KINDS]{};
    // when the last write into each L1 word that a kernel may wait on landed, by L1 offset: a
    // semaphore wait resumes when its own word changed, not when any other did
    std::map<uint32_t, uint64_t> landed;
    // compute state
    MathConfig math{};
    bool dst_full_sync = false;
    bool dst_configured = false;    // a TRISC has set fp32_dest_acc / dst_full_sync (cfg_math, cfg_fp32)
    DataFormat srca_fmt = DataFormat::Invalid, srcb_fmt = DataFormat::Invalid, pack_fmt = DataFormat::Invalid;
    int srca_cb = -1, srcb_cb = -1, pack_cb = -1;
    bool l1_acc = false, relu = false;
    std::vector<uint32_t> dst;  // DST_TILES x 1024 fp32 patterns
    uint64_t dst_committed = 0, dst_released = 0;
    bool math_holds = false, pack_holds = false;
    uint64_t dst_commit_at[16]{}, dst_release_at[16]{};   // by commit / release number, mod 16
    SrcItem src_ring[2];
    uint64_t src_pushed = 0, src_popped = 0;
};

struct Machine {
    std::string arch;
    bool wormhole = false;
    uint32_t l1_bytes = 0;
    uint32_t num_banks = 0, bank_bytes = 0, dram_align = 32;
    std::vector<std::vector<uint8_t>> dram;
    // Tensors interleaved over L1 banks (ttnn BufferType::L1, INTERLEAVED): the same page layout as
    // DRAM's, kept apart and reached at NoC (0, L1_BANK_Y + bank) so that a transfer costs L1 time.
    std::vector<std::vector<uint8_t>> l1_banks;
    bool fast = false;
    uint32_t dst_tiles_full = 16;
    std::vector<std::unique_ptr<Core>> cores;
    std::vector<std::unique_ptr<Proc>> procs;
    std::map<std::pair<int, int>, Core *> by_noc;
    uint8_t *l1_region = nullptr;
    uint32_t l1_region_base = 0;
    std::map<std::string, double> cycles;   // the performance model's costs (kgen.proof.emulate.modelled_cycles)
    // schedule
    bool random_schedule = false;
    std::mt19937_64 rng{0};
    // diagnoses
    std::vector<Hazard> hazards;
    bool stop = false;
    std::string stop_reason;
    // trace
    std::FILE *trace = nullptr;
    uint64_t trace_events = 0, trace_limit = 2000000;
    double clock_mhz = 1000.0;
};

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

void trace_event(Proc *p, const char *name, uint64_t start, uint64_t dur, const std::string &args = "") {
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

[[noreturn]] void switch_to_scheduler_forever();

// A hazard after which the run cannot go on meaningfully (it would hang or corrupt memory).
[[noreturn]] void fatal(const char *kind, Where at, const std::string &message) {
    hazard(kind, at, message);
    M.stop = true;
    M.stop_reason = kind;
    switch_to_scheduler_forever();
}

void record(Proc *p, const char *name, Where at, uint32_t a = 0, uint32_t b = 0) {
    p->ops[name] += 1;
    p->recent[p->recent_next] = Op{name, at.file, at.line, a, b};
    p->recent_next = (p->recent_next + 1) % 12;
    p->recent_count = std::min(p->recent_count + 1, 12);
}

// Advance the running processor's clock by an op's cost and trace it.
// Charge `cycles` of busy time to the running processor for one API call.
void work_cycles(const char *name, Where at, uint64_t cycles, uint32_t a = 0, uint32_t b = 0, const std::string &args = "") {
    Proc *p = g_cur;
    record(p, name, at, a, b);
    trace_event(p, name, p->clock, cycles, args);
    p->clock += cycles;
    p->busy_cycles += cycles;
}

// Charge `cycles` (the model's fractional figure, rounded once per call).
void work_at(const char *name, Where at, double cycles, uint32_t a = 0, uint32_t b = 0, const std::string &args = "") {
    work_cycles(name, at, static_cast<uint64_t>(std::llround(std::max(0.0, cycles))), a, b, args);
}

void work(const char *name, const char *cost_key, Where at, uint64_t times = 1, uint32_t a = 0, uint32_t b = 0,
          const std::string &args = "") {
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
uint32_t l1_offset(uint32_t addr);

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

struct NocTarget {
    uint8_t *ptr;
    Core *core;  // null for DRAM and L1 banks
    bool l1_bank = false;
};
constexpr uint32_t L1_BANK_Y = 48;

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
        return {M.dram[bank].data() + addr, nullptr};
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

}  // namespace

// =============================================================================================
// API entry points
// =============================================================================================

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
    if (n > p->waited[cb])
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
        work_at("noc_async_read", at, std::max(bytes / cost("dram_read_bytes_per_cycle"), cost("dram_read_request")), bytes);
    }
}

void noc_write(uint32_t src_l1, uint64_t dst, uint32_t bytes, Where at) {
    Proc *p = cur(at);
    uint8_t *s = local_l1(p, src_l1, bytes, at, "noc_async_write source");
    check_read_from(p, src_l1, bytes, at, "noc_async_write");
    NocTarget d = resolve_noc(dst, bytes, at, "noc_async_write");
    if (d.core) check_write_into(d.core, static_cast<uint32_t>(d.core->l1_base + (d.ptr - d.core->l1)), bytes, -1, at, "noc_async_write");
    std::memmove(d.ptr, s, bytes);
    p->last_write = d.core ? "l1_write_latency" : "dram_write_latency";
    work_at("noc_async_write", at, bytes / cost(d.core ? "l1_write_bytes_per_cycle" : "dram_write_bytes_per_cycle"), bytes);
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

void cfg_unpack(int reg, uint32_t cb, int l1_format, Where at) {
    Proc *p = cur(at);
    DataFormat f = to_format(l1_format, at, "unpacker configuration");
    if (reg == 0) {
        p->core->srca_fmt = f;
        p->core->srca_cb = static_cast<int>(cb);
    } else {
        p->core->srcb_fmt = f;
        p->core->srcb_cb = static_cast<int>(cb);
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
// The L1 address of tile `index` past the unpacker's read pointer of `cb`, with the read checks.
const uint8_t *unpack_tile_addr(Proc *p, uint32_t cb, uint32_t index, DataFormat configured, Where at, const char *what) {
    CB &b = cb_checked(p, cb, at, what);
    if (configured != b.fmt) {
        hazard("format mismatch", at,
               fmt_str("%s reads c_%u (%s pages) with the unpacker configured for %s (missing reconfig_data_format?)",
                       what, cb, format_name(b.fmt), format_name(configured)));
    }
    if (index >= p->waited[cb])
        hazard("read beyond waited", at,
               fmt_str("%s reads tile %u of c_%u but the unpacker waited for %u page(s)", what, index, cb, p->waited[cb]));
    LocalCBInterface &l = p->local[cb];
    uint32_t addr = l.fifo_rd_ptr + index * l.fifo_page_size;
    if (addr >= l.fifo_limit) addr -= l.fifo_size;
    check_read_from(p, addr, b.page_size, at, what);
    note_read(b, addr, b.page_size, at, what);
    return local_l1(p, addr, tile_bytes(configured), at, what);
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

void unpack_matmul(uint32_t in0_cb, uint32_t in1_cb, uint32_t in0_tile, uint32_t in1_tile, uint32_t ct_dim,
                   uint32_t rt_dim, uint32_t kt_dim, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
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
        prepare_srca(src19, mc, *item.in1[col]);
    }
    // LLK holds one operand per outer iteration and streams the other: min(rt, ct) held tiles and
    // rt * ct streamed ones; in1 streams when ct >= rt (docs/reference/costs.md §1.2)
    bool in1_streams = ct_dim >= rt_dim;
    uint64_t start = p->clock;
    // the two unpackers run in parallel, each at its own rate, both bounded by the L1 ports they
    // share (kgen.core.costs.unpack_matmul)
    DataFormat held_fmt = in1_streams ? c->srcb_fmt : c->srca_fmt, streamed_fmt = in1_streams ? c->srca_fmt : c->srcb_fmt;
    double held = std::min(rt_dim, ct_dim), streamed = double(rt_dim) * ct_dim;
    double cycles = std::max({held * unpack_cost(held_fmt), streamed * unpack_cost(streamed_fmt),
                              held * unpack_shared_cost(held_fmt) + streamed * unpack_shared_cost(streamed_fmt)});
    work_at("unpack_matmul_block", at, cycles, in0_tile, in1_tile);
    push_src(p, item, start, std::min(rt_dim, ct_dim) + rt_dim * ct_dim, at);
}

void unpack_copy(uint32_t cb, uint32_t tile, uint32_t count, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_slot_for_unpack(p, at);
    item.kind = SrcItem::COPY;
    item.count = count;
    item.fmt = c->srca_fmt;
    item.at = at;
    uint32_t tb = tile_bytes(c->srca_fmt);
    item.bytes.resize(size_t(tb) * count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t *t = unpack_tile_addr(p, cb, tile + i, c->srca_fmt, at, "copy_tile (-> SrcA -> DST)");
        std::memcpy(item.bytes.data() + size_t(i) * tb, t, tb);
    }
    uint64_t start = p->clock;
    work_at("unpack_copy_tile", at, count * unpack_cost(c->srca_fmt), cb, tile);
    push_src(p, item, start, count, at);
}

void unpack_binary(uint32_t cb_a, uint32_t cb_b, uint32_t tile_a, uint32_t tile_b, bool bcast_rows, Where at) {
    Proc *p = cur(at);
    Core *c = p->core;
    SrcItem &item = src_slot_for_unpack(p, at);
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
    work_at("matmul_block", at, double(rt_dim) * ct_dim * per_tile + cost("matmul_call"), dst_index, rt_dim * ct_dim,
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
    for (uint32_t i = 0; i < count; ++i)
        copy_tile_to_dst(item.bytes.data() + size_t(i) * tb, item.fmt, mc, false,
                         math_dst_tile(p, dst_index + i, at, "copy_tile"));
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

// =============================================================================================
// Driver: read the program, run, write results
// =============================================================================================

namespace kemu {
namespace {

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "kgen-emu: %s\n", msg.c_str());
    std::exit(2);
}

void crash_handler(int sig, siginfo_t *info, void *) {
    char buf[512];
    int n;
    if (g_cur)
        n = std::snprintf(buf, sizeof buf,
                          "kgen-emu: kernel %s on core (%d,%d) %s crashed (signal %d, address %p); last call at %s:%d\n",
                          g_cur->kernel.c_str(), g_cur->core->x, g_cur->core->y, PROC_NAMES[g_cur->kind], sig,
                          info->si_addr, g_cur->recent_count ? g_cur->recent[(g_cur->recent_next + 11) % 12].file : "?",
                          g_cur->recent_count ? g_cur->recent[(g_cur->recent_next + 11) % 12].line : 0);
    else
        n = std::snprintf(buf, sizeof buf, "kgen-emu: crashed (signal %d) outside kernel code\n", sig);
    if (write(2, buf, static_cast<size_t>(n)) < 0) {
    }
    _exit(3);
}

void install_crash_handler() {
    static std::vector<char> alt(1 << 16);
    stack_t ss{};
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = crash_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    sigaction(SIGFPE, &sa, nullptr);
    sigaction(SIGILL, &sa, nullptr);
    sigaction(SIGABRT, &sa, nullptr);
}

struct Output {
    std::string name, file;
    uint32_t addr, page_size, num_pages;
};

std::string deadlock_report() {
    std::string r = "deadlock: no processor can make progress.\n";
    for (auto &pp : M.procs) {
        Proc *p = pp.get();
        if (p->done) continue;
        r += fmt_str("  core (%d,%d) %-13s kernel %-22s waits at %s: %s\n", p->core->x, p->core->y, PROC_NAMES[p->kind],
                     p->kernel.c_str(), where_str(p->wait_at).c_str(), wait_text(p).c_str());
        r += "      last ops:";
        for (int i = 0; i < p->recent_count; ++i) {
            const Op &o = p->recent[(p->recent_next - p->recent_count + i + 12) % 12];
            r += fmt_str(" %s(%u,%u)@%d", o.name, o.a, o.b, o.line);
        }
        r += "\n";
    }
    int finished = 0;
    for (auto &pp : M.procs) finished += pp->done;
    r += fmt_str("  (%d of %zu processors finished)\n", finished, M.procs.size());
    return r;
}

// End-of-kernel checks of a processor that returned from kernel_main.
void end_checks(Proc *p) {
    Core *c = p->core;
    Where at{"(end of kernel)", 0};
    Proc *saved = g_cur;
    g_cur = p;
    if (p->kind == PACK && c->l1_acc)
        hazard("L1 accumulation left on", at,
               fmt_str("kernel %s ends on core (%d,%d) with packer L1 accumulation still on (pack_reconfig_l1_acc(0) "
                       "missing): the next program's packs would add into L1",
                       p->kernel.c_str(), c->x, c->y));
    if (p->kind == MATH && c->math_holds)
        hazard("DST protocol", at, fmt_str("kernel %s ends with math holding a DST section never committed", p->kernel.c_str()));
    if (p->kind == PACK && c->pack_holds)
        hazard("DST protocol", at, fmt_str("kernel %s ends with pack holding a DST section never released", p->kernel.c_str()));
    g_cur = saved;
}

// The program file kgen.proof.emulate writes (ProgramFile.text): machine lines set M directly; the
// per-core lines are kept until the cores exist.
struct KernelLine {
    std::string name, path;
    ProcKind kind;
};
struct RunLine {
    int core, kernel;
    std::vector<uint32_t> args, common;
};
struct CBLine {
    int core, index, fmt;
    uint32_t page, pages, offset;
};
struct SemLine {
    int core, id;
    uint32_t offset, initial;
};
struct InputLine {
    uint32_t addr, page_size, num_pages;
    std::string file;
    bool l1 = false;      // interleaved over the L1 banks, not DRAM
};
struct ProgramLines {
    uint64_t seed = 0;
    std::string trace_path;
    std::vector<std::array<int, 5>> cores;      // id, x, y, noc_x, noc_y
    std::vector<CBLine> cbs;
    std::vector<SemLine> sems;
    std::map<int, KernelLine> kernels;
    std::vector<RunLine> runs;
    std::vector<InputLine> inputs;
    std::vector<Output> outputs;
    // L1-sharded tensors: a core's shard written into its L1 before the run (`l1_input core addr
    // bytes file`), or read back from it after (`l1_output`); addr is an L1 address as in `cb` lines.
    struct L1Data { int core; uint32_t addr, bytes; std::string file; };
    std::vector<L1Data> l1_inputs, l1_outputs;
};

ProcKind proc_kind(const std::string &kind) {
    return kind == "brisc" ? BRISC : kind == "ncrisc" ? NCRISC : kind == "unpack" ? UNPACK : kind == "math" ? MATH : PACK;
}

ProgramLines read_program(const std::string &program_path) {
    std::ifstream in(program_path);
    if (!in) die("cannot read " + program_path);
    ProgramLines prog;
    std::string line, key;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        if (!(ls >> key) || key[0] == '#') continue;
        if (key == "kgen-emu") {
            int version;
            ls >> version;
            if (version != 1) die("program format version " + std::to_string(version) + "; this emulator reads 1");
        } else if (key == "arch") {
            int wh;
            ls >> M.arch >> wh;
            M.wormhole = wh != 0;
        } else if (key == "l1") {
            ls >> M.l1_bytes;
        } else if (key == "dram") {
            ls >> M.num_banks >> M.bank_bytes >> M.dram_align;
        } else if (key == "numerics") {
            std::string m;
            ls >> m;
            M.fast = m == "fast";
        } else if (key == "schedule") {
            std::string mode;
            ls >> mode >> prog.seed;
            M.random_schedule = mode == "random";
        } else if (key == "dst_tiles") {
            ls >> M.dst_tiles_full;
        } else if (key == "clock_mhz") {
            ls >> M.clock_mhz;
        } else if (key == "cycles") {
            std::string k;
            double v;
            while (ls >> k >> v) M.cycles[k] = v;
        } else if (key == "core") {
            std::array<int, 5> a{};
            for (int &v : a) ls >> v;
            prog.cores.push_back(a);
        } else if (key == "cb") {
            CBLine c{};
            ls >> c.core >> c.index >> c.fmt >> c.page >> c.pages >> c.offset;
            prog.cbs.push_back(c);
        } else if (key == "sem") {
            SemLine s{};
            ls >> s.core >> s.id >> s.offset >> s.initial;
            prog.sems.push_back(s);
        } else if (key == "kernel") {
            int id;
            std::string name, kind, path;
            ls >> id >> name >> kind >> path;
            prog.kernels[id] = KernelLine{name, path, proc_kind(kind)};
        } else if (key == "run") {
            RunLine r{};
            size_t n;
            ls >> r.core >> r.kernel >> n;
            r.args.resize(n);
            for (auto &v : r.args) ls >> v;
            ls >> n;
            r.common.resize(n);
            for (auto &v : r.common) ls >> v;
            prog.runs.push_back(r);
        } else if (key == "input" || key == "l1_interleaved_input") {
            InputLine i{};
            ls >> i.addr >> i.page_size >> i.num_pages >> i.file;
            i.l1 = key == "l1_interleaved_input";
            prog.inputs.push_back(i);
        } else if (key == "output") {
            Output o{};
            ls >> o.name >> o.addr >> o.page_size >> o.num_pages >> o.file;
            prog.outputs.push_back(o);
        } else if (key == "l1_input" || key == "l1_output") {
            ProgramLines::L1Data d{};
            ls >> d.core >> d.addr >> d.bytes >> d.file;
            (key == "l1_input" ? prog.l1_inputs : prog.l1_outputs).push_back(d);
        } else if (key == "trace") {
            ls >> prog.trace_path;
        } else {
            die("unknown program line: " + line);
        }
    }
    return prog;
}

// L1: one 2 MiB slot per core below 2 GiB; then each core's CBs and semaphores in its slot.
void make_cores(const ProgramLines &prog) {
    size_t ncores = prog.cores.size();
    size_t region = (ncores + 1) * L1_SLOT;
    void *mem = mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) die("cannot map L1 below 4 GiB (MAP_32BIT)");
    uintptr_t base = (reinterpret_cast<uintptr_t>(mem) + L1_SLOT - 1) & ~uintptr_t(L1_SLOT - 1);
    if (base + ncores * L1_SLOT > (uintptr_t(1) << 32)) die("L1 region is not below 4 GiB");
    M.l1_region = reinterpret_cast<uint8_t *>(base);
    M.l1_region_base = static_cast<uint32_t>(base);
    for (auto &a : prog.cores) {
        auto c = std::make_unique<Core>();
        c->id = a[0];
        c->x = a[1];
        c->y = a[2];
        c->noc_x = a[3];
        c->noc_y = a[4];
        if (c->id != int(M.cores.size())) die("core ids must be 0..n-1 in order");
        c->l1 = M.l1_region + size_t(c->id) * L1_SLOT;
        c->l1_base = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(c->l1));
        c->math.wormhole_quirk = M.wormhole;
        c->dst.assign(size_t(M.dst_tiles_full) * TILE_DATUMS, 0u);
        M.by_noc[{c->noc_x, c->noc_y}] = c.get();
        M.cores.push_back(std::move(c));
    }
    for (auto &cl : prog.cbs) {
        Core *c = M.cores.at(cl.core).get();
        CB &b = c->cbs[cl.index];
        b.configured = true;
        b.index = cl.index;
        b.fmt = static_cast<DataFormat>(cl.fmt);
        b.page_size = cl.page;
        b.num_pages = cl.pages;
        b.base = c->l1_base + cl.offset;
        b.page_state.assign(cl.pages, 0);
    }
    for (auto &s : prog.sems) {
        Core *c = M.cores.at(s.core).get();
        if (c->sem_offsets.size() <= size_t(s.id)) c->sem_offsets.resize(s.id + 1);
        c->sem_offsets[s.id] = s.offset;
        std::memcpy(c->l1 + s.offset, &s.initial, 4);
    }
}

// DRAM: pages interleaved over the banks, each at the bank's aligned page slot.
uint8_t *dram_page(uint32_t addr, uint32_t page_size, uint32_t pg, bool l1 = false) {
    uint32_t aligned = (page_size + M.dram_align - 1) / M.dram_align * M.dram_align;
    uint64_t off = addr + uint64_t(pg / M.num_banks) * aligned;
    if (off + page_size > M.bank_bytes) die("a tensor does not fit its DRAM bank");
    return (l1 ? M.l1_banks : M.dram)[pg % M.num_banks].data() + off;
}

uint8_t *core_l1(const ProgramLines::L1Data &d) {
    if (d.core < 0 || size_t(d.core) >= M.cores.size() || uint64_t(d.addr) + d.bytes > M.l1_bytes)
        die("an L1 shard lies outside its core's L1");
    return M.cores[size_t(d.core)]->l1 + d.addr;
}

void load_inputs(const ProgramLines &prog) {
    M.dram.assign(M.num_banks, std::vector<uint8_t>(M.bank_bytes, 0));
    M.l1_banks.assign(M.num_banks, std::vector<uint8_t>(M.bank_bytes, 0));
    for (auto &i : prog.inputs) {
        std::ifstream f(i.file, std::ios::binary);
        std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (data.size() != size_t(i.page_size) * i.num_pages) die("input " + i.file + " has the wrong size");
        for (uint32_t pg = 0; pg < i.num_pages; ++pg)
            std::memcpy(dram_page(i.addr, i.page_size, pg, i.l1), data.data() + size_t(pg) * i.page_size, i.page_size);
    }
    for (auto &d : prog.l1_inputs) {
        std::ifstream f(d.file, std::ios::binary);
        std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (data.size() != d.bytes) die("L1 shard " + d.file + " has the wrong size");
        std::memcpy(core_l1(d), data.data(), d.bytes);
        Core *c = M.cores[size_t(d.core)].get();
        for (auto &b : c->cbs)
            if (b.configured && b.base >= c->l1_base + d.addr && b.end() <= c->l1_base + d.addr + d.bytes) b.host_data = true;
    }
}

void write_outputs(const ProgramLines &prog) {
    for (auto &o : prog.outputs) {
        std::ofstream f(o.file, std::ios::binary);
        for (uint32_t pg = 0; pg < o.num_pages; ++pg)
            f.write(reinterpret_cast<const char *>(dram_page(o.addr, o.page_size, pg)), o.page_size);
    }
    for (auto &d : prog.l1_outputs) {
        std::ofstream f(d.file, std::ios::binary);
        f.write(reinterpret_cast<const char *>(core_l1(d)), d.bytes);
    }
}

// One processor per run line, with its kernel's kernel_main, its args, its view of the core's CBs
// and its own coroutine stack.
void make_procs(const ProgramLines &prog) {
    std::map<int, void (*)()> entries;
    for (auto &kv : prog.kernels) {
        void *h = dlopen(kv.second.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) die(std::string("cannot load kernel: ") + dlerror());
        void *sym = dlsym(h, "_Z11kernel_mainv");
        if (!sym) die("kernel " + kv.second.path + " has no kernel_main()");
        entries[kv.first] = reinterpret_cast<void (*)()>(sym);
    }
    for (auto &r : prog.runs) {
        const KernelLine &k = prog.kernels.at(r.kernel);
        auto p = std::make_unique<Proc>();
        p->id = static_cast<int>(M.procs.size());
        p->core = M.cores.at(r.core).get();
        p->kind = k.kind;
        p->kernel = k.name;
        p->entry = entries.at(r.kernel);
        p->args = r.args;
        p->common_args = r.common;
        if (p->core->procs[p->kind]) die("two kernels on one processor of a core");
        p->core->procs[p->kind] = p.get();
        for (int i = 0; i < MAX_CBS; ++i) {
            const CB &b = p->core->cbs[i];
            if (!b.configured) continue;
            LocalCBInterface &l = p->local[i];
            l.fifo_size = b.page_size * b.num_pages;
            l.fifo_limit = b.base + l.fifo_size;
            l.fifo_page_size = b.page_size;
            l.fifo_num_pages = b.num_pages;
            l.fifo_rd_ptr = l.fifo_wr_ptr = b.base;
        }
        p->stack_bytes = 1 << 20;
        p->stack = mmap(nullptr, p->stack_bytes + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p->stack == MAP_FAILED) die("cannot map a coroutine stack");
        mprotect(p->stack, 4096, PROT_NONE);  // guard page: a stack overflow faults
        M.procs.push_back(std::move(p));
    }
}

void open_trace(const std::string &trace_path) {
    if (trace_path.empty()) return;
    M.trace = std::fopen(trace_path.c_str(), "w");
    if (!M.trace) die("cannot write " + trace_path);
    std::fprintf(M.trace, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{\"name\":\"kgen emulate\",\"ph\":\"M\",\"pid\":0,\"args\":{}}");
    for (auto &c : M.cores)
        std::fprintf(M.trace, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"core (%d,%d)\"}}", c->id,
                     c->x, c->y);
    for (auto &p : M.procs)
        std::fprintf(M.trace, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s: %s\"}}",
                     p->core->id, p->kind, PROC_NAMES[p->kind], p->kernel.c_str());
}

void close_trace() {
    if (!M.trace) return;
    std::fprintf(M.trace, "\n]}\n");
    std::fclose(M.trace);
}

// Run every processor to its end, one coroutine at a time: the runnable one with the lowest clock,
// or a random one under the random schedule. Returns the deadlock report, empty if none.
std::string schedule() {
    std::string deadlock;
    std::vector<Proc *> runnable;
    while (!M.stop) {
        runnable.clear();
        bool all_done = true;
        for (auto &pp : M.procs) {
            Proc *p = pp.get();
            if (p->done) continue;
            all_done = false;
            if (ready(p)) runnable.push_back(p);
        }
        if (all_done) break;
        if (runnable.empty()) {
            deadlock = deadlock_report();
            M.stop_reason = "deadlock";
            break;
        }
        Proc *next;
        if (M.random_schedule) {
            next = runnable[M.rng() % runnable.size()];
        } else {
            next = runnable[0];
            for (Proc *p : runnable)
                if (p->clock < next->clock) next = p;
        }
        g_cur = next;
        if (!next->started) {
            next->started = true;
            getcontext(&next->ctx);
            next->ctx.uc_stack.ss_sp = static_cast<char *>(next->stack) + 4096;
            next->ctx.uc_stack.ss_size = next->stack_bytes;
            next->ctx.uc_link = &g_sched_ctx;
            makecontext(&next->ctx, trampoline, 0);
            g_starting = next;
        }
        swapcontext(&g_sched_ctx, &next->ctx);
        if (next->done && !M.stop) end_checks(next);
        g_cur = nullptr;
    }
    return deadlock;
}

// The result file kgen.proof.emulate reads: status, hazards, and per processor its cycles and op counts.
std::string result_json(double seconds, const std::string &deadlock) {
    std::string status = M.stop_reason.empty() ? "ok" : (M.stop_reason == "deadlock" ? "deadlock" : "stopped");
    std::string js = "{\n\"status\": \"" + status + "\",\n\"stop_reason\": \"";
    json_escape(js, M.stop_reason);
    js += fmt_str("\",\n\"seconds\": %.6f,\n\"deadlock\": \"", seconds);
    json_escape(js, deadlock);
    js += "\",\n\"hazards\": [";
    for (size_t i = 0; i < M.hazards.size(); ++i) {
        const Hazard &h = M.hazards[i];
        js += i ? ",\n" : "\n";
        js += "{\"kind\": \"";
        json_escape(js, h.kind);
        js += "\", \"file\": \"";
        json_escape(js, h.file);
        js += fmt_str("\", \"line\": %d, \"core\": [%d, %d], \"processor\": \"%s\", \"message\": \"", h.line,
                      h.core >= 0 ? M.cores[h.core]->x : -1, h.core >= 0 ? M.cores[h.core]->y : -1,
                      h.proc >= 0 ? PROC_NAMES[h.proc] : "");
        json_escape(js, h.message);
        js += "\"}";
    }
    js += "],\n\"processors\": [";
    uint64_t max_clock = 0;
    for (size_t i = 0; i < M.procs.size(); ++i) {
        Proc *p = M.procs[i].get();
        max_clock = std::max(max_clock, p->clock);
        js += i ? ",\n" : "\n";
        js += fmt_str("{\"core\": [%d, %d], \"processor\": \"%s\", \"kernel\": \"%s\", \"finished\": %s, \"cycles\": %llu, "
                      "\"busy_cycles\": %llu, \"stalls\": %llu, \"stall_cycles\": %llu, \"ops\": {",
                      p->core->x, p->core->y, PROC_NAMES[p->kind], p->kernel.c_str(), p->done ? "true" : "false",
                      (unsigned long long)p->clock, (unsigned long long)p->busy_cycles, (unsigned long long)p->stalls,
                      (unsigned long long)p->stall_cycles);
        bool first = true;
        for (auto &kv : p->ops) {
            js += first ? "\"" : ", \"";
            first = false;
            json_escape(js, kv.first);
            js += fmt_str("\": %llu", (unsigned long long)kv.second);
        }
        js += "}}";
    }
    js += fmt_str("],\n\"cycles\": %llu,\n\"trace_events\": %llu\n}\n", (unsigned long long)max_clock,
                  (unsigned long long)M.trace_events);
    return js;
}

int run(const std::string &program_path, const std::string &result_path) {
    ProgramLines prog = read_program(program_path);
    M.rng.seed(prog.seed);
    make_cores(prog);
    load_inputs(prog);
    make_procs(prog);
    open_trace(prog.trace_path);

    install_crash_handler();
    auto t0 = std::chrono::steady_clock::now();
    std::string deadlock = schedule();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    close_trace();

    write_outputs(prog);
    std::ofstream rf(result_path);
    rf << result_json(seconds, deadlock);
    return 0;
}

}  // namespace
}  // namespace kemu

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: kgen-emu PROGRAM RESULT.json\n");
        return 2;
    }
    return kemu::run(argv[1], argv[2]);
}
