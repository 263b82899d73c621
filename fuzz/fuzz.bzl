"""rein_fuzz_test: one fuzz target (a .cc with only LLVMFuzzerTestOneInput), declared once.

Under plain `bazel test` (gcc) the target links //fuzz:fuzz_driver and runs as a cc_test: the
seed corpus, then a bounded number of deterministic mutations of it. Under --config=fuzz
(clang, see .bazelrc) the same target links libFuzzer instead; `./dev fuzz SECONDS` runs it.

The seed corpus is the directory `corpus` (default fuzz/corpus/<name without _test>) of the
calling package, one input per file; a crash found by libFuzzer is added there as a regression.
"""

def rein_fuzz_test(name, srcs, deps = [], corpus = None, tags = [], size = "small", **kwargs):
    if corpus == None:
        base = name[:-len("_test")] if name.endswith("_test") else name
        corpus = "fuzz/corpus/" + base
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//fuzz:libfuzzer": [],
            "//conditions:default": ["//fuzz:fuzz_driver"],
        }),
        linkopts = select({
            "//fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        data = native.glob([corpus + "/**"]),
        # The driver (and ./dev fuzz) read the corpus from this runfiles-relative directory.
        args = [native.package_name() + "/" + corpus],
        tags = ["fuzz", "fault"] + tags,
        size = size,
        **kwargs
    )
