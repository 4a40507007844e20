package kineto

import "github.com/gpugate/gpugate/trace"

// Memory events. torch.profiler(profile_memory=True) writes every
// allocation and free of PyTorch's allocators as an instant event named
// "[memory]" (cat cpu_instant_event, ph "i"):
//
//	{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
//	 "pid": 783658, "tid": 785244, "ts": 1669783687464300,
//	 "args": {"Device Type": 1, "Device Id": 1, "Addr": 139926520725504,
//	          "Bytes": 5242880, "Total Allocated": 5435638784,
//	          "Total Reserved": 12782141440}}
//
// Device Type is c10's DeviceType (0 the host's CPU allocator with Device
// Id -1, 1 CUDA with the device ordinal); Bytes is negative for a free;
// the totals are the allocator's after the event. The 2021 (PyTorch
// 1.8/1.9) form has no totals, only Device Type, Device Id and Bytes: its
// levels can only be summed from the deltas, relative to wherever the
// capture began.

// memKeys are the args of a [memory] event that the reader keeps.
var memKeys = newKeySet("Device Type", "Device Id", "Bytes", "Total Allocated", "Total Reserved")

// memoryName is the name of Kineto's allocator events.
const memoryName = "[memory]"

// memState collects a parser's memory events.
type memState struct {
	events []trace.MemEvent
	bad    int // [memory] events dropped: no ts, or no Bytes and no total
	other  int // [memory] events of a device type other than CPU and CUDA
	// early holds the args of a [memory] event whose args came before its
	// ph, for event number earlyAt (nEvents) only.
	early   memArgs
	earlyAt int
}

// memArgs are the values of a [memory] event's args, with whether each
// was there (indexed as memKeys).
type memArgs struct {
	v   [5]int64
	has [5]bool
}

// memArgsBeforePh reads the args of an event named [memory] whose ph has
// not been seen yet (members in an unusual order); instant uses them if
// the ph turns out to be an instant.
func (p *parser) memArgsBeforePh() error {
	p.mem.early, p.mem.earlyAt = memArgs{}, p.nEvents
	return p.memArgs(&p.mem.early)
}

// instant reads the rest of an instant event (ph "i" or "I") whose ph the
// parser just read, and keeps it when it is an allocator event. Members
// read before ph (name, ts) are in p.ev already; others are skipped.
func (p *parser) instant() error {
	s, e := p.s, &p.ev
	var a memArgs
	if p.mem.earlyAt == p.nEvents {
		a = p.mem.early
	}
	more, err := s.comma('}')
	for ; more && err == nil; more, err = s.comma('}') {
		k, err := s.readKey(&p.key, eventKeys)
		if err != nil {
			return err
		}
		switch k {
		case 2: // name
			e.name, err = p.stringValue(e.name)
		case 3: // ts
			e.ts, e.hasTs, err = p.timeValue()
		case 7: // args
			if string(e.name) != memoryName && len(e.name) > 0 {
				err = s.skipValue()
				break
			}
			err = p.memArgs(&a)
		default:
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
	}
	if err != nil || string(e.name) != memoryName {
		return err
	}
	m := &p.mem
	devType, devID, bytes, alloc, reserved := a.v[0], a.v[1], a.v[2], a.v[3], a.v[4]
	has := a.has
	// Totals are the allocator's levels: never negative.
	if !e.hasTs || e.ts < -maxTime || e.ts > maxTime || (!has[2] && !has[3]) || (has[3] && alloc < 0) || (has[4] && reserved < 0) {
		m.bad++
		return nil
	}
	ev := trace.MemEvent{Time: e.ts, Bytes: bytes, Device: -1}
	switch {
	case !has[0] || devType == 0: // CPU; a missing type is the host's (1.8 wrote it always)
	case devType == 1: // CUDA
		ev.Flags |= trace.MemCUDA
		if has[1] && devID >= 0 && devID < 1<<16 {
			ev.Device = int32(devID)
		} else {
			ev.Device = 0
		}
	default:
		// MKLDNN, HIP's own type, XLA, ...: not gated on; counted.
		m.other++
		return nil
	}
	if has[3] {
		ev.Flags |= trace.MemTotals
		ev.Allocated = alloc
		if has[4] {
			ev.Flags |= trace.MemReserved
			ev.Reserved = reserved
		}
	}
	m.events = append(m.events, ev)
	return nil
}

// memArgs reads the args object of a [memory] event.
func (p *parser) memArgs(a *memArgs) error {
	s := p.s
	return p.object(memKeys, func(k int) error {
		if k < 0 {
			return s.skipValue()
		}
		c, err := s.peek()
		if err != nil {
			return err
		}
		if c == '"' || c == '{' || c == '[' || c == 'n' || c == 't' || c == 'f' {
			return s.skipValue()
		}
		if p.num, err = s.number(); err != nil {
			return err
		}
		if n, ok := parseInt(p.num); ok {
			a.v[k], a.has[k] = n, true
		}
		return nil
	})
}

// mergeMemory takes another parser's memory events (parallel reads).
func (p *parser) mergeMemory(o *parser) {
	p.mem.events = append(p.mem.events, o.mem.events...)
	p.mem.bad += o.mem.bad
	p.mem.other += o.mem.other
}

// finishMemory moves the memory events into the profile, sorted by time.
func (p *parser) finishMemory() {
	pr, m := p.p, &p.mem
	if m.bad > 0 {
		pr.Warnf("%d [memory] events dropped: no ts, neither Bytes nor Total Allocated, or a negative total", m.bad)
	}
	if m.other > 0 {
		pr.Warnf("%d [memory] events of a device type other than CPU (0) and CUDA (1) not used", m.other)
	}
	if len(m.events) == 0 {
		return
	}
	pr.Memory = m.events
	pr.SortMemory()
	totals := 0
	for i := range pr.Memory {
		if pr.Memory[i].Flags&trace.MemTotals != 0 {
			totals++
		}
	}
	if totals > 0 && totals < len(pr.Memory) {
		pr.Warnf("%d of %d [memory] events carry allocator totals", totals, len(pr.Memory))
	}
}
