package kineto

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/gpugate/gpugate/trace"
)

// Sorting the event lists, in the order trace.Profile.Sort defines.
//
// A trace lists each thread's and stream's events almost in time order, and
// the lists interleave a few dozen such sequences: comparison sorting them
// was a sixth of a read (0.14 s of CPU for the 2.2 M-event benchmark trace,
// pdqsort partitioning the API calls most of it). Here the records are
// ordered by start time with an LSD radix sort of (start, position) keys,
// then gathered from the chunks straight into the final slice, which also
// saves flattening the chunks first. Records with equal starts, which the
// radix sort leaves in reading order, are then ordered by the remaining
// fields with the comparator of trace.Profile.Sort, so the result is the
// order that function gives, independent of the reading order.
//
// A key packs the start, relative to the smallest, above the record's
// position (chunk number and index in the chunk, so no position table is
// needed). When the span of starts is too wide to pack (a hostile trace
// with times ±2^62 ns apart), the records are flattened and comparison
// sorted instead.

// Comparators of trace.Profile.Sort, field for field.

func cmpGPU(a, b trace.GPUOp) int {
	if a.Start != b.Start {
		return cmp.Compare(a.Start, b.Start)
	}
	return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Process, b.Process),
		cmp.Compare(a.Corr, b.Corr), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Name, b.Name))
}

func cmpAPI(a, b trace.APICall) int {
	if a.Start != b.Start {
		return cmp.Compare(a.Start, b.Start)
	}
	return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Process, b.Process),
		cmp.Compare(a.Corr, b.Corr), cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Name, b.Name))
}

func cmpRange(a, b trace.Range) int {
	if a.Start != b.Start {
		return cmp.Compare(a.Start, b.Start)
	}
	return cmp.Or(cmp.Compare(b.End, a.End), cmp.Compare(a.Process, b.Process),
		cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Name, b.Name))
}

// chunkBits is the width of a record's index within its chunk.
const chunkBits = 16 // maxChunk = 1 << chunkBits

// sorted returns c's records sorted by start, then by compare, and empties
// c. start must return the record's start time.
func sorted[T any](c *chunks[T], start func(*T) int64, compare func(a, b T) int) []T {
	n := c.len()
	if n == 0 {
		*c = chunks[T]{}
		return []T{}
	}
	blocks := c.full
	if len(c.cur) > 0 {
		blocks = append(blocks, c.cur)
	}
	lo, hi := start(&blocks[0][0]), start(&blocks[0][0])
	for _, b := range blocks {
		for i := range b {
			s := start(&b[i])
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	span := uint64(hi - lo) // starts are within ±2^62: no overflow
	posBits := chunkBits + bits.Len(uint(len(blocks)))
	keyBits := bits.Len64(span)
	if keyBits+posBits > 64 {
		out := c.flat()
		slices.SortFunc(out, compare)
		return out
	}
	keys := make([]uint64, 0, n)
	for bi, b := range blocks {
		for i := range b {
			keys = append(keys, uint64(start(&b[i])-lo)<<posBits|uint64(bi)<<chunkBits|uint64(i))
		}
	}
	keys = radixSort(keys, posBits, posBits+keyBits)
	out := make([]T, n)
	const mask = 1<<chunkBits - 1
	for j, k := range keys {
		out[j] = blocks[(k>>chunkBits)&(1<<(posBits-chunkBits)-1)][k&mask]
	}
	*c = chunks[T]{}
	// Equal starts: order by the other fields.
	for i := 0; i < n; {
		j := i + 1
		for j < n && keys[j]>>posBits == keys[i]>>posBits {
			j++
		}
		if j-i > 1 {
			sortTies(out[i:j], compare)
		}
		i = j
	}
	return out
}

// radixSort sorts keys by their bits [from, to), stably, 11 bits a pass;
// it skips passes whose digit is the same for every key.
func radixSort(keys []uint64, from, to int) []uint64 {
	const digit = 11
	var tmp []uint64
	var count [1 << digit]int
	for shift := from; shift < to; shift += digit {
		clear(count[:])
		for _, k := range keys {
			count[(k>>shift)&(1<<digit-1)]++
		}
		if count[(keys[0]>>shift)&(1<<digit-1)] == len(keys) {
			continue
		}
		if tmp == nil {
			tmp = make([]uint64, len(keys))
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range keys {
			d := (k >> shift) & (1<<digit - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// sortTies sorts a run of records with equal starts: an insertion sort,
// since such runs are short (a few records launched in the same ns).
func sortTies[T any](s []T, compare func(a, b T) int) {
	if len(s) > 12 {
		slices.SortFunc(s, compare)
		return
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && compare(s[j], s[j-1]) < 0; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
