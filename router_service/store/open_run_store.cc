// OpenRunStore: the one place that turns a `--store` URI into a RunStore implementation.
#include "router_service/store/open_run_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "router_service/store/postgres_run_store.h"
#include "router_service/store/sqlite_run_store.h"

namespace rein {
namespace {

constexpr char kSqlitePrefix[] = "sqlite:";

absl::Status Prefixed(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("--store: ", status.message()));
}

absl::StatusOr<OpenedRunStore> OpenSqlite(const std::string& path,
                                          const RunStoreOptions& store_options) {
  SqliteRunStore::Options options;
  if (store_options.sqlite_synchronous == "FULL") {
    options.synchronous = SqliteRunStore::Synchronous::kFull;
  } else if (store_options.sqlite_synchronous != "NORMAL") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sqlite_synchronous: must be NORMAL or FULL, got \"",
                     store_options.sqlite_synchronous, "\""));
  }
  if (store_options.sqlite_cache_mib < SqliteRunStore::kMinCacheMib ||
      store_options.sqlite_cache_mib > SqliteRunStore::kMaxCacheMib) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sqlite_cache_mib: must be ", SqliteRunStore::kMinCacheMib, " to ",
                     SqliteRunStore::kMaxCacheMib, ", got ", store_options.sqlite_cache_mib));
  }
  options.cache_mib = store_options.sqlite_cache_mib;
  if (path.empty()) {
    return absl::InvalidArgumentError("--store: SQLite database path is empty");
  }
  // One router per SQLite store: a second one would commit over the first one's runs.
  const std::string lock_path = path + ".lock";
  const int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--store: cannot open the lock file ", lock_path, ": ", std::strerror(errno)));
  }
  OpenedRunStore opened;
  opened.lock = std::make_unique<StoreLock>(lock_fd);
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--store: another rein-router holds ", lock_path,
                     " (one router per SQLite store; use PostgreSQL for several)"));
  }
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path, options);
  if (!store.ok()) return Prefixed(store.status());
  opened.store = std::move(*store);
  opened.description = absl::StrCat(kSqlitePrefix, path);
  return opened;
}

absl::StatusOr<OpenedRunStore> OpenPostgres(const std::string& url) {
  absl::StatusOr<std::unique_ptr<PostgresRunStore>> store = PostgresRunStore::Open(url);
  if (!store.ok()) return Prefixed(store.status());
  OpenedRunStore opened;
  opened.description = absl::StrCat("postgres:", (*store)->target());
  opened.store = std::move(*store);
  return opened;
}

}  // namespace

StoreLock::~StoreLock() { close(fd_); }  // closing the file releases the flock

absl::StatusOr<OpenedRunStore> OpenRunStore(const std::string& uri,
                                            const RunStoreOptions& options) {
  if (absl::StartsWith(uri, kSqlitePrefix)) {
    return OpenSqlite(uri.substr(sizeof(kSqlitePrefix) - 1), options);
  }
  if (absl::StartsWith(uri, "postgres://") || absl::StartsWith(uri, "postgresql://")) {
    return OpenPostgres(uri);
  }
  // The URI itself is not repeated: a mistyped one may still hold a password.
  return absl::InvalidArgumentError(
      absl::StrCat("--store: ", uri.empty() ? "is empty; it " : "",
                   "must be sqlite:PATH or postgres://... "
                   "(postgres://user:password@host:port/database, or postgresql://...)"));
}

}  // namespace rein
