// MPI_COMM_WORLD helpers (core/mpi.h).
#include "core/mpi.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#ifdef GDP_HAVE_MPI
#include <mpi.h>
#endif

namespace gdp {

namespace {

#ifdef GDP_HAVE_MPI
bool mpi_on() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

// MPI counts are ints: large buffers go in chunks.
constexpr int64_t kChunk = std::numeric_limits<int>::max() / 2;
#endif

}  // namespace

MpiWorld mpi_begin() {
  MpiWorld w;
#ifdef GDP_HAVE_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    w.rank = mpi_rank();
    w.size = mpi_size();
  }
#endif
  return w;
}

void mpi_end() {
#ifdef GDP_HAVE_MPI
  if (mpi_on()) MPI_Finalize();
#endif
}

int mpi_rank() {
#ifdef GDP_HAVE_MPI
  if (mpi_on()) {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
#endif
  return 0;
}

int mpi_size() {
#ifdef GDP_HAVE_MPI
  if (mpi_on()) {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
#endif
  return 1;
}

void mpi_allreduce_sum(float* data, int64_t n) {
#ifdef GDP_HAVE_MPI
  if (mpi_size() > 1)
    for (int64_t at = 0; at < n; at += kChunk)
      MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kChunk, n - at)), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
#else
  (void)data;
  (void)n;
#endif
}

void mpi_broadcast(std::string& bytes, int root) {
#ifdef GDP_HAVE_MPI
  if (mpi_size() <= 1) return;
  int64_t n = static_cast<int64_t>(bytes.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
  bytes.resize(static_cast<size_t>(n));
  for (int64_t at = 0; at < n; at += kChunk)
    MPI_Bcast(bytes.data() + at, static_cast<int>(std::min(kChunk, n - at)), MPI_CHAR, root,
              MPI_COMM_WORLD);
#else
  (void)bytes;
  (void)root;
#endif
}

void mpi_broadcast(double* data, int64_t n, int root) {
#ifdef GDP_HAVE_MPI
  if (mpi_size() > 1)
    for (int64_t at = 0; at < n; at += kChunk)
      MPI_Bcast(data + at, static_cast<int>(std::min(kChunk, n - at)), MPI_DOUBLE, root,
                MPI_COMM_WORLD);
#else
  (void)data;
  (void)n;
  (void)root;
#endif
}

}  // namespace gdp
