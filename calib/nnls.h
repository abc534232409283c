// Non-negative least squares (Lawson and Hanson 1974): the solver behind every calibration fit.
// The fitted unknowns (launch overhead, 1/efficiency - 1, link latency, 1/bandwidth) are all
// non-negative, and NNLS keeps the fit well-posed when some of them are not identified.
#pragma once

#include <Eigen/Dense>

namespace gdp::calib {

struct NnlsResult {
  Eigen::VectorXd x;       // (n) the solution, every entry >= 0
  double residual = 0;     // ||A x - b||_2
  int iterations = 0;      // outer iterations (columns made active)
  bool converged = false;  // false: stopped at the iteration limit (x is still feasible)
};

// argmin ||A x - b||_2 subject to x >= 0.  A: (m, n), b: (m).  Columns are scaled to unit
// norm inside (the unknowns of a fit differ by orders of magnitude); an all-zero column gets
// x = 0. With many rows (m > 2n) the problem is first reduced to n x n by a thin QR of A. The
// passive-set subproblems are solved by a column-pivoting QR, so rank-deficient subsets are
// handled.
NnlsResult nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iterations = 0);

}  // namespace gdp::calib
