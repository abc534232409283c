// Transformer-XL (Dai et al. 2019) training graph for one segment with a recurrent memory:
// relative-position multi-head attention over [memory, segment], position-wise FFN.
#pragma once

#include "datasets/registry.h"

namespace gdp::datasets {

Graph make_transformer_xl(const GenOptions& o);  // options with defaults applied

}  // namespace gdp::datasets
