package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// UnmarshalJSON reads what MarshalJSON writes, so that a Result that went
// through JSON (gpugate-result.json, which the Action's post step and the
// fork flow's comment job render the PR comment from) says the same change
// and interval as the one that was written: without it, delta, delta_ci,
// delta_pct and ci_pct were dropped and every comment said +0.0%.
//
// JSON has no infinity, so MarshalJSON writes an infinite value as null;
// this puts back the only infinity each field can hold: a bound of an
// interval too wide to compute is −∞ below and +∞ above, and a relative
// value is infinite only when the baseline's median is 0 (see relative),
// with the sign of the absolute value beside it. A null that none of these
// explains (delta itself, or a relative value beside an absolute 0) is an
// error: no gpugate wrote it.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var aux struct {
		plain
		Delta    *float64    `json:"delta"`
		DeltaCI  [2]*float64 `json:"delta_ci"`
		DeltaPct *float64    `json:"delta_pct"`
		CIPct    [2]*float64 `json:"ci_pct"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = Result(aux.plain)
	if aux.Delta == nil {
		return fmt.Errorf("metric %q: delta is null or missing", r.Name)
	}
	r.Delta = *aux.Delta
	r.DeltaLo = orInf(aux.DeltaCI[0], -1)
	r.DeltaHi = orInf(aux.DeltaCI[1], 1)
	var err error
	if r.DeltaPct, err = relativeOr(aux.DeltaPct, r.Delta); err != nil {
		return fmt.Errorf("metric %q: delta_pct: %w", r.Name, err)
	}
	if r.CILoPct, err = relativeOr(aux.CIPct[0], r.DeltaLo); err != nil {
		return fmt.Errorf("metric %q: ci_pct: %w", r.Name, err)
	}
	if r.CIHiPct, err = relativeOr(aux.CIPct[1], r.DeltaHi); err != nil {
		return fmt.Errorf("metric %q: ci_pct: %w", r.Name, err)
	}
	return nil
}

// orInf is *v, or the infinity of sign when v is null.
func orInf(v *float64, sign int) float64 {
	if v == nil {
		return math.Inf(sign)
	}
	return *v
}

// relativeOr is *pct, or, when it is null, the infinity that relative
// gives for abs against a baseline median of 0.
func relativeOr(pct *float64, abs float64) (float64, error) {
	switch {
	case pct != nil:
		return *pct, nil
	case abs > 0:
		return math.Inf(1), nil
	case abs < 0:
		return math.Inf(-1), nil
	}
	return 0, errors.New("null beside an absolute change of 0")
}
