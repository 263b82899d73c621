// A small JSON Schema validator for tool arguments.
#include "executor_service/tools/json_schema.h"

#include <openssl/sha.h>

#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rein {
namespace {

using nlohmann::json;

// Largest magnitude up to which a double holds every integer exactly.
constexpr long double kMaxExactDouble = 9007199254740992.0L;  // 2^53

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    default: return "value";
  }
}

// A short rendering of `v` for messages: scalars as JSON (bounded), containers by type.
std::string Got(const json& v) {
  if (v.is_object() || v.is_array() || v.is_null()) return absl::StrCat("got ", TypeName(v));
  std::string text = v.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  if (text.size() > 64) text = absl::StrCat(text.substr(0, 64), "...");
  return absl::StrCat("got ", TypeName(v), " ", text);
}

bool IsInteger(const json& v) {
  if (v.is_number_integer()) return true;  // signed and unsigned
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kMaxExactDouble;
}

long double AsLongDouble(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

std::string FormatNumber(const json& v) {
  return v.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
}

bool HasNumber(const json& schema, const char* key) {
  return schema.contains(key) && schema[key].is_number();
}

bool HasCount(const json& schema, const char* key) {
  return schema.contains(key) && schema[key].is_number_integer();
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Plural(const json& n, const char* noun) {
  return absl::StrCat(FormatNumber(n), " ", noun, n.is_number() && n.get<double>() == 1 ? "" : "s");
}

// "must be <what>", built from the schema: the expected type and its bounds.
std::string Expectation(const json& schema) {
  std::string type = schema.contains("type") && schema["type"].is_string()
                         ? schema["type"].get<std::string>()
                         : "";
  if (schema.contains("enum") && schema["enum"].is_array()) {
    std::vector<std::string> options;
    for (const json& option : schema["enum"]) options.push_back(FormatNumber(option));
    return absl::StrCat("must be one of ", absl::StrJoin(options, ", "));
  }
  std::string what;
  if (type == "integer" || type == "number") {
    what = type == "integer" ? "an integer" : "a number";
    const bool lo = HasNumber(schema, "minimum");
    const bool hi = HasNumber(schema, "maximum");
    if (lo && hi) {
      absl::StrAppend(&what, " between ", FormatNumber(schema["minimum"]), " and ",
                      FormatNumber(schema["maximum"]));
    } else if (lo) {
      absl::StrAppend(&what, " >= ", FormatNumber(schema["minimum"]));
    } else if (hi) {
      absl::StrAppend(&what, " <= ", FormatNumber(schema["maximum"]));
    }
  } else if (type == "string") {
    what = "a string";
    const bool lo = HasCount(schema, "minLength");
    const bool hi = HasCount(schema, "maxLength");
    if (lo && hi) {
      absl::StrAppend(&what, " of ", FormatNumber(schema["minLength"]), " to ",
                      Plural(schema["maxLength"], "character"));
    } else if (lo) {
      absl::StrAppend(&what, " of at least ", Plural(schema["minLength"], "character"));
    } else if (hi) {
      absl::StrAppend(&what, " of at most ", Plural(schema["maxLength"], "character"));
    }
  } else if (type == "array") {
    what = "an array";
    if (HasCount(schema, "maxItems")) {
      absl::StrAppend(&what, " of at most ", Plural(schema["maxItems"], "item"));
    }
    if (HasCount(schema, "minItems")) {
      absl::StrAppend(&what, HasCount(schema, "maxItems") ? " and" : " of", " at least ",
                      Plural(schema["minItems"], "item"));
    }
  } else if (type == "object") {
    what = "a JSON object";
  } else if (type == "boolean") {
    what = "a boolean (true or false)";
  } else if (type == "null") {
    what = "null";
  } else {
    what = "a valid value";
  }
  return absl::StrCat("must be ", what);
}

absl::Status Fail(absl::string_view where, const json& schema, const json& value) {
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": ", Expectation(schema), ", ", Got(value)));
}

bool TypeMatches(const std::string& type, const json& v) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return IsInteger(v);
  if (type == "number") return v.is_number();
  if (type == "null") return v.is_null();
  return false;
}

absl::Status Validate(const json& schema, const json& value, const std::string& where) {
  if (!schema.is_object()) return absl::OkStatus();  // `true` / empty schema: anything goes
  if (schema.contains("type") && schema["type"].is_string()) {
    if (!TypeMatches(schema["type"].get<std::string>(), value)) {
      return Fail(where, schema, value);
    }
  }
  if (schema.contains("enum") && schema["enum"].is_array()) {
    bool found = false;
    for (const json& option : schema["enum"]) found = found || option == value;
    if (!found) return Fail(where, schema, value);
  }
  if (value.is_number()) {
    const long double v = AsLongDouble(value);
    if (HasNumber(schema, "minimum") && v < AsLongDouble(schema["minimum"])) {
      return Fail(where, schema, value);
    }
    if (HasNumber(schema, "maximum") && v > AsLongDouble(schema["maximum"])) {
      return Fail(where, schema, value);
    }
  }
  if (value.is_string()) {
    const size_t n = CodePoints(value.get_ref<const std::string&>());
    if (HasCount(schema, "minLength") && n < schema["minLength"].get<uint64_t>()) {
      return Fail(where, schema, value);
    }
    if (HasCount(schema, "maxLength") && n > schema["maxLength"].get<uint64_t>()) {
      return Fail(where, schema, value);
    }
  }
  if (value.is_array()) {
    if (HasCount(schema, "minItems") && value.size() < schema["minItems"].get<uint64_t>()) {
      return Fail(where, schema, value);
    }
    if (HasCount(schema, "maxItems") && value.size() > schema["maxItems"].get<uint64_t>()) {
      return Fail(where, schema, value);
    }
    if (schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        absl::Status s = Validate(schema["items"], value[i], absl::StrCat(where, "[", i, "]"));
        if (!s.ok()) return s;
      }
    }
  }
  if (value.is_object()) {
    static const json kEmpty = json::object();
    const json& properties = schema.contains("properties") && schema["properties"].is_object()
                                 ? schema["properties"]
                                 : kEmpty;
    if (schema.contains("required") && schema["required"].is_array()) {
      for (const json& name : schema["required"]) {
        if (name.is_string() && !value.contains(name.get<std::string>())) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".", name.get<std::string>(), ": is required"));
        }
      }
    }
    const json* additional =
        schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string field = absl::StrCat(where, ".", it.key());
      if (properties.contains(it.key())) {
        absl::Status s = Validate(properties[it.key()], it.value(), field);
        if (!s.ok()) return s;
      } else if (additional != nullptr) {
        if (additional->is_boolean() && !additional->get<bool>()) {
          std::vector<std::string> allowed;
          for (auto p = properties.begin(); p != properties.end(); ++p) allowed.push_back(p.key());
          std::string name = it.key();
          if (name.size() > 64) name = absl::StrCat(name.substr(0, 64), "...");
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".", name, ": unknown field (allowed: ",
                           allowed.empty() ? "none" : absl::StrJoin(allowed, ", "), ")"));
        }
        absl::Status s = Validate(*additional, it.value(), field);
        if (!s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseUntrustedJson(absl::string_view text, absl::string_view field,
                                                  JsonLimits limits) {
  if (text.size() > limits.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be at most ", limits.max_bytes, " bytes, got ", text.size()));
  }
  // Bound the nesting before parsing (strings are skipped, escapes honoured).
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": nested deeper than ", limits.max_depth, " levels"));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": not valid JSON: ", e.what()));
  }
}

absl::Status ValidateJson(const nlohmann::json& schema, const nlohmann::json& value,
                          absl::string_view where) {
  return Validate(schema, value, std::string(where));
}

nlohmann::json ApplyDefaults(const nlohmann::json& schema, nlohmann::json value) {
  if (!schema.is_object()) return value;
  const std::string type = schema.contains("type") && schema["type"].is_string()
                               ? schema["type"].get<std::string>()
                               : "";
  if (type == "integer" && value.is_number_float() && IsInteger(value)) {
    return json(static_cast<int64_t>(value.get<double>()));
  }
  if (!value.is_object() || !schema.contains("properties") || !schema["properties"].is_object()) {
    return value;
  }
  for (auto p = schema["properties"].begin(); p != schema["properties"].end(); ++p) {
    if (value.contains(p.key())) {
      value[p.key()] = ApplyDefaults(p.value(), std::move(value[p.key()]));
    } else if (p.value().is_object() && p.value().contains("default")) {
      value[p.key()] = p.value()["default"];
    }
  }
  return value;
}

namespace {

bool IsCount(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

absl::Status SchemaError(const std::string& where, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", problem));
}

absl::Status CheckSchema(const json& schema, const std::string& where, int depth) {
  if (depth > kMaxArgsJsonDepth) return SchemaError(where, "nested too deeply");
  if (!schema.is_object()) return SchemaError(where, "a schema must be a JSON object");
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    const std::string at = absl::StrCat(where, ".", key);
    if (key == "description" || key == "title" || key == "$comment") {
      if (!v.is_string()) return SchemaError(at, "must be a string");
    } else if (key == "default" || key == "examples") {
      // Checked below, once the whole schema is known to be supported.
    } else if (key == "type") {
      static const char* kTypes[] = {"object",  "string", "integer", "number",
                                     "boolean", "array",  "null"};
      bool known = false;
      for (const char* type : kTypes) known = known || (v.is_string() && v == type);
      if (!known) {
        return SchemaError(
            at, "must be one of object, string, integer, number, boolean, array, null (one name)");
      }
    } else if (key == "minimum" || key == "maximum") {
      if (!v.is_number()) return SchemaError(at, "must be a number");
    } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems") {
      if (!IsCount(v)) return SchemaError(at, "must be a non-negative integer");
    } else if (key == "enum") {
      if (!v.is_array() || v.empty()) return SchemaError(at, "must be a non-empty array");
    } else if (key == "required") {
      if (!v.is_array()) return SchemaError(at, "must be an array of property names");
      for (const json& name : v) {
        if (!name.is_string()) return SchemaError(at, "must be an array of property names");
      }
    } else if (key == "properties") {
      if (!v.is_object()) return SchemaError(at, "must be an object of schemas");
      for (auto p = v.begin(); p != v.end(); ++p) {
        absl::Status s = CheckSchema(p.value(), absl::StrCat(at, ".", p.key()), depth + 1);
        if (!s.ok()) return s;
      }
    } else if (key == "additionalProperties") {
      if (!v.is_boolean()) {
        absl::Status s = CheckSchema(v, at, depth + 1);
        if (!s.ok()) return s;
      }
    } else if (key == "items") {
      absl::Status s = CheckSchema(v, at, depth + 1);
      if (!s.ok()) return s;
    } else {
      return SchemaError(where, absl::StrCat("unsupported keyword \"", key,
                                             "\" (the validator would not enforce it)"));
    }
  }
  if (schema.contains("default")) {
    absl::Status s = Validate(schema, schema["default"], absl::StrCat(where, ".default"));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSupportedSchema(const nlohmann::json& schema, absl::string_view where) {
  return CheckSchema(schema, std::string(where), 0);
}

std::string UnsupportedSchemaFeature(const nlohmann::json& schema, absl::string_view where) {
  static const std::set<std::string> kEnforced = {
      "type",      "required", "properties", "additionalProperties",
      "items",     "minimum",  "maximum",    "minLength",
      "maxLength", "minItems", "maxItems",   "enum"};
  static const std::set<std::string> kAnnotations = {
      "description", "title",  "default",  "examples",  "$schema",   "$id",
      "$comment",    "format", "readOnly", "writeOnly", "deprecated"};
  static const std::set<std::string> kTypes = {"object",  "string", "integer", "number",
                                               "boolean", "array",  "null"};
  if (schema.is_boolean() && schema.get<bool>()) return "";
  if (!schema.is_object()) return absl::StrCat(where, ": a schema must be an object");
  for (const auto& [key, value] : schema.items()) {
    if (kAnnotations.count(key) != 0) continue;
    if (kEnforced.count(key) == 0) {
      return absl::StrCat(where, ": keyword \"", key, "\" is not supported by the validator");
    }
    if (key == "type" && (!value.is_string() || kTypes.count(value.get<std::string>()) == 0)) {
      return absl::StrCat(where, ".type: only one type name is supported, got ", value.dump());
    }
  }
  auto properties = schema.find("properties");
  if (properties != schema.end()) {
    if (!properties->is_object()) return absl::StrCat(where, ".properties: must be an object");
    for (const auto& [name, sub] : properties->items()) {
      std::string found = UnsupportedSchemaFeature(sub, absl::StrCat(where, ".properties.", name));
      if (!found.empty()) return found;
    }
  }
  auto items = schema.find("items");
  if (items != schema.end()) {
    std::string found = UnsupportedSchemaFeature(*items, absl::StrCat(where, ".items"));
    if (!found.empty()) return found;
  }
  auto extra = schema.find("additionalProperties");
  if (extra != schema.end() && !extra->is_boolean()) {
    std::string found =
        UnsupportedSchemaFeature(*extra, absl::StrCat(where, ".additionalProperties"));
    if (!found.empty()) return found;
  }
  return "";
}

std::string SchemaHash(const nlohmann::json& schema) {
  // nlohmann::json keeps object keys sorted, so dump() is canonical.
  const std::string text = schema.dump();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::StrCat("sha256:", absl::BytesToHexString(absl::string_view(
                                     reinterpret_cast<const char*>(digest), sizeof(digest))));
}

}  // namespace rein
