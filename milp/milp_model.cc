#include "milp/milp_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "model/error.h"

namespace optpipe::milp {

int Model::add_continuous(const std::string& n, double lower, double upper) {
  vars_.push_back({n, lower, upper, VarType::kContinuous});
  return static_cast<int>(vars_.size()) - 1;
}

int Model::add_binary(const std::string& n) {
  vars_.push_back({n, 0.0, 1.0, VarType::kBinary});
  return static_cast<int>(vars_.size()) - 1;
}

namespace {
std::vector<Term> merged(std::vector<Term> terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.var < b.var; });
  std::vector<Term> out;
  for (const Term& t : terms) {
    if (!out.empty() && out.back().var == t.var) {
      out.back().coef += t.coef;
    } else {
      out.push_back(t);
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const Term& t) { return t.coef == 0.0; }), out.end());
  return out;
}
}  // namespace

int Model::add_constraint(const std::string& n, const LinearExpr& lhs, Sense sense, double rhs) {
  rows_.push_back({n, merged(lhs.terms), sense, rhs - lhs.constant});
  return static_cast<int>(rows_.size()) - 1;
}

void Model::set_objective(const LinearExpr& objective) {
  objective_ = objective;
  objective_.terms = merged(objective.terms);
}

int Model::num_binaries() const {
  return static_cast<int>(std::count_if(vars_.begin(), vars_.end(), [](const Variable& v) { return v.type == VarType::kBinary; }));
}

int Model::find_variable(const std::string& n) const {
  for (std::size_t i = 0; i < vars_.size(); ++i) {
    if (vars_[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

double Model::objective_value(const std::vector<double>& values) const {
  double v = objective_.constant;
  for (const Term& t : objective_.terms) v += t.coef * values.at(t.var);
  return v;
}

std::vector<std::string> Model::violations(const std::vector<double>& values, double tol) const {
  if (values.size() != vars_.size()) {
    throw InputError("MILP point has " + std::to_string(values.size()) + " values for " +
                     std::to_string(vars_.size()) + " variables");
  }
  std::vector<std::string> out;
  char buf[512];
  for (std::size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    const double x = values[i];
    if (!(x >= v.lower - tol) || !(x <= v.upper + tol)) {
      std::snprintf(buf, sizeof buf, "bound %s: %.9g not in [%.9g, %.9g]", v.name.c_str(), x, v.lower, v.upper);
      out.push_back(buf);
    }
    if (v.type == VarType::kBinary && std::fabs(x - std::round(x)) > tol) {
      std::snprintf(buf, sizeof buf, "binary %s: %.9g", v.name.c_str(), x);
      out.push_back(buf);
    }
  }
  for (const Constraint& c : rows_) {
    double lhs = 0;
    for (const Term& t : c.terms) lhs += t.coef * values[t.var];
    const double excess = c.sense == Sense::kLessEqual    ? lhs - c.rhs
                          : c.sense == Sense::kGreaterEqual ? c.rhs - lhs
                                                            : std::fabs(lhs - c.rhs);
    if (!(excess <= tol)) {
      const char* op = c.sense == Sense::kLessEqual ? "<=" : c.sense == Sense::kGreaterEqual ? ">=" : "=";
      std::snprintf(buf, sizeof buf, "row %s: %.12g %s %.12g violated by %.3g", c.name.c_str(), lhs, op, c.rhs, excess);
      out.push_back(buf);
    }
  }
  return out;
}

bool is_valid_name(const std::string& n) {
  if (n.empty() || n.size() > 255) return false;
  const char c0 = n[0];
  if (!(std::isalpha(static_cast<unsigned char>(c0)) || c0 == '_') || c0 == 'e' || c0 == 'E') return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace optpipe::milp
