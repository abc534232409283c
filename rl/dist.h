// Data-parallel training across processes (OpenMPI, optional): GDP-batch pre-training splits a
// suite's graphs over the ranks of MPI_COMM_WORLD (balanced by op count), and the ranks'
// gradients meet in an MPI_Allreduce before every update, so that every rank applies the same
// update to the same parameters. Without MPI (or outside mpirun) this is one rank and every
// call is a no-op. docs/ppo.md, "Pre-training across processes".
#pragma once

#include <cstdint>
#include <string>

namespace gdp::rl {

// This process's rank and the number of ranks: {0, 1} unless MPI is initialized (the CLI
// initializes it when started by mpirun: eval::mpi_begin).
int dist_rank();
int dist_size();
// In place: data[i] = the sum over ranks of data[i].
void dist_allreduce_sum(float* data, int64_t n);
// root's bytes / values on every rank.
void dist_broadcast(std::string& bytes, int root);
void dist_broadcast(double* data, int64_t n, int root);

}  // namespace gdp::rl
