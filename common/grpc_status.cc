// The one conversion between absl::Status and grpc::Status.
#include "common/grpc_status.h"

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/status_reason.h"
#include "rein/v1/types.pb.h"

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
  std::string message = Cap(status.message());
  absl::optional<absl::Cord> info = status.GetPayload(kErrorInfoPayloadUrl);
  if (!info.has_value()) return grpc::Status(static_cast<grpc::StatusCode>(status.code()), message);
  // The reason travels as a google.rpc.Status-shaped detail (grpc-status-details-bin).
  rein::v1::StatusDetails details;
  details.set_code(static_cast<int>(status.code()));
  details.set_message(message);
  google::protobuf::Any* any = details.add_details();
  any->set_type_url(kErrorInfoPayloadUrl);
  any->set_value(std::string(*info));
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), message,
                      details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), Cap(status.error_message()));
  rein::v1::StatusDetails details;
  if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
    for (const google::protobuf::Any& any : details.details()) {
      rein::v1::ErrorInfo info;
      if (any.type_url() == kErrorInfoPayloadUrl && info.ParseFromString(any.value())) {
        out = WithReason(out, info.reason());
        break;
      }
    }
  }
  return out;
}

}  // namespace rein
