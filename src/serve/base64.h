// Base64 (RFC 4648, standard alphabet, padded) for images inside JSON requests and responses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quill::serve {

std::string base64_encode(const uint8_t* data, size_t size);
// Whitespace is skipped; padding is optional; any other byte outside the alphabet: nullopt.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view text);

}  // namespace quill::serve
