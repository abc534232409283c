// OpenMPI, optional at build time (GDP_HAVE_MPI): the one home of the MPI_COMM_WORLD helpers that
// `gdp suite run` (eval/suite_run.h: a work queue of cells) and `gdp train` (rl/: data-parallel
// pre-training, docs/ppo.md "Pre-training across processes") use. Without MPI, or in a process
// mpirun did not start, there is one rank and every collective is a no-op.
#pragma once

#include <cstdint>
#include <string>

namespace gdp {

struct MpiWorld {
  int rank = 0, size = 1;
};
// Initializes MPI when this process was started by mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE
// set) and the build has MPI; otherwise {0, 1}.
MpiWorld mpi_begin();
void mpi_end();  // MPI_Finalize when MPI is initialized and not yet finalized

// This process's rank and the number of ranks: {0, 1} unless MPI is initialized.
int mpi_rank();
int mpi_size();
// In place: data[i] = the sum over ranks of data[i].
void mpi_allreduce_sum(float* data, int64_t n);
// root's bytes / values on every rank.
void mpi_broadcast(std::string& bytes, int root);
void mpi_broadcast(double* data, int64_t n, int root);

}  // namespace gdp
