// kgen host model: TT-Metal 0.81.1 `api/dataflow/endpoints.h` (see kemu/noc_objects.h).
#pragma once
#include "kemu/noc_objects.h"
