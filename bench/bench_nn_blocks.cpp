// Forward + backward time of GDP's two network blocks at paper scale (50k nodes), to compare with
// the same models in PyTorch (bench/torch_blocks.py, which also prints the ratio):
//   sage:      GraphSAGE, 2 layers, width 128, 50,000 nodes / 100,000 random edges
//   attention: Transformer-XL stack, 2 layers, width 128, 4 heads, FFN 512, segment 256,
//              memory 256, full mask, over 50,000 node embeddings
// The backward pass is seeded with a fixed random cotangent (out.backward(R) in PyTorch).
// Wall time per iteration (UseRealTime) after one untimed warm-up step: the blocks run on all
// OpenMP threads. In builds with the CUDA backend and a visible GPU, the same blocks also run on
// the device (BM_*_cuda: parameters moved with ParameterBuffer::to_device, inputs uploaded once,
// each iteration ends with a device synchronize).
#include <benchmark/benchmark.h>

#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

#include "nn/ops.h"
#include "nn/sage.h"
#include "nn/transformer_xl.h"

using namespace gdp::nn;

namespace {

constexpr int32_t kNodes = 50000, kEdges = 100000, kWidth = 128;

Tensor random_tensor(const Shape& shape, Rng& rng) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  return t;
}

std::shared_ptr<const Adjacency> random_graph(Rng& rng) {
  std::vector<int32_t> src, dst;
  src.reserve(kEdges);
  dst.reserve(kEdges);
  while (static_cast<int32_t>(src.size()) < kEdges) {
    const auto a = static_cast<int32_t>(rng.below(kNodes)),
               b = static_cast<int32_t>(rng.below(kNodes));
    if (a == b) continue;
    src.push_back(a);
    dst.push_back(b);
  }
  return make_adjacency(kNodes, src, dst);
}

// Waits for queued device work (a no-op for the cpu).
void sync(Device device) {
#ifdef GDP_HAVE_CUDA
  if (device == Device::cuda) gdp::cuda::synchronize();
#else
  (void)device;
#endif
}

void sage_block(benchmark::State& state, Device device) {
  Rng rng(1);
  ParameterBuffer params;
  const SageEncoder sage(params, "sage", {kWidth, kWidth, 2, true}, rng);
  const auto adj = random_graph(rng);
  const Var x(random_tensor({kNodes, kWidth}, rng).to_device(device));
  const Tensor seed = random_tensor({kNodes, kWidth}, rng).to_device(device);
  params.to_device(device);
  auto step = [&] {
    params.zero_grad();
    const Var h = sage.forward(x, adj);
    Tape::current().backward(h, seed);
    sync(device);
  };
  step();  // warm-up (first touch of the allocator's blocks), as torch_blocks.py does
  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(params.grads().data());
  }
  state.counters["nodes"] = kNodes;
}

void attention_block(benchmark::State& state, Device device) {
  Rng rng(2);
  ParameterBuffer params;
  TransformerXLConfig cfg;  // width 128, 4 heads, 2 layers, FFN 512, segment 256, memory 256
  const TransformerXL txl(params, "txl", cfg, rng);
  const int64_t nodes = state.range(0);
  const Var h(random_tensor({nodes, kWidth}, rng).to_device(device));
  const Tensor seed = random_tensor({nodes, kWidth}, rng).to_device(device);
  params.to_device(device);
  auto step = [&] {
    params.zero_grad();
    const Var y = txl.forward(h, Var());
    Tape::current().backward(y, seed);
    sync(device);
  };
  step();  // warm-up, as torch_blocks.py does
  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(params.grads().data());
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}

void BM_SageForwardBackward(benchmark::State& state) { sage_block(state, Device::cpu); }
void BM_SegmentAttentionForwardBackward(benchmark::State& state) {
  attention_block(state, Device::cpu);
}

}  // namespace

BENCHMARK(BM_SageForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
// The 5,000-node size is for quick profiling; the comparison uses 50,000.
BENCHMARK(BM_SegmentAttentionForwardBackward)
    ->Arg(kNodes)
    ->Arg(kNodes / 10)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

int main(int argc, char** argv) {
#ifdef GDP_HAVE_CUDA
  if (gdp::cuda::cuda_device_count() > 0) {
    benchmark::RegisterBenchmark("BM_SageForwardBackward_cuda",
                                 [](benchmark::State& s) { sage_block(s, Device::cuda); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(2.0);
    benchmark::RegisterBenchmark("BM_SegmentAttentionForwardBackward_cuda",
                                 [](benchmark::State& s) { attention_block(s, Device::cuda); })
        ->Arg(kNodes)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(2.0);
  }
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
