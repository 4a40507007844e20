#!/usr/bin/env bash
# test.sh: set up a fresh Debian 12 machine and run gpugate's tests.
# README.md's test command and .ci/run both run this script.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
# Real profilers: torch.profiler (python3-torch) and Nsight Systems 2022.4
# (its nsys exports reports and rejects ones from newer versions).
bash scripts/setup-profilers.sh
# PostgreSQL 15 server binaries: the baseline store's tests start a
# throwaway cluster of their own (internal/pgtest) and fail without them
# under CI=true.
bash scripts/setup-postgres.sh
export CI=${CI:-true}
export GPUGATE_NSYS=${GPUGATE_NSYS:-/opt/gpugate/nsight-systems/usr/lib/nsight-systems/bin/nsys}
# nektos/act runs action.yml end to end in host mode (no Docker daemon).
export PATH=$PATH:$(go env GOPATH)/bin
if ! act --version 2>/dev/null | grep -q 0.2.89; then
	go install github.com/nektos/act@v0.2.89
fi
go vet ./...
# -p 1: the end-to-end tests time real training runs; other packages
# running beside them on a 2-core machine would distort those timings.
# -timeout 30m: the end-to-end scripts of cmd/gpugate run real training
# jobs one after another (see script_test.go), beyond go test's default 10m.
go test -p 1 -count=1 -timeout 30m ./...
