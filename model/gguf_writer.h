// model/gguf_writer.h — llama.cpp's GGUF files written, the inverse of model/gguf_format.h, without
// LibTorch (tests/compress/gguf_export_test.cc writes, parses back and checks every field).
//
// Version 3, little-endian: the header (magic, version, tensor count, metadata count), the metadata
// in the order added, the tensor infos in the order declared, padding to general.alignment (32
// unless the metadata sets it), then each tensor's bytes at an aligned offset. The file is written
// under a temporary name beside the final one (core/fs.h StagedFile) and renamed into place by
// Finish(); a failed write (a full disk) is an OutputError naming the file and the reason, and
// leaves nothing under the final name.
//
// Block encoders for the types perpcomp writes from integer codes (model/gguf_quants.h decodes them):
//   Q4_0  32 values a block: fp16 d, 16 bytes; w = d · (q − 8), q in [0, 15]
//   Q4_1  32 values a block: fp16 d, fp16 m, 16 bytes; w = d · q + m, q in [0, 15]
//   Q8_0  32 values a block: fp16 d, 32 int8; w = d · q, q in [−128, 127]
// Nibbles: byte j of a 4-bit block holds q[j] in its low and q[j + 16] in its high half.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/fs.h"
#include "model/gguf_format.h"

namespace pc {

uint16_t FloatToHalf(float x);      // IEEE binary16, round to nearest even (overflow: ±inf)
uint16_t FloatToBFloat16(float x);  // round to nearest even (NaN kept quiet)

// `blocks` blocks of 32 codes each (`q`: blocks × 32), one fp16 d (and m) per block, into `dst`
// (blocks × 18 / 20 / 34 bytes). Asserts the codes' range (the caller recovered them exactly).
void EncodeQ4_0(const uint8_t* q, const uint16_t* d, int64_t blocks, uint8_t* dst);
void EncodeQ4_1(const uint8_t* q, const uint16_t* d, const uint16_t* m, int64_t blocks, uint8_t* dst);
void EncodeQ8_0(const int8_t* q, const uint16_t* d, int64_t blocks, uint8_t* dst);

// Metadata values, as GgufValue (model/gguf_format.h) holds them.
GgufValue GgufString(const std::string& s);
GgufValue GgufU32(uint32_t v);
GgufValue GgufI32(int32_t v);
GgufValue GgufF32(float v);
GgufValue GgufBool(bool v);
GgufValue GgufStringArray(const std::vector<std::string>& v);
GgufValue GgufF32Array(const std::vector<float>& v);
GgufValue GgufI32Array(const std::vector<int32_t>& v);

class GgufWriter {
 public:
  // Checks `path` (core/fs.h CheckOutputPath: exists without `overwrite`, parent not writable).
  GgufWriter(const std::string& path, bool overwrite);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Before the first Write. Keys are unique; general.alignment (uint32, a power of two) sets the
  // alignment.
  void AddMetadata(const std::string& key, GgufValue value);
  // ne in ggml order (ne[0] the row length); the row length must be a multiple of the type's block.
  void DeclareTensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne);
  // The bytes of the next declared tensor, in declaration order (the header goes out first).
  void Write(const std::string& name, const void* bytes, uint64_t size);
  // Every declared tensor written: syncs and renames the file into place.
  void Finish();

  uint64_t TensorBytes(const std::string& name) const;  // a declared tensor's size in bytes

 private:
  void WriteHeader();
  void Put(const void* p, uint64_t n);
  void PadTo(uint64_t alignment);
  std::unique_ptr<fs::StagedFile> staged_;
  int fd_ = -1;
  uint64_t pos_ = 0;
  GgufHeader header_;  // metadata and tensor infos as they will be parsed back
  size_t next_ = 0;    // the next tensor to write
  bool finished_ = false;
};

}  // namespace pc
