// A deterministic stand-in for libFuzzer under `bazel test`: feeds a fuzz target's
// LLVMFuzzerTestOneInput every file of its seed corpus, then a bounded number of mutations of
// them (gcc has no -fsanitize=fuzzer). The target aborts on a broken invariant; a crash fails
// the test. Usage: <target> CORPUS_DIR... (REIN_FUZZ_RUNS overrides the number of mutations).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr int kDefaultRuns = 20000;

const char* const kTokens[] = {"{",
                               "}",
                               "[",
                               "]",
                               "\"",
                               "\\",
                               "{{",
                               "}}",
                               "```",
                               ":",
                               ",",
                               "null",
                               "true",
                               "1e999",
                               "-0",
                               "5.0",
                               "NaN",
                               "\"NaN\"",
                               "9223372036854775808",
                               "\n---\n",
                               "vars: ",
                               "\xc3\xa9",
                               "\xff",
                               "\x08\x80\x80\x80\x80\x10",
                               "goal",
                               "_text",
                               " ",
                               "\r\n",
                               "\\u0000",
                               "\\ud800",
                               "#",
                               "//",
                               "/*",
                               "${iteration}"};

std::string Mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937& rng) {
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
        const std::string& other = seeds[rng() % seeds.size()];
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

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code error;
    for (std::filesystem::recursive_directory_iterator it(argv[i], error), end; !error && it != end;
         it.increment(error)) {
      if (it->is_regular_file()) files.push_back(it->path());
    }
    if (error) {
      std::fprintf(stderr, "fuzz driver: cannot read corpus %s: %s\n", argv[i],
                   error.message().c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());  // the same order on every machine
  std::vector<std::string> seeds;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (seeds.empty()) seeds.emplace_back();

  int runs = kDefaultRuns;
  if (const char* env = std::getenv("REIN_FUZZ_RUNS"); env != nullptr) runs = std::atoi(env);
  for (const std::string& seed : seeds) Run(seed);
  std::mt19937 rng(20240601);
  std::string current;
  for (int i = 0; i < runs; ++i) {
    if (i % 50 == 0) current = seeds[rng() % seeds.size()];
    current = Mutate(current, seeds, rng);
    if (current.size() > 1 << 16) current.resize(1 << 16);
    Run(current);
  }
  std::printf("fuzz driver: %zu seeds and %d generated inputs, no failure\n", seeds.size(), runs);
  return 0;
}
