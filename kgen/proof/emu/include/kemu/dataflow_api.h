// Host model of TT-Metal 0.81.1's data-movement kernel API (api/dataflow/dataflow_api.h and the
// tensor accessor). NoC addresses are the emulator's own 64-bit encoding (kgen/proof/emu/src/runtime_internal.h);
// kernels only build them with these helpers and add byte offsets, as on the device. L1 addresses
// are host addresses below 4 GiB, so `reinterpret_cast<volatile uint32_t*>(l1_addr)` works as in a
// kernel. NoC transfers complete when issued; the barriers are ordering points for the scheduler.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api/debug/assert.h"
#include "hostdevcommon/common_values.hpp"
#include "kemu/common.h"
#include "kemu/data_format.h"

// The JIT writes chlkc_descriptors.h beside every kernel; from it the tile sizes and formats of the
// CBs are constant expressions, as in TT-Metal.
#if __has_include("chlkc_descriptors.h")
#include "chlkc_descriptors.h"
#define DATA_FORMATS_DEFINED
constexpr inline std::int32_t get_tile_size(const std::int32_t operand) { return unpack_tile_size[operand]; }
constexpr inline uint32_t get_tile_hw(const std::int32_t operand) {
    return uint32_t(unpack_tile_r_dim[operand]) * uint32_t(unpack_tile_c_dim[operand]);
}
constexpr inline uint32_t get_tile_num_faces(const std::int32_t operand) { return unpack_tile_num_faces[operand]; }
constexpr inline DataFormat get_dataformat(const std::int32_t operand) {
    return static_cast<DataFormat>(static_cast<uint32_t>(unpack_src_format[operand]));
}
#endif

#ifndef NOC_INDEX
#define NOC_INDEX 0
#endif
constexpr uint8_t noc_index = NOC_INDEX;

// Arch facts kernels compute with; kgen/proof/emulate.py passes them from configs/arch/*.toml.
#ifndef KEMU_DRAM_ALIGNMENT
#error "kgen emulator: KEMU_DRAM_ALIGNMENT must be defined (kgen/proof/emulate.py passes it)"
#endif
#ifndef KEMU_L1_ALIGNMENT
#error "kgen emulator: KEMU_L1_ALIGNMENT must be defined (kgen/proof/emulate.py passes it)"
#endif
#ifndef KEMU_NOC_MAX_BURST_SIZE
#error "kgen emulator: KEMU_NOC_MAX_BURST_SIZE must be defined (kgen/proof/emulate.py passes it)"
#endif
constexpr uint32_t DRAM_ALIGNMENT = KEMU_DRAM_ALIGNMENT;
constexpr uint32_t L1_ALIGNMENT = KEMU_L1_ALIGNMENT;
constexpr uint32_t NOC_MAX_BURST_SIZE = KEMU_NOC_MAX_BURST_SIZE;
// Virtual channels only steer NoC queues; the emulator delivers in issue order on every channel.
constexpr uint32_t NOC_UNICAST_WRITE_VC = 1;

// L1 is coherent on the host: nothing to invalidate.
FORCE_INLINE void invalidate_l1_cache() {}

FORCE_INLINE uint32_t get_write_ptr(uint32_t cb, KEMU_WHERE) { return kemu::cb_write_ptr(cb, KEMU_AT); }
FORCE_INLINE uint32_t get_read_ptr(uint32_t cb, KEMU_WHERE) { return kemu::cb_read_ptr(cb, KEMU_AT); }
FORCE_INLINE uint32_t get_semaphore(uint32_t semaphore_id, KEMU_WHERE) { return kemu::semaphore_addr(semaphore_id, KEMU_AT); }
template <uint32_t kind = 0>
FORCE_INLINE uint32_t get_semaphore(uint32_t semaphore_id, KEMU_WHERE) { return kemu::semaphore_addr(semaphore_id, KEMU_AT); }

FORCE_INLINE uint64_t get_noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;
    return kemu::noc_xy_addr(noc_x, noc_y, addr);
}
FORCE_INLINE uint64_t get_noc_addr(uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;
    return kemu::noc_local_addr(addr);
}
FORCE_INLINE uint64_t get_noc_multicast_addr(uint32_t noc_x_start, uint32_t noc_y_start, uint32_t noc_x_end,
                                             uint32_t noc_y_end, uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;
    return kemu::noc_mcast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end, addr);
}
FORCE_INLINE uint32_t my_x_coord() { return kemu::my_noc_x(); }
FORCE_INLINE uint32_t my_y_coord() { return kemu::my_noc_y(); }
// TT-Metal's `my_x[noc]` / `my_y[noc]`: this core's NoC coordinates (the same on both NoCs here).
struct KemuMyNocCoord {
    bool is_y;
    uint8_t operator[](uint32_t) const { return static_cast<uint8_t>(is_y ? kemu::my_noc_y() : kemu::my_noc_x()); }
};
constexpr KemuMyNocCoord my_x{false};
constexpr KemuMyNocCoord my_y{true};

// ---- NoC command-buffer registers ----------------------------------------------------------
// Kernels restore firmware defaults by writing a command buffer's control register (TT-Metal's
// NOC_CMD_BUF_WRITE_REG; the command bits of noc_parameters.h). The emulator's NoC has no such
// state, so the write is counted and has no modelled effect.
constexpr uint32_t NOC_CMD_CPY = 0x0 << 0;
constexpr uint32_t NOC_CMD_RD = 0x0 << 1;
constexpr uint32_t NOC_CMD_RESP_MARKED = 0x1 << 4;
constexpr uint32_t NOC_CMD_VC_STATIC = 0x1 << 7;
constexpr uint32_t NOC_CMD_STATIC_VC(uint32_t vc) { return vc << 13; }
constexpr uint32_t NCRISC_RD_CMD_BUF = 1;   // the command buffer index (noc_nonblocking_api.h)
constexpr uint32_t NOC_CTRL = 0x1C;         // the register's offset in the buffer (noc_parameters.h)
FORCE_INLINE void kemu_noc_cmd_buf_write_reg(uint32_t noc, uint32_t buf, uint32_t addr, uint32_t val, KEMU_WHERE) {
    (void)noc; (void)buf; (void)addr; (void)val;
    kemu::note_op("noc_cmd_buf_write_reg", KEMU_AT);
}
#define NOC_CMD_BUF_WRITE_REG(noc, buf, addr, val) kemu_noc_cmd_buf_write_reg((noc), (buf), (addr), (val))

// ---- NoC transfers ---------------------------------------------------------------------------
FORCE_INLINE void noc_async_read(uint64_t src_noc_addr, uint32_t dst_local_l1_addr, uint32_t size,
                                 uint8_t noc = noc_index, KEMU_WHERE) {
    (void)noc;
    kemu::noc_read(src_noc_addr, dst_local_l1_addr, size, KEMU_AT);
}
FORCE_INLINE void noc_async_write(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint32_t size,
                                  uint8_t noc = noc_index, KEMU_WHERE) {
    (void)noc;
    kemu::noc_write(src_local_l1_addr, dst_noc_addr, size, KEMU_AT);
}
FORCE_INLINE void noc_async_write_multicast(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast, uint32_t size,
                                            uint32_t num_dests, bool linked = false, uint8_t noc = noc_index,
                                            KEMU_WHERE) {
    (void)linked; (void)noc;
    kemu::noc_write_mcast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, false, KEMU_AT);
}
FORCE_INLINE void noc_async_write_multicast_loopback_src(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                                         uint32_t size, uint32_t num_dests, bool linked = false,
                                                         uint8_t noc = noc_index, KEMU_WHERE) {
    (void)linked; (void)noc;
    kemu::noc_write_mcast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, true, KEMU_AT);
}
FORCE_INLINE void noc_async_read_barrier(uint8_t noc = noc_index, KEMU_WHERE) { (void)noc; kemu::noc_barrier("noc_async_read_barrier", KEMU_AT); }
FORCE_INLINE void noc_async_write_barrier(uint8_t noc = noc_index, KEMU_WHERE) { (void)noc; kemu::noc_barrier("noc_async_write_barrier", KEMU_AT); }
FORCE_INLINE void noc_async_writes_flushed(uint8_t noc = noc_index, KEMU_WHERE) { (void)noc; kemu::noc_barrier("noc_async_writes_flushed", KEMU_AT); }
FORCE_INLINE void noc_async_posted_writes_flushed(uint8_t noc = noc_index, KEMU_WHERE) { (void)noc; kemu::noc_barrier("noc_async_posted_writes_flushed", KEMU_AT); }
FORCE_INLINE void noc_async_atomic_barrier(uint8_t noc = noc_index, KEMU_WHERE) { (void)noc; kemu::noc_barrier("noc_async_atomic_barrier", KEMU_AT); }
FORCE_INLINE void noc_async_full_barrier(uint8_t noc = noc_index, KEMU_WHERE) { (void)noc; kemu::noc_barrier("noc_async_full_barrier", KEMU_AT); }

// ---- semaphores ------------------------------------------------------------------------------
FORCE_INLINE void noc_semaphore_wait(volatile tt_l1_ptr uint32_t *sem_addr, uint32_t val, KEMU_WHERE) {
    kemu::sem_wait(sem_addr, val, false, KEMU_AT);
}
FORCE_INLINE void noc_semaphore_wait_min(volatile tt_l1_ptr uint32_t *sem_addr, uint32_t val, KEMU_WHERE) {
    kemu::sem_wait(sem_addr, val, true, KEMU_AT);
}
FORCE_INLINE void noc_semaphore_set(volatile tt_l1_ptr uint32_t *sem_addr, uint32_t val, KEMU_WHERE) {
    kemu::sem_set(sem_addr, val, KEMU_AT);
}
FORCE_INLINE void noc_semaphore_inc(uint64_t addr, uint32_t incr, uint8_t noc_id = noc_index, KEMU_WHERE) {
    (void)noc_id;
    kemu::sem_inc(addr, incr, KEMU_AT);
}
FORCE_INLINE void noc_semaphore_set_remote(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint8_t noc = noc_index,
                                           KEMU_WHERE) {
    (void)noc;
    kemu::noc_write(src_local_l1_addr, dst_noc_addr, 4, KEMU_AT);
}
FORCE_INLINE void noc_semaphore_set_multicast(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                              uint32_t num_dests, bool linked = false, uint8_t noc = noc_index,
                                              KEMU_WHERE) {
    (void)linked; (void)noc;
    kemu::sem_set_mcast(src_local_l1_addr, dst_noc_addr_multicast, num_dests, false, KEMU_AT);
}
FORCE_INLINE void noc_semaphore_set_multicast_loopback_src(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                                           uint32_t num_dests, bool linked = false,
                                                           uint8_t noc = noc_index, KEMU_WHERE) {
    (void)linked; (void)noc;
    kemu::sem_set_mcast(src_local_l1_addr, dst_noc_addr_multicast, num_dests, true, KEMU_AT);
}

// ---- tensor accessors (interleaved tensors; TT-Metal's ArgConfig bits) -------------------------
namespace tensor_accessor {
enum ArgConfig : uint32_t { None = 0, Sharded = 1 << 0, IsDram = 1 << 1, RuntimeRank = 1 << 2,
                            RuntimeNumBanks = 1 << 3, RuntimeTensorShape = 1 << 4, RuntimeShardShape = 1 << 5,
                            RuntimeBankCoords = 1 << 6 };
}

// Interleaved accessors take two compile-time args: the ArgConfig word and the page size
// (tensor_accessor_args.h, 0.81.1); sharded layouts are not modelled.
template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET = std::size_t(-1)>
struct TensorAccessorArgs {
    static constexpr uint32_t config = get_compile_time_arg_val(CTA_OFFSET);
    static_assert((config & tensor_accessor::Sharded) == 0, "kgen emulator: sharded tensor accessors are not modelled");
    static_assert((config & 128u) == 0, "kgen emulator: a runtime page size is not modelled");
    static constexpr bool is_dram = (config & tensor_accessor::IsDram) != 0;
    static constexpr uint32_t AlignedPageSize = get_compile_time_arg_val(CTA_OFFSET + 1);
    constexpr TensorAccessorArgs() = default;
    constexpr uint32_t get_aligned_page_size() const { return AlignedPageSize; }
    static constexpr uint32_t num_compile_time_args() { return 2; }
    static constexpr uint32_t next_compile_time_args_offset() { return CTA_OFFSET + 2; }
    static constexpr uint32_t num_common_runtime_args() { return 0; }
    static constexpr uint32_t next_common_runtime_args_offset() { return CRTA_OFFSET == std::size_t(-1) ? 0 : CRTA_OFFSET; }
};

template <typename Args>
struct TensorAccessor {
    uint32_t bank_base_address;
    uint32_t page_size;
    constexpr TensorAccessor(const Args &, uint32_t address, uint32_t page_bytes = Args::AlignedPageSize)
        : bank_base_address(address), page_size(page_bytes) {}
    uint32_t get_aligned_page_size() const { return page_size; }
    constexpr uint32_t get_bank_base_address() const { return bank_base_address; }
    uint64_t get_noc_addr(uint32_t page_id, uint32_t offset = 0, uint8_t noc = noc_index, KEMU_WHERE) const {
        (void)noc;
        return kemu::interleaved_page_addr(bank_base_address, page_id, page_size, offset, Args::is_dram, KEMU_AT);
    }
};
template <typename Args>
TensorAccessor(const Args &, uint32_t) -> TensorAccessor<Args>;
template <typename Args>
TensorAccessor(const Args &, uint32_t, uint32_t) -> TensorAccessor<Args>;

template <bool DRAM>
struct InterleavedAddrGen {
    uint32_t bank_base_address;
    uint32_t page_size;
    uint64_t get_noc_addr(uint32_t id, uint32_t offset = 0, uint8_t noc = noc_index, KEMU_WHERE) const {
        (void)noc;
        return kemu::interleaved_page_addr(bank_base_address, id, page_size, offset, DRAM, KEMU_AT);
    }
};
template <bool DRAM, uint32_t tile_hw = 1024>
struct InterleavedAddrGenFast {
    uint32_t bank_base_address;
    uint32_t page_size;
    uint32_t data_format;
    uint64_t get_noc_addr(uint32_t id, uint32_t offset = 0, uint8_t noc = noc_index, KEMU_WHERE) const {
        (void)noc;
        return kemu::interleaved_page_addr(bank_base_address, id, page_size, offset, DRAM, KEMU_AT);
    }
};

template <typename Accessor>
FORCE_INLINE uint64_t get_noc_addr(uint32_t id, const Accessor &accessor, uint32_t offset = 0, uint8_t noc = noc_index,
                                   KEMU_WHERE) {
    return accessor.get_noc_addr(id, offset, noc, kemu_file, kemu_line);
}
template <typename Accessor>
FORCE_INLINE void noc_async_read_page(uint32_t id, const Accessor &accessor, uint32_t dst_local_l1_addr,
                                      uint32_t offset = 0, uint8_t noc = noc_index, KEMU_WHERE) {
    kemu::noc_read(accessor.get_noc_addr(id, offset, noc, kemu_file, kemu_line), dst_local_l1_addr,
                   accessor.page_size - offset, KEMU_AT);
}
template <typename Accessor>
FORCE_INLINE void noc_async_write_page(uint32_t id, const Accessor &accessor, uint32_t src_local_l1_addr,
                                       uint32_t write_size_bytes = 0xFFFFFFFFu, uint32_t offset = 0,
                                       uint8_t noc = noc_index, KEMU_WHERE) {
    const uint32_t bytes = write_size_bytes == 0xFFFFFFFFu ? accessor.page_size : write_size_bytes;
    kemu::noc_write(src_local_l1_addr, accessor.get_noc_addr(id, offset, noc, kemu_file, kemu_line), bytes, KEMU_AT);
}
template <typename Accessor>
FORCE_INLINE void noc_async_read_tile(uint32_t id, const Accessor &accessor, uint32_t dst_local_l1_addr,
                                      uint32_t offset = 0, uint8_t noc = noc_index, KEMU_WHERE) {
    noc_async_read_page(id, accessor, dst_local_l1_addr, offset, noc, kemu_file, kemu_line);
}
template <typename Accessor>
FORCE_INLINE void noc_async_write_tile(uint32_t id, const Accessor &accessor, uint32_t src_local_l1_addr,
                                       uint8_t noc = noc_index, KEMU_WHERE) {
    noc_async_write_page(id, accessor, src_local_l1_addr, 0xFFFFFFFFu, 0, noc, kemu_file, kemu_line);
}
