// The `search_text` tool.
#include "executor_service/tools/search_text_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_service/workspace/dir_walker.h"
#include "executor_service/workspace/text_file.h"
#include "re2/re2.h"

namespace rein {
namespace {

// Bytes of file content one call may read in total.
constexpr size_t kMaxBytesReadPerCall = 256 << 20;
// A matching line is shown up to this many bytes.
constexpr size_t kMaxShownLineBytes = 500;
// Memory RE2 may use for one compiled pattern.
constexpr int64_t kMaxRegexMemory = 32 << 20;

struct SearchState {
  const ToolContext* context;
  const RE2* regex;
  size_t max_results;
  OutputBuffer* out;
  size_t matches = 0;
  size_t bytes_read = 0;
  size_t files_searched = 0;
  size_t skipped_binary = 0;
  size_t skipped_large = 0;
  size_t skipped_unreadable = 0;
  bool hit_result_limit = false;
  bool hit_read_limit = false;
  bool timed_out = false;

  bool done() const { return hit_result_limit || hit_read_limit || timed_out; }
};

// Searches one open regular file; `display` is its path in the output.
void SearchFile(const RegularFile& file, const std::string& display, SearchState* state) {
  if (static_cast<size_t>(file.st.st_size) > kMaxScannedFileBytes) {
    ++state->skipped_large;
    return;
  }
  const size_t size = static_cast<size_t>(file.st.st_size);
  if (state->bytes_read + size > kMaxBytesReadPerCall) {
    state->hit_read_limit = true;
    return;
  }
  // Read one byte more than stat said, in case it grew, and cap at the scan limit anyway.
  absl::StatusOr<std::string> content =
      ReadAt(file.fd.get(), 0, std::min(size + 1, kMaxScannedFileBytes));
  if (!content.ok()) {
    ++state->skipped_unreadable;
    return;
  }
  state->bytes_read += content->size();
  if (LooksBinary(*content)) {
    ++state->skipped_binary;
    return;
  }
  ++state->files_searched;
  absl::string_view rest(*content);
  size_t line_number = 0;
  while (!rest.empty()) {
    ++line_number;
    if ((line_number & 4095) == 0 && state->context->Expired()) {
      state->timed_out = true;
      return;
    }
    const size_t nl = rest.find('\n');
    absl::string_view line = rest.substr(0, nl);
    rest = nl == absl::string_view::npos ? absl::string_view() : rest.substr(nl + 1);
    if (!RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *state->regex)) {
      continue;
    }
    if (state->matches >= state->max_results) {
      state->hit_result_limit = true;
      return;
    }
    ++state->matches;
    if (line.size() > kMaxShownLineBytes) {
      state->out->Append(absl::StrCat(display, ":", line_number, ": ",
                                      line.substr(0, kMaxShownLineBytes), " [line cut]\n"));
    } else {
      state->out->Append(absl::StrCat(display, ":", line_number, ": ", line, "\n"));
    }
  }
}

}  // namespace

SearchTextTool::SearchTextTool() {
  spec_.name = "search_text";
  spec_.description =
      "Search the text files under a workspace path for an RE2 regular expression, line by "
      "line. Prints \"path:line: text\" per matching line. Binary files and files over 10 MiB "
      "are skipped; hidden names (starting with '.') are skipped unless include_hidden.";
  spec_.input_schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"pattern"}},
      {"properties",
       {{"pattern",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 4096},
          {"description", "RE2 regular expression, matched against each line"}}},
        {"path",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 4096},
          {"default", "."},
          {"description", "Directory or file to search, relative to the workspace"}}},
        {"glob",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 255},
          {"description", "Only files whose name matches this glob, e.g. \"*.py\""}}},
        {"max_results",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", 5000},
          {"default", 200},
          {"description", "Stop after this many matching lines"}}},
        {"case_insensitive", {{"type", "boolean"}, {"default", false}}},
        {"include_hidden", {{"type", "boolean"}, {"default", false}}},
        {"exclude", ExcludeArgumentSchema()}}}};
  spec_.default_timeout = absl::Seconds(60);
}

ToolResult SearchTextTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const std::string pattern = args["pattern"].get<std::string>();
  const std::string path = args["path"].get<std::string>();
  const std::string glob = args.contains("glob") ? args["glob"].get<std::string>() : "";

  absl::StatusOr<std::vector<std::string>> exclude = ExcludePatterns(args);
  if (!exclude.ok()) return ToolResult::Failure(exclude.status());

  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kMaxRegexMemory);
  options.set_case_sensitive(!args["case_insensitive"].get<bool>());
  auto regex = std::make_unique<RE2>(pattern, options);
  if (!regex->ok()) {
    return ToolResult::Failure(
        "INVALID_ARGUMENT",
        absl::StrCat("args.pattern: invalid RE2 regular expression: ", regex->error()));
  }

  OutputBuffer out(context.max_output_bytes);
  SearchState state;
  state.context = &context;
  state.regex = regex.get();
  state.max_results = static_cast<size_t>(args["max_results"].get<int64_t>());
  state.out = &out;

  absl::StatusOr<UniqueFd> target = context.workspace->Open(path, O_PATH);
  if (!target.ok()) return ToolResult::Failure(target.status());
  struct stat st;
  if (fstat(target->get(), &st) != 0) return ToolResult::Failure(PathError(errno, path));
  const std::string display = DisplayPath(path);
  WalkStats stats;
  if (S_ISDIR(st.st_mode)) {
    absl::StatusOr<UniqueFd> dir = OpenBeneath(target->get(), ".", O_RDONLY | O_DIRECTORY, 0, path);
    if (!dir.ok()) return ToolResult::Failure(dir.status());
    WalkOptions walk;
    walk.recursive = true;
    walk.include_hidden = args["include_hidden"].get<bool>();
    walk.exclude = *std::move(exclude);
    absl::Status walked = WalkDirectory(
        dir->get(), display, walk,
        [&](const WalkEntry& entry) {
          if (context.Expired()) state.timed_out = true;
          if (state.done()) return WalkAction::kStop;
          if (!S_ISREG(entry.st.st_mode)) return WalkAction::kContinue;
          if (!glob.empty() && fnmatch(glob.c_str(), entry.name.c_str(), 0) != 0) {
            return WalkAction::kContinue;
          }
          if (static_cast<size_t>(entry.st.st_size) > kMaxScannedFileBytes) {
            ++state.skipped_large;
            return WalkAction::kContinue;
          }
          absl::StatusOr<RegularFile> file =
              OpenRegularFile(entry.parent_fd, entry.name, entry.path, /*no_symlinks=*/true);
          if (!file.ok()) {
            ++state.skipped_unreadable;
            return WalkAction::kContinue;
          }
          SearchFile(*file, entry.path, &state);
          return state.done() ? WalkAction::kStop : WalkAction::kContinue;
        },
        &stats);
    if (!walked.ok()) return ToolResult::Failure(walked);
  } else {
    // A file named explicitly is searched whatever its name (the glob applies to walks).
    absl::StatusOr<RegularFile> file =
        OpenRegularFile(context.workspace->dir_fd(), path, path, /*no_symlinks=*/false);
    if (!file.ok()) return ToolResult::Failure(file.status());
    SearchFile(*file, display, &state);
  }

  if (state.matches == 0) out.AddNote("[no matches]");
  if (state.hit_result_limit) {
    out.AddNote(
        absl::StrCat("[stopped at max_results=", state.max_results, "; more matches exist]"));
  }
  if (state.hit_read_limit) {
    out.AddNote(absl::StrCat("[stopped after reading ", kMaxBytesReadPerCall >> 20,
                             " MiB of files; narrow the path or glob]"));
  }
  if (state.skipped_binary + state.skipped_large + state.skipped_unreadable > 0) {
    out.AddNote(absl::StrCat("[skipped ", state.skipped_binary, " binary, ", state.skipped_large,
                             " over 10 MiB, ", state.skipped_unreadable, " unreadable files]"));
  }
  if (stats.depth_limited + stats.unreadable_directories > 0) {
    out.AddNote(absl::StrCat("[", stats.depth_limited + stats.unreadable_directories,
                             " directories not searched (too deep or unreadable)]"));
  }
  if (state.timed_out) return ToolResult::Timeout(std::move(out), spec_.name);
  return ToolResult::Success(std::move(out));
}

}  // namespace rein
