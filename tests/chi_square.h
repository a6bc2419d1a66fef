// Chi-square tail probabilities for the distribution tests (speculative sampling end to end,
// the sampler's draft rule). Shared by every test area; it includes nothing of src/.
#pragma once

#include <cmath>

namespace ringlm::testing {

// Upper regularized incomplete gamma Q(a, x): series for x < a + 1, else a continued
// fraction (modified Lentz). The chi-square p-value of X^2 with k degrees of freedom is
// Q(k/2, X^2/2).
inline double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

// P(X^2 > x2) for a chi-square variable with `dof` degrees of freedom.
inline double chi_square_p_value(double x2, int dof) { return gamma_q(dof / 2.0, x2 / 2.0); }

}  // namespace ringlm::testing
