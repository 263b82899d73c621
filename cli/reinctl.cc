// reinctl: the command-line client of the rein router (start, watch, review, list, show, export).
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/args.h"
#include "cli/command_runner.h"
#include "cli/connection.h"
#include "cli/inputs.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/router.grpc.pb.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<rein::cli::ConnectionFlags> connection = rein::cli::ExtractConnectionFlags(&args);
  absl::StatusOr<std::string> token =
      connection.ok() ? rein::cli::LoadToken(*connection, std::getenv("REIN_TOKEN"))
                      : absl::StatusOr<std::string>(connection.status());
  if (!token.ok()) {
    std::cerr << "reinctl: " << token.status().message() << "\n";
    return rein::cli::kExitUsage;
  }
  absl::StatusOr<rein::cli::Command> command = rein::cli::ParseArgs(args);
  if (!command.ok()) {
    std::cerr << "reinctl: " << command.status().message() << "\nrun `reinctl help` for usage\n";
    return rein::cli::kExitUsage;
  }
  std::shared_ptr<grpc::Channel> channel =
      rein::cli::MakeRouterChannel(command->router, *connection, *token);
  std::unique_ptr<rein::v1::Router::Stub> stub = rein::v1::Router::NewStub(channel);

  rein::cli::RunnerOptions options;
  options.live_progress = isatty(STDERR_FILENO) == 1;
  options.zone = absl::LocalTimeZone();
  if (const char* user = std::getenv("USER"); user != nullptr) options.reviewer = user;
  absl::StatusOr<std::string> console_url =
      rein::cli::ConsoleUrlFromEnv(std::getenv("REIN_CONSOLE_URL"));
  if (!console_url.ok()) {
    std::cerr << "reinctl: " << console_url.status().message() << "\n";
    return rein::cli::kExitUsage;
  }
  options.console_url = *console_url;
  std::unique_ptr<rein::v1::Executor::Stub> executor;
  if (command->subcommand == rein::cli::Subcommand::kTools) {
    executor = rein::v1::Executor::NewStub(
        grpc::CreateChannel(command->executor, grpc::InsecureChannelCredentials()));
    options.executor = executor.get();
  }
  rein::cli::CommandRunner runner(stub.get(), std::cout, std::cerr, options);
  return runner.Run(*command);
}
