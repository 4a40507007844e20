package dashboard

import (
	"html/template"

	"github.com/gpugate/gpugate/report"
)

// StepPicture is the picture of a run's median step.
type StepPicture struct {
	// SVG is rendered by StepSVG, whose output escapes every name.
	SVG template.HTML
}

// stepFromDoc is the step picture a stored run carries; the analysis
// document keeps each step's numbers, not its timeline, so there is none
// yet.
func stepFromDoc(doc *report.Analysis) *StepPicture { return nil }
