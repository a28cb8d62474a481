// kgen host model: TT-Metal 0.81.1 `ckernel_defs.h` (the ckernel enums and DataFormat).
#pragma once

#include "kemu/data_format.h"
#include "llk_defs.h"
