#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/strings.h"

namespace pc {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ULL * 1000 * 1000;  // as the reference implementation

constexpr std::pair<StDType, at::ScalarType> kScalar[] = {
    {StDType::kF64, at::kDouble}, {StDType::kF32, at::kFloat}, {StDType::kF16, at::kHalf},
    {StDType::kBF16, at::kBFloat16}, {StDType::kI64, at::kLong}, {StDType::kI32, at::kInt},
    {StDType::kI16, at::kShort}, {StDType::kI8, at::kChar}, {StDType::kU8, at::kByte}, {StDType::kBool, at::kBool},
};

uint64_t ReadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

at::ScalarType ToScalarType(StDType t) {
  for (const auto& [s, a] : kScalar) {
    if (s == t) return a;
  }
  PC_ASSERT(false, "unknown StDType");
  return at::kFloat;
}

StDType FromScalarType(at::ScalarType t) {
  for (const auto& [s, a] : kScalar) {
    if (a == t) return s;
  }
  PC_THROW("safetensors: dtype ", c10::toString(t), " cannot be stored");
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->fd_ = fs::OpenForRead(path);  // a FIFO or device is refused before anything blocks
  struct stat st;
  PC_CHECK(::fstat(f->fd_, &st) == 0, "cannot stat '", path, "': ", std::strerror(errno));
  PC_CHECK(S_ISREG(st.st_mode), "'", path, "' is not a regular file");
  f->file_size_ = static_cast<uint64_t>(st.st_size);
  PC_CHECK(f->file_size_ >= 8, "'", path, "': file of ", f->file_size_,
           " bytes is too short for a safetensors header (expected at least 8 bytes)");
  void* map = ::mmap(nullptr, f->file_size_, PROT_READ, MAP_PRIVATE, f->fd_, 0);
  PC_CHECK(map != MAP_FAILED, "cannot map '", path, "': ", std::strerror(errno));
  f->map_ = static_cast<uint8_t*>(map);
  uint64_t n = ReadLE64(f->map_);
  PC_CHECK(n <= f->file_size_ - 8, "'", path, "': header length ", n, " is beyond the file size ", f->file_size_,
           " (truncated or not a safetensors file)");
  PC_CHECK(n <= kMaxHeaderBytes, "'", path, "': header length ", n, " exceeds the limit of ", kMaxHeaderBytes);
  PC_CHECK(n >= 2, "'", path, "': header length ", n, " is too small for a JSON object");
  f->data_offset_ = 8 + n;
  f->data_size_ = f->file_size_ - f->data_offset_;
  std::string header(reinterpret_cast<const char*>(f->map_ + 8), n);
  f->tensors_ = ParseSafetensorsHeader(header, f->data_size_, path, &f->metadata_);
  for (size_t i = 0; i < f->tensors_.size(); ++i) f->index_[f->tensors_[i].name] = i;
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, file_size_);
  if (fd_ >= 0) ::close(fd_);
}

const StTensorInfo* SafetensorsFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

at::Tensor SafetensorsFile::Load(const StTensorInfo& info) const {
  at::Tensor t = at::empty(info.shape, at::TensorOptions().dtype(ToScalarType(info.dtype)));
  // Copied in pieces, each piece's pages dropped behind the copy: a tensor is never resident
  // twice (mapped and copied) beyond one piece.
  constexpr uint64_t kPiece = 16ULL << 20;
  auto* dst = static_cast<uint8_t*>(t.data_ptr());
  for (uint64_t pos = info.begin; pos < info.end; pos += kPiece) {
    const uint64_t end = std::min(info.end, pos + kPiece);
    std::memcpy(dst + (pos - info.begin), map_ + data_offset_ + pos, end - pos);
    DropPages(data_offset_ + pos, data_offset_ + end);
  }
  return t;
}

void SafetensorsFile::DropPages(uint64_t begin, uint64_t end) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;  // whole pages inside the range only
  end = end / page * page;
  if (end > begin) ::madvise(map_ + begin, end - begin, MADV_DONTNEED);
}

std::shared_ptr<Checkpoint> Checkpoint::Open(const std::string& dir) {
  PC_CHECK(fs::Exists(dir), "model folder '", dir, "' does not exist");
  PC_CHECK(fs::IsDirectory(dir), "'", dir, "' is not a folder (expected a Hugging Face model folder)");
  auto ck = std::make_shared<Checkpoint>();
  ck->dir_ = dir;
  std::string index_path = fs::Join(dir, "model.safetensors.index.json");
  std::string single = fs::Join(dir, "model.safetensors");
  std::vector<std::string> files;
  std::map<std::string, std::string> expected;  // tensor -> shard file, from the index
  if (fs::Exists(index_path)) {
    nlohmann::json index = LoadJsonFile(index_path);
    const auto& map = JsonAt(index, "weight_map", index_path);
    PC_CHECK(map.is_object(), index_path, ": weight_map must be an object {tensor: file}");
    for (auto it = map.begin(); it != map.end(); ++it) {
      PC_CHECK(it->is_string(), index_path, ": weight_map['", it.key(), "'] must be a file name");
      std::string file = it->get<std::string>();
      PC_CHECK(!file.empty() && file[0] != '/' && fs::IsInside(dir, fs::Join(dir, file)), index_path,
               ": shard '", file, "' of tensor '", it.key(), "' lies outside the model folder");
      PC_CHECK(fs::Exists(fs::Join(dir, file)), index_path, ": shard '", file, "' of tensor '", it.key(),
               "' does not exist");
      if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
      expected[it.key()] = file;
    }
    PC_CHECK(!files.empty(), index_path, ": weight_map is empty");
  } else if (fs::Exists(single)) {
    files.push_back("model.safetensors");
  } else {
    std::string hint = fs::Exists(fs::Join(dir, "pytorch_model.bin"))
                           ? " (pytorch_model.bin is not supported: save the model with safe_serialization=True)"
                           : "";
    PC_THROW("'", dir, "' holds neither model.safetensors nor model.safetensors.index.json", hint);
  }
  for (const auto& file : files) {
    ck->files_.push_back(SafetensorsFile::Open(fs::Join(dir, file)));
    size_t idx = ck->files_.size() - 1;
    for (const auto& info : ck->files_.back()->tensors()) {
      PC_CHECK(!ck->where_.count(info.name), "'", dir, "': tensor '", info.name, "' appears in two shards");
      ck->where_[info.name] = {idx, &info};
    }
  }
  for (const auto& [name, file] : expected) {
    auto it = ck->where_.find(name);
    PC_CHECK(it != ck->where_.end(), index_path, ": tensor '", name, "' is listed for shard '", file,
             "' but that shard does not hold it");
  }
  return ck;
}

const StTensorInfo& Checkpoint::Info(const std::string& name) const {
  auto it = where_.find(name);
  PC_CHECK(it != where_.end(), "'", dir_, "': missing tensor '", name, "'");
  return *it->second.second;
}

at::Tensor Checkpoint::LoadRaw(const std::string& name) const {
  auto it = where_.find(name);
  PC_CHECK(it != where_.end(), "'", dir_, "': missing tensor '", name, "'");
  return files_[it->second.first]->Load(*it->second.second);
}

at::Tensor Checkpoint::Load(const std::string& name, at::ScalarType dtype) const {
  at::Tensor raw = LoadRaw(name);
  return raw.scalar_type() == dtype ? raw : raw.to(dtype);
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, w] : where_) names.push_back(name);
  return names;
}

uint64_t Checkpoint::TotalBytes() const {
  uint64_t total = 0;
  for (const auto& [name, w] : where_) total += w.second->end - w.second->begin;
  return total;
}

std::vector<std::string> Checkpoint::Files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writer

SafetensorsWriter::SafetensorsWriter(std::string dir, std::vector<Entry> entries, uint64_t max_shard_bytes,
                                     std::map<std::string, std::string> metadata)
    : dir_(std::move(dir)) {
  PC_CHECK(max_shard_bytes > 0, "safetensors writer: shard size must be positive");
  // Assign tensors to shards in declaration order.
  std::vector<std::vector<size_t>> shard_members(1);
  uint64_t shard_bytes = 0;
  for (auto& e : entries) {
    uint64_t numel = 1;
    for (int64_t d : e.shape) numel *= static_cast<uint64_t>(d);
    uint64_t bytes = numel * StDTypeSize(e.dtype);
    PC_CHECK(!index_.count(e.name), "safetensors writer: tensor '", e.name, "' declared twice");
    if (shard_bytes > 0 && shard_bytes + bytes > max_shard_bytes) {
      shard_members.emplace_back();
      shard_bytes = 0;
    }
    Slot slot;
    slot.entry = std::move(e);
    slot.shard = shard_members.size() - 1;
    slot.begin = shard_bytes;
    slot.end = shard_bytes + bytes;
    shard_bytes += bytes;
    index_[slot.entry.name] = slots_.size();
    shard_members.back().push_back(slots_.size());
    slots_.push_back(std::move(slot));
  }
  const size_t n = shard_members.size();
  for (size_t s = 0; s < n; ++s) {
    Shard shard;
    if (n == 1) {
      shard.file = "model.safetensors";
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", s + 1, n);
      shard.file = buf;
    }
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    for (size_t i : shard_members[s]) {
      const Slot& slot = slots_[i];
      header[slot.entry.name] = {{"dtype", StDTypeName(slot.entry.dtype)},
                                 {"shape", slot.entry.shape},
                                 {"data_offsets", {slot.begin, slot.end}}};
    }
    std::string text = header.dump();
    while ((8 + text.size()) % 8 != 0) text.push_back(' ');
    std::string path = fs::Join(dir_, shard.file);
    shard.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    PC_CHECK_OUTPUT(shard.fd >= 0, "cannot write '", path, "': ", std::strerror(errno));
    uint8_t len[8];
    uint64_t hl = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(hl >> (8 * i));
    std::string head(reinterpret_cast<char*>(len), 8);
    head += text;
    PC_CHECK_OUTPUT(::pwrite(shard.fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()), "cannot write '",
             path, "': ", std::strerror(errno));
    shard.data_offset = head.size();
    shards_.push_back(shard);
  }
}

SafetensorsWriter::~SafetensorsWriter() {
  for (auto& s : shards_) {
    if (s.fd >= 0) ::close(s.fd);
  }
}

void SafetensorsWriter::Write(const std::string& name, const at::Tensor& t) {
  auto it = index_.find(name);
  PC_ASSERT(it != index_.end(), "tensor '", name, "' was not declared");
  Slot& slot = slots_[it->second];
  PC_ASSERT(!slot.written, "tensor '", name, "' written twice");
  PC_ASSERT(t.sizes().vec() == slot.entry.shape, "tensor '", name, "' shape differs from its declaration");
  at::Tensor c = t.to(at::kCPU).to(ToScalarType(slot.entry.dtype)).contiguous();
  // Every value must be finite in the dtype it is stored in: a float32 value beyond F16's ±65504
  // becomes ±inf in an F16 file, which every reader (perpcomp's own loader too) refuses.
  if (c.is_floating_point()) {
    const at::Tensor bad = at::isfinite(c).logical_not();
    const int64_t n = bad.sum().item<int64_t>();
    if (n > 0) {
      const int64_t first = bad.reshape({-1}).nonzero().index({0, 0}).item<int64_t>();
      const at::Tensor src = t.to(at::kCPU).reshape({-1});
      const double from = src[first].to(at::kDouble).item<double>();
      const double stored = c.reshape({-1})[first].to(at::kDouble).item<double>();
      PC_THROW("cannot write tensor '", name, "' to '", fs::Join(dir_, shards_[slot.shard].file), "': ", n,
               " of its values are not finite in ", StDTypeName(slot.entry.dtype), " (the first, at flat index ", first,
               ", is ", stored,
               std::isfinite(from) ? Str(", from the finite ", from, " in ", c10::toString(t.scalar_type()),
                                         ", beyond the dtype's range")
                                   : std::string(", already before the conversion"),
               "); nothing was written under the final name");
    }
  }
  const Shard& shard = shards_[slot.shard];
  const char* p = static_cast<const char*>(c.data_ptr());
  uint64_t remaining = slot.end - slot.begin, off = shard.data_offset + slot.begin;
  while (remaining > 0) {
    ssize_t w = ::pwrite(shard.fd, p, remaining, static_cast<off_t>(off));
    PC_CHECK_OUTPUT(w > 0, "cannot write tensor '", name, "' to '", fs::Join(dir_, shard.file), "': ", std::strerror(errno));
    p += w;
    off += static_cast<uint64_t>(w);
    remaining -= static_cast<uint64_t>(w);
  }
  slot.written = true;
}

void SafetensorsWriter::Finish() {
  PC_ASSERT(!finished_);
  for (const auto& slot : slots_) PC_ASSERT(slot.written, "tensor '", slot.entry.name, "' was never written");
  uint64_t total = 0;
  for (auto& s : shards_) {
    PC_CHECK_OUTPUT(::fsync(s.fd) == 0, "cannot write '", fs::Join(dir_, s.file), "': ", std::strerror(errno));
    PC_CHECK_OUTPUT(::close(s.fd) == 0, "cannot write '", fs::Join(dir_, s.file), "': ", std::strerror(errno));
    s.fd = -1;
  }
  if (shards_.size() > 1) {
    nlohmann::json map = nlohmann::json::object();
    for (const auto& slot : slots_) {
      map[slot.entry.name] = shards_[slot.shard].file;
      total += slot.end - slot.begin;
    }
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
    fs::WriteFileAtomic(fs::Join(dir_, "model.safetensors.index.json"), index.dump(2) + "\n");
  }
  finished_ = true;
}

std::vector<std::string> SafetensorsWriter::files() const {
  std::vector<std::string> out;
  for (const auto& s : shards_) out.push_back(s.file);
  return out;
}

}  // namespace pc
