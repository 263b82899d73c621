// Declared tools: parsing a tool file, filling its argv template, loading a directory.
#include "executor_service/tools/declared_tool.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "executor_service/tools/json_schema.h"
#include "executor_service/tools/run_command_tool.h"

namespace rein {
namespace {

using nlohmann::json;

// Directories the sandbox shows read-only at their host paths: an absolute program must be
// under one of them (see BwrapStaticArgs).
constexpr const char* kVisibleSystemDirs[] = {"/usr/",   "/bin/",   "/sbin/",  "/lib/",
                                              "/lib32/", "/lib64/", "/libx32/"};

absl::Status Invalid(absl::string_view where, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", problem));
}

// Parses JSON text, refusing a key given twice in one object (the last would win silently).
absl::StatusOr<json> ParseStrictJson(absl::string_view text) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", e.what()));
  }
  if (!duplicate.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("key \"", duplicate, "\" is given twice"));
  }
  return value;
}

bool IsScalarType(const json& schema) {
  if (!schema.is_object() || !schema.contains("type")) return false;
  const json& type = schema["type"];
  return type == "string" || type == "integer" || type == "number" || type == "boolean";
}

// Splits `text` into literal parts and {name} placeholders; "{{" and "}}" are literal braces.
absl::Status ParseTemplate(const std::string& text, const std::string& where,
                           ArgvTemplateElement* element) {
  std::string literal;
  auto flush = [&] {
    if (literal.empty()) return;
    element->parts.push_back(std::move(literal));
    element->is_placeholder.push_back(false);
    literal.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool doubled = i + 1 < text.size() && text[i + 1] == c;
    if ((c == '{' || c == '}') && doubled) {
      literal.push_back(c);
      ++i;
      continue;
    }
    if (c == '}') {
      return Invalid(where, "a '}' without its '{' (write \"}}\" for a literal brace)");
    }
    if (c != '{') {
      literal.push_back(c);
      continue;
    }
    const size_t close = text.find('}', i + 1);
    if (close == std::string::npos) {
      return Invalid(where, "a '{' without its '}' (write \"{{\" for a literal brace)");
    }
    const std::string name = text.substr(i + 1, close - i - 1);
    absl::Status named = CheckToolName(name, absl::StrCat(where, ": placeholder"));
    if (!named.ok()) return named;
    flush();
    element->parts.push_back(name);
    element->is_placeholder.push_back(true);
    i = close;
  }
  flush();
  return absl::OkStatus();
}

// Checks every placeholder of `element` against the schema's properties.
absl::Status CheckPlaceholders(const ArgvTemplateElement& element, const json& schema,
                               const std::string& where) {
  const json& properties = schema["properties"];
  std::set<std::string> required;
  if (schema.contains("required")) {
    for (const json& name : schema["required"]) required.insert(name.get<std::string>());
  }
  size_t placeholders = 0;
  for (size_t i = 0; i < element.parts.size(); ++i) {
    if (!element.is_placeholder[i]) continue;
    ++placeholders;
    const std::string& name = element.parts[i];
    if (!properties.contains(name)) {
      return Invalid(where, absl::StrCat("placeholder {", name,
                                         "} is not a property of input_schema.properties"));
    }
    const json& property = properties[name];
    if (element.each) {
      if (!property.contains("type") || property["type"] != "array" ||
          !property.contains("items") || !IsScalarType(property["items"])) {
        return Invalid(where, absl::StrCat("\"each\": {", name,
                                           "} must be an array of strings, integers, numbers "
                                           "or booleans (give its type and items.type)"));
      }
    } else if (!IsScalarType(property)) {
      return Invalid(where, absl::StrCat("placeholder {", name,
                                         "} must have type string, integer, number or boolean "
                                         "in input_schema (arrays need \"each\")"));
    }
    if (!element.optional && !required.count(name) && !property.contains("default")) {
      return Invalid(where, absl::StrCat("placeholder {", name,
                                         "} may be absent (not required, no default): mark the "
                                         "element \"optional\": true"));
    }
  }
  if (element.each && placeholders != 1) {
    return Invalid(where, "\"each\" needs exactly one placeholder");
  }
  return absl::OkStatus();
}

absl::StatusOr<ArgvTemplateElement> ParseElement(const json& value, const json& schema,
                                                 const std::string& where) {
  ArgvTemplateElement element;
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_object()) {
    if (!value.contains("template") || !value["template"].is_string()) {
      return Invalid(where, "an element object needs \"template\" (a string)");
    }
    text = value["template"].get<std::string>();
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string& key = it.key();
      const std::string at = absl::StrCat(where, ".", key);
      if (key == "template") continue;
      if (key == "optional" || key == "allow_dash" || key == "each") {
        if (!it.value().is_boolean()) return Invalid(at, "must be true or false");
        const bool flag = it.value().get<bool>();
        (key == "optional"     ? element.optional
         : key == "allow_dash" ? element.allow_dash
                               : element.each) = flag;
      } else if (key == "when") {
        if (!it.value().is_string()) return Invalid(at, "must name a boolean property");
        element.when = it.value().get<std::string>();
        const json& properties = schema["properties"];
        if (!properties.contains(element.when) || !properties[element.when].contains("type") ||
            properties[element.when]["type"] != "boolean") {
          return Invalid(
              at, absl::StrCat("\"", element.when, "\" is not a boolean property of input_schema"));
        }
      } else {
        return Invalid(where,
                       absl::StrCat("unknown key \"", key,
                                    "\" (allowed: template, optional, allow_dash, each, when)"));
      }
    }
  } else {
    return Invalid(where, "must be a string or an object with \"template\"");
  }
  absl::Status status = ParseTemplate(text, where, &element);
  if (status.ok()) status = CheckPlaceholders(element, schema, where);
  if (!status.ok()) return status;
  return element;
}

// The text a scalar argument puts into argv.
std::string ArgText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

// Checks the program (argv[0]) of a tool file.
absl::Status CheckProgram(const std::string& program) {
  if (program.empty()) return Invalid("argv[0]", "the program must not be empty");
  if (program.find_first_of("{}") != std::string::npos) {
    return Invalid("argv[0]", "the program must be fixed (no placeholders)");
  }
  if (program[0] != '/') {
    if (program.find('/') != std::string::npos) {
      return Invalid("argv[0]", absl::StrCat("\"", program,
                                             "\": give an absolute path or a bare name looked "
                                             "up in the sandbox's PATH (",
                                             kSandboxPath, ")"));
    }
    return absl::OkStatus();  // looked up at each call: it may be installed later
  }
  bool visible = false;
  for (const char* dir : kVisibleSystemDirs) visible = visible || absl::StartsWith(program, dir);
  if (!visible) {
    return Invalid("argv[0]", absl::StrCat("\"", program,
                                           "\" is outside what the sandbox shows (/usr, /bin, "
                                           "/sbin, /lib*); install it there"));
  }
  struct stat st;
  if (stat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      access(program.c_str(), X_OK) != 0) {
    return Invalid("argv[0]",
                   absl::StrCat("\"", program, "\" does not exist or is not an executable file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeclaredTool>> DeclaredTool::Parse(absl::string_view text,
                                                                  absl::string_view file_name,
                                                                  const Sandbox* sandbox) {
  absl::StatusOr<json> file = ParseStrictJson(text);
  if (!file.ok()) return file.status();
  if (!file->is_object()) return absl::InvalidArgumentError("must be a JSON object");
  static const std::set<std::string> kKeys = {
      "name", "description", "input_schema", "mutating", "timeout_seconds", "argv", "$comment"};
  for (auto it = file->begin(); it != file->end(); ++it) {
    if (!kKeys.count(it.key())) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown key \"", it.key(),
                       "\" (allowed: name, description, input_schema, mutating, "
                       "timeout_seconds, argv, $comment)"));
    }
  }
  for (const char* key : {"name", "description", "input_schema", "mutating", "argv"}) {
    if (!file->contains(key)) return Invalid(key, "is required");
  }
  auto tool = std::unique_ptr<DeclaredTool>(new DeclaredTool());
  tool->sandbox_ = sandbox;
  ToolSpec& spec = tool->spec_;
  const json& f = *file;
  if (!f["name"].is_string()) return Invalid("name", "must be a string");
  spec.name = f["name"].get<std::string>();
  absl::Status status = CheckToolName(spec.name);
  if (!status.ok()) return status;
  if (!f["description"].is_string() || f["description"].get<std::string>().empty()) {
    return Invalid("description", "must be a non-empty string (the model reads it)");
  }
  spec.description = f["description"].get<std::string>();
  if (!f["mutating"].is_boolean()) {
    return Invalid("mutating", "must be true or false (does the tool change anything?)");
  }
  spec.mutating = f["mutating"].get<bool>();
  int64_t timeout_seconds = kDefaultCommandTimeoutSeconds;
  if (f.contains("timeout_seconds")) {
    const json& t = f["timeout_seconds"];
    if (!t.is_number_integer() || t.get<int64_t>() < 1 ||
        t.get<int64_t>() > kMaxCommandTimeoutSeconds) {
      return Invalid("timeout_seconds",
                     absl::StrCat("must be an integer between 1 and ", kMaxCommandTimeoutSeconds));
    }
    timeout_seconds = t.get<int64_t>();
  }
  spec.default_timeout = absl::Seconds(timeout_seconds);
  spec.spawns_process = true;
  spec.origin = absl::StrCat("declared:", file_name);

  const json& schema = f["input_schema"];
  if (!schema.is_object() || !schema.contains("type") || schema["type"] != "object") {
    return Invalid("input_schema", "must be an object schema ({\"type\": \"object\", ...})");
  }
  status = CheckSupportedSchema(schema, "input_schema");
  if (!status.ok()) return status;
  spec.input_schema = schema;
  if (!spec.input_schema.contains("properties")) spec.input_schema["properties"] = json::object();

  const json& argv = f["argv"];
  if (!argv.is_array() || argv.empty() || !argv[0].is_string()) {
    return Invalid("argv", "must be a non-empty array whose first element is the program");
  }
  status = CheckProgram(argv[0].get<std::string>());
  if (!status.ok()) return status;
  for (size_t i = 0; i < argv.size(); ++i) {
    absl::StatusOr<ArgvTemplateElement> element =
        ParseElement(argv[i], spec.input_schema, absl::StrCat("argv[", i, "]"));
    if (!element.ok()) return element.status();
    tool->argv_.push_back(*std::move(element));
  }
  return tool;
}

absl::StatusOr<std::vector<std::string>> DeclaredTool::ExpandArgv(const json& args) const {
  std::vector<std::string> out;
  size_t total_bytes = 0;
  for (size_t e = 0; e < argv_.size(); ++e) {
    const ArgvTemplateElement& element = argv_[e];
    if (!element.when.empty() && !(args.contains(element.when) && args[element.when].is_boolean() &&
                                   args[element.when].get<bool>())) {
      continue;
    }
    bool absent = false;
    std::string placeholder;  // the one an "each" element expands
    for (size_t i = 0; i < element.parts.size(); ++i) {
      if (!element.is_placeholder[i]) continue;
      placeholder = element.parts[i];
      absent = absent || !args.contains(element.parts[i]) || args[element.parts[i]].is_null();
    }
    if (absent) continue;  // only optional elements may be absent (checked at load)
    const size_t items = element.each ? args[placeholder].size() : 1;
    for (size_t item = 0; item < items; ++item) {
      std::string text;
      std::string first_arg;  // the argument that starts the element, if any
      for (size_t i = 0; i < element.parts.size(); ++i) {
        if (!element.is_placeholder[i]) {
          text += element.parts[i];
          continue;
        }
        const std::string& name = element.parts[i];
        const json& value = element.each ? args[name][item] : args[name];
        const std::string field = element.each ? absl::StrCat("args.", name, "[", item, "]")
                                               : absl::StrCat("args.", name);
        const std::string piece = ArgText(value);
        if (piece.find('\0') != std::string::npos) {
          return Invalid(field, "must not contain NUL bytes");
        }
        if (text.empty()) first_arg = field;
        text += piece;
      }
      if (text.size() > kMaxCommandArgBytes) {
        return Invalid(
            first_arg.empty() ? absl::StrCat("argv[", e, "]") : first_arg,
            absl::StrCat("makes argument ", out.size(), " ", text.size(), " bytes; at most ",
                         kMaxCommandArgBytes, " (the kernel's limit)"));
      }
      // A value never becomes a flag unless the template says so: the element may start with
      // '-' only when its own literal text does, or when "allow_dash" is set.
      if (!first_arg.empty() && !text.empty() && text[0] == '-' && !element.allow_dash) {
        return Invalid(first_arg,
                       absl::StrCat("must not start with '-' (it would be read as an option of ",
                                    spec_.name, ")"));
      }
      total_bytes += text.size() + 1;
      out.push_back(std::move(text));
      if (out.size() > kMaxDeclaredArgvElements || total_bytes > kMaxDeclaredArgvBytes) {
        return absl::InvalidArgumentError(absl::StrCat("args: the command line would pass ",
                                                       kMaxDeclaredArgvElements, " arguments or ",
                                                       kMaxDeclaredArgvBytes, " bytes"));
      }
    }
  }
  return out;
}

ToolResult DeclaredTool::Execute(const ToolContext& context, const json& args) const {
  absl::StatusOr<std::vector<std::string>> argv = ExpandArgv(args);
  if (!argv.ok()) return ToolResult::Failure(argv.status());
  const std::string program = LookUpProgram((*argv)[0]);
  if (program.empty() || access(program.c_str(), X_OK) != 0) {
    return ToolResult::Failure(
        "NOT_FOUND",
        absl::StrCat(spec_.name, ": program \"", (*argv)[0],
                     "\" is not installed (not found in the sandbox's PATH ", kSandboxPath, ")"));
  }
  if (sandbox_ == nullptr) return ToolResult::Failure("INTERNAL", "no sandbox");
  CommandRequest request;
  request.argv = *std::move(argv);
  request.deadline = context.deadline;
  return RunSandboxedCommand(*sandbox_, context, std::move(request), spec_.name);
}

absl::Status LoadDeclaredTools(const std::string& dir, const Sandbox* sandbox,
                               ToolRegistry* registry) {
  DIR* stream = opendir(dir.c_str());
  if (stream == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tools_dir: ", dir, ": cannot open the directory: ", strerror(errno)));
  }
  std::vector<std::string> names;
  while (struct dirent* entry = readdir(stream)) {
    if (entry->d_name[0] != '.') names.push_back(entry->d_name);
  }
  closedir(stream);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, absl::EndsWith(dir, "/") ? "" : "/", name);
    auto fail = [&](absl::Status status) {
      return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
    };
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !absl::EndsWith(name, ".json")) {
      return fail(absl::InvalidArgumentError(
          "not a tool file (every entry of --tools_dir must be a regular *.json file; hidden "
          "files are skipped)"));
    }
    if (st.st_size > static_cast<off_t>(kMaxToolFileBytes)) {
      return fail(
          absl::InvalidArgumentError(absl::StrCat("larger than ", kMaxToolFileBytes, " bytes")));
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return fail(absl::InvalidArgumentError("cannot be read"));
    absl::StatusOr<std::unique_ptr<DeclaredTool>> tool =
        DeclaredTool::Parse(text.str(), name, sandbox);
    if (!tool.ok()) return fail(tool.status());
    absl::Status added = registry->Add(*std::move(tool));
    if (!added.ok()) return fail(added);
  }
  return absl::OkStatus();
}

}  // namespace rein
