// kgen host model: TT-Metal 0.81.1 `api/debug/dprint.h`. DPRINT compiles to nothing (kemu/common.h),
// as on a device without the debug print server.
#pragma once
#include "kemu/common.h"
