#include "model/safetensors_format.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_util.h"

namespace pc {
namespace {

struct DTypeRow {
  StDType type;
  const char* name;
  int size;
};
constexpr DTypeRow kDTypes[] = {
    {StDType::kF64, "F64", 8}, {StDType::kF32, "F32", 4}, {StDType::kF16, "F16", 2}, {StDType::kBF16, "BF16", 2},
    {StDType::kI64, "I64", 8}, {StDType::kI32, "I32", 4}, {StDType::kI16, "I16", 2}, {StDType::kI8, "I8", 1},
    {StDType::kU8, "U8", 1},   {StDType::kBool, "BOOL", 1},
};

const DTypeRow& Row(StDType t) {
  for (const auto& r : kDTypes) {
    if (r.type == t) return r;
  }
  PC_ASSERT(false, "unknown StDType");
  return kDTypes[0];
}

uint64_t JsonU64(const nlohmann::json& v, const std::string& what) {
  PC_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), what,
           " must be a non-negative integer, got ", v.dump());
  return v.get<uint64_t>();
}

}  // namespace

StDType ParseStDType(const std::string& name, const std::string& where) {
  for (const auto& r : kDTypes) {
    if (name == r.name) return r.type;
  }
  std::string known;
  for (const auto& r : kDTypes) known += std::string(known.empty() ? "" : ", ") + r.name;
  PC_THROW(where, ": unknown dtype '", name, "' (supported: ", known, ")");
}
const char* StDTypeName(StDType t) { return Row(t).name; }
int StDTypeSize(StDType t) { return Row(t).size; }

std::vector<StTensorInfo> ParseSafetensorsHeader(const std::string& header_json, uint64_t data_size,
                                                 const std::string& where,
                                                 std::map<std::string, std::string>* metadata) {
  nlohmann::json header = ParseJson(header_json, where + " (header)");
  PC_CHECK(header.is_object(), where, ": header is ", header.type_name(), ", expected a JSON object");
  std::vector<StTensorInfo> tensors;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      PC_CHECK(it->is_object(), where, ": __metadata__ must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        PC_CHECK(m->is_string(), where, ": __metadata__ value '", m.key(), "' must be a string");
        if (metadata != nullptr) (*metadata)[m.key()] = m->get<std::string>();
      }
      continue;
    }
    std::string what = Str(where, ": tensor '", name, "'");
    PC_CHECK(it->is_object(), what, " must be an object with dtype, shape, data_offsets");
    StTensorInfo info;
    info.name = name;
    info.dtype = ParseStDType(JsonString(*it, "dtype", what), what);
    const auto& shape = JsonAt(*it, "shape", what);
    PC_CHECK(shape.is_array(), what, ": shape must be an array");
    PC_CHECK(shape.size() <= 8, what, ": shape has ", shape.size(), " dimensions (at most 8 supported)");
    uint64_t numel = 1;
    for (const auto& d : shape) {
      uint64_t dim = JsonU64(d, what + " shape entry");
      PC_CHECK(dim <= static_cast<uint64_t>(INT64_MAX), what, ": shape entry ", dim, " is too large");
      PC_CHECK(!__builtin_mul_overflow(numel, dim, &numel), what, ": shape ", shape.dump(),
               " overflows (product of dimensions exceeds 2^64)");
      info.shape.push_back(static_cast<int64_t>(dim));
    }
    const auto& offsets = JsonAt(*it, "data_offsets", what);
    PC_CHECK(offsets.is_array() && offsets.size() == 2, what, ": data_offsets must be [begin, end]");
    info.begin = JsonU64(offsets[0], what + " data_offsets[0]");
    info.end = JsonU64(offsets[1], what + " data_offsets[1]");
    PC_CHECK(info.begin <= info.end, what, ": data_offsets [", info.begin, ", ", info.end, "] are reversed");
    PC_CHECK(info.end <= data_size, what, ": data_offsets [", info.begin, ", ", info.end,
             "] reach beyond the data buffer of ", data_size, " bytes (truncated file?)");
    uint64_t bytes = 0;
    PC_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(StDTypeSize(info.dtype)), &bytes), what,
             ": shape ", shape.dump(), " overflows its byte size");
    PC_CHECK(info.end - info.begin == bytes, what, ": ", info.end - info.begin, " bytes in data_offsets but shape ",
             shape.dump(), " of ", StDTypeName(info.dtype), " needs ", bytes);
    tensors.push_back(std::move(info));
  }
  // No two tensors may share bytes (aliasing or overlap).
  std::vector<const StTensorInfo*> order;
  for (const auto& t : tensors) {
    if (t.end > t.begin) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < order.size(); ++i) {
    PC_CHECK(order[i - 1]->end <= order[i]->begin, where, ": tensors '", order[i - 1]->name, "' [",
             order[i - 1]->begin, ", ", order[i - 1]->end, ") and '", order[i]->name, "' [", order[i]->begin, ", ",
             order[i]->end, ") overlap");
  }
  return tensors;
}

}  // namespace pc
