#include "compress/method.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc {

const MethodRegistry& MethodRegistry::Builtins() {
  static const MethodRegistry registry = [] {
    MethodRegistry r;
    RegisterRtn(r);
    RegisterBuiltinExtras(r);
    return r;
  }();
  return registry;
}

void MethodRegistry::Add(MethodInfo info) {
  PC_ASSERT(!Has(info.name), "method '", info.name, "' registered twice");
  methods_.push_back(std::move(info));
}

bool MethodRegistry::Has(const std::string& name) const {
  for (const auto& m : methods_) {
    if (m.name == name) return true;
  }
  return false;
}

const MethodInfo& MethodRegistry::Get(const std::string& name, const std::string& where) const {
  for (const auto& m : methods_) {
    if (m.name == name) return m;
  }
  PC_THROW(where.empty() ? "" : where + ": ", "unknown method '", name, "' (registered: ", Join(Names(), ", "), ")");
}

std::vector<std::string> MethodRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& m : methods_) out.push_back(m.name);
  return out;
}

}  // namespace pc
