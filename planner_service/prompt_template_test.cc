// Tests of prompt template parsing and rendering: declared variables, reserved names,
// placeholders left in a rendered prompt.
#include "planner_service/prompt_template.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(PromptTemplateTest, RendersDeclaredVariables) {
  absl::StatusOr<PromptTemplate> t = PromptTemplate::Parse(
      "# c\nvars: goal_text, tool_list\n---\nG={{goal_text}} T={{tool_list}}\n", "t.txt");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->Render({{"goal_text", "g"}, {"tool_list", "x"}}), "G=g T=x\n");
}

TEST(PromptTemplateTest, UndeclaredPlaceholderIsALoadError) {
  absl::StatusOr<PromptTemplate> t =
      PromptTemplate::Parse("vars: goal_text\n---\n{{goal_text}}\n{{tools}}", "t.txt");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "t.txt: line 4: {{tools}} is not declared in vars:");
}

TEST(PromptTemplateTest, DeclaredButUnusedIsALoadError) {
  EXPECT_EQ(PromptTemplate::Parse("vars: goal_text extra\n---\n{{goal_text}}", "t.txt")
                .status()
                .message(),
            "t.txt: variable \"extra\" is declared but never used");
}

TEST(PromptTemplateTest, StateFieldNamesAreReserved) {
  absl::StatusOr<PromptTemplate> t =
      PromptTemplate::Parse("vars: recent_actions\n---\n{{recent_actions}}", "t.txt");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("has the name of a state or request field"),
            std::string::npos);
  EXPECT_TRUE(IsReservedVariableName("goal"));
  EXPECT_TRUE(IsReservedVariableName("summary"));
  EXPECT_TRUE(IsReservedVariableName("tokens_used"));
  EXPECT_FALSE(IsReservedVariableName("goal_text"));
}

TEST(PromptTemplateTest, MalformedHeadersAndPlaceholdersAreLoadErrors) {
  EXPECT_EQ(PromptTemplate::Parse("---\nx", "t").status().message(),
            "t: the header has no vars: line");
  EXPECT_EQ(PromptTemplate::Parse("vars:\nbody", "t").status().message(),
            "t: line 2: header lines are `# comment`, one `vars: a b c`, then `---`");
  EXPECT_EQ(PromptTemplate::Parse("vars:\n", "t").status().message(),
            "t: no --- line ends the header");
  EXPECT_EQ(PromptTemplate::Parse("vars: a\nvars: b\n---\n", "t").status().message(),
            "t: line 2: a second vars: line");
  EXPECT_EQ(PromptTemplate::Parse("vars: Bad\n---\n", "t").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PromptTemplate::Parse("vars: a_b a_b\n---\n{{a_b}}", "t").status().message(),
            "t: line 1: variable \"a_b\" is declared twice");
  EXPECT_EQ(PromptTemplate::Parse("vars: a_b\n---\n{{a_b}} {{ a_b }}", "t").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PromptTemplate::Parse("vars: a_b\n---\n{{a_b}} {{a_b", "t").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PromptTemplateTest, RenderNeedsExactlyTheDeclaredValues) {
  absl::StatusOr<PromptTemplate> t = PromptTemplate::Parse("vars: a_b\n---\n[{{a_b}}]", "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Render({}).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(t->Render({}).status().message(), "t: no value for {{a_b}}");
  EXPECT_EQ(t->Render({{"a_b", "1"}, {"c_d", "2"}}).status().message(),
            "t: value given for unknown variable \"c_d\"");
}

TEST(PromptTemplateTest, PlaceholdersInValuesAreNeutralized) {
  absl::StatusOr<PromptTemplate> t = PromptTemplate::Parse("vars: a_b\n---\n{{a_b}}", "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->Render({{"a_b", "{{a_b}} {{{x}}}"}}), "{ {a_b}} { { {x}}}");
}

TEST(PromptTemplateTest, PlaceholderLeftAfterRenderingIsInternal) {
  // A literal "{" right after a value ending in "{" joins into "{{".
  absl::StatusOr<PromptTemplate> t = PromptTemplate::Parse("vars: a_b\n---\n{{a_b}}{x", "t");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<std::string> out = t->Render({{"a_b", "value{"}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(out.status().message(), "t: rendered prompt still holds a placeholder near \"{{x\"");
  EXPECT_TRUE(CheckNoPlaceholderLeft("all { fine }", "t").ok());
}

}  // namespace
}  // namespace rein
