package pipeline

import (
	"context"
	"os"
	"os/exec"

	"github.com/gpugate/gpugate/internal/denyenv"
)

// gitCommand is every git command gpugate runs in the job's repository.
// The job can write that repository's .git (its config, its hooks) and
// git runs what they name outside every namespace the job had, as
// gpugate's user: a lazy fetch of a missing commit through
// core.sshCommand or a remote helper (merge-base --is-ancestor in a
// shallow clone did, in issue 34's review), the fsmonitor, a hook. So:
// no transport at all (GIT_ALLOW_PROTOCOL names none that exists, which
// overrides every protocol.*.allow the config may set), no fsmonitor, no
// hooks, no system config; and the denied environment (no token).
func gitCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	safe := []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}
	cmd := exec.CommandContext(ctx, "git", append(safe, args...)...)
	cmd.Env = append(denyenv.Filter(os.Environ()), "GIT_ALLOW_PROTOCOL=gpugate-allows-none", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	cmd.Dir = dir
	return cmd
}
