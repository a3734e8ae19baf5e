// An in-memory mixed-integer linear program: named variables (continuous or binary, with bounds),
// named linear constraints (<=, >=, =) and a linear objective to minimise.
//
// The one data structure the MILP export (milp_formulation.h) builds and the writers
// (lp_writer.h, mps_writer.h) print. It also evaluates a point against every bound and row
// (violations()), which the tests use to check a warm start against the formulation.
// Names are kept as given; the formulation only uses [A-Za-z0-9_] and never starts a name with
// a digit or the letter e/E, so they are valid in CPLEX LP and free MPS alike (is_valid_name()).
// Complexity: adding a row is O(terms log terms) (duplicate terms are merged); evaluation is
// O(total terms).
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace optpipe::milp {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

enum class VarType { kContinuous, kBinary };
enum class Sense { kLessEqual, kGreaterEqual, kEqual };

struct Variable {
  std::string name;
  double lower = 0, upper = kInf;
  VarType type = VarType::kContinuous;
};

struct Term {
  int var = 0;
  double coef = 0;
};

// sum(coef * var) + constant.
struct LinearExpr {
  std::vector<Term> terms;
  double constant = 0;

  LinearExpr() = default;
  explicit LinearExpr(double c) : constant(c) {}
  static LinearExpr var(int v, double coef = 1.0) {
    LinearExpr e;
    e.terms.push_back({v, coef});
    return e;
  }
  LinearExpr& add(int v, double coef) {
    terms.push_back({v, coef});
    return *this;
  }
  LinearExpr& add(const LinearExpr& other, double factor = 1.0) {
    for (const Term& t : other.terms) terms.push_back({t.var, t.coef * factor});
    constant += other.constant * factor;
    return *this;
  }
  LinearExpr& add_constant(double c) {
    constant += c;
    return *this;
  }
  bool is_constant() const { return terms.empty(); }
};

// A row: sum(terms) <sense> rhs (no constant on the left).
struct Constraint {
  std::string name;
  std::vector<Term> terms;
  Sense sense = Sense::kLessEqual;
  double rhs = 0;
};

class Model {
 public:
  int add_continuous(const std::string& name, double lower = 0, double upper = kInf);
  int add_binary(const std::string& name);
  // lhs <sense> rhs; the constant of lhs moves to the right, duplicate terms merge, zero terms
  // drop. A row left without terms is still kept (a constant check, e.g. an infeasible one).
  int add_constraint(const std::string& name, const LinearExpr& lhs, Sense sense, double rhs = 0.0);
  void set_objective(const LinearExpr& objective);  // minimise

  const std::vector<Variable>& variables() const { return vars_; }
  const std::vector<Constraint>& constraints() const { return rows_; }
  const LinearExpr& objective() const { return objective_; }
  int num_binaries() const;
  // Index of the variable with this name, -1 if none (linear scan: for tests and tools).
  int find_variable(const std::string& name) const;

  // Header comment lines the writers print first (without the comment marker).
  std::vector<std::string> comments;
  std::string name = "optpipe";

  // Everything `values` (one per variable) violates by more than `tol`: bounds, integrality
  // of binaries and rows, one line each, e.g. "row mem_F_s0_j2: 3.5 <= 3 violated by 0.5".
  std::vector<std::string> violations(const std::vector<double>& values, double tol = 1e-6) const;
  double objective_value(const std::vector<double>& values) const;

 private:
  std::vector<Variable> vars_;
  std::vector<Constraint> rows_;
  LinearExpr objective_;
};

// [A-Za-z_][A-Za-z0-9_]*, not starting with e/E, at most 255 characters.
bool is_valid_name(const std::string& name);

}  // namespace optpipe::milp
