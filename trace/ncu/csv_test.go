package ncu

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
)

const detailsHeader = `"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description"` + "\n"

// row writes a metric row as ncu does: 13 fields, the last one empty.
func row(id int, kernel, section, metric, unit, value string) string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.UseCRLF = false
	w.Write([]string{fmt.Sprint(id), "42", "python3", "127.0.0.1", kernel, "2026-Dec-02 10:00:00", "1", "7", section, metric, unit, value})
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n") + ",\n"
}

func ruleRow(id int, kernel, section, rule, typ, msg string) string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{fmt.Sprint(id), "42", "python3", "127.0.0.1", kernel, "2026-Dec-02 10:00:00", "1", "1", section, "", "", "", rule, typ, msg})
	w.Flush()
	return b.String()
}

// TestHostileNames: kernel names come from user code. They are kept as
// data, byte for byte, whatever they hold.
func TestHostileNames(t *testing.T) {
	names := []string{
		"evil\nkernel",
		"`rm -rf /`</details>@here ::error::x",
		"\x1b[31mred\x1b[0m",
		"../../etc/passwd",
		`quote"d, with comma`,
		"?#%",
	}
	var in strings.Builder
	in.WriteString("==PROF== Connected to process\n")
	in.WriteString(detailsHeader)
	for i, n := range names {
		in.WriteString(row(i, n, "GPU Speed Of Light Throughput", "Duration", "usecond", "1.5"))
		in.WriteString(ruleRow(i, n, "SpeedOfLight", "SOLBottleneck", "WRN", "msg with "+n))
	}
	in.WriteString("==WARNING== trailing message\n")
	rep, err := ParseCSV(strings.NewReader(in.String()), "hostile.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Launches) != len(names) {
		t.Fatalf("%d launches, want %d", len(rep.Launches), len(names))
	}
	for i, l := range rep.Launches {
		if l.Name != names[i] {
			t.Errorf("launch %d name %q, want %q", i, l.Name, names[i])
		}
		if l.Duration == nil || *l.Duration != 1500 {
			t.Errorf("launch %d duration %v, want 1500 ns", i, l.Duration)
		}
		if len(l.Rules) != 1 || l.Rules[0].Message != strings.TrimSpace("msg with "+names[i]) {
			t.Errorf("launch %d rules %+v", i, l.Rules)
		}
	}
}

// TestUnits: without --print-units base ncu scales each row on its own.
func TestUnits(t *testing.T) {
	in := detailsHeader +
		row(0, "k", "GPU Speed Of Light Throughput", "Duration", "msecond", "2.50") +
		row(0, "k", "GPU Speed Of Light Throughput", "SM Frequency", "cycle/usecond", "1,410.00") +
		row(0, "k", "GPU Speed Of Light Throughput", "DRAM Frequency", "cycle/nsecond", "1.59") +
		row(0, "k", "GPU Speed Of Light Throughput", "Memory Throughput", "%", "55.5") +
		row(0, "k", "Memory Workload Analysis", "Memory Throughput", "Gbyte/second", "900.1") +
		row(0, "k", "Launch Statistics", "Static Shared Memory Per Block", "Kbyte/block", "1.02") +
		row(0, "k", "Launch Statistics", "Dynamic Shared Memory Per Block", "Kbyte/block", "48.00") +
		row(0, "k", "Launch Statistics", "Registers Per Thread", "register/thread", "168") +
		row(1, "k", "GPU Speed Of Light Throughput", "Duration", "second", "1.17") +
		row(1, "k", "GPU Speed Of Light Throughput", "Memory [%]", "byte/second", "7") // wrong kind: skipped
	rep, err := ParseCSV(strings.NewReader(in), "units.csv")
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Launches[0]
	checkF(t, "duration", l.Duration, w(2.5e6, 1e-6))
	checkF(t, "SM frequency", l.SMFrequency, w(1.41e9, 1e-3))
	checkF(t, "DRAM frequency", l.DRAMFrequency, w(1.59e9, 1e-3))
	checkF(t, "memory throughput (%)", l.MemoryThroughput, w(55.5, 0))
	checkI(t, "shared memory", l.SharedMemPerBlock, 1020+48000)
	checkI(t, "registers", l.RegistersPerThread, 168)
	checkF(t, "launch 1 duration", rep.Launches[1].Duration, w(1.17e9, 1e-3))
	if rep.Launches[1].MemoryThroughput != nil {
		t.Errorf("a byte/second value taken for a percentage")
	}
}

func TestCSVErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "empty file"},
		{"==ERROR== Failed to load report file 'x.ncu-rep'.\n", "no CSV in ncu's output: ==ERROR== Failed to load report file"},
		{`"a","b"` + "\n", `no "ID" column`},
		{detailsHeader + row(0, "k", "s", "m", "", "1") + `"x","1","p","h","k","t","1","1","s","m","","1",` + "\n", `line 3: launch ID "x" is not a number`},
		{detailsHeader + `"0","1","p","h","k` + "\n", "line 2"},
		{`"ID","Process ID","Process Name","Host Name","Kernel Name","Block Size","Grid Size","Device Id","Invocations","Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"` + "\n", "summary page"},
	} {
		_, err := ParseCSV(strings.NewReader(c.in), "bad.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "bad.csv") {
			t.Errorf("ParseCSV(%.60q) = %v, want an error naming bad.csv and %q", c.in, err, c.want)
		}
	}
}

// genDetails writes a details page of n launches with ncu's rows.
func genDetails(n int) []byte {
	var b bytes.Buffer
	b.WriteString(detailsHeader)
	k := "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
	for i := range n {
		for _, m := range [][3]string{
			{"GPU Speed Of Light Throughput", "DRAM Frequency", "cycle/second"}, {"GPU Speed Of Light Throughput", "SM Frequency", "cycle/second"},
			{"GPU Speed Of Light Throughput", "Elapsed Cycles", "cycle"}, {"GPU Speed Of Light Throughput", "Memory [%]", "%"},
			{"GPU Speed Of Light Throughput", "DRAM Throughput", "%"}, {"GPU Speed Of Light Throughput", "Duration", "nsecond"},
			{"GPU Speed Of Light Throughput", "L1/TEX Cache Throughput", "%"}, {"GPU Speed Of Light Throughput", "Compute (SM) [%]", "%"},
			{"Launch Statistics", "Block Size", ""}, {"Launch Statistics", "Grid Size", ""}, {"Launch Statistics", "Registers Per Thread", "register/thread"},
			{"Launch Statistics", "Static Shared Memory Per Block", "byte/block"}, {"Launch Statistics", "Dynamic Shared Memory Per Block", "byte/block"},
			{"Launch Statistics", "Threads", "thread"}, {"Launch Statistics", "Waves Per SM", ""},
			{"Occupancy", "Block Limit Registers", "block"}, {"Occupancy", "Block Limit Shared Mem", "block"}, {"Occupancy", "Block Limit Warps", "block"},
			{"Occupancy", "Block Limit SM", "block"}, {"Occupancy", "Theoretical Occupancy", "%"}, {"Occupancy", "Achieved Occupancy", "%"},
		} {
			b.WriteString(row(i, k, m[0], m[1], m[2], fmt.Sprint(1000+i%977)))
		}
		b.WriteString(ruleRow(i, k, "SpeedOfLight", "SOLBottleneck", "WRN", "This kernel exhibits low compute throughput and memory bandwidth utilization relative to the peak performance of this device."))
		b.WriteString(ruleRow(i, k, "Occupancy", "Occupancy", "WRN", "This kernel's theoretical occupancy (50.0%) is limited by the number of required registers"))
	}
	return b.Bytes()
}

func BenchmarkParseDetails(b *testing.B) {
	data := genDetails(20000) // 460k rows, about 130 MB
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		rep, err := ParseCSV(bytes.NewReader(data), "gen.csv")
		if err != nil || len(rep.Launches) != 20000 {
			b.Fatal(err)
		}
	}
}

func FuzzParseCSV(f *testing.F) {
	f.Add(string(genDetails(2)))
	f.Add(detailsHeader + "\"0\"\n")
	f.Add("\"ID\",\"Process ID\",\"Kernel Name\",\"x__y\"\n,,,unit\n\"0\",\"1\",\"k\",\"1.5\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		ParseCSV(strings.NewReader(in), "fuzz.csv")
	})
}

func FuzzWriterVersion(f *testing.F) {
	f.Add([]byte("NVR\x00\x02\x00\x00\x00\x08\x07"))
	f.Add([]byte("NVR\x00\x02\x00\x00\x00\x08\x07\x0a\x00\x00\x00\x1a\x08\x42\x06\x0a\x01a\x12\x01b"))
	f.Fuzz(func(t *testing.T, in []byte) {
		writerVersion(bytes.NewReader(in))
	})
}
