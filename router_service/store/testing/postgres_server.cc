// PostgresServer: a private PostgreSQL server for a test, started from the installed binaries.
#include "router_service/store/testing/postgres_server.h"

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <postgresql/libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rein {
namespace {

// The newest installed PostgreSQL's bin directory ("" when there is none).
std::string FindBinDir() {
  const char* env = std::getenv("REIN_POSTGRES_BIN");
  if (env != nullptr && *env != '\0') return env;
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    int version = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &version)) continue;
    if (version > best_version && std::filesystem::exists(entry.path() / "bin" / "postgres")) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

std::string Tail(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string all = text.str();
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

// A port that was free a moment ago on 127.0.0.1.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// Forks and execs `argv` with output to `log`, as `user` when running as root. The child gets
// SIGQUIT (PostgreSQL's immediate shutdown) when this process dies.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log,
                            const std::string& cwd, const passwd* user) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("cannot open ", log));
  if (user != nullptr && fchown(log_fd, user->pw_uid, user->pw_gid) != 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("cannot chown ", log));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    if (user != nullptr) {
      if (setgroups(0, nullptr) != 0 || setgid(user->pw_gid) != 0 || setuid(user->pw_uid) != 0) {
        _exit(126);
      }
    }
    // After setuid, which clears the parent-death signal.
    prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (getppid() != parent) _exit(125);
    if (chdir(cwd.c_str()) != 0) _exit(124);
    execv(args[0], args.data());
    _exit(127);
  }
  close(log_fd);
  return pid;
}

// Waits for `pid` up to `timeout`; its exit status, or -1 if it is still running.
int WaitFor(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0) return 0;  // not our child any more
    if (absl::Now() > deadline) return -1;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

struct ConnDeleter {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  const std::string bin = FindBinDir();
  if (bin.empty()) {
    return absl::FailedPreconditionError(
        "no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql, or set "
        "REIN_POSTGRES_BIN)");
  }
  const passwd* user = nullptr;
  if (geteuid() == 0) {
    user = getpwnam("postgres");
    if (user == nullptr) {
      return absl::FailedPreconditionError(
          "running as root and there is no `postgres` user to run PostgreSQL as");
    }
  }
  // Under /tmp rather than TEST_TMPDIR: the postgres user must reach it, and a Unix socket
  // path must stay under 108 bytes.
  std::string dir = "/tmp/rein_pg_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp in /tmp failed");
  if (user != nullptr && chown(dir.c_str(), user->pw_uid, user->pw_gid) != 0) {
    return absl::InternalError(absl::StrCat("cannot chown ", dir));
  }
  auto fail = [&dir](absl::Status status) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return status;
  };
  const std::string data = dir + "/data";
  const std::string log = dir + "/log";
  absl::StatusOr<pid_t> initdb = Spawn({bin + "/initdb", "-D", data, "-U", "postgres",
                                        "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"},
                                       log, dir, user);
  if (!initdb.ok()) return fail(initdb.status());
  const int initdb_status = WaitFor(*initdb, absl::Minutes(2));
  if (initdb_status != 0) {
    if (initdb_status < 0) {
      kill(*initdb, SIGKILL);
      waitpid(*initdb, nullptr, 0);
    }
    return fail(absl::InternalError(absl::StrCat("initdb failed: ", Tail(log))));
  }

  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = FreePort();
    if (port == 0) return fail(absl::InternalError("no free port"));
    absl::StatusOr<pid_t> pid = SpawnPostgres(bin, dir, port, user);
    if (pid.ok()) return std::unique_ptr<PostgresServer>(new PostgresServer(dir, *pid, port));
  }
  return fail(absl::InternalError(absl::StrCat("postgres did not start: ", Tail(log))));
}

absl::StatusOr<pid_t> PostgresServer::SpawnPostgres(const std::string& bin, const std::string& dir,
                                                    int port, const passwd* user) {
  absl::StatusOr<pid_t> pid =
      Spawn({bin + "/postgres", "-D", dir + "/data", "-p", std::to_string(port), "-k", dir, "-c",
             "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"},
            dir + "/log", dir, user);
  if (!pid.ok()) return pid.status();
  const std::string conninfo =
      absl::StrCat("postgresql://postgres@127.0.0.1:", port, "/postgres?connect_timeout=5");
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    if (PQping(conninfo.c_str()) == PQPING_OK) return *pid;
    if (WaitFor(*pid, absl::ZeroDuration()) >= 0) break;  // exited (port taken?)
    absl::SleepFor(absl::Milliseconds(50));
  }
  kill(*pid, SIGQUIT);
  WaitFor(*pid, absl::Seconds(10));
  return absl::UnavailableError(absl::StrCat("postgres did not start: ", Tail(dir + "/log")));
}

absl::Status PostgresServer::KillAndRestart(absl::Duration down) {
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  absl::SleepFor(down);
  const passwd* user = geteuid() == 0 ? getpwnam("postgres") : nullptr;
  // The killed postmaster's backends take a moment to notice and exit; until then the data
  // directory's shared memory is in use and a new postmaster refuses to start.
  absl::Status last;
  for (int attempt = 0; attempt < 40; ++attempt) {
    absl::StatusOr<pid_t> pid = SpawnPostgres(FindBinDir(), dir_, port_, user);
    if (pid.ok()) {
      pid_ = *pid;
      return absl::OkStatus();
    }
    last = pid.status();
    absl::SleepFor(absl::Milliseconds(250));
  }
  return last;
}

PostgresServer::~PostgresServer() {
  kill(pid_, SIGINT);  // fast shutdown: ends sessions, checkpoints, exits
  if (WaitFor(pid_, absl::Seconds(30)) < 0) {
    kill(pid_, SIGQUIT);
    if (WaitFor(pid_, absl::Seconds(10)) < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string PostgresServer::Url(const std::string& database) const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", database);
}

absl::StatusOr<std::string> PostgresServer::Query(const std::string& database,
                                                  const std::string& sql) {
  std::unique_ptr<PGconn, ConnDeleter> conn(PQconnectdb(Url(database).c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat("connecting to ", Url(database), ": ", PQerrorMessage(conn.get())));
  }
  PGresult* result = PQexec(conn.get(), sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  std::string value;
  if (status == PGRES_TUPLES_OK && PQntuples(result) > 0 && PQnfields(result) > 0) {
    value = PQgetvalue(result, 0, 0);
  }
  PQclear(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return absl::InternalError(absl::StrCat(sql, ": ", PQerrorMessage(conn.get())));
  }
  return value;
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase() {
  const std::string name = absl::StrCat("rein_test_", next_database_++);
  absl::StatusOr<std::string> created = Query("postgres", "CREATE DATABASE " + name);
  if (!created.ok()) return created.status();
  return Url(name);
}

absl::Status PostgresServer::DropDatabase(const std::string& url) {
  const std::string name = url.substr(url.rfind('/') + 1);
  return Query("postgres", "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").status();
}

}  // namespace rein
