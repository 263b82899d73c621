// The Standard Webhooks signature, with OpenSSL's HMAC.
#include "router_service/notify/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rein {
namespace {

std::string Mac(absl::string_view key, absl::string_view content) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac, &size);
  return std::string(reinterpret_cast<const char*>(mac), size);
}

}  // namespace

std::string WebhookSignature(absl::string_view key, absl::string_view id, int64_t timestamp,
                             absl::string_view body) {
  return absl::StrCat("v1,",
                      absl::Base64Escape(Mac(key, absl::StrCat(id, ".", timestamp, ".", body))));
}

bool VerifyWebhookSignature(absl::string_view key, absl::string_view id,
                            absl::string_view timestamp, absl::string_view body,
                            absl::string_view header) {
  const std::string expected = Mac(key, absl::StrCat(id, ".", timestamp, ".", body));
  bool found = false;
  for (absl::string_view entry : absl::StrSplit(header, ' ', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&entry, "v1,")) continue;
    std::string mac;
    if (!absl::Base64Unescape(entry, &mac) || mac.size() != expected.size()) continue;
    if (CRYPTO_memcmp(mac.data(), expected.data(), expected.size()) == 0) found = true;
  }
  return found;
}

}  // namespace rein
