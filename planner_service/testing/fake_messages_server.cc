// A loopback HTTP/1.1 fake of the Messages API with the real API's request checks.
#include "planner_service/testing/fake_messages_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace rein {
namespace {

using json = nlohmann::json;

std::atomic<int> next_message{1};

json Usage() {
  return {{"input_tokens", 120},
          {"output_tokens", 40},
          {"cache_creation_input_tokens", 10},
          {"cache_read_input_tokens", 90}};
}

FakeReply MessageReply(json content, const std::string& stop_reason) {
  FakeReply reply;
  const int n = next_message++;
  reply.headers = {{"content-type", "application/json"},
                   {"request-id", absl::StrCat("req_fake", n)}};
  reply.body = json{
      {"id", absl::StrCat("msg_fake", n)},
      {"type", "message"},
      {"role", "assistant"},
      {"model", "claude-fake"},
      {"content", std::move(content)},
      {"stop_reason", stop_reason},
      {"stop_sequence", nullptr},
      {"usage",
       Usage()}}.dump();
  return reply;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 529: return "Overloaded";
    default: return "Status";
  }
}

std::string CheckCacheControl(const json& block, const std::string& at) {
  if (!block.contains("cache_control")) return "";
  const json& cc = block["cache_control"];
  if (!cc.is_object() || cc.value("type", "") != "ephemeral") {
    return at + ".cache_control: type must be \"ephemeral\"";
  }
  return "";
}

}  // namespace

FakeReply ToolUseReply(const std::string& name, const json& input, const std::string& stop_reason) {
  return MessageReply(
      json::array(
          {{{"type", "tool_use"}, {"id", "toolu_fake1"}, {"name", name}, {"input", input}}}),
      stop_reason);
}

FakeReply TextReply(const std::string& text, const std::string& stop_reason) {
  return MessageReply(json::array({{{"type", "text"}, {"text", text}}}), stop_reason);
}

FakeReply ErrorReply(int status, const std::string& type, const std::string& message) {
  FakeReply reply;
  reply.status = status;
  reply.headers = {{"content-type", "application/json"}, {"request-id", "req_fakeerror"}};
  reply.body = json{{"type", "error"},
                    {"error", {{"type", type}, {"message", message}}},
                    {"request_id", "req_fakeerror"}}
                   .dump();
  return reply;
}

FakeMessagesServer::~FakeMessagesServer() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

absl::Status FakeMessagesServer::Start() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return absl::InternalError(std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    return absl::InternalError(std::strerror(errno));
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return absl::OkStatus();
}

std::string FakeMessagesServer::base_url() const {
  return absl::StrCat("http://127.0.0.1:", port_);
}

void FakeMessagesServer::SimulatePromptCache(int64_t min_cacheable_tokens) {
  absl::MutexLock lock(&mu_);
  min_cacheable_tokens_ = min_cacheable_tokens;
}

void FakeMessagesServer::ApplyPromptCache(FakeRequest* request, FakeReply* reply) {
  absl::MutexLock lock(&mu_);
  if (min_cacheable_tokens_ < 0) return;
  const json body = json::parse(request->body, nullptr, /*allow_exceptions=*/false);
  json message = json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !message.is_object() || message.value("type", "") != "message") return;
  // The blocks in the order the API caches them, each without its cache_control.
  std::vector<std::pair<std::string, bool>> blocks;  // (text, ends at a breakpoint)
  auto add = [&](json block) {
    const bool breakpoint = block.is_object() && block.contains("cache_control");
    if (breakpoint) block.erase("cache_control");
    blocks.emplace_back(block.dump(), breakpoint);
  };
  for (const json& tool : body.value("tools", json::array())) add(tool);
  const json system = body.value("system", json());
  if (system.is_string()) add(json{{"type", "text"}, {"text", system}});
  if (system.is_array()) {
    for (const json& block : system) add(block);
  }
  for (const json& m : body.value("messages", json::array())) {
    const json content = m.value("content", json());
    if (content.is_string()) add(json{{"type", "text"}, {"text", content}});
    if (content.is_array()) {
      for (const json& block : content) add(block);
    }
  }
  int64_t total = 0, read = 0, last_prefix = 0;
  std::string prefix;
  std::vector<std::pair<std::string, int64_t>> breakpoints;
  for (const auto& [text, breakpoint] : blocks) {
    prefix += text;
    total += (static_cast<int64_t>(text.size()) + 3) / 4;
    if (!breakpoint) continue;
    last_prefix = total;
    breakpoints.emplace_back(prefix, total);
    auto hit = prompt_cache_.find(prefix);
    if (hit != prompt_cache_.end()) read = hit->second;  // the longest hit wins
  }
  int64_t written = 0;
  for (const auto& [text, tokens] : breakpoints) {
    if (tokens < min_cacheable_tokens_ || prompt_cache_.count(text)) continue;
    prompt_cache_[text] = tokens;
    written = std::max(written, tokens - read);
  }
  request->prefix_tokens = last_prefix;
  request->cache_read_input_tokens = read;
  request->cache_creation_input_tokens = written;
  request->input_tokens = total - read - written;
  json& usage = message["usage"];
  usage["input_tokens"] = request->input_tokens;
  usage["cache_read_input_tokens"] = read;
  usage["cache_creation_input_tokens"] = written;
  reply->body = message.dump();
}

void FakeMessagesServer::Enqueue(FakeReply reply) {
  absl::MutexLock lock(&mu_);
  script_.push_back(std::move(reply));
}

std::vector<FakeRequest> FakeMessagesServer::requests() {
  absl::MutexLock lock(&mu_);
  return requests_;
}

void FakeMessagesServer::AcceptLoop() {
  int connections = 0;
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int connection = ++connections;
    absl::MutexLock lock(&mu_);
    open_fds_.push_back(fd);
    workers_.emplace_back([this, fd, connection] { Serve(fd, connection); });
  }
}

std::string FakeMessagesServer::Check(const FakeRequest& r) const {
  if (r.method != "POST" || r.path != "/v1/messages") return "404";
  auto header = [&](const char* name) {
    auto it = r.headers.find(name);
    return it == r.headers.end() ? std::string() : it->second;
  };
  if (header("x-api-key") != api_key_) return "401";
  if (header("anthropic-version").empty()) return "anthropic-version: header is required";
  if (header("anthropic-version") != "2023-06-01") return "anthropic-version: unknown version";
  if (!absl::StartsWith(header("content-type"), "application/json")) {
    return "content-type: must be application/json";
  }
  const json body = json::parse(r.body, nullptr, false);
  if (!body.is_object()) return "body: not a JSON object";
  if (!body.contains("model") || !body["model"].is_string() || body["model"] == "") {
    return "model: Field required";
  }
  if (!body.contains("max_tokens") || !body["max_tokens"].is_number_integer() ||
      body["max_tokens"].get<int64_t>() < 1) {
    return "max_tokens: must be a positive integer";
  }
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    return "messages: at least one message is required";
  }
  std::string expected_role = "user";
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    const json& m = body["messages"][i];
    if (!m.is_object() || m.value("role", "") != expected_role) {
      return absl::StrCat("messages.", i, ".role: roles must alternate, starting with user");
    }
    if (!m.contains("content") || !(m["content"].is_string() || m["content"].is_array())) {
      return absl::StrCat("messages.", i, ".content: Field required");
    }
    expected_role = expected_role == "user" ? "assistant" : "user";
  }
  if (body.contains("system")) {
    const json& system = body["system"];
    if (system.is_array()) {
      for (size_t i = 0; i < system.size(); ++i) {
        if (!system[i].is_object() || system[i].value("type", "") != "text" ||
            !system[i].contains("text") || !system[i]["text"].is_string()) {
          return absl::StrCat("system.", i, ": must be a text block");
        }
        if (std::string p = CheckCacheControl(system[i], absl::StrCat("system.", i)); !p.empty()) {
          return p;
        }
      }
    } else if (!system.is_string()) {
      return "system: must be a string or a list of text blocks";
    }
  }
  std::vector<std::string> tool_names;
  if (body.contains("tools")) {
    if (!body["tools"].is_array()) return "tools: must be a list";
    for (size_t i = 0; i < body["tools"].size(); ++i) {
      const json& t = body["tools"][i];
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
        return absl::StrCat("tools.", i, ".name: Field required");
      }
      if (!t.contains("input_schema") || !t["input_schema"].is_object() ||
          t["input_schema"].value("type", "") != "object") {
        return absl::StrCat("tools.", i, ".input_schema: must be an object schema");
      }
      if (std::string p = CheckCacheControl(t, absl::StrCat("tools.", i)); !p.empty()) return p;
      tool_names.push_back(t["name"]);
    }
  }
  if (body.contains("tool_choice")) {
    const json& choice = body["tool_choice"];
    const std::string type = choice.is_object() ? choice.value("type", "") : "";
    if (type != "auto" && type != "any" && type != "tool" && type != "none") {
      return "tool_choice.type: must be auto, any, tool or none";
    }
    if (type == "tool") {
      if (!choice.contains("name") || !choice["name"].is_string() ||
          std::find(tool_names.begin(), tool_names.end(), choice["name"].get<std::string>()) ==
              tool_names.end()) {
        return "tool_choice.name: must name one of the tools";
      }
    }
    if (choice.contains("disable_parallel_tool_use") &&
        !choice["disable_parallel_tool_use"].is_boolean()) {
      return "tool_choice.disable_parallel_tool_use: must be a boolean";
    }
  }
  if (body.contains("temperature")) {
    if (!body["temperature"].is_number() || body["temperature"].get<double>() < 0 ||
        body["temperature"].get<double>() > 1) {
      return "temperature: must be a number in [0, 1]";
    }
  }
  return "";
}

void FakeMessagesServer::Serve(int fd, int connection) {
  auto close_fd = [&]() {
    absl::MutexLock lock(&mu_);
    open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
    close(fd);
  };
  std::string buffer;
  char chunk[65536];
  auto read_more = [&]() {
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  };
  while (!stopping_) {
    size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!read_more()) {
        close_fd();
        return;
      }
    }
    FakeRequest request;
    request.connection = connection;
    std::vector<std::string> lines = absl::StrSplit(buffer.substr(0, header_end), "\r\n");
    std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
    if (first.size() >= 2) {
      request.method = first[0];
      request.path = first[1];
    }
    for (size_t i = 1; i < lines.size(); ++i) {
      const size_t colon = lines[i].find(':');
      if (colon == std::string::npos) continue;
      request.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
          std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    }
    size_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      absl::SimpleAtoi(it->second, &length);
    }
    buffer.erase(0, header_end + 4);
    while (buffer.size() < length) {
      if (!read_more()) {
        close_fd();
        return;
      }
    }
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);
    request.received = absl::Now();
    request.problem = Check(request);

    FakeReply reply;
    if (request.problem == "404") {
      reply = ErrorReply(404, "not_found_error", "Not found");
    } else if (request.problem == "401") {
      reply = ErrorReply(401, "authentication_error", "invalid x-api-key");
    } else if (!request.problem.empty()) {
      reply = ErrorReply(400, "invalid_request_error", request.problem);
    } else {
      absl::MutexLock lock(&mu_);
      if (script_.empty()) {
        reply = ErrorReply(500, "api_error", "fake: no scripted reply left");
      } else {
        reply = std::move(script_.front());
        script_.pop_front();
      }
    }
    if (request.problem.empty() && reply.status == 200) ApplyPromptCache(&request, &reply);
    {
      absl::MutexLock lock(&mu_);
      requests_.push_back(request);
    }
    const absl::Time until = absl::Now() + reply.delay;
    while (!stopping_ && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
    if (reply.close_without_reply || stopping_) {
      close_fd();
      return;
    }
    std::string out = absl::StrCat("HTTP/1.1 ", reply.status, " ", Reason(reply.status), "\r\n");
    for (const auto& [name, value] : reply.headers)
      absl::StrAppend(&out, name, ": ", value, "\r\n");
    absl::StrAppend(&out, "content-length: ", reply.body.size(), "\r\n\r\n", reply.body);
    if (!SendAll(fd, out)) {
      close_fd();
      return;
    }
  }
  close_fd();
}

}  // namespace rein
