// The plan schema's generated FlatBuffers code (flatc --cpp --gen-object-api from plan.fbs), for
// every file that reads or writes plans. The object API (PlanT and UnPack/Pack) lets tests rewrite
// plans; nvcc warns about a variable that code sets and never reads (#550), which is flatc's, so
// that one diagnostic is silenced around it and nowhere else.
#pragma once

#if defined(__NVCC__)
#pragma nv_diag_suppress 550
#endif
#include "runtime/plan/plan_generated.h"
#if defined(__NVCC__)
#pragma nv_diag_default 550
#endif
