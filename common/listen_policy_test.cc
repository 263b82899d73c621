// Tests of the start-up rules on who may reach a service's port.
#include "common/listen_policy.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(IsLoopbackListenTest, LoopbackOnly) {
  EXPECT_TRUE(IsLoopbackListen("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackListen("127.1.2.3:0"));
  EXPECT_TRUE(IsLoopbackListen("localhost:1"));
  EXPECT_TRUE(IsLoopbackListen("[::1]:50051"));
  EXPECT_TRUE(IsLoopbackListen("unix:/run/rein.sock"));
  EXPECT_FALSE(IsLoopbackListen("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackListen("[::]:50051"));
  EXPECT_FALSE(IsLoopbackListen("10.1.2.3:50051"));
  EXPECT_FALSE(IsLoopbackListen("128.0.0.1:50051"));
  EXPECT_FALSE(IsLoopbackListen("rein-executor:50053"));
}

TEST(CheckListenPolicyTest, LoopbackWithoutAuthenticationPasses) {
  ListenPolicy policy;
  policy.listen = "127.0.0.1:50053";
  EXPECT_TRUE(CheckListenPolicy(policy).ok());
  EXPECT_FALSE(ServesUnauthenticated(policy));
  policy.bearer_tokens = true;  // plaintext tokens on loopback stay on this machine
  EXPECT_TRUE(CheckListenPolicy(policy).ok());
}

TEST(CheckListenPolicyTest, NonLoopbackWithoutAuthenticationIsRefusedNamingTheFlags) {
  ListenPolicy policy;
  policy.listen = "0.0.0.0:50053";
  policy.unauthenticated_means = "run tools in any workspace";
  absl::Status status = CheckListenPolicy(policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "--listen=0.0.0.0:50053 is not loopback and callers are not authenticated: give "
            "--tls_cert, --tls_key and --tls_ca (mutual TLS), or --allow_unauthenticated to let "
            "anyone who reaches the port run tools in any workspace");
}

TEST(CheckListenPolicyTest, AllowUnauthenticatedPassesAndIsReported) {
  ListenPolicy policy;
  policy.listen = "0.0.0.0:50052";
  policy.allow_unauthenticated = true;
  EXPECT_TRUE(CheckListenPolicy(policy).ok());
  EXPECT_TRUE(ServesUnauthenticated(policy));
}

TEST(CheckListenPolicyTest, AuthenticatedCallersPass) {
  ListenPolicy policy;
  policy.listen = "10.0.0.7:50052";
  policy.callers_authenticated = true;
  policy.tls = true;
  EXPECT_TRUE(CheckListenPolicy(policy).ok());
  EXPECT_FALSE(ServesUnauthenticated(policy));
}

TEST(CheckListenPolicyTest, PlaintextTokensOnNonLoopbackAreRefusedUnlessAllowed) {
  ListenPolicy policy;
  policy.listen = "0.0.0.0:50051";
  policy.callers_authenticated = true;
  policy.bearer_tokens = true;
  absl::Status status = CheckListenPolicy(policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("serves bearer tokens without TLS"), std::string::npos) << status;
  EXPECT_NE(status.message().find("--allow_plaintext_tokens"), std::string::npos) << status;
  policy.allow_plaintext_tokens = true;
  EXPECT_TRUE(CheckListenPolicy(policy).ok());
  policy.allow_plaintext_tokens = false;
  policy.tls = true;
  EXPECT_TRUE(CheckListenPolicy(policy).ok());
}

}  // namespace
}  // namespace rein
