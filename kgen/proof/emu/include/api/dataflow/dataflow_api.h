// kgen host model: TT-Metal 0.81.1 `api/dataflow/dataflow_api.h` (see kemu/dataflow_api.h).
#pragma once
#include "kemu/dataflow_api.h"
