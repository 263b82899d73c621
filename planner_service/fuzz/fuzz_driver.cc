// A deterministic stand-in for libFuzzer under `bazel test`: feeds a fuzz target's
// LLVMFuzzerTestOneInput a bounded number of seeds and mutations of them (gcc has no
// -fsanitize=fuzzer). The target aborts on a broken invariant; a crash fails the test.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr int kDefaultRuns = 20000;

const std::vector<std::string>& Seeds() {
  static const auto* const seeds = new std::vector<std::string>{
      R"({"reasoning": "r", "status": "COMPLETED", "summary": "s", "goal_achieved": true})",
      R"(Sure! ```json
{"reasoning": "x", "subtasks": [{"id": "a", "description": "d", "allowed_tools": ["read_file"]}], "goal_achieved": false}
``` done)",
      R"({"reasoning": "r", "tool_call": {"tool": "read_file", "args": "{\"path\": \"a\"}"}})",
      R"(prose {not json} then {"a": "}\"{", "b": [1, {"c": null}]})",
      "# comment\nvars: goal_text tool_list\n---\nGoal: {{goal_text}}\nTools: {{tool_list}}\n",
      "vars:\n---\nstatic {text} with { braces }\n",
      "vars: a_b\n---\n{{a_b}}{{a_b}} {{ {{x}} }}",
      "",
  };
  return *seeds;
}

const char* const kTokens[] = {"{", "}", "[", "]", "\"", "\\", "{{", "}}", "```", ":", ",",
                               "null", "true", "1e999", "\n---\n", "vars: ", "\xc3\xa9", "\xff",
                               "goal", "_text", " ", "\r\n", "\\u0000", "#"};

std::string Mutate(std::string s, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 6);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:  // insert a token
        s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 1:  // flip a byte
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng() & 0xFF);
        break;
      case 2:  // delete a span
        if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 8);
        break;
      case 3:  // truncate
        s.resize(pos);
        break;
      case 4: {  // splice another seed
        const std::string& other = Seeds()[rng() % Seeds().size()];
        s.insert(pos, other.substr(0, other.size() / 2 + 1));
        break;
      }
      default: {  // deep nesting
        const int depth = static_cast<int>(rng() % 200);
        s.insert(pos, std::string(static_cast<size_t>(depth), rng() % 2 ? '{' : '['));
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main() {
  int runs = kDefaultRuns;
  if (const char* env = std::getenv("REIN_FUZZ_RUNS"); env != nullptr) runs = std::atoi(env);
  std::mt19937 rng(20240601);
  for (const std::string& seed : Seeds()) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
  }
  std::string current;
  for (int i = 0; i < runs; ++i) {
    if (i % 50 == 0) current = Seeds()[rng() % Seeds().size()];
    current = Mutate(current, rng);
    if (current.size() > 1 << 16) current.resize(1 << 16);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(current.data()), current.size());
  }
  std::printf("fuzz driver: %d seeds and %d generated inputs, no failure\n",
              static_cast<int>(Seeds().size()), runs);
  return 0;
}
