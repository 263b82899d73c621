// Reads and validates a scripted planner's JSON script (see SCRIPT.md), and renders its replies.
#include "planner_service/script.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "rein/v1/planner.pb.h"

namespace rein {
namespace {

using json = nlohmann::json;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::OneofDescriptor;

constexpr int64_t kMaxDelayMs = 3600 * 1000;
constexpr off_t kMaxScriptBytes = 16 << 20;
// Deeper JSON is refused at load: the walks over a script recurse.
constexpr int kMaxJsonDepth = 64;

enum class ConditionKind { kString, kBool, kInt };

struct ConditionSpec {
  const char* key;
  ConditionKind kind;
  bool plan;
  bool decide;
  bool evaluate;
};

constexpr ConditionSpec kConditions[] = {
    {"subtask", ConditionKind::kString, false, true, true},
    {"has_human_input", ConditionKind::kBool, true, true, false},
    {"human_input_contains", ConditionKind::kString, true, true, false},
    {"observation_contains", ConditionKind::kString, true, false, true},
    {"replan_reason_contains", ConditionKind::kString, true, false, false},
    {"completed_contains", ConditionKind::kString, true, false, false},
    {"iteration_at_least", ConditionKind::kInt, true, true, true},
    {"tool", ConditionKind::kString, false, false, true},
    {"action_ok", ConditionKind::kBool, false, false, true},
    {"goal_contains", ConditionKind::kString, true, true, true},
};

bool AppliesTo(const ConditionSpec& spec, ScriptStage stage) {
  switch (stage) {
    case ScriptStage::kPlan: return spec.plan;
    case ScriptStage::kDecide: return spec.decide;
    case ScriptStage::kEvaluate: return spec.evaluate;
  }
  return false;
}

constexpr std::pair<const char*, absl::StatusCode> kErrorCodes[] = {
    {"CANCELLED", absl::StatusCode::kCancelled},
    {"UNKNOWN", absl::StatusCode::kUnknown},
    {"INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
    {"DEADLINE_EXCEEDED", absl::StatusCode::kDeadlineExceeded},
    {"NOT_FOUND", absl::StatusCode::kNotFound},
    {"ALREADY_EXISTS", absl::StatusCode::kAlreadyExists},
    {"PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
    {"RESOURCE_EXHAUSTED", absl::StatusCode::kResourceExhausted},
    {"FAILED_PRECONDITION", absl::StatusCode::kFailedPrecondition},
    {"ABORTED", absl::StatusCode::kAborted},
    {"OUT_OF_RANGE", absl::StatusCode::kOutOfRange},
    {"UNIMPLEMENTED", absl::StatusCode::kUnimplemented},
    {"INTERNAL", absl::StatusCode::kInternal},
    {"UNAVAILABLE", absl::StatusCode::kUnavailable},
    {"DATA_LOSS", absl::StatusCode::kDataLoss},
    {"UNAUTHENTICATED", absl::StatusCode::kUnauthenticated},
};

// "<path>: <problem>"; ParseScript puts the source in front.
absl::Status LoadError(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

std::string Got(const json& value) { return absl::StrCat("got ", value.type_name()); }

// Whether `value` nests no deeper than `limit` levels (recursion bounded by `limit`).
bool DepthWithin(const json& value, int limit) {
  if (!value.is_structured()) return true;
  if (limit == 0) return false;
  for (const json& element : value) {
    if (!DepthWithin(element, limit - 1)) return false;
  }
  return true;
}

// The value of an integral JSON number, or nullopt for anything else or out of int64 range.
std::optional<int64_t> AsInt(const json& value) {
  if (value.is_number_unsigned()) {
    uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

absl::Status ParseCondition(const ConditionSpec& spec, const json& value, const std::string& path,
                            RuleConditions* match) {
  std::optional<std::string> text;
  std::optional<bool> flag;
  std::optional<int64_t> number;
  switch (spec.kind) {
    case ConditionKind::kString:
      if (!value.is_string()) return LoadError(path, "expected a string, " + Got(value));
      text = value.get<std::string>();
      if (text->empty()) return LoadError(path, "must not be empty (leave the condition out)");
      break;
    case ConditionKind::kBool:
      if (!value.is_boolean()) return LoadError(path, "expected true or false, " + Got(value));
      flag = value.get<bool>();
      break;
    case ConditionKind::kInt:
      number = AsInt(value);
      if (!number || *number < 0 || *number > INT32_MAX) {
        return LoadError(path, "expected an integer from 0 to 2147483647, " +
                                   (value.is_number() ? value.dump() : Got(value)));
      }
      break;
  }
  absl::string_view key = spec.key;
  if (key == "subtask") match->subtask = text;
  if (key == "has_human_input") match->has_human_input = flag;
  if (key == "human_input_contains") match->human_input_contains = text;
  if (key == "observation_contains") match->observation_contains = text;
  if (key == "replan_reason_contains") match->replan_reason_contains = text;
  if (key == "completed_contains") match->completed_contains = text;
  if (key == "iteration_at_least") match->iteration_at_least = number;
  if (key == "tool") match->tool = text;
  if (key == "action_ok") match->action_ok = flag;
  if (key == "goal_contains") match->goal_contains = text;
  return absl::OkStatus();
}

absl::StatusOr<RuleConditions> ParseConditions(const json& when, ScriptStage stage,
                                               const std::string& path) {
  if (!when.is_object()) return LoadError(path, "expected an object of conditions, " + Got(when));
  std::vector<std::string> usable;
  for (const ConditionSpec& candidate : kConditions) {
    if (AppliesTo(candidate, stage)) usable.push_back(candidate.key);
  }
  RuleConditions match;
  for (const auto& item : when.items()) {
    const std::string key_path = absl::StrCat(path, ".", item.key());
    const ConditionSpec* spec = nullptr;
    for (const ConditionSpec& candidate : kConditions) {
      if (item.key() == candidate.key) spec = &candidate;
    }
    if (spec == nullptr) {
      return LoadError(key_path, absl::StrCat("unknown condition (", ScriptStageName(stage),
                                              " rules know: ", absl::StrJoin(usable, ", "), ")"));
    }
    if (!AppliesTo(*spec, stage)) {
      return LoadError(key_path,
                       absl::StrCat("not available in ", ScriptStageName(stage),
                                    " rules (they know: ", absl::StrJoin(usable, ", "), ")"));
    }
    RETURN_IF_ERROR(ParseCondition(*spec, item.value(), key_path, &match));
  }
  return match;
}

// Checks that `value` has the shape of message `descriptor` in proto3 JSON, down to field
// names, so that a typo is reported with its JSON path. Scalar types are left to the parser.
absl::Status CheckReplyShape(const json& value, const Descriptor* descriptor,
                             const std::string& path) {
  if (!value.is_object()) {
    return LoadError(path,
                     absl::StrCat("expected an object (", descriptor->name(), "), ", Got(value)));
  }
  const bool is_tool_call = descriptor->full_name() == "rein.v1.ToolCall";
  std::map<const OneofDescriptor*, std::string> oneofs_set;
  for (const auto& item : value.items()) {
    const std::string& key = item.key();
    const std::string key_path = absl::StrCat(path, ".", key);
    if (is_tool_call && key == "args") {
      if (!item.value().is_object()) {
        return LoadError(key_path, "expected an object of tool arguments, " + Got(item.value()));
      }
      if (value.contains("argsJson") || value.contains("args_json")) {
        return LoadError(key_path, "give args or argsJson, not both");
      }
      continue;
    }
    const FieldDescriptor* field = descriptor->FindFieldByName(key);
    for (int i = 0; field == nullptr && i < descriptor->field_count(); ++i) {
      if (descriptor->field(i)->json_name() == key) field = descriptor->field(i);
    }
    if (field == nullptr) {
      std::vector<std::string> known;
      for (int i = 0; i < descriptor->field_count(); ++i) {
        known.push_back(descriptor->field(i)->json_name());
      }
      if (is_tool_call) known.push_back("args");
      return LoadError(key_path, absl::StrCat("unknown field of ", descriptor->name(),
                                              " (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (item.value().is_null()) continue;
    if (const OneofDescriptor* oneof = field->real_containing_oneof()) {
      auto [it, inserted] = oneofs_set.emplace(oneof, key);
      if (!inserted) {
        return LoadError(
            key_path, absl::StrCat("conflicts with ", it->second, ": only one of them may be set"));
      }
    }
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_map() ||
        field->message_type()->file()->package() != "rein.v1") {
      continue;
    }
    if (!field->is_repeated()) {
      RETURN_IF_ERROR(CheckReplyShape(item.value(), field->message_type(), key_path));
      continue;
    }
    if (!item.value().is_array())
      return LoadError(key_path, "expected an array, " + Got(item.value()));
    for (size_t i = 0; i < item.value().size(); ++i) {
      RETURN_IF_ERROR(CheckReplyShape(item.value()[i], field->message_type(),
                                      absl::StrCat(key_path, "[", i, "]")));
    }
  }
  return absl::OkStatus();
}

// The JSON path of the first string in `value` containing `needle`, if any.
std::optional<std::string> FindString(const json& value, absl::string_view needle,
                                      const std::string& path) {
  if (value.is_string()) {
    if (absl::StrContains(value.get_ref<const std::string&>(), needle)) return path;
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      auto found = FindString(value[i], needle, absl::StrCat(path, "[", i, "]"));
      if (found) return found;
    }
  } else if (value.is_object()) {
    for (const auto& item : value.items()) {
      auto found = FindString(item.value(), needle, absl::StrCat(path, ".", item.key()));
      if (found) return found;
    }
  }
  return std::nullopt;
}

absl::StatusOr<ScriptRule> ParseRule(const json& value, ScriptStage stage, const Message& prototype,
                                     const std::string& path) {
  if (!value.is_object()) return LoadError(path, "expected a rule object, " + Got(value));
  ScriptRule rule;
  rule.path = path;
  bool has_reply = false;
  bool has_error = false;
  for (const auto& item : value.items()) {
    const std::string& key = item.key();
    const json& field = item.value();
    const std::string key_path = absl::StrCat(path, ".", key);
    if (key == "when") {
      ASSIGN_OR_RETURN(rule.when, ParseConditions(field, stage, key_path));
    } else if (key == "delay_ms") {
      std::optional<int64_t> ms = AsInt(field);
      if (!ms || *ms < 0 || *ms > kMaxDelayMs) {
        return LoadError(key_path, absl::StrCat("expected an integer from 0 to ", kMaxDelayMs, ", ",
                                                field.is_number() ? field.dump() : Got(field)));
      }
      rule.delay = absl::Milliseconds(*ms);
    } else if (key == "comment") {
      if (!field.is_string()) return LoadError(key_path, "expected a string, " + Got(field));
    } else if (key == "reply") {
      has_reply = true;
      RETURN_IF_ERROR(CheckReplyShape(field, prototype.GetDescriptor(), key_path));
      if (stage == ScriptStage::kPlan) {
        if (auto where = FindString(field, "${subtask}", key_path)) {
          return LoadError(*where, "${subtask} is not available in plan replies");
        }
      }
      PlaceholderValues sample;
      sample.subtask = "subtask";
      std::unique_ptr<Message> trial(prototype.New());
      absl::Status parsed = RenderReply(field, sample, trial.get());
      if (!parsed.ok()) {
        return LoadError(key_path, absl::StrCat("not a valid ", prototype.GetDescriptor()->name(),
                                                ": ", parsed.message()));
      }
      rule.reply = field;
    } else if (key == "error") {
      has_error = true;
      if (!field.is_object()) {
        return LoadError(key_path,
                         "expected an object {\"code\": ..., \"message\": ...}, " + Got(field));
      }
      bool has_code = false;
      for (const auto& part : field.items()) {
        const std::string part_path = absl::StrCat(key_path, ".", part.key());
        if (part.key() == "code") {
          if (!part.value().is_string())
            return LoadError(part_path, "expected a string, " + Got(part.value()));
          const std::string& name = part.value().get_ref<const std::string&>();
          std::vector<std::string> names;
          for (const auto& [code_name, code] : kErrorCodes) {
            names.push_back(code_name);
            if (name == code_name) {
              rule.error_code = code;
              has_code = true;
            }
          }
          if (!has_code) {
            return LoadError(part_path, absl::StrCat("unknown gRPC code \"", name, "\" (known: ",
                                                     absl::StrJoin(names, ", "), ")"));
          }
        } else if (part.key() == "message") {
          if (!part.value().is_string())
            return LoadError(part_path, "expected a string, " + Got(part.value()));
          rule.error_message = part.value().get<std::string>();
          if (stage == ScriptStage::kPlan && absl::StrContains(rule.error_message, "${subtask}")) {
            return LoadError(part_path, "${subtask} is not available in plan rules");
          }
        } else {
          return LoadError(part_path, "unknown key (known: code, message)");
        }
      }
      if (!has_code) return LoadError(key_path, "missing \"code\"");
    } else {
      return LoadError(key_path, "unknown key (known: when, reply, error, delay_ms, comment)");
    }
  }
  if (has_reply && has_error) return LoadError(path, "has both reply and error; give one");
  if (!has_reply && !has_error) return LoadError(path, "needs a reply or an error");
  return rule;
}

}  // namespace

const char* ScriptStageName(ScriptStage stage) {
  switch (stage) {
    case ScriptStage::kPlan: return "plan";
    case ScriptStage::kDecide: return "decide";
    case ScriptStage::kEvaluate: return "evaluate";
  }
  return "?";
}

std::string SubstitutePlaceholders(absl::string_view text, const PlaceholderValues& values) {
  return absl::StrReplaceAll(text, {{"${iteration}", absl::StrCat(values.iteration)},
                                    {"${subtask}", values.subtask},
                                    {"${observation}", values.observation}});
}

namespace {

void SubstituteStrings(json* value, const PlaceholderValues& values) {
  if (value->is_string()) {
    *value = SubstitutePlaceholders(value->get_ref<const std::string&>(), values);
  } else if (value->is_array()) {
    for (json& element : *value) SubstituteStrings(&element, values);
  } else if (value->is_object()) {
    for (auto& item : value->items()) SubstituteStrings(&item.value(), values);
  }
}

}  // namespace

absl::Status RenderReply(const json& reply, const PlaceholderValues& values, Message* response) {
  json rendered = reply;
  SubstituteStrings(&rendered, values);
  for (const char* key :
       {"toolCall", "tool_call", "nextCall", "next_call", "firstCall", "first_call"}) {
    auto call = rendered.find(key);
    if (call == rendered.end() || !call->is_object()) continue;
    auto args = call->find("args");
    if (args == call->end()) continue;
    std::string args_json = args->dump(-1, ' ', false, json::error_handler_t::replace);
    call->erase(args);
    (*call)["argsJson"] = std::move(args_json);
  }
  const std::string text = rendered.dump(-1, ' ', false, json::error_handler_t::replace);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(text, response, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        std::string(status.message().data(), status.message().size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Script> ParseScript(absl::string_view text, absl::string_view source) {
  auto with_source = [source](const absl::Status& status) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", status.message()));
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), /*cb=*/nullptr, /*allow_exceptions=*/true,
                       /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not valid JSON: ", e.what()));
  }
  if (!DepthWithin(root, kMaxJsonDepth)) {
    return with_source(
        LoadError("(top level)", absl::StrCat("nested deeper than ", kMaxJsonDepth, " levels")));
  }
  if (!root.is_object()) {
    return with_source(LoadError("(top level)",
                                 "expected an object with plan, decide and "
                                 "evaluate, " +
                                     Got(root)));
  }
  Script script;
  const rein::v1::PlanResponse plan_prototype;
  const rein::v1::DecideResponse decide_prototype;
  const rein::v1::EvaluateResponse evaluate_prototype;
  for (const auto& item : root.items()) {
    const std::string& key = item.key();
    ScriptStage stage;
    std::vector<ScriptRule>* rules;
    const Message* prototype;
    if (key == "plan") {
      stage = ScriptStage::kPlan;
      rules = &script.plan;
      prototype = &plan_prototype;
    } else if (key == "decide") {
      stage = ScriptStage::kDecide;
      rules = &script.decide;
      prototype = &decide_prototype;
    } else if (key == "evaluate") {
      stage = ScriptStage::kEvaluate;
      rules = &script.evaluate;
      prototype = &evaluate_prototype;
    } else if (key == "comment") {
      continue;
    } else {
      return with_source(LoadError(key, "unknown key (known: plan, decide, evaluate, comment)"));
    }
    if (!item.value().is_array()) {
      return with_source(LoadError(key, "expected an array of rules, " + Got(item.value())));
    }
    for (size_t i = 0; i < item.value().size(); ++i) {
      absl::StatusOr<ScriptRule> rule =
          ParseRule(item.value()[i], stage, *prototype, absl::StrCat(key, "[", i, "]"));
      if (!rule.ok()) return with_source(rule.status());
      rules->push_back(*std::move(rule));
    }
  }
  return script;
}

absl::StatusOr<Script> LoadScriptFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string message = absl::StrCat("cannot open script ", path, ": ", strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::FailedPreconditionError(message);
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat("script ", path, " is not a regular file"));
  }
  if (info.st_size > kMaxScriptBytes) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("script ", path, " is ", info.st_size, " bytes, more than ", kMaxScriptBytes));
  }
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read script ", path, ": ", strerror(error)));
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return ParseScript(text, path);
}

}  // namespace rein
