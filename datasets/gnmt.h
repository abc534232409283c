// GNMT (Wu et al. 2016) training graph: LSTM encoder (first layer bidirectional) and decoder
// with Bahdanau attention, residual connections from the third layer, statically unrolled.
#pragma once

#include "datasets/registry.h"

namespace gdp::datasets {

Graph make_gnmt(const GenOptions& o);  // options with defaults applied

}  // namespace gdp::datasets
