// The one conversion between absl::Status and grpc::Status.
#include "common/grpc_status.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rein {
namespace {

// Surrounding white space is dropped: some HTTP/2 stacks (grpc-js among them) trim trailer
// values, and a message that ends in a space then reaches those clients empty.
std::string Cap(absl::string_view message) {
  message = absl::StripAsciiWhitespace(message);
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  return absl::StrCat(message.substr(0, kMaxStatusMessageBytes), "... [truncated]");
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), Cap(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      Cap(status.error_message()));
}

}  // namespace rein
