// kgen host emulator: the driver. Reads the program, builds the machine, runs the scheduler and
// writes the results (outputs, diagnoses, counters, trace).

#include "runtime_internal.h"


namespace kemu {

using namespace detail;

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
    bool l1 = false;      // interleaved over the L1 banks, not DRAM
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
    std::vector<bool> args_l1, common_l1;   // the value is an offset into the core's L1 ("L<offset>")
};
// A run line's arg: a number, or "L<offset>", an L1 address on the core that runs the kernel (a
// sharded tensor's local shard), which kernels see as the host address of that byte of the core's L1.
static void read_run_args(std::istringstream &ls, std::vector<uint32_t> &values, std::vector<bool> &l1) {
    size_t n;
    ls >> n;
    values.resize(n);
    l1.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
        std::string tok;
        ls >> tok;
        l1[i] = !tok.empty() && tok[0] == 'L';
        values[i] = static_cast<uint32_t>(std::stoul(l1[i] ? tok.substr(1) : tok));
    }
}
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
    // A tensor sharded over the DRAM banks: a bank's shard written at addr of that bank before the run
    // (`dram_shard_input bank addr bytes file`); `bank_worker bank core`: the core paired with a bank.
    struct DramShard { uint32_t bank, addr, bytes; std::string file; };
    std::vector<DramShard> dram_shards;
    std::vector<std::pair<uint32_t, int>> bank_workers;
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
            ls >> r.core >> r.kernel;
            read_run_args(ls, r.args, r.args_l1);
            read_run_args(ls, r.common, r.common_l1);
            prog.runs.push_back(r);
        } else if (key == "input" || key == "l1_interleaved_input") {
            InputLine i{};
            ls >> i.addr >> i.page_size >> i.num_pages >> i.file;
            i.l1 = key == "l1_interleaved_input";
            prog.inputs.push_back(i);
        } else if (key == "output" || key == "l1_interleaved_output") {
            Output o{};
            ls >> o.name >> o.addr >> o.page_size >> o.num_pages >> o.file;
            o.l1 = key == "l1_interleaved_output";
            prog.outputs.push_back(o);
        } else if (key == "l1_input" || key == "l1_output") {
            ProgramLines::L1Data d{};
            ls >> d.core >> d.addr >> d.bytes >> d.file;
            (key == "l1_input" ? prog.l1_inputs : prog.l1_outputs).push_back(d);
        } else if (key == "dram_shard_input") {
            ProgramLines::DramShard d{};
            ls >> d.bank >> d.addr >> d.bytes >> d.file;
            prog.dram_shards.push_back(d);
        } else if (key == "bank_worker") {
            uint32_t bank;
            int core;
            ls >> bank >> core;
            prog.bank_workers.push_back({bank, core});
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
    M.bank_worker.assign(M.num_banks, -1);
    for (auto &[bank, core] : prog.bank_workers)
        if (bank < M.num_banks) M.bank_worker[bank] = core;
    for (auto &d : prog.dram_shards) {
        std::ifstream f(d.file, std::ios::binary);
        std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (data.size() != d.bytes) die("DRAM shard " + d.file + " has the wrong size");
        if (d.bank >= M.num_banks || uint64_t(d.addr) + d.bytes > M.bank_bytes) die("DRAM shard " + d.file + " lies outside its bank");
        std::memcpy(M.dram[d.bank].data() + d.addr, data.data(), d.bytes);
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
            f.write(reinterpret_cast<const char *>(dram_page(o.addr, o.page_size, pg, o.l1)), o.page_size);
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
        auto shared = M.cycles.find("dram_read_bytes_per_cycle.core" + std::to_string(r.core) + "." +
                                    PROC_NAMES[p->kind]);
        p->dram_read_rate = shared != M.cycles.end() ? shared->second : cost("dram_read_bytes_per_cycle");
        p->entry = entries.at(r.kernel);
        p->args = r.args;
        p->common_args = r.common;
        for (size_t i = 0; i < r.args.size(); ++i)
            if (r.args_l1[i]) p->args[i] += p->core->l1_base;
        for (size_t i = 0; i < r.common.size(); ++i)
            if (r.common_l1[i]) p->common_args[i] += p->core->l1_base;
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
