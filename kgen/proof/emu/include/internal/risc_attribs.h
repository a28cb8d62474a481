// kgen host model: TT-Metal 0.81.1 `internal/risc_attribs.h` (attributes only).
#pragma once
#include "kemu/common.h"
