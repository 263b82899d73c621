// Parses and renders prompt templates with declared {{name}} variables.
#include "planner_service/prompt_template.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "rein/v1/planner.pb.h"
#include "rein/v1/types.pb.h"

namespace rein {
namespace {

constexpr size_t kMaxNameLength = 64;

bool IsValidName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (name[0] < 'a' || name[0] > 'z') return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

const std::set<std::string>& ReservedNames() {
  static const std::set<std::string>* const names = [] {
    auto* set = new std::set<std::string>();
    const google::protobuf::Descriptor* descriptors[] = {
        rein::v1::RunState::descriptor(),      rein::v1::RunSpec::descriptor(),
        rein::v1::Limits::descriptor(),        rein::v1::ModelOptions::descriptor(),
        rein::v1::SubTask::descriptor(),       rein::v1::Action::descriptor(),
        rein::v1::HumanInput::descriptor(),    rein::v1::ToolSpec::descriptor(),
        rein::v1::ToolCall::descriptor(),      rein::v1::PlanRequest::descriptor(),
        rein::v1::DecideRequest::descriptor(), rein::v1::EvaluateRequest::descriptor(),
    };
    for (const google::protobuf::Descriptor* d : descriptors) {
      for (int i = 0; i < d->field_count(); ++i) set->insert(d->field(i)->name());
    }
    return set;
  }();
  return *names;
}

// A short, printable excerpt of `text` around `pos`, for messages.
std::string Near(absl::string_view text, size_t pos) {
  std::string excerpt(text.substr(pos, 24));
  for (char& c : excerpt) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return excerpt;
}

}  // namespace

bool IsReservedVariableName(absl::string_view name) {
  return ReservedNames().count(std::string(name)) > 0;
}

absl::StatusOr<PromptTemplate> PromptTemplate::Parse(absl::string_view text,
                                                     absl::string_view source) {
  auto error = [&](int line, const std::string& problem) {
    return absl::InvalidArgumentError(line > 0
                                          ? absl::StrCat(source, ": line ", line, ": ", problem)
                                          : absl::StrCat(source, ": ", problem));
  };
  PromptTemplate result;
  result.source_ = std::string(source);

  // Header: up to the first line that is exactly "---".
  size_t body_start = absl::string_view::npos;
  bool saw_vars = false;
  int line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == absl::string_view::npos) end = text.size();
    absl::string_view line = text.substr(pos, end - pos);
    absl::ConsumeSuffix(&line, "\r");
    ++line_number;
    pos = end + 1;
    const absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (stripped == "---") {
      body_start = pos;
      break;
    }
    if (stripped.empty() || absl::StartsWith(stripped, "#")) continue;
    if (!absl::ConsumePrefix(&line, "vars:")) {
      return error(line_number, "header lines are `# comment`, one `vars: a b c`, then `---`");
    }
    if (saw_vars) return error(line_number, "a second vars: line");
    saw_vars = true;
    for (absl::string_view name :
         absl::StrSplit(line, absl::ByAnyChar(" ,\t"), absl::SkipEmpty())) {
      if (!IsValidName(name)) {
        return error(line_number, absl::StrCat("\"", Near(name, 0),
                                               "\" is not a variable name ([a-z][a-z0-9_]*)"));
      }
      if (IsReservedVariableName(name)) {
        return error(line_number,
                     absl::StrCat("variable \"", name,
                                  "\" has the name of a state or request field; name the "
                                  "formatted view instead (e.g. goal_text)"));
      }
      if (!result.variables_.insert(std::string(name)).second) {
        return error(line_number, absl::StrCat("variable \"", name, "\" is declared twice"));
      }
    }
  }
  if (!saw_vars) return error(0, "the header has no vars: line");
  if (body_start == absl::string_view::npos) return error(0, "no --- line ends the header");
  const absl::string_view body =
      body_start >= text.size() ? absl::string_view() : text.substr(body_start);

  // Body: literal text and {{name}} placeholders.
  std::set<std::string> used;
  size_t i = 0;
  std::string literal;
  while (i < body.size()) {
    const size_t open = body.find("{{", i);
    if (open == absl::string_view::npos) {
      absl::StrAppend(&literal, body.substr(i));
      break;
    }
    absl::StrAppend(&literal, body.substr(i, open - i));
    const int at_line =
        line_number + 1 + static_cast<int>(std::count(body.begin(), body.begin() + open, '\n'));
    const size_t close = body.find("}}", open + 2);
    if (close == absl::string_view::npos) {
      return error(at_line, absl::StrCat("unclosed placeholder near \"", Near(body, open), "\""));
    }
    const absl::string_view name = body.substr(open + 2, close - open - 2);
    if (!IsValidName(name)) {
      return error(at_line, absl::StrCat("bad placeholder near \"", Near(body, open),
                                         "\" (write {{name}} with name [a-z][a-z0-9_]*)"));
    }
    if (result.variables_.count(std::string(name)) == 0) {
      return error(at_line, absl::StrCat("{{", name, "}} is not declared in vars:"));
    }
    if (!literal.empty()) result.pieces_.push_back({false, std::move(literal)});
    literal.clear();
    result.pieces_.push_back({true, std::string(name)});
    used.insert(std::string(name));
    i = close + 2;
  }
  if (!literal.empty()) result.pieces_.push_back({false, std::move(literal)});
  for (const std::string& name : result.variables_) {
    if (used.count(name) == 0) {
      return error(0, absl::StrCat("variable \"", name, "\" is declared but never used"));
    }
  }
  return result;
}

absl::StatusOr<std::string> PromptTemplate::Render(
    const std::map<std::string, std::string>& values) const {
  for (const auto& [name, value] : values) {
    if (variables_.count(name) == 0) {
      return absl::InternalError(
          absl::StrCat(source_, ": value given for unknown variable \"", name, "\""));
    }
  }
  for (const std::string& name : variables_) {
    if (values.count(name) == 0) {
      return absl::InternalError(absl::StrCat(source_, ": no value for {{", name, "}}"));
    }
  }
  std::string out;
  for (const Piece& piece : pieces_) {
    if (!piece.is_variable) {
      out.append(piece.text);
      continue;
    }
    const std::string& value = values.at(piece.text);
    // Replace until none is left: "{{{" would otherwise leave a "{{" behind.
    std::string safe = value;
    while (safe.find("{{") != std::string::npos) {
      safe = absl::StrReplaceAll(safe, {{"{{", "{ {"}});
    }
    out.append(safe);
  }
  if (absl::Status left = CheckNoPlaceholderLeft(out, source_); !left.ok()) return left;
  return out;
}

absl::Status CheckNoPlaceholderLeft(absl::string_view rendered, absl::string_view source) {
  const size_t pos = rendered.find("{{");
  if (pos == absl::string_view::npos) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      source, ": rendered prompt still holds a placeholder near \"", Near(rendered, pos), "\""));
}

}  // namespace rein
