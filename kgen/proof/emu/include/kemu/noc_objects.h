// Host model of TT-Metal 0.81.1's object API for data movement: `Noc` (api/dataflow/noc.h), the
// endpoints (api/dataflow/endpoints.h), `CoreLocalMem` (api/core_local_mem.h), the NoC traits of
// TensorAccessor and DataflowBuffer (api/tensor/noc_traits.h, api/dataflow/dataflow_buffer.h) and
// `Semaphore` (api/semaphore.h). TT-Metal's own reader kernels are written against it.
//
// Every transfer resolves its source and destination through `noc_traits_t<T>` exactly as TT-Metal
// does (a NoC address for the remote side, a local L1 address for the local side) and then calls the
// same emulator entry points as the flat `noc_async_*` API, so hazards and op counts are the same
// whichever API a kernel uses. NocOptions that only steer hardware queues (virtual channels,
// transaction ids, posted writes, linked multicasts) have no modelled effect.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "api/dataflow/dataflow_buffer.h"
#include "kemu/dataflow_api.h"
// Metal 2.0 binding tokens: TT-Metal's own headers (no hardware access in them), found when the fetched
// tree's tt_metal/hw/inc is on the include path after this model's (port-check puts it there for
// TT-Metal's Metal 2.0 kernels; see kgen/proof/ttmetal2.py).
#if __has_include("api/dataflow/semaphore_binding_token.h")
#include "api/dataflow/semaphore_binding_token.h"
#define KEMU_METAL2_BINDINGS 1
#endif

enum class NocOptions : uint32_t {
    DEFAULT = 0,
    TXN_ID = 1u << 0,
    POSTED = 1u << 1,
    CUSTOM_VC = 1u << 2,
    MCAST_INCL_SRC = 1u << 3,
    INLINE_L1 = 1u << 4,
    INLINE_REG = 1u << 5,
};
constexpr NocOptions operator|(NocOptions a, NocOptions b) noexcept {
    return static_cast<NocOptions>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr bool has_flag(NocOptions opts, NocOptions flag) noexcept {
    return (static_cast<uint32_t>(opts) & static_cast<uint32_t>(flag)) != 0;
}

struct NocOptVals {
    uint32_t vc = NOC_UNICAST_WRITE_VC;
    uint32_t trid = 0;
};

struct DataflowBufferArgs {
    uint32_t offset_bytes{};
};

// How a type takes part in a NoC transfer: its argument structs (the designated initialisers
// kernels write) and the address it resolves to. A type without a specialisation cannot be used.
template <typename T>
struct noc_traits_t {
    static_assert(sizeof(T) == 0, "NoC transactions are not supported for this type");
};

// ---- endpoints ---------------------------------------------------------------------------------
struct UnicastEndpoint {};
struct PrecomposedUnicastEndpoint {};
struct MulticastEndpoint {};
enum class AllocatorBankType { L1, DRAM };
template <AllocatorBankType bank_type>
struct AllocatorBank {};

template <bool DRAM>
FORCE_INLINE uint64_t get_noc_addr_from_bank_id(uint32_t bank_id, uint32_t bank_address_offset,
                                                uint8_t noc = noc_index, KEMU_WHERE) {
    (void)noc;
    return kemu::bank_noc_addr(bank_id, bank_address_offset, DRAM, KEMU_AT);
}

template <>
struct noc_traits_t<UnicastEndpoint> {
    struct src_args_type {
        uint32_t noc_x{};
        uint32_t noc_y{};
        uint32_t addr{};
    };
    using dst_args_type = src_args_type;
    static uint64_t src_noc(const UnicastEndpoint &, const src_args_type &a, kemu::Where) {
        return kemu::noc_xy_addr(a.noc_x, a.noc_y, a.addr);
    }
    static uint64_t dst_noc(const UnicastEndpoint &e, const dst_args_type &a, kemu::Where at) { return src_noc(e, a, at); }
    static uint32_t src_l1(const UnicastEndpoint &, const src_args_type &a, kemu::Where) { return a.addr; }
    static uint32_t dst_l1(const UnicastEndpoint &, const dst_args_type &a, kemu::Where) { return a.addr; }
};

template <>
struct noc_traits_t<PrecomposedUnicastEndpoint> {
    struct src_args_type {
        uint64_t noc_addr{};
    };
    using dst_args_type = src_args_type;
    static uint64_t src_noc(const PrecomposedUnicastEndpoint &, const src_args_type &a, kemu::Where) { return a.noc_addr; }
    static uint64_t dst_noc(const PrecomposedUnicastEndpoint &, const dst_args_type &a, kemu::Where) { return a.noc_addr; }
};

template <>
struct noc_traits_t<MulticastEndpoint> {
    struct dst_args_mcast_type {
        uint32_t noc_x_start{};
        uint32_t noc_y_start{};
        uint32_t noc_x_end{};
        uint32_t noc_y_end{};
        uint32_t addr{};
    };
    struct src_args_type {};
    struct dst_args_type {};
    static uint64_t dst_mcast(const MulticastEndpoint &, const dst_args_mcast_type &a, kemu::Where) {
        return kemu::noc_mcast_addr(a.noc_x_start, a.noc_y_start, a.noc_x_end, a.noc_y_end, a.addr);
    }
};

template <AllocatorBankType bank_type>
struct noc_traits_t<AllocatorBank<bank_type>> {
    struct src_args_type {
        uint32_t bank_id{};
        uint32_t addr{};
    };
    using dst_args_type = src_args_type;
    static uint64_t src_noc(const AllocatorBank<bank_type> &, const src_args_type &a, kemu::Where at) {
        return kemu::bank_noc_addr(a.bank_id, a.addr, bank_type == AllocatorBankType::DRAM, at);
    }
    static uint64_t dst_noc(const AllocatorBank<bank_type> &b, const dst_args_type &a, kemu::Where at) {
        return src_noc(b, a, at);
    }
};

// ---- local memory --------------------------------------------------------------------------------
template <typename T, typename AddressType = uintptr_t>
class CoreLocalMem {
public:
    CoreLocalMem(AddressType address) : address_(address) {}
    CoreLocalMem(T *ptr) : address_(reinterpret_cast<AddressType>(ptr)) {}
    AddressType get_address() const { return address_; }
    T *get_unsafe_ptr() const { return reinterpret_cast<T *>(address_); }
    T &operator*() const { return *get_unsafe_ptr(); }
    T *operator->() const { return get_unsafe_ptr(); }
    T &operator[](std::ptrdiff_t i) const { return get_unsafe_ptr()[i]; }
    CoreLocalMem operator+(std::ptrdiff_t n) const { return CoreLocalMem(address_ + n * sizeof(T)); }
    CoreLocalMem operator-(std::ptrdiff_t n) const { return CoreLocalMem(address_ - n * sizeof(T)); }
    CoreLocalMem &operator+=(std::ptrdiff_t n) { address_ += n * sizeof(T); return *this; }
    CoreLocalMem &operator-=(std::ptrdiff_t n) { address_ -= n * sizeof(T); return *this; }
    CoreLocalMem &operator++() { address_ += sizeof(T); return *this; }
    bool operator==(const CoreLocalMem &o) const { return address_ == o.address_; }
    bool operator!=(const CoreLocalMem &o) const { return address_ != o.address_; }

private:
    AddressType address_;
};

template <typename T, typename AddressType>
struct noc_traits_t<CoreLocalMem<T, AddressType>> {
    struct src_args_type {
        AddressType offset_bytes = 0;
    };
    using dst_args_type = src_args_type;
    struct dst_args_mcast_type {};
    static uint32_t src_l1(const CoreLocalMem<T, AddressType> &m, const src_args_type &a, kemu::Where) {
        return static_cast<uint32_t>(m.get_address() + a.offset_bytes);
    }
    static uint32_t dst_l1(const CoreLocalMem<T, AddressType> &m, const dst_args_type &a, kemu::Where at) {
        return src_l1(m, a, at);
    }
};

// ---- tensors and dataflow buffers -------------------------------------------------------------
template <typename Args>
struct noc_traits_t<TensorAccessor<Args>> {
    struct src_args_type {
        uint32_t page_id{};
        uint32_t offset_bytes = 0;
    };
    using dst_args_type = src_args_type;
    static uint64_t src_noc(const TensorAccessor<Args> &t, const src_args_type &a, kemu::Where at) {
        return t.get_noc_addr(a.page_id, a.offset_bytes, noc_index, at.file, at.line);
    }
    static uint64_t dst_noc(const TensorAccessor<Args> &t, const dst_args_type &a, kemu::Where at) {
        return src_noc(t, a, at);
    }
};

// A DataflowBuffer is read at its read pointer and written at its write pointer (TT-Metal:
// get_noc_read_addr / get_noc_write_addr), plus the offset.
template <>
struct noc_traits_t<DataflowBuffer> {
    using src_args_type = DataflowBufferArgs;
    using dst_args_type = DataflowBufferArgs;
    struct dst_args_mcast_type {
        uint32_t noc_x_start{};
        uint32_t noc_y_start{};
        uint32_t noc_x_end{};
        uint32_t noc_y_end{};
        uint32_t offset_bytes{};
    };
    static uint32_t src_l1(const DataflowBuffer &b, const src_args_type &a, kemu::Where at) {
        return kemu::cb_read_ptr(b.get_id(), at) + a.offset_bytes;
    }
    static uint32_t dst_l1(const DataflowBuffer &b, const dst_args_type &a, kemu::Where at) {
        return kemu::cb_write_ptr(b.get_id(), at) + a.offset_bytes;
    }
    static uint64_t dst_mcast(const DataflowBuffer &b, const dst_args_mcast_type &a, kemu::Where at) {
        return kemu::noc_mcast_addr(a.noc_x_start, a.noc_y_start, a.noc_x_end, a.noc_y_end,
                                    kemu::cb_write_ptr(b.get_id(), at) + a.offset_bytes);
    }
};

// ---- the NoC -----------------------------------------------------------------------------------
class Noc {
public:
    enum class AddressType { NOC, LOCAL_L1 };
    static constexpr uint32_t INVALID_TXN_ID = 0xFFFFFFFF;

    template <typename T>
    using src_args_t = typename noc_traits_t<T>::src_args_type;
    template <typename T>
    using dst_args_t = typename noc_traits_t<T>::dst_args_type;
    template <typename T>
    using dst_args_mcast_t = typename noc_traits_t<T>::dst_args_mcast_type;

    Noc() : noc_id_(noc_index) {}
    explicit Noc(uint8_t noc_id) : noc_id_(noc_id) {}
    uint8_t get_noc_id() const { return noc_id_; }

    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              bool enable_noc_tracing = true, typename Src, typename Dst>
    void async_read(const Src &src, const Dst &dst, uint32_t size_bytes, const src_args_t<Src> &src_args,
                    const dst_args_t<Dst> &dst_args, const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        (void)noc_opts;
        kemu::noc_read(noc_traits_t<Src>::src_noc(src, src_args, KEMU_AT),
                       noc_traits_t<Dst>::dst_l1(dst, dst_args, KEMU_AT), size_bytes, KEMU_AT);
    }

    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              typename Src>
    void set_async_read_state(const Src &src, uint32_t size_bytes, const src_args_t<Src> &src_args,
                              const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        (void)src; (void)size_bytes; (void)src_args; (void)noc_opts;
        kemu::note_op("noc_async_read_set_state", KEMU_AT);
    }

    // The stateful form carries the full addresses too, so it is modelled as a plain read.
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              typename Src, typename Dst>
    void async_read_with_state(const Src &src, const Dst &dst, uint32_t size_bytes, const src_args_t<Src> &src_args,
                               const dst_args_t<Dst> &dst_args, const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        async_read<opts, max_page_size>(src, dst, size_bytes, src_args, dst_args, noc_opts, kemu_file, kemu_line);
    }

    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              bool enable_noc_tracing = true, typename Src, typename Dst>
    void async_write(const Src &src, const Dst &dst, uint32_t size_bytes, const src_args_t<Src> &src_args,
                     const dst_args_t<Dst> &dst_args, const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        (void)noc_opts;
        kemu::noc_write(noc_traits_t<Src>::src_l1(src, src_args, KEMU_AT),
                        noc_traits_t<Dst>::dst_noc(dst, dst_args, KEMU_AT), size_bytes, KEMU_AT);
    }

    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              typename Dst>
    void set_async_write_state(const Dst &dst, uint32_t size_bytes, const dst_args_t<Dst> &dst_args,
                               const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        (void)dst; (void)size_bytes; (void)dst_args; (void)noc_opts;
        kemu::note_op("noc_async_write_set_state", KEMU_AT);
    }

    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              typename Src, typename Dst>
    void async_write_with_state(const Src &src, const Dst &dst, uint32_t size_bytes, const src_args_t<Src> &src_args,
                                const dst_args_t<Dst> &dst_args, const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        async_write<opts, max_page_size>(src, dst, size_bytes, src_args, dst_args, noc_opts, kemu_file, kemu_line);
    }

    // num_dsts counts the cores the rectangle delivers to (TT-Metal: the acks the NoC waits for).
    template <NocOptions opts = NocOptions::DEFAULT, uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1,
              bool enable_noc_tracing = true, typename Src, typename Dst>
    void async_write_multicast(const Src &src, const Dst &dst, uint32_t size_bytes, uint32_t num_dsts,
                               const src_args_t<Src> &src_args, const dst_args_mcast_t<Dst> &dst_args,
                               bool linked = false, KEMU_WHERE) const {
        static_assert(!has_flag(opts, NocOptions::TXN_ID), "Mcasts with transaction id are not supported yet");
        static_assert(!has_flag(opts, NocOptions::POSTED), "Mcasts with posted transactions are not supported");
        (void)linked;
        kemu::noc_write_mcast(noc_traits_t<Src>::src_l1(src, src_args, KEMU_AT),
                              noc_traits_t<Dst>::dst_mcast(dst, dst_args, KEMU_AT), size_bytes, num_dsts,
                              has_flag(opts, NocOptions::MCAST_INCL_SRC), KEMU_AT);
    }

    template <NocOptions opts = NocOptions::DEFAULT, typename Dst>
    void inline_dw_write(const Dst &dst, uint32_t val, const dst_args_t<Dst> &dst_args, uint8_t be = 0xF,
                         const NocOptVals &noc_opts = {}, KEMU_WHERE) const {
        (void)noc_opts;
        if (be != 0xF) kemu::unsupported("Noc::inline_dw_write with a partial byte enable", KEMU_AT);
        kemu::noc_write_value(noc_traits_t<Dst>::dst_noc(dst, dst_args, KEMU_AT), val, KEMU_AT);
    }

    template <NocOptions opts = NocOptions::DEFAULT>
    void async_read_barrier(const NocOptVals & = {}, KEMU_WHERE) const {
        kemu::noc_barrier("noc_async_read_barrier", KEMU_AT);
    }
    template <NocOptions opts = NocOptions::DEFAULT>
    void async_write_barrier(const NocOptVals & = {}, KEMU_WHERE) const {
        kemu::noc_barrier("noc_async_write_barrier", KEMU_AT);
    }
    template <NocOptions opts = NocOptions::DEFAULT>
    void async_writes_flushed(const NocOptVals & = {}, KEMU_WHERE) const {
        kemu::noc_barrier("noc_async_writes_flushed", KEMU_AT);
    }
    void async_atomic_barrier(KEMU_WHERE) const { kemu::noc_barrier("noc_async_atomic_barrier", KEMU_AT); }
    void async_full_barrier(KEMU_WHERE) const { kemu::noc_barrier("noc_async_full_barrier", KEMU_AT); }

private:
    uint8_t noc_id_;
};

// ---- semaphores ----------------------------------------------------------------------------------
enum class ProgrammableCoreType : uint8_t { TENSIX = 0, ACTIVE_ETH = 1, IDLE_ETH = 2 };

// A semaphore id resolves to its word in this core's L1, as get_semaphore(id) does.
template <ProgrammableCoreType core_type = ProgrammableCoreType::TENSIX>
class Semaphore {
public:
    explicit Semaphore(uint32_t semaphore_id, KEMU_WHERE) : addr_(kemu::semaphore_addr(semaphore_id, KEMU_AT)) {}
#ifdef KEMU_METAL2_BINDINGS
    // Metal 2.0: from the binding token the JIT emits in namespace sem (kernel_bindings_generated.h).
    // Wormhole and Blackhole DM bindings are LOCAL_NONATOMIC, the word of get_semaphore(id).
    explicit Semaphore(SemaphoreBindingToken token, KEMU_WHERE)
        : addr_(kemu::semaphore_addr(token.id, KEMU_AT)) {
        if (token.scope == SemScope::COMPUTE_ATOMIC) kemu::unsupported("a COMPUTE_ATOMIC semaphore binding", KEMU_AT);
    }
#endif

    void up(uint32_t value, KEMU_WHERE) { kemu::sem_inc(kemu::noc_local_addr(addr_), value, KEMU_AT); }
    void down(uint32_t value, KEMU_WHERE) {
        kemu::sem_wait(ptr(), value, true, KEMU_AT);
        kemu::sem_set(ptr(), *ptr() - value, KEMU_AT);
    }
    void wait(uint32_t value, KEMU_WHERE) const { kemu::sem_wait(ptr(), value, false, KEMU_AT); }
    void wait_min(uint32_t value, KEMU_WHERE) const { kemu::sem_wait(ptr(), value, true, KEMU_AT); }
    void set(uint32_t value, KEMU_WHERE) { kemu::sem_set(ptr(), value, KEMU_AT); }
    uint32_t value() const { return *ptr(); }

    // Atomic increment of this semaphore's word on core (noc_x, noc_y).
    void up(const Noc &noc, uint32_t noc_x, uint32_t noc_y, uint32_t value, uint8_t vc = NOC_UNICAST_WRITE_VC,
            KEMU_WHERE) {
        (void)noc; (void)vc;
        kemu::sem_inc(kemu::noc_xy_addr(noc_x, noc_y, addr_), value, KEMU_AT);
    }

    // This core's value written to the same word on every core of the rectangle.
    template <NocOptions opts = NocOptions::DEFAULT>
    void set_multicast(const Noc &noc, uint32_t noc_x_start, uint32_t noc_y_start, uint32_t noc_x_end,
                       uint32_t noc_y_end, uint32_t num_dests, bool linked = false, KEMU_WHERE) {
        (void)noc; (void)linked;
        kemu::sem_set_mcast(addr_, kemu::noc_mcast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end, addr_),
                            num_dests, has_flag(opts, NocOptions::MCAST_INCL_SRC), KEMU_AT);
    }

    // This semaphore's value written into `dst_sem`'s word on one core / on a rectangle.
    template <ProgrammableCoreType dst_core_type = core_type>
    void relay_unicast(const Noc &noc, const Semaphore<dst_core_type> &dst_sem, uint32_t noc_x, uint32_t noc_y,
                       KEMU_WHERE) {
        (void)noc;
        kemu::noc_write(addr_, kemu::noc_xy_addr(noc_x, noc_y, dst_sem.l1_address()), 4, KEMU_AT);
    }
    template <NocOptions opts = NocOptions::DEFAULT, ProgrammableCoreType dst_core_type = core_type>
    void relay_multicast(const Noc &noc, const Semaphore<dst_core_type> &dst_sem, uint32_t noc_x_start,
                         uint32_t noc_y_start, uint32_t noc_x_end, uint32_t noc_y_end, uint32_t num_dests,
                         bool linked = false, KEMU_WHERE) {
        (void)noc; (void)linked;
        kemu::sem_set_mcast(addr_, kemu::noc_mcast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end,
                                                        dst_sem.l1_address()),
                            num_dests, has_flag(opts, NocOptions::MCAST_INCL_SRC), KEMU_AT);
    }
    uint32_t l1_address() const { return addr_; }

    void inc_multicast(const Noc &, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, KEMU_WHERE) {
        kemu::unsupported("Semaphore::inc_multicast", KEMU_AT);
    }

private:
    volatile uint32_t *ptr() const { return reinterpret_cast<volatile uint32_t *>(static_cast<uintptr_t>(addr_)); }
    uint32_t addr_;
};
