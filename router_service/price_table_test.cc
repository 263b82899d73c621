// Tests of PriceTable: the file format, errors naming line and field, and the cost of a reply.
#include "router_service/price_table.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

rein::v1::Usage MakeUsage(int64_t input, int64_t output, int64_t read, int64_t write) {
  rein::v1::Usage usage;
  usage.set_input_tokens(input);
  usage.set_output_tokens(output);
  usage.set_cache_read_input_tokens(read);
  usage.set_cache_creation_input_tokens(write);
  return usage;
}

TEST(PriceTableTest, ParsesRowsCommentsAndBlankLines) {
  absl::StatusOr<PriceTable> table = PriceTable::Parse(
      "# model in out read write\n\n"
      "claude-sonnet-5  2 10 0.20 2.50   # default model\n"
      "\tclaude-opus-5\t5\t25\t0.5\t6.25\r\n",
      "prices.txt");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 2u);
  const ModelPrice* sonnet = table->Find("claude-sonnet-5");
  ASSERT_NE(sonnet, nullptr);
  EXPECT_DOUBLE_EQ(sonnet->input, 2);
  EXPECT_DOUBLE_EQ(sonnet->output, 10);
  EXPECT_DOUBLE_EQ(sonnet->cache_read, 0.2);
  EXPECT_DOUBLE_EQ(sonnet->cache_write, 2.5);
  EXPECT_DOUBLE_EQ(table->Find("claude-opus-5")->cache_write, 6.25);
  EXPECT_EQ(table->Find("claude-haiku-4-5"), nullptr);
}

TEST(PriceTableTest, DefaultRowPricesUnlistedModels) {
  absl::StatusOr<PriceTable> table =
      PriceTable::Parse("claude-sonnet-5 2 10 0.2 2.5\ndefault 20 100 2 25\n", "p");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_DOUBLE_EQ(table->Find("claude-sonnet-5")->input, 2);
  EXPECT_DOUBLE_EQ(table->Find("some-new-model")->input, 20);
}

TEST(PriceTableTest, BadFilesNameTheLineAndTheField) {
  struct Case {
    std::string text;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"a 1 2 3\n",
            "p.txt:1: want MODEL INPUT OUTPUT CACHE_READ CACHE_WRITE (5 fields), got 4"},
           {"# c\na 1 2 3 4 5\n", "p.txt:2: want MODEL"},
           {"a 1 x 3 4\n", "p.txt:1: output: \"x\" is not a price"},
           {"a 1 2 -3 4\n", "p.txt:1: cache_read: \"-3\" is not a price"},
           {"a 1 2 3 nan\n", "p.txt:1: cache_write: \"nan\" is not a price"},
           {"a inf 2 3 4\n", "p.txt:1: input: \"inf\" is not a price"},
           {"a 1e3 2 3 4\n", "p.txt:1: input: \"1e3\" is not a price"},
           {"a 1.2.3 2 3 4\n", "p.txt:1: input: \"1.2.3\" is not a price"},
           {"a 2000000 2 3 4\n", "p.txt:1: input: 2000000 is above"},
           {"a 1 2 3 4\n\na 1 2 3 4\n", "p.txt:3: model: \"a\" is listed twice"},
           {std::string(300, 'm') + " 1 2 3 4\n", "p.txt:1: model: at most 256 bytes"},
           {"# only comments\n\n", "p.txt: no model rows"},
       }) {
    absl::StatusOr<PriceTable> table = PriceTable::Parse(c.text, "p.txt");
    ASSERT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(table.status().message().substr(0, c.error.size()), c.error)
        << table.status().message();
  }
}

TEST(PriceTableTest, LoadNamesAMissingFile) {
  absl::StatusOr<PriceTable> table = PriceTable::Load("/nonexistent/prices.txt");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(table.status().message().find("/nonexistent/prices.txt"), std::string::npos);
}

TEST(PriceTableTest, TheShippedExampleParsesAndPricesTheDefaultModel) {
  const std::string path =
      std::string(std::getenv("TEST_SRCDIR")) + "/rein/examples/price_table.txt";
  absl::StatusOr<PriceTable> table = PriceTable::Load(path);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_NE(table->Find("claude-sonnet-5"), nullptr);  // the planner's default --model
}

TEST(PriceTableTest, CostAddsEachKindAtItsPricePerMillion) {
  ModelPrice price{2, 10, 0.2, 2.5};
  // 1,000,000 of each: 2 + 10 + 0.2 + 2.5 dollars.
  EXPECT_DOUBLE_EQ(CostUsd(price, MakeUsage(1000000, 1000000, 1000000, 1000000)), 14.7);
  // 1,200 input, 300 output, 5,000 cache reads, 800 cache writes.
  EXPECT_DOUBLE_EQ(CostUsd(price, MakeUsage(1200, 300, 5000, 800)),
                   (1200 * 2 + 300 * 10 + 5000 * 0.2 + 800 * 2.5) / 1e6);
  EXPECT_DOUBLE_EQ(CostUsd(price, rein::v1::Usage()), 0);
}

TEST(PriceTableTest, ReplyCostPricesAnthropicRepliesOnlyAndNamesUnpricedModels) {
  absl::StatusOr<PriceTable> table = PriceTable::Parse("claude-sonnet-5 2 10 0.2 2.5\n", "p");
  ASSERT_TRUE(table.ok());
  const rein::v1::Usage usage = MakeUsage(1000, 100, 0, 0);
  EXPECT_DOUBLE_EQ(*ReplyCostUsd(&*table, "anthropic:claude-sonnet-5", usage), 0.003);
  EXPECT_DOUBLE_EQ(*ReplyCostUsd(&*table, "scripted", usage), 0);
  EXPECT_DOUBLE_EQ(*ReplyCostUsd(nullptr, "scripted", usage), 0);
  EXPECT_DOUBLE_EQ(*ReplyCostUsd(nullptr, "anthropic:x", rein::v1::Usage()), 0);
  absl::StatusOr<double> unknown = ReplyCostUsd(&*table, "anthropic:claude-opus-5", usage);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("\"claude-opus-5\""), std::string::npos);
  absl::StatusOr<double> unnamed = ReplyCostUsd(&*table, "anthropic:", usage);
  EXPECT_EQ(unnamed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unnamed.status().message().find("the planner's default model"), std::string::npos)
      << unnamed.status();
  absl::StatusOr<double> no_table = ReplyCostUsd(nullptr, "anthropic:claude-sonnet-5", usage);
  EXPECT_EQ(no_table.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(no_table.status().message().find("--price_table"), std::string::npos);
}

TEST(PriceTableTest, CostBudgetNeedsATableAndAPricedModel) {
  absl::StatusOr<PriceTable> table = PriceTable::Parse("claude-sonnet-5 2 10 0.2 2.5\n", "p");
  ASSERT_TRUE(table.ok());
  rein::v1::RunSpec spec;
  EXPECT_TRUE(CheckCostBudget(spec, nullptr).ok());  // no budget: no table needed
  spec.mutable_limits()->set_cost_budget_usd(0.5);
  absl::Status status = CheckCostBudget(spec, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("spec.limits.cost_budget_usd"), std::string::npos) << status;
  EXPECT_TRUE(CheckCostBudget(spec, &*table).ok());  // the planner's model: priced on reply
  spec.mutable_model()->set_model("claude-sonnet-5");
  EXPECT_TRUE(CheckCostBudget(spec, &*table).ok());
  spec.mutable_model()->set_model("claude-opus-5");
  status = CheckCostBudget(spec, &*table);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("spec.model.model: \"claude-opus-5\""), std::string::npos)
      << status;
}

}  // namespace
}  // namespace rein
