// kgen host emulator, internal: the machine's state and the helpers the API entry points
// (runtime_api.cpp) and the driver (runtime_driver.cpp) share; runtime_machine.cpp defines them.

#pragma once

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

namespace kemu::detail {


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
    // pages this processor pushed itself and has not popped: it may free them without a wait (TT-Metal's
    // block-sharded in0 reader pops c_0 so on a core without output work)
    uint64_t own_pushed[MAX_CBS]{};
    int last_ptr_cb = -1;  // the CB of the last get_read_ptr / get_write_ptr: the one a NoC transfer means
    // statistics
    std::map<std::string, uint64_t> ops;
    uint64_t stalls = 0, stall_cycles = 0, busy_cycles = 0;
    Op recent[12]{};
    int recent_next = 0, recent_count = 0;
    // what the next barrier waits for: the latency of the last read / write (DRAM or another core's L1)
    const char *last_read = "dram_read_latency", *last_write = "dram_write_latency";
    double dram_read_rate = 0;   // B/cycle of its interleaved DRAM reads: its share of the card's DRAM
};

struct SrcItem {
    enum Kind { MATMUL, COPY, BINARY } kind = MATMUL;
    uint32_t rt = 0, ct = 0, count = 0;
    bool bcast_rows = false;
    std::vector<std::unique_ptr<SrcBOperand>> in0;
    std::vector<std::unique_ptr<SrcAOperand>> in1;
    std::vector<uint8_t> bytes;      // COPY: raw tiles
    DataFormat fmt = DataFormat::Invalid;
    bool to_dest = false;            // COPY: unpacked straight into DST (the CB is UnpackToDestFp32)
    bool transpose = false;          // COPY: transpose_tile (TT's unpack with transpose_of_faces and within-face)
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
    // the unpacker is configured to write the CB straight into DST (Float32 -> Float32: UnpackToDestFp32)
    bool srca_to_dest = false, srcb_to_dest = false;
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
    // The core each DRAM bank pairs with (a DRAM-sharded tensor's reader of that bank), -1 for none:
    // its reads of that bank are bank-local and cost the bank's own bandwidth.
    std::vector<int> bank_worker;
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

struct NocTarget {
    uint8_t *ptr;
    Core *core;  // null for DRAM and L1 banks
    bool l1_bank = false;
    int dram_bank = -1;  // the DRAM bank read or written
};
constexpr uint32_t L1_BANK_Y = 48;

extern Machine M;
extern Proc *g_cur;
extern ucontext_t g_sched_ctx;
extern Proc *g_starting;

std::string fmt_str(const char *f, ...);
const char *format_name(DataFormat f);
double cost(const std::string &key);
double curve_at(const std::string &name, double x);
double unpack_cost(DataFormat f);
double unpack_shared_cost(DataFormat f);
std::string where_str(Where at);
void json_escape(std::string &out, const std::string &s);
void trace_event(Proc *p, const char *name, uint64_t start, uint64_t dur, const std::string &args = "");
void hazard(const char *kind, Where at, const std::string &message);
[[noreturn]] void fatal(const char *kind, Where at, const std::string &message);
void record(Proc *p, const char *name, Where at, uint32_t a = 0, uint32_t b = 0);
void work_cycles(const char *name, Where at, uint64_t cycles, uint32_t a = 0, uint32_t b = 0, const std::string &args = "");
void work_at(const char *name, Where at, double cycles, uint32_t a = 0, uint32_t b = 0, const std::string &args = "");
void work(const char *name, const char *cost_key, Where at, uint64_t times = 1, uint32_t a = 0, uint32_t b = 0,
          const std::string &args = "");
double multicast_issue(uint32_t dests);
double multicast_cycles(uint32_t bytes, uint32_t dests);
Proc *cur(Where at);

// Of `n` pages a processor pops, those it pushed itself come first: it knows they are there and may free them
// without a wait. Returns how many of them need a cb_wait_front.
inline uint32_t pop_own_pages(Proc *p, uint32_t cb, uint32_t n) {
    const uint32_t own = (uint32_t)std::min<uint64_t>(p->own_pushed[cb], n);
    p->own_pushed[cb] -= own;
    return n - own;
}
bool cb_front_ready(Core *c, uint32_t cb, uint32_t n);
bool cb_back_ready(Core *c, uint32_t cb, uint32_t n);
uint32_t dst_sections(Core *c);
uint64_t first_at(const std::deque<std::pair<uint64_t, uint64_t>> &events, uint64_t count);
void note_landed(Core *c, uint32_t offset, uint64_t when);
uint64_t landed_at(Core *c, uint32_t offset);
bool ready(Proc *p);
uint64_t wake_time(Proc *p);
std::string wait_text(Proc *p);
void block_on(Proc *p, Wait w, Where at);
void maybe_yield(Where at);
void trampoline();
[[noreturn]] void switch_to_scheduler_forever();
Core *core_of_l1(uint32_t addr);
uint32_t l1_offset(uint32_t addr);
uint8_t *local_l1(Proc *p, uint32_t addr, uint32_t bytes, Where at, const char *what);
bool overlaps_pushed(CB &b, uint32_t addr, uint32_t bytes);
void note_read(CB &b, uint32_t addr, uint32_t bytes, Where at, const char *what);
bool inside_window(const CB &b, uint64_t first, uint64_t last, uint32_t addr, uint32_t bytes);
void check_write_into(Core *c, uint32_t addr, uint32_t bytes, int except, Where at, const char *what);
void check_read_from(Proc *p, uint32_t addr, uint32_t bytes, Where at, const char *what);
int viewed_cb(Proc *p, uint32_t cb);     // the CB an alias index views (MM_PARTIALS_RELOAD_ALIAS_CB), or -1
NocTarget resolve_noc(uint64_t noc_addr, uint32_t bytes, Where at, const char *what);
std::vector<Core *> mcast_targets(uint64_t mcast, bool loopback, Where at, const char *what);
void advance(LocalCBInterface &l, uint32_t &ptr, uint32_t pages);
CB &cb_checked(Proc *p, uint32_t cb, Where at, const char *what);

}  // namespace kemu::detail
