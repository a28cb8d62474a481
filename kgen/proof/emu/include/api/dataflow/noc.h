// kgen host model: TT-Metal 0.81.1 `api/dataflow/noc.h` (see kemu/noc_objects.h).
#pragma once
#include "kemu/noc_objects.h"
