// kgen host model: TT-Metal 0.81.1 `api/dataflow/dataflow_api.h` (see kemu/dataflow_api.h).
#pragma once
#include "kemu/dataflow_api.h"
// get_noc_addr_from_bank_id<DRAM>() (dataflow_api_addrgen.h in TT-Metal) lives with the object API
#include "kemu/noc_objects.h"
