# The two commands: `make demo` and `make test`. Everything installs what it needs first.
SWIFT ?= swift
APT_PACKAGES := libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev libpq-dev pkg-config ffmpeg curl openssl python3 tmux
# Only the tests need these: schemathesis' virtualenv, the dashboard's headless browser, and the
# PostgreSQL server the store tests start in a temporary folder (TestKit's TestPostgres) and the nginx
# the balancer test puts in front of two instances; gnutls-cli (the TLS profile's test) and testssl.sh.
TEST_APT_PACKAGES := python3-venv chromium iproute2 postgresql nginx gnutls-bin testssl.sh \
	gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav

# At most this many tests run at once (Swift Testing's own limit; unset, it starts every test at
# once). The suite's tests mostly wait on servers, children and timers, but many do seconds of
# synchronous work; 672 of them started together on a 2-core machine keep the two threads of
# Swift's cooperative pool busy for minutes under load, and a test's timer or reader waits behind
# them past its ceiling. 8 keeps the suite as fast on a quiet machine (docs/testing.md: Tests on a loaded
# machine). Exported, so scripts/stress-test.sh and test-tsan run the same way.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 8

.PHONY: deps test-deps build docs test test-api test-tls test-stress test-tsan serve demo fixtures bench-server fuzz soak clean

deps:
	@scripts/install-deps.sh $(APT_PACKAGES)

test-deps:
	@scripts/install-deps.sh $(APT_PACKAGES) $(TEST_APT_PACKAGES)

build: deps
	$(SWIFT) build

# The DocC reference of the products an app imports: landing pages, the articles (Getting started,
# Licenses and expiry, Downloading on a bad network, Porting from Brightcove) and every public symbol,
# from the catalogs beside the sources (*.docc). Any warning, a broken symbol link say, fails it.
# Archives in .build/plugins/Swift-DocC/outputs/. Part of `make test` (about 40 s after its build).
DOC_TARGETS := OfflineSDK MockBackend MockBackendTesting WireModels LicenseProtocol
GENERATE_DOCS := $(SWIFT) package generate-documentation $(foreach target,$(DOC_TARGETS),--target $(target)) --warnings-as-errors
docs: deps
	$(GENERATE_DOCS)

test: test-deps
	$(SWIFT) build --build-tests
# Armed: a store statement or SDK file read/write on Swift's cooperative pool stops the run (docs/testing.md: The pool check).
	OFFLINE_SDK_POOL_CHECK=trap $(SWIFT) test --skip-build
	$(GENERATE_DOCS)
	scripts/dashboard-browser-test.sh
	scripts/m3u8-readers.sh
	scripts/testssl.sh
	scripts/schemathesis.sh
	SCHEMATHESIS_DATABASE=postgres scripts/schemathesis.sh

# schemathesis against a live mock-backend and docs/openapi.yaml, on SQLite and on PostgreSQL (PyPI, in .build-venv; part of `make test`).
test-api: test-deps
	$(SWIFT) build --product mock-backend
	scripts/schemathesis.sh
	SCHEMATHESIS_DATABASE=postgres scripts/schemathesis.sh

# testssl.sh against a live mock-backend --tls: no HIGH or CRITICAL finding but the local CA's missing
# revocation information; TLS 1.2 and 1.3 only, the server's order (about a minute; part of `make test`).
test-tls: test-deps
	$(SWIFT) build --product mock-backend
	scripts/testssl.sh

# The suite (FILTER: a part of it) RUNS times beside CPU hogs and a synchronous disk writer, as a
# busy CI machine runs it (scripts/stress-test.sh; docs/testing.md: Tests on a loaded machine). Not part of `make test`.
RUNS ?= 5
FILTER ?=
test-stress: test-deps
	RUNS=$(RUNS) FILTER=$(FILTER) scripts/stress-test.sh

# Every test under ThreadSanitizer, one at a time: its 5-15x slowdown times tests out when they run
# side by side on 2 cores (its own build folder; about an hour here, not part of `make test`).
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1" $(SWIFT) test --skip-build --no-parallel --sanitize=thread --scratch-path .build-tsan

serve: deps
	$(SWIFT) build --product mock-backend
	.build/debug/mock-backend

demo: deps
	scripts/demo.sh

fixtures:
	fixtures/make-fixtures.sh

bench-server: deps
	benchmarks/server.sh

# libFuzzer on every parser of network or disk bytes, FUZZ_SECONDS each (docs/testing.md: Fuzzing).
# Builds in .build-fuzz; fails if any target finds a crash, hang or leak. Not part of `make test`.
FUZZ_SECONDS ?= 60
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# The soak (benchmarks/soak.sh, docs/benchmarks.md): SOAK_SECONDS of downloads paused, cancelled,
# resumed, killed and deleted at random with licenses renewed and released, then every byte, orphan
# and license checked, and memory and descriptors held flat. Not part of `make test`.
SOAK_SECONDS ?= 600
soak: deps
	SOAK_SECONDS=$(SOAK_SECONDS) benchmarks/soak.sh

clean:
	rm -rf .build
