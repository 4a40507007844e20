// Package buildkite puts gpugate's report on a Buildkite build as one
// annotation, through the agent's own command (buildkite-agent annotate,
// https://buildkite.com/docs/agent/v3/cli-annotate): the agent holds the
// session with Buildkite, so gpugate needs no token of its own.
package buildkite

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Style is an annotation's style.
type Style string

const (
	Error   Style = "error"
	Warning Style = "warning"
	Success Style = "success"
	Info    Style = "info"
)

// Context is the annotation context of a workload: the same on every
// build, so that a later annotate of the same build replaces it (each
// build has its own annotations; a pull request's next build shows the
// same context anew). slug must already be safe (action.Slug).
func Context(slug string) string { return "gpugate-" + slug }

// Annotate runs agent (buildkite-agent, found on PATH when "") as
// `annotate --context C --style S`, with the Markdown body on stdin
// (Buildkite limits a body to 1 MiB). env is the agent's environment:
// it needs BUILDKITE_AGENT_ACCESS_TOKEN and BUILDKITE_JOB_ID, which the
// training job never gets.
func Annotate(ctx context.Context, agent string, env []string, context string, style Style, body []byte) error {
	if agent == "" {
		agent = "buildkite-agent"
	}
	path, err := exec.LookPath(agent)
	if err != nil {
		return fmt.Errorf("buildkite: annotate: %w", err)
	}
	cmd := exec.CommandContext(ctx, path, "annotate", "--context", context, "--style", string(style))
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return fmt.Errorf("buildkite: %s annotate --context %s: %w: %s", agent, context, err, msg)
	}
	return nil
}
