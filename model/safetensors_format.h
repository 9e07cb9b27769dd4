// model/safetensors_format.h — the safetensors header format, parsed and validated without
// LibTorch (fuzzed: tests/fuzz/). Files and tensors: model/safetensors.h.
//
// Format: 8-byte little-endian header length N, N bytes of JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data buffer; offsets are relative to the buffer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pc {

enum class StDType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

StDType ParseStDType(const std::string& name, const std::string& where);
const char* StDTypeName(StDType t);
int StDTypeSize(StDType t);

struct StTensorInfo {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data buffer
};

// Parses and validates a header: JSON (depth-limited), every dtype, shapes (no overflow),
// byte ranges in bounds of `data_size`, sizes = product(shape) x dtype size, no overlap or
// aliasing. `where` names the file in errors.
std::vector<StTensorInfo> ParseSafetensorsHeader(const std::string& header_json, uint64_t data_size,
                                                 const std::string& where,
                                                 std::map<std::string, std::string>* metadata);

}  // namespace pc
