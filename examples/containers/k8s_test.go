package containers

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestK8sExamples: the Kubernetes examples parse, give the pod the three
// settings docs/containers.md names, and pass the store's URL as a
// mounted Secret, never in an environment variable.
func TestK8sExamples(t *testing.T) {
	for _, f := range []string{"../k8s/arc-values.yaml", "../k8s/buildkite-values.yaml", "../k8s/gitlab-runner-config.toml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.HasSuffix(f, ".yaml") {
			var v any
			if err := yaml.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		for _, want := range []string{"hostUsers: false", "procMount: Unmasked", "type: Localhost", "localhostProfile: profiles/gpugate-seccomp.json", "secretName: gpugate-store", "-db-file /etc/gpugate/store-url"} {
			if strings.HasSuffix(f, ".toml") && want == "secretName: gpugate-store" {
				want = `name = "gpugate-store"`
			}
			if !strings.Contains(s, want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
		for _, bad := range []string{"env:", "secretKeyRef", "envFrom"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s passes something through the environment (%q): the store's URL must be a file", f, bad)
			}
		}
	}
}
