package baseline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxExportID bounds the id of an exported run: ids are only an export's
// labels (Import never writes them, the store assigns its own), and 2^53
// is the largest integer every JSON reader holds exactly.
const maxExportID = 1 << 53

// checkNumbers refuses a JSON document (analysis, fingerprint, run
// conditions, ncu launch) holding a number that a reader of the store
// cannot hold: every number must be a finite float64 of magnitude below
// 2^63, and one written as an integer must fit int64. The documents'
// readers decode times (ns) and bytes into int64, so 1e308 in
// step_time_ns would be stored by both backends and then refused by
// every later read; checked here, it is refused before anything is
// written, alike on SQLite and PostgreSQL.
func checkNumbers(what string, doc []byte) error {
	if len(doc) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s is not JSON: %v", what, err)
	}
	return walkNumbers(what, v)
}

func walkNumbers(path string, v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if err := walkNumbers(path+"."+k, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := walkNumbers(path+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	case json.Number:
		if err := checkNumber(string(x)); err != nil {
			return fmt.Errorf("%s: %v", oneLine(path), err)
		}
	}
	return nil
}

// CheckSample refuses a per-step value of a metric of unit (analysis.
// Metric.Unit) that import would refuse: every metric gpugate computes is
// a time, a count, a ratio or a size, never negative; a time (ms, us) is
// within MaxDurationNS, as a stored duration is (checkTime); anything else
// below 2^63, as a stored number is (checkNumber). The Action's trusted
// phase judges no sample this refuses (action/judge.go).
func CheckSample(unit string, v float64) error {
	bound, what := float64(twoTo63), "below 2^63"
	switch unit {
	case "ms":
		bound, what = MaxDurationNS/1e6, "at most 10^8 ms (10^14 ns, about 28 hours)"
	case "us":
		bound, what = MaxDurationNS/1e3, "at most 10^11 µs (10^14 ns, about 28 hours)"
	}
	if !(v >= 0 && v <= bound) { // NaN fails both
		return fmt.Errorf("%v is not a value of a metric in %s: values are finite, not negative and %s", v, unit, what)
	}
	return nil
}

// twoTo63 is 2^63, the first float64 beyond int64.
const twoTo63 = 1 << 63

func checkNumber(s string) error {
	if !strings.ContainsAny(s, ".eE") {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Errorf("%.40s is out of the int64 range", s)
		}
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) >= twoTo63 {
		return fmt.Errorf("%.40s is out of range (a stored number is finite and below 2^63 in magnitude)", s)
	}
	return nil
}

// floatSamples are the per-step metrics that are ratios (float64 in
// report.Step); every other stored sample is a count, a time in ns or a
// size in bytes, which readers decode as integers.
var floatSamples = map[string]bool{"gpu_util": true, "short_kernels": true}

// checkDerived refuses derived rows that a reader of the store cannot
// hold: a non-integral count, time or size.
func checkDerived(d derived) error {
	for _, x := range d.samples {
		if !floatSamples[x.metric] && x.value != math.Trunc(x.value) {
			return fmt.Errorf("profile %d step %d: %s %v is not an integer", x.rank, x.step, x.metric, x.value)
		}
	}
	return nil
}
