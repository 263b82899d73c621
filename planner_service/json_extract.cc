// Finds the first JSON object in free text; measures JSON nesting without recursion.
#include "planner_service/json_extract.h"

#include "nlohmann/json.hpp"

namespace rein {
namespace {

constexpr int kMaxCandidates = 64;

// From text[start] == '{', the length of the balanced span (strings and escapes respected)
// and its deepest nesting, or 0 when the text ends before the span closes.
size_t BalancedSpan(absl::string_view text, size_t start, int* max_depth) {
  int depth = 0;
  *max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '{':
      case '[':
        ++depth;
        if (depth > *max_depth) *max_depth = depth;
        break;
      case '}':
      case ']':
        --depth;
        if (depth == 0) return i - start + 1;
        if (depth < 0) return 0;
        break;
      default: break;
    }
  }
  return 0;
}

}  // namespace

std::optional<absl::string_view> ExtractFirstJsonObject(absl::string_view text) {
  if (text.size() > kMaxExtractBytes) return std::nullopt;
  size_t pos = 0;
  for (int tries = 0; tries < kMaxCandidates; ++tries) {
    pos = text.find('{', pos);
    if (pos == absl::string_view::npos) return std::nullopt;
    int depth = 0;
    const size_t length = BalancedSpan(text, pos, &depth);
    if (length == 0) {
      ++pos;  // unbalanced from here: a later '{' may still start an object
      continue;
    }
    const absl::string_view candidate = text.substr(pos, length);
    if (depth <= kMaxJsonNesting) {
      const nlohmann::json parsed =
          nlohmann::json::parse(candidate.begin(), candidate.end(), nullptr,
                                /*allow_exceptions=*/false);
      if (parsed.is_object()) return candidate;
    }
    pos += length;
  }
  return std::nullopt;
}

int JsonNestingDepth(absl::string_view json_text) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : json_text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) max_depth = depth;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace rein
