// PriceTable: the router's per-model prices (--price_table), and the cost of a model reply.
#ifndef REIN_ROUTER_SERVICE_PRICE_TABLE_H_
#define REIN_ROUTER_SERVICE_PRICE_TABLE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rein/v1/types.pb.h"

namespace rein {

// US dollars per million tokens of each kind of a reply's usage.
struct ModelPrice {
  double input = 0;        // Usage.input_tokens (uncached input)
  double output = 0;       // Usage.output_tokens
  double cache_read = 0;   // Usage.cache_read_input_tokens
  double cache_write = 0;  // Usage.cache_creation_input_tokens
};

// The model -> price map of a price table file. Immutable once parsed, so thread-safe.
//
// The file format (examples/price_table.txt is one): one model per line,
//   MODEL  INPUT  OUTPUT  CACHE_READ  CACHE_WRITE
// five fields separated by spaces or tabs, the four prices in US dollars per million tokens
// (finite decimal numbers >= 0). MODEL is the model id as the planner sends it (the part after
// "anthropic:" of a reply's backend, e.g. claude-sonnet-5); the row named `default` prices
// every model without a row of its own. `#` starts a comment; blank lines are ignored. A model
// listed twice is an error.
class PriceTable {
 public:
  // Parses `text`; errors are INVALID_ARGUMENT "<source>:<line>: <field>: <problem>".
  static absl::StatusOr<PriceTable> Parse(absl::string_view text, absl::string_view source);
  // Reads and parses the file at `path` (NOT_FOUND / INVALID_ARGUMENT naming it).
  static absl::StatusOr<PriceTable> Load(const std::string& path);

  // The model's row, else the `default` row, else nullptr.
  const ModelPrice* Find(absl::string_view model) const;
  size_t size() const { return prices_.size(); }

 private:
  std::map<std::string, ModelPrice, std::less<>> prices_;
};

// The cost in US dollars of `usage` at `price`.
double CostUsd(const ModelPrice& price, const rein::v1::Usage& usage);

// The model a planner reply's backend label names: "anthropic:<model>" -> <model>. nullopt for
// backends that cost nothing (the scripted backend, labelled "scripted").
std::optional<std::string> PricedModel(absl::string_view backend);

// What a reply from `backend` with `usage` cost under `prices` (nullptr = no table): 0 for a
// backend that costs nothing or an empty usage; NOT_FOUND naming the model when the reply
// must be priced and cannot be (no table, or no row for the model and no `default` row).
absl::StatusOr<double> ReplyCostUsd(const PriceTable* prices, absl::string_view backend,
                                    const rein::v1::Usage& usage);

// The StartRun / ForkRun check of a normalized spec's cost budget against the router's table
// (nullptr = none): INVALID_ARGUMENT naming `budget_field` (where the caller gave the budget)
// when a budget is set without a table, or spec.model.model when the budget is set and that
// model has no price.
absl::Status CheckCostBudget(const rein::v1::RunSpec& spec, const PriceTable* prices,
                             absl::string_view budget_field = "spec.limits.cost_budget_usd");

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_PRICE_TABLE_H_
