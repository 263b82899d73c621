// The `notifications` table.
#include "cli/notice_table.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/format.h"
#include "cli/text.h"

namespace rein::cli {
namespace {

// "dev.rein.run.paused" -> "paused".
std::string ShortType(const std::string& type) {
  constexpr char kPrefix[] = "dev.rein.run.";
  return absl::StartsWith(type, kPrefix) ? type.substr(sizeof(kPrefix) - 1) : type;
}

std::string StatusText(v1::NoticeStatus status) {
  switch (status) {
    case v1::NOTICE_PENDING: return "pending";
    case v1::NOTICE_DELIVERED: return "delivered";
    case v1::NOTICE_FAILED: return "failed";
    default: return "-";
  }
}

}  // namespace

std::string NoticeTable(const v1::ListNotificationsResponse& response, v1::NoticeStatus filter,
                        absl::TimeZone zone) {
  if (response.notices().empty()) {
    return filter == v1::NOTICE_STATUS_UNSPECIFIED
               ? "no notifications\n"
               : absl::StrCat("no ", StatusText(filter), " notifications\n");
  }
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"NOTICE", "TYPE", "STATUS", "ATTEMPTS", "COMMITTED", "NEXT ATTEMPT",
                  "ENDPOINTS TOOK IT", "LAST ERROR"});
  for (const v1::Notice& n : response.notices()) {
    rows.push_back({OneLine(n.notice_id(), 80), OneLine(ShortType(n.type()), 24),
                    StatusText(n.status()), absl::StrCat(n.attempts()),
                    FormatTime(n.committed(), zone), FormatTime(n.next_attempt(), zone),
                    absl::StrCat(n.endpoints_taken()),
                    n.last_error().empty() ? "-" : OneLine(n.last_error(), 120)});
  }
  return AlignedTable(rows);
}

}  // namespace rein::cli
