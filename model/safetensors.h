// model/safetensors.h — safetensors files read over mmap and written by streaming.
//
// The header (model/safetensors_format.h) is validated before any byte is used: header
// length within the file, JSON, dtype, shape (no overflow), byte range in bounds,
// size = product(shape) × dtype size, no overlaps.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/safetensors_format.h"

namespace pc {

at::ScalarType ToScalarType(StDType t);
StDType FromScalarType(at::ScalarType t);  // throws for unsupported

// One safetensors file, mapped read-only. Tensors are returned as copies (Load); there are no
// views into the mapping, so its pages can be dropped once copied.
class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<StTensorInfo>& tensors() const { return tensors_; }
  const StTensorInfo* Find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The tensor's bytes as a tensor of its own dtype (a copy, owned). The mapped pages are dropped
  // from this process as they are copied (they stay in the page cache), so peak memory follows
  // what is in use, not what was read.
  at::Tensor Load(const StTensorInfo& info) const;
  uint64_t data_size() const { return data_size_; }

 private:
  SafetensorsFile() = default;
  void DropPages(uint64_t begin, uint64_t end) const;  // file offsets
  std::string path_;
  int fd_ = -1;
  uint8_t* map_ = nullptr;
  uint64_t file_size_ = 0, data_offset_ = 0, data_size_ = 0;
  std::vector<StTensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// A model folder's weights: model.safetensors, or the shards of
// model.safetensors.index.json (every shard inside the folder).
class Checkpoint {
 public:
  static std::shared_ptr<Checkpoint> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool Has(const std::string& name) const { return where_.count(name) > 0; }
  const StTensorInfo& Info(const std::string& name) const;  // throws naming the tensor and folder
  // Copy of the tensor converted to `dtype` (contiguous, owned).
  at::Tensor Load(const std::string& name, at::ScalarType dtype) const;
  at::Tensor LoadRaw(const std::string& name) const;  // on-disk dtype
  std::vector<std::string> Names() const;
  uint64_t TotalBytes() const;
  std::vector<std::string> Files() const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<size_t, const StTensorInfo*>> where_;
};

// Streaming writer: declare every tensor first (names, dtypes, shapes), then write each
// one (in any order), then Finish(). Shards above `max_shard_bytes` into
// model-0000k-of-0000n.safetensors + model.safetensors.index.json, as Hugging Face does.
class SafetensorsWriter {
 public:
  struct Entry {
    std::string name;
    StDType dtype;
    std::vector<int64_t> shape;
  };
  SafetensorsWriter(std::string dir, std::vector<Entry> entries, uint64_t max_shard_bytes,
                    std::map<std::string, std::string> metadata = {{"format", "pt"}});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Converts `t` to the declared dtype; the shape must match the declaration.
  void Write(const std::string& name, const at::Tensor& t);
  void Finish();  // checks that every tensor was written, fsyncs, writes the index
  std::vector<std::string> files() const;

 private:
  struct Shard {
    std::string file;
    int fd = -1;
    uint64_t data_offset = 0;
  };
  struct Slot {
    Entry entry;
    size_t shard = 0;
    uint64_t begin = 0, end = 0;
    bool written = false;
  };
  std::string dir_;
  std::vector<Shard> shards_;
  std::vector<Slot> slots_;
  std::map<std::string, size_t> index_;
  bool finished_ = false;
};

inline constexpr uint64_t kDefaultMaxShardBytes = 5ULL * 1000 * 1000 * 1000;  // HF's "5GB"

}  // namespace pc
