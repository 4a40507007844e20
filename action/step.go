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
// median step of the first profile of the first run of each side
// (report.StepSVG), from its trace when this job read it, else, for a
// stored baseline, from the timeline stored with the run
// (pipeline.Outcome.BaseStep). With no side left, nothing is written. It
// reports whether it wrote the file.
func writeStepPicture(art string, oc *pipeline.Outcome) (bool, error) {
	var tls []*report.StepTimeline
	for _, s := range []struct {
		label string
		runs  []gate.Run
	}{{"baseline", oc.Base}, {"candidate", oc.Cand}} {
		var tl *report.StepTimeline
		if len(s.runs) > 0 && len(s.runs[0]) > 0 {
			if r := s.runs[0][0]; r.Profile != nil && (len(r.Profile.GPU) > 0 || len(r.Profile.Ranges) > 0) {
				tl = report.StepLayout(s.label, r)
			}
		}
		if tl == nil && s.label == "baseline" {
			tl = oc.BaseStep
		}
		if tl != nil {
			tls = append(tls, tl)
		}
	}
	if len(tls) == 0 {
		return false, nil
	}
	var b bytes.Buffer
	if err := report.RenderStepSVG(&b, tls); err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(art, "step.svg"), b.Bytes(), 0o644); err != nil {
		return false, err
	}
	return true, nil
}
