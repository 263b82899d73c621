// Bounded tool output.
#include "executor_service/process/output_buffer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rein {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid or cut short.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and values above U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

}  // namespace

std::string SanitizeUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out.append("\xEF\xBF\xBD");
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

std::string EscapeCommandOutput(absl::string_view raw, size_t cap, size_t* consumed) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(raw.size(), cap));
  size_t i = 0;
  while (i < raw.size()) {
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    size_t n = Utf8SequenceLength(raw, i);
    const bool control = (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f;
    if (n == 0 || control) {
      if (out.size() + 4 > cap) break;
      out.append({'\\', 'x', kHex[c >> 4], kHex[c & 15]});
      ++i;
      continue;
    }
    if (out.size() + n > cap) break;
    out.append(raw.data() + i, n);
    i += n;
  }
  *consumed = i;
  return out;
}

void OutputBuffer::Append(absl::string_view text) {
  if (omitted_ > 0) {
    omitted_ += text.size();
    return;
  }
  const size_t room = cap_ - std::min(cap_, body_.size());
  if (text.size() <= room) {
    body_.append(text.data(), text.size());
    return;
  }
  body_.append(text.data(), room);
  omitted_ += text.size() - room;
}

std::string OutputBuffer::Finish(bool* truncated) && {
  size_t omitted = omitted_;
  if (omitted > 0) {
    // The cut may have split a character: move its leading bytes to the omitted count.
    size_t start = body_.size();
    while (start > 0 && body_.size() - start < 4 &&
           (static_cast<unsigned char>(body_[start - 1]) & 0xC0) == 0x80) {
      --start;
    }
    if (start > 0 && static_cast<unsigned char>(body_[start - 1]) >= 0xC0) {
      --start;
      if (Utf8SequenceLength(body_, start) == 0) {
        omitted += body_.size() - start;
        body_.resize(start);
      }
    }
  }
  std::string out = SanitizeUtf8(body_);
  if (out.size() > cap_) {
    // Replacement characters grew the body: cut again, at a character boundary.
    size_t cut = cap_;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    omitted += out.size() - cut;
    out.resize(cut);
  }
  *truncated = omitted > 0;
  if (omitted > 0) {
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
    absl::StrAppend(&out, "[output truncated: ", omitted, " bytes omitted]\n");
  }
  for (const std::string& note : notes_) {
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
    absl::StrAppend(&out, SanitizeUtf8(note), "\n");
  }
  return out;
}

}  // namespace rein
