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
# Slurm 22.05 and MUNGE: the Slurm tests start a throwaway 2-node cluster (internal/slurmtest, docs/slurm.md).
bash scripts/setup-slurm.sh
export CI=${CI:-true}
# PyTorch 2.6 (Debian 13, in a chroot) next to Debian 12's 1.13.
bash scripts/setup-torch2.sh
# Debian's docker.io and busybox-static: the container tests (examples/containers)
# start a throwaway dockerd of their own (internal/dockertest) and run gpugate in
# containers of a local busybox image; AppArmor 4's parser goes into the Debian 13
# chroot above, to check examples/apparmor/gpugate.
bash scripts/setup-docker.sh
export GPUGATE_NSYS=${GPUGATE_NSYS:-/opt/gpugate/nsight-systems/usr/lib/nsight-systems/bin/nsys}
# Nsight Compute 2022.3 (ncu reads .ncu-rep reports; tests that need it run when GPUGATE_NCU is set).
bash scripts/setup-ncu.sh && export GPUGATE_NCU=${GPUGATE_NCU:-/opt/gpugate/nsight-compute/usr/lib/nsight-compute/ncu}
# The act test's install step downloads a release with curl.
command -v curl >/dev/null || apt-get install -y -qq --no-install-recommends curl >/dev/null
# nektos/act runs action.yml end to end in host mode (no Docker daemon).
export PATH=$PATH:$(go env GOPATH)/bin
if ! act --version 2>/dev/null | grep -q 0.2.89; then
	go install github.com/nektos/act@v0.2.89
fi
# actionlint checks examples/workflows and .github/workflows (TestActionlint).
bash scripts/setup-actionlint.sh
# Chromium: the dashboard's browser tests (chromedp) fail without it under CI=true.
bash scripts/setup-chromium.sh
go vet ./...
# -p 1: the end-to-end tests time real training runs; other packages
# running beside them on a 2-core machine would distort those timings.
# -timeout 60m: the end-to-end scripts of cmd/gpugate run real training
# jobs one after another (see script_test.go), beyond go test's default 10m.
go test -p 1 -count=1 -timeout 60m ./...
# The demo through gpugate under PyTorch 2.6 as well.
bash scripts/e2e-torch2.sh
# The escaping fuzzers (issue 10), 60 s each; a finding fails the run and
# is saved under the package's testdata/fuzz/ as a new seed. New inputs
# are minimized for at most 5 s, so that the 60 s go mostly to fuzzing.
go test -run XXX -fuzz '^FuzzEscape$' -fuzztime 60s -fuzzminimizetime 5s ./internal/escape
go test -run XXX -fuzz '^FuzzActionsWriter$' -fuzztime 60s -fuzzminimizetime 5s ./internal/escape
go test -run XXX -fuzz '^FuzzFileCommand$' -fuzztime 60s -fuzzminimizetime 5s ./internal/escape
go test -run XXX -fuzz '^FuzzComment$' -fuzztime 60s -fuzzminimizetime 5s ./report
go test -run XXX -fuzz '^FuzzText$' -fuzztime 60s -fuzzminimizetime 5s ./report
