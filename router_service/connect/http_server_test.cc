// Service tests of the router's HTTP port over real sockets (libcurl): the Connect protocol in
// front of a real RouterGrpcService with tokens and roles, unary and streaming, JSON and binary,
// and every kind of bad request answered with the Connect error that says what is wrong.
#include "router_service/connect/http_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router_service/auth.h"
#include "router_service/connect/connect_protocol.h"
#include "router_service/connect/http_peer.h"
#include "router_service/router_grpc.h"
#include "router_service/run_engine.h"
#include "router_service/testing/fake_clients.h"
#include "router_service/testing/served_router.h"

namespace rein::connect {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;
using rein::testing::ServedRouterOptions;

struct HttpReply {
  CURLcode curl = CURLE_OK;  // the transport's outcome (a refused handshake is not CURLE_OK)
  long status = 0;
  std::string content_type;
  std::string body;
};

size_t Collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// The messages and the end-of-stream message of a Connect stream's body.
struct Stream {
  std::vector<std::string> messages;
  std::string end;
  bool complete = false;
};

Stream ParseStream(const std::string& body) {
  Stream out;
  size_t at = 0;
  while (at + 5 <= body.size()) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(body[at + i]); };
    const uint32_t size = (uint32_t{byte(1)} << 24) | (uint32_t{byte(2)} << 16) |
                          (uint32_t{byte(3)} << 8) | uint32_t{byte(4)};
    if (at + 5 + size > body.size()) break;
    std::string payload = body.substr(at + 5, size);
    if (byte(0) & kEnvelopeEndStream) {
      out.end = payload;
      out.complete = at + 5 + size == body.size();
    } else {
      out.messages.push_back(payload);
    }
    at += 5 + size;
  }
  return out;
}

class HttpServerTest : public ::testing::Test {
 protected:
  // Sets what the HTTP server is started with beyond the defaults below.
  virtual void Configure(HttpServerOptions*) {}
  virtual void ConfigureGateway(ConnectGatewayOptions*) {}
  // Failed authentications per credential and window before calls are refused.
  virtual int MaxAuthFailures() const { return 1000; }  // tests fail on purpose many times

  void SetUp() override {
    ServedRouterOptions options;
    options.tokens = absl::StrCat("sha256:", Sha256Hex("t-viewer"), " vera viewer\n",      //
                                  "sha256:", Sha256Hex("t-operator"), " otto operator\n",  //
                                  "sha256:", Sha256Hex("t-reviewer"), " rita reviewer\n");
    options.auth.max_failures_per_window = MaxAuthFailures();
    rein::testing::ScriptListFilesRun(&planner_, &executor_);
    ASSERT_TRUE(served_.Start(options, &planner_, &executor_).ok());
    grpc_port_ = served_.port;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    ConnectGatewayOptions gateway_options;
    gateway_options.max_streams = 3;
    ConfigureGateway(&gateway_options);
    gateway_ =
        std::make_unique<ConnectGateway>(served_.server->InProcessChannel(args), gateway_options);
    HttpServerOptions http_options;
    http_options.threads = 8;
    http_options.max_body_bytes = 64 << 10;
    files_["/index.html"] = {"text/html; charset=utf-8", "<!doctype html><title>rein</title>"};
    http_options.files = &files_;
    Configure(&http_options);
    absl::StatusOr<std::unique_ptr<HttpServer>> http =
        HttpServer::Start(http_options, gateway_.get());
    ASSERT_TRUE(http.ok()) << http.status();
    http_ = *std::move(http);
    ASSERT_GT(http_->port(), 0);
  }

  void TearDown() override {
    served_.Stop([this] { http_.reset(); });
  }

  HttpReply Request(const std::string& verb, const std::string& path,
                    const std::string& content_type, const std::string& body,
                    const std::string& token, std::vector<std::string> headers = {}) {
    HttpReply reply = Transfer(verb, path, content_type, body, token, std::move(headers));
    EXPECT_EQ(reply.curl, CURLE_OK) << curl_easy_strerror(reply.curl);
    return reply;
  }

  // How the test's client reaches the port: its scheme, and over TLS the CA it trusts and
  // the certificate it presents (none when empty).
  std::string scheme_ = "http";
  std::string trust_ca_, client_cert_, client_key_;
  // When set, each request is a new connection that shares the TLS sessions of the others
  // (a resumption, as Node's agent does).
  CURLSH* share_ = nullptr;
  std::string source_;  // the address the client connects from; "" = any
  int grpc_port_ = 0;

  HttpReply Transfer(const std::string& verb, const std::string& path,
                     const std::string& content_type, const std::string& body,
                     const std::string& token, std::vector<std::string> headers) {
    CURL* curl = curl_easy_init();
    HttpReply reply;
    const std::string url = absl::StrCat(scheme_, "://127.0.0.1:", http_->port(), path);
    if (!trust_ca_.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, trust_ca_.c_str());
    if (!source_.empty()) curl_easy_setopt(curl, CURLOPT_INTERFACE, source_.c_str());
    if (share_ != nullptr) {
      curl_easy_setopt(curl, CURLOPT_SHARE, share_);
      curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    }
    if (!client_cert_.empty()) {
      curl_easy_setopt(curl, CURLOPT_SSLCERT, client_cert_.c_str());
      curl_easy_setopt(curl, CURLOPT_SSLKEY, client_key_.c_str());
    }
    curl_slist* list = nullptr;
    if (!content_type.empty()) headers.push_back("Content-Type: " + content_type);
    if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
    headers.push_back("Expect:");
    for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, verb.c_str());
    if (verb == "POST") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
    reply.curl = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
    char* type = nullptr;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
    if (type != nullptr) reply.content_type = type;
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    return reply;
  }

  // A raw connection to the port that has sent `bytes`.
  int Connect(const std::string& bytes) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_port = htons(http_->port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    if (!bytes.empty()) {
      EXPECT_GT(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), 0);
    }
    return fd;
  }

  // A raw connection holding a WatchRun of `run_id` as `token`, once its reply's headers came.
  int OpenWatch(const std::string& run_id, const std::string& token) {
    const std::string body = Envelope(0, absl::StrCat(R"({"runId":")", run_id, R"("})"));
    const int fd =
        Connect(absl::StrCat("POST /rein.v1.Router/WatchRun HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                             "Content-Type: application/connect+json\r\nAuthorization: Bearer ",
                             token, "\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
    timeval wait = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    char head[4096];
    EXPECT_GT(recv(fd, head, sizeof(head), 0), 0) << "no reply to the watch";
    // Then the events so far, until the stream is quiet: it waits for the run's next commit.
    pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, 300) > 0 && recv(fd, head, sizeof(head), 0) > 0) {
    }
    return fd;
  }

  HttpReply Call(const std::string& method, const std::string& json, const std::string& token) {
    return Request("POST", "/rein.v1.Router/" + method, "application/json", json, token);
  }

  rein::v1::Run StartPaused(const std::string& request_id) {
    HttpReply reply = Call("StartRun",
                           absl::StrCat(R"({"spec":{"goal":"list things","pausePoints":)",
                                        R"(["AFTER_PLAN"]},"requestId":")", request_id, R"("})"),
                           "t-operator");
    EXPECT_EQ(reply.status, 200) << reply.body;
    rein::v1::Run run;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &run).ok()) << reply.body;
    return run;
  }

  // GetRun until the run is in `stage`.
  rein::v1::Run WaitFor(const std::string& run_id, rein::v1::Stage stage) {
    rein::v1::Run run;
    for (int i = 0; i < 500; ++i) {
      HttpReply reply = Call("GetRun", absl::StrCat(R"({"runId":")", run_id, R"("})"), "t-viewer");
      EXPECT_EQ(reply.status, 200) << reply.body;
      run.Clear();
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &run).ok());
      if (run.state().stage() == stage) return run;
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "run " << run_id << " never reached " << rein::v1::Stage_Name(stage)
                  << "; it is " << rein::v1::Stage_Name(run.state().stage());
    return run;
  }

  int64_t RunCount() {
    HttpReply reply = Call("ListRuns", "{}", "t-viewer");
    EXPECT_EQ(reply.status, 200) << reply.body;
    rein::v1::ListRunsResponse list;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reply.body, &list).ok());
    return list.runs_size();
  }

  FakePlannerClient planner_;
  FakeExecutorClient executor_;
  rein::testing::ServedRouter served_;
  std::unique_ptr<ConnectGateway> gateway_;
  std::map<std::string, StaticFile> files_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpServerTest, UnaryJsonAndBinaryServeTheSameRun) {
  rein::v1::Run started = StartPaused("req-1");
  ASSERT_FALSE(started.run_id().empty());
  // The same request id twice is the same run.
  EXPECT_EQ(StartPaused("req-1").run_id(), started.run_id());

  rein::v1::GetRunRequest get;
  get.set_run_id(started.run_id());
  HttpReply binary =
      Request("POST", "/rein.v1.Router/GetRun", "application/proto", get.SerializeAsString(),
              "t-viewer", {"Connect-Protocol-Version: 1", "Connect-Timeout-Ms: 5000"});
  ASSERT_EQ(binary.status, 200) << binary.body;
  EXPECT_EQ(binary.content_type, "application/proto");
  rein::v1::Run run;
  ASSERT_TRUE(run.ParseFromString(binary.body));
  EXPECT_EQ(run.run_id(), started.run_id());
  EXPECT_EQ(run.spec().goal(), "list things");

  HttpReply json =
      Call("GetRun", absl::StrCat(R"({"runId":")", started.run_id(), R"("})"), "t-viewer");
  ASSERT_EQ(json.status, 200);
  EXPECT_EQ(json.content_type, "application/json");
  // Protobuf's JSON mapping: lowerCamelCase names, enums by name.
  EXPECT_NE(json.body.find(R"("runId":")" + started.run_id()), std::string::npos) << json.body;
  EXPECT_NE(json.body.find(R"("pausePoints":["AFTER_PLAN"])"), std::string::npos) << json.body;
}

TEST_F(HttpServerTest, RefusalsAreConnectErrorsAndChangeNothing) {
  struct Case {
    std::string what;
    HttpReply reply;
    long status;
    std::string code;
    std::string says;
  };
  const std::string start = R"({"spec":{"goal":"list things"}})";
  std::vector<Case> cases = {
      {"no token", Call("StartRun", start, ""), 401, "unauthenticated", ""},
      {"unknown token", Call("StartRun", start, "t-nobody"), 401, "unauthenticated", ""},
      {"viewer starts", Call("StartRun", start, "t-viewer"), 403, "permission_denied", ""},
      {"reviewer starts", Call("StartRun", start, "t-reviewer"), 403, "permission_denied", ""},
      {"unknown method", Call("StartRuns", start, "t-operator"), 404, "unimplemented",
       "unknown method rein.v1.Router/StartRuns"},
      {"malformed JSON", Call("StartRun", R"({"spec":{"goal":)", "t-operator"), 400,
       "invalid_argument", "rein.v1.StartRunRequest in protobuf's JSON mapping"},
      {"unknown field", Call("StartRun", R"({"spek":{}})", "t-operator"), 400, "invalid_argument",
       "spek"},
      {"bad binary",
       Request("POST", "/rein.v1.Router/StartRun", "application/proto", "\xff\xff\xff",
               "t-operator"),
       400, "invalid_argument", "not a binary rein.v1.StartRunRequest"},
      {"missing goal", Call("StartRun", R"({"spec":{}})", "t-operator"), 400, "invalid_argument",
       "goal"},
      {"wrong content type",
       Request("POST", "/rein.v1.Router/StartRun", "text/plain", start, "t-operator"), 415,
       "invalid_argument", "text/plain\\\" is not served"},
      {"stream type on unary",
       Request("POST", "/rein.v1.Router/StartRun", "application/connect+json", start, "t-operator"),
       415, "invalid_argument", "unary method"},
      {"oversized body",
       Call("StartRun", absl::StrCat(R"({"spec":{"goal":")", std::string(70 << 10, 'a'), "\"}}"),
            "t-operator"),
       429, "resource_exhausted", "limit of 65536 bytes"},
      {"GET", Request("GET", "/rein.v1.Router/GetRun", "", "", "t-viewer"), 405, "unimplemented",
       "POST only"},
      {"bad timeout",
       Request("POST", "/rein.v1.Router/StartRun", "application/json", start, "t-operator",
               {"Connect-Timeout-Ms: soon"}),
       400, "invalid_argument", "Connect-Timeout-Ms"},
      {"bad protocol version",
       Request("POST", "/rein.v1.Router/StartRun", "application/json", start, "t-operator",
               {"Connect-Protocol-Version: 2"}),
       400, "invalid_argument", "Connect-Protocol-Version"},
      {"compressed",
       Request("POST", "/rein.v1.Router/StartRun", "application/json", start, "t-operator",
               {"Content-Encoding: gzip"}),
       501, "unimplemented", "uncompressed"},
      {"unknown run", Call("GetRun", R"({"runId":"0123456789abcdef0123456789abcdef"})", "t-viewer"),
       404, "not_found", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(c.reply.status, c.status) << c.reply.body;
    EXPECT_EQ(c.reply.content_type, "application/json");
    EXPECT_NE(c.reply.body.find(absl::StrCat(R"({"code":")", c.code, "\"")), std::string::npos)
        << c.reply.body;
    EXPECT_NE(c.reply.body.find(c.says), std::string::npos) << c.reply.body;
  }
  EXPECT_EQ(RunCount(), 0);
}

TEST_F(HttpServerTest, ReviewNeedsTheRoleAndTheCurrentVersionAndIsAudited) {
  rein::v1::Run run = WaitFor(StartPaused("req-review").run_id(), rein::v1::PAUSED);
  const int64_t version = run.state().version();
  const auto resume = [&](int64_t expected, const std::string& token) {
    return Call("ResumeRun",
                absl::StrCat(R"({"runId":")", run.run_id(), R"(","expectedVersion":")", expected,
                             R"(","review":{"approve":{}}})"),
                token);
  };
  HttpReply operator_try = resume(version, "t-operator");
  EXPECT_EQ(operator_try.status, 403) << operator_try.body;
  HttpReply stale = resume(version - 1, "t-reviewer");
  EXPECT_EQ(stale.status, 400) << stale.body;
  EXPECT_NE(stale.body.find(R"("code":"failed_precondition")"), std::string::npos);
  HttpReply approved = resume(version, "t-reviewer");
  ASSERT_EQ(approved.status, 200) << approved.body;
  // The second approval of the same pause loses.
  HttpReply again = resume(version, "t-reviewer");
  EXPECT_EQ(again.status, 400) << again.body;
  WaitFor(run.run_id(), rein::v1::FINISHED);

  // The stream replays the whole log and ends after the terminal event; the review is
  // recorded with the reviewer's principal.
  HttpReply watch =
      Request("POST", "/rein.v1.Router/WatchRun", "application/connect+json",
              Envelope(0, absl::StrCat(R"({"runId":")", run.run_id(), R"("})")), "t-viewer");
  ASSERT_EQ(watch.status, 200);
  EXPECT_EQ(watch.content_type, "application/connect+json");
  Stream stream = ParseStream(watch.body);
  ASSERT_TRUE(stream.complete) << watch.body;
  EXPECT_EQ(stream.end, "{}");
  ASSERT_GT(stream.messages.size(), 3u);
  bool reviewed_by_rita = false;
  for (size_t i = 0; i < stream.messages.size(); ++i) {
    rein::v1::RunEvent event;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(stream.messages[i], &event).ok())
        << stream.messages[i];
    EXPECT_EQ(event.seq(), static_cast<int64_t>(i + 1));
    if (event.has_resumed() && event.principal() == "rita") reviewed_by_rita = true;
    if (i + 1 == stream.messages.size()) {
      EXPECT_TRUE(event.has_finished());
    }
  }
  EXPECT_TRUE(reviewed_by_rita);

  // Resumed from after_seq in binary: the rest of the log, no gap, no duplicate.
  rein::v1::WatchRunRequest rest;
  rest.set_run_id(run.run_id());
  rest.set_after_seq(2);
  HttpReply tail = Request("POST", "/rein.v1.Router/WatchRun", "application/connect+proto",
                           Envelope(0, rest.SerializeAsString()), "t-viewer");
  ASSERT_EQ(tail.status, 200);
  Stream binary = ParseStream(tail.body);
  ASSERT_TRUE(binary.complete);
  ASSERT_EQ(binary.messages.size(), stream.messages.size() - 2);
  rein::v1::RunEvent first;
  ASSERT_TRUE(first.ParseFromString(binary.messages[0]));
  EXPECT_EQ(first.seq(), 3);

  // ExportRun streams the snapshots.
  HttpReply exported =
      Request("POST", "/rein.v1.Router/ExportRun", "application/connect+json",
              Envelope(0, absl::StrCat(R"({"runId":")", run.run_id(), R"("})")), "t-viewer");
  Stream snapshots = ParseStream(exported.body);
  ASSERT_TRUE(snapshots.complete);
  EXPECT_EQ(snapshots.end, "{}");
  EXPECT_FALSE(snapshots.messages.empty());
  EXPECT_NE(snapshots.messages[0].find("\"stateJson\""), std::string::npos);
}

TEST_F(HttpServerTest, StreamErrorsEndTheStreamWithTheirCode) {
  const auto watch = [&](const std::string& body, const std::string& token) {
    HttpReply reply =
        Request("POST", "/rein.v1.Router/WatchRun", "application/connect+json", body, token);
    EXPECT_EQ(reply.status, 200);
    return ParseStream(reply.body);
  };
  Stream unknown =
      watch(Envelope(0, R"({"runId":"0123456789abcdef0123456789abcdef"})"), "t-viewer");
  EXPECT_TRUE(unknown.messages.empty());
  EXPECT_NE(unknown.end.find(R"({"error":{"code":"not_found")"), std::string::npos) << unknown.end;
  Stream anonymous = watch(Envelope(0, R"({"runId":"x"})"), "");
  EXPECT_NE(anonymous.end.find(R"("code":"unauthenticated")"), std::string::npos);
  Stream bare = watch(R"({"runId":"x"})", "t-viewer");
  EXPECT_NE(bare.end.find(R"("code":"invalid_argument")"), std::string::npos) << bare.end;
  Stream two = watch(Envelope(0, "{}") + Envelope(0, "{}"), "t-viewer");
  EXPECT_NE(two.end.find("exactly one request message"), std::string::npos) << two.end;
  Stream json = watch(Envelope(0, "{runId}"), "t-viewer");
  EXPECT_NE(json.end.find("rein.v1.WatchRunRequest"), std::string::npos) << json.end;
  // A unary content type on a streaming method is refused before any stream.
  HttpReply unary = Request("POST", "/rein.v1.Router/WatchRun", "application/json",
                            R"({"runId":"x"})", "t-viewer");
  EXPECT_EQ(unary.status, 415);
  EXPECT_NE(unary.body.find("server-streaming method"), std::string::npos);
}

TEST_F(HttpServerTest, LiveWatchFollowsTheRunAndStreamsAreCapped) {
  rein::v1::Run run = StartPaused("req-live");
  WaitFor(run.run_id(), rein::v1::PAUSED);
  // A watch of a paused run stays open; with Connect-Timeout-Ms it ends deadline_exceeded
  // after the events so far, which the client resumes from.
  HttpReply open = Request("POST", "/rein.v1.Router/WatchRun", "application/connect+json",
                           Envelope(0, absl::StrCat(R"({"runId":")", run.run_id(), R"("})")),
                           "t-viewer", {"Connect-Timeout-Ms: 300"});
  Stream so_far = ParseStream(open.body);
  ASSERT_TRUE(so_far.complete);
  EXPECT_FALSE(so_far.messages.empty());
  EXPECT_NE(so_far.end.find(R"("code":"deadline_exceeded")"), std::string::npos) << so_far.end;
  EXPECT_NE(so_far.end.find("from the last seq"), std::string::npos) << so_far.end;
}

// A watch of a paused run writes nothing for hours: a client that closed its socket must be
// noticed while the stream waits, and its slot and thread given back.
TEST_F(HttpServerTest, AClosedWatchGivesItsSlotBackWithinSeconds) {
  rein::v1::Run run = StartPaused("req-closed");
  WaitFor(run.run_id(), rein::v1::PAUSED);
  const int fd = OpenWatch(run.run_id(), "t-viewer");  // and idle
  EXPECT_EQ(gateway_->open_streams(), 1);
  close(fd);
  const absl::Time closed = absl::Now();
  while (gateway_->open_streams() > 0 && absl::Now() - closed < absl::Seconds(20)) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(gateway_->open_streams(), 0);
  EXPECT_LT(absl::Now() - closed, absl::Seconds(5));
}

class HttpServerClientCapTest : public HttpServerTest {
 protected:
  void ConfigureGateway(ConnectGatewayOptions* options) override {
    options->max_streams_per_client = 2;  // of 3
  }
};

// One client holding all it may leaves the port's other streams to the others.
TEST_F(HttpServerClientCapTest, OneClientsStreamsLeaveRoomForAnother) {
  rein::v1::Run run = StartPaused("req-cap");
  WaitFor(run.run_id(), rein::v1::PAUSED);
  const int first = OpenWatch(run.run_id(), "t-viewer");
  const int second = OpenWatch(run.run_id(), "t-viewer");
  const std::string body = Envelope(0, absl::StrCat(R"({"runId":")", run.run_id(), R"("})"));
  HttpReply third = Request("POST", "/rein.v1.Router/WatchRun", "application/connect+json", body,
                            "t-viewer", {"Connect-Timeout-Ms: 300"});
  Stream refused = ParseStream(third.body);
  EXPECT_TRUE(refused.messages.empty());
  EXPECT_NE(refused.end.find(R"("code":"resource_exhausted")"), std::string::npos) << refused.end;
  EXPECT_NE(refused.end.find("this client holds 2"), std::string::npos) << refused.end;
  HttpReply other = Request("POST", "/rein.v1.Router/WatchRun", "application/connect+json", body,
                            "t-reviewer", {"Connect-Timeout-Ms: 300"});
  Stream served = ParseStream(other.body);
  EXPECT_FALSE(served.messages.empty());
  EXPECT_NE(served.end.find(R"("code":"deadline_exceeded")"), std::string::npos) << served.end;
  close(first);
  close(second);
}

TEST_F(HttpServerTest, ConsoleFilesAreServedOnGet) {
  HttpReply index = Request("GET", "/", "", "", "");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(index.body, "<!doctype html><title>rein</title>");
  HttpReply missing = Request("GET", "/nope.js", "", "", "");
  EXPECT_EQ(missing.status, 404);
}

// DNS rebinding: a page whose name now points at 127.0.0.1 sends its own name in Host; a page
// of another site sends its origin. Neither is answered, and nothing is started.
TEST_F(HttpServerTest, RebindingHostsAndOtherSitesAreRefused) {
  const std::string port = std::to_string(http_->port());
  const std::string start = R"({"spec":{"goal":"list things"}})";
  for (const std::string& host : {"attacker.example:" + port, std::string("attacker.example")}) {
    HttpReply reply = Request("POST", "/rein.v1.Router/StartRun", "application/json", start,
                              "t-operator", {"Host: " + host});
    EXPECT_EQ(reply.status, 421) << host;
    EXPECT_NE(reply.body.find(R"("code":"permission_denied")"), std::string::npos) << reply.body;
    EXPECT_NE(reply.body.find("--http_allowed_hosts"), std::string::npos) << reply.body;
    EXPECT_EQ(Request("GET", "/", "", "", "", {"Host: " + host}).status, 421) << host;
  }
  for (const std::string& origin :
       {std::string("http://attacker.example"), std::string("null"), "http://localhost:" + port}) {
    HttpReply reply = Request("POST", "/rein.v1.Router/StartRun", "application/json", start,
                              "t-operator", {"Origin: " + origin});
    EXPECT_EQ(reply.status, 403) << origin;
    EXPECT_NE(reply.body.find("no CORS"), std::string::npos) << reply.body;
  }
  EXPECT_EQ(RunCount(), 0);
  // The console's own origin, localhost, and clients that send no Origin (curl, SDKs) are served.
  EXPECT_EQ(Request("POST", "/rein.v1.Router/ListRuns", "application/json", "{}", "t-viewer",
                    {"Origin: http://127.0.0.1:" + port})
                .status,
            200);
  EXPECT_EQ(Request("POST", "/rein.v1.Router/ListRuns", "application/json", "{}", "t-viewer",
                    {"Host: localhost:" + port, "Origin: http://localhost:" + port})
                .status,
            200);
  EXPECT_EQ(Request("GET", "/", "", "", "", {"Host: localhost:" + port}).status, 200);
}

class HttpServerAllowedHostsTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions* options) override { options->allowed_hosts = {"rein.example"}; }
};

TEST_F(HttpServerAllowedHostsTest, AnAllowedNameIsServedAndOthersAreNot) {
  const std::string port = std::to_string(http_->port());
  EXPECT_EQ(Request("POST", "/rein.v1.Router/ListRuns", "application/json", "{}", "t-viewer",
                    {"Host: rein.example:" + port, "Origin: http://rein.example:" + port})
                .status,
            200);
  EXPECT_EQ(Request("POST", "/rein.v1.Router/ListRuns", "application/json", "{}", "t-viewer",
                    {"Host: other.example:" + port})
                .status,
            421);
}

// The port with short timeouts: slow and idle clients give their threads back.
class HttpServerTimeoutTest : public HttpServerTest {
 protected:
  void Configure(HttpServerOptions* options) override {
    options->io_timeout = absl::Milliseconds(500);
    options->keep_alive = absl::Milliseconds(500);
    options->request_timeout = absl::Milliseconds(1500);
  }
};

TEST_F(HttpServerTimeoutTest, SlowAndIdleClientsCannotPinThePort) {
  // Every thread taken: half by clients that stall inside their headers, half by idle ones.
  std::vector<int> stalled;
  for (int i = 0; i < 8; ++i) {
    stalled.push_back(
        Connect(i % 2 == 0 ? "POST /rein.v1.Router/GetRun HTTP/1.1\r\nHost: x\r\n" : ""));
  }
  const absl::Time start = absl::Now();
  HttpReply reply = Call("ListRuns", "{}", "t-viewer");
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  for (int fd : stalled) close(fd);

  // Headers without end are cut off, not buffered: the server closes the connection (the
  // writer gets a reset) rather than read on or stall.
  const int flood = Connect("POST /rein.v1.Router/GetRun HTTP/1.1\r\n");
  timeval stall = {5, 0};
  setsockopt(flood, SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof(stall));
  const std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
  size_t sent = 0;
  int error = 0;
  while (sent < (64u << 20)) {
    const ssize_t n = send(flood, line.data(), line.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      error = errno;
      break;
    }
    sent += n;
  }
  EXPECT_TRUE(error == ECONNRESET || error == EPIPE) << strerror(error) << " after " << sent;
  close(flood);
}

// Each byte comes within the read timeout (500 ms), but the head as a whole must arrive within
// the request timeout (1.5 s): the client is cut off there, not served a byte at a time forever.
TEST_F(HttpServerTimeoutTest, ASlowDripIsCutAtTheRequestDeadline) {
  const absl::Time start = absl::Now();
  const int fd = Connect("POST /rein.v1.Router/GetRun HTTP/1.1\r\n");
  bool cut = false;
  while (!cut && absl::Now() - start < absl::Seconds(8)) {
    if (send(fd, "X", 1, MSG_NOSIGNAL) <= 0) cut = true;
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) cut = true;  // a reply, the server's FIN or a reset
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(cut);
  EXPECT_GE(took, absl::Milliseconds(1400));
  EXPECT_LT(took, absl::Seconds(4));
  close(fd);
}

TEST_F(HttpServerTimeoutTest, StopsWithoutWaitingForIdleOrStalledClients) {
  HttpServerOptions options;
  options.threads = 4;  // 30 s to read, 5 s of keep-alive: the defaults
  auto http = HttpServer::Start(options, gateway_.get());
  ASSERT_TRUE(http.ok()) << http.status();
  http_.swap(*http);
  const int idle = Connect("");
  const int stalled = Connect("POST /rein.v1.Router/GetRun HTTP/1.1\r\nHost: x\r\n");
  absl::SleepFor(absl::Milliseconds(100));  // both are being served
  const absl::Time start = absl::Now();
  http_.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  close(idle);
  close(stalled);
}

TEST_F(HttpServerTest, ChunkedBodiesAreBoundedToo) {
  // No Content-Length: the body is counted as it arrives.
  HttpReply reply =
      Call("StartRun", absl::StrCat(R"({"spec":{"goal":")", std::string(70 << 10, 'a'), "\"}}"),
           "t-operator");
  HttpReply chunked =
      Request("POST", "/rein.v1.Router/StartRun", "application/json",
              absl::StrCat(R"({"spec":{"goal":")", std::string(70 << 10, 'a'), "\"}}"),
              "t-operator", {"Transfer-Encoding: chunked"});
  for (const HttpReply* r : {&reply, &chunked}) {
    EXPECT_EQ(r->status, 429) << r->body;
    EXPECT_NE(r->body.find("limit of 65536 bytes"), std::string::npos) << r->body;
  }
  EXPECT_EQ(RunCount(), 0);
}

// The port in TLS with client certificates from the clients' CA, as the router serves it
// with --tls_cert, --tls_key, --tls_ca and --require_client_cert --client_ca.
class HttpServerTlsTest : public HttpServerTest {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(
        absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/http-certs"));
    const char* srcdir = getenv("TEST_SRCDIR");
    const std::string script =
        absl::StrCat(srcdir ? srcdir : ".", "/rein/common/testing/make_certs.sh");
    ASSERT_EQ(system(absl::StrCat(script, " ", *certs_, " --test").c_str()), 0) << script;
  }
  static std::string Cert(const std::string& name) { return *certs_ + "/" + name; }

  void Configure(HttpServerOptions* options) override {
    options->tls = {Cert("router.pem"), Cert("router.key"), Cert("clients-ca.pem")};
    scheme_ = "https";
    trust_ca_ = Cert("ca.pem");
    Present("public-client");
  }
  void Present(const std::string& name) {
    client_cert_ = name.empty() ? "" : Cert(name + ".pem");
    client_key_ = name.empty() ? "" : Cert(name + ".key");
  }

  static std::string* certs_;
};
std::string* HttpServerTlsTest::certs_ = nullptr;

TEST_F(HttpServerTlsTest, ClientsOfTheClientsCaAreServedUnaryAndStreaming) {
  rein::v1::Run run = WaitFor(StartPaused("req-tls").run_id(), rein::v1::PAUSED);
  HttpReply watch = Request("POST", "/rein.v1.Router/WatchRun", "application/connect+json",
                            Envelope(0, absl::StrCat(R"({"runId":")", run.run_id(), R"("})")),
                            "t-viewer", {"Connect-Timeout-Ms: 300"});
  ASSERT_EQ(watch.status, 200) << watch.body;
  Stream stream = ParseStream(watch.body);
  ASSERT_TRUE(stream.complete) << watch.body;
  ASSERT_FALSE(stream.messages.empty());
  rein::v1::RunEvent first;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(stream.messages[0], &first).ok());
  EXPECT_EQ(first.principal(), "otto");  // the token's principal, as on the gRPC port
  EXPECT_NE(stream.end.find("deadline_exceeded"), std::string::npos) << stream.end;
  HttpReply index = Request("GET", "/", "", "", "");
  EXPECT_EQ(index.status, 200);

  // New connections that resume the first one's TLS session are served too.
  share_ = curl_share_init();
  curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  for (int i = 0; i < 3; ++i) {
    HttpReply again =
        Call("GetRun", absl::StrCat(R"({"runId":")", run.run_id(), R"("})"), "t-viewer");
    EXPECT_EQ(again.status, 200) << again.body;
  }
  curl_share_cleanup(share_);
  share_ = nullptr;
}

TEST_F(HttpServerTlsTest, NoCertificateOrAnotherCasAndPlainHttpAreRefused) {
  const std::string start = R"({"spec":{"goal":"list things"}})";
  struct Case {
    std::string what, scheme, certificate;
  };
  for (const Case& c : std::vector<Case>{
           {"no certificate", "https", ""},
           {"a certificate of another CA", "https", "stranger"},
           // The services' CA signs the router's own peers, not its public clients.
           {"a certificate of the services' CA", "https", "client"},
           {"an expired certificate", "https", "expired"},
           {"plain HTTP", "http", "public-client"},
       }) {
    SCOPED_TRACE(c.what);
    scheme_ = c.scheme;
    Present(c.certificate);
    HttpReply reply =
        Transfer("POST", "/rein.v1.Router/StartRun", "application/json", start, "t-operator", {});
    EXPECT_NE(reply.curl, CURLE_OK) << reply.status << " " << reply.body;
    EXPECT_NE(reply.status, 200) << reply.body;
  }
  scheme_ = "https";
  Present("public-client");
  EXPECT_EQ(RunCount(), 0);
}

TEST_F(HttpServerTlsTest, IdentityHeadersFromOutsideAreIgnored) {
  // Whatever a request says of itself, the token decides: a certificate alone is not a
  // principal when the router has tokens, and no header makes a viewer more.
  const std::string start = R"({"spec":{"goal":"list things"}})";
  const std::vector<std::string> forged = {
      "X-Forwarded-Client-Cert: By=spiffe://rein;URI=spiffe://rein/admin",
      "X-Client-Principal: otto", "X-Rein-Principal: otto", "REMOTE_ADDR: 10.0.0.1",
      "X-Forwarded-For: 10.0.0.1"};
  HttpReply anonymous =
      Request("POST", "/rein.v1.Router/StartRun", "application/json", start, "", forged);
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  HttpReply viewer =
      Request("POST", "/rein.v1.Router/StartRun", "application/json", start, "t-viewer", forged);
  EXPECT_EQ(viewer.status, 403) << viewer.body;
  EXPECT_EQ(RunCount(), 0);
}

// Few failed authentications allowed: they are counted per client address.
class HttpServerPeerTest : public HttpServerTest {
 protected:
  int MaxAuthFailures() const override { return 2; }
};

TEST_F(HttpServerPeerTest, FailedAuthenticationIsCountedPerHttpClientAddress) {
  const auto anonymous = [&](std::vector<std::string> headers = {}) {
    return Request("POST", "/rein.v1.Router/ListRuns", "application/json", "{}", "",
                   std::move(headers));
  };
  source_ = "127.0.0.2";
  EXPECT_EQ(anonymous().status, 401);
  EXPECT_EQ(anonymous().status, 401);
  HttpReply limited = anonymous();
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_NE(limited.body.find("from this address"), std::string::npos) << limited.body;

  // Another address has a count of its own (all of them would share the in-process
  // channel's otherwise), and a header naming the limited address is nobody's word.
  source_ = "127.0.0.3";
  EXPECT_EQ(anonymous().status, 401);
  HttpReply forged = anonymous({std::string(kHttpPeerMetadata) + ": ipv4:127.0.0.2:1"});
  EXPECT_EQ(forged.status, 401) << forged.body;

  // Nor is the metadata, on a call from the network.
  auto stub = rein::v1::Router::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                                                            grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.AddMetadata(kHttpPeerMetadata, "ipv4:127.0.0.2:1");
  rein::v1::ListRunsResponse list;
  grpc::Status status = stub->ListRuns(&context, rein::v1::ListRunsRequest(), &list);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
}

}  // namespace
}  // namespace rein::connect
