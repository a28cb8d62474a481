// kgen host model: TT-Metal 0.81.1 `api/compute/eltwise_unary/softplus.h` (the pack-thread SFPU activations; see kemu/sfpu_activations.h).
#pragma once
#include "kemu/sfpu_kernel.h"
