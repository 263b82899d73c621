// Tests of the JSON Schema subset used for tool arguments.
#include "executor_service/tools/json_schema.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

using nlohmann::json;

const json& Schema() {
  static const json* schema = new json(json::parse(R"({
    "type": "object",
    "additionalProperties": false,
    "required": ["path"],
    "properties": {
      "path": {"type": "string", "minLength": 1, "maxLength": 8},
      "limit": {"type": "integer", "minimum": 1, "maximum": 20000, "default": 2000},
      "offset": {"type": "integer", "minimum": 0, "default": 0},
      "ratio": {"type": "number", "maximum": 1.5},
      "flag": {"type": "boolean", "default": false},
      "mode": {"type": "string", "enum": ["fast", "slow"]},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
      "inner": {"type": "object", "properties": {"n": {"type": "integer", "default": 7}}}
    }
  })"));
  return *schema;
}

std::string Error(const std::string& args) {
  absl::Status status = ValidateJson(Schema(), json::parse(args));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << args;
  return std::string(status.message());
}

TEST(ValidateJsonTest, ValidArgumentsPass) {
  EXPECT_TRUE(ValidateJson(Schema(), json::parse(R"({"path": "a"})")).ok());
  EXPECT_TRUE(
      ValidateJson(
          Schema(),
          json::parse(
              R"({"path": "abcdefgh", "limit": 20000, "offset": 0, "ratio": 1.5, "flag": true,
          "mode": "slow", "tags": ["x", "y"], "inner": {"n": 3}})"))
          .ok());
  EXPECT_TRUE(ValidateJson(Schema(), json::parse(R"({"path": "a", "limit": 5.0})")).ok());
}

TEST(ValidateJsonTest, NotAnObjectNamesArgs) {
  EXPECT_EQ(Error("[1, 2]"), "args: must be a JSON object, got array");
  EXPECT_EQ(Error("\"x\""), "args: must be a JSON object, got string \"x\"");
  EXPECT_EQ(Error("null"), "args: must be a JSON object, got null");
}

TEST(ValidateJsonTest, MissingRequiredFieldIsNamed) {
  EXPECT_EQ(Error("{}"), "args.path: is required");
}

TEST(ValidateJsonTest, UnknownFieldIsNamedWithAllowedOnes) {
  EXPECT_EQ(Error(R"({"path": "a", "bogus": 1})"),
            "args.bogus: unknown field (allowed: flag, inner, limit, mode, offset, path, ratio, "
            "tags)");
}

TEST(ValidateJsonTest, WrongTypesAreNamed) {
  EXPECT_EQ(Error(R"({"path": 3})"),
            "args.path: must be a string of 1 to 8 characters, got integer 3");
  EXPECT_EQ(Error(R"({"path": "a", "limit": "10"})"),
            "args.limit: must be an integer between 1 and 20000, got string \"10\"");
  EXPECT_EQ(Error(R"({"path": "a", "limit": 1.5})"),
            "args.limit: must be an integer between 1 and 20000, got number 1.5");
  EXPECT_EQ(Error(R"({"path": "a", "flag": 1})"),
            "args.flag: must be a boolean (true or false), got integer 1");
  EXPECT_EQ(Error(R"({"path": "a", "inner": []})"), "args.inner: must be a JSON object, got array");
  EXPECT_EQ(Error(R"({"path": "a", "tags": [1]})"),
            "args.tags[0]: must be a string, got integer 1");
}

TEST(ValidateJsonTest, OutOfRangeNumbersAreNamed) {
  EXPECT_EQ(Error(R"({"path": "a", "limit": 0})"),
            "args.limit: must be an integer between 1 and 20000, got integer 0");
  EXPECT_EQ(Error(R"({"path": "a", "limit": 20001})"),
            "args.limit: must be an integer between 1 and 20000, got integer 20001");
  EXPECT_EQ(Error(R"({"path": "a", "offset": -1})"),
            "args.offset: must be an integer >= 0, got integer -1");
  EXPECT_EQ(Error(R"({"path": "a", "limit": 18446744073709551615})"),
            "args.limit: must be an integer between 1 and 20000, got integer "
            "18446744073709551615");
  EXPECT_EQ(Error(R"({"path": "a", "limit": 1e300})"),
            "args.limit: must be an integer between 1 and 20000, got number 1e+300");
  EXPECT_EQ(Error(R"({"path": "a", "ratio": 1.6})"),
            "args.ratio: must be a number <= 1.5, got number 1.6");
}

TEST(ValidateJsonTest, StringLengthsAndEnumsAreChecked) {
  EXPECT_EQ(Error(R"({"path": ""})"),
            "args.path: must be a string of 1 to 8 characters, got string \"\"");
  EXPECT_EQ(Error(R"({"path": "abcdefghi"})"),
            "args.path: must be a string of 1 to 8 characters, got string \"abcdefghi\"");
  // Lengths count code points: eight 2-byte characters fit.
  EXPECT_TRUE(ValidateJson(Schema(), json::parse(R"({"path": "éééééééé"})")).ok());
  EXPECT_EQ(Error(R"({"path": "a", "mode": "medium"})"),
            "args.mode: must be one of \"fast\", \"slow\", got string \"medium\"");
  EXPECT_EQ(Error(R"({"path": "a", "tags": ["a", "b", "c"]})"),
            "args.tags: must be an array of at most 2 items, got array");
}

TEST(ApplyDefaultsTest, FillsAbsentFieldsAndNormalizesIntegers) {
  json args = ApplyDefaults(Schema(), json::parse(R"({"path": "a", "offset": 3.0, "inner": {}})"));
  EXPECT_EQ(args["limit"], 2000);
  EXPECT_EQ(args["flag"], false);
  EXPECT_TRUE(args["offset"].is_number_integer());
  EXPECT_EQ(args["offset"], 3);
  EXPECT_EQ(args["inner"]["n"], 7);
  EXPECT_FALSE(args.contains("mode"));
}

TEST(ParseUntrustedJsonTest, BadTextIsInvalidArgumentNamingTheField) {
  for (const std::string text : {"", "{", "{\"a\":}", "nul", "{\"a\": 1} x", "\xff"}) {
    absl::StatusOr<json> parsed = ParseUntrustedJson(text, "args_json");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(parsed.status().message().rfind("args_json: not valid JSON", 0), 0u)
        << parsed.status().message();
  }
}

TEST(ParseUntrustedJsonTest, DeepNestingIsRefusedBeforeParsing) {
  std::string deep(100000, '[');
  absl::StatusOr<json> parsed = ParseUntrustedJson(deep);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "args_json: nested deeper than 64 levels");
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseUntrustedJson("{\"a\": \"" + std::string(1000, '[') + "\\\"\"}").ok());
}

TEST(ParseUntrustedJsonTest, LimitsAreTheCallersAndNamed) {
  const JsonLimits limits = {/*max_bytes=*/16, /*max_depth=*/2};
  EXPECT_TRUE(ParseUntrustedJson("[[1]]", "reply", limits).ok());
  EXPECT_EQ(ParseUntrustedJson("[[[1]]]", "reply", limits).status().message(),
            "reply: nested deeper than 2 levels");
  EXPECT_EQ(ParseUntrustedJson("\"0123456789abcdef\"", "reply", limits).status().message(),
            "reply: must be at most 16 bytes, got 18");
}

TEST(ParseUntrustedJsonTest, HugeTextIsRefused) {
  std::string huge = "\"" + std::string(kMaxArgsJsonBytes, 'a') + "\"";
  EXPECT_EQ(ParseUntrustedJson(huge).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckSupportedSchemaTest, TheValidatorsOwnSubsetPasses) {
  EXPECT_TRUE(CheckSupportedSchema(Schema()).ok()) << CheckSupportedSchema(Schema());
  EXPECT_TRUE(CheckSupportedSchema(json::parse(R"({"type": "object", "title": "t",
      "$comment": "c", "properties": {"a": {"type": "array", "items": {"type": "number"},
      "minItems": 0, "examples": [[1]], "enum": [[1], [2]]}},
      "additionalProperties": {"type": "string"}})"))
                  .ok());
}

TEST(CheckSupportedSchemaTest, WhatTheValidatorWouldNotEnforceIsRefusedWithItsPlace) {
  auto error = [](const char* text) {
    return std::string(CheckSupportedSchema(json::parse(text)).message());
  };
  EXPECT_EQ(error(R"({"type": "object", "properties": {"p": {"type": "string", "pattern": "x"}}})"),
            "input_schema.properties.p: unsupported keyword \"pattern\" (the validator would not "
            "enforce it)");
  EXPECT_EQ(error(R"({"type": "object", "oneOf": []})"),
            "input_schema: unsupported keyword \"oneOf\" (the validator would not enforce it)");
  EXPECT_EQ(error(R"({"type": ["string", "null"]})"),
            "input_schema.type: must be one of object, string, integer, number, boolean, array, "
            "null (one name)");
  EXPECT_EQ(error(R"({"type": "string", "maxLength": -1})"),
            "input_schema.maxLength: must be a non-negative integer");
  EXPECT_EQ(error(R"({"type": "object", "items": [{"type": "string"}]})"),
            "input_schema.items: a schema must be a JSON object");
  EXPECT_EQ(error(R"({"type": "object", "required": "a"})"),
            "input_schema.required: must be an array of property names");
  EXPECT_EQ(error(R"({"type": "object", "enum": []})"),
            "input_schema.enum: must be a non-empty array");
  EXPECT_EQ(error(R"({"type": "integer", "minimum": 1, "default": 0})"),
            "input_schema.default: must be an integer >= 1, got integer 0");
}

}  // namespace
}  // namespace rein
