// kgen host model: TT-Metal 0.81.1 `api/compute/reconfig_data_format.h` (see kemu/compute_api.h).
#pragma once
#include "kemu/compute_api.h"
