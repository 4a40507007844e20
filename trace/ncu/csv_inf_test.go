package ncu

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUnitsOverflow: a value that is finite as written but not once
// scaled to the base unit (1e300 seconds in ns) is left out with a
// warning, never +Inf: the deep-dive puts launches into the comparison's
// JSON and the store, and json.Marshal refuses +Inf.
func TestUnitsOverflow(t *testing.T) {
	in := detailsHeader +
		row(0, "k", "GPU Speed Of Light Throughput", "Duration", "second", "1e300") +
		row(0, "k", "GPU Speed Of Light Throughput", "SM Frequency", "cycle/usecond", "1410")
	rep, err := ParseCSV(strings.NewReader(in), "units.csv")
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Launches[0]
	if l.Duration != nil {
		t.Errorf("duration %v, want absent", *l.Duration)
	}
	checkF(t, "SM frequency", l.SMFrequency, w(1.41e9, 1e-3))
	if _, err := json.Marshal(l); err != nil {
		t.Errorf("json.Marshal(launch): %v", err)
	}
}
