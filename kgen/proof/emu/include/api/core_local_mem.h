// kgen host model: TT-Metal 0.81.1 `api/core_local_mem.h` (see kemu/noc_objects.h).
#pragma once
#include "kemu/noc_objects.h"
