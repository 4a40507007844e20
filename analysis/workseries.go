package analysis

// WorkSeries returns one of the WorkResult's per-step series by name
// ("samples_per_s", "tokens_per_s", "flops", "tflops", "mfu"), with the
// steps where it is absent left out; nil when it is absent from every step.
func (w *WorkResult) WorkSeries(name string) []float64 {
	if w == nil {
		return nil
	}
	var out []float64
	for _, s := range w.Steps {
		var v *float64
		switch name {
		case "samples_per_s":
			v = s.SamplesPerSec
		case "tokens_per_s":
			v = s.TokensPerSec
		case "flops":
			v = s.FLOPs
		case "tflops":
			v = s.TFLOPS
		case "mfu":
			v = s.MFU
		}
		if v != nil {
			out = append(out, *v)
		}
	}
	return out
}
