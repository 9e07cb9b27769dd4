// core/sha256.h — SHA-256 of bytes or a file, as lower-case hex (for recorded conventions).
#pragma once

#include <cstdint>
#include <string>

namespace pc {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(const std::string& s) { Update(s.data(), s.size()); }
  std::string HexDigest();  // finishes; call once

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(const std::string& bytes);
std::string Sha256File(const std::string& path);

}  // namespace pc
