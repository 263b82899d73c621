// Benchmark: the latency of one MCP tool call through the executor (a stdio server started in
// the call's sandbox, initialize, tools/list, tools/call, stop; or an HTTP session). Prints
// p50/p99; not a test.
//   bazel build -c opt //executor_service/tools/mcp:mcp_bench &&
//   bazel-bin/executor_service/tools/mcp/mcp_bench CONFIG TOOL ARGS_JSON [calls]
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/tool_executor.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s CONFIG TOOL ARGS_JSON [calls]\n", argv[0]);
    return 2;
  }
  const int calls = argc > 4 ? std::max(1, atoi(argv[4])) : 20;
  char root[] = "/tmp/rein-mcp-bench-XXXXXX";
  if (mkdtemp(root) == nullptr) return 1;
  const std::string ws = absl::StrCat(root, "/ws");
  mkdir(ws.c_str(), 0777);
  chmod(ws.c_str(), 0777);
  rein::ExecutorOptions options;
  options.workspace_root = root;
  options.executor_id = "bench";
  options.mcp_config = argv[1];
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<rein::ToolExecutor>> executor =
      rein::ToolExecutor::Create(options);
  if (!executor.ok()) {
    std::fprintf(stderr, "%s\n", std::string(executor.status().message()).c_str());
    return 1;
  }
  std::printf("executor start (listing every server): %.0f ms\n",
              absl::ToDoubleMilliseconds(absl::Now() - start));
  std::vector<double> samples;
  for (int i = 0; i < calls; ++i) {
    rein::ExecuteCall call;
    call.call_id = absl::StrCat("bench-", i);
    call.workspace = "ws";
    call.tool = argv[2];
    call.args_json = argv[3];
    const absl::Time t = absl::Now();
    absl::StatusOr<rein::ToolResult> result = (*executor)->Execute(call);
    samples.push_back(absl::ToDoubleMilliseconds(absl::Now() - t));
    if (!result.ok() || !result->ok) {
      std::fprintf(stderr, "call failed: %s\n",
                   result.ok() ? result->error_message.c_str()
                               : std::string(result.status().message()).c_str());
      return 1;
    }
  }
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    return samples[std::min(samples.size() - 1, static_cast<size_t>(q * samples.size()))];
  };
  std::printf("%s: %d calls, p50 %.0f ms, p99 %.0f ms\n", argv[2], calls, at(0.5), at(0.99));
  return 0;
}
