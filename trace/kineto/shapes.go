package kineto

import (
	"math"
	"strconv"

	"github.com/gpugate/gpugate/trace"
)

// Operator shapes for FLOP counting (trace.FLOPOp).
//
// The parser skips the args of cpu_op events unread: they are large and
// nothing else needs them. Only for the few operators whose FLOPs are
// counted (trace.FLOPKindOf: mm, addmm, bmm, baddbmm, linear, the
// convolutions) are "Input Dims", "Concrete Inputs" and "flops" read, and
// only the FLOP count is kept, so memory grows with the number of such
// calls and nothing else. The event's name must come before its args, as
// torch.profiler writes them; in an event written the other way round the
// args are skipped as before.

// shapeKeys are the args read from a counted operator.
var shapeKeys = newKeySet("Input Dims", "Concrete Inputs", "flops")

// shapeState is the parser's FLOP-counting state.
type shapeState struct {
	ops []trace.FLOPOp
	// The current event's operator, read from its args; at is the event's
	// number (parser.nEvents), so that add takes it only for that event.
	cur  trace.FLOPOp
	at   int
	dims [][]int64
	conc []string
}

// flopArgs reads the args of a counted operator (kind) instead of skipping
// them.
func (p *parser) flopArgs(kind trace.FLOPKind) error {
	s, sh := p.s, &p.sh
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.skipValue()
	}
	sh.dims, sh.conc = sh.dims[:0], sh.conc[:0]
	flops, hasFlops := 0.0, false
	more, err := s.openObject()
	for ; more && err == nil; more, err = s.comma('}') {
		k, err := s.readKey(&p.key, shapeKeys)
		if err != nil {
			return err
		}
		switch k {
		case 0:
			err = p.inputDims()
		case 1:
			err = p.concreteInputs()
		case 2:
			if c, err = s.peek(); err == nil && (c == '-' || c >= '0' && c <= '9') {
				if p.num, err = s.number(); err == nil {
					if v, e := strconv.ParseFloat(string(p.num), 64); e == nil && v >= 0 && !math.IsInf(v, 0) {
						flops, hasFlops = v, true
					}
				}
			} else if err == nil {
				err = s.skipValue()
			}
		default:
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	op := trace.FLOPOp{Kind: kind, FLOPs: math.NaN()}
	if hasFlops {
		op.FLOPs, op.FromTrace = flops, true
	} else if v, ok := trace.FLOPsFromShapes(kind, sh.dims, sh.conc); ok {
		op.FLOPs = v
	}
	sh.cur, sh.at = op, p.nEvents
	return nil
}

// inputDims reads "Input Dims": [[32, 3, 32, 32], [16, 3, 3, 3], [16], [], ...].
// An entry that is not a flat list of integers (a TensorList) is nil.
func (p *parser) inputDims() error {
	s, sh := p.s, &p.sh
	c, err := s.peek()
	if err != nil || c != '[' {
		if err == nil {
			err = s.skipValue()
		}
		return err
	}
	more, err := s.openArray()
	for ; more && err == nil; more, err = s.comma(']') {
		if len(sh.dims) >= 64 {
			if err = s.skipValue(); err != nil {
				return err
			}
			continue
		}
		var d []int64
		if c, err = s.peek(); err != nil {
			return err
		}
		if c != '[' {
			if err = s.skipValue(); err != nil {
				return err
			}
			sh.dims = append(sh.dims, nil)
			continue
		}
		flat := true
		d = []int64{}
		in, err := s.openArray()
		for ; in && err == nil; in, err = s.comma(']') {
			if c, err = s.peek(); err != nil {
				return err
			}
			if c == '[' || c == '{' || c == '"' || len(d) >= 16 {
				flat = false
				if err = s.skipValue(); err != nil {
					return err
				}
				continue
			}
			if p.num, err = s.number(); err != nil {
				return err
			}
			v, ok := parseInt(p.num)
			if !ok {
				flat = false
				continue
			}
			d = append(d, v)
		}
		if err != nil {
			return err
		}
		if !flat {
			d = nil
		}
		sh.dims = append(sh.dims, d)
	}
	return err
}

// concreteInputs reads "Concrete Inputs": ["", "", "", "[1, 1]", ..., "1"].
func (p *parser) concreteInputs() error {
	s, sh := p.s, &p.sh
	c, err := s.peek()
	if err != nil || c != '[' {
		if err == nil {
			err = s.skipValue()
		}
		return err
	}
	more, err := s.openArray()
	for ; more && err == nil; more, err = s.comma(']') {
		if p.str, err = p.stringValue(p.str[:0]); err != nil {
			return err
		}
		if len(sh.conc) < 64 && len(p.str) <= 256 {
			sh.conc = append(sh.conc, string(p.str))
		}
	}
	return err
}

// addFLOPOp keeps the current event's operator, if its args were read.
func (p *parser) addFLOPOp(start, end int64) {
	sh := &p.sh
	if sh.cur.Kind == trace.FLOPNone || sh.at != p.nEvents {
		return
	}
	op := sh.cur
	op.Start, op.End, op.Thread = start, end, p.thread()
	sh.ops = append(sh.ops, op)
	sh.cur.Kind = trace.FLOPNone
}

// mergeFLOPOps takes the operators of a parser that read a later piece of
// the same file, with its thread keys remapped.
func (p *parser) mergeFLOPOps(o *parser, thread func(int64) int64) {
	for i := range o.sh.ops {
		o.sh.ops[i].Thread = thread(o.sh.ops[i].Thread)
	}
	p.sh.ops = append(p.sh.ops, o.sh.ops...)
}
