package estimate

import (
	"maps"
	"math"
	"slices"
)

// Counts is one reading of a server's cumulative counters: generated tokens, finished requests, prompt tokens,
// the sum and count of the finished-length histogram and the finishes that hit max_tokens. A reading leaves a
// counter it does not have NaN; totals and lanes hold plain numbers.
type Counts struct {
	Gen      float64 `json:"gen"`
	Done     float64 `json:"done"`
	Prompt   float64 `json:"prompt"`
	FinSum   float64 `json:"fin_sum,omitempty"`
	FinCount float64 `json:"fin_count,omitempty"`
	Capped   float64 `json:"capped,omitempty"`
	// Named are further counters by name (finishes by reason, the drafter's), folded by the same rules; a name
	// a reading lacks is absent, one a lane has not seen yet counts from zero.
	Named map[string]float64 `json:"named,omitempty"`
}

// Missing is a Counts with every counter absent, to fill in from a reading.
func Missing() Counts {
	n := math.NaN()
	return Counts{Gen: n, Done: n, Prompt: n, FinSum: n, FinCount: n, Capped: n}
}

// fields lists the counters of c, so that every rule below applies to each the same way.
func (c *Counts) fields() [6]*float64 {
	return [6]*float64{&c.Gen, &c.Done, &c.Prompt, &c.FinSum, &c.FinCount, &c.Capped}
}

// key is the counter a reading is matched to a lane by: generated tokens, else finished requests, else the
// histogram's count, else the sum of the named counters (counters that only grow add up to one that does).
func (c Counts) key() float64 { return c.keyAs(c) }

// keyAs is c's value of the counter r's key is: a lane is compared with a reading on the counter the reading
// has (a lane opened by a reading without generated tokens holds 0 there, which says nothing).
func (c Counts) keyAs(r Counts) float64 {
	for i, v := range []float64{r.Gen, r.Done, r.FinCount} {
		if valid(v) {
			return [3]float64{c.Gen, c.Done, c.FinCount}[i]
		}
	}
	sum, any := 0.0, false
	for k, v := range r.Named {
		if valid(v) {
			sum, any = sum+c.Named[k], true
		}
	}
	if any {
		return sum
	}
	return math.NaN()
}

// foldNamed adds to tot what the reading r's named counters grew by over last (when add), and moves last up
// to them. The maps are copied first: a Counter is a value, and the one it came from keeps its own.
func foldNamed(last, tot *Counts, r Counts, add bool) {
	if len(r.Named) == 0 {
		return
	}
	last.Named, tot.Named = maps.Clone(last.Named), maps.Clone(tot.Named)
	if last.Named == nil {
		last.Named = map[string]float64{}
	}
	if tot.Named == nil {
		tot.Named = map[string]float64{}
	}
	for k, v := range r.Named {
		if valid(v) && v > last.Named[k] {
			if add {
				tot.Named[k] += v - last.Named[k]
			}
			last.Named[k] = v
		}
	}
}

// below reports whether every counter of c is at or below the reading's: the reading can continue c.
func (c Counts) below(r Counts) bool {
	mine, theirs := c.fields(), r.fields()
	for i, f := range theirs {
		if valid(*f) && *f < *mine[i] {
			return false
		}
	}
	for k, v := range r.Named {
		if valid(v) && v < c.Named[k] {
			return false
		}
	}
	return true
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// Lane is one server lifetime seen behind an address: its counters only grow. Two replicas behind one URL are
// two lanes whose readings alternate; a restart opens a new lane and the old one keeps what it counted.
type Lane struct {
	Start float64 `json:"start,omitempty"` // the server's start time (unix seconds), 0 when it does not say
	Last  Counts  `json:"last"`
	Read  int64   `json:"read"` // the Counter's read number when this lane last matched
	// At is when the lane last matched (0 when unknown) and Rate how fast its key counter grew (per second),
	// so that a reading joins the lane it continues rather than whichever it is closest above.
	At   float64 `json:"at,omitempty"`
	Rate float64 `json:"rate,omitempty"`
}

// Counter folds the readings of one address into totals that only grow. The zero value is ready to use; it is
// a value (Add returns the next one) and marshals to JSON, so a sampler can persist it between samples.
type Counter struct {
	Lanes    []Lane `json:"lanes,omitempty"`
	Total    Counts `json:"total"`
	Restarts int64  `json:"restarts,omitempty"`
	// StepsBack counts the readings that fell below every lane without being a restart, or continued a lane
	// other than the last one after a while (Step.Replica, Step.Switched): replicas answering in turn.
	StepsBack int64   `json:"steps_back,omitempty"`
	Reads     int64   `json:"reads,omitempty"`
	LastRead  float64 `json:"last_read,omitempty"` // when the last reading was taken (unix seconds), 0 when unknown
}

// Step says what one reading meant.
type Step struct {
	// Restart: a server lifetime that began since the last reading: its counters started from zero, so all of
	// them is new work, and its batch started afresh.
	Restart bool
	// Replica: a reading below every lane that is not a fresh start: another replica behind the address, or a
	// counter that stepped back. It counts from here on; what it shows now was never observed being made.
	Replica bool
	// Switched: the reading continued a lane other than the one the reading before it did, and that lane had
	// gone unread for more than one turn: servers behind one address answering irregularly, each one's growth
	// arriving in lumps.
	Switched bool
}

// maxLanes bounds the lanes a Counter remembers; the one matched least recently goes first.
const maxLanes = 8

// maxIdle is how many readings a lane may go unmatched before it is forgotten.
const maxIdle = 16

// restartShare is how far below a lane a reading must be, without a start time, to be a fresh start rather than
// a replica or a counter that stepped back: a restarted server counts from zero.
const restartShare = 0.5

// Add folds a reading taken at now (unix seconds, 0 when unknown) from a server that started at start (0 when
// it does not say) and returns the next Counter.
//
// The reading joins the lane with the same start time or, without one, the lane with the highest value it has
// not fallen below. Within a lane a counter only grows: a value below the lane's is a glitch and adds nothing.
// A reading joins only a lane none of whose counters it is below. A reading that joins no lane opens one. It counts in full when it is the first reading, when its server
// started after the last reading, or when it is under half the lane above it from a server no older than any seen: a restart. Else
// it is a replica or a step back, counted from here on. A server that does not answer is simply not added: its
// totals stand.
func (c Counter) Add(r Counts, start, now float64) (Counter, Step) {
	c.Lanes = append([]Lane(nil), c.Lanes...)
	st := c.Fold(r, start, now)
	return c, st
}

// Fold is Add in place, for a caller that keeps no earlier Counter (a history folded in one pass): it reuses
// the lanes' memory where Add copies them, which was a third of the memory a chart's 120 estimates took.
func (c *Counter) Fold(r Counts, start, now float64) Step {
	c.Reads++
	// A lane nothing has matched for a while is a server lifetime that ended; forgetting it keeps a later
	// reading from joining it when the new lifetime's counters pass the old one's.
	c.Lanes = slices.DeleteFunc(c.Lanes, func(l Lane) bool { return c.Reads-l.Read > maxIdle })
	v := r.key()
	match := -1
	if start > 0 {
		for i, l := range c.Lanes {
			if l.Start == start {
				match = i
			}
		}
	}
	if match < 0 && start <= 0 {
		// The lane the reading continues. A reading whose key counter is at or above every lane continues the
		// highest (a secondary counter that stepped back is a glitch, and adds nothing): crediting it to a lower
		// lane would count the same growth twice when one server's readings jitter. Otherwise, of the lanes it
		// is at or above in every counter, the one whose value by now (its last value and rate) is closest.
		top, above := -1, valid(v)
		for i, l := range c.Lanes {
			if l.Start > 0 || l.Last.keyAs(r) > v {
				above = false
				break
			}
			if top < 0 || l.Last.keyAs(r) > c.Lanes[top].Last.keyAs(r) {
				top = i
			}
		}
		if above && top >= 0 {
			match = top
		}
		best := math.Inf(1)
		for i, l := range c.Lanes {
			if match >= 0 {
				break
			}
			if l.Start > 0 || !valid(v) || !l.Last.below(r) {
				continue
			}
			expect := l.Last.keyAs(r)
			if l.Rate > 0 && now > l.At && l.At > 0 {
				expect += l.Rate * (now - l.At)
			}
			if d := math.Abs(v - expect); d < best {
				match, best = i, d
			}
		}
		if match < 0 && !valid(v) && len(c.Lanes) > 0 {
			match = c.latest()
		}
	}
	if match >= 0 {
		// A lane that went unread for more than a turn has grown unseen: what it shows now lands in one lump.
		switched := len(c.Lanes) > 1 && c.latest() != match && c.Reads-c.Lanes[match].Read > 2
		l := &c.Lanes[match]
		prev := l.Last.keyAs(r)
		last := l.Last.fields()
		tot := c.Total.fields()
		for i, f := range r.fields() {
			if valid(*f) && *f > *last[i] {
				*tot[i] += *f - *last[i]
				*last[i] = *f
			}
		}
		foldNamed(&l.Last, &c.Total, r, true)
		if now > 0 && l.At > 0 && now > l.At && valid(v) && v >= prev {
			inst := (v - prev) / (now - l.At)
			if l.Rate > 0 {
				inst = (l.Rate + inst) / 2
			}
			l.Rate = inst
		}
		if now > 0 {
			l.At = now
		}
		l.Read = c.Reads
		if now > 0 {
			c.LastRead = now
		}
		if switched {
			c.StepsBack++
		}
		return Step{Switched: switched}
	}
	var step Step
	switch {
	case len(c.Lanes) == 0:
	case start > 0 && c.LastRead > 0 && start > c.LastRead:
		step.Restart = true
	case valid(v) && !math.IsInf(c.above(r), 1) && v <= restartShare*c.above(r) && start >= c.maxStart():
		// Far below the lane it fell from, and (with start times) no older than any server seen: a restart
		// whose server clock is behind ours, or a server that gives no start time.
		step.Restart = true
	default:
		step.Replica = true
	}
	nl := Lane{Start: math.Max(0, start), Read: c.Reads, At: math.Max(0, now)}
	last := nl.Last.fields()
	tot := c.Total.fields()
	for i, f := range r.fields() {
		if valid(*f) {
			*last[i] = *f
			if !step.Replica {
				*tot[i] += *f
			}
		}
	}
	foldNamed(&nl.Last, &c.Total, r, !step.Replica)
	if step.Restart {
		c.Restarts++
	}
	if step.Replica {
		c.StepsBack++
	}
	c.Lanes = append(c.Lanes, nl)
	if len(c.Lanes) > maxLanes {
		oldest := 0
		for i, l := range c.Lanes {
			if l.Read < c.Lanes[oldest].Read {
				oldest = i
			}
		}
		c.Lanes = append(c.Lanes[:oldest], c.Lanes[oldest+1:]...)
	}
	if now > 0 {
		c.LastRead = now
	}
	return step
}

// maxStart is the latest start time of the lanes (0 when none says).
func (c Counter) maxStart() float64 {
	m := 0.0
	for _, l := range c.Lanes {
		m = math.Max(m, l.Start)
	}
	return m
}

// latest is the lane matched most recently.
func (c Counter) latest() int {
	k := 0
	for i, l := range c.Lanes {
		if l.Read > c.Lanes[k].Read {
			k = i
		}
	}
	return k
}

// above is the lowest lane value above the reading r's key (the lane r fell from).
func (c Counter) above(r Counts) float64 {
	v := r.key()
	low := math.Inf(1)
	for _, l := range c.Lanes {
		if k := l.Last.keyAs(r); k > v && k < low {
			low = k
		}
	}
	return low
}
