// perpcomp sensitivity --model DIR --candidates FILE --calib SPEC --out FILE.h5 [--accumulated] [--kl]
#include <cstdio>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "pipeline/sensitivity.h"
#include "tools/cli.h"

namespace pc::cli {

int RunSensitivityCmd(const std::vector<std::string>& args) {
  CommonOptions common;
  pipeline::SensitivityOptions o;
  int64_t samples = 0, seq_len = 0, seed = -1;
  std::string windowing, text_field;
  po::options_description desc("options");
  desc.add_options()
    ("model", po::value<std::string>(&o.model_dir), "Hugging Face model folder")
    ("candidates", po::value<std::string>(&o.candidates_file), "candidate settings (YAML, docs/ALLOCATION.md)")
    ("calib", po::value<std::string>(&o.calib.source), "calibration text (plain or *.jsonl) or self:N")
    ("calib-samples", po::value<int64_t>(&samples)->default_value(32), "calibration windows N")
    ("calib-seq-len", po::value<int64_t>(&seq_len)->default_value(0), "tokens per window (0: min(512, context))")
    ("calib-seed", po::value<int64_t>(&seed)->default_value(0), "calibration seed")
    ("calib-windowing", po::value<std::string>(&windowing)->default_value("random"), "awq | random")
    ("text-field", po::value<std::string>(&text_field), "JSON-lines field of the calibration text (default text)")
    ("measure-windows", po::value<int64_t>(&o.measure_windows)->default_value(0),
     "windows the errors are measured on (0: all calibration windows)")
    ("accumulated", po::bool_switch(&o.accumulated),
     "also run each candidate's block output through the later (uncompressed) blocks: the error at the last block")
    ("kl", po::bool_switch(&o.kl), "also KL at the logits (implies --accumulated)")
    ("micro-batch", po::value<int64_t>(&o.micro_batch)->default_value(0), "windows per forward (0: auto)")
    ("out", po::value<std::string>(&o.out), "output HDF5 file (kind sensitivity)")
    ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --out");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("sensitivity", "--model DIR --candidates FILE --calib SPEC --out FILE.h5", desc, args, vm, nullptr,
             &common)) {
    return 0;
  }
  PC_CHECK(!o.model_dir.empty(), "--model is required");
  PC_CHECK(!o.candidates_file.empty(), "--candidates is required (a YAML file, docs/ALLOCATION.md)");
  PC_CHECK(!o.calib.source.empty(), "--calib is required: a text file (plain or *.jsonl) or self:N");
  PC_CHECK(!o.out.empty(), "--out is required");
  PC_CHECK(samples > 0, "--calib-samples must be positive, got ", samples);
  PC_CHECK(seq_len >= 0, "--calib-seq-len must be >= 0, got ", seq_len);
  PC_CHECK(seed >= 0, "--calib-seed must be >= 0, got ", seed);
  PC_CHECK(o.measure_windows >= 0, "--measure-windows must be >= 0, got ", o.measure_windows);
  o.calib.samples = samples;
  if (seq_len > 0) o.calib.seq_len = seq_len;
  o.calib.seed = static_cast<uint64_t>(seed);
  o.calib.windowing = windowing;
  if (!text_field.empty()) o.calib.text_field = text_field;
  fs::CheckOutputPath(o.out, o.overwrite, "--out", fs::OutputKind::kFile);
  fs::CheckNotAnInput(o.out, "--out", {{"--model", o.model_dir}, {"--calib", o.calib.source}, {"--candidates", o.candidates_file}});
  const pipeline::SensitivityResult r = pipeline::RunSensitivity(o);
  std::printf("wrote %s: %d units x %d candidates over %d blocks in %.1f s; cost %.1f block forwards over the "
              "calibration windows = %.2f forward-equivalents%s\n",
              o.out.c_str(), r.units, r.candidates, r.layers, r.seconds, r.block_forwards, r.forward_equivalents,
              r.head_forwards > 0 ? Str(" (+ ", r.head_forwards, " head forwards)").c_str() : "");
  return 0;
}

}  // namespace pc::cli
