// State shared by the emulator's own sources: the last-error slot and the table of live
// device allocations (for range checks of copies, memsets and cuBLAS operands).
#pragma once

#include <cstddef>

#include "cuda_emu.h"

namespace emu::detail {

void set_error(cudaError_t err);
// Whether [p, p + bytes) lies inside one live device allocation (bytes == 0: p inside or one past).
bool device_range(const void* p, std::size_t bytes);

}  // namespace emu::detail
