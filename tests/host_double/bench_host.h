// Test hooks of the host double of cuda/bench.h (tests/host_double/bench_host.cpp): how many fake
// GPUs there are and whether they can access each other's memory, and what was checked.
#pragma once

#include <cstdint>

namespace gdp::cuda::host_double {

// Fake GPUs (default 2) and whether every pair has peer access (default true). Resets the
// peer-access table.
void set_fake_devices(int count, bool peer_access);

// Counters since the last set_fake_devices: events recorded, cross-stream waits, peer copies
// (direct) and host round trips (staged).
struct BenchCounters {
  int64_t records = 0, waits = 0, peer_copies = 0, staged_copies = 0;
};
BenchCounters counters();

}  // namespace gdp::cuda::host_double
