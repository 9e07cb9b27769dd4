// compress/quant_params.h — the quantizer parameters every quantizing method declares.
#pragma once

#include <string>
#include <vector>

#include "compress/params.h"
#include "compress/quantizer.h"

namespace pc {

// bits (2..8, default 4), group_size (-1 per channel, or >= 1; default 128), zero_point (default true).
std::vector<ParamSpec> QuantParamSpecs(int default_bits = 4, int64_t default_group = 128);
QuantSpec QuantSpecFromParams(const MethodParams& p, const std::string& where);

}  // namespace pc
