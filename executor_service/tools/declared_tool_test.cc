// Tests of declared tools without running anything: the tool file's checks (each bad file is
// refused with its path and the problem) and the argv template (placeholders, optional and
// repeated elements, and argument values that try to become options or break out).
#include "executor_service/tools/declared_tool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "executor_service/tools/json_schema.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A valid tool file; tests change one thing in it.
json GrepFile() {
  return json::parse(R"({
    "name": "grep_lines",
    "description": "Lines of a file that match a fixed string.",
    "mutating": false,
    "timeout_seconds": 5,
    "input_schema": {
      "type": "object",
      "additionalProperties": false,
      "required": ["pattern", "path"],
      "properties": {
        "pattern": {"type": "string", "minLength": 1},
        "path": {"type": "string"},
        "ignore_case": {"type": "boolean", "default": false},
        "max": {"type": "integer", "minimum": 1},
        "extra": {"type": "array", "items": {"type": "string"}}
      }
    },
    "argv": ["grep", "-F",
             {"template": "-i", "when": "ignore_case"},
             {"template": "--max-count={max}", "optional": true},
             {"template": "--exclude={extra}", "each": true, "optional": true},
             "-e", "{pattern}", "--", {"template": "{path}", "allow_dash": true}]
  })");
}

absl::StatusOr<std::unique_ptr<DeclaredTool>> Parse(const json& file) {
  return DeclaredTool::Parse(file.dump(), "grep_lines.json", nullptr);
}

std::string ParseError(const json& file) {
  absl::StatusOr<std::unique_ptr<DeclaredTool>> tool = Parse(file);
  EXPECT_FALSE(tool.ok()) << file.dump();
  return tool.ok() ? "" : std::string(tool.status().message());
}

std::vector<std::string> Expand(const json& args) {
  absl::StatusOr<std::unique_ptr<DeclaredTool>> tool = Parse(GrepFile());
  EXPECT_TRUE(tool.ok()) << tool.status();
  absl::StatusOr<std::vector<std::string>> argv = (*tool)->ExpandArgv(args);
  EXPECT_TRUE(argv.ok()) << argv.status();
  return argv.ok() ? *argv : std::vector<std::string>{};
}

std::string ExpandError(const json& args) {
  absl::StatusOr<std::unique_ptr<DeclaredTool>> tool = Parse(GrepFile());
  EXPECT_TRUE(tool.ok()) << tool.status();
  absl::StatusOr<std::vector<std::string>> argv = (*tool)->ExpandArgv(args);
  EXPECT_FALSE(argv.ok()) << args.dump();
  EXPECT_EQ(argv.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(argv.status().message());
}

TEST(DeclaredToolTest, SpecComesFromTheFile) {
  absl::StatusOr<std::unique_ptr<DeclaredTool>> tool = Parse(GrepFile());
  ASSERT_TRUE(tool.ok()) << tool.status();
  const ToolSpec& spec = (*tool)->spec();
  EXPECT_EQ(spec.name, "grep_lines");
  EXPECT_EQ(spec.origin, "declared:grep_lines.json");
  EXPECT_FALSE(spec.mutating);
  EXPECT_TRUE(spec.spawns_process);  // counts against --max_concurrent
  EXPECT_EQ(spec.default_timeout, absl::Seconds(5));
  EXPECT_EQ(spec.input_schema["required"], json({"pattern", "path"}));
}

TEST(DeclaredToolTest, PlaceholdersFillWholeElementsAndOptionalOnesDrop) {
  EXPECT_EQ(Expand({{"pattern", "needle"}, {"path", "a b.txt"}, {"ignore_case", false}}),
            std::vector<std::string>({"grep", "-F", "-e", "needle", "--", "a b.txt"}));
  EXPECT_EQ(Expand({{"pattern", "x"},
                    {"path", "f"},
                    {"ignore_case", true},
                    {"max", 3},
                    {"extra", {"*.o", "*.a"}}}),
            std::vector<std::string>({"grep", "-F", "-i", "--max-count=3", "--exclude=*.o",
                                      "--exclude=*.a", "-e", "x", "--", "f"}));
  // An empty array expands to nothing.
  EXPECT_EQ(Expand({{"pattern", "x"}, {"path", "f"}, {"extra", json::array()}}).size(), 6u);
}

TEST(DeclaredToolTest, ShellSyntaxNewlinesAndSpacesStayOneLiteralArgument) {
  for (const std::string value :
       {"a; rm -rf /", "$(touch pwned)", "`id`", "x\ny", "a b c", "'\"", "x && y | z", "*"}) {
    std::vector<std::string> argv = Expand({{"pattern", value}, {"path", "f"}});
    ASSERT_EQ(argv.size(), 6u) << value;
    EXPECT_EQ(argv[3], value);
  }
}

TEST(DeclaredToolTest, AValueNeverBecomesAnOptionWhereTheTemplateDoesNotAllowIt) {
  EXPECT_EQ(ExpandError({{"pattern", "--files-with-matches"}, {"path", "f"}}),
            "args.pattern: must not start with '-' (it would be read as an option of "
            "grep_lines)");
  EXPECT_THAT(ExpandError({{"pattern", "-"}, {"path", "f"}}), HasSubstr("args.pattern"));
  // After a literal prefix the value cannot make an option: it is part of the element.
  EXPECT_EQ(Expand({{"pattern", "p"}, {"path", "f"}, {"max", 1}})[2], "--max-count=1");
  // The template allows it after "--" for the path.
  EXPECT_EQ(Expand({{"pattern", "p"}, {"path", "-rf"}}).back(), "-rf");
}

TEST(DeclaredToolTest, NulBytesAndOverlongValuesAreRefused) {
  EXPECT_EQ(ExpandError({{"pattern", std::string("a\0b", 3)}, {"path", "f"}}),
            "args.pattern: must not contain NUL bytes");
  EXPECT_THAT(ExpandError({{"pattern", std::string(200000, 'x')}, {"path", "f"}}),
              HasSubstr("at most 131071"));
  EXPECT_THAT(ExpandError({{"pattern", "p"}, {"path", "f"}, {"extra", {std::string("\0", 1)}}}),
              HasSubstr("args.extra[0]: must not contain NUL"));
  json many = json::array();
  for (int i = 0; i < 5000; ++i) many.push_back("e");
  EXPECT_THAT(ExpandError({{"pattern", "p"}, {"path", "f"}, {"extra", many}}),
              HasSubstr("4096 arguments"));
}

TEST(DeclaredToolTest, BracesEscapeAndPlaceholdersMayShareAnElement) {
  json file = GrepFile();
  file["argv"] = {"printf", "{{{pattern}}}:{path}"};
  absl::StatusOr<std::unique_ptr<DeclaredTool>> tool = Parse(file);
  ASSERT_TRUE(tool.ok()) << tool.status();
  absl::StatusOr<std::vector<std::string>> argv =
      (*tool)->ExpandArgv({{"pattern", "-p"}, {"path", "f"}});
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_EQ(*argv, std::vector<std::string>({"printf", "{-p}:f"}));
}

TEST(DeclaredToolTest, EachBadFileIsRefusedNamingTheProblem) {
  json file = GrepFile();
  file["shell"] = "grep x";
  EXPECT_THAT(ParseError(file), HasSubstr("unknown key \"shell\""));
  file = GrepFile();
  file.erase("mutating");
  EXPECT_EQ(ParseError(file), "mutating: is required");
  file = GrepFile();
  file["name"] = "grep lines";
  EXPECT_THAT(ParseError(file), HasSubstr("is not a valid tool name"));
  file["name"] = std::string(65, 'a');
  EXPECT_THAT(ParseError(file), HasSubstr("is not a valid tool name"));
  file = GrepFile();
  file["input_schema"] = {{"type", "array"}};
  EXPECT_THAT(ParseError(file), HasSubstr("input_schema: must be an object schema"));
  file = GrepFile();
  file["input_schema"] = "object";
  EXPECT_THAT(ParseError(file), HasSubstr("input_schema: must be an object schema"));
  file = GrepFile();
  file["input_schema"]["properties"]["path"]["pattern"] = "^[a-z]+$";
  EXPECT_EQ(ParseError(file),
            "input_schema.properties.path: unsupported keyword \"pattern\" (the validator "
            "would not enforce it)");
  file = GrepFile();
  file["input_schema"]["properties"]["max"]["default"] = 0;
  EXPECT_THAT(ParseError(file), HasSubstr("input_schema.properties.max.default: must be"));
  file = GrepFile();
  file["argv"][6] = "{patern}";
  EXPECT_EQ(ParseError(file),
            "argv[6]: placeholder {patern} is not a property of input_schema.properties");
  file = GrepFile();
  file["argv"][3] = "--max-count={max}";  // max is not required: the element must be optional
  EXPECT_THAT(ParseError(file), HasSubstr("argv[3]: placeholder {max} may be absent"));
  file = GrepFile();
  file["argv"][4] = "{extra}";  // an array needs "each"
  EXPECT_THAT(ParseError(file), HasSubstr("argv[4]: placeholder {extra} must have type"));
  file = GrepFile();
  file["argv"][6] = "{pattern";
  EXPECT_THAT(ParseError(file), HasSubstr("argv[6]: a '{' without its '}'"));
  file = GrepFile();
  file["argv"][2]["if"] = "ignore_case";
  EXPECT_THAT(ParseError(file), HasSubstr("argv[2]: unknown key \"if\""));
  for (const json& bad : {json(0), json(601), json("30"), json(2.5)}) {
    file = GrepFile();
    file["timeout_seconds"] = bad;
    EXPECT_EQ(ParseError(file), "timeout_seconds: must be an integer between 1 and 600");
  }
  file = GrepFile();
  file["argv"][0] = "{pattern}";
  EXPECT_THAT(ParseError(file), HasSubstr("argv[0]: the program must be fixed"));
  file["argv"][0] = "bin/grep";
  EXPECT_THAT(ParseError(file), HasSubstr("give an absolute path or a bare name"));
  file["argv"][0] = "/opt/rein-no-such/grep";
  EXPECT_THAT(ParseError(file), HasSubstr("is outside what the sandbox shows"));
  file["argv"][0] = "/usr/bin/rein-no-such-program";
  EXPECT_THAT(ParseError(file), HasSubstr("does not exist or is not an executable file"));
  EXPECT_THAT(
      std::string(DeclaredTool::Parse("{\"name\": \"a\", \"name\": \"b\"}", "x.json", nullptr)
                      .status()
                      .message()),
      HasSubstr("key \"name\" is given twice"));
  EXPECT_THAT(std::string(DeclaredTool::Parse("{\"name\": ", "x.json", nullptr).status().message()),
              HasSubstr("not valid JSON"));
}

class ToolsDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/tools-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
    ASSERT_TRUE(RegisterReadOnlyTools(&registry_).ok());
  }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(absl::StrCat(dir_, "/", name)) << text;
  }

  std::string LoadError() {
    absl::Status status = LoadDeclaredTools(dir_, nullptr, &registry_);
    EXPECT_FALSE(status.ok());
    return std::string(status.message());
  }

  std::string dir_;
  ToolRegistry registry_;
};

TEST_F(ToolsDirTest, LoadsEveryFileAndSkipsHiddenOnes) {
  Write("grep.json", GrepFile().dump());
  json other = GrepFile();
  other["name"] = "grep2";
  Write("other.json", other.dump());
  Write(".grep.json.swp", "not json");
  ASSERT_TRUE(LoadDeclaredTools(dir_, nullptr, &registry_).ok());
  ASSERT_NE(registry_.Find("grep2"), nullptr);
  EXPECT_EQ(registry_.Find("grep2")->spec().origin, "declared:other.json");
  EXPECT_EQ(registry_.Find("read_file")->spec().origin, "builtin");
  // The built-in schemas keep to the subset declared tools are held to.
  for (const Tool* tool : registry_.tools()) {
    EXPECT_TRUE(CheckSupportedSchema(tool->spec().input_schema).ok()) << tool->spec().name;
  }
}

TEST_F(ToolsDirTest, ABadFileIsRefusedWithItsPath) {
  Write("a.json", GrepFile().dump());
  Write("b.json", "{\"name\": \"x\",}");
  EXPECT_THAT(LoadError(), HasSubstr(absl::StrCat(dir_, "/b.json: not valid JSON")));
}

TEST_F(ToolsDirTest, DuplicateNamesAndBuiltinClashesAreRefused) {
  Write("a.json", GrepFile().dump());
  Write("b.json", GrepFile().dump());
  EXPECT_EQ(LoadError(), absl::StrCat(dir_,
                                      "/b.json: tool grep_lines is already registered "
                                      "(declared:a.json)"));
}

TEST_F(ToolsDirTest, ABuiltinNameIsTaken) {
  json file = GrepFile();
  file["name"] = "read_file";
  Write("read.json", file.dump());
  EXPECT_EQ(LoadError(),
            absl::StrCat(dir_, "/read.json: tool read_file is already registered (builtin)"));
}

TEST_F(ToolsDirTest, OtherEntriesAndAMissingDirectoryAreRefused) {
  Write("notes.txt", "hello");
  EXPECT_THAT(LoadError(), HasSubstr("notes.txt: not a tool file"));
  EXPECT_THAT(std::string(LoadDeclaredTools(dir_ + "/missing", nullptr, &registry_).message()),
              HasSubstr("cannot open the directory"));
}

}  // namespace
}  // namespace rein
