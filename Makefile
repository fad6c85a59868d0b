# The two commands of the README: `make demo` and `make test`.
SHELL := /bin/bash
# ccache (scripts/install-deps.sh) hashes paths under the checkout relative
# to it: a second checkout takes llama.cpp's objects from the first.
export CCACHE_BASEDIR := $(CURDIR)
# PHP=8.4 builds and tests against PHP 8.4 in a Debian 13 root (make php84,
# scripts/in-php84.sh); PHP=8.3 and PHP=8.3-zts against PHP 8.3.0 built from
# source (make php83, make php83-zts: target/php-8.3/, target/php-8.3-zts/);
# any other value is the PHP binary to use (default: the machine's own,
# Debian 12's 8.2).
PHP ?= php
# Not for cargo: ext-php-rs reads PHP from the environment as the path of the
# PHP binary to build for.
unexport PHP
ifeq ($(PHP),8.4)
IN_ROOT := bash scripts/in-php84.sh
# The host's PHPUnit 9.6 (what the suite is written for), mounted in the root.
PHP_BIN := php -d include_path=.:/opt/host-php/share
PHPUNIT := /opt/host-php/phpunit --prepend $(CURDIR)/tests-php/support/phpunit-preload.php
CARGO_TARGET_DIR_FOR_PHP := $(CURDIR)/target/php-8.4/cargo
EXT := $(CURDIR)/target/php-8.4/infer.so
else ifneq ($(filter 8.3 8.3-zts,$(PHP)),)
IN_ROOT :=
PHP_ROOT := $(CURDIR)/target/php-$(PHP)
# Debian's PHPUnit 9.6 (/usr/share/php), run by the PHP built from source.
PHP_BIN := $(PHP_ROOT)/bin/php -d include_path=.:/usr/share/php
PHPUNIT := /usr/bin/phpunit
EXT := $(PHP_ROOT)/infer.so
else
IN_ROOT :=
PHP_BIN := $(PHP)
PHPUNIT ?= $(shell command -v phpunit 2>/dev/null || echo /usr/bin/phpunit)
EXT := $(CURDIR)/target/release/libinfer.so
endif
# The PHPUnit groups a PHP leaves out: a thread-safe PHP has no PHP-FPM, and
# the Apache tests need the thread-safe PHP (phpunit.xml.dist leaves them out;
# a command line's own --exclude-group replaces that, so each list names it).
ifeq ($(PHP),8.3-zts)
PHPUNIT_EXCLUDE := --exclude-group fpm
QUICK_EXCLUDE := second-model,slow,fpm
# The Apache tests use llama-server (the shared server from threads).
QUICK_NEEDS := llama-server
else
PHPUNIT_EXCLUDE :=
QUICK_EXCLUDE := second-model,slow,apache
QUICK_NEEDS :=
endif
MODEL_FILE := models/SmolLM2-135M-Instruct.Q4_1.gguf
# Point INFER_MODEL at another GGUF file to run the demo and the tests on it.
INFER_MODEL ?= $(CURDIR)/$(MODEL_FILE)
export INFER_MODEL
# The embedding model (all-MiniLM-L6-v2, converted to GGUF by make embedding-model).
EMBEDDING_MODEL_FILE := models/all-MiniLM-L6-v2.F16.gguf
INFER_EMBEDDING_MODEL ?= $(CURDIR)/$(EMBEDDING_MODEL_FILE)
export INFER_EMBEDDING_MODEL
# Models with other chat-template families, fetched only for the tests that
# use them (tool calls, template renderings): make qwen-model gemma-model.
QWEN_MODEL_FILE := models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
INFER_QWEN_MODEL ?= $(CURDIR)/$(QWEN_MODEL_FILE)
export INFER_QWEN_MODEL
GEMMA_MODEL_FILE := models/gemma-3-270m-q4_k_m.gguf
INFER_GEMMA_MODEL ?= $(CURDIR)/$(GEMMA_MODEL_FILE)
export INFER_GEMMA_MODEL
# The test asset of images in: a projector for the default model, made from its
# own weights by scripts/make-colour-mmproj.py (make vision-model), and llama.cpp's
# llama-mtmd-cli, its judge (make llama-mtmd-cli).
VISION_MODEL_FILE := models/SmolLM2-135M-colour-mmproj.gguf
LORA_MODEL_FILE := models/SmolLM2-135M-test-lora.gguf
INFER_LORA_MODEL ?= $(CURDIR)/$(LORA_MODEL_FILE)
export INFER_LORA_MODEL
INFER_VISION_MODEL ?= $(CURDIR)/$(VISION_MODEL_FILE)
export INFER_VISION_MODEL
INFER_LLAMA_MTMD_CLI ?= $(CURDIR)/target/llama-server/bin/llama-mtmd-cli
export INFER_LLAMA_MTMD_CLI
# llama.cpp's llama-server, for the tests and benchmarks of Model::connect()
# (built by scripts/build-llama-server.sh from the llama.cpp the extension links).
INFER_LLAMA_SERVER ?= $(CURDIR)/target/llama-server/bin/llama-server
export INFER_LLAMA_SERVER
# xgrammar (vLLM's and SGLang's grammar engine), the judge of the grammars
# Model::connect() sends them (tests/xgrammar_dialect.rs).
INFER_XGRAMMAR_PYTHON ?= $(CURDIR)/target/xgrammar-venv/bin/python
export INFER_XGRAMMAR_PYTHON
# The tests (Rust and PHP) read both paths from here.
INFER_EXTENSION := $(EXT)
export INFER_EXTENSION
# GPU=cuda, GPU=vulkan or GPU=metal builds llama.cpp's GPU backend into the
# extension (make build/demo/test/bench GPU=cuda); empty: the portable CPU build.
GPU ?=
ifneq ($(filter-out cuda vulkan metal,$(GPU)),)
$(error GPU must be cuda, vulkan or metal, not "$(GPU)")
endif
GPU_FEATURES := $(if $(GPU),--features $(GPU),)
# The core (engine, converter, checker) without the PHP binding.
CORE := --no-default-features --features engine $(GPU_FEATURES)
PHP_WITH_EXT := $(IN_ROOT) $(PHP_BIN) -d extension=$(EXT)
# Each step of `make test` (builds, downloads, suites) is timed: under
# `make test` (INFER_TIMING, set below for it and what it builds) a line per
# step goes to target/test-parts.tsv and its output to target/test-logs/;
# elsewhere the command only runs.
TIMED := bash scripts/timed.sh

.PHONY: demo test test-begin test-scripts test-times test-quick test-php-quick deps php84 php83 php83-zts build dist test-dist model embedding-model qwen-model gemma-model vision-model lora-model llama-server llama-mtmd-cli xgrammar test-rust test-php lint install clean bench bench-schema bench-compliance bench-perf bench-convert bench-memory bench-concurrency bench-constraints bench-fpm bench-many bench-deadline bench-stream bench-embed bench-template bench-reasoning bench-remote bench-prompt-cache bench-prompt-store bench-php-versions bench-shared-model bench-fast-forward bench-shared-server bench-idle-pool bench-shared-state bench-lookup bench-apache bench-zts bench-vision bench-sampling bench-lora

demo: build model embedding-model vision-model lora-model
	$(PHP_WITH_EXT) examples/demo.php

# Each part of `make test` is timed (scripts/timed.sh writes
# target/test-parts.tsv), and the last lines say what each cost: tests run,
# failures, seconds (scripts/test-times.py; `make test-times` again).
ifneq ($(filter 8.4 8.3 8.3-zts,$(PHP)),)
# The core's Rust tests hold no PHP: they run once, with the machine's PHP.
test: test-begin build model test-php
	@python3 scripts/test-times.py
else
test: test-begin build model test-rust test-scripts test-php
	@python3 scripts/test-times.py
endif

test: export INFER_TIMING = 1

test-begin:
	@mkdir -p target && rm -rf target/test-parts.tsv target/test-logs

# The scripts' own tests: the machine's cache of PHP builds (a stand-in
# PHP source tree, seconds).
test-scripts:
	$(TIMED) "scripts (build cache)" bash scripts/test-build-cache.sh

test-times:
	@python3 scripts/test-times.py $(if $(wildcard target/ci-steps.log),--log target/ci-steps.log)

# The edit-test loop (TESTING.md): the library's unit tests, and the PHP tests
# that need only the default model (not Qwen, Gemma or llama-server) and are
# not among the slowest (group slow: the load tests and the big batches).
test-quick: build model embedding-model
	cargo test --release $(CORE) --lib -- --test-threads=1
	$(MAKE) test-php-quick

# The quick PHP tests alone: what CI runs on each PHP besides the machine's
# (whose whole suite, and the Rust tests, run once).
# BINDING_ONLY=1 (CI's runs on the PHPs besides the machine's) also leaves
# out group engine: classes whose subject is the engine, which no PHP
# version changes (the machine's PHP runs them in the whole suite).
ifeq ($(BINDING_ONLY),1)
QUICK_EXCLUDE := $(QUICK_EXCLUDE),engine
endif

test-php-quick: build model embedding-model $(QUICK_NEEDS)
	$(PHP_WITH_EXT) $(PHPUNIT) -c phpunit.xml.dist --exclude-group $(QUICK_EXCLUDE)

deps:
	@bash scripts/install-deps.sh

# The Debian 13 root with PHP 8.4 (idempotent).
php84:
	@$(TIMED) "PHP 8.4 root" bash scripts/php84-root.sh

# PHP 8.3.0 built from ../shared/php-src, once per machine (scripts/build-php.sh:
# cached outside the checkout, keyed by the sources and the flags).
php83:
	@$(TIMED) "PHP 8.3" bash scripts/build-php.sh 8.3

php83-zts:
	@$(TIMED) "PHP 8.3 thread-safe" bash scripts/build-php.sh 8.3-zts

ifeq ($(PHP),8.4)
# Built inside the root against its PHP 8.4 (its own target directory: the
# bindings differ), then left at target/php-8.4/infer.so.
build: deps php84
	$(TIMED) "build: extension" $(IN_ROOT) env CARGO_TARGET_DIR=$(CARGO_TARGET_DIR_FOR_PHP) cargo build --release $(GPU_FEATURES)
	cp $(CARGO_TARGET_DIR_FOR_PHP)/release/libinfer.so $(EXT).tmp && mv $(EXT).tmp $(EXT)
	cp $(CARGO_TARGET_DIR_FOR_PHP)/release/infer-serve $(dir $(EXT))infer-serve.tmp && mv $(dir $(EXT))infer-serve.tmp $(dir $(EXT))infer-serve
else ifneq ($(filter 8.3 8.3-zts,$(PHP)),)
# Built in the project's own target directory, so llama.cpp is compiled once
# for every PHP: only ext-php-rs's bindings and the crate itself are built
# again for another PHP (ext-php-rs reads PHP and PHP_CONFIG). The result is
# copied out, beside that PHP.
build: deps php$(subst .,,$(PHP))
	$(TIMED) "build: extension" env PHP=$(PHP_ROOT)/bin/php PHP_CONFIG=$(PHP_ROOT)/bin/php-config cargo build --release $(GPU_FEATURES)
	cp target/release/libinfer.so $(EXT).tmp && mv $(EXT).tmp $(EXT)
	cp target/release/infer-serve $(PHP_ROOT)/infer-serve.tmp && mv $(PHP_ROOT)/infer-serve.tmp $(PHP_ROOT)/infer-serve
else
# The machine's PHP's build is also copied to target/php-host/, where make
# dist finds it after builds for other PHPs have taken target/release/.
build: deps
	$(TIMED) "build: extension" cargo build --release $(GPU_FEATURES)
	mkdir -p target/php-host
	cp target/release/libinfer.so target/php-host/infer.so.tmp && mv target/php-host/infer.so.tmp target/php-host/infer.so
	cp target/release/infer-serve target/php-host/infer-serve.tmp && mv target/php-host/infer-serve.tmp target/php-host/infer-serve
endif

model:
	@$(TIMED) "model: SmolLM2-135M" bash scripts/fetch-model.sh smollm2 $(MODEL_FILE)

embedding-model: deps
	@$(TIMED) "model: all-MiniLM-L6-v2" bash scripts/fetch-embedding-model.sh $(EMBEDDING_MODEL_FILE)

qwen-model:
	@$(TIMED) "model: Qwen2.5-Coder-0.5B" bash scripts/fetch-model.sh qwen $(QWEN_MODEL_FILE)

gemma-model:
	@$(TIMED) "model: Gemma 3 270M" bash scripts/fetch-model.sh gemma $(GEMMA_MODEL_FILE)

vision-model: deps model
	@$(TIMED) "asset: colour projector" bash scripts/make-test-asset.sh make-colour-mmproj.py 2aa2d4b29302c790413d1bc3ac56ff096c9d0ee605a4f50a05d9a1e799fd5f2f $(VISION_MODEL_FILE) $(MODEL_FILE)

# A LoRA adapter for the default model that favours " banana" (the sampling
# tests' adapter; scripts/make-test-lora.py says how).
lora-model: deps model
	@$(TIMED) "asset: LoRA adapter" bash scripts/make-test-asset.sh make-test-lora.py 9a3f46371861f386c1348f9b50c0a618ee0ce994283c98a1abb001f7bf21e985 $(LORA_MODEL_FILE) $(MODEL_FILE)

xgrammar:
	@$(TIMED) "download: xgrammar environment" bash scripts/xgrammar-venv.sh >/dev/null

test-rust: deps model qwen-model gemma-model xgrammar
	python3 scripts/import-circles.py
	# One test at a time: tests that run the model each start llama.cpp threads,
	# and oversubscribed cores make its spinning barriers crawl. The library's,
	# the binary's and the integration tests only: the benchmark examples (each
	# links llama.cpp with LTO, 2 min of building) are compiled by `make lint`'s
	# clippy and by their `make bench-*`, and the crate has no doctests.
	$(TIMED) "build: rust tests" cargo test --release $(CORE) --lib --tests --no-run
	$(TIMED) "build: rust tests (infer-shared)" cargo test --release -p infer-shared --no-run
	$(TIMED) "rust (core)" cargo test --release $(CORE) --lib --tests -- --test-threads=1
	$(TIMED) "rust (infer-shared)" cargo test --release -p infer-shared

# After the extension's build: it links the libraries that build compiled.
ifeq ($(PHP),8.4)
llama-server:
	$(MAKE) llama-server PHP=php
else
llama-server: build
	@$(TIMED) "build: llama-server" bash scripts/build-llama-server.sh
endif

# After the extension's build: it links the libraries that build compiled.
ifeq ($(PHP),8.4)
llama-mtmd-cli:
	$(MAKE) llama-mtmd-cli PHP=php
else
llama-mtmd-cli: build
	@$(TIMED) "build: llama-mtmd-cli" bash scripts/build-llama-mtmd-cli.sh
endif

test-php: build model embedding-model qwen-model gemma-model vision-model lora-model llama-server llama-mtmd-cli
	$(TIMED) "php suite" $(PHP_WITH_EXT) $(PHPUNIT) -c phpunit.xml.dist $(PHPUNIT_EXCLUDE) --log-junit $(CURDIR)/target/phpunit.xml

lint:
	cargo fmt --all --check
	@# A script the docs tell a reader to run keeps its run bit in git.
	@bad=$$(git ls-files -s scripts bench examples .ci | while read -r mode _ _ f; do \
		[ "$$mode" = 100755 ] || ! head -c2 "$$f" | grep -q '#!' || echo "$$f"; done); \
	if [ -n "$$bad" ]; then echo "scripts with a #! line but no run bit in git (git update-index --chmod=+x):" $$bad; exit 1; fi
	python3 scripts/import-circles.py
	cargo clippy --release -p infer-shared --all-targets -- -D warnings
	cargo clippy --release --all-targets -- -D warnings
	cargo clippy --release $(CORE) --all-targets -- -D warnings
	cargo clippy --release --no-default-features --lib -- -D warnings

# Benchmarks (figures go to docs/benchmarks/, indexed by BENCHMARKS.md); they read ../shared/data.
MASKBENCH ?= ../shared/data/maskbench-visible.jsonl

bench: bench-schema bench-compliance bench-convert bench-perf bench-memory bench-concurrency bench-constraints bench-fpm bench-many bench-deadline bench-stream bench-embed bench-template bench-reasoning bench-remote bench-prompt-cache bench-prompt-store bench-php-versions bench-shared-model bench-fast-forward bench-shared-server bench-idle-pool bench-shared-state bench-lookup bench-apache bench-zts bench-vision bench-sampling bench-lora

bench-schema: deps model
	cargo run --release $(CORE) --example maskbench -- $(MASKBENCH) $(INFER_MODEL)
	cargo run --release $(CORE) --example maskbench -- $(MASKBENCH) $(INFER_MODEL) --json-schema-defaults

bench-compliance: deps model
	cargo run --release $(CORE) --example compliance -- $(MASKBENCH) $(INFER_MODEL)

bench-convert: deps
	cargo run --release $(CORE) --example convert_speed -- $(MASKBENCH)

# Generation speed against llama.cpp's llama-completion and llama-bench, built once by
# bench/build-llama-tools.sh into target/llama-tools (needs PyPI for the sdist).
BENCH_THREADS ?= $(shell nproc)
bench-perf: build model
	bash bench/build-llama-tools.sh
	$(PHP_WITH_EXT) bench/perf.php $(INFER_MODEL) target/llama-tools/bin $(BENCH_THREADS)

# Copy the extension into PHP's extension directory and enable it.
# The extension, and beside it what the shared server (php.ini
# infer.server_model) runs: llama-server, built from the llama.cpp the
# extension links, as infer-llama-server, and its supervisor infer-serve.
install: build llama-server
	$(IN_ROOT) bash -c 'dir="$$(php-config --extension-dir)" && install -m 0755 $(EXT) "$$dir/infer.so" && install -m 0755 $(dir $(EXT))infer-serve "$$dir/infer-serve" && install -m 0755 $(INFER_LLAMA_SERVER) "$$dir/infer-llama-server"'
	@echo "Add 'extension=infer.so' to your php.ini (or a conf.d file) to enable it."

clean:
	cargo clean

# The archives PIE installs as pre-packaged binaries, one per PHP built (make
# build, make build PHP=8.4|8.3|8.3-zts), in dist/; test-dist installs each
# into its PHP's extension directory and runs the demo with it. Each build is
# taken from where its make build left a copy (target/php-host/ for the
# machine's PHP, made first when there is none); a build older than the
# sources is refused, not packaged.
dist: $(if $(wildcard target/php-host/infer.so),,build)
	@bash scripts/dist.sh

test-dist: dist model embedding-model vision-model lora-model
	bash scripts/test-dist.sh

# Resident memory over 2,000 mixed calls and 200 load/close cycles.
bench-memory: build model
	$(PHP_WITH_EXT) bench/memory.php $(INFER_MODEL)

# Aggregate tokens/s of 1, 2, 4 and 8 processes generating at once,
# at default settings, against one alone in the same run.
bench-concurrency: build model
	$(PHP_WITH_EXT) bench/concurrency.php $(INFER_MODEL) --workers 1,2,4,8

# Per-token cost of generating under realistic schemas against free
# decoding of as many tokens from the same prompt.
bench-constraints: build model
	$(PHP_WITH_EXT) bench/constraint_cost.php $(INFER_MODEL)

# An extraction endpoint under PHP-FPM (2 workers) with persistent
# models against Model::load() per request and an in-process warm call, and
# the workers' resident memory over 2,000 persistent requests.
bench-fpm: build model
	$(PHP_WITH_EXT) bench/fpm_endpoint.php $(INFER_MODEL) --requests 120 --memory-requests 2000

# chatMany() of 8 and 32 prompts (~64 prompt tokens, 48 generated) against
# sequential chat() calls and llama.cpp's llama-batched-bench.
bench-many: build model
	bash bench/build-llama-tools.sh
	$(PHP_WITH_EXT) bench/chat_many.php $(INFER_MODEL) target/llama-tools/bin $(BENCH_THREADS)

# How long after its deadline (option timeout) a call returns,
# against one generated token and one prompt batch of the same run.
bench-deadline: build model
	$(PHP_WITH_EXT) bench/deadline.php $(INFER_MODEL)

bench-stream: build model
	$(PHP_WITH_EXT) bench/stream.php $(INFER_MODEL)

bench-template: build model
	$(PHP_WITH_EXT) bench/template.php $(INFER_MODEL)

bench-reasoning: build model
	$(PHP_WITH_EXT) bench/reasoning.php $(INFER_MODEL)

bench-embed: build model embedding-model
	bash bench/build-llama-tools.sh
	$(PHP_WITH_EXT) bench/embeddings.php $(INFER_EMBEDDING_MODEL) $(dir $(INFER_EMBEDDING_MODEL))minilm-rank-test.F16.gguf $(INFER_MODEL) target/llama-tools/bin $(BENCH_THREADS)

# Model::connect() to a local llama-server against in-process:
# overhead per call (extraction example), and aggregate tokens/s of 1-8
# concurrent clients (server slots vs in-process workers on the same cores).
# In-process persistent PHP-FPM workers against the installation's shared
# llama-server (['shared' => true]) at 1, 4, 8 and 16 concurrent requests,
# SmolLM2 and Qwen2.5-Coder-0.5B (docs/production.md, "In-process or server?").
bench-shared-server: build model qwen-model llama-server
	$(PHP_WITH_EXT) bench/shared_server.php $(INFER_MODEL) $(INFER_LLAMA_SERVER)
	$(PHP_WITH_EXT) bench/shared_server.php $(INFER_QWEN_MODEL) $(INFER_LLAMA_SERVER)

bench-remote: build model llama-server
	$(PHP_WITH_EXT) bench/remote.php $(INFER_MODEL) $(INFER_LLAMA_SERVER)

bench-prompt-cache: build model llama-server
	$(PHP_WITH_EXT) bench/prompt_cache.php $(INFER_MODEL) $(INFER_LLAMA_SERVER)

# PHP 8.4 against 8.2: the same extension built for each, a warm chat and the
# extraction example, alternating blocks.
bench-php-versions: build model
	$(MAKE) build PHP=8.4
	$(PHP_WITH_EXT) bench/php_versions.php $(INFER_MODEL) 6

# The shared prompt store: a 1,500-token prefix loaded against evaluated, the
# cost per token for SmolLM2 and Qwen2.5-Coder-0.5B, and PHP-FPM with 4
# workers and 8 system prompts with and without it.
bench-prompt-store: build model qwen-model
	$(PHP_WITH_EXT) bench/prompt_store.php $(INFER_MODEL) $(INFER_QWEN_MODEL)

# Fast-forward decoding: the extraction call on/off and against llama.cpp's
# CLI, realistic schemas against free decoding, chatMany() of 32 prompts;
# SmolLM2 and Qwen2.5-Coder-0.5B. Then answers on and off judged against
# the known answers of 120 generated extraction cases (three models).
bench-fast-forward: build model qwen-model gemma-model
	bash bench/build-llama-tools.sh
	$(PHP_WITH_EXT) bench/fast_forward.php $(INFER_MODEL) target/llama-tools/bin $(BENCH_THREADS)
	$(PHP_WITH_EXT) bench/fast_forward.php $(INFER_QWEN_MODEL) target/llama-tools/bin $(BENCH_THREADS)
	@echo "| model | cases | fields right, on | off | records right, on / off | fields right only on / only off | same text | forced |"
	@echo "|---|--:|--:|--:|--:|--:|--:|--:|"
	for m in $(INFER_MODEL) $(INFER_QWEN_MODEL) $(INFER_GEMMA_MODEL); do $(PHP_WITH_EXT) bench/fast_forward_quality.php $$m 120 7 || exit 1; done

# Several threads sharing one model (as thread-safe PHP runs requests)
# against one thread making the same calls: aggregate tokens/s.
bench-shared-model: deps model qwen-model
	cargo run --release --no-default-features --features engine --example shared_model -- $(INFER_MODEL) 2 4
	cargo run --release --no-default-features --features engine --example shared_model -- $(INFER_QWEN_MODEL) 2 4

bench-idle-pool: build model
	$(PHP_WITH_EXT) bench/idle_pool.php $(INFER_MODEL) $(BENCH_THREADS)

# What the hardening of the shared state costs (issue 47): the prompt store's
# lookup with 10,000 entries in its directory, and a shared load (a start,
# the first load of a process, the later loads). BEFORE_EXT: an earlier
# build's infer.so (with its infer-serve beside it), measured in the same run.
bench-shared-state: build model llama-server
	cargo run --release $(CORE) --example store_lookup -- 10000 20
	$(PHP_BIN) bench/shared_load.php $(INFER_MODEL) $(INFER_LLAMA_SERVER) $(BEFORE_EXT) $(EXT)

# Prompt lookup (option `lookup`) against the same calls without it and
# against llama.cpp's own llama-lookup (bench/lookup.php;
# docs/benchmarks/decoding.md, "Prompt lookup").
# What each sampler and the log-probabilities cost per token, against the
# default chain; drawing under a schema against greedy.
bench-sampling: build model
	$(PHP_WITH_EXT) bench/sampling.php $(INFER_MODEL) $(BENCH_THREADS)

bench-lora: build model lora-model llama-server
	$(PHP_WITH_EXT) bench/lora.php $(INFER_MODEL) $(INFER_LORA_MODEL) $(BENCH_THREADS) 7 $(INFER_LLAMA_SERVER)

bench-lookup: build model qwen-model
	bash bench/build-llama-tools.sh
	$(PHP_WITH_EXT) bench/lookup.php $(INFER_MODEL) target/llama-tools/bin $(BENCH_THREADS)
	$(PHP_WITH_EXT) bench/lookup.php $(INFER_QWEN_MODEL) target/llama-tools/bin $(BENCH_THREADS) 3

# Apache's event MPM (one child, N threads, the thread-safe PHP 8.3 module)
# against PHP-FPM (N workers, the non-thread-safe build), persistent models,
# N = 4 and 8, SmolLM2 and Qwen (bench/apache_fpm.php; docs/benchmarks/
# php-versions.md, "Threads against processes").
bench-apache: model qwen-model
	$(MAKE) build PHP=8.3-zts
	$(MAKE) build PHP=8.3
	INFER_EXTENSION=$(CURDIR)/target/php-8.3/infer.so target/php-8.3/bin/php -d include_path=.:/usr/share/php -d extension=$(CURDIR)/target/php-8.3/infer.so bench/apache_fpm.php $(INFER_MODEL) $(CURDIR)/target/php-8.3-zts/infer.so 4,8 48
	INFER_EXTENSION=$(CURDIR)/target/php-8.3/infer.so target/php-8.3/bin/php -d include_path=.:/usr/share/php -d extension=$(CURDIR)/target/php-8.3/infer.so bench/apache_fpm.php $(INFER_QWEN_MODEL) $(CURDIR)/target/php-8.3-zts/infer.so 4,8 24

# One request on the thread-safe PHP 8.3 against the same on the
# non-thread-safe one (bench/zts_cost.php).
# Images in: a chat about an image against llama.cpp's llama-mtmd-cli, and a
# second question about the same image against the first (issue 51).
bench-vision: build vision-model llama-mtmd-cli
	$(PHP_WITH_EXT) bench/vision.php $(INFER_MODEL) $(INFER_VISION_MODEL) $(INFER_LLAMA_MTMD_CLI) $(BENCH_THREADS) 7

bench-zts: model
	$(MAKE) build PHP=8.3-zts
	$(MAKE) build PHP=8.3
	php bench/zts_cost.php $(INFER_MODEL) target/php-8.3/bin/php target/php-8.3/infer.so target/php-8.3-zts/bin/php target/php-8.3-zts/infer.so 6
