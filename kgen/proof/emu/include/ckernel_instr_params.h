// kgen host model: TT-Metal 0.81.1 `ckernel_instr_params.h` as the LLK SFPU headers use it (see sfpu/ckernel_sfpu_host.h).
#pragma once
#include "sfpu/ckernel_sfpu_host.h"
