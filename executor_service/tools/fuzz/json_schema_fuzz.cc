// Fuzz target: tool arguments (untrusted JSON text from the model) through the executor's
// checks: ParseUntrustedJson, ValidateJson against a tool schema, ApplyDefaults. The first
// byte picks the schema, the rest is args_json. Aborts when an invariant breaks.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "executor_service/tools/json_schema.h"
#include "nlohmann/json.hpp"

namespace {

using nlohmann::json;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "json_schema_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// The shapes the tools' schemas have (read_file, list_files, run_command, write_file), plus
// one with every other supported keyword. Schemas are code, not input: only args are fuzzed.
const std::vector<json>& Schemas() {
  static const auto* const schemas = new std::vector<json>{
      json::parse(R"({"type": "object", "additionalProperties": false, "required": ["path"],
        "properties": {
          "path": {"type": "string", "minLength": 1, "maxLength": 4096},
          "offset": {"type": "integer", "minimum": 0, "maximum": 1000000000, "default": 0},
          "limit": {"type": "integer", "minimum": 1, "maximum": 20000, "default": 2000}}})"),
      json::parse(R"({"type": "object", "additionalProperties": false,
        "properties": {
          "path": {"type": "string", "minLength": 1, "maxLength": 4096, "default": "."},
          "recursive": {"type": "boolean", "default": false},
          "max_entries": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000},
          "exclude": {"type": "array", "maxItems": 64,
                      "items": {"type": "string", "minLength": 1, "maxLength": 255}}}})"),
      json::parse(R"({"type": "object", "additionalProperties": false,
        "properties": {
          "argv": {"type": "array", "minItems": 1, "maxItems": 4096,
                   "items": {"type": "string", "maxLength": 131072}},
          "shell": {"type": "string", "minLength": 1, "maxLength": 131072},
          "cwd": {"type": "string", "minLength": 1, "maxLength": 4096, "default": "."},
          "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 3600, "default": 60}}})"),
      json::parse(R"({"type": "object", "additionalProperties": false,
        "required": ["path", "content"],
        "properties": {
          "path": {"type": "string", "minLength": 1, "maxLength": 4096},
          "content": {"type": "string"},
          "create_parents": {"type": "boolean", "default": true}}})"),
      json::parse(R"({"type": "object",
        "additionalProperties": {"type": "number", "minimum": -1.5, "maximum": 1e300},
        "properties": {
          "mode": {"enum": ["fast", 2, null, true]},
          "nothing": {"type": "null"},
          "ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
          "inner": {"type": "object", "required": ["n"],
                    "properties": {"n": {"type": "integer", "minimum": -9007199254740992,
                                         "maximum": 18446744073709551615, "default": 1},
                                   "k": {"type": "integer", "default": 7}}},
          "matrix": {"type": "array", "items": {"type": "array", "maxItems": 3,
                                                "items": {"type": "integer"}}}}})"),
  };
  return *schemas;
}

int Depth(const json& v) {
  int deepest = 0;
  if (v.is_structured()) {
    for (const json& child : v) deepest = std::max(deepest, Depth(child));
    return deepest + 1;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const json& schema = Schemas()[data[0] % Schemas().size()];
  const absl::string_view args_json(reinterpret_cast<const char*>(data) + 1, size - 1);

  absl::StatusOr<json> args = rein::ParseUntrustedJson(args_json);
  if (!args.ok()) {
    Check(args.status().code() == absl::StatusCode::kInvalidArgument,
          "parse errors are INVALID_ARGUMENT");
    Check(absl::StartsWith(args.status().message(), "args_json: "), "parse errors name the field");
    return 0;
  }
  Check(Depth(*args) <= rein::kMaxArgsJsonDepth, "accepted JSON is at most kMaxArgsJsonDepth deep");
  (void)args->dump();  // throws on invalid UTF-8, which the parser must not have let in

  const absl::Status valid = rein::ValidateJson(schema, *args);
  if (!valid.ok()) {
    Check(valid.code() == absl::StatusCode::kInvalidArgument,
          "validation errors are INVALID_ARGUMENT");
    Check(absl::StartsWith(valid.message(), "args"), "validation errors name the field");
    return 0;
  }
  Check(args->is_object(), "every schema here accepts only an object");
  const json full = rein::ApplyDefaults(schema, *args);
  Check(full.is_object(), "defaults keep an object an object");
  for (const auto& [name, property] : schema["properties"].items()) {
    if (property.contains("default")) Check(full.contains(name), "every default is filled in");
    if (full.contains(name) && property.value("type", "") == "integer") {
      Check(full[name].is_number_integer(), "integer fields come out as JSON integers");
    }
  }
  Check(rein::ValidateJson(schema, full).ok(), "valid args with their defaults stay valid");
  (void)full.dump();
  return 0;
}
