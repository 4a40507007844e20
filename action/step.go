package action

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/report"
)

// writeStepPicture writes step.svg into the evidence folder art: the
// median step of the first profile of the first run of each side whose
// trace was read in this job (report.StepSVG). A stored baseline keeps
// each step's numbers, not its timeline, so it has no picture; with no
// side left, nothing is written. It reports whether it wrote the file.
func writeStepPicture(art string, oc *pipeline.Outcome) (bool, error) {
	var sides []report.StepSide
	for _, s := range []struct {
		label string
		runs  []gate.Run
	}{{"baseline", oc.Base}, {"candidate", oc.Cand}} {
		if len(s.runs) == 0 || len(s.runs[0]) == 0 {
			continue
		}
		r := s.runs[0][0]
		if r.Profile == nil || (len(r.Profile.GPU) == 0 && len(r.Profile.Ranges) == 0) || report.MedianStep(r) < 0 {
			continue
		}
		sides = append(sides, report.StepSide{Label: s.label, Result: r})
	}
	if len(sides) == 0 {
		return false, nil
	}
	var b bytes.Buffer
	if err := report.StepSVG(&b, sides); err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(art, "step.svg"), b.Bytes(), 0o644); err != nil {
		return false, err
	}
	return true, nil
}
