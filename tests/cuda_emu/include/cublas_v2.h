// The emulator as the cuBLAS header: only the emulator targets have this directory on their
// include path (tests/CMakeLists.txt, gdp_cuda_emu).
#pragma once
#include "../cublas_emu.h"
