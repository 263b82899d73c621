// Finds the JSON object inside a model's free-text reply (prose, code fences) and bounds the
// nesting of untrusted JSON before anything walks it recursively.
#ifndef REIN_PLANNER_SERVICE_JSON_EXTRACT_H_
#define REIN_PLANNER_SERVICE_JSON_EXTRACT_H_

#include <cstddef>
#include <optional>

#include "absl/strings/string_view.h"

namespace rein {

// The deepest nesting of objects and arrays accepted in model output and API replies.
inline constexpr int kMaxJsonNesting = 64;
// Text longer than this is not searched for an object (a reply is far smaller).
inline constexpr size_t kMaxExtractBytes = 1 << 20;

// The first balanced `{...}` span of `text` that parses as a JSON object nested no deeper
// than kMaxJsonNesting, or nullopt. Braces inside JSON strings (with their escapes) do not
// count. A balanced span that does not parse is skipped as a whole and the search goes on
// after it, so prose such as "use {path}" or a ```json fence around the object is passed
// over. Bounded work: at most 64 candidate spans are tried, and text longer than
// kMaxExtractBytes is refused. The result is a view into `text`.
std::optional<absl::string_view> ExtractFirstJsonObject(absl::string_view text);

// The deepest nesting of `[`/`{` in `json_text`, outside strings, scanning without
// recursion. Meant as a guard before a parser or a recursive walk sees untrusted JSON.
int JsonNestingDepth(absl::string_view json_text);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_JSON_EXTRACT_H_
