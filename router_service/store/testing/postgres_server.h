// PostgresServer: a private PostgreSQL server for a test, started from the installed binaries.
#ifndef REIN_ROUTER_SERVICE_STORE_TESTING_POSTGRES_SERVER_H_
#define REIN_ROUTER_SERVICE_STORE_TESTING_POSTGRES_SERVER_H_

#include <pwd.h>
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rein {

// Runs `initdb` into a new directory under /tmp and `postgres` on a free 127.0.0.1 port with
// its socket in that directory, trust authentication for the superuser `postgres`, fsync off.
// PostgreSQL refuses to run as root, so under root both run as the `postgres` system user (the
// directory is chowned to it). The server is this process's child and gets SIGQUIT if the
// process dies, so a crashed test leaves no server behind; the destructor stops it (fast
// shutdown) and deletes the directory.
//
// The binaries are found under /usr/lib/postgresql/<newest>/bin, or in $REIN_POSTGRES_BIN.
// Thread-safe after Start.
class PostgresServer {
 public:
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // postgresql://postgres@127.0.0.1:<port>/<database>
  std::string Url(const std::string& database) const;
  // Creates a new empty database with a unique name and returns its URL.
  absl::StatusOr<std::string> CreateDatabase();
  // Drops the database of a URL made by CreateDatabase, closing its connections.
  absl::Status DropDatabase(const std::string& url);
  // SIGKILLs the postmaster (its sessions die with it), waits `down`, then starts PostgreSQL
  // (as a child of the calling thread, whose exit would stop it: call it from a thread that
  // outlives the server)
  // again on the same data directory and port (crash recovery), waiting until it answers.
  absl::Status KillAndRestart(absl::Duration down);
  // Runs `sql` (no parameters) in `database` as the superuser; returns the first column of
  // the first row as text ("" when there are no rows).
  absl::StatusOr<std::string> Query(const std::string& database, const std::string& sql);

 private:
  PostgresServer(std::string dir, pid_t pid, int port) : dir_(dir), pid_(pid), port_(port) {}

  // Starts `postgres` on the data directory under `dir` and waits until it answers.
  static absl::StatusOr<pid_t> SpawnPostgres(const std::string& bin, const std::string& dir,
                                             int port, const passwd* user);

  const std::string dir_;
  pid_t pid_;
  const int port_;
  std::atomic<int> next_database_{0};
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_TESTING_POSTGRES_SERVER_H_
