// Bearer tokens and roles for the public Router API.
#include "router_service/auth.h"

#include <openssl/sha.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/metrics.h"

namespace rein {
namespace {

constexpr char kUnauthenticated[] = "a valid bearer token is required";
constexpr char kDenied[] = "the caller's roles do not allow this call";
// Failure windows kept at most (one per failing credential).
constexpr size_t kMaxFailureWindows = 10000;

absl::StatusOr<uint32_t> ParseRoles(absl::string_view text) {
  uint32_t roles = 0;
  for (absl::string_view role : absl::StrSplit(text, ',')) {
    if (role == "viewer") {
      roles |= kRoleViewer;
    } else if (role == "operator") {
      roles |= kRoleOperator;
    } else if (role == "reviewer") {
      roles |= kRoleReviewer;
    } else if (role == "admin") {
      roles |= kRoleAdmin;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown role \"", role.substr(0, 32), "\" (roles: viewer, operator, reviewer, admin)"));
    }
  }
  return roles;
}

// The file's identity and version; "" when it cannot be read.
std::string FileStamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  return absl::StrCat(st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
}

absl::StatusOr<std::map<std::string, Principal>> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::map<std::string, Principal>> tokens = ParseTokenFile(text.str());
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", tokens.status().message()));
  }
  return tokens;
}

// "ipv4:10.0.0.7:41234" -> "ipv4:10.0.0.7"; "ipv6:[::1]:5000" -> "ipv6:[::1]".
std::string PeerHost(absl::string_view peer) {
  size_t colon = peer.rfind(':');
  if (colon == absl::string_view::npos || colon < 5) return std::string(peer);
  return std::string(peer.substr(0, colon));
}

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * SHA256_DIGEST_LENGTH);
  for (unsigned char c : digest) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

absl::StatusOr<std::map<std::string, Principal>> ParseTokenFile(absl::string_view content) {
  std::map<std::string, Principal> tokens;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    auto error = [number](absl::string_view problem) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": ", problem));
    };
    if (fields.size() != 3 && fields.size() != 4) {
      return error(absl::StrCat(
          "want `sha256:<hex> <principal> <role>[,<role>...] [namespace=<ns>]`, found ",
          fields.size(), " fields"));
    }
    std::string namespace_name = kDefaultNamespace;
    if (fields.size() == 4) {
      absl::string_view ns = fields[3];
      if (!absl::ConsumePrefix(&ns, "namespace=")) {
        return error("the fourth field must be namespace=<ns>");
      }
      if (absl::Status bad = CheckNamespaceName(ns, "namespace"); !bad.ok()) {
        return error(bad.message());
      }
      namespace_name = std::string(ns);
    }
    absl::string_view hash = fields[0];
    if (!absl::ConsumePrefix(&hash, "sha256:")) {
      return error("the token hash must start with \"sha256:\"");
    }
    if (hash.size() != 64 ||
        !std::all_of(hash.begin(), hash.end(), [](char c) { return absl::ascii_isxdigit(c); })) {
      return error("the token hash must be 64 hex digits (the SHA-256 of the token)");
    }
    absl::StatusOr<uint32_t> roles = ParseRoles(fields[2]);
    if (!roles.ok()) return error(roles.status().message());
    std::string key = absl::AsciiStrToLower(hash);
    if (tokens.count(key) != 0) {
      return error(absl::StrCat("the hash sha256:", key.substr(0, 8), "... is listed twice"));
    }
    tokens[key] = Principal{std::string(fields[1]), *roles, std::move(namespace_name)};
  }
  return tokens;
}

uint32_t RolesAllowedFor(absl::string_view method) {
  static const auto* const kTable = new std::map<std::string, uint32_t, std::less<>>{
      {"GetRun", kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin},
      {"ListRuns", kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin},
      {"WatchRun", kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin},
      {"ExportRun", kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin},
      {"GetQuota", kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin},
      {"StartRun", kRoleOperator | kRoleAdmin},
      {"CancelRun", kRoleOperator | kRoleAdmin},
      {"ForkRun", kRoleOperator | kRoleAdmin},
      {"ResumeRun", kRoleReviewer | kRoleAdmin},
      {"ListNotifications", kRoleOperator | kRoleAdmin},
  };
  auto it = kTable->find(method);
  return it == kTable->end() ? 0 : it->second;
}

Authenticator::Authenticator(AuthOptions options, Clock* clock)
    : options_(std::move(options)), clock_(clock) {}

absl::Status Authenticator::Load() {
  absl::MutexLock lock(&mu_);
  std::string stamp = FileStamp(options_.tokens_file);
  absl::StatusOr<std::map<std::string, Principal>> tokens = ReadTokenFile(options_.tokens_file);
  if (!tokens.ok()) return tokens.status();
  tokens_ = std::move(*tokens);
  file_stamp_ = stamp;
  last_check_ = clock_->Now();
  return absl::OkStatus();
}

void Authenticator::MaybeReloadLocked(absl::Time now) {
  if (now - last_check_ < options_.reload_check) return;
  last_check_ = now;
  std::string stamp = FileStamp(options_.tokens_file);
  if (stamp == file_stamp_) return;
  absl::StatusOr<std::map<std::string, Principal>> tokens = ReadTokenFile(options_.tokens_file);
  if (!tokens.ok()) {
    // Keep the last good table: a half-written file must not lock everyone out. A removal
    // takes effect with the next good version of the file.
    LogError("token file not reloaded; the previous tokens stay in force",
             {{"error", tokens.status().message()}});
    Metrics::Global().Add("rein_router_auth_reload_errors_total", 1);
    file_stamp_ = stamp;
    return;
  }
  tokens_ = std::move(*tokens);
  file_stamp_ = stamp;
  failures_.clear();  // a token added since it failed works at once
  LogInfo("token file reloaded", {{"tokens", absl::StrCat(tokens_.size())}});
}

absl::Status Authenticator::Fail(absl::Status status, const std::string& credential,
                                 const char* reason, absl::Time now) {
  Metrics::Global().Add("rein_router_auth_failures_total", 1,
                        absl::StrCat("reason=\"", reason, "\""));
  Window& window = failures_[credential];
  if (now - window.start >= options_.failure_window) window = Window{now, 0};
  ++window.failures;
  if (failures_.size() > kMaxFailureWindows) {  // forget expired windows
    for (auto it = failures_.begin(); it != failures_.end();) {
      it = now - it->second.start >= options_.failure_window ? failures_.erase(it) : ++it;
    }
    // A flood of distinct unknown tokens: forgetting them costs only their limit.
    if (failures_.size() > kMaxFailureWindows) failures_.clear();
  }
  return status;
}

namespace {

// The SHA-256 of the bearer token in an authorization value, "" when there is none.
std::string BearerHash(absl::string_view authorization) {
  absl::string_view token = authorization;
  // The scheme is case-insensitive (RFC 7235).
  const bool bearer = token.size() >= 7 && absl::EqualsIgnoreCase(token.substr(0, 7), "bearer ");
  token = bearer ? absl::StripAsciiWhitespace(token.substr(7)) : absl::string_view();
  return token.empty() ? "" : Sha256Hex(token);
}

}  // namespace

bool Authenticator::StillValid(absl::string_view authorization, const Principal& as) {
  const std::string hash = BearerHash(authorization);
  absl::MutexLock lock(&mu_);
  MaybeReloadLocked(clock_->Now());
  if (hash.empty()) return false;
  auto it = tokens_.find(hash);
  return it != tokens_.end() && it->second.name == as.name && it->second.roles == as.roles &&
         it->second.namespace_name == as.namespace_name;
}

absl::StatusOr<Principal> Authenticator::Authenticate(absl::string_view authorization,
                                                      absl::string_view peer) {
  const absl::Time now = clock_->Now();
  const std::string hash = BearerHash(authorization);
  // What a failure is counted against: the token itself, or (without one) where it came from.
  const std::string credential = hash.empty() ? absl::StrCat("none:", PeerHost(peer))
                                              : absl::StrCat("token:", hash.substr(0, 16));
  absl::MutexLock lock(&mu_);
  MaybeReloadLocked(now);
  if (auto it = failures_.find(credential);
      it != failures_.end() && now - it->second.start < options_.failure_window &&
      it->second.failures >= options_.max_failures_per_window) {
    Metrics::Global().Add("rein_router_auth_failures_total", 1, "reason=\"rate_limited\"");
    return absl::ResourceExhaustedError(
        hash.empty() ? "too many calls without a valid bearer token from this address; retry "
                       "later"
                     : "too many failed authentication attempts with this token; retry later");
  }
  auto it = hash.empty() ? tokens_.end() : tokens_.find(hash);
  if (it == tokens_.end()) {
    return Fail(absl::UnauthenticatedError(kUnauthenticated), credential, "unauthenticated", now);
  }
  return it->second;
}

absl::StatusOr<Principal> Authenticator::Authorize(absl::string_view method,
                                                   absl::string_view authorization,
                                                   absl::string_view peer) {
  absl::StatusOr<Principal> who = Authenticate(authorization, peer);
  if (!who.ok()) return who;
  if ((RolesAllowedFor(method) & who->roles) == 0) {
    // Counted, but not toward the rate limit: the caller proved who it is.
    Metrics::Global().Add("rein_router_auth_failures_total", 1, "reason=\"permission_denied\"");
    return absl::PermissionDeniedError(kDenied);
  }
  return who;
}

}  // namespace rein
