// reinctl's channel to the router: TLS and the bearer token.
#include "cli/connection.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/support/client_interceptor.h"

namespace rein::cli {
namespace {

// Adds the authorization header to every call's initial metadata (works over TLS and, on a
// loopback router, over plaintext, where gRPC's call credentials would not be sent).
class BearerInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(std::string token) : header_("Bearer " + token) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;  // lives as long as the channel that owns the factory
};

}  // namespace

absl::StatusOr<ConnectionFlags> ExtractConnectionFlags(std::vector<std::string>* args) {
  ConnectionFlags flags;
  const std::vector<std::pair<std::string, std::string*>> known = {
      {"--tls_ca", &flags.tls.ca},
      {"--tls_cert", &flags.tls.cert},
      {"--tls_key", &flags.tls.key},
      {"--token_file", &flags.token_file}};
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& arg = (*args)[i];
    bool taken = false;
    for (const auto& [name, slot] : known) {
      if (absl::StartsWith(arg, name + "=")) {
        *slot = arg.substr(name.size() + 1);
      } else if (arg == name) {
        if (i + 1 >= args->size()) {
          return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
        }
        *slot = (*args)[++i];
      } else {
        continue;
      }
      if (slot->empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": empty"));
      taken = true;
      break;
    }
    if (!taken) rest.push_back(arg);
  }
  if (absl::Status status = CheckClientTlsFiles(flags.tls); !status.ok()) return status;
  *args = std::move(rest);
  return flags;
}

absl::StatusOr<std::string> LoadToken(const ConnectionFlags& flags, const char* env_token) {
  std::string token;
  if (!flags.token_file.empty()) {
    std::ifstream in(flags.token_file);
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file: cannot read ", flags.token_file));
    }
    std::getline(in, token);
  } else if (env_token != nullptr) {
    token = env_token;
  }
  return std::string(absl::StripAsciiWhitespace(token));
}

std::shared_ptr<grpc::Channel> MakeRouterChannel(const std::string& target,
                                                 const ConnectionFlags& flags,
                                                 const std::string& token) {
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> factories;
  if (!token.empty()) factories.push_back(std::make_unique<BearerInterceptorFactory>(token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      target, MakeChannelCredentials(flags.tls), grpc::ChannelArguments(), std::move(factories));
}

}  // namespace rein::cli
