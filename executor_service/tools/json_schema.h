// A small JSON Schema validator for tool arguments (the subset the tools' schemas use).
#ifndef REIN_EXECUTOR_SERVICE_JSON_SCHEMA_H_
#define REIN_EXECUTOR_SERVICE_JSON_SCHEMA_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein {

// Largest args_json accepted, and its deepest nesting.
inline constexpr size_t kMaxArgsJsonBytes = 1 << 20;
inline constexpr int kMaxArgsJsonDepth = 64;

// The bounds of one untrusted JSON text: its length in bytes and its nesting (arrays and
// objects within each other).
struct JsonLimits {
  size_t max_bytes = kMaxArgsJsonBytes;
  int max_depth = kMaxArgsJsonDepth;
};

// Parses untrusted JSON text: the one parser for every JSON the executor reads from outside
// (tool arguments, MCP servers' messages). The nesting is counted before anything is parsed,
// so no deep text reaches a recursive parser, copy or dump. INVALID_ARGUMENT naming `field`
// and the bound when the text is longer than `limits.max_bytes` ("<field>: must be at most N
// bytes, got M"), nested deeper than `limits.max_depth` ("<field>: nested deeper than 64
// levels"), or not valid JSON ("<field>: not valid JSON: ...").
absl::StatusOr<nlohmann::json> ParseUntrustedJson(absl::string_view text,
                                                  absl::string_view field = "args_json",
                                                  JsonLimits limits = {});

// Validates `value` against `schema`. Supported keywords: type (object, string, integer,
// number, boolean, array, null), required, properties, additionalProperties (false or a
// schema), items, minimum, maximum, minLength, maxLength (in code points), minItems, maxItems,
// enum. Unknown keywords (description, default, ...) are ignored. Integers are JSON integers
// or integral numbers such as 5.0. On failure returns INVALID_ARGUMENT whose message names the
// field, e.g. "args.limit: must be an integer between 1 and 20000, got 0". `where` names the
// value itself ("args").
absl::Status ValidateJson(const nlohmann::json& schema, const nlohmann::json& value,
                          absl::string_view where = "args");

// Returns `value` with each absent property that has a "default" in `schema.properties`
// filled in, recursively into present object properties. Integral numbers in integer fields
// are normalized to JSON integers. Call after ValidateJson succeeded.
nlohmann::json ApplyDefaults(const nlohmann::json& schema, nlohmann::json value);

// Checks that `schema` uses only what ValidateJson enforces, so that a schema written by an
// operator never looks stricter than it is: the keywords above with well-formed values
// ("type" a single name, counts non-negative integers, "items" one schema, "enum" a non-empty
// array), plus the annotations description, title, default, examples and $comment. A
// "default" must itself be valid. INVALID_ARGUMENT naming the place, e.g.
// "input_schema.properties.path: unsupported keyword \"pattern\"". `where` names the schema.
absl::Status CheckSupportedSchema(const nlohmann::json& schema,
                                  absl::string_view where = "input_schema");
// What in `schema` ValidateJson would not enforce: a validation keyword it lacks (anyOf,
// pattern, $ref, ...) or a "type" that is not one supported type name, as
// "<where>: <what>"; "" when every keyword is enforced or a known annotation (description,
// title, default, examples, $schema, $id, $comment, format, readOnly, writeOnly,
// deprecated). A tool from outside (an MCP server) with such a schema is refused rather than
// validated loosely.
std::string UnsupportedSchemaFeature(const nlohmann::json& schema,
                                     absl::string_view where = "inputSchema");

// "sha256:<hex>" of `schema` serialized canonically (object keys sorted, no white space): what
// a run pins for each tool.
std::string SchemaHash(const nlohmann::json& schema);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_JSON_SCHEMA_H_
