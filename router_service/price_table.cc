// PriceTable: the router's per-model prices (--price_table), and the cost of a model reply.
#include "router_service/price_table.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rein {
namespace {

constexpr char kDefaultRow[] = "default";
constexpr size_t kMaxModelBytes = 256;
constexpr size_t kMaxFileBytes = 1 << 20;
constexpr double kMaxPrice = 1e6;  // dollars per million tokens: far above any real price

}  // namespace

absl::StatusOr<PriceTable> PriceTable::Parse(absl::string_view text, absl::string_view source) {
  PriceTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_number, ": ", what));
    };
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields.size() != 5) {
      return error(absl::StrCat("want MODEL INPUT OUTPUT CACHE_READ CACHE_WRITE (5 fields), got ",
                                fields.size()));
    }
    const std::string model(fields[0]);
    if (model.size() > kMaxModelBytes) {
      return error(absl::StrCat("model: at most ", kMaxModelBytes, " bytes"));
    }
    ModelPrice price;
    const char* names[] = {"input", "output", "cache_read", "cache_write"};
    double* values[] = {&price.input, &price.output, &price.cache_read, &price.cache_write};
    for (int i = 0; i < 4; ++i) {
      absl::string_view field = fields[i + 1];
      double value = 0;
      // SimpleAtod also takes "inf", "nan" and hex; a price is a plain decimal number.
      const bool plain =
          !field.empty() && field.find_first_not_of("0123456789.") == absl::string_view::npos;
      if (!plain || !absl::SimpleAtod(field, &value) || !std::isfinite(value)) {
        return error(absl::StrCat(names[i], ": \"", field,
                                  "\" is not a price (a decimal number >= 0, dollars per million "
                                  "tokens)"));
      }
      if (value > kMaxPrice) {
        return error(absl::StrCat(names[i], ": ", field, " is above ", kMaxPrice,
                                  " dollars per million tokens"));
      }
      *values[i] = value;
    }
    if (!table.prices_.emplace(model, price).second) {
      return error(absl::StrCat("model: \"", model, "\" is listed twice"));
    }
  }
  if (table.prices_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no model rows"));
  }
  return table;
}

absl::StatusOr<PriceTable> PriceTable::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::string text;
  text.resize(kMaxFileBytes + 1);
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  if (text.size() > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than 1 MiB"));
  }
  return Parse(text, path);
}

const ModelPrice* PriceTable::Find(absl::string_view model) const {
  auto it = prices_.find(model);
  if (it == prices_.end()) it = prices_.find(absl::string_view(kDefaultRow));
  return it == prices_.end() ? nullptr : &it->second;
}

double CostUsd(const ModelPrice& price, const rein::v1::Usage& usage) {
  return (static_cast<double>(usage.input_tokens()) * price.input +
          static_cast<double>(usage.output_tokens()) * price.output +
          static_cast<double>(usage.cache_read_input_tokens()) * price.cache_read +
          static_cast<double>(usage.cache_creation_input_tokens()) * price.cache_write) /
         1e6;
}

std::optional<std::string> PricedModel(absl::string_view backend) {
  if (!absl::ConsumePrefix(&backend, "anthropic:")) return std::nullopt;
  return std::string(backend);
}

absl::StatusOr<double> ReplyCostUsd(const PriceTable* prices, absl::string_view backend,
                                    const rein::v1::Usage& usage) {
  if (usage.ByteSizeLong() == 0) return 0.0;
  std::optional<std::string> model = PricedModel(backend);
  if (!model) return 0.0;
  const ModelPrice* price = prices == nullptr ? nullptr : prices->Find(*model);
  if (price == nullptr) {
    // An empty model: a failed reply before any reply named one, with the planner's default.
    const std::string name = model->empty() ? std::string("the planner's default model")
                                            : absl::StrCat("model \"", *model, "\"");
    return absl::NotFoundError(
        prices == nullptr
            ? absl::StrCat("the reply of ", name,
                           " cannot be priced: the router has no "
                           "--price_table")
            : absl::StrCat("the reply of ", name,
                           " cannot be priced: the router's --price_table has no row for it "
                           "and no `default` row"));
  }
  return CostUsd(*price, usage);
}

absl::Status CheckCostBudget(const rein::v1::RunSpec& spec, const PriceTable* prices,
                             absl::string_view budget_field) {
  const double budget = spec.limits().cost_budget_usd();
  if (budget == 0) return absl::OkStatus();
  if (prices == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        budget_field,
        ": this router has no price table (start it with --price_table=FILE), so it cannot keep "
        "a cost budget"));
  }
  const std::string& model = spec.model().model();
  if (!model.empty() && prices->Find(model) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.model.model: \"", model,
                     "\" has no price in the router's price table (and it has no `default` "
                     "row), so the run's cost budget cannot be kept"));
  }
  return absl::OkStatus();
}

}  // namespace rein
