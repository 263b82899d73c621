// Chooses and builds the planner's backend from its options.
#include "planner_service/backend_factory.h"

#include <errno.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner_service/anthropic_backend.h"
#include "planner_service/anthropic_client.h"
#include "planner_service/scripted_backend.h"
#include "planner_service/stage_prompts.h"

namespace rein {
namespace {

constexpr size_t kMaxKeyFileBytes = 4096;

std::string Env(const char* name) {
  const char* value = getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// The API key from `path`, trimmed. Messages name the file, never its contents.
absl::StatusOr<std::string> ReadKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--api_key_file=", path, ": cannot read: ", std::strerror(errno)));
  }
  std::string text(kMaxKeyFileBytes + 1, '\0');
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxKeyFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--api_key_file=", path, ": larger than ", kMaxKeyFileBytes, " bytes"));
  }
  std::string key(absl::StripAsciiWhitespace(text));
  if (key.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("--api_key_file=", path, ": is empty"));
  }
  return key;
}

absl::StatusOr<std::unique_ptr<PlannerBackend>> MakeAnthropicBackend(const PlannerOptions& options,
                                                                     Clock* clock) {
  AnthropicClientOptions client_options;
  if (!options.api_key_file.empty()) {
    ASSIGN_OR_RETURN(client_options.api_key, ReadKeyFile(options.api_key_file));
  } else {
    client_options.api_key = std::string(absl::StripAsciiWhitespace(Env("ANTHROPIC_API_KEY")));
    if (client_options.api_key.empty()) {
      return absl::FailedPreconditionError(
          "the anthropic backend needs an API key: set ANTHROPIC_API_KEY or pass "
          "--api_key_file=FILE (or run the scripted planner with --script=FILE)");
    }
  }
  client_options.base_url = !options.anthropic_base_url.empty()  ? options.anthropic_base_url
                            : !Env("ANTHROPIC_BASE_URL").empty() ? Env("ANTHROPIC_BASE_URL")
                                                                 : kAnthropicPublicBaseUrl;
  if (options.model.empty()) return absl::InvalidArgumentError("--model must not be empty");
  ASSIGN_OR_RETURN(
      std::unique_ptr<StagePrompts> prompts,
      StagePrompts::Load(options.prompts_dir.empty() ? DefaultPromptsDir() : options.prompts_dir));
  absl::StatusOr<std::unique_ptr<AnthropicClient>> client =
      AnthropicClient::Create(std::move(client_options), clock);
  if (!client.ok()) return client.status();
  AnthropicBackendOptions backend_options;
  backend_options.model = options.model;
  return std::unique_ptr<PlannerBackend>(
      new AnthropicBackend(std::move(backend_options), *std::move(client), std::move(prompts)));
}

}  // namespace

std::string ResolveBackendName(const PlannerOptions& options) {
  if (!options.backend.empty()) return options.backend;
  return options.script.empty() ? "anthropic" : "scripted";
}

absl::StatusOr<std::unique_ptr<PlannerBackend>> MakePlannerBackend(const PlannerOptions& options,
                                                                   Clock* clock) {
  const std::string name = ResolveBackendName(options);
  if (name == "scripted") {
    if (options.script.empty()) {
      return absl::InvalidArgumentError("--backend=scripted needs --script=FILE");
    }
    absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
        ScriptedBackend::FromFile(options.script, clock);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<PlannerBackend>(*std::move(backend));
  }
  if (name == "anthropic") {
    if (!options.script.empty()) {
      return absl::InvalidArgumentError("--script is only for --backend=scripted");
    }
    return MakeAnthropicBackend(options, clock);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --backend=", name, " (known: scripted, anthropic)"));
}

}  // namespace rein
