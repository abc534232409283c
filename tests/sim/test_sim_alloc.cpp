// Checks the RL hot path's promise: once a SimState is warm, Simulator::step_time allocates
// nothing. Counts calls of the global operator new (every form) in this test binary.
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "core/cluster.h"
#include "datasets/random_dag.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

namespace {

std::atomic<long> g_news{0};

// Counts, then allocates n bytes aligned to `align` (0: the default alignment) with malloc or
// aligned_alloc; null when out of memory.
void* counted_alloc(std::size_t n, std::size_t align) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(n);
  return std::aligned_alloc(align, (n + align - 1) / align * align);  // a multiple of align
}

void* counted_alloc_or_throw(std::size_t n, std::size_t align) {
  if (void* p = counted_alloc(n, align)) return p;
  throw std::bad_alloc();
}

}  // namespace

// Every replaceable form of the global operator new and delete, so that all of them pair
// malloc/aligned_alloc with free. (A partial set leaves the others to the runtime: under
// AddressSanitizer, memory from its nothrow or array new freed here is an alloc-dealloc
// mismatch.)
void* operator new(std::size_t n) { return counted_alloc_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc_or_throw(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace gdp;

TEST_CASE("sim/hot path/step_time allocates nothing once the state is warm", "[sim][alloc]") {
  datasets::RandomGraphSpec spec;
  spec.num_ops = 5000;
  spec.seed = 3;
  Graph g = datasets::make_random_layered_graph(spec);
  Cluster c = make_cluster_preset("v100x4-pcie");  // multi-hop routes
  Simulator sim(g, c, CostModel());
  std::vector<Placement> ps;
  for (uint64_t s = 0; s < 6; ++s)
    ps.push_back(datasets::random_placement(g, c.num_devices(), 40 + s));
  ps.push_back(test::on_device(g, 0));
  auto st = sim.make_state();
  double warm = sim.step_time(ps[0], *st);
  REQUIRE(std::isfinite(warm));
  const long before = g_news.load();
  double sum = 0;
  for (const Placement& p : ps) sum += sim.step_time(p, *st);
  const long after = g_news.load();
  CHECK(after - before == 0);
  CHECK(sum > 0);
  // The counter does count: a full run allocates its result.
  SimResult r = sim.run(ps[1], *st);
  CHECK(g_news.load() > after);
  CHECK(r.step_time_s == sim.step_time(ps[1], *st));
}
