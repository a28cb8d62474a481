// kgen host model: TT-Metal 0.81.1 `api/compute/common.h` (see kemu/compute_api.h).
#pragma once
#include "kemu/compute_api.h"
