// Fuzz target: prompt template parsing and rendering. The first line of the input is the
// value given to every variable; the rest is the template. Aborts when an invariant breaks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "planner_service/prompt_template.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "template_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const absl::string_view value =
      newline == absl::string_view::npos ? absl::string_view() : input.substr(0, newline);
  const absl::string_view text =
      newline == absl::string_view::npos ? input : input.substr(newline + 1);
  for (const absl::string_view t : {input, text}) {
    absl::StatusOr<rein::PromptTemplate> parsed = rein::PromptTemplate::Parse(t, "fuzz.txt");
    if (!parsed.ok()) {
      Check(parsed.status().code() == absl::StatusCode::kInvalidArgument,
            "load errors are INVALID_ARGUMENT");
      continue;
    }
    std::map<std::string, std::string> values;
    for (const std::string& name : parsed->variables()) {
      Check(!rein::IsReservedVariableName(name), "no reserved name is declared");
      values[name] = std::string(value);
    }
    absl::StatusOr<std::string> out = parsed->Render(values);
    if (out.ok()) {
      Check(out->find("{{") == std::string::npos, "a rendered prompt holds no placeholder");
    } else {
      Check(out.status().code() == absl::StatusCode::kInternal, "render errors are INTERNAL");
    }
    if (!parsed->variables().empty()) {
      Check(parsed->Render({}).status().code() == absl::StatusCode::kInternal,
            "a missing value is INTERNAL");
    }
  }
  return 0;
}
