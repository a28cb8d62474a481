// kgen host model: TT-Metal 0.81.1 `llk_math_eltwise_unary_sfpu.h` as the LLK SFPU headers use it (see sfpu/ckernel_sfpu_host.h).
#pragma once
#include "sfpu/ckernel_sfpu_host.h"
#include "sfpu/ckernel_sfpu_load_config.h"
