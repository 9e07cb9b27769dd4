#include "compress/quant_params.h"

namespace pc {

std::vector<ParamSpec> QuantParamSpecs(int default_bits, int64_t default_group) {
  return {
      ParamSpec::Int("bits", default_bits, "bits per weight", 2, 8),
      ParamSpec::Int("group_size", default_group, "weights per quantization group along the input (-1: per channel)",
                     1, 1 << 20, {-1}),
      ParamSpec::Bool("zero_point", true, "asymmetric quantization with a zero point (false: symmetric)"),
  };
}

QuantSpec QuantSpecFromParams(const MethodParams& p, const std::string& where) {
  QuantSpec s;
  s.bits = static_cast<int>(p.Int("bits"));
  s.group_size = p.Int("group_size");
  s.zero_point = p.Bool("zero_point");
  s.Validate(where);
  return s;
}

}  // namespace pc
