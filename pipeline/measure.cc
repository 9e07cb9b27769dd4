#include "pipeline/measure.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "metrics/model_compare.h"
#include "metrics/results_h5.h"
#include "pipeline/run_io.h"
#include "pipeline/memory_estimate.h"
#include "store/file.h"

namespace pc::pipeline {

MeasureRunResult RunMeasure(const MeasureRunOptions& o) {
  PC_CHECK(o.batch >= 0, "--batch must not be negative");
  RunOutputOptions ro{o.out, store::kind::kMeasure, o.run.empty() ? DefaultRunName(o.compressed) : o.run, o.overwrite,
                      o.append};
  fs::CheckNotAnInput(o.out, "--out",
                      {{"--reference", o.reference}, {"--compressed", o.compressed}, {"--text", o.text}});
  CheckRunOutput(ro);
  MeasureOptions mo;
  mo.cache = o.cache;
  mo.batch = o.batch;
  mo.per_token = o.per_token;
  mo.reference_name = "reference '" + o.reference + "'";
  mo.compressed_name = "compressed '" + o.compressed + "'";

  // Both models stay in their checkpoints and are measured block by block (metrics/measure.h):
  // embeddings first (then freed), one block of each, the heads last.
  ModelOptions ref_opts{o.reference, o.dtype, /*load_blocks=*/false, /*load_head=*/false};
  ModelOptions comp_opts{o.compressed, o.dtype, /*load_blocks=*/false, /*load_head=*/false};
  mo.release_embeddings = true;
  const ModelConfig ref_config = LoadModelConfig(o.reference);
  CheckSameConfig(ref_config, LoadModelConfig(o.compressed), mo.reference_name, mo.compressed_name);
  CheckSameTokenizer(o.compressed, "compressed model", o.reference, o.text);
  TextWindows tw = LoadTextWindows(o.text, o.text_field, o.seq_len, o.max_windows, ref_config, o.reference);
  const RunDTypes dtypes = ResolveDTypes(o.dtype);
  {
    EvalMemoryOptions eo;
    eo.windows = tw.windows.tokens.size(0);
    eo.seq_len = tw.windows.tokens.size(1);
    eo.batch = o.batch;
    eo.weight_bytes = dtypes.weight_bytes;
    eo.compute_bytes = dtypes.compute_bytes;
    eo.disk_bytes = DiskWeightBytes(ref_config);
    eo.per_token = o.per_token;
    eo.text_bytes = fs::FileSize(o.text);
    const MemoryEstimate memory = EstimateMeasure(ref_config, eo);
    log::Verbose("measure", memory.Describe(8));
    CheckMemoryFits(memory, o.memory_limit,
                             "reduce --batch (windows per forward) or --max-windows, or use --dtype bf16");
  }
  auto ref = LoadModel(ref_opts);
  auto comp = LoadModel(comp_opts);
  mo.text_sha256 = tw.text.sha256;
  MeasureRunResult res;
  res.measure = Measure(*ref, *comp, tw.windows.tokens, mo);
  const MeasureResult& r = res.measure;

  RunOutput output = StartRunOutput(ro);
  nlohmann::json attrs = {{"run", ro.run},
                          {"reference", o.reference},
                          {"compressed", o.compressed},
                          {"text", o.text},
                          {"text_sha256", tw.text.sha256},
                          {"stream_tokens", tw.windows.stream_tokens},
                          {"tokens", r.windows * (r.seq_len - 1)},
                          {"dtype", o.dtype},
                          {"compute_dtype", dtypes.compute_name},
                          {"model_type", ref->config().model_type},
                          {"layers", ref->num_layers()}};
  std::string record = CompressionRecord(*comp);
  if (!record.empty()) attrs["compression"] = record;
  SetAttrs(output.run, attrs);
  WriteMeasureRun(output.run, r, tw.windows.tokens);
  output.writer.Commit();
  res.run = ro.run;
  res.text_sha256 = tw.text.sha256;
  res.layers = ref->num_layers();
  return res;
}

}  // namespace pc::pipeline
