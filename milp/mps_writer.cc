#include "milp/mps_writer.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace optpipe::milp {
namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string mps_text(const Model& model) {
  const auto& vars = model.variables();
  const auto& rows = model.constraints();
  // Column-wise entries: (row index or -1 for the objective, coefficient).
  std::vector<std::vector<std::pair<int, double>>> cols(vars.size());
  for (const Term& t : model.objective().terms) cols[t.var].push_back({-1, t.coef});
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (const Term& t : rows[r].terms) cols[t.var].push_back({static_cast<int>(r), t.coef});

  std::string out;
  for (const std::string& c : model.comments) out += "* " + c + "\n";
  out += "NAME " + model.name + "\nROWS\n N obj\n";
  for (const Constraint& c : rows) {
    out += c.sense == Sense::kLessEqual ? " L " : c.sense == Sense::kGreaterEqual ? " G " : " E ";
    out += c.name + "\n";
  }
  out += "COLUMNS\n";
  bool in_int = false;
  int marker = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const bool is_int = vars[i].type == VarType::kBinary;
    if (is_int != in_int) {
      out += " MARKER" + std::to_string(marker++) + " 'MARKER' " + (is_int ? "'INTORG'" : "'INTEND'") + "\n";
      in_int = is_int;
    }
    if (cols[i].empty()) {  // keep the column: an explicit zero in the objective
      out += " " + vars[i].name + " obj 0\n";
      continue;
    }
    for (const auto& [r, coef] : cols[i]) {
      out += " " + vars[i].name + " " + (r < 0 ? std::string("obj") : rows[r].name) + " " + num(coef) + "\n";
    }
  }
  if (in_int) out += " MARKER" + std::to_string(marker++) + " 'MARKER' 'INTEND'\n";
  out += "RHS\n";
  for (const Constraint& c : rows) {
    if (c.rhs != 0.0) out += " RHS " + c.name + " " + num(c.rhs) + "\n";
  }
  out += "BOUNDS\n";
  for (const Variable& v : vars) {
    if (v.type == VarType::kBinary) {
      out += " UP BND " + v.name + " 1\n";
      continue;
    }
    if (std::isinf(v.lower) && v.lower < 0) {
      out += " MI BND " + v.name + "\n";
    } else if (v.lower != 0.0) {
      out += " LO BND " + v.name + " " + num(v.lower) + "\n";
    }
    if (!std::isinf(v.upper)) out += " UP BND " + v.name + " " + num(v.upper) + "\n";
  }
  out += "ENDATA\n";
  return out;
}

}  // namespace optpipe::milp
