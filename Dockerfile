# gpugate's static binary in an image of its own, to copy into the image
# that trains (a CUDA image, where the GPU and the job are):
#
#   FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
#   COPY --from=ghcr.io/gpugate/gpugate:v0 /usr/local/bin/gpugate /usr/local/bin/gpugate
#
# (or docker build -t gpugate . here and COPY --from=gpugate). The binary is
# static (CGO_ENABLED=0: pure-Go SQLite and PostgreSQL drivers), so it runs
# in any Linux image; profiling needs what the training image has (PyTorch,
# or Nsight Systems), which is why this image holds nothing else. Run on
# its own it still serves report-only jobs (analyze, compare, baseline):
# the CA bundle is there for GitHub's API and TLS PostgreSQL. The GitHub
# Action is composite and runs on the host. Its stages are checked by
# cmd/gpugate/dockerfile_test.go where no Docker daemon is at hand.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
# .dockerignore keeps .git, .gpugate/ (traces, stores) and build outputs out.
COPY . .
# docker build --build-arg VERSION=v0.2.0 . stamps the release; without it
# gpugate version reports what the Go build recorded.
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=${VERSION}" -o /gpugate ./cmd/gpugate

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /gpugate /usr/local/bin/gpugate
ENTRYPOINT ["/usr/local/bin/gpugate"]
