# gpugate in a container, for report-only jobs (analyze, compare, baseline)
# and for training containers started with --gpus. The GitHub Action itself
# is composite and runs on the host: a container action cannot reach the GPU.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# docker build --build-arg VERSION=v0.2.0 . stamps the release; without it
# gpugate version reports what the Go build recorded.
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=${VERSION}" -o /gpugate ./cmd/gpugate

FROM gcr.io/distroless/static-debian12
COPY --from=build /gpugate /usr/local/bin/gpugate
ENTRYPOINT ["/usr/local/bin/gpugate"]
