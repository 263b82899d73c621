// Bounded tool output: keeps at most a cap of bytes, counts the rest, and marks the cut.
#ifndef REIN_EXECUTOR_SERVICE_OUTPUT_BUFFER_H_
#define REIN_EXECUTOR_SERVICE_OUTPUT_BUFFER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace rein {

// Default and hard upper bound of ExecLimits.max_output_bytes.
inline constexpr size_t kDefaultMaxOutputBytes = 1 << 20;
inline constexpr size_t kHardMaxOutputBytes = 8 << 20;

// Returns `s` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD
// (proto3 strings must be valid UTF-8).
std::string SanitizeUtf8(absl::string_view s);

// Escapes raw command output for a reply: valid UTF-8 is kept; NUL, the other control
// characters but tab, newline and carriage return, DEL, and every byte that is not part of
// valid UTF-8 become "\xNN". Stops before the escaped text would pass `cap` bytes and sets
// *consumed to the number of raw bytes it escaped.
std::string EscapeCommandOutput(absl::string_view raw, size_t cap, size_t* consumed);

// Collects a tool's output up to `cap` bytes; everything after is counted, not stored.
// Notes are short remarks ("[more lines: ...]") kept apart from the capped body and always
// shown after it. Not thread-safe.
class OutputBuffer {
 public:
  explicit OutputBuffer(size_t cap) : cap_(cap) {}

  void Append(absl::string_view text);
  void AddNote(std::string note) { notes_.push_back(std::move(note)); }

  // True once anything has been dropped; callers may stop producing output.
  bool full() const { return omitted_ > 0 || body_.size() >= cap_; }
  size_t omitted() const { return omitted_; }

  // The body (valid UTF-8, at most the cap), then "[output truncated: N bytes omitted]" when
  // something was dropped, then the notes, one per line. Sets *truncated.
  std::string Finish(bool* truncated) &&;

 private:
  size_t cap_;
  std::string body_;
  size_t omitted_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_OUTPUT_BUFFER_H_
