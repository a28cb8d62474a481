// kgen host emulator: the runtime entry points the host model of the TT-Metal kernel API calls.
//
// Kernels are compiled for the host, one shared object per (kernel, processor role), against the
// headers beside this one (same include names as TT-Metal 0.81.1). Every API call ends up here,
// in the emulator executable, which knows which core and processor is running (the scheduler
// switches one coroutine per core x processor; see docs in kgen/proof/emulate.py). Each call carries the
// kernel source location of its caller (__builtin_FILE/__builtin_LINE as default arguments) so a
// diagnosis can name the kernel line.
#pragma once

#include <cstddef>
#include <cstdint>

#define KEMU_API __attribute__((visibility("default")))
// Default arguments that record the caller's source location.
#define KEMU_WHERE const char *kemu_file = __builtin_FILE(), int kemu_line = __builtin_LINE()
#define KEMU_AT kemu::Where{kemu_file, kemu_line}

namespace kemu {

struct Where {
    const char *file;
    int line;
};

// The fields of TT-Metal's LocalCBInterface that kernels may touch (addresses are host L1
// addresses in bytes on every processor).
struct LocalCBInterface {
    uint32_t fifo_size;
    uint32_t fifo_limit;
    uint32_t fifo_page_size;
    uint32_t fifo_num_pages;
    uint32_t fifo_rd_ptr;
    uint32_t fifo_wr_ptr;
    uint32_t tiles_acked;
    uint32_t tiles_received;
    uint32_t fifo_wr_tile_ptr;
};

// ---- arguments ------------------------------------------------------------------------------
KEMU_API uint32_t rt_arg(uint32_t index, Where at);
KEMU_API uint32_t rt_arg_addr(uint32_t index, Where at);
KEMU_API uint32_t common_rt_arg(uint32_t index, Where at);
KEMU_API uint32_t common_rt_arg_addr(uint32_t index, Where at);
KEMU_API uint32_t my_logical_x();
KEMU_API uint32_t my_logical_y();
KEMU_API uint32_t my_noc_x();
KEMU_API uint32_t my_noc_y();

// ---- circular buffers (behaviour depends on the running processor, as in TT-Metal) -----------
KEMU_API void cb_wait_front(uint32_t cb, uint32_t pages, Where at);
KEMU_API void cb_pop_front(uint32_t cb, uint32_t pages, Where at);
KEMU_API void cb_reserve_back(uint32_t cb, uint32_t pages, Where at);
KEMU_API void cb_push_back(uint32_t cb, uint32_t pages, Where at);
KEMU_API bool cb_pages_available_at_front(uint32_t cb, uint32_t pages, Where at);
KEMU_API bool cb_pages_reservable_at_back(uint32_t cb, uint32_t pages, Where at);
KEMU_API uint32_t cb_read_ptr(uint32_t cb, Where at);
KEMU_API uint32_t cb_write_ptr(uint32_t cb, Where at);
KEMU_API LocalCBInterface &local_cb(uint32_t cb, Where at);

// ---- semaphores and the NoC -----------------------------------------------------------------
KEMU_API uint32_t semaphore_addr(uint32_t id, Where at);
KEMU_API void sem_wait(volatile uint32_t *sem, uint32_t value, bool at_least, Where at);
KEMU_API void sem_set(volatile uint32_t *sem, uint32_t value, Where at);
KEMU_API void sem_inc(uint64_t noc_addr, uint32_t incr, Where at);
KEMU_API void sem_set_mcast(uint32_t src_l1, uint64_t mcast_addr, uint32_t num_dests, bool loopback, Where at);
KEMU_API uint64_t noc_xy_addr(uint32_t x, uint32_t y, uint64_t addr);
KEMU_API uint64_t noc_mcast_addr(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint64_t addr);
KEMU_API uint64_t noc_local_addr(uint64_t addr);
// NoC address of byte `offset` of page `page_id` of an interleaved tensor at bank address `base`.
KEMU_API uint64_t interleaved_page_addr(uint32_t base, uint32_t page_id, uint32_t page_size, uint32_t offset,
                                        bool is_dram, Where at);
// NoC address of `addr` in bank `bank_id` (DRAM or L1 bank, as get_noc_addr_from_bank_id).
KEMU_API uint64_t bank_noc_addr(uint32_t bank_id, uint32_t addr, bool is_dram, Where at);
KEMU_API void noc_read(uint64_t src, uint32_t dst_l1, uint32_t bytes, Where at);
KEMU_API void noc_write(uint32_t src_l1, uint64_t dst, uint32_t bytes, Where at);
KEMU_API void noc_write_mcast(uint32_t src_l1, uint64_t mcast_addr, uint32_t bytes, uint32_t num_dests,
                              bool loopback, Where at);
KEMU_API void noc_write_value(uint64_t dst, uint32_t value, Where at);   // an inline 32-bit write
KEMU_API void noc_barrier(const char *which, Where at);
KEMU_API void note_op(const char *name, Where at);   // an API call with no modelled effect
KEMU_API [[noreturn]] void unsupported(const char *what, Where at);
// A failed ASSERT (api/debug/assert.h): the emulator stops as a device under the watcher would.
KEMU_API [[noreturn]] void assert_failed(const char *condition, Where at);

// ---- compute: configuration -----------------------------------------------------------------
// Unpacker source and destination formats (tt::DataFormat numbers from chlkc_descriptors.h) per register:
// a Float32 CB unpacked to Float32 goes straight into DST (UnpackToDestFp32), not through the register.
KEMU_API void cfg_unpack(int reg /*0 = SrcA, 1 = SrcB*/, uint32_t cb, int l1_format, int dst_format, Where at);
KEMU_API void cfg_pack(uint32_t cb, int l1_format, Where at);
KEMU_API void cfg_math(int fidelity, bool fp32_dest_acc, bool dst_full_sync, bool wormhole, Where at);
KEMU_API void cfg_fp32(bool fp32_dest_acc, bool dst_full_sync, Where at);
KEMU_API void pack_l1_acc(bool on, Where at);
KEMU_API void pack_relu(bool on, Where at);

// ---- compute: unpack (TRISC0) ---------------------------------------------------------------
KEMU_API void unpack_matmul(uint32_t in0_cb, uint32_t in1_cb, uint32_t in0_tile, uint32_t in1_tile, uint32_t ct_dim,
                            uint32_t rt_dim, uint32_t kt_dim, Where at, bool in1_transpose = false);
KEMU_API void unpack_copy(uint32_t cb, uint32_t tile, uint32_t count, Where at);
// transpose_tile: one tile through SrcA transposed (rows <-> columns), then the datacopy into DST (math_copy)
KEMU_API void unpack_transpose(uint32_t cb, uint32_t tile, Where at);
KEMU_API void unpack_binary(uint32_t cb_a, uint32_t cb_b, uint32_t tile_a, uint32_t tile_b, bool bcast_rows, Where at);

// ---- compute: math (TRISC1) -----------------------------------------------------------------
KEMU_API void math_matmul(uint32_t dst_index, uint32_t ct_dim, uint32_t rt_dim, Where at);
KEMU_API void math_copy(uint32_t dst_index, uint32_t count, Where at);
KEMU_API void math_binary(uint32_t dst_index, Where at);
KEMU_API void dst_acquire(Where at);
KEMU_API void dst_commit(Where at);

// ---- compute: pack (TRISC2) -----------------------------------------------------------------
KEMU_API void dst_wait(Where at);
KEMU_API void dst_release(Where at);
KEMU_API void pack_tiles(uint32_t dst_index, uint32_t cb, uint32_t count, int out_tile /* -1: in order */, Where at);
// The SFPU on the pack thread: tile `index` of the DST section pack holds, writable, and whether
// DST holds FP32 (fp32_dest_acc) or BF16 (in the high half of each datum).
KEMU_API uint32_t *sfpu_dst_tile(uint32_t index, bool *fp32_dest, Where at);
KEMU_API void pack_untilize(uint32_t cb, uint32_t block_ct, uint32_t full_ct, uint32_t block_rt, uint32_t block_c_index,
                            Where at);

}  // namespace kemu
