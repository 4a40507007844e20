package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
	"github.com/gpugate/gpugate/runcond"
)

// SMIOptions configure StartSMI.
type SMIOptions struct {
	// Path is the nvidia-smi to run; empty looks it up on PATH.
	Path string
	// Interval is the sampling period, 1 s by default.
	Interval time.Duration
	// JobPID is the job's process, the leader of its process group (Run
	// starts jobs with Setpgid). Compute processes in its group or below
	// it are the job's; others on the job's GPUs void a regression. Zero
	// attributes no process: all are unattributed and void nothing.
	JobPID int
	// Owned overrides how a pid is attributed: own is true for the job's
	// processes, visible false for a pid this machine cannot see (nvidia-smi
	// running in another PID namespace). Nil reads /proc.
	Owned func(pid int) (own, visible bool)
	// MaxSamples bounds the samples kept per GPU (100000 by default, 28
	// hours at 1 s); later ones are dropped with a warning.
	MaxSamples int
	// MaxGPUs and MaxProcs bound the GPUs (64 by default) and compute
	// processes (4096) kept: a hostile nvidia-smi that printed a new GPU
	// UUID per line made a 15 s job write 292,571 GPU entries (68 MB of
	// conditions.json). More is a warning.
	MaxGPUs, MaxProcs int
}

// SMISampler samples nvidia-smi while a job runs. Two long-running
// nvidia-smi processes print a CSV line per GPU (--query-gpu) and per
// compute process (--query-compute-apps) every Interval (-lms): one process
// each for the whole run rather than one per sample, because each start of
// nvidia-smi initializes NVML, which costs tens of milliseconds of CPU on the
// machine that is being measured.
type SMISampler struct {
	opt    SMIOptions
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	res       runcond.Conditions
	gpus      map[string]*gpuSamples // by uuid
	order     []string
	procs     map[procKey]*procAgg
	owner     map[int]procClass
	warned    map[string]bool
	firstErr  string // first line nvidia-smi printed that is not CSV
	gpuFields []string
}

type procKey struct {
	uuid string
	pid  int
}

type procClass int

const (
	procOwn procClass = iota
	procOther
	procUnseen
)

type procAgg struct {
	name    string
	used    float64 // NaN when never reported
	samples int
	class   procClass
}

// reason values in a sample: unknown, not active, active.
const (
	reasonUnknown int8 = iota - 1
	reasonOff
	reasonOn
)

// smiReasons are the throttle reasons sampled (runcond.ThrottleReasons) and
// gpu_idle, which only tells busy samples from idle ones.
var smiReasons = append(runcond.ThrottleReasons(), "gpu_idle")

type gpuSample struct {
	sm, mem, temp, power, util float64 // NaN: not reported
	reasons                    []int8  // per smiReasons
}

type gpuSamples struct {
	index   int
	uuid    string
	name    string
	maxSM   float64
	samples []gpuSample
	dropped int
}

// StartSMI starts sampling. It returns at once; nvidia-smi is asked which
// fields it knows and started in the background. Stop ends the sampling and
// returns the summary.
func StartSMI(ctx context.Context, opt SMIOptions) *SMISampler {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.MaxSamples <= 0 {
		opt.MaxSamples = 100000
	}
	if opt.MaxGPUs <= 0 {
		opt.MaxGPUs = 64
	}
	if opt.MaxProcs <= 0 {
		opt.MaxProcs = 4096
	}
	if opt.Owned == nil {
		job := opt.JobPID
		opt.Owned = func(pid int) (bool, bool) { return procOwned(job, pid) }
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &SMISampler{opt: opt, cancel: cancel, done: make(chan struct{}),
		gpus: map[string]*gpuSamples{}, procs: map[procKey]*procAgg{}, owner: map[int]procClass{}, warned: map[string]bool{}}
	s.res.IntervalMS = opt.Interval.Milliseconds()
	go func() {
		defer close(s.done)
		s.run(ctx)
	}()
	return s
}

// Stop ends the sampling, waits for nvidia-smi to exit and summarizes.
func (s *SMISampler) Stop() *runcond.Conditions {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summarize()
}

func (s *SMISampler) notSampled(why string) {
	s.mu.Lock()
	s.res.NotSampled = why
	s.mu.Unlock()
}

func (s *SMISampler) warn(w string) {
	if !s.warned[w] {
		s.warned[w] = true
		s.res.Warnings = append(s.res.Warnings, w)
	}
}

func (s *SMISampler) run(ctx context.Context) {
	path := s.opt.Path
	if path == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			s.notSampled("no nvidia-smi")
			return
		}
		path = p
	}
	// Bounded: a --help-query-gpu that left a child holding its stdout
	// once hung gpugate past every limit (internal/bounded).
	hres, err := bounded.Run(ctx, bounded.Options{Limit: 20 * time.Second, MaxOutput: 1 << 20, Stderr: true}, path, "--help-query-gpu")
	// A wrapper written just before (a Slurm node's, slurm.go) can be
	// "text file busy" for a moment: a process another goroutine forked
	// meanwhile holds its write descriptor until it execs (golang/go#22315;
	// seen once under scripts/busy.sh). Retried a few times, briefly.
	for try := 1; try <= 5 && errors.Is(err, syscall.ETXTBSY); try++ {
		time.Sleep(time.Duration(try) * 50 * time.Millisecond)
		hres, err = bounded.Run(ctx, bounded.Options{Limit: 20 * time.Second, MaxOutput: 1 << 20, Stderr: true}, path, "--help-query-gpu")
	}
	help := hres.Out
	if err != nil {
		s.notSampled(fmt.Sprintf("nvidia-smi --help-query-gpu failed: %v: %s", err, oneLine(lastLine(string(help)))))
		return
	}
	fields, family, missing := SMIFields(help)
	if fields == nil {
		s.notSampled("nvidia-smi does not know the fields index and uuid (--help-query-gpu)")
		return
	}
	s.mu.Lock()
	s.gpuFields = fields
	s.res.ReasonFields = family
	for _, m := range missing {
		s.warn(fmt.Sprintf("this nvidia-smi does not know %s: not sampled", m))
	}
	s.mu.Unlock()

	ms := strconv.FormatInt(s.opt.Interval.Milliseconds(), 10)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.stream(ctx, path, []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv", "-lms", ms}, fields, s.gpuLine)
	}()
	go func() {
		defer wg.Done()
		s.stream(ctx, path, []string{"--query-compute-apps=" + strings.Join(appFields, ","), "--format=csv", "-lms", ms}, appFields, s.appLine)
	}()
	wg.Wait()
}

// appFields are asked of --query-compute-apps; process_name comes last so
// that a comma in it (the name is the process's, anything goes) stays in
// the last column.
var appFields = []string{"gpu_uuid", "pid", "used_gpu_memory", "process_name"}

// gpuWanted are the --query-gpu fields sampled, by the first name
// --help-query-gpu lists for each; "name" comes last for the same reason
// as process_name. The throttle reasons are added by family.
var gpuWanted = []string{"index", "uuid", "clocks.current.sm", "clocks.current.memory", "clocks.max.sm",
	"temperature.gpu", "power.draw", "utilization.gpu", "name"}

var (
	helpEntry = regexp.MustCompile(`^"[A-Za-z0-9_.]+"( or "[A-Za-z0-9_.]+")*\s*$`)
	helpName  = regexp.MustCompile(`"([A-Za-z0-9_.]+)"`)
)

// SMIFields reads nvidia-smi --help-query-gpu and returns the fields to
// query, in order: index and uuid first, name last, the throttle reasons of
// the family this nvidia-smi knows (clocks_event_reasons.* from driver 535
// on, which still accepts clocks_throttle_reasons.* as aliases;
// clocks_throttle_reasons.* before), and whatever it does not know in
// missing. fields is nil without index and uuid.
func SMIFields(help []byte) (fields []string, family string, missing []string) {
	known := map[string]bool{}
	for _, line := range bytes.Split(help, []byte("\n")) {
		// A field's entry starts with its names: "a" or "b".
		if !helpEntry.Match(line) {
			continue
		}
		for _, m := range helpName.FindAllSubmatch(line, -1) {
			known[string(m[1])] = true
		}
	}
	if !known["index"] || !known["uuid"] {
		return nil, "", nil
	}
	for _, f := range []string{"clocks_event_reasons", "clocks_throttle_reasons"} {
		if known[f+".hw_slowdown"] {
			family = f
			break
		}
	}
	for _, f := range gpuWanted[:len(gpuWanted)-1] {
		if known[f] {
			fields = append(fields, f)
		} else {
			missing = append(missing, f)
		}
	}
	for _, r := range smiReasons {
		if family != "" && known[family+"."+r] {
			fields = append(fields, family+"."+r)
		} else if family != "" {
			missing = append(missing, family+"."+r)
		}
	}
	if family == "" {
		missing = append(missing, "the clock throttle reasons (clocks_event_reasons.* or clocks_throttle_reasons.*)")
	}
	if known["name"] {
		fields = append(fields, "name")
	} else {
		missing = append(missing, "name")
	}
	return fields, family, missing
}

// stream runs nvidia-smi until ctx ends and hands each data line, split in
// as many columns as fields, to line.
func (s *SMISampler) stream(ctx context.Context, path string, args []string, fields []string, line func([]string)) {
	n := len(fields)
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// nvidia-smi is dumpable and runs as long as the job: without a
	// namespace the job could read its /proc/PID/environ.
	cmd.Env = jobEnv(os.Environ())
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.mu.Lock()
		s.warn(fmt.Sprintf("nvidia-smi %s: %v", args[0], err))
		s.mu.Unlock()
		return
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		s.mu.Lock()
		s.warn(fmt.Sprintf("nvidia-smi %s: %v", args[0], err))
		s.mu.Unlock()
		return
	}
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			// A child out of nvidia-smi's group that still holds the pipe
			// must not keep the scan below (and Stop) waiting.
			select {
			case <-exited:
			case <-time.After(time.Second):
				out.Close()
			}
		case <-exited:
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		// The CSV header starts with the first field's name (perhaps with
		// its unit: "index", "used_gpu_memory [MiB]"); nvidia-smi prints it
		// once, and any repeat is skipped too.
		if first, _, _ := strings.Cut(text, ","); strings.TrimSpace(first) == fields[0] || strings.HasPrefix(first, fields[0]+" [") {
			continue
		}
		if strings.HasPrefix(text, "No running processes found") {
			continue
		}
		cols := strings.SplitN(text, ", ", n)
		if len(cols) != n {
			s.mu.Lock()
			if s.firstErr == "" {
				s.firstErr = oneLine(text)
			}
			s.warn(fmt.Sprintf("nvidia-smi %s printed a line that is not %d CSV columns: %q", args[0], n, oneLine(text)))
			s.mu.Unlock()
			continue
		}
		s.mu.Lock()
		line(cols)
		s.mu.Unlock()
	}
	if err := sc.Err(); err != nil {
		s.mu.Lock()
		s.warn(fmt.Sprintf("nvidia-smi %s: reading its output: %v", args[0], err))
		s.mu.Unlock()
		io.Copy(io.Discard, out)
	}
	err = cmd.Wait()
	close(exited)
	if err != nil && ctx.Err() == nil {
		s.mu.Lock()
		s.warn(fmt.Sprintf("nvidia-smi %s exited early: %v", args[0], err))
		s.mu.Unlock()
	}
}

// gpuLine records one --query-gpu line (called with s.mu held).
func (s *SMISampler) gpuLine(cols []string) {
	f := s.gpuFields
	val := func(name string) string {
		if i := slices.Index(f, name); i >= 0 {
			return strings.TrimSpace(cols[i])
		}
		return ""
	}
	uuid := val("uuid")
	idx, err := strconv.Atoi(val("index"))
	if err != nil || uuid == "" || !printable(uuid) {
		s.warn(fmt.Sprintf("nvidia-smi printed a GPU line without index and uuid: %q", oneLine(strings.Join(cols, ", "))))
		return
	}
	g := s.gpus[uuid]
	if g == nil && len(s.gpus) >= s.opt.MaxGPUs {
		s.warn(fmt.Sprintf("nvidia-smi listed more than %d GPUs: the others are ignored (a flood of GPU lines is not a machine)", s.opt.MaxGPUs))
		return
	}
	if g == nil {
		g = &gpuSamples{index: idx, uuid: uuid, name: val("name"), maxSM: math.NaN()}
		s.gpus[uuid] = g
		s.order = append(s.order, uuid)
	}
	if v := s.number("clocks.max.sm", val("clocks.max.sm")); !math.IsNaN(v) {
		g.maxSM = v
	}
	if len(g.samples) >= s.opt.MaxSamples {
		g.dropped++
		return
	}
	smp := gpuSample{
		sm:      s.number("clocks.current.sm", val("clocks.current.sm")),
		mem:     s.number("clocks.current.memory", val("clocks.current.memory")),
		temp:    s.number("temperature.gpu", val("temperature.gpu")),
		power:   s.number("power.draw", val("power.draw")),
		util:    s.number("utilization.gpu", val("utilization.gpu")),
		reasons: make([]int8, len(smiReasons)),
	}
	for i, r := range smiReasons {
		smp.reasons[i] = reasonUnknown
		name := s.res.ReasonFields + "." + r
		switch v := val(name); v {
		case "Active":
			smp.reasons[i] = reasonOn
		case "Not Active":
			smp.reasons[i] = reasonOff
		case "":
		default:
			if !strings.HasPrefix(v, "[") && v != "N/A" {
				s.warn(fmt.Sprintf("nvidia-smi printed %s = %q, neither Active nor Not Active", name, oneLine(v)))
			}
		}
	}
	g.samples = append(g.samples, smp)
}

// number reads a value such as "1980 MHz", "627.40 W", "100 %" or "52";
// [N/A], [Not Supported] and the like are NaN: not reported, not zero.
func (s *SMISampler) number(field, v string) float64 {
	if v == "" || v == "N/A" || strings.HasPrefix(v, "[") {
		return math.NaN()
	}
	num, _, _ := strings.Cut(v, " ")
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		s.warn(fmt.Sprintf("nvidia-smi printed %s = %q, not a number", field, oneLine(v)))
		return math.NaN()
	}
	if r, ok := physical[field]; ok && (x < r[0] || x > r[1]) {
		s.warn(fmt.Sprintf("nvidia-smi printed %s = %q, outside %g–%g: dropped", field, oneLine(v), r[0], r[1]))
		return math.NaN()
	}
	return x
}

// physical are the ranges a real GPU's values fall in, generously: a
// value outside (1e308, a negative clock) is not a measurement, and is
// dropped with a warning rather than stored and printed as a 309-digit
// number. Clocks in MHz (GDDR6X memory reports ~10500), °C, W (a B200
// draws ~1000), %, MiB.
var physical = map[string][2]float64{
	"clocks.current.sm":     {0, 20000},
	"clocks.current.memory": {0, 50000},
	"clocks.max.sm":         {0, 20000},
	"temperature.gpu":       {-40, 150},
	"power.draw":            {0, 10000},
	"utilization.gpu":       {0, 100},
	"used_gpu_memory":       {0, 1 << 24},
}

// appLine records one --query-compute-apps line (called with s.mu held).
func (s *SMISampler) appLine(cols []string) {
	uuid := strings.TrimSpace(cols[0])
	pid, err := strconv.Atoi(strings.TrimSpace(cols[1]))
	if err != nil || pid <= 0 || !printable(uuid) {
		s.warn(fmt.Sprintf("nvidia-smi printed a compute process line without gpu_uuid and pid: %q", oneLine(strings.Join(cols, ", "))))
		return
	}
	k := procKey{uuid, pid}
	p := s.procs[k]
	if p == nil && len(s.procs) >= s.opt.MaxProcs {
		s.warn(fmt.Sprintf("nvidia-smi listed more than %d compute processes: the others are ignored", s.opt.MaxProcs))
		return
	}
	if p == nil {
		class, ok := s.owner[pid]
		if !ok {
			own, visible := s.opt.Owned(pid)
			switch {
			case own:
				class = procOwn
			case visible:
				class = procOther
			default:
				class = procUnseen
			}
			s.owner[pid] = class
		}
		p = &procAgg{name: oneLine(strings.TrimSpace(cols[3])), used: math.NaN(), class: class}
		s.procs[k] = p
	}
	p.samples++
	if u := s.number("used_gpu_memory", strings.TrimSpace(cols[2])); !math.IsNaN(u) && (math.IsNaN(p.used) || u > p.used) {
		p.used = u
	}
}

// summarize builds the Conditions (called with s.mu held).
func (s *SMISampler) summarize() *runcond.Conditions {
	res := s.res
	res.Warnings = slices.Clone(res.Warnings)
	if res.NotSampled != "" {
		res.ReasonFields, res.IntervalMS, res.Warnings = "", 0, nil
		return &res
	}
	for _, uuid := range s.order {
		g := s.gpus[uuid]
		if len(g.samples) == 0 {
			continue
		}
		gc := runcond.GPUConditions{Index: g.index, UUID: g.uuid, Name: oneLine(g.name), Samples: len(g.samples), SMClockMaxMHz: ptr(g.maxSM)}
		idle := slices.Index(smiReasons, "gpu_idle")
		var busy []gpuSample
		for _, x := range g.samples {
			if isBusy(x, idle) {
				busy = append(busy, x)
			}
		}
		gc.Busy = len(busy)
		set := busy
		if len(set) == 0 {
			set = g.samples
		}
		pick := func(xs []gpuSample, f func(gpuSample) float64) []float64 {
			var v []float64
			for _, x := range xs {
				if y := f(x); !math.IsNaN(y) {
					v = append(v, y)
				}
			}
			return v
		}
		if v := pick(set, func(x gpuSample) float64 { return x.sm }); len(v) > 0 {
			gc.SMClockMedianMHz, gc.SMClockMinMHz = ptr(median(v)), ptr(slices.Min(v))
		}
		if v := pick(set, func(x gpuSample) float64 { return x.mem }); len(v) > 0 {
			gc.MemClockMedianMHz = ptr(median(v))
		}
		if v := pick(g.samples, func(x gpuSample) float64 { return x.temp }); len(v) > 0 {
			gc.TempMaxC = ptr(slices.Max(v))
		}
		if v := pick(set, func(x gpuSample) float64 { return x.power }); len(v) > 0 {
			gc.PowerMedianW = ptr(median(v))
		}
		if v := pick(g.samples, func(x gpuSample) float64 { return x.util }); len(v) > 0 {
			gc.UtilMedianPct = ptr(median(v))
		}
		for i, r := range smiReasons[:len(smiReasons)-1] {
			on, known := 0, 0
			for _, x := range set {
				if x.reasons[i] != reasonUnknown {
					known++
				}
				if x.reasons[i] == reasonOn {
					on++
				}
			}
			if known > 0 {
				if gc.ReasonShare == nil {
					gc.ReasonShare = map[string]float64{}
				}
				gc.ReasonShare[r] = float64(on) / float64(known)
			}
		}
		for k, p := range s.procs {
			if k.uuid != uuid {
				continue
			}
			cp := runcond.ComputeProcess{PID: k.pid, Name: p.name, UsedMiB: ptr(p.used), Samples: p.samples}
			switch p.class {
			case procOwn:
				gc.JobSeen = true
			case procOther:
				gc.Others = append(gc.Others, cp)
			case procUnseen:
				gc.Unattributed = append(gc.Unattributed, cp)
			}
		}
		byPID := func(a, b runcond.ComputeProcess) int { return a.PID - b.PID }
		slices.SortFunc(gc.Others, byPID)
		slices.SortFunc(gc.Unattributed, byPID)
		if gc.JobSeen {
			res.JobGPUsKnown = true
		}
		if g.dropped > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("GPU %d: %d samples over the limit of %d were dropped", g.index, g.dropped, s.opt.MaxSamples))
		}
		res.GPUs = append(res.GPUs, gc)
	}
	for k := range s.procs {
		if s.gpus[k.uuid] == nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("compute process %d on a GPU (%s) that --query-gpu did not list", k.pid, oneLine(k.uuid)))
		}
	}
	slices.Sort(res.Warnings[len(s.res.Warnings):])
	if len(res.GPUs) == 0 {
		why := "nvidia-smi printed no GPU sample before the job ended"
		if s.firstErr != "" {
			why = "nvidia-smi printed no GPU sample: " + s.firstErr
		}
		return &runcond.Conditions{NotSampled: why}
	}
	res.Sampled = true
	return &res
}

// isBusy tells a sample of a GPU at work from one of an idle GPU: by
// utilization when reported, else by the gpu_idle reason; unknown counts as
// busy.
func isBusy(x gpuSample, idle int) bool {
	if !math.IsNaN(x.util) {
		return x.util > 0
	}
	return x.reasons[idle] != reasonOn
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return v[n/2-1]/2 + v[n/2]/2 // not (a+b)/2, which overflows for huge a, b
}

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// oneLine keeps text from nvidia-smi (process names come from whoever
// started the process) to one bounded line without control characters.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:197]) + "..."
	}
	return s
}

func printable(s string) bool {
	return s == oneLine(s) && !strings.ContainsAny(s, " ")
}

// procOwned reports whether pid belongs to the job: in its process group,
// or below it in the process tree (nsys and torchrun start the training
// processes as their children). visible is false when /proc has no such
// process.
func procOwned(job, pid int) (own, visible bool) {
	if job <= 0 {
		return false, false
	}
	for hop, p := 0, pid; hop < 64 && p > 1; hop++ {
		ppid, pgid, err := procStat(p)
		if err != nil {
			return false, hop > 0
		}
		if p == job || pgid == job {
			return true, true
		}
		p = ppid
	}
	return false, true
}

// procStat reads the parent pid and process group of a process from
// /proc/<pid>/stat, whose second field (the command name, in parentheses)
// may hold spaces and parentheses itself: the fields after it start after
// the last ')'.
func procStat(pid int) (ppid, pgid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, errors.New("malformed stat")
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return 0, 0, errors.New("malformed stat")
	}
	return ppid, pgid, nil
}
