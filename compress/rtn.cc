// compress/rtn.cc — round-to-nearest group quantization (the baseline quantizer).
#include "compress/method.h"
#include "compress/quantizer.h"
#include "compress/quant_params.h"

namespace pc {
namespace {

class Rtn final : public Method {
 public:
  Rtn(const MethodParams& p, const std::string& where) : Method("rtn", p), spec_(QuantSpecFromParams(p, where)) {}
  void CompressLinear(Linear& linear, const InputStats&, Record& record) override {
    linear.weight.copy_(FakeQuantize(linear.weight, spec_));
    record.values["bits"] = spec_.bits;
  }
  at::Tensor NaiveWeight(const at::Tensor& w) const override { return FakeQuantize(w, spec_); }

 private:
  QuantSpec spec_;
};

}  // namespace

void RegisterRtn(MethodRegistry& r) {
  r.Add({"rtn", "round-to-nearest group quantization (fake-quantized weights)", "quantization",
         QuantParamSpecs(), "awq", /*default_propagate_compressed=*/false,
         [](const MethodParams& p, const std::string& where) { return std::unique_ptr<Method>(new Rtn(p, where)); }});
}

}  // namespace pc
