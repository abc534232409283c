// Kernel launches of the CUDA emulator: launch checks, blocks in order, and inside a block
// either plain calls (kernels without barriers) or one fiber per GPU thread scheduled
// round-robin (increasing thread order in even blocks, decreasing in odd ones), with warp
// shuffles and __syncthreads as barriers.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_emu.h"
#include "emu_state.h"
#include "fiber.h"

namespace emu::detail {

namespace {

enum class State : unsigned char { Ready, AtShuffle, AtSync, Done };

// One GPU thread of the running block (fiber mode).
struct GpuThread {
  uint3 idx;
  State state = State::Ready;
  const char* what = nullptr;  // the shuffle intrinsic it waits in
  unsigned int mask = 0;
  std::uint32_t value = 0, out = 0;
  int src = 0;
};

constexpr unsigned int kMaxThreads = 1024;
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kStackBytes = 256 * 1024;  // instrumented frames are larger
#else
constexpr std::size_t kStackBytes = 64 * 1024;
#endif

// The launch in progress (the emulator runs one kernel at a time on one OS thread).
struct Running {
  const KernelSite* site = nullptr;
  Thunk thunk = nullptr;
  void* fn = nullptr;
  bool fibers = false;  // false: GPU threads are plain calls and must not reach a barrier
  unsigned int nt = 0;  // threads per block
  unsigned int current = 0;
  std::vector<GpuThread> threads;
};
Running g_run;
bool g_active = false;

// Fiber t serves GPU thread t of every block of every launch; it stays alive between them.
std::vector<Fiber> g_pool;
std::vector<bool> g_pool_fresh;  // needs fiber_prepare (new, or abandoned after an error)

Stats g_stats;
unsigned long long g_block_serial = 0;  // counts every block of every launch
std::unordered_map<void*, unsigned long long>
    g_shared_filled;  // __shared__ array -> block that filled it

[[noreturn]] void fatal(const std::string& msg) {
  std::fprintf(stderr, "cuda emulator: %s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string where() {
  const KernelSite& s = *g_run.site;
  return std::string("kernel ") + s.kernel + " (launched at " + s.file + ":" +
         std::to_string(s.line) + "), block (" + std::to_string(g_block_idx.x) + "," +
         std::to_string(g_block_idx.y) + "," + std::to_string(g_block_idx.z) + ")";
}

void fiber_main() {
  fiber_started();
  for (;;) {
    g_run.thunk(g_run.fn);
    unsigned int t = g_run.current;
    g_run.threads[t].state = State::Done;
    fiber_switch_to_main(g_pool[t], false);  // resumed for thread t of the next block
  }
}

void block_dims_of(unsigned int linear, uint3& idx) {
  idx.x = linear % g_block_dim.x;
  idx.y = (linear / g_block_dim.x) % g_block_dim.y;
  idx.z = linear / (g_block_dim.x * g_block_dim.y);
}

// Returns an error message when the block cannot finish (a deadlock or a broken shuffle).
// Even blocks run their threads in increasing order, odd blocks in decreasing order, so a
// missing barrier shows whichever side of it the consumer thread is on.
std::string run_block_fibers(bool reverse) {
  const unsigned int nt = g_run.nt;
  auto& th = g_run.threads;
  for (unsigned int t = 0; t < nt; ++t) {
    block_dims_of(t, th[t].idx);
    th[t].state = State::Ready;
    if (g_pool_fresh[t]) {
      fiber_prepare(g_pool[t], &fiber_main);
      g_pool_fresh[t] = false;
    }
  }
  for (;;) {
    for (unsigned int k = 0; k < nt; ++k) {
      const unsigned int t = reverse ? nt - 1 - k : k;
      if (th[t].state != State::Ready) continue;
      g_run.current = t;
      g_thread_idx = th[t].idx;
      ++g_stats.switches;
      fiber_switch_to(g_pool[t]);
    }
    // Every thread now waits or is done: release whole warps at shuffles, else the block
    // at __syncthreads.
    unsigned int done = 0, at_sync = 0, at_shfl = 0;
    for (unsigned int t = 0; t < nt; ++t) {
      done += th[t].state == State::Done;
      at_sync += th[t].state == State::AtSync;
      at_shfl += th[t].state == State::AtShuffle;
    }
    if (done == nt) return {};
    bool released = false;
    for (unsigned int base = 0; base < nt && at_shfl > 0; base += 32) {
      int first = -1;
      for (unsigned int l = 0; l < 32 && base + l < nt; ++l)
        if (th[base + l].state == State::AtShuffle) {
          first = static_cast<int>(l);
          break;
        }
      if (first < 0) continue;
      const unsigned int mask = th[base + first].mask;
      bool ready = true;
      for (unsigned int l = 0; l < 32; ++l) {
        const unsigned int t = base + l;
        const bool named = (mask >> l) & 1u;
        if (t >= nt || th[t].state == State::Done) {
          if (named)
            return std::string(th[base + first].what) + " in warp " + std::to_string(base / 32) +
                   " names lane " + std::to_string(l) +
                   (t >= nt ? ", which does not exist" : ", which has exited") +
                   " (undefined behaviour on the GPU)";
          continue;
        }
        if (th[t].state == State::AtShuffle && th[t].mask != mask)
          return "lanes of warp " + std::to_string(base / 32) +
                 " wait in shuffles with different masks";
        if (named && th[t].state != State::AtShuffle) ready = false;
      }
      if (!ready) continue;
      for (unsigned int l = 0; l < 32; ++l) {
        if (!((mask >> l) & 1u)) continue;
        GpuThread& me = th[base + l];
        if (me.src < 0 || me.src >= 32 || !((mask >> me.src) & 1u))
          return std::string(me.what) + ": lane " + std::to_string(l) + " reads lane " +
                 std::to_string(me.src) + ", which is not in the mask";
        me.out = th[base + me.src].value;
      }
      for (unsigned int l = 0; l < 32; ++l)
        if ((mask >> l) & 1u) th[base + l].state = State::Ready;
      released = true;
    }
    if (released) continue;
    if (at_sync + done == nt) {
      for (unsigned int t = 0; t < nt; ++t)
        if (th[t].state == State::AtSync) th[t].state = State::Ready;
      continue;
    }
    return "deadlock: " + std::to_string(at_sync) + " threads wait at __syncthreads, " +
           std::to_string(at_shfl) + " in warp shuffles that cannot complete, " +
           std::to_string(done) + " have exited";
  }
}

// Back to the scheduler from inside a GPU thread, in state s.
void wait_here(State s) {
  if (!g_active) fatal("a device barrier was reached outside any kernel launch");
  if (!g_run.fibers)
    fatal(std::string("kernel ") + g_run.site->kernel + " (" + g_run.site->file + ":" +
          std::to_string(g_run.site->line) +
          ") reached a barrier or warp shuffle but was launched as plain calls: rewrite.py's scan "
          "missed it");
  const unsigned int t = g_run.current;
  g_run.threads[t].state = s;
  fiber_switch_to_main(g_pool[t], false);
}

std::string check_config(dim3 grid, dim3 block, std::size_t smem) {
  const unsigned long long nt = 1ull * block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || nt == 0) return "empty grid or block";
  if (nt > kMaxThreads || block.x > 1024 || block.y > 1024 || block.z > 64)
    return "block too large";
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) return "grid too large";
  if (smem > 48 * 1024) return "more than 48 KiB of dynamic shared memory";
  return {};
}

}  // namespace

int lane_id() {
  const unsigned int linear =
      g_thread_idx.x + g_block_dim.x * (g_thread_idx.y + g_block_dim.y * g_thread_idx.z);
  return static_cast<int>(linear % 32);
}

void syncthreads() { wait_here(State::AtSync); }

void fresh_shared(void* array, std::size_t bytes) {
  unsigned long long& filled = g_shared_filled[array];
  if (filled == g_block_serial) return;
  std::memset(array, 0xff, bytes);
  filled = g_block_serial;
}

std::uint32_t shuffle(unsigned int mask, std::uint32_t value, int src_lane, const char* what) {
  if (g_active && g_run.fibers) {
    GpuThread& me = g_run.threads[g_run.current];
    me.mask = mask;
    me.value = value;
    me.src = src_lane;
    me.what = what;
  }
  wait_here(State::AtShuffle);
  return g_run.threads[g_run.current].out;
}

void launch_impl(const KernelSite& site, dim3 grid, dim3 block, std::size_t smem, Thunk thunk,
                 void* fn) {
  if (g_active) fatal(std::string("kernel ") + site.kernel + " launched from inside a kernel");
  std::string bad = check_config(grid, block, smem);
  if (!bad.empty()) {
    std::fprintf(stderr, "cuda emulator: launch of %s at %s:%d: %s\n", site.kernel, site.file,
                 site.line, bad.c_str());
    set_error(cudaErrorInvalidConfiguration);
    return;
  }
  const unsigned int nt = block.x * block.y * block.z;
  g_run.site = &site;
  g_run.thunk = thunk;
  g_run.fn = fn;
  g_run.fibers = site.uses_barriers;
  g_run.nt = nt;
  g_grid_dim = grid;
  g_block_dim = block;
  ++g_stats.launches;
  if (g_run.fibers) {
    ++g_stats.fiber_launches;
    if (g_run.threads.size() < nt) g_run.threads.resize(nt);
    while (g_pool.size() < nt) {
      g_pool.emplace_back();
      fiber_allocate(g_pool.back(), kStackBytes);
      g_pool_fresh.push_back(true);
    }
  }
  g_active = true;
  std::string err;
  for (unsigned int z = 0; z < grid.z && err.empty(); ++z)
    for (unsigned int y = 0; y < grid.y && err.empty(); ++y)
      for (unsigned int x = 0; x < grid.x && err.empty(); ++x) {
        g_block_idx = uint3{x, y, z};
        ++g_block_serial;
        ++g_stats.blocks;
        g_stats.threads += nt;
        if (g_run.fibers) {
          err = run_block_fibers(((x + grid.x * (y + grid.y * z)) & 1u) != 0);
          if (!err.empty()) err = where() + ": " + err;
        } else {
          for (unsigned int t = 0; t < nt; ++t) {
            block_dims_of(t, g_thread_idx);
            thunk(fn);
          }
        }
      }
  g_active = false;
  if (!err.empty()) {
    // The block's fibers stopped mid-kernel: start them afresh next time.
    for (unsigned int t = 0; t < nt; ++t) {
      g_pool_fresh[t] = true;
      fiber_unpoison(g_pool[t]);
    }
    std::fprintf(stderr, "cuda emulator: %s\n", err.c_str());
    set_error(cudaErrorLaunchFailure);
  }
}

}  // namespace emu::detail

namespace emu {
Stats stats() { return detail::g_stats; }
}  // namespace emu
