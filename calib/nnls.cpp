// Lawson-Hanson active-set NNLS on column-scaled Eigen matrices.
#include "calib/nnls.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gdp::calib {

namespace {

// Least squares on the columns marked passive; zero elsewhere.
Eigen::VectorXd solve_passive(const Eigen::MatrixXd& A, const Eigen::VectorXd& b,
                              const std::vector<bool>& passive) {
  std::vector<Eigen::Index> cols;
  for (Eigen::Index j = 0; j < A.cols(); ++j)
    if (passive[j]) cols.push_back(j);
  Eigen::VectorXd z = Eigen::VectorXd::Zero(A.cols());
  if (cols.empty()) return z;
  Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(cols.size()));
  for (size_t k = 0; k < cols.size(); ++k) Ap.col(static_cast<Eigen::Index>(k)) = A.col(cols[k]);
  Eigen::VectorXd zp = Ap.colPivHouseholderQr().solve(b);
  for (size_t k = 0; k < cols.size(); ++k) z[cols[k]] = zp[static_cast<Eigen::Index>(k)];
  return z;
}

// Lawson-Hanson on scaled columns; x is returned unscaled (divided by scale).
NnlsResult nnls_core(const Eigen::MatrixXd& A, const Eigen::VectorXd& b,
                     const Eigen::VectorXd& scale, double residual_offset2, int max_iterations) {
  const Eigen::Index n = A.cols();
  NnlsResult r;
  if (max_iterations <= 0) max_iterations = static_cast<int>(3 * n + 10);
  const double tol = 1e-12 * std::max(1.0, b.norm()) * static_cast<double>(A.rows());
  std::vector<bool> passive(static_cast<size_t>(n), false);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  for (r.iterations = 0; r.iterations < max_iterations; ++r.iterations) {
    Eigen::VectorXd w = A.transpose() * (b - A * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[j] && w[j] > tol && (best < 0 || w[j] > w[best])) best = j;
    if (best < 0) {
      r.converged = true;
      break;
    }
    passive[best] = true;
    const Eigen::VectorXd x_before = x;
    // Inner loop: step back towards the feasible set until the passive solution is positive.
    for (Eigen::Index inner = 0; inner <= n; ++inner) {
      Eigen::VectorXd z = solve_passive(A, b, passive);
      double alpha = 1.0;
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[j] && z[j] <= 0) {
          feasible = false;
          double denom = x[j] - z[j];
          if (denom > 0) alpha = std::min(alpha, x[j] / denom);
        }
      }
      if (feasible) {
        x = z;
        break;
      }
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[j] && x[j] <= 1e-15) {
          passive[j] = false;
          x[j] = 0;
        }
      }
      if (inner == n) x = x.cwiseMax(0.0);  // not reached in exact arithmetic
    }
    // A column that entered and left again without moving x would be chosen again (same
    // gradient): x is optimal up to rounding, stop.
    if (!passive[best] && x == x_before) {
      r.converged = true;
      break;
    }
  }
  r.residual = std::sqrt((A * x - b).squaredNorm() + residual_offset2);
  r.x = x.cwiseQuotient(scale);
  return r;
}

}  // namespace

NnlsResult nnls(const Eigen::MatrixXd& A_in, const Eigen::VectorXd& b, int max_iterations) {
  const Eigen::Index n = A_in.cols();
  NnlsResult r;
  r.x = Eigen::VectorXd::Zero(n);
  if (n == 0 || A_in.rows() == 0) {
    r.residual = b.norm();
    r.converged = true;
    return r;
  }
  // Unit-norm columns; zero columns stay zero (their gradient is 0, so they never enter).
  Eigen::VectorXd scale(n);
  Eigen::MatrixXd A = A_in;
  for (Eigen::Index j = 0; j < n; ++j) {
    double s = A.col(j).norm();
    scale[j] = s > 0 ? s : 1.0;
    A.col(j) /= scale[j];
  }
  // Many rows: solve the equivalent n x n problem min ||R x - Q^T b|| (A = Q R, thin QR);
  // ||A x - b||^2 = ||R x - Q^T b||^2 + (||b||^2 - ||Q^T b||^2).
  double residual_offset2 = 0;
  Eigen::VectorXd rhs = b;
  if (A.rows() > 2 * n) {
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(A);
    Eigen::VectorXd qtb = qr.householderQ().transpose() * b;
    A = qr.matrixQR().topRows(n).triangularView<Eigen::Upper>();
    rhs = qtb.head(n);
    residual_offset2 = std::max(0.0, b.squaredNorm() - rhs.squaredNorm());
  }
  return nnls_core(A, rhs, scale, residual_offset2, max_iterations);
}

}  // namespace gdp::calib
