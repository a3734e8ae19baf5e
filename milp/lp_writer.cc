#include "milp/lp_writer.h"

#include <cmath>
#include <cstdio>

namespace optpipe::milp {
namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// " + 2 x - 1 y ..." wrapped every 6 terms; a row without terms gets "0 <first variable>".
void append_terms(std::string& out, const std::vector<Term>& terms, const Model& model) {
  if (terms.empty()) {
    out += " 0 " + model.variables().front().name;
    return;
  }
  int on_line = 0;
  for (const Term& t : terms) {
    if (on_line == 6) {
      out += "\n  ";
      on_line = 0;
    }
    out += t.coef < 0 ? " - " : " + ";
    out += num(std::fabs(t.coef)) + " " + model.variables()[t.var].name;
    ++on_line;
  }
}

}  // namespace

std::string lp_text(const Model& model) {
  std::string out;
  for (const std::string& c : model.comments) out += "\\ " + c + "\n";
  out += "\\ Problem name: " + model.name + "\n\nMinimize\n obj:";
  append_terms(out, model.objective().terms, model);
  out += "\nSubject To\n";
  for (const Constraint& c : model.constraints()) {
    out += " " + c.name + ":";
    append_terms(out, c.terms, model);
    out += c.sense == Sense::kLessEqual ? " <= " : c.sense == Sense::kGreaterEqual ? " >= " : " = ";
    out += num(c.rhs) + "\n";
  }
  out += "Bounds\n";
  for (const Variable& v : model.variables()) {
    if (v.type == VarType::kBinary) continue;
    const std::string lo = std::isinf(v.lower) ? "-inf" : num(v.lower);
    if (std::isinf(v.upper)) {
      out += " " + v.name + " >= " + lo + "\n";
    } else {
      out += " " + lo + " <= " + v.name + " <= " + num(v.upper) + "\n";
    }
  }
  bool any_binary = false;
  for (const Variable& v : model.variables()) {
    if (v.type != VarType::kBinary) continue;
    if (!any_binary) out += "Binaries\n";
    any_binary = true;
    out += " " + v.name + "\n";
  }
  out += "End\n";
  return out;
}

}  // namespace optpipe::milp
