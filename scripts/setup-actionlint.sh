#!/usr/bin/env bash
# setup-actionlint.sh: install actionlint (rhysd/actionlint), which
# TestActionlint runs on examples/workflows and .github/workflows. Idempotent.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin
version=v1.7.12
if ! "$(go env GOPATH)/bin/actionlint" -version 2>/dev/null | grep -qx "${version#v}"; then
	go install "github.com/rhysd/actionlint/cmd/actionlint@$version"
fi
