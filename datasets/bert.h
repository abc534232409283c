// BERT (Devlin et al. 2019) pre-training graph: embeddings, L Transformer encoder layers,
// masked-LM head (tied to the word embedding) and next-sentence head.
#pragma once

#include "datasets/registry.h"

namespace gdp::datasets {

Graph make_bert(const GenOptions& o);  // options with defaults applied

}  // namespace gdp::datasets
