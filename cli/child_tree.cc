// ChildTree: a parent's child runs as a tree for `reinctl show`.
#include "cli/child_tree.h"

#include "absl/strings/str_cat.h"

namespace rein::cli {
namespace {

// `text` on one line, at most `max` bytes (the rest cut).
std::string Short(const std::string& text, size_t max) {
  std::string out = text.substr(0, max);
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return out;
}

void AppendChildren(const rein::v1::Run& run, const std::map<std::string, rein::v1::Run>& runs,
                    int depth, std::string* out) {
  const std::string indent(2 + 4 * depth, ' ');
  for (const rein::v1::ChildRun& child : run.children()) {
    absl::StrAppend(out, indent, "group ", child.group(), "  ", Short(child.subtask_id(), 80),
                    " -> ", child.run_id().empty() ? "(not started)" : child.run_id(), "  ");
    auto read = child.run_id().empty() ? runs.end() : runs.find(child.run_id());
    const rein::v1::Stage stage = read == runs.end() ? child.stage() : read->second.state().stage();
    absl::StrAppend(out, rein::v1::Stage_Name(stage));
    const rein::v1::TerminationReason reason =
        read != runs.end() ? read->second.state().outcome().reason() : child.outcome().reason();
    if (reason != rein::v1::TERMINATION_REASON_UNSPECIFIED) {
      absl::StrAppend(out, " (", rein::v1::TerminationReason_Name(reason), ")");
    }
    if (!child.start_error().empty()) {
      absl::StrAppend(out, "  not started: ", Short(child.start_error(), 200));
    }
    if (read != runs.end()) {
      const rein::v1::Run& c = read->second;
      absl::StrAppend(out, "  iteration ", c.state().iteration(), "/",
                      c.spec().limits().max_iterations());
      if (c.state().subtasks_size() > 0) {
        absl::StrAppend(out, ", on ", Short(c.state().subtasks(0).id(), 80));
      }
    }
    absl::StrAppend(out, "\n");
    if (read != runs.end() && depth + 1 < kMaxTreeDepth) {
      AppendChildren(read->second, runs, depth + 1, out);
    }
  }
}

}  // namespace

std::string ChildTree(const rein::v1::Run& run, const std::map<std::string, rein::v1::Run>& runs) {
  if (run.children_size() == 0) return "";
  std::string out = "children:\n";
  AppendChildren(run, runs, 0, &out);
  return out;
}

}  // namespace rein::cli
