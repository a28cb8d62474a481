// Compile-time args as TT-Metal's JIT passes them: KERNEL_COMPILE_TIME_ARGS (positional, a -D list)
// and KERNEL_COMPILE_TIME_ARG_MAP (named, from named_ct_arg_map_generated.h). Both are constant
// expressions here too; an index or name that does not exist stops the build, as on the device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#ifndef KERNEL_COMPILE_TIME_ARGS
#define KERNEL_COMPILE_TIME_ARGS
#endif
#ifndef KERNEL_COMPILE_TIME_ARG_MAP
#define KERNEL_COMPILE_TIME_ARG_MAP
#endif

namespace kemu {
template <class... T>
constexpr std::array<uint32_t, sizeof...(T)> make_args(T... values) {
    return {static_cast<uint32_t>(values)...};
}
constexpr auto ct_args = make_args(KERNEL_COMPILE_TIME_ARGS);

constexpr uint32_t ct_arg(std::size_t index) {
    if (index >= ct_args.size()) {
        throw "get_compile_time_arg_val: index beyond the kernel's compile-time args";
    }
    return ct_args[index];
}

struct NamedArg {
    const char *name;
    uint32_t value;
};
constexpr NamedArg named_args[] = {{nullptr, 0u}, KERNEL_COMPILE_TIME_ARG_MAP};

constexpr bool same_name(const char *a, const char *b) {
    while (*a && *a == *b) {
        ++a;
        ++b;
    }
    return *a == *b;
}

constexpr uint32_t named_ct_arg(const char *name) {
    for (const NamedArg &arg : named_args) {
        if (arg.name != nullptr && same_name(arg.name, name)) {
            return arg.value;
        }
    }
    throw "get_named_compile_time_arg_val: no named compile-time arg of that name";
}
}  // namespace kemu

#define get_compile_time_arg_val(arg_idx) (kemu::ct_arg(arg_idx))
#define get_named_compile_time_arg_val(name) (kemu::named_ct_arg(name))
