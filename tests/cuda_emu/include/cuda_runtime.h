// The emulator as the CUDA runtime header: only the emulator targets have this directory on
// their include path (tests/CMakeLists.txt, gdp_cuda_emu).
#pragma once
#include "../cuda_emu.h"
